//! What the host says about a call ([`CallSpec`]): the client method, and
//! what the call is about, for the messages and the read-back.

use super::operation::Operation;
use super::ownership::Ownership;
use crate::text::{clip, quoted};

/// A call as the host describes it. Only `method` is needed; the rest
/// names the object in messages, and for a create `body` (the body sent,
/// as JSON text) lets a 409 on a retry be read back and judged
/// ([`Ownership`]).
///
/// On the wire `{method, namespace?, kind?, name?, body?, operation?,
/// cluster?}`, `operation` a kind's name (`read`, ...).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
pub struct CallSpec {
    /// The client-node method (`createNamespacedPod`, `exec`, ...).
    pub method: String,
    /// The namespace argument, if the method takes one.
    #[serde(default)]
    pub namespace: Option<String>,
    /// The object's kind (`Pod`), if the host knows it; for a create, the
    /// body's `kind` when not given.
    #[serde(default)]
    pub kind: Option<String>,
    /// The object's name (the `name` argument, or the pod an exec runs
    /// in); for a create, the body's `metadata.name` when not given.
    #[serde(default)]
    pub name: Option<String>,
    /// For a create: the body sent, as JSON text. Without it (or with one
    /// that does not parse) a create counts as naming no object: it is not
    /// sent again once an attempt may have made it, and a 409 is never
    /// read back.
    #[serde(default)]
    pub body: Option<String>,
    /// The kind of operation, when the host says (a function passed to
    /// `retryK8sApiCall` has no method name); else it is read from
    /// `method` ([`Operation::of_method`]).
    #[serde(default)]
    pub operation: Option<Operation>,
    /// The cluster the call goes to (its server URL), when the host
    /// knows: what is learned of an outage is learned for it alone.
    #[serde(default)]
    pub cluster: Option<String>,
}

impl CallSpec {
    /// A call of `method` with nothing else known.
    pub fn method(method: &str) -> CallSpec {
        CallSpec {
            method: method.to_string(),
            ..CallSpec::default()
        }
    }

    /// How messages name the call: `createNamespacedPod for Pod "job-1"`,
    /// `exec for "job-1"`, `listNamespacedPod`. `sent` fills in what the
    /// host left out, from a create's body.
    pub fn describe(&self, sent: Option<&Ownership>) -> String {
        let kind = self
            .kind
            .as_deref()
            .or_else(|| sent.and_then(|o| o.kind.as_deref()));
        let name = self
            .name
            .as_deref()
            .or_else(|| sent.and_then(|o| o.name.as_deref()));
        let method = clip(&self.method, 80);
        match (kind, name) {
            (Some(kind), Some(name)) => {
                format!(
                    "{method} for {} {}",
                    clip(kind, 60),
                    quoted(&clip(name, 253))
                )
            }
            (None, Some(name)) => format!("{method} for {}", quoted(&clip(name, 253))),
            (Some(kind), None) => format!("{method} ({})", clip(kind, 60)),
            (None, None) => method,
        }
    }

    /// The client method that reads what `method` creates:
    /// `createNamespacedPod` -> `readNamespacedPod`.
    pub fn read_method(&self) -> Option<String> {
        self.method
            .strip_prefix("create")
            .map(|rest| format!("read{rest}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn calls_are_named_by_method_kind_and_name() {
        let mut spec = CallSpec::method("deleteNamespacedPod");
        assert_eq!(spec.describe(None), "deleteNamespacedPod");
        spec.name = Some("job-1".into());
        assert_eq!(spec.describe(None), "deleteNamespacedPod for \"job-1\"");
        spec.kind = Some("Pod".into());
        assert_eq!(spec.describe(None), "deleteNamespacedPod for Pod \"job-1\"");
        spec.name = None;
        assert_eq!(spec.describe(None), "deleteNamespacedPod (Pod)");
    }

    #[test]
    fn a_create_is_named_from_its_body_when_the_host_did_not() {
        let spec = CallSpec::method("createNamespacedSecret");
        let sent = Ownership::of_body(r#"{"kind":"Secret","metadata":{"name":"s-1"}}"#).unwrap();
        assert_eq!(
            spec.describe(Some(&sent)),
            "createNamespacedSecret for Secret \"s-1\""
        );
        assert_eq!(spec.read_method().as_deref(), Some("readNamespacedSecret"));
        assert_eq!(CallSpec::method("exec").read_method(), None);
    }

    #[test]
    fn hostile_names_are_quoted_and_clipped() {
        let mut spec = CallSpec::method("readNamespacedPod");
        spec.name = Some(format!("a\"b\n{}", "x".repeat(1000)));
        let text = spec.describe(None);
        assert!(
            text.starts_with("readNamespacedPod for \"a\\\"b\\n"),
            "{text}"
        );
        assert!(text.len() < 300, "{}", text.len());
    }
}

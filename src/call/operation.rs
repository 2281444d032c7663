//! What kind of operation a call is, decided from the name of the
//! `@kubernetes/client-node` method the host calls ([`Operation::of_method`]).
//! The kind decides what may be retried (see the module docs of
//! [`crate::call`] and docs/CALLS.md).

use super::spec::CallSpec;
use crate::config::Settings;

/// The kind of a Kubernetes API call; read by its name ([`Operation::of_name`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(try_from = "String")]
pub enum Operation {
    /// `read*`, `list*`, `get*`, the reviews (`create*Review`, which ask
    /// and store nothing) and the `Log` helper's `log`: retried like the
    /// permission check.
    Read,
    /// `create*`: retried on a transient error; a 409 on a retry is read
    /// back and returned only when the object is this call's own.
    Create,
    /// `delete*` (`deleteCollection*` too): retried; a 404 on a retry,
    /// after an attempt that may have deleted the object, is done.
    Delete,
    /// A streaming connection that runs something (`exec`, `attach`,
    /// `portForward`: the client's `Exec`, `Attach` and `PortForward`
    /// helpers): only a set-up that provably never started the command is
    /// retried. The `Log` helper's `log` is a read.
    Connect,
    /// Everything else (`patch*`, `replace*`, `connect*`, `watch`, unknown
    /// names): one attempt, no timeout, no retry, no messages.
    PassThrough,
}

/// The method a host names for a function passed to `retryK8sApiCall`
/// without saying which client method it makes. It is treated as a read:
/// retried on a transient error, any answer the caller's.
pub const UNNAMED_CALL: &str = "retryK8sApiCall";

/// The stream helpers' method names (`new k8s.Exec(kc).exec(...)`, ...).
const CONNECTIONS: &[&str] = &["exec", "attach", "portForward"];

impl Operation {
    /// The kind of the client-node method `method` (case-sensitive, as the
    /// client spells it: `readNamespacedPod`, `createNamespacedSecret`,
    /// `deleteCollectionNamespacedPod`, `exec`).
    ///
    /// A prefix counts only when an upper-case letter follows it
    /// (`listNamespacedPod`, not `listen`). The API's own `connect*`
    /// methods (`connectPostNamespacedPodProxy`, ...) are plain requests
    /// that a proxy may forward to a pod, where a 5xx can be the pod's own
    /// answer: they pass through.
    pub fn of_method(method: &str) -> Operation {
        if CONNECTIONS.contains(&method) {
            return Operation::Connect;
        }
        let starts = |prefix: &str| {
            method
                .strip_prefix(prefix)
                .and_then(|rest| rest.bytes().next())
                .is_some_and(|b| b.is_ascii_uppercase())
        };
        // A review (`createSelfSubjectAccessReview`, `createTokenReview`)
        // is a question: it stores nothing and names no object.
        let review = starts("create") && method.ends_with("Review");
        // The Log helper's `log` reads a stream: it starts nothing.
        let read = review || method == "log" || method == UNNAMED_CALL;
        if read || starts("read") || starts("list") || starts("get") {
            Operation::Read
        } else if starts("create") {
            Operation::Create
        } else if starts("delete") {
            Operation::Delete
        } else {
            Operation::PassThrough
        }
    }

    /// The kind named `name` (one of [`Operation::name`]'s), for a host
    /// that says what a call is when its method name cannot (a function
    /// passed to `retryK8sApiCall`).
    pub fn of_name(name: &str) -> Option<Operation> {
        [
            Operation::Read,
            Operation::Create,
            Operation::Delete,
            Operation::Connect,
            Operation::PassThrough,
        ]
        .into_iter()
        .find(|o| o.name() == name)
    }

    /// The kind a call of `spec` is treated as under `settings`: every
    /// call passes through with `calls.resilient` off; else the kind the
    /// host named, else the method's.
    pub fn of_call(settings: &Settings, spec: &CallSpec) -> Operation {
        if !settings.calls.resilient {
            return Operation::PassThrough;
        }
        spec.operation
            .unwrap_or_else(|| Operation::of_method(&spec.method))
    }

    /// `read`, `create`, `delete`, `connect` or `pass-through`, for debug
    /// lines and docs.
    pub const fn name(self) -> &'static str {
        match self {
            Operation::Read => "read",
            Operation::Create => "create",
            Operation::Delete => "delete",
            Operation::Connect => "connect",
            Operation::PassThrough => "pass-through",
        }
    }
}

/// The kinds' names, for the message about one that is not.
const NAMES: &[&str] = &["read", "create", "delete", "connect", "pass-through"];

impl TryFrom<String> for Operation {
    type Error = String;

    /// `"x" (expected read, create, delete, connect or pass-through)` for
    /// a name that is none of them.
    fn try_from(name: String) -> Result<Operation, String> {
        Operation::of_name(&name).ok_or_else(|| {
            format!(
                "{} (expected {})",
                crate::text::quoted(&name),
                crate::bad_input::one_of(NAMES)
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn the_hooks_methods_have_their_kinds() {
        let table = [
            ("readNamespacedPod", Operation::Read),
            ("readNamespacedPodStatus", Operation::Read),
            ("readNamespacedPodLog", Operation::Read),
            ("readNamespacedJob", Operation::Read),
            ("listNamespacedPod", Operation::Read),
            ("listNamespacedSecret", Operation::Read),
            ("getAPIResources", Operation::Read),
            ("createNamespacedPod", Operation::Create),
            ("createNamespacedSecret", Operation::Create),
            ("createSelfSubjectAccessReview", Operation::Read),
            ("createSelfSubjectRulesReview", Operation::Read),
            ("createTokenReview", Operation::Read),
            ("deleteNamespacedPod", Operation::Delete),
            ("deleteNamespacedSecret", Operation::Delete),
            ("deleteCollectionNamespacedPod", Operation::Delete),
            ("exec", Operation::Connect),
            ("log", Operation::Read),
            ("attach", Operation::Connect),
            ("portForward", Operation::Connect),
            ("patchNamespacedPod", Operation::PassThrough),
            ("replaceNamespacedPod", Operation::PassThrough),
            ("replaceNamespacedPodStatus", Operation::PassThrough),
            ("connectPostNamespacedPodProxy", Operation::PassThrough),
            ("connectGetNamespacedPodExec", Operation::PassThrough),
            ("watch", Operation::PassThrough),
        ];
        for (method, kind) in table {
            assert_eq!(Operation::of_method(method), kind, "{method}");
        }
    }

    #[test]
    fn kinds_are_found_by_their_names_and_by_nothing_else() {
        for kind in [
            Operation::Read,
            Operation::Create,
            Operation::Delete,
            Operation::Connect,
            Operation::PassThrough,
        ] {
            assert_eq!(Operation::of_name(kind.name()), Some(kind));
        }
        for name in ["", "Read", "passThrough", "write", "read "] {
            assert_eq!(Operation::of_name(name), None, "{name:?}");
        }
    }

    #[test]
    fn a_function_whose_method_is_not_named_is_a_read() {
        let spec = CallSpec::method(UNNAMED_CALL);
        assert_eq!(Operation::of_call(&Settings::new(), &spec), Operation::Read);
    }

    #[test]
    fn a_named_kind_wins_over_the_method_and_off_wins_over_both() {
        let mut settings = Settings::new();
        let mut spec = CallSpec::method("patchNamespacedPod");
        assert_eq!(Operation::of_call(&settings, &spec), Operation::PassThrough);
        spec.operation = Some(Operation::Read);
        assert_eq!(Operation::of_call(&settings, &spec), Operation::Read);
        let create = CallSpec::method("createNamespacedPod");
        assert_eq!(Operation::of_call(&settings, &create), Operation::Create);
        settings.calls.resilient = false;
        assert_eq!(Operation::of_call(&settings, &spec), Operation::PassThrough);
        assert_eq!(
            Operation::of_call(&settings, &create),
            Operation::PassThrough
        );
    }

    #[test]
    fn a_prefix_alone_or_in_another_word_is_not_a_kind() {
        for method in [
            "",
            "read",
            "list",
            "get",
            "create",
            "delete",
            "listen",
            "getter",
            "created",
            "deleted",
            "readme",
            "Exec",
            "EXEC",
            "execute",
            "logs",
            "Log",
            " readNamespacedPod",
            "readnamespacedpod",
        ] {
            assert_eq!(
                Operation::of_method(method),
                Operation::PassThrough,
                "{method:?}"
            );
        }
    }
}

//! What the apiserver said when it refused a request: the `reason` and
//! `message` of the Kubernetes `Status` object in the body of an error
//! answer ([`ApiStatus`]), and whose refusal a 403 is ([`Forbidden`]).
//!
//! A 403 is not one thing. Authorization (RBAC, a webhook authorizer)
//! answers `<resource> is forbidden: User "..." cannot <verb> resource
//! ...`; right after an apiserver comes back its RBAC cache may not be
//! warm yet, and such answers were seen to be transient for a few seconds
//! (seed #68). Admission answers 403 too, and its refusals are final: a
//! PodSecurity violation, an exceeded quota, a LimitRanger limit, a
//! webhook that denied the request. Retrying those only hides the
//! apiserver's explanation from the user.

use serde::Deserialize;

use crate::text::contains;

/// The parts of a Kubernetes `Status` body that a message quotes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApiStatus {
    /// `Forbidden`, `Unauthorized`, `ServiceUnavailable`, ...
    pub reason: Option<String>,
    /// The apiserver's own explanation.
    pub message: Option<String>,
}

#[derive(Deserialize)]
struct StatusIn {
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    message: Option<String>,
}

/// Longest body read for a Status; an apiserver's are a few hundred bytes.
const MAX_BODY: usize = 64 * 1024;

impl ApiStatus {
    /// The Status in `body` (JSON text), if it is one: an object of kind
    /// `Status`, or one with a `reason` or a `message`. Anything else
    /// (HTML from a load balancer, an empty body) is `None`.
    pub fn of_body(body: &str) -> Option<ApiStatus> {
        let body = body.trim();
        if body.is_empty() || body.len() > MAX_BODY || !body.starts_with('{') {
            return None;
        }
        let s: StatusIn = crate::json_tree::from_str(body).ok()?;
        let text = |v: Option<String>| v.map(|t| t.trim().to_string()).filter(|t| !t.is_empty());
        let status = ApiStatus {
            reason: text(s.reason),
            message: text(s.message),
        };
        let is_status = s.kind.as_deref() == Some("Status");
        (is_status || status.reason.is_some() || status.message.is_some()).then_some(status)
    }

    /// `Forbidden: <message>`, the reason and message as one text (either
    /// alone when the other is missing).
    pub fn describe(&self) -> Option<String> {
        match (&self.reason, &self.message) {
            (Some(r), Some(m)) => Some(format!("{r}: {m}")),
            (Some(t), None) | (None, Some(t)) => Some(t.clone()),
            (None, None) => None,
        }
    }
}

/// Whose refusal a 403 is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Forbidden {
    /// Authorization said no (`... cannot <verb> resource ...`), or the
    /// answer does not say who refused (no Status body): it may be an
    /// apiserver whose authorization cache is not warm yet.
    Authorization,
    /// Admission (a plugin, a webhook, a quota, a policy) refused what the
    /// request asked for: final.
    Admission,
}

/// What an authorizer's refusal says: `User "x" cannot create resource
/// "pods"` (RBAC's and the webhook authorizers' wording).
const AUTHORIZATION_SIGNS: &[&str] = &[" cannot "];

/// What admission's refusals open with, whatever words follow: a webhook's
/// (`admission webhook "x" denied the request: ...`) and a
/// ValidatingAdmissionPolicy's (`... with binding 'b' denied request: ...`).
/// Their own text may quote an authorizer's wording.
const ADMISSION_SIGNS: &[&str] = &["admission webhook \"", "ValidatingAdmissionPolicy '"];

impl Forbidden {
    /// Reads a 403's Status (`None`: the body held none).
    pub fn of(status: Option<&ApiStatus>) -> Forbidden {
        let Some(message) = status.and_then(|s| s.message.as_deref()) else {
            return Forbidden::Authorization;
        };
        if ADMISSION_SIGNS.iter().any(|s| contains(message, s)) {
            Forbidden::Admission
        } else if AUTHORIZATION_SIGNS.iter().any(|s| contains(message, s))
            && contains(message, "resource")
        {
            Forbidden::Authorization
        } else {
            Forbidden::Admission
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    fn status(message: &str) -> String {
        format!(
            r#"{{"kind":"Status","apiVersion":"v1","status":"Failure","message":{},"reason":"Forbidden","code":403}}"#,
            serde_json::to_string(message).unwrap()
        )
    }

    #[test]
    fn a_status_body_gives_its_reason_and_message() {
        let s = ApiStatus::of_body(&status("no")).unwrap();
        assert_eq!(s.reason.as_deref(), Some("Forbidden"));
        assert_eq!(s.describe().as_deref(), Some("Forbidden: no"));
        for not in ["", "<html>403</html>", "[]", "{", r#"{"kind":"Pod"}"#] {
            assert_eq!(ApiStatus::of_body(not), None, "{not}");
        }
    }

    #[test]
    fn admission_refusals_are_told_from_authorization_ones() {
        let admission = [
            r#"pods "x" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false"#,
            r#"pods "x" is forbidden: exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1"#,
            r#"pods "x" is forbidden: maximum cpu usage per Container is 1, but limit is 2"#,
            r#"admission webhook "deny.example.com" denied the request: no"#,
            // A webhook's own words may sound like an authorizer's.
            r#"admission webhook "policy.example.com" denied the request: User "system:serviceaccount:ci:runner" cannot create resource "pods" with hostPath"#,
            r#"pods "x" is forbidden: ValidatingAdmissionPolicy 'no-host' with binding 'b' denied request: User "u" cannot create resource "pods" here"#,
        ];
        for m in admission {
            let s = ApiStatus::of_body(&status(m));
            assert_eq!(Forbidden::of(s.as_ref()), Forbidden::Admission, "{m}");
        }
        let rbac = r#"pods is forbidden: User "system:serviceaccount:ci:runner" cannot create resource "pods" in API group "" in the namespace "ci""#;
        let s = ApiStatus::of_body(&status(rbac));
        assert_eq!(Forbidden::of(s.as_ref()), Forbidden::Authorization);
        assert_eq!(Forbidden::of(None), Forbidden::Authorization);
    }
}

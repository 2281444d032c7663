//! What the API answered to a review, read from the response body itself.
//!
//! The shim hands over the body of a 2xx answer as the server sent it; this
//! module reads it with serde_json (through [`crate::json_tree`]) into the
//! documented types of the `authorization.k8s.io/v1` API and refuses
//! anything else. A field of the
//! wrong type is never coerced: `incomplete: "true"`, `resourceNames: [42]`
//! or `verbs: "*"` make a rules review prove nothing (the check goes on
//! with access reviews), and an access review without a boolean
//! `status.allowed` is a malformed answer, never a verdict.
//!
//! Unknown fields are ignored (the API adds fields over time); `null` for a
//! list reads as an empty list, as Go's JSON decoder (and so the apiserver)
//! reads it.

use serde::{Deserialize, Deserializer};

use crate::rules::{ResourceRule, RulesStatus};

/// The longest body read (a rules review of a namespace with many roles is
/// a few KB; this leaves room and bounds the work).
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// A SelfSubjectAccessReview's `status`, as the API documents it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessAnswer {
    /// `status.allowed`.
    pub allowed: bool,
    /// `status.denied`: an authorizer said no outright (absent: false).
    pub denied: bool,
    /// `status.reason`, if any.
    pub reason: Option<String>,
    /// `status.evaluationError`: an authorizer in the chain failed (a
    /// webhook, or RBAC finding a binding to a missing role).
    pub evaluation_error: Option<String>,
}

/// Why a body was refused; the text says what was wrong, briefly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed(pub String);

#[derive(Deserialize)]
struct Review<S> {
    status: S,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AccessStatus {
    allowed: bool,
    #[serde(default)]
    denied: Option<bool>,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    evaluation_error: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RulesWire {
    #[serde(deserialize_with = "list")]
    resource_rules: Vec<RuleWire>,
    incomplete: bool,
    #[serde(default)]
    evaluation_error: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RuleWire {
    #[serde(deserialize_with = "list")]
    verbs: Vec<String>,
    #[serde(default, deserialize_with = "list")]
    api_groups: Vec<String>,
    #[serde(default, deserialize_with = "list")]
    resources: Vec<String>,
    #[serde(default, deserialize_with = "list")]
    resource_names: Vec<String>,
}

/// A list that may be `null` (Go's nil slice).
fn list<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(Option::<Vec<T>>::deserialize(d)?.unwrap_or_default())
}

/// Reads an access review's answer.
pub fn access_answer(body: &str) -> Result<AccessAnswer, Malformed> {
    let status: AccessStatus = read(body)?;
    if status.allowed && status.denied == Some(true) {
        // The API documents that both are never true.
        return Err(Malformed(
            "status.allowed and status.denied are both true".into(),
        ));
    }
    Ok(AccessAnswer {
        allowed: status.allowed,
        denied: status.denied.unwrap_or(false),
        reason: status.reason,
        evaluation_error: status.evaluation_error.filter(|e| !e.trim().is_empty()),
    })
}

/// Reads a rules review's answer.
pub fn rules_answer(body: &str) -> Result<RulesStatus, Malformed> {
    let status: RulesWire = read(body)?;
    Ok(RulesStatus {
        resource_rules: status
            .resource_rules
            .into_iter()
            .map(|r| ResourceRule {
                verbs: r.verbs,
                api_groups: r.api_groups,
                resources: r.resources,
                resource_names: r.resource_names,
            })
            .collect(),
        incomplete: status.incomplete,
        evaluation_error: status.evaluation_error,
    })
}

fn read<S: for<'de> Deserialize<'de>>(body: &str) -> Result<S, Malformed> {
    if body.len() > MAX_BODY_BYTES {
        return Err(Malformed(format!(
            "the body is larger than {MAX_BODY_BYTES} bytes"
        )));
    }
    crate::json_tree::from_str::<Review<S>>(body)
        .map(|review| review.status)
        .map_err(|e| Malformed(brief(&e.text())))
}

/// The reader's message (serde_json's for a syntax error), cut to one short line with no control characters
/// (it may quote a piece of the body).
fn brief(message: &str) -> String {
    const MAX: usize = 160;
    let mut out: String = message
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(MAX)
        .collect();
    if message.chars().nth(MAX).is_some() {
        out.push_str("...");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    fn rules(status: &str) -> Result<RulesStatus, Malformed> {
        rules_answer(&format!(
            r#"{{"kind":"SelfSubjectRulesReview","status":{status}}}"#
        ))
    }

    #[test]
    fn a_documented_rules_answer_is_read() {
        let got = rules(
            r#"{"resourceRules":[{"verbs":["get","list"],"apiGroups":[""],"resources":["pods"]},
                {"verbs":["*"],"apiGroups":null,"resources":["*"],"resourceNames":["a"]}],
               "nonResourceRules":[{"verbs":["get"],"nonResourceURLs":["/api"]}],
               "incomplete":false,"somethingNew":{"x":1}}"#,
        )
        .unwrap();
        assert_eq!(got.resource_rules.len(), 2);
        assert_eq!(got.resource_rules[0].verbs, ["get", "list"]);
        assert!(got.resource_rules[1].api_groups.is_empty());
        assert_eq!(got.resource_rules[1].resource_names, ["a"]);
        assert!(!got.incomplete);
        let nil = rules(r#"{"resourceRules":null,"incomplete":true,"evaluationError":"webhook"}"#)
            .unwrap();
        assert!(nil.resource_rules.is_empty() && nil.incomplete);
        assert_eq!(nil.evaluation_error.as_deref(), Some("webhook"));
    }

    /// Issue 10, bug 5: fields of the wrong type are refused, never coerced
    /// into rules that prove something.
    #[test]
    fn rules_answers_with_fields_of_the_wrong_type_are_refused() {
        let rule = r#"{"verbs":["*"],"apiGroups":["*"],"resources":["*"]}"#;
        for status in [
            format!(r#"{{"resourceRules":[{rule}],"incomplete":"true"}}"#),
            format!(r#"{{"resourceRules":[{rule}],"incomplete":1}}"#),
            format!(r#"{{"resourceRules":[{rule}],"incomplete":null}}"#),
            format!(r#"{{"resourceRules":[{rule}]}}"#),
            r#"{"resourceRules":[{"verbs":"*","apiGroups":["*"],"resources":["*"]}],"incomplete":false}"#.into(),
            r#"{"resourceRules":[{"verbs":["*"],"apiGroups":["*"],"resources":["*"],"resourceNames":[42]}],"incomplete":false}"#.into(),
            r#"{"resourceRules":[{"verbs":["*"],"apiGroups":"*","resources":["*"]}],"incomplete":false}"#.into(),
            r#"{"resourceRules":[{"apiGroups":["*"],"resources":["*"]}],"incomplete":false}"#.into(),
            r#"{"resourceRules":[42],"incomplete":false}"#.into(),
            r#"{"resourceRules":{"verbs":["*"]},"incomplete":false}"#.into(),
            r#"{"incomplete":false}"#.into(),
            r#""ok""#.into(),
        ] {
            assert!(rules(&status).is_err(), "accepted {status}");
        }
        for body in [
            "",
            "null",
            "[]",
            "{}",
            r#"{"status":null}"#,
            "{\"status\":{",
            "\u{0}",
        ] {
            assert!(rules_answer(body).is_err(), "accepted {body:?}");
        }
    }

    #[test]
    fn access_answers_need_a_boolean_allowed() {
        let a =
            access_answer(r#"{"status":{"allowed":false,"denied":true,"reason":"no"}}"#).unwrap();
        assert!(!a.allowed && a.denied);
        assert_eq!(a.reason.as_deref(), Some("no"));
        let e = access_answer(r#"{"status":{"allowed":false,"evaluationError":"webhook down"}}"#)
            .unwrap();
        assert_eq!(e.evaluation_error.as_deref(), Some("webhook down"));
        assert!(!e.denied);
        let blank = access_answer(r#"{"status":{"allowed":false,"evaluationError":" "}}"#).unwrap();
        assert_eq!(blank.evaluation_error, None);
        for body in [
            r#"{"status":{}}"#,
            r#"{"status":{"allowed":"true"}}"#,
            r#"{"status":{"allowed":1}}"#,
            r#"{"status":{"allowed":null}}"#,
            r#"{"status":{"allowed":true,"denied":"no"}}"#,
            r#"{"status":{"allowed":true,"denied":true}}"#,
            r#"{"spec":{}}"#,
            "not json",
        ] {
            assert!(access_answer(body).is_err(), "accepted {body}");
        }
    }

    #[test]
    fn a_huge_or_deep_body_is_refused_with_a_short_reason() {
        let huge = format!(
            r#"{{"status":{{"allowed":true,"reason":"{}"}}}}"#,
            "x".repeat(MAX_BODY_BYTES)
        );
        let why = access_answer(&huge).unwrap_err();
        assert!(why.0.contains("larger than"), "{why:?}");
        // Deep nesting in an unknown field is skipped without recursion; in
        // a known one it is a type error. Neither overflows the stack.
        let (open, close) = ("[".repeat(100_000), "]".repeat(100_000));
        let skipped = format!(r#"{{"status":{{"allowed":true,"x":{open}{close}}}}}"#);
        assert!(access_answer(&skipped).unwrap().allowed);
        let deep = format!(r#"{{"status":{{"allowed":true,"reason":{open}{close}}}}}"#);
        let why = access_answer(&deep).unwrap_err();
        assert!(why.0.len() <= 163, "{why:?}");
        let quoted = access_answer("{\"status\":{\"allowed\":\"line\nbreak\"}}").unwrap_err();
        assert!(!quoted.0.contains('\n'));
    }
}

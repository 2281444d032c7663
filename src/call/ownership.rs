//! Whether an object read back after a 409 is the one this create made
//! ([`Ownership`]).
//!
//! A create retried after an attempt whose answer was lost can meet its
//! own object: the earlier attempt succeeded. It can also meet another
//! job's object of the same name, which must never be adopted. What the
//! create sent decides, exactly:
//!
//! - the sent body must name the object (`metadata.name`), and carry at
//!   least one label or one owner reference with a `uid`: without them
//!   nothing tells our object from another, and the 409 is the caller's;
//! - the object read back must have the same name, the same `kind` when
//!   both say one, every label that was sent with the same value (it may
//!   have more: admission may add some), and among its owner references
//!   every `uid` that was sent.
//!
//! - the object read back must not be being deleted (`deletionTimestamp`):
//!   a create never makes such an object, and the runner hooks' job pod
//!   has a fixed name and one label, the same as the previous job's pod
//!   that `prepare_job` deleted a moment before and that may still be
//!   terminating.
//!
//! - the object read back must not have been made before the call started
//!   (`creationTimestamp`, less [`CLOCK_MARGIN_MS`] for the API's clock
//!   against ours): a leftover of the same name and labels, from an
//!   earlier job whose cleanup failed, is not this call's.
//!
//! Annotations, the spec and the rest are not compared: defaulting and
//! admission change them. A body that is not a JSON object of the API's
//! shape (labels that are not strings, ...) proves nothing: not ours.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::text::{self, quoted};

/// What a create sent that marks the object as its own.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ownership {
    /// The sent `kind`, if any.
    pub kind: Option<String>,
    /// The sent `metadata.name`, if any.
    pub name: Option<String>,
    /// The sent `metadata.labels`.
    pub labels: BTreeMap<String, String>,
    /// The `uid`s of the sent `metadata.ownerReferences`.
    pub owner_uids: Vec<String>,
}

/// What an object read back is to this create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Judgement {
    /// The create's own object: an earlier attempt made it.
    Ours,
    /// Someone else's (or unprovable): why, for the debug line.
    NotOurs(String),
}

#[derive(Deserialize)]
struct Object {
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    metadata: Option<Metadata>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Metadata {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    labels: Option<BTreeMap<String, String>>,
    #[serde(default)]
    owner_references: Option<Vec<OwnerReference>>,
    #[serde(default)]
    deletion_timestamp: Option<String>,
    #[serde(default)]
    creation_timestamp: Option<String>,
}

/// How far the apiserver's clock may be behind ours before an object it
/// made during a call looks older than the call: its times are whole
/// seconds, and two clocks kept by NTP differ by far less than a minute.
/// A larger skew makes our own object look older: its 409 is then thrown,
/// as the plain client would have thrown the lost attempt's error.
pub const CLOCK_MARGIN_MS: u64 = 60_000;

#[derive(Deserialize)]
struct OwnerReference {
    #[serde(default)]
    uid: Option<String>,
}

/// `text` as an object of the API's shape; an array (which serde would
/// read into the struct by position) is refused too.
fn parse(text: &str) -> Result<Object, String> {
    if !text.trim_start().starts_with('{') {
        return Err("not a JSON object".into());
    }
    crate::json_tree::from_str(text).map_err(|e| e.to_string())
}

impl Ownership {
    /// Reads what `body` (the create's body as JSON text) says about its
    /// owner; `Err` with the parser's reason when it is not an object of
    /// the API's shape.
    pub fn of_body(body: &str) -> Result<Ownership, String> {
        let object = parse(body)?;
        let metadata = object.metadata;
        let (name, labels, owners) = match metadata {
            Some(m) => (m.name, m.labels, m.owner_references),
            None => (None, None, None),
        };
        Ok(Ownership {
            kind: object.kind,
            // An empty name is none: the API makes one (from generateName).
            name: name.filter(|n| !n.is_empty()),
            labels: labels.unwrap_or_default(),
            owner_uids: owners
                .unwrap_or_default()
                .into_iter()
                .filter_map(|o| o.uid)
                .filter(|uid| !uid.is_empty())
                .collect(),
        })
    }

    /// True when an object read back could be recognised as ours: the
    /// body named it and carried a label or an owner reference.
    pub fn is_recognisable(&self) -> bool {
        self.name.is_some() && (!self.labels.is_empty() || !self.owner_uids.is_empty())
    }

    /// Judges `read_back` (the object the API returned, as JSON text), for
    /// a call that started at `call_started_ms` (Unix epoch ms; `None`: no
    /// time to judge by).
    pub fn judge(&self, read_back: &str, call_started_ms: Option<u64>) -> Judgement {
        if !self.is_recognisable() {
            return Judgement::NotOurs(
                "the create sent no name, or neither labels nor owner references to recognise it by".into(),
            );
        }
        let object = match parse(read_back) {
            Ok(object) => object,
            Err(e) => {
                return Judgement::NotOurs(format!("the object read back is unreadable ({e})"))
            }
        };
        if let (Some(sent), Some(found)) = (&self.kind, &object.kind) {
            if sent != found {
                return Judgement::NotOurs(format!(
                    "its kind is {}, not {}",
                    quoted(found),
                    quoted(sent)
                ));
            }
        }
        let metadata = object.metadata.unwrap_or(Metadata {
            name: None,
            labels: None,
            owner_references: None,
            deletion_timestamp: None,
            creation_timestamp: None,
        });
        if metadata.name != self.name {
            let found = metadata.name.as_deref().unwrap_or("");
            return Judgement::NotOurs(format!("its name is {}", quoted(found)));
        }
        if metadata.deletion_timestamp.is_some() {
            // A create never makes an object that is being deleted: this
            // is an older one of the same name and labels (the runner's
            // previous job pod, deleted just before), still terminating.
            return Judgement::NotOurs("it is being deleted (it has a deletionTimestamp)".into());
        }
        if let (Some(made), Some(started)) = (&metadata.creation_timestamp, call_started_ms) {
            let made_ms = crate::dates::rfc3339_ms(made);
            if made_ms.is_some_and(|ms| ms.saturating_add(CLOCK_MARGIN_MS) < started) {
                return Judgement::NotOurs(format!(
                    "it was made at {}, before this call started",
                    text::clip(made, 40)
                ));
            }
        }
        let labels = metadata.labels.unwrap_or_default();
        for (key, value) in &self.labels {
            match labels.get(key) {
                Some(found) if found == value => {}
                Some(found) => {
                    return Judgement::NotOurs(format!(
                        "its label {} is {}, not {}",
                        quoted(key),
                        quoted(found),
                        quoted(value)
                    ))
                }
                None => return Judgement::NotOurs(format!("it has no label {}", quoted(key))),
            }
        }
        let uids: Vec<String> = metadata
            .owner_references
            .unwrap_or_default()
            .into_iter()
            .filter_map(|o| o.uid)
            .collect();
        for uid in &self.owner_uids {
            if !uids.contains(uid) {
                return Judgement::NotOurs(format!(
                    "it has no owner reference with uid {}",
                    quoted(uid)
                ));
            }
        }
        Judgement::Ours
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    const SENT: &str = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"runner-1-workflow","labels":{"runner-pod":"runner-1","app":"job"},"ownerReferences":[{"apiVersion":"v1","kind":"Pod","name":"runner-1","uid":"u-1"}]},"spec":{"containers":[]}}"#;

    fn ours() -> Ownership {
        Ownership::of_body(SENT).unwrap()
    }

    #[test]
    fn the_sent_body_is_read() {
        let o = ours();
        assert_eq!(o.kind.as_deref(), Some("Pod"));
        assert_eq!(o.name.as_deref(), Some("runner-1-workflow"));
        assert_eq!(o.labels.len(), 2);
        assert_eq!(o.owner_uids, vec!["u-1".to_string()]);
        assert!(o.is_recognisable());
    }

    #[test]
    fn the_object_as_the_server_returns_it_is_ours() {
        // More labels, more owners, status, defaults: still ours.
        let back = r#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"runner-1-workflow","namespace":"ns","uid":"p-9","labels":{"app":"job","runner-pod":"runner-1","added":"by-admission"},"ownerReferences":[{"uid":"other"},{"apiVersion":"v1","kind":"Pod","name":"runner-1","uid":"u-1"}]},"status":{"phase":"Pending"}}"#;
        assert_eq!(ours().judge(back, None), Judgement::Ours);
        // client-node's model, serialised without a kind: still ours.
        let no_kind = r#"{"metadata":{"name":"runner-1-workflow","labels":{"app":"job","runner-pod":"runner-1"},"ownerReferences":[{"uid":"u-1"}]}}"#;
        assert_eq!(ours().judge(no_kind, None), Judgement::Ours);
    }

    #[test]
    fn another_jobs_object_is_not_ours() {
        let cases = [
            (
                r#"{"metadata":{"name":"runner-1-workflow","labels":{"app":"job","runner-pod":"runner-2"},"ownerReferences":[{"uid":"u-1"}]}}"#,
                "label",
            ),
            (
                r#"{"metadata":{"name":"runner-1-workflow","labels":{"app":"job"},"ownerReferences":[{"uid":"u-1"}]}}"#,
                "no label",
            ),
            (
                r#"{"metadata":{"name":"runner-1-workflow","labels":{"app":"job","runner-pod":"runner-1"},"ownerReferences":[{"uid":"u-2"}]}}"#,
                "uid",
            ),
            (
                r#"{"metadata":{"name":"runner-1-workflow","labels":{"app":"job","runner-pod":"runner-1"}}}"#,
                "uid",
            ),
            (
                r#"{"metadata":{"name":"other","labels":{"app":"job","runner-pod":"runner-1"},"ownerReferences":[{"uid":"u-1"}]}}"#,
                "name",
            ),
            (
                r#"{"kind":"Secret","metadata":{"name":"runner-1-workflow","labels":{"app":"job","runner-pod":"runner-1"},"ownerReferences":[{"uid":"u-1"}]}}"#,
                "kind",
            ),
            (
                r#"{"metadata":{"name":"runner-1-workflow","deletionTimestamp":"2026-12-01T10:00:00Z","labels":{"app":"job","runner-pod":"runner-1"},"ownerReferences":[{"uid":"u-1"}]}}"#,
                "being deleted",
            ),
            (r#"{"metadata":{}}"#, "name"),
            (r#"{}"#, "name"),
            (r#"not json"#, "unreadable"),
            (
                r#"{"metadata":{"name":"runner-1-workflow","labels":{"app":1}}}"#,
                "unreadable",
            ),
            (r#"[]"#, "unreadable"),
        ];
        for (back, why) in cases {
            match ours().judge(back, None) {
                Judgement::NotOurs(reason) => assert!(reason.contains(why), "{back}: {reason}"),
                Judgement::Ours => panic!("adopted {back}"),
            }
        }
    }

    #[test]
    fn a_body_with_nothing_to_recognise_it_by_never_adopts() {
        let anything =
            r#"{"metadata":{"name":"x","labels":{"a":"b"},"ownerReferences":[{"uid":"u"}]}}"#;
        for sent in [
            r#"{"metadata":{"name":"x"}}"#,
            r#"{"metadata":{"name":"x","labels":{},"ownerReferences":[{"name":"no-uid"}]}}"#,
            r#"{"metadata":{"generateName":"x-","labels":{"a":"b"}}}"#,
            r#"{"kind":"Pod"}"#,
        ] {
            let o = Ownership::of_body(sent).unwrap();
            assert!(!o.is_recognisable(), "{sent}");
            assert!(
                matches!(o.judge(anything, None), Judgement::NotOurs(_)),
                "{sent}"
            );
        }
    }

    #[test]
    fn a_body_of_the_wrong_shape_is_an_error() {
        for sent in [
            "",
            "nope",
            "[1]",
            r#"{"metadata":{"labels":{"a":null}}}"#,
            r#"{"metadata":{"ownerReferences":{}}}"#,
        ] {
            assert!(Ownership::of_body(sent).is_err(), "{sent:?}");
        }
    }
}

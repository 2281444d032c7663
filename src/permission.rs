//! The permissions a check requires: parsing the hooks' table, one
//! permission per verb, a stable order-insensitive fingerprint, and the
//! human name used in denials (`create pods/exec`).

use std::fmt;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use thiserror::Error;

use crate::text::quoted;

/// One row of the hooks' permission table: a resource and the verbs needed
/// on it. `verb` (one) is accepted as well as `verbs` (many).
/// On the wire `{group?, resource?, subresource?, verbs?, verb?}`, read
/// with each field optional and written with `verb` only when set.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct PermissionSpec {
    /// API group; the core group is `""`.
    pub group: String,
    /// Resource, e.g. `pods`.
    pub resource: String,
    /// Subresource, e.g. `exec`; empty for none.
    pub subresource: String,
    /// The verbs needed.
    pub verbs: Vec<String>,
    /// A single verb, for callers that list one per row.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verb: Option<String>,
}

/// The permissions the runner container hooks need in their namespace: 13
/// verbs on pods, pods/exec, pods/log and secrets.
pub fn runner_hooks_permissions() -> Vec<PermissionSpec> {
    let row = |resource: &str, subresource: &str, verbs: &[&str]| PermissionSpec {
        group: String::new(),
        resource: resource.into(),
        subresource: subresource.into(),
        verbs: verbs.iter().map(|v| v.to_string()).collect(),
        verb: None,
    };
    vec![
        row("pods", "", &["get", "list", "create", "delete"]),
        row("pods", "exec", &["get", "create"]),
        row("pods", "log", &["get", "list", "watch"]),
        row("secrets", "", &["get", "list", "create", "delete"]),
    ]
}

/// One verb on one resource: what one SelfSubjectAccessReview asks.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Permission {
    /// The verb, e.g. `create`.
    pub verb: String,
    /// API group; the core group is `""`.
    pub group: String,
    /// Resource, e.g. `pods`.
    pub resource: String,
    /// Subresource, e.g. `exec`; empty for none.
    pub subresource: String,
}

/// The most permissions (verb and resource pairs, counted as written) a
/// table may hold. Each is one access review when the rules review does not
/// prove it; the hooks need 13. A larger table is refused before any work
/// that grows with it.
pub const MAX_PERMISSIONS: usize = 100;

/// A permission table that cannot be checked.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PermissionError {
    /// No permissions at all: a check of nothing would always pass.
    #[error("the required permission list is empty")]
    Empty,
    /// More than [`MAX_PERMISSIONS`].
    #[error("the required permission list has {count} permissions; at most {MAX_PERMISSIONS} are checked (each may be one access review per step)")]
    TooMany {
        /// Verb and resource pairs, counted as written.
        count: usize,
    },
    /// A row without a resource.
    #[error("required permission #{index} has no resource")]
    NoResource {
        /// Position in the table, from 0.
        index: usize,
    },
    /// A row without verbs.
    #[error("required permission #{index} ({resource}) has no verbs")]
    NoVerbs {
        /// Position in the table, from 0.
        index: usize,
        /// Its resource.
        resource: String,
    },
    /// A name with characters no Kubernetes name has (whitespace, control
    /// characters, `/` outside the subresource form).
    #[error(
        "required permission #{index} has an invalid {field}: {}",
        quoted(value)
    )]
    Invalid {
        /// Position in the table, from 0.
        index: usize,
        /// Which field.
        field: &'static str,
        /// The value, as given.
        value: String,
    },
}

/// Flattens the table to one permission per verb, sorted and de-duplicated.
pub fn flatten(specs: &[PermissionSpec]) -> Result<Vec<Permission>, PermissionError> {
    let count: usize = specs
        .iter()
        .map(|spec| spec.verbs.len() + usize::from(spec.verb.is_some()))
        .sum();
    if count > MAX_PERMISSIONS {
        return Err(PermissionError::TooMany { count });
    }
    let mut out = Vec::new();
    for (index, spec) in specs.iter().enumerate() {
        if spec.resource.is_empty() {
            return Err(PermissionError::NoResource { index });
        }
        check_name(index, "group", &spec.group)?;
        check_name(index, "resource", &spec.resource)?;
        check_name(index, "subresource", &spec.subresource)?;
        let verbs = spec.verbs.iter().chain(spec.verb.iter());
        let before = out.len();
        for verb in verbs {
            check_name(index, "verb", verb)?;
            if verb.is_empty() {
                continue;
            }
            out.push(Permission {
                verb: verb.clone(),
                group: spec.group.clone(),
                resource: spec.resource.clone(),
                subresource: spec.subresource.clone(),
            });
        }
        if out.len() == before {
            return Err(PermissionError::NoVerbs {
                index,
                resource: spec.resource.clone(),
            });
        }
    }
    if out.is_empty() {
        return Err(PermissionError::Empty);
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

fn check_name(index: usize, field: &'static str, value: &str) -> Result<(), PermissionError> {
    let bad = value.len() > 253
        || value
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || c == '/');
    if bad {
        return Err(PermissionError::Invalid {
            index,
            field,
            value: value.chars().take(80).collect(),
        });
    }
    Ok(())
}

/// A hex SHA-256 over the sorted, de-duplicated permissions: the same set in
/// any order gives the same fingerprint.
pub fn fingerprint(permissions: &[Permission]) -> String {
    // Owned copies (a hundred at most): one sort of `Permission` serves both
    // this and `flatten`.
    let mut sorted = permissions.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut hash = Sha256::new();
    hash.update(b"k8s-auth-preflight/permissions/v1\n");
    for p in &sorted {
        for field in [&p.verb, &p.group, &p.resource, &p.subresource] {
            hash.update((field.len() as u32).to_le_bytes());
            hash.update(field.as_bytes());
        }
    }
    hex(&hash.finalize())
}

/// Lower-case hex of some bytes.
pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 15)] as char);
    }
    s
}

impl Permission {
    /// The resource as RBAC rules name it: `pods` or `pods/exec`.
    pub fn rbac_resource(&self) -> String {
        if self.subresource.is_empty() {
            self.resource.clone()
        } else {
            format!("{}/{}", self.resource, self.subresource)
        }
    }
}

impl fmt::Display for Permission {
    /// `create pods/exec`, or `patch deployments.apps/scale` for a named group.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.verb, self.resource)?;
        if !self.group.is_empty() {
            write!(f, ".{}", self.group)?;
        }
        if !self.subresource.is_empty() {
            write!(f, "/{}", self.subresource)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    pub(crate) fn spec(group: &str, resource: &str, sub: &str, verbs: &[&str]) -> PermissionSpec {
        PermissionSpec {
            group: group.into(),
            resource: resource.into(),
            subresource: sub.into(),
            verbs: verbs.iter().map(|v| v.to_string()).collect(),
            verb: None,
        }
    }

    fn hooks_table() -> Vec<PermissionSpec> {
        runner_hooks_permissions()
    }

    #[test]
    fn flattens_one_permission_per_verb() {
        let flat = flatten(&hooks_table()).unwrap();
        assert_eq!(flat.len(), 13);
        assert!(flat.contains(&Permission {
            verb: "create".into(),
            group: "".into(),
            resource: "pods".into(),
            subresource: "exec".into(),
        }));
    }

    #[test]
    fn duplicates_collapse_and_single_verb_rows_work() {
        let mut table = hooks_table();
        table.push(spec("", "pods", "", &["get"]));
        table.push(PermissionSpec {
            resource: "configmaps".into(),
            verb: Some("get".into()),
            ..Default::default()
        });
        assert_eq!(flatten(&table).unwrap().len(), 14);
    }

    #[test]
    fn bad_tables_are_named_errors() {
        assert_eq!(flatten(&[]), Err(PermissionError::Empty));
        assert_eq!(
            flatten(&[spec("", "", "", &["get"])]),
            Err(PermissionError::NoResource { index: 0 })
        );
        assert!(matches!(
            flatten(&[spec("", "pods", "", &[])]),
            Err(PermissionError::NoVerbs { index: 0, .. })
        ));
        assert!(matches!(
            flatten(&[spec("", "pods/exec", "", &["get"])]),
            Err(PermissionError::Invalid {
                field: "resource",
                ..
            })
        ));
        assert!(matches!(
            flatten(&[spec("", "pods", "", &["get all"])]),
            Err(PermissionError::Invalid { field: "verb", .. })
        ));
    }

    #[test]
    fn fingerprint_ignores_order_but_not_content() {
        let a = flatten(&hooks_table()).unwrap();
        let mut b = a.clone();
        b.reverse();
        assert_eq!(fingerprint(&a), fingerprint(&b));
        let mut c = a.clone();
        c.pop();
        assert_ne!(fingerprint(&a), fingerprint(&c));
        // Field boundaries matter: "pods"+"exec" is not "podse"+"xec".
        let p = |r: &str, s: &str| Permission {
            verb: "get".into(),
            group: "".into(),
            resource: r.into(),
            subresource: s.into(),
        };
        assert_ne!(
            fingerprint(&[p("pods", "exec")]),
            fingerprint(&[p("podse", "xec")])
        );
    }

    #[test]
    fn names_read_like_kubectl() {
        let flat = flatten(&[
            spec("", "pods", "exec", &["create"]),
            spec("apps", "deployments", "scale", &["patch"]),
            spec("", "secrets", "", &["delete"]),
        ])
        .unwrap();
        let names: Vec<String> = flat.iter().map(|p| p.to_string()).collect();
        assert_eq!(
            names,
            [
                "create pods/exec",
                "delete secrets",
                "patch deployments.apps/scale"
            ]
        );
    }

    #[test]
    fn a_table_over_the_limit_is_refused_before_it_is_sorted() {
        let table = |n: usize| -> Vec<PermissionSpec> {
            (0..n)
                .rev()
                .map(|i| PermissionSpec {
                    resource: format!("things{i:05}"),
                    verbs: vec!["get".into()],
                    ..PermissionSpec::default()
                })
                .collect()
        };
        assert_eq!(
            flatten(&table(MAX_PERMISSIONS)).unwrap().len(),
            MAX_PERMISSIONS
        );
        assert_eq!(
            flatten(&table(MAX_PERMISSIONS + 1)),
            Err(PermissionError::TooMany {
                count: MAX_PERMISSIONS + 1
            })
        );
        let err = flatten(&table(10_000)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the required permission list has 10000 permissions; at most 100 are checked (each may be one access review per step)"
        );
        // Verbs count one by one, `verb` included.
        let wide = vec![PermissionSpec {
            resource: "pods".into(),
            verbs: (0..100).map(|i| format!("v{i}")).collect(),
            verb: Some("get".into()),
            ..PermissionSpec::default()
        }];
        assert_eq!(flatten(&wide), Err(PermissionError::TooMany { count: 101 }));
    }
}

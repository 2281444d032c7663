//! What a SelfSubjectRulesReview proves.
//!
//! One SelfSubjectRulesReview (SSRR) returns the rules the service account
//! has in a namespace. A required permission that one of those rules grants
//! is proven without a SelfSubjectAccessReview of its own; the rest are asked
//! one by one. This module decides "proven" with Kubernetes RBAC matching:
//!
//! - verbs: equal, or `*`;
//! - apiGroups: equal, or `*` (the core group is `""`);
//! - resources: the requested resource is `pods`, or `pods/exec` with a
//!   subresource; a rule's `pods/exec`, `*/exec` or `*` matches `pods/exec`,
//!   its `pods` does not;
//! - resourceNames: a rule that lists names grants only those objects, so it
//!   never proves a permission on all objects.
//!
//! Proof is one-sided. Rules are additive: a rule that appears is held even
//! when the list is incomplete, but a rule that does not appear proves
//! nothing, so an SSRR can never deny. And when the review is `incomplete`
//! (a webhook authorizer, as on EKS or AKS, sits in the chain and may deny
//! what RBAC allows), nothing is taken as proven: [`proven`] returns no
//! proofs and every permission is asked with an SSAR. Kubernetes warns that
//! SSRR should not drive authorization; here it only skips reviews, and the
//! real calls still enforce RBAC.

use crate::permission::Permission;
use crate::text::split_once;

/// The `status` of a SelfSubjectRulesReview, as the API returns it.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RulesStatus {
    /// Rules on resources.
    pub resource_rules: Vec<ResourceRule>,
    /// True when the list may be missing rules (a webhook authorizer).
    pub incomplete: bool,
    /// Why the list is incomplete, when the API says.
    pub evaluation_error: Option<String>,
}

/// One rule on resources.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ResourceRule {
    /// Verbs, or `*`.
    pub verbs: Vec<String>,
    /// API groups, or `*`; `""` is the core group.
    pub api_groups: Vec<String>,
    /// Resources (`pods`, `pods/exec`, `*/exec`), or `*`.
    pub resources: Vec<String>,
    /// When not empty, the rule grants only these objects.
    pub resource_names: Vec<String>,
}

/// True when `rule` grants `permission` on every object of its resource.
pub fn rule_grants(rule: &ResourceRule, permission: &Permission) -> bool {
    rule.resource_names.is_empty()
        && rule.verbs.iter().any(|v| v == "*" || *v == permission.verb)
        && rule
            .api_groups
            .iter()
            .any(|g| g == "*" || *g == permission.group)
        && rule
            .resources
            .iter()
            .any(|r| resource_matches(r, permission))
}

fn resource_matches(rule_resource: &str, p: &Permission) -> bool {
    if rule_resource == "*" {
        return true;
    }
    if p.subresource.is_empty() {
        return rule_resource == p.resource;
    }
    match split_once(rule_resource, b'/') {
        Some((resource, subresource)) => {
            subresource == p.subresource && (resource == "*" || resource == p.resource)
        }
        None => false,
    }
}

/// For each permission, whether the review proves it. An incomplete review
/// proves nothing (see the module docs).
pub fn proven(status: &RulesStatus, permissions: &[Permission]) -> Vec<bool> {
    permissions
        .iter()
        .map(|p| {
            !status.incomplete
                && status
                    .resource_rules
                    .iter()
                    .any(|rule| rule_grants(rule, p))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    fn rule(verbs: &[&str], groups: &[&str], resources: &[&str], names: &[&str]) -> ResourceRule {
        let v = |xs: &[&str]| xs.iter().map(|s| s.to_string()).collect();
        ResourceRule {
            verbs: v(verbs),
            api_groups: v(groups),
            resources: v(resources),
            resource_names: v(names),
        }
    }

    fn perm(verb: &str, group: &str, resource: &str, sub: &str) -> Permission {
        Permission {
            verb: verb.into(),
            group: group.into(),
            resource: resource.into(),
            subresource: sub.into(),
        }
    }

    /// Each RBAC matching case, with the answer Kubernetes gives.
    #[test]
    fn rbac_matching_table() {
        let cases: &[(&str, ResourceRule, Permission, bool)] = &[
            (
                "exact",
                rule(&["get"], &[""], &["pods"], &[]),
                perm("get", "", "pods", ""),
                true,
            ),
            (
                "other verb",
                rule(&["get"], &[""], &["pods"], &[]),
                perm("list", "", "pods", ""),
                false,
            ),
            (
                "verb *",
                rule(&["*"], &[""], &["pods"], &[]),
                perm("delete", "", "pods", ""),
                true,
            ),
            (
                "group *",
                rule(&["get"], &["*"], &["deployments"], &[]),
                perm("get", "apps", "deployments", ""),
                true,
            ),
            (
                "core group is not apps",
                rule(&["get"], &[""], &["deployments"], &[]),
                perm("get", "apps", "deployments", ""),
                false,
            ),
            (
                "apps is not core",
                rule(&["get"], &["apps"], &["pods"], &[]),
                perm("get", "", "pods", ""),
                false,
            ),
            (
                "resource *",
                rule(&["get"], &[""], &["*"], &[]),
                perm("get", "", "secrets", ""),
                true,
            ),
            (
                "resource * covers subresources",
                rule(&["create"], &[""], &["*"], &[]),
                perm("create", "", "pods", "exec"),
                true,
            ),
            (
                "pods does not grant pods/exec",
                rule(&["create"], &[""], &["pods"], &[]),
                perm("create", "", "pods", "exec"),
                false,
            ),
            (
                "pods/exec grants pods/exec",
                rule(&["create"], &[""], &["pods/exec"], &[]),
                perm("create", "", "pods", "exec"),
                true,
            ),
            (
                "pods/exec does not grant pods",
                rule(&["get"], &[""], &["pods/exec"], &[]),
                perm("get", "", "pods", ""),
                false,
            ),
            (
                "*/exec grants pods/exec",
                rule(&["create"], &[""], &["*/exec"], &[]),
                perm("create", "", "pods", "exec"),
                true,
            ),
            (
                "*/exec does not grant pods/log",
                rule(&["get"], &[""], &["*/exec"], &[]),
                perm("get", "", "pods", "log"),
                false,
            ),
            (
                "*/exec does not grant pods",
                rule(&["get"], &[""], &["*/exec"], &[]),
                perm("get", "", "pods", ""),
                false,
            ),
            (
                "pods/log does not grant pods/exec",
                rule(&["get"], &[""], &["pods/log"], &[]),
                perm("get", "", "pods", "exec"),
                false,
            ),
            (
                "services/exec is not pods/exec",
                rule(&["create"], &[""], &["services/exec"], &[]),
                perm("create", "", "pods", "exec"),
                false,
            ),
            (
                "resourceNames never prove all objects",
                rule(&["get"], &[""], &["secrets"], &["one"]),
                perm("get", "", "secrets", ""),
                false,
            ),
            (
                "resourceNames with * still restricted",
                rule(&["*"], &["*"], &["*"], &["x"]),
                perm("get", "", "pods", ""),
                false,
            ),
            (
                "all stars",
                rule(&["*"], &["*"], &["*"], &[]),
                perm("watch", "", "pods", "log"),
                true,
            ),
            (
                "empty verbs grant nothing",
                rule(&[], &[""], &["pods"], &[]),
                perm("get", "", "pods", ""),
                false,
            ),
            (
                "verbs are case-sensitive",
                rule(&["GET"], &[""], &["pods"], &[]),
                perm("get", "", "pods", ""),
                false,
            ),
        ];
        for (name, r, p, want) in cases {
            assert_eq!(rule_grants(r, p), *want, "{name}");
        }
    }

    #[test]
    fn any_rule_may_prove_and_none_may_deny() {
        let status = RulesStatus {
            resource_rules: vec![
                rule(&["get"], &[""], &["pods"], &[]),
                rule(&["create"], &[""], &["pods/exec"], &[]),
            ],
            ..Default::default()
        };
        let perms = [
            perm("get", "", "pods", ""),
            perm("create", "", "pods", "exec"),
            perm("delete", "", "pods", ""),
        ];
        assert_eq!(proven(&status, &perms), [true, true, false]);
    }

    #[test]
    fn an_incomplete_review_proves_nothing() {
        let status = RulesStatus {
            resource_rules: vec![rule(&["*"], &["*"], &["*"], &[])],
            incomplete: true,
            evaluation_error: Some(
                "webhook authorizer does not support user rule resolution".into(),
            ),
        };
        assert_eq!(proven(&status, &[perm("get", "", "pods", "")]), [false]);
    }
}

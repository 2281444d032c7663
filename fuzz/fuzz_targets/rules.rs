//! The rules evaluator against a second, independent reading of RBAC
//! matching: they must agree; an incomplete review proves nothing.
#![no_main]

mod input;

use input::Input;
use k8s_auth_preflight::rules::{proven, ResourceRule, RulesStatus};
use k8s_auth_preflight::Permission;
use libfuzzer_sys::fuzz_target;

const VERBS: &[&str] = &["get", "list", "create", "*", "GET", ""];
const GROUPS: &[&str] = &["", "apps", "*"];
const RESOURCES: &[&str] = &["pods", "pods/exec", "*/exec", "*", "secrets", "pods/log", "*/", "/exec", "pods/*"];
const SUBRESOURCES: &[&str] = &["", "exec", "log"];

/// Kubernetes RBAC, read again: resource-name restrictions prove nothing on
/// all objects; a rule resource matches the combined `resource/subresource`
/// exactly, or is `*`, or is `*/<subresource>` for a requested subresource.
fn reference(rule: &ResourceRule, p: &Permission) -> bool {
    let combined = if p.subresource.is_empty() { p.resource.clone() } else { format!("{}/{}", p.resource, p.subresource) };
    rule.resource_names.is_empty()
        && rule.verbs.iter().any(|v| v == "*" || v == &p.verb)
        && rule.api_groups.iter().any(|g| g == "*" || g == &p.group)
        && rule.resources.iter().any(|r| {
            r == "*" || *r == combined || (!p.subresource.is_empty() && *r == format!("*/{}", p.subresource))
        })
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input::new(data);
    let rules: Vec<ResourceRule> = (0..input.u8() % 5)
        .map(|_| ResourceRule {
            verbs: input.strings(VERBS, 3),
            api_groups: input.strings(GROUPS, 2),
            resources: input.strings(RESOURCES, 3),
            resource_names: input.strings(&["x"], 1),
        })
        .collect();
    let permissions: Vec<Permission> = (0..1 + input.u8() % 4)
        .map(|_| Permission {
            verb: input.string(VERBS),
            group: input.string(GROUPS),
            resource: input.string(&["pods", "secrets", "*"]),
            subresource: input.string(SUBRESOURCES),
        })
        .collect();
    let incomplete = input.bool();
    let status = RulesStatus { resource_rules: rules.clone(), incomplete, evaluation_error: None };
    let got = proven(&status, &permissions);
    for (p, proven) in permissions.iter().zip(got) {
        let want = !incomplete && rules.iter().any(|r| reference(r, p));
        assert_eq!(proven, want, "{p:?} under {rules:?}");
    }
});

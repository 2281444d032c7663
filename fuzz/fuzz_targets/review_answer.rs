//! Review answers as the server sent them: any bytes, no panic; a body the
//! reader accepts has the documented types (checked against serde_json's
//! own untyped reading), so nothing is coerced into a rule.
#![no_main]

use k8s_auth_preflight::review_answer::{access_answer, rules_answer};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fn strings(v: Option<&Value>, required: bool) -> bool {
    match v {
        None => !required,
        Some(Value::Null) => true,
        Some(Value::Array(items)) => items.iter().all(Value::is_string),
        Some(_) => false,
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let untyped: Option<Value> = serde_json::from_str(text).ok();
    let status = untyped.as_ref().and_then(|v| v.get("status"));
    if let Ok(answer) = access_answer(text) {
        let s = status.expect("accepted without a status");
        assert_eq!(s.get("allowed"), Some(&Value::Bool(answer.allowed)));
    }
    if let Ok(rules) = rules_answer(text) {
        let s = status.expect("accepted without a status");
        assert_eq!(s.get("incomplete"), Some(&Value::Bool(rules.incomplete)));
        let list = s.get("resourceRules").expect("accepted without resourceRules");
        let items = match list {
            Value::Null => Vec::new(),
            Value::Array(items) => items.clone(),
            other => panic!("accepted resourceRules {other}"),
        };
        assert_eq!(items.len(), rules.resource_rules.len());
        for item in &items {
            assert!(strings(item.get("verbs"), true), "verbs {item}");
            for field in ["apiGroups", "resources", "resourceNames"] {
                assert!(strings(item.get(field), false), "{field} {item}");
            }
        }
    }
});

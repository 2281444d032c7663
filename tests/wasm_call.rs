//! The exported `CallPolicy` and `Call` classes, stepped through JsValues as
//! js-shim/calls.js steps them (`wasm-pack test --node`): the shapes of the
//! actions the executor takes, the facts a call takes, and bad input as
//! clear errors.
#![cfg(target_arch = "wasm32")]

use js_sys::{Array, Reflect, JSON};
use k8s_auth_preflight::wasm::{WasmCall, WasmSettings};
use wasm_bindgen::JsValue;
use wasm_bindgen_test::wasm_bindgen_test as test;

const T0: f64 = 1_792_548_926_000.0;

fn json(text: &str) -> JsValue {
    JSON::parse(text).expect("test JSON")
}

fn get(v: &JsValue, key: &str) -> JsValue {
    Reflect::get(v, &JsValue::from_str(key)).unwrap()
}

fn stringify(v: &JsValue) -> String {
    JSON::stringify(v).unwrap().as_string().unwrap()
}

fn all(actions: &Array) -> Vec<String> {
    actions.iter().map(|a| stringify(&a)).collect()
}

const ENV: &str =
    r#"{"ACTIONS_RUNNER_PREFLIGHT_SEED":"3","ACTIONS_RUNNER_PREFLIGHT_CALL_DEADLINE_MS":"20000"}"#;

fn call(spec: &str) -> WasmCall {
    WasmSettings::new(&json(ENV)).call(&json(spec), T0).unwrap()
}

fn error_code(e: JsValue) -> (String, String) {
    (
        get(&e, "code").as_string().unwrap_or_default(),
        get(&e, "message").as_string().unwrap_or_default(),
    )
}

#[test]
fn a_read_is_sent_with_a_timeout_and_waits_for_it() {
    let mut c = call(r#"{"method":"readNamespacedPod","namespace":"ci","name":"p"}"#);
    let actions = c.step(T0, &json("[]")).unwrap();
    assert_eq!(
        all(&actions),
        [
            // Awaited 65 s by the host; another copy may go out at 10 s.
            r#"{"type":"send","probe":1,"attempt":1,"request":{"kind":"call"},"timeoutMs":65000}"#,
            r#"{"type":"wait","untilMs":1792548936000}"#,
        ]
    );
    let done = c
        .step(
            T0 + 5.0,
            &json(r#"[{"type":"response","probe":1,"result":{"type":"succeeded"}}]"#),
        )
        .unwrap();
    assert_eq!(
        stringify(&done.get(done.length() - 1)),
        r#"{"type":"done","outcome":{"type":"return","request":1}}"#
    );
}

#[test]
fn a_pass_through_has_no_timeout_and_waits_until_it_settles() {
    let mut policy = WasmSettings::new(&json(ENV));
    assert!(policy.passes_through("patchNamespacedPod"));
    assert!(!policy.passes_through("createNamespacedPod"));
    let mut c = call(r#"{"method":"patchNamespacedPod"}"#);
    assert_eq!(
        all(&c.step(T0, &json("[]")).unwrap()),
        [
            r#"{"type":"send","probe":1,"attempt":1,"request":{"kind":"call"},"timeoutMs":null}"#,
            r#"{"type":"wait","untilMs":null}"#,
        ]
    );
    let mut off = WasmSettings::new(&json(
        r#"{"ACTIONS_RUNNER_PREFLIGHT_RESILIENT_CALLS":"off"}"#,
    ));
    assert!(off.passes_through("createNamespacedPod"));
    assert!(off.call_warnings().is_empty());
}

#[test]
fn a_retried_creates_conflict_is_read_back_and_returned_when_ours() {
    let body = r#"{"kind":"Pod","metadata":{"name":"p","labels":{"runner-pod":"r"}}}"#;
    let spec = format!(
        r#"{{"method":"createNamespacedPod","namespace":"ci","body":{}}}"#,
        stringify(&JsValue::from_str(body))
    );
    let mut c = call(&spec);
    let _ = c.step(T0, &json("[]")).unwrap();
    // The first attempt's answer was lost (a reset): it may have made the pod.
    let actions = c
        .step(
            T0 + 1.0,
            &json(r#"[{"type":"response","probe":1,"result":{"type":"failed","facts":{"codes":["ECONNRESET"]}}}]"#),
        )
        .unwrap();
    assert_eq!(
        get(&actions.get(0), "level").as_string().as_deref(),
        Some("warning")
    );
    let mut now = T0 + 1.0;
    let mut actions = actions;
    // Step until the retry is sent.
    while get(&actions.get(actions.length() - 1), "type")
        .as_string()
        .as_deref()
        == Some("wait")
    {
        now = get(&actions.get(actions.length() - 1), "untilMs")
            .as_f64()
            .unwrap();
        actions = c.step(now, &json("[]")).unwrap();
        if actions
            .iter()
            .any(|a| get(&a, "type").as_string().as_deref() == Some("send"))
        {
            break;
        }
    }
    let conflict =
        r#"[{"type":"response","probe":2,"result":{"type":"failed","facts":{"status":409}}}]"#;
    let actions = c.step(now, &json(conflict)).unwrap();
    let read_back = actions
        .iter()
        .find(|a| get(a, "type").as_string().as_deref() == Some("send"))
        .expect("a read-back");
    assert_eq!(
        stringify(&get(&read_back, "request")),
        r#"{"kind":"readBack","method":"readNamespacedPod","name":"p","namespace":"ci"}"#
    );
    let answer = format!(
        r#"[{{"type":"response","probe":3,"result":{{"type":"readBack","body":{}}}}}]"#,
        stringify(&JsValue::from_str(
            r#"{"kind":"Pod","metadata":{"name":"p","uid":"u","labels":{"runner-pod":"r","x":"y"}}}"#
        ))
    );
    let done = c.step(now, &json(&answer)).unwrap();
    assert_eq!(
        stringify(&done.get(done.length() - 1)),
        r#"{"type":"done","outcome":{"type":"return","request":3}}"#
    );
}

#[test]
fn bad_specs_and_facts_are_clear_errors() {
    let mut policy = WasmSettings::new(&json(ENV));
    let (code, message) = error_code(
        policy
            .call(&json(r#"{"method":"x","operation":"write"}"#), T0)
            .err()
            .unwrap(),
    );
    assert_eq!(code, "PREFLIGHT_BAD_INPUT");
    assert!(
        message.contains("operation") && message.contains("\"write\""),
        "{message}"
    );
    let (code, message) = error_code(policy.call(&json(r#"{"name":"p"}"#), T0).err().unwrap());
    assert_eq!(code, "PREFLIGHT_BAD_INPUT");
    assert!(message.contains("method"), "{message}");

    let mut c = call(r#"{"method":"listNamespacedPod"}"#);
    let _ = c.step(T0, &json("[]")).unwrap();
    let (code, message) = error_code(
        c.step(
            T0,
            &json(r#"[{"type":"keyFile","probe":1,"result":{"type":"succeeded"}}]"#),
        )
        .unwrap_err(),
    );
    assert_eq!(code, "PREFLIGHT_BAD_INPUT");
    assert!(message.contains("[0].type"), "{message}");
    let (code, _) = error_code(
        c.step(
            T0,
            &json(r#"[{"type":"response","probe":9,"result":{"type":"succeeded"}}]"#),
        )
        .unwrap_err(),
    );
    assert_eq!(code, "PREFLIGHT_BAD_RESULT");
    let (code, _) = error_code(c.step(f64::NAN, &json("[]")).unwrap_err());
    assert_eq!(code, "PREFLIGHT_BAD_TIME");
}

#[test]
fn bad_settings_are_warned_about_once_by_the_settings_calls() {
    let env = json(r#"{"ACTIONS_RUNNER_PREFLIGHT_CALL_DEADLINE_MS":"soon"}"#);
    let mut settings = WasmSettings::new(&env);
    let warnings = settings.call_warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("ACTIONS_RUNNER_PREFLIGHT_CALL_DEADLINE_MS"),
        "{}",
        warnings[0]
    );
    // Asked for before in this process: not again.
    assert!(settings.call_warnings().is_empty());
    assert_eq!(WasmSettings::new(&env).call_warnings().len(), 1);
}

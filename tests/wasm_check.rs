//! The exported `Check` class, stepped through JsValues as js-shim/execute.js
//! steps it (`wasm-pack test --node`): the shapes of its actions, the facts
//! it takes, and bad facts as clear errors.
#![cfg(target_arch = "wasm32")]

use js_sys::{Array, Reflect, JSON};
use k8s_auth_preflight::wasm::{WasmCheck, WasmSettings};
use wasm_bindgen::JsValue;
use wasm_bindgen_test::wasm_bindgen_test as test;

const T0: f64 = 1_792_548_926_000.0;

fn json(text: &str) -> JsValue {
    JSON::parse(text).expect("test JSON")
}

fn get(v: &JsValue, key: &str) -> JsValue {
    Reflect::get(v, &JsValue::from_str(key)).unwrap()
}

fn types(actions: &Array) -> Vec<String> {
    actions
        .iter()
        .map(|a| get(&a, "type").as_string().unwrap())
        .collect()
}

fn permissions() -> JsValue {
    json(r#"[{"group":"","resource":"pods","verbs":["get","list"]}]"#)
}

fn check(env: &str) -> WasmCheck {
    WasmCheck::new(
        &WasmSettings::new(&json(env)),
        permissions(),
        "ci",
        &json(r#"{"token":"wasm-check-token"}"#),
        &JsValue::NULL,
        &json(r#"{"pid":42,"host":"runner-1"}"#),
        T0,
    )
    .unwrap()
}

const ENV: &str = r#"{"HOME":"/home/r","RUNNER_TEMP":"/rt","ACTIONS_RUNNER_PREFLIGHT_SEED":"3","ACTIONS_RUNNER_PREFLIGHT_RULES_REVIEW":"off"}"#;

fn error_code(e: JsValue) -> (String, String) {
    (
        get(&e, "code").as_string().unwrap_or_default(),
        get(&e, "message").as_string().unwrap_or_default(),
    )
}

#[test]
fn the_first_step_asks_for_both_files_then_waits_for_their_facts() {
    let mut c = check(ENV);
    let actions = c.step(T0, &json("[]")).unwrap();
    assert_eq!(types(&actions), ["readKeyFile", "readRecord", "wait"]);
    let key = actions.get(0);
    assert_eq!(
        get(&key, "file").as_string().unwrap(),
        "/home/r/.k8s-auth-preflight/runner-key"
    );
    let record = actions.get(1);
    let file = get(&record, "file").as_string().unwrap();
    assert!(
        file.starts_with("/rt/k8s-auth-preflight-") && file.ends_with(".json"),
        "{file}"
    );
    assert_eq!(get(&record, "limit").as_f64(), Some(65536.0));
}

#[test]
fn a_missing_key_is_created_then_the_lock_is_tried_then_requests_go_out() {
    let mut c = check(ENV);
    let _ = c.step(T0, &json("[]")).unwrap();
    let facts = json(
        r#"[{"type":"keyFile","report":{"type":"missing","processUid":1000}},
            {"type":"recordOpenFailed","code":"ENOENT"}]"#,
    );
    let actions = c.step(T0, &facts).unwrap();
    assert_eq!(types(&actions), ["createKeyFile", "wait"]);
    let create = actions.get(0);
    assert_eq!(
        get(&create, "folder").as_string().unwrap(),
        "/home/r/.k8s-auth-preflight"
    );
    let text = get(&create, "text").as_string().unwrap();
    assert!(
        text.starts_with("k8s-auth-preflight runner-key v1 "),
        "{text}"
    );
    // The shim created it and read it back.
    let bytes = js_sys::Uint8Array::from(text.as_bytes());
    let report = js_sys::Object::new();
    for (k, v) in [
        ("type", JsValue::from_str("found")),
        ("kind", JsValue::from_str("file")),
        ("mode", JsValue::from_f64(384.0)),
        ("uid", JsValue::from_f64(1000.0)),
        ("processUid", JsValue::from_f64(1000.0)),
        ("bytes", bytes.into()),
    ] {
        Reflect::set(&report, &JsValue::from_str(k), &v).unwrap();
    }
    let fact = js_sys::Object::new();
    Reflect::set(
        &fact,
        &JsValue::from_str("type"),
        &JsValue::from_str("keyFile"),
    )
    .unwrap();
    Reflect::set(&fact, &JsValue::from_str("report"), &report).unwrap();
    let actions = c.step(T0, &Array::of1(&fact)).unwrap();
    assert_eq!(types(&actions), ["createLock", "wait"]);
    let content = get(&actions.get(0), "content").as_string().unwrap();
    assert!(
        content.starts_with("42 runner-1 ") && content.ends_with('\n'),
        "{content}"
    );
    let actions = c
        .step(T0 + 1.0, &json(r#"[{"type":"lockLinked"}]"#))
        .unwrap();
    assert_eq!(types(&actions), ["readRecord", "wait"]);
    let actions = c
        .step(
            T0 + 2.0,
            &json(r#"[{"type":"recordOpenFailed","code":"ENOENT"}]"#),
        )
        .unwrap();
    assert_eq!(types(&actions), ["send", "send", "wait"]);
    let send = actions.get(0);
    assert_eq!(
        get(&get(&send, "request"), "kind").as_string().unwrap(),
        "accessReview"
    );
}

#[test]
fn bad_facts_are_clear_errors_never_panics() {
    let mut c = check(ENV);
    let _ = c.step(T0, &json("[]")).unwrap();
    let cases = [
        (
            r#"{}"#,
            "PREFLIGHT_BAD_INPUT",
            "invalid facts: expected an array",
        ),
        (
            r#"[{"type":"nonsense"}]"#,
            "PREFLIGHT_BAD_INPUT",
            "invalid facts: [0].type: \"nonsense\" (expected keyFile, recordBytes, recordOpenFailed, recordNotAFile, recordReadFailed, lockLinked, lockTempFailed, lockLinkFailed, lockStatFailed, lockFound, process, removed, written, deleted or response)",
        ),
        (
            r#"[{"type":"recordBytes","bytes":"abc"}]"#,
            "PREFLIGHT_BAD_INPUT",
            "invalid facts: [0].bytes: expected a Uint8Array, got a string",
        ),
        (
            r#"[{"type":"lockFound","isFile":true}]"#,
            "PREFLIGHT_BAD_INPUT",
            "invalid facts: [0].mtimeMs: missing",
        ),
        (
            r#"[{"type":"written","code":null}]"#,
            "PREFLIGHT_BAD_FACT",
            "unexpected written fact: the check did not ask for it",
        ),
    ];
    for (facts, code, message) in cases {
        let (got_code, got_message) = error_code(c.step(T0, &json(facts)).unwrap_err());
        assert_eq!(
            (got_code.as_str(), got_message.as_str()),
            (code, message),
            "{facts}"
        );
    }
    // Still usable after the bad facts.
    let actions = c
        .step(
            T0,
            &json(r#"[{"type":"keyFile","report":{"type":"failed","code":"EACCES"}},{"type":"recordOpenFailed","code":"ENOENT"}]"#),
        )
        .unwrap();
    assert_eq!(types(&actions), ["createLock", "wait"]);
}

#[test]
fn bad_credential_facts_are_refused_by_name() {
    let refused = |user: &str| {
        let e = WasmCheck::new(
            &WasmSettings::new(&json(ENV)),
            permissions(),
            "ci",
            &json(user),
            &JsValue::NULL,
            &json(r#"{"pid":42,"host":"runner-1"}"#),
            T0,
        )
        .err()
        .unwrap();
        error_code(e)
    };
    assert_eq!(
        refused(r#"{"tokenFile":{"path":"/t","type":"opened"}}"#),
        (
            "PREFLIGHT_BAD_INPUT".to_string(),
            "invalid user: tokenFile.type: \"opened\" (expected one of read, notRegular, tooLarge, failed)".to_string()
        )
    );
    let (_, message) = refused(r#"{"keyFile":{"path":"/k","type":"failed"}}"#);
    assert!(message.contains("keyFile.code"), "{message}");
    let (_, message) = refused(r#"{"token":7}"#);
    assert!(message.contains("token: expected a string"), "{message}");
}

#[test]
fn a_bad_process_or_time_is_refused_at_once() {
    let e = WasmCheck::new(
        &WasmSettings::new(&json(ENV)),
        permissions(),
        "ci",
        &JsValue::NULL,
        &JsValue::NULL,
        &json(r#"{"pid":"42"}"#),
        T0,
    )
    .err()
    .unwrap();
    assert_eq!(
        error_code(e),
        (
            "PREFLIGHT_BAD_INPUT".to_string(),
            "invalid process: pid: expected a whole number from 0 to 4294967295, got a string"
                .to_string()
        )
    );
    let mut c = check(ENV);
    let (code, _) = error_code(c.step(f64::NAN, &json("[]")).unwrap_err());
    assert_eq!(code, "PREFLIGHT_BAD_TIME");
}

#[test]
fn an_array_claiming_billions_of_items_is_refused_before_any_is_read() {
    // A Proxy whose every item is a valid verb and whose length is 2^32 - 1:
    // read item by item, it held the event loop for minutes.
    let handler = js_sys::Object::new();
    let get = js_sys::Function::new_with_args(
        "target, key",
        "return key === 'length' ? 4294967295 : (typeof key === 'string' && /^[0-9]+$/.test(key) ? 'get' : Reflect.get(target, key));",
    );
    Reflect::set(&handler, &JsValue::from_str("get"), &get).unwrap();
    let verbs = js_sys::Proxy::new(&Array::new(), &handler);
    let row = json(r#"{"group":"","resource":"pods"}"#);
    Reflect::set(&row, &JsValue::from_str("verbs"), &verbs).unwrap();
    let e = WasmCheck::new(
        &WasmSettings::new(&json(ENV)),
        Array::of1(&row).into(),
        "ci",
        &JsValue::NULL,
        &JsValue::NULL,
        &json(r#"{"pid":42,"host":"runner-1"}"#),
        T0,
    )
    .err()
    .unwrap();
    assert_eq!(
        error_code(e),
        (
            "PREFLIGHT_BAD_INPUT".to_string(),
            "invalid permissions: [0].verbs: has 4294967295 items; at most 100000 are read"
                .to_string()
        )
    );
}

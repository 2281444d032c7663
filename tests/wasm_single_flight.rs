//! The exported `SingleFlight` class and `Preflight.isDecided/limitBudget`,
//! driven through JsValues as js-shim/index.js drives them
//! (`wasm-pack test --node`).
#![cfg(target_arch = "wasm32")]

use js_sys::{Reflect, JSON};
use k8s_auth_preflight::wasm::{WasmPreflight, WasmSingleFlight};
use wasm_bindgen::JsValue;
use wasm_bindgen_test::wasm_bindgen_test as test;

const T0: f64 = 1_792_548_926_000.0;

fn json(text: &str) -> JsValue {
    JSON::parse(text).expect("test JSON")
}

fn get(v: &JsValue, key: &str) -> JsValue {
    Reflect::get(v, &JsValue::from_str(key)).unwrap()
}

fn kind(v: &JsValue) -> String {
    get(v, "type").as_string().unwrap()
}

fn env(extra: &str) -> JsValue {
    json(&format!(
        r#"{{"ACTIONS_RUNNER_PREFLIGHT_SEED":"3","ACTIONS_RUNNER_PREFLIGHT_DEADLINE_MS":"20000"{extra}}}"#
    ))
}

#[test]
fn a_follower_waits_then_uses_the_record() {
    let mut flight = WasmSingleFlight::new(&env(""), T0).unwrap();
    assert_eq!(kind(&flight.poll(T0).unwrap()), "acquire");
    flight
        .on_lock(T0, &json(r#"{"type":"held","ageMs":12,"holder":"alive"}"#))
        .unwrap();
    let wait = flight.poll(T0).unwrap();
    assert_eq!(kind(&wait), "wait");
    let until = get(&wait, "untilMs").as_f64().unwrap();
    assert!(until > T0 && until <= T0 + 25.0, "{until}");
    assert_eq!(kind(&flight.poll(until).unwrap()), "reread");
    flight.on_record(until, true).unwrap();
    let done = flight.poll(until).unwrap();
    assert_eq!(kind(&done), "useRecord");
    assert_eq!(JSON::stringify(&done).unwrap(), r#"{"type":"useRecord"}"#);
}

#[test]
fn lead_and_alone_carry_the_budget() {
    let mut flight = WasmSingleFlight::new(&env(""), T0).unwrap();
    let _ = flight.poll(T0).unwrap();
    flight
        .on_lock(T0 + 500.0, &json(r#"{"type":"acquired"}"#))
        .unwrap();
    assert_eq!(
        JSON::stringify(&flight.poll(T0 + 500.0).unwrap()).unwrap(),
        r#"{"type":"lead","budgetMs":19500}"#
    );

    let mut flight = WasmSingleFlight::new(&env(""), T0).unwrap();
    let _ = flight.poll(T0).unwrap();
    flight
        .on_lock(T0, &json(r#"{"type":"unavailable"}"#))
        .unwrap();
    assert_eq!(
        JSON::stringify(&flight.poll(T0).unwrap()).unwrap(),
        r#"{"type":"alone","budgetMs":20000,"warning":null}"#
    );

    let mut off = WasmSingleFlight::new(
        &env(r#","ACTIONS_RUNNER_PREFLIGHT_SINGLE_FLIGHT":"off""#),
        T0,
    )
    .unwrap();
    assert_eq!(kind(&off.poll(T0).unwrap()), "alone");
}

#[test]
fn a_dead_holder_is_removed() {
    let mut flight = WasmSingleFlight::new(&env(""), T0).unwrap();
    let _ = flight.poll(T0).unwrap();
    flight
        .on_lock(T0, &json(r#"{"type":"held","ageMs":0,"holder":"dead"}"#))
        .unwrap();
    assert_eq!(kind(&flight.poll(T0).unwrap()), "removeStale");
    flight.on_removed(T0, true).unwrap();
    assert_eq!(kind(&flight.poll(T0).unwrap()), "acquire");
}

#[test]
fn bad_lock_reports_are_clear_errors() {
    for bad in [
        r#"{}"#,
        r#"{"type":"taken"}"#,
        r#"{"type":"held","ageMs":"old","holder":"alive"}"#,
        r#"{"type":"held","ageMs":5,"holder":"zombie"}"#,
        r#"null"#,
    ] {
        let mut flight = WasmSingleFlight::new(&env(""), T0).unwrap();
        let _ = flight.poll(T0).unwrap();
        let e = flight.on_lock(T0, &json(bad)).unwrap_err();
        assert_eq!(
            get(&e, "code").as_string().unwrap(),
            "PREFLIGHT_BAD_INPUT",
            "{bad}"
        );
        let message = get(&e, "message").as_string().unwrap();
        assert!(
            message.starts_with("invalid lock attempt"),
            "{bad}: {message}"
        );
        // And the machine still asks for the report it needs.
        assert_eq!(kind(&flight.poll(T0).unwrap()), "acquire", "{bad}");
    }
    assert!(WasmSingleFlight::new(&env(""), f64::NAN).is_err());
}

#[test]
fn is_decided_and_limit_budget_cross_the_boundary() {
    let permissions = json(r#"[{"group":"","resource":"pods","subresource":"","verbs":["get"]}]"#);
    let mut check = WasmPreflight::new(
        &env(r#","ACTIONS_RUNNER_PREFLIGHT_RULES_REVIEW":"off""#),
        permissions,
        "ci",
        &JsValue::from_str("a-token"),
        &JsValue::NULL,
        T0,
        &JsValue::UNDEFINED,
    )
    .unwrap();
    assert!(!check.is_decided());
    check.limit_budget(1_000.0).unwrap();
    assert!(check.limit_budget(-1.0).is_err());
    let send = check.poll(T0).unwrap();
    assert_eq!(kind(&send), "send");
    assert_eq!(
        get(&send, "timeoutMs").as_f64().unwrap(),
        1_000.0,
        "the 10 s timeout is cut to the 1 s budget"
    );
}

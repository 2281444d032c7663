//! The exported WebAssembly API, driven through JsValues exactly as the JS
//! shim drives it, in headless Node (`wasm-pack test --node`).
#![cfg(target_arch = "wasm32")]

use js_sys::{Array, Reflect, JSON};
use k8s_auth_preflight::wasm::{
    cache_file_name, classify, preview_schedule, rules_prove, runner_key_file,
    runner_key_to_create, settings_warnings, WasmPreflight,
};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_test::wasm_bindgen_test as test;

const T0: f64 = 1_792_548_926_000.0;
const TOKEN: &str = "wasm-test-token";

fn json(text: &str) -> JsValue {
    JSON::parse(text).expect("test JSON")
}

fn get(v: &JsValue, key: &str) -> JsValue {
    Reflect::get(v, &JsValue::from_str(key)).unwrap()
}

fn text(v: &JsValue, key: &str) -> String {
    get(v, key).as_string().unwrap_or_default()
}

fn num(v: &JsValue, key: &str) -> f64 {
    get(v, key).as_f64().unwrap()
}

fn permissions() -> JsValue {
    json(
        r#"[{"group":"","resource":"pods","subresource":"","verbs":["get","list","create","delete"]},
            {"group":"","resource":"pods","subresource":"exec","verbs":["get","create"]},
            {"group":"","resource":"pods","subresource":"log","verbs":["get","list","watch"]},
            {"group":"","resource":"secrets","subresource":"","verbs":["get","list","create","delete"]}]"#,
    )
}

/// Access reviews only; the rules-review fast path has its own test below.
fn env() -> JsValue {
    json(
        r#"{"ACTIONS_RUNNER_PREFLIGHT_SEED":"11","ACTIONS_RUNNER_PREFLIGHT_RULES_REVIEW":"off","PATH":"/usr/bin"}"#,
    )
}

enum Reply {
    Review(bool),
    Rules(&'static str),
    Fail(&'static str),
}

struct Run {
    outcome: JsValue,
    sends: usize,
    warnings: Vec<String>,
}

/// Drives a check: the clock jumps to the next event; bounded in steps.
fn drive(check: &mut WasmPreflight, start: f64, server: impl Fn(f64, &JsValue) -> Reply) -> Run {
    let mut now = start;
    let mut pending: Vec<(f64, u32, u32, JsValue)> = Vec::new();
    let (mut sends, mut warnings) = (0, Vec::new());
    for _ in 0..20_000 {
        let action = check.poll(now).unwrap();
        match text(&action, "type").as_str() {
            "send" => {
                sends += 1;
                let probe = num(&action, "probe") as u32;
                let attempt = num(&action, "attempt") as u32;
                let request = get(&action, "request");
                let body = if text(&request, "kind") == "rulesReview" {
                    JsValue::NULL
                } else {
                    get(&request, "body")
                };
                let result = match server(now, &body) {
                    Reply::Review(allowed) => {
                        json(&format!(r#"{{"type":"reviewed","allowed":{allowed}}}"#))
                    }
                    Reply::Rules(status) => {
                        json(&format!(r#"{{"type":"rulesReviewed","status":{status}}}"#))
                    }
                    Reply::Fail(facts) => json(&format!(r#"{{"type":"failed","facts":{facts}}}"#)),
                };
                pending.push((now + 10.0, probe, attempt, result));
            }
            "warn" => warnings.push(text(&action, "message")),
            "debug" => {}
            "done" => {
                return Run {
                    outcome: get(&action, "outcome"),
                    sends,
                    warnings,
                }
            }
            "wait" => {
                let until = num(&action, "untilMs");
                match pending.iter().position(|p| p.0 <= until) {
                    Some(i) => {
                        let (at, probe, attempt, result) = pending.remove(i);
                        now = now.max(at);
                        check.on_result(probe, attempt, now, result).unwrap();
                    }
                    None => now = now.max(until),
                }
            }
            other => panic!("unknown action {other}"),
        }
    }
    panic!("check did not finish");
}

fn new_check(cached: &JsValue, now: f64) -> WasmPreflight {
    WasmPreflight::new(
        &env(),
        permissions(),
        "ci",
        &JsValue::from_str(TOKEN),
        cached,
        now,
        &JsValue::UNDEFINED,
    )
    .unwrap()
}

const REFUSED: &str = r#"{"codes":["ECONNREFUSED"],"message":"fetch failed","name":"TypeError"}"#;

#[test]
fn all_allowed_then_served_from_cache() {
    let mut check = new_check(&JsValue::NULL, T0);
    assert_eq!(check.probe_count(), 13);
    let run = drive(&mut check, T0, |_, _| Reply::Review(true));
    assert_eq!(text(&run.outcome, "verdict"), "allowed");
    assert_eq!(text(&run.outcome, "source"), "reviews");
    assert_eq!(run.sends, 13);
    let record = get(&run.outcome, "record");
    assert!(record.is_string());
    let mut next = new_check(&record, T0 + 60_000.0);
    let again = drive(&mut next, T0 + 60_000.0, |_, _| {
        panic!("fresh cache must not send")
    });
    assert_eq!(text(&again.outcome, "source"), "cache");
    assert_eq!(num(&again.outcome, "requests"), 0.0);
}

#[test]
fn one_denied_names_it() {
    let mut check = new_check(&JsValue::NULL, T0);
    let run = drive(&mut check, T0, |_, review| {
        let attrs = get(&get(review, "spec"), "resourceAttributes");
        Reply::Review(!(text(&attrs, "verb") == "watch" && text(&attrs, "subresource") == "log"))
    });
    assert_eq!(text(&run.outcome, "verdict"), "denied");
    assert_eq!(
        text(&run.outcome, "message"),
        "denied: watch pods/log in namespace \"ci\""
    );
    let missing: Array = get(&run.outcome, "missing").dyn_into().unwrap();
    assert_eq!(missing.length(), 1);
    assert_eq!(text(&missing.get(0), "verb"), "watch");
    assert!(get(&run.outcome, "record").is_null());
    assert_eq!(get(&run.outcome, "deleteRecord").as_bool(), Some(true));
}

#[test]
fn stall_then_recovery_is_allowed_with_one_warning() {
    let mut check = new_check(&JsValue::NULL, T0);
    let run = drive(&mut check, T0, |now, _| {
        if now < T0 + 25_000.0 {
            Reply::Fail(REFUSED)
        } else {
            Reply::Review(true)
        }
    });
    assert_eq!(text(&run.outcome, "verdict"), "allowed");
    assert!(run.sends > 13);
    assert_eq!(run.warnings.len(), 1);
    assert!(run.warnings[0].contains("ECONNREFUSED"));
}

#[test]
fn stall_past_the_deadline_with_and_without_grace() {
    let mut cold = new_check(&JsValue::NULL, T0);
    let run = drive(&mut cold, T0, |_, _| Reply::Fail(REFUSED));
    assert_eq!(text(&run.outcome, "verdict"), "inconclusive");
    assert!(text(&run.outcome, "message").contains("NOT a permissions denial"));
    assert!(num(&run.outcome, "elapsedMs") <= 90_000.0);

    // A record written two hours earlier: past the TTL, within grace.
    let earlier = T0 - 2.0 * 3_600_000.0;
    let mut first = new_check(&JsValue::NULL, earlier);
    let record = get(
        &drive(&mut first, earlier, |_, _| Reply::Review(true)).outcome,
        "record",
    );
    let mut warm = new_check(&record, T0);
    let run = drive(&mut warm, T0, |_, _| Reply::Fail(REFUSED));
    assert_eq!(text(&run.outcome, "verdict"), "allowed");
    assert_eq!(text(&run.outcome, "source"), "graceCache");
    let warnings: Array = get(&run.outcome, "warnings").dyn_into().unwrap();
    assert_eq!(warnings.length(), 1);
}

#[test]
fn classifier_table_through_js() {
    let rows: &[(&str, &str)] = &[
        (r#"{"codes":["ECONNRESET"]}"#, "transient"),
        (
            r#"{"codes":["UND_ERR_SOCKET"],"message":"fetch failed"}"#,
            "transient",
        ),
        (r#"{"message":"socket hang up"}"#, "transient"),
        (r#"{"timedOut":true}"#, "transient"),
        (r#"{"status":403}"#, "transient"),
        (r#"{"status":502}"#, "transient"),
        (r#"{"status":429,"retryAfter":"2"}"#, "throttled"),
        (r#"{"status":503,"retryAfter":"2"}"#, "throttled"),
        (r#"{"status":404}"#, "fatal"),
        (r#"{"status":422}"#, "fatal"),
        (r#"{"status":201,"name":"SyntaxError"}"#, "fatal"),
        (r#"{"message":"weird"}"#, "fatal"),
    ];
    for (facts, want) in rows {
        let class = classify(json(facts), T0, &JsValue::UNDEFINED).unwrap();
        assert_eq!(text(&class, "kind"), *want, "{facts}");
    }
    let throttled = classify(
        json(r#"{"status":429,"retryAfter":"2"}"#),
        T0,
        &JsValue::UNDEFINED,
    )
    .unwrap();
    assert_eq!(num(&throttled, "retryAfterMs"), 2000.0);
}

#[test]
fn schedule_is_deterministic_with_a_seed() {
    let env =
        json(r#"{"ACTIONS_RUNNER_PREFLIGHT_SEED":"5","ACTIONS_RUNNER_PREFLIGHT_JITTER":"full"}"#);
    let a = preview_schedule(&env);
    let b = preview_schedule(&env);
    assert_eq!(a, b);
    // Every wait within the cap but the last, which the attempt limit keeps
    // for the deadline's final second (89 s from the first attempt).
    let (last, rest) = a.split_last().unwrap();
    assert!(rest.iter().all(|d| *d <= 8000.0));
    assert_eq!(rest.iter().sum::<f64>() + last, 89_000.0);
    let none = preview_schedule(&json(
        r#"{"ACTIONS_RUNNER_PREFLIGHT_JITTER":"none","ACTIONS_RUNNER_PREFLIGHT_BASE_DELAY_MS":"3000","ACTIONS_RUNNER_PREFLIGHT_MAX_DELAY_MS":"60000","ACTIONS_RUNNER_PREFLIGHT_MAX_ATTEMPTS":"4"}"#,
    ));
    assert_eq!(none, vec![3000.0, 6000.0, 80000.0]);
    // OS randomness (no seed) works under WASM and differs between draws.
    let os = json(
        r#"{"ACTIONS_RUNNER_PREFLIGHT_BASE_DELAY_MS":"60000","ACTIONS_RUNNER_PREFLIGHT_MAX_DELAY_MS":"300000"}"#,
    );
    assert_ne!(preview_schedule(&os), preview_schedule(&os));
}

#[test]
fn bad_input_is_an_error_with_a_code() {
    let bad = WasmPreflight::new(
        &env(),
        json("[]"),
        "ci",
        &JsValue::NULL,
        &JsValue::NULL,
        T0,
        &JsValue::UNDEFINED,
    );
    let err = bad.err().unwrap();
    assert_eq!(text(&err, "code"), "PREFLIGHT_BAD_PERMISSIONS");
    let bad = WasmPreflight::new(
        &env(),
        json(r#"{"not":"a list"}"#),
        "ci",
        &JsValue::NULL,
        &JsValue::NULL,
        T0,
        &JsValue::UNDEFINED,
    );
    assert_eq!(text(&bad.err().unwrap(), "code"), "PREFLIGHT_BAD_INPUT");
    let bad = WasmPreflight::new(
        &env(),
        permissions(),
        "ci",
        &JsValue::NULL,
        &JsValue::NULL,
        f64::NAN,
        &JsValue::UNDEFINED,
    );
    assert_eq!(text(&bad.err().unwrap(), "code"), "PREFLIGHT_BAD_TIME");
    let mut check = new_check(&JsValue::NULL, T0);
    let _ = check.poll(T0).unwrap();
    let err = check
        .on_result(0, 1, T0, json(r#"{"type":"nonsense"}"#))
        .unwrap_err();
    assert_eq!(text(&err, "code"), "PREFLIGHT_BAD_INPUT");
    let err = check
        .on_result(500, 1, T0, json(r#"{"type":"failed"}"#))
        .unwrap_err();
    assert_eq!(text(&err, "code"), "PREFLIGHT_BAD_RESULT");
}

#[test]
fn settings_and_cache_names_cross_the_boundary() {
    let warnings = settings_warnings(&json(r#"{"ACTIONS_RUNNER_PREFLIGHT_JITTER":"wobbly"}"#));
    assert_eq!(warnings.len(), 1);
    assert!(warnings[0].starts_with("ACTIONS_RUNNER_PREFLIGHT_JITTER=\"wobbly\" ignored"));
    let name = cache_file_name(&env(), permissions(), "ci", &JsValue::from_str(TOKEN)).unwrap();
    assert!(name.unwrap().starts_with("k8s-auth-preflight-"));
    let none = cache_file_name(&env(), permissions(), "ci", &JsValue::NULL).unwrap();
    assert_eq!(none, None, "no credential, no cache");
    let off = cache_file_name(
        &json(r#"{"ACTIONS_RUNNER_PREFLIGHT_CACHE":"off"}"#),
        permissions(),
        "ci",
        &JsValue::from_str(TOKEN),
    )
    .unwrap();
    assert_eq!(off, None);
}

#[test]
fn one_rules_review_proves_a_complete_role() {
    let env = json(r#"{"ACTIONS_RUNNER_PREFLIGHT_SEED":"11"}"#);
    let mut check = WasmPreflight::new(
        &env,
        permissions(),
        "ci",
        &JsValue::from_str(TOKEN),
        &JsValue::NULL,
        T0,
        &JsValue::UNDEFINED,
    )
    .unwrap();
    let role = r#"{"resourceRules":[
        {"verbs":["*"],"apiGroups":[""],"resources":["pods","pods/exec","pods/log"]},
        {"verbs":["get","list","create","delete"],"apiGroups":[""],"resources":["secrets"]}],
        "incomplete":false}"#;
    let run = drive(&mut check, T0, |_, body| {
        assert!(body.is_null(), "only the rules review is sent");
        Reply::Rules(role)
    });
    assert_eq!(text(&run.outcome, "verdict"), "allowed");
    assert_eq!(run.sends, 1);
    assert_eq!(num(&run.outcome, "provenByRules"), 13.0);
}

#[test]
fn rules_prove_crosses_the_boundary() {
    let status =
        json(r#"{"resourceRules":[{"verbs":["create"],"apiGroups":[""],"resources":["*/exec"]}]}"#);
    let perms = json(
        r#"[{"verb":"create","group":"","resource":"pods","subresource":"exec"},
            {"verb":"create","group":"","resource":"pods","subresource":""}]"#,
    );
    assert_eq!(rules_prove(status, perms).unwrap(), vec![1, 0]);
}

/// The exact JSON of a value, key order included (`null` stays `null`; a
/// missing key would be missing).
fn stringify(v: &JsValue) -> String {
    JSON::stringify(v).unwrap().as_string().unwrap()
}

#[test]
fn actions_have_the_exact_shape_the_shim_reads() {
    let env = json(r#"{"ACTIONS_RUNNER_PREFLIGHT_SEED":"11"}"#);
    let mut check = WasmPreflight::new(
        &env,
        permissions(),
        "ci",
        &JsValue::from_str(TOKEN),
        &JsValue::NULL,
        T0,
        &JsValue::UNDEFINED,
    )
    .unwrap();
    assert_eq!(
        stringify(&check.poll(T0).unwrap()),
        r#"{"type":"send","probe":13,"attempt":1,"request":{"kind":"rulesReview","body":{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectRulesReview","spec":{"namespace":"ci"}}},"timeoutMs":10000}"#
    );
    assert_eq!(
        stringify(&check.poll(T0).unwrap()),
        r#"{"type":"wait","untilMs":1792548936000}"#
    );
    let incomplete = json(
        r#"{"type":"rulesReviewed","status":{"resourceRules":[],"incomplete":true,"evaluationError":null}}"#,
    );
    let accepted = check.on_result(13, 1, T0 + 10.0, incomplete).unwrap();
    assert_eq!(accepted.as_string().as_deref(), Some("applied"));
    assert_eq!(
        stringify(&check.poll(T0 + 10.0).unwrap()),
        r#"{"type":"debug","message":"k8s-auth-preflight: rules review, request 1: answered: 0 rules, incomplete; done; 90.0 s of the deadline left"}"#
    );
    assert_eq!(
        stringify(&check.poll(T0 + 10.0).unwrap()),
        r#"{"type":"send","probe":0,"attempt":1,"request":{"kind":"accessReview","body":{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"resourceAttributes":{"namespace":"ci","group":"","resource":"pods","subresource":"","verb":"create"}}}},"timeoutMs":10000}"#
    );
    // A result for an attempt that is not in flight is taken and ignored.
    let stale = check
        .on_result(13, 1, T0 + 11.0, json(r#"{"type":"failed"}"#))
        .unwrap();
    assert_eq!(stale.as_string().as_deref(), Some("stale"));
}

#[test]
fn outcomes_have_every_key_with_null_for_none() {
    let mut check = new_check(&JsValue::NULL, T0);
    let run = drive(&mut check, T0, |_, review| {
        let attrs = get(&get(review, "spec"), "resourceAttributes");
        Reply::Review(text(&attrs, "verb") != "delete")
    });
    assert_eq!(
        stringify(&run.outcome),
        r#"{"verdict":"denied","source":null,"missing":[{"verb":"delete","group":"","resource":"pods","subresource":""},{"verb":"delete","group":"","resource":"secrets","subresource":""}],"message":"denied: delete pods, delete secrets in namespace \"ci\"","warnings":[],"record":null,"deleteRecord":true,"proceed":false,"lastError":null,"requests":13,"provenByRules":0,"elapsedMs":10}"#
    );
    let mut allowed = new_check(&JsValue::NULL, T0);
    let run = drive(&mut allowed, T0, |_, _| Reply::Review(true));
    let keys = js_sys::Object::keys(run.outcome.unchecked_ref::<js_sys::Object>());
    assert_eq!(
        stringify(&keys),
        r#"["verdict","source","missing","message","warnings","record","deleteRecord","proceed","lastError","requests","provenByRules","elapsedMs"]"#
    );
    assert!(get(&run.outcome, "record").is_string());
    assert!(get(&run.outcome, "lastError").is_null());
}

#[test]
fn classes_and_the_permission_table_have_their_exact_shape() {
    let class = |facts: &str| stringify(&classify(json(facts), T0, &JsValue::UNDEFINED).unwrap());
    assert_eq!(
        class(r#"{"status":429}"#),
        r#"{"kind":"throttled","retryAfterMs":null,"why":"HTTP 429"}"#
    );
    assert_eq!(
        class(r#"{"status":503,"retryAfter":"2"}"#),
        r#"{"kind":"throttled","retryAfterMs":2000,"why":"HTTP 503"}"#
    );
    // Facts exactly as the shim's errorFacts() builds them, nulls included.
    assert_eq!(
        class(
            r#"{"codes":["ECONNREFUSED"],"status":null,"retryAfter":null,"timedOut":false,"name":"TypeError","message":"fetch failed"}"#
        ),
        r#"{"kind":"transient","why":"ECONNREFUSED"}"#
    );
    // Every field may be missing.
    assert_eq!(class("{}"), r#"{"kind":"fatal","why":"unknown error"}"#);
    assert_eq!(
        stringify(&k8s_auth_preflight::wasm::runner_hooks_permissions()),
        r#"[{"group":"","resource":"pods","subresource":"","verbs":["get","list","create","delete"]},{"group":"","resource":"pods","subresource":"exec","verbs":["get","create"]},{"group":"","resource":"pods","subresource":"log","verbs":["get","list","watch"]},{"group":"","resource":"secrets","subresource":"","verbs":["get","list","create","delete"]}]"#
    );
}

#[test]
fn missing_optional_fields_take_their_defaults() {
    // A row with one `verb` and nothing else but its resource.
    let check = WasmPreflight::new(
        &env(),
        json(r#"[{"resource":"pods","verb":"get"},{"resource":"pods","verbs":["list"],"verb":null}]"#),
        "ci",
        &JsValue::NULL,
        &JsValue::NULL,
        T0,
        &JsValue::UNDEFINED,
    )
    .unwrap();
    assert_eq!(check.probe_count(), 2);
    // `failed` without facts is an unknown, fatal error.
    let mut check = new_check(&JsValue::NULL, T0);
    let run = drive(&mut check, T0, |_, _| Reply::Fail("{}"));
    assert_eq!(text(&run.outcome, "verdict"), "error");
    // `rulesReviewed` without a status proves nothing: access reviews follow.
    let mut check = WasmPreflight::new(
        &json(r#"{"ACTIONS_RUNNER_PREFLIGHT_SEED":"11"}"#),
        permissions(),
        "ci",
        &JsValue::NULL,
        &JsValue::NULL,
        T0,
        &JsValue::UNDEFINED,
    )
    .unwrap();
    let run = drive(&mut check, T0, |_, body| {
        if body.is_null() {
            Reply::Rules("null")
        } else {
            Reply::Review(true)
        }
    });
    assert_eq!(text(&run.outcome, "verdict"), "allowed");
    assert_eq!(run.sends, 14);
    assert_eq!(num(&run.outcome, "provenByRules"), 0.0);
}

#[test]
fn bad_input_names_the_field_and_never_panics() {
    fn message(result: Result<impl Sized, JsValue>) -> (String, String) {
        let err = result.err().expect("an error");
        assert!(err.is_instance_of::<js_sys::Error>());
        let message = err.unchecked_ref::<js_sys::Error>().message();
        (text(&err, "code"), message.into())
    }
    let bad = |code: &str, message: &str| (code.to_string(), message.to_string());
    let no_env = &JsValue::UNDEFINED;
    assert_eq!(
        message(classify(json(r#"{"status":"403"}"#), T0, no_env)),
        bad(
            "PREFLIGHT_BAD_INPUT",
            "invalid facts: status: expected a whole number from 0 to 65535, got a string"
        )
    );
    assert_eq!(
        message(classify(json(r#"{"status":403.5}"#), T0, no_env)),
        bad(
            "PREFLIGHT_BAD_INPUT",
            "invalid facts: status: expected a whole number from 0 to 65535, got 403.5"
        )
    );
    // Several bad fields: the first one read is named (status, then codes,
    // ..., message).
    assert_eq!(
        message(classify(
            json(r#"{"message":7,"codes":"ECONNRESET","status":"503"}"#),
            T0,
            no_env
        )),
        bad(
            "PREFLIGHT_BAD_INPUT",
            "invalid facts: status: expected a whole number from 0 to 65535, got a string"
        )
    );
    assert_eq!(
        message(classify(
            json(r#"{"message":7,"codes":"ECONNRESET"}"#),
            T0,
            no_env
        )),
        bad(
            "PREFLIGHT_BAD_INPUT",
            "invalid facts: codes: expected an array, got a string"
        )
    );
    assert_eq!(
        message(classify(JsValue::NULL, T0, no_env)),
        bad(
            "PREFLIGHT_BAD_INPUT",
            "invalid facts: expected an object, got null"
        )
    );
    assert_eq!(
        message(WasmPreflight::new(
            &env(),
            json(r#"[{"resource":"pods","verbs":["get",1]}]"#),
            "ci",
            &JsValue::NULL,
            &JsValue::NULL,
            T0,
            &JsValue::UNDEFINED,
        )),
        bad(
            "PREFLIGHT_BAD_INPUT",
            "invalid permissions: [0].verbs[1]: expected a string, got a number"
        )
    );
    assert_eq!(
        message(WasmPreflight::new(
            &env(),
            JsValue::UNDEFINED,
            "ci",
            &JsValue::NULL,
            &JsValue::NULL,
            T0,
            &JsValue::UNDEFINED,
        )),
        bad(
            "PREFLIGHT_BAD_INPUT",
            "invalid permissions: expected an array, got undefined"
        )
    );
    assert_eq!(
        message(rules_prove(
            json(r#"{"resourceRules":[{"verbs":null}]}"#),
            json("[]")
        )),
        bad(
            "PREFLIGHT_BAD_INPUT",
            "invalid status: resourceRules[0].verbs: expected an array, got null"
        )
    );
    assert_eq!(
        message(rules_prove(
            json("{}"),
            json(r#"[{"verb":"get","group":"","resource":"pods"}]"#)
        )),
        bad(
            "PREFLIGHT_BAD_INPUT",
            "invalid permissions: [0].subresource: missing"
        )
    );
    let mut check = new_check(&JsValue::NULL, T0);
    let _ = check.poll(T0).unwrap();
    let results = [
        (
            r#"{"type":"failed","facts":{"codes":"ECONNREFUSED"}}"#,
            "invalid result: facts.codes: expected an array, got a string",
        ),
        (r#"{"type":"reviewed"}"#, "invalid result: allowed: missing"),
        (
            r#"{"type":"reviewed","allowed":"yes"}"#,
            "invalid result: allowed: expected true or false, got a string",
        ),
        (
            r#"{"type":"rulesReviewed","status":{"resourceRules":[{"resources":[null]}]}}"#,
            "invalid result: status.resourceRules[0].resources[0]: expected a string, got null",
        ),
        (r#"{"allowed":true}"#, "invalid result: type: missing"),
        (
            r#"{"type":"Reviewed","allowed":true}"#,
            r#"invalid result: type: expected reviewed, rulesReviewed, accessBody, rulesBody or failed, got "Reviewed""#,
        ),
    ];
    for (result, want) in results {
        assert_eq!(
            message(check.on_result(0, 1, T0, json(result))),
            bad("PREFLIGHT_BAD_INPUT", want),
            "{result}"
        );
    }
    assert_eq!(
        message(check.poll(f64::NAN)),
        bad(
            "PREFLIGHT_BAD_TIME",
            "nowMs must be a finite, non-negative number of ms, got NaN"
        )
    );
    // After all that, the check still runs to a verdict.
    let run = drive(&mut check, T0, |_, _| Reply::Review(true));
    assert_eq!(text(&run.outcome, "verdict"), "allowed");
}

/// A key file report as the shim makes it: `found`, a regular file, 0600,
/// owned by uid 1001 (this process's), holding `text`.
fn key_file_report(text: &str) -> JsValue {
    let report = json(
        r#"{"type":"found","kind":"file","mode":384,"uid":1001,"processUid":1001,"createError":null}"#,
    );
    let bytes = js_sys::Uint8Array::from(text.as_bytes());
    Reflect::set(&report, &JsValue::from_str("bytes"), &bytes).unwrap();
    report
}

#[test]
fn the_runner_key_crosses_the_boundary_and_survives_a_rotation() {
    let home = json(
        r#"{"HOME":"/home/runner","ACTIONS_RUNNER_PREFLIGHT_SEED":"11","ACTIONS_RUNNER_PREFLIGHT_RULES_REVIEW":"off"}"#,
    );
    let at = runner_key_file(&home);
    assert_eq!(
        text(&at, "file"),
        "/home/runner/.k8s-auth-preflight/runner-key"
    );
    assert_eq!(text(&at, "folder"), "/home/runner/.k8s-auth-preflight");
    let none = runner_key_file(&json("{}"));
    assert!(get(&none, "file").is_null());
    let off = runner_key_file(&json(
        r#"{"HOME":"/h","ACTIONS_RUNNER_PREFLIGHT_CACHE":"off"}"#,
    ));
    assert!(
        get(&off, "file").is_null(),
        "no key file when nothing is cached"
    );

    let created = runner_key_to_create(&json(r#"{"type":"missing","processUid":1001}"#))
        .unwrap()
        .expect("a new key file for a missing one");
    assert_eq!(created.len(), 98);
    let report = key_file_report(&created);
    assert_eq!(runner_key_to_create(&report).unwrap(), None);

    let keyed = |token: &str, cached: &JsValue, now: f64| {
        WasmPreflight::new(
            &home,
            permissions(),
            "ci",
            &JsValue::from_str(token),
            cached,
            now,
            &report,
        )
        .unwrap()
    };
    let mut first = keyed("token-a-before-rotation", &JsValue::NULL, T0);
    let run = drive(&mut first, T0, |_, _| Reply::Review(true));
    assert!(run.warnings.is_empty(), "{:?}", run.warnings);
    let record = get(&run.outcome, "record");
    assert!(text(&run.outcome, "record").contains("\"keyId\":"));
    // Opaque tokens are their own identity, so rotation is shown with JWTs
    // in tests/runner_key.rs; here: the same token, a second step, fresh.
    let second = keyed("token-a-before-rotation", &record, T0 + 60_000.0);
    assert!(second.is_decided());
}

#[test]
fn bad_key_file_reports_name_the_field() {
    let message = |report: &str| {
        let e = WasmPreflight::new(
            &env(),
            permissions(),
            "ci",
            &JsValue::from_str(TOKEN),
            &JsValue::NULL,
            T0,
            &json(report),
        )
        .err()
        .expect("refused");
        (text(&e, "code"), text(&e, "message"))
    };
    let (code, m) = message(r#"{"type":"found","kind":"pipe","uid":0}"#);
    assert_eq!(code, "PREFLIGHT_BAD_INPUT");
    assert!(
        m.contains("keyFile: kind:") || m.contains("keyFile: kind"),
        "{m}"
    );
    let (_, m) = message(r#"{"type":"found","kind":"file","uid":-1}"#);
    assert!(m.contains("uid"), "{m}");
    let (_, m) = message(r#"{"type":"found","kind":"file","uid":0,"bytes":"text"}"#);
    assert!(
        m.contains("bytes: expected a Uint8Array, got a string"),
        "{m}"
    );
    let (_, m) = message(r#"{"type":"gone"}"#);
    assert!(m.contains("type"), "{m}");
    let (_, m) = message(r#"{"type":"missing","processUid":"me"}"#);
    assert!(m.contains("processUid"), "{m}");
}

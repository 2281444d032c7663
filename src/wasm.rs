//! The WebAssembly boundary: conversion only, no decisions.
//!
//! Every function here turns JS values into Rust values, calls the core, and
//! turns the answer back (camelCase objects through serde-wasm-bindgen, in
//! JSON-compatible form: `null` for none, plain numbers for times). Errors
//! cross as JS `Error`s with a stable `code` property.

use std::time::Duration;

use js_sys::{Object, Reflect, Uint8Array};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use wasm_bindgen::prelude::*;

use crate::classify::{classify as classify_facts, ErrorFacts};
use crate::config::{Settings, PREFIX};
use crate::permission::{Permission, PermissionSpec};
use crate::preflight::{self, Preflight as Machine, ProbeResult, ResultError, SetupError};
use crate::random::RandomSource;
use crate::rules::{self, RulesStatus};
use crate::schedule::Schedule;
use crate::single_flight::{FlightAction, Holder, LockAttempt, SingleFlight};
use crate::text::quoted;

/// A preflight check (or a generic call) driven from JavaScript.
#[wasm_bindgen(js_name = Preflight)]
pub struct WasmPreflight {
    machine: Machine,
}

#[wasm_bindgen(js_class = Preflight)]
impl WasmPreflight {
    /// `new Preflight(env, permissions, namespace, credential, cachedRecord, nowMs)`.
    /// `credential` and `cachedRecord` are a string, a Uint8Array, or null.
    #[wasm_bindgen(constructor)]
    pub fn new(
        env: &JsValue,
        permissions: JsValue,
        namespace: &str,
        credential: &JsValue,
        cached_record: &JsValue,
        now_ms: f64,
    ) -> Result<WasmPreflight, JsValue> {
        let env = env_pairs(env);
        let permissions: Vec<PermissionSpec> = from_js(permissions, "permissions")?;
        let credential = bytes(credential);
        let cached = bytes(cached_record);
        let machine = Machine::from_env(
            env.iter().map(|(k, v)| (k.as_str(), v.as_str())),
            &permissions,
            namespace,
            credential.as_deref(),
            cached.as_deref(),
            time(now_ms)?,
        )
        .map_err(setup_error)?;
        Ok(WasmPreflight { machine })
    }

    /// `Preflight.forCall(env, nowMs)`: one generic call, no cache.
    #[wasm_bindgen(js_name = forCall)]
    pub fn for_call(env: &JsValue, now_ms: f64) -> Result<WasmPreflight, JsValue> {
        let env = env_pairs(env);
        let machine = Machine::call_from_env(
            env.iter().map(|(k, v)| (k.as_str(), v.as_str())),
            time(now_ms)?,
        );
        Ok(WasmPreflight { machine })
    }

    /// The next action: `{type:'send', probe, attempt, review, timeoutMs}`,
    /// `{type:'warn', message}`, `{type:'wait', untilMs}` or
    /// `{type:'done', outcome}`.
    pub fn poll(&mut self, now_ms: f64) -> Result<JsValue, JsValue> {
        let now = time(now_ms)?;
        to_js(&self.machine.poll(now))
    }

    /// Reports a result: `{type:'reviewed', allowed}`, `{type:'succeeded'}`
    /// or `{type:'failed', facts}`. Returns `'applied'` or `'stale'`.
    #[wasm_bindgen(js_name = onResult)]
    pub fn on_result(
        &mut self,
        probe: u32,
        attempt: u32,
        now_ms: f64,
        result: JsValue,
    ) -> Result<JsValue, JsValue> {
        let result = from_js::<WireResult>(result, "result")?.into_result()?;
        let accepted = self
            .machine
            .on_result(probe as usize, attempt, time(now_ms)?, result)
            .map_err(result_error)?;
        to_js(&accepted)
    }

    /// True when a fresh record answered the check as it started: the
    /// first poll is `done`, with no request.
    #[wasm_bindgen(js_name = isDecided)]
    pub fn is_decided(&self) -> bool {
        self.machine.is_decided()
    }

    /// `limitBudget(ms)`: a shorter deadline for a check that has not sent
    /// anything yet (see `SingleFlight`'s `lead` and `alone`).
    #[wasm_bindgen(js_name = limitBudget)]
    pub fn limit_budget(&mut self, budget_ms: f64) -> Result<(), JsValue> {
        self.machine
            .limit_budget(Duration::from_millis(time(budget_ms)?));
        Ok(())
    }

    /// How many reviews this check runs.
    #[wasm_bindgen(js_name = probeCount)]
    pub fn probe_count(&self) -> u32 {
        self.machine.probe_count() as u32
    }
}

/// `cacheFileName(env, permissions, namespace, credential)`: the cache file
/// name for these inputs, or null when caching is off.
#[wasm_bindgen(js_name = cacheFileName)]
pub fn cache_file_name(
    env: &JsValue,
    permissions: JsValue,
    namespace: &str,
    credential: &JsValue,
) -> Result<Option<String>, JsValue> {
    let env = env_pairs(env);
    let permissions: Vec<PermissionSpec> = from_js(permissions, "permissions")?;
    let credential = bytes(credential);
    preflight::cache_file_name(
        env.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        &permissions,
        namespace,
        credential.as_deref(),
    )
    .map_err(setup_error)
}

/// `rulesProve(status, permissions)`: for each permission (flattened, one
/// verb each, in the order given), whether the rules review status proves it.
#[wasm_bindgen(js_name = rulesProve)]
pub fn rules_prove(status: JsValue, permissions: JsValue) -> Result<Vec<u8>, JsValue> {
    let status: RulesStatus = from_js(status, "status")?;
    let permissions: Vec<Permission> = from_js(permissions, "permissions")?;
    Ok(rules::proven(&status, &permissions)
        .into_iter()
        .map(u8::from)
        .collect())
}

/// `classify(facts, nowMs, env?)`: the class of one failure.
#[wasm_bindgen]
pub fn classify(facts: JsValue, now_ms: f64, env: &JsValue) -> Result<JsValue, JsValue> {
    let facts: ErrorFacts = from_js(facts, "facts")?;
    let settings = settings_from(env).0;
    to_js(&classify_facts(
        &facts,
        time(now_ms)?,
        settings.max_retry_after,
    ))
}

/// `settingsWarnings(env)`: the warnings the settings in `env` produce.
#[wasm_bindgen(js_name = settingsWarnings)]
pub fn settings_warnings(env: &JsValue) -> Vec<String> {
    settings_from(env).1
}

/// `previewSchedule(env)`: the delays (ms) the settings in `env` give if
/// every attempt fails at once (seeded by `ACTIONS_RUNNER_PREFLIGHT_SEED`,
/// else OS randomness).
#[wasm_bindgen(js_name = previewSchedule)]
pub fn preview_schedule(env: &JsValue) -> Vec<f64> {
    let settings = settings_from(env).0;
    let mut random = match settings.seed {
        Some(seed) => RandomSource::seeded(seed),
        None => RandomSource::from_os(),
    };
    Schedule::preview(settings.backoff, &mut random)
        .into_iter()
        .map(|d: Duration| d.as_millis() as f64)
        .collect()
}

/// A result as JS sends it: `{ type, allowed?, reason?, facts? }`. A flat
/// struct instead of serde's internally tagged enum, which would buffer every
/// value through serde's generic `Content` (about 16 KB of `.wasm`).
#[derive(Deserialize)]
struct WireResult {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    allowed: Option<bool>,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    facts: Option<ErrorFacts>,
    #[serde(default)]
    status: Option<RulesStatus>,
}

impl WireResult {
    fn into_result(self) -> Result<ProbeResult, JsValue> {
        match (self.kind.as_str(), self.allowed, self.facts) {
            ("reviewed", Some(allowed), _) => Ok(ProbeResult::Reviewed {
                allowed,
                reason: self.reason,
            }),
            ("rulesReviewed", _, _) => Ok(ProbeResult::RulesReviewed {
                status: self.status.unwrap_or_default(),
            }),
            ("succeeded", _, _) => Ok(ProbeResult::Succeeded),
            ("failed", _, facts) => Ok(ProbeResult::Failed {
                facts: facts.unwrap_or_default(),
            }),
            (kind, _, _) => Err(error(
                "PREFLIGHT_BAD_INPUT",
                &format!(
                    "invalid result: type {} (expected reviewed with allowed, rulesReviewed, succeeded, or failed)",
                    quoted(kind)
                ),
            )),
        }
    }
}

fn settings_from(env: &JsValue) -> (Settings, Vec<String>) {
    let env = env_pairs(env);
    let (settings, errors) = Settings::from_env(env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    (settings, errors.iter().map(|e| e.to_string()).collect())
}

/// The string-valued `ACTIONS_RUNNER_PREFLIGHT_*` entries of an object
/// (`process.env`); anything else (null, undefined, non-objects) is empty.
fn env_pairs(env: &JsValue) -> Vec<(String, String)> {
    if !env.is_object() {
        return Vec::new();
    }
    let mut pairs = Vec::new();
    for entry in Object::entries(env.unchecked_ref::<Object>()).iter() {
        let key = Reflect::get_u32(&entry, 0).ok().and_then(|k| k.as_string());
        let value = Reflect::get_u32(&entry, 1).ok().and_then(|v| v.as_string());
        if let (Some(key), Some(value)) = (key, value) {
            if key.starts_with(PREFIX) {
                pairs.push((key, value));
            }
        }
    }
    pairs
}

/// A string or Uint8Array as bytes; anything else is "none".
fn bytes(value: &JsValue) -> Option<Vec<u8>> {
    if let Some(s) = value.as_string() {
        return Some(s.into_bytes());
    }
    value.dyn_ref::<Uint8Array>().map(Uint8Array::to_vec)
}

/// Epoch milliseconds from JS: finite, not negative, exact in a double.
fn time(now_ms: f64) -> Result<u64, JsValue> {
    const MAX_SAFE: f64 = 9_007_199_254_740_991.0;
    if now_ms.is_finite() && (0.0..=MAX_SAFE).contains(&now_ms) {
        Ok(now_ms as u64)
    } else {
        Err(error(
            "PREFLIGHT_BAD_TIME",
            &format!("nowMs must be a finite, non-negative number of ms, got {now_ms}"),
        ))
    }
}

fn from_js<T: DeserializeOwned>(value: JsValue, what: &str) -> Result<T, JsValue> {
    serde_wasm_bindgen::from_value(value)
        .map_err(|e| error("PREFLIGHT_BAD_INPUT", &format!("invalid {what}: {e}")))
}

fn to_js<T: Serialize>(value: &T) -> Result<JsValue, JsValue> {
    value
        .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .map_err(|e| {
            error(
                "PREFLIGHT_INTERNAL",
                &format!("cannot convert a result to JS: {e}"),
            )
        })
}

fn setup_error(e: SetupError) -> JsValue {
    let code = match e {
        SetupError::Permissions(_) => "PREFLIGHT_BAD_PERMISSIONS",
        SetupError::Namespace(_) => "PREFLIGHT_BAD_NAMESPACE",
    };
    error(code, &e.to_string())
}

fn result_error(e: ResultError) -> JsValue {
    error("PREFLIGHT_BAD_RESULT", &e.to_string())
}

fn error(code: &str, message: &str) -> JsValue {
    let e = js_sys::Error::new(message);
    // Setting a property on a fresh Error cannot fail.
    let _ = Reflect::set(&e, &JsValue::from_str("code"), &JsValue::from_str(code));
    e.into()
}

/// `runnerHooksPermissions()`: the permission table the runner container
/// hooks need (13 verbs).
#[wasm_bindgen(js_name = runnerHooksPermissions)]
pub fn runner_hooks_permissions() -> Result<JsValue, JsValue> {
    to_js(&crate::permission::runner_hooks_permissions())
}

/// `maxRecordBytes()`: the largest cache file worth reading; the shim reads
/// at most one byte more, so a larger file is seen as too large.
#[wasm_bindgen(js_name = maxRecordBytes)]
pub fn max_record_bytes() -> u32 {
    crate::cache::MAX_RECORD_BYTES as u32
}

/// One process's turn at the job's lock file (see `single_flight.rs`).
#[wasm_bindgen(js_name = SingleFlight)]
pub struct WasmSingleFlight {
    flight: SingleFlight,
}

#[wasm_bindgen(js_class = SingleFlight)]
impl WasmSingleFlight {
    /// `new SingleFlight(env, nowMs)`.
    #[wasm_bindgen(constructor)]
    pub fn new(env: &JsValue, now_ms: f64) -> Result<WasmSingleFlight, JsValue> {
        let settings = settings_from(env).0;
        Ok(WasmSingleFlight {
            flight: SingleFlight::new(&settings, time(now_ms)?),
        })
    }

    /// The next action: `{type:'acquire'}`, `{type:'removeStale'}`,
    /// `{type:'reread'}`, `{type:'wait', untilMs}`, `{type:'lead', budgetMs}`,
    /// `{type:'alone', budgetMs, warning}` or `{type:'useRecord'}`.
    pub fn poll(&mut self, now_ms: f64) -> Result<JsValue, JsValue> {
        let action = self.flight.poll(time(now_ms)?);
        let (kind, number, warning) = match action {
            FlightAction::Acquire => ("acquire", None, None),
            FlightAction::RemoveStale => ("removeStale", None, None),
            FlightAction::Reread => ("reread", None, None),
            FlightAction::UseRecord => ("useRecord", None, None),
            FlightAction::Wait { until_ms } => ("wait", Some(("untilMs", until_ms)), None),
            FlightAction::Lead { budget_ms } => ("lead", Some(("budgetMs", budget_ms)), None),
            FlightAction::Alone { budget_ms, warning } => {
                ("alone", Some(("budgetMs", budget_ms)), Some(warning))
            }
        };
        let object = Object::new();
        set(&object, "type", &JsValue::from_str(kind));
        if let Some((key, value)) = number {
            set(&object, key, &JsValue::from_f64(value as f64));
        }
        if let Some(warning) = warning {
            let value = warning.map_or(JsValue::NULL, |w| JsValue::from_str(&w));
            set(&object, "warning", &value);
        }
        Ok(object.into())
    }

    /// `onLock(nowMs, attempt)`: `{type:'acquired'}`, `{type:'unavailable'}`
    /// or `{type:'held', ageMs, holder}` with holder `alive`, `dead`,
    /// `unknown` or `invalid`.
    #[wasm_bindgen(js_name = onLock)]
    pub fn on_lock(&mut self, now_ms: f64, attempt: &JsValue) -> Result<(), JsValue> {
        let now = time(now_ms)?;
        let bad = |what: &str| {
            error(
                "PREFLIGHT_BAD_INPUT",
                &format!("invalid lock attempt: {what} (expected type acquired, unavailable, or held with ageMs and holder)"),
            )
        };
        let field = |key: &str| Reflect::get(attempt, &JsValue::from_str(key)).ok();
        let kind = field("type")
            .and_then(|v| v.as_string())
            .ok_or_else(|| bad("no type"))?;
        let attempt = match kind.as_str() {
            "acquired" => LockAttempt::Acquired,
            "unavailable" => LockAttempt::Unavailable,
            "held" => {
                let age = field("ageMs").and_then(|v| v.as_f64()).unwrap_or(f64::NAN);
                // A clock that stepped back makes a negative age: treat as new.
                let age_ms = if age.is_finite() {
                    time(age.max(0.0))?
                } else {
                    return Err(bad("ageMs is not a number"));
                };
                let holder = match field("holder").and_then(|v| v.as_string()).as_deref() {
                    Some("alive") => Holder::Alive,
                    Some("dead") => Holder::Dead,
                    Some("unknown") => Holder::Unknown,
                    Some("invalid") => Holder::Invalid,
                    _ => return Err(bad("holder is not alive, dead, unknown or invalid")),
                };
                LockAttempt::Held { age_ms, holder }
            }
            other => return Err(bad(&format!("type {}", quoted(other)))),
        };
        self.flight.on_lock(now, attempt);
        Ok(())
    }

    /// `onRemoved(nowMs, removed)`.
    #[wasm_bindgen(js_name = onRemoved)]
    pub fn on_removed(&mut self, now_ms: f64, removed: bool) -> Result<(), JsValue> {
        self.flight.on_removed(time(now_ms)?, removed);
        Ok(())
    }

    /// `onRecord(nowMs, answers)`: whether the record, read again, answers
    /// the check (a `Preflight` made with it `isDecided()`).
    #[wasm_bindgen(js_name = onRecord)]
    pub fn on_record(&mut self, now_ms: f64, answers: bool) -> Result<(), JsValue> {
        self.flight.on_record(time(now_ms)?, answers);
        Ok(())
    }
}

fn set(object: &Object, key: &str, value: &JsValue) {
    // Setting a property on a fresh plain object cannot fail.
    let _ = Reflect::set(object, &JsValue::from_str(key), value);
}

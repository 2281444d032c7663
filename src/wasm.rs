//! The WebAssembly boundary: conversion only, no decisions.
//!
//! Every function here turns JS values into Rust values, calls the core, and
//! turns the answer back, through the serde wire types in [`wire`]: read by
//! [`de`] (a `Deserializer` over the JS value that names a bad field),
//! written by serde-wasm-bindgen (camelCase objects in JSON-compatible form,
//! `null` for none, plain numbers for times). Errors cross as JS `Error`s
//! with a stable `code` property.
//!
//! Exports that only tests call (`classify`, `rulesProve`,
//! `settingsWarnings`, `previewSchedule`, `probeCount`) are built with the
//! cargo feature `test-exports` only: `wasm-pack test` turns it on (the
//! crate's dev-dependency on itself), and `scripts/build.sh` builds a second
//! module with it for the JS tests; the package ships without them.

mod de;
mod wire;

#[cfg(feature = "test-exports")]
use std::time::Duration;

use js_sys::{Object, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;

use crate::call::{Call, CallAction, CallPolicy};
#[cfg(feature = "test-exports")]
use crate::check::single_flight::SingleFlight;
use crate::check::{Check, CheckAction, CheckInput, FactError};
#[cfg(feature = "test-exports")]
use crate::classify::classify as classify_facts;
#[cfg(feature = "test-exports")]
use crate::config::Settings;
use crate::config::{EnvValue, PREFIX};
#[cfg(feature = "test-exports")]
use crate::preflight;
#[cfg(feature = "test-exports")]
use crate::preflight::Preflight as Machine;
use crate::preflight::{ResultError, SetupError};
#[cfg(feature = "test-exports")]
use crate::random::RandomSource;
#[cfg(feature = "test-exports")]
use crate::rules;
#[cfg(feature = "test-exports")]
use crate::runner_key;
#[cfg(feature = "test-exports")]
use crate::schedule::Schedule;
use de::{js_number, Bad};
use wire::write;

/// A preflight check's request machine driven from JavaScript, alone, for
/// tests (the shim runs `Check` and `Call`).
#[cfg(feature = "test-exports")]
#[wasm_bindgen(js_name = Preflight)]
pub struct WasmPreflight {
    machine: Machine,
}

#[cfg(feature = "test-exports")]
#[wasm_bindgen(js_class = Preflight)]
impl WasmPreflight {
    /// `new Preflight(env, permissions, namespace, credential, cachedRecord, nowMs, keyFile?)`.
    /// `credential` and `cachedRecord` are a string, a Uint8Array, or null;
    /// `keyFile` is the shim's report on the runner key file (see
    /// `runnerKeyFile`); without it the record is signed with the
    /// token-derived key.
    #[cfg(feature = "test-exports")]
    #[wasm_bindgen(constructor)]
    pub fn new(
        env: &JsValue,
        permissions: JsValue,
        namespace: &str,
        credential: &JsValue,
        cached_record: &JsValue,
        now_ms: f64,
        key_file: &JsValue,
    ) -> Result<WasmPreflight, JsValue> {
        let env = env_pairs(env);
        let permissions = read(&permissions, "permissions", wire::permission_specs)?;
        let credential = bytes(credential);
        let cached = bytes(cached_record);
        let key_file = if key_file.is_undefined() {
            None
        } else {
            Some(read(key_file, "keyFile", wire::key_file_report)?)
        };
        let machine = Machine::from_env_keyed(
            values(&env),
            &permissions,
            namespace,
            credential.as_deref(),
            key_file.as_ref(),
            cached.as_deref(),
            time(now_ms)?,
        )
        .map_err(setup_error)?;
        Ok(WasmPreflight { machine })
    }

    /// The next action: `{type:'send', probe, attempt, request:{kind, body}, timeoutMs}`,
    /// `{type:'warn', message}`, `{type:'wait', untilMs}` or
    /// `{type:'done', outcome}`.
    #[cfg(feature = "test-exports")]
    pub fn poll(&mut self, now_ms: f64) -> Result<JsValue, JsValue> {
        let now = time(now_ms)?;
        Ok(write(&wire::ActionOut::from(&self.machine.poll(now))))
    }

    /// Reports a result: `{type:'reviewed', allowed}`, `{type:'succeeded'}`
    /// or `{type:'failed', facts}`. Returns `'applied'` or `'stale'`.
    #[cfg(feature = "test-exports")]
    #[wasm_bindgen(js_name = onResult)]
    pub fn on_result(
        &mut self,
        probe: u32,
        attempt: u32,
        now_ms: f64,
        result: JsValue,
    ) -> Result<JsValue, JsValue> {
        let result = read(&result, "result", wire::probe_result)?;
        let accepted = self
            .machine
            .on_result(probe as usize, attempt, time(now_ms)?, result)
            .map_err(result_error)?;
        Ok(JsValue::from_str(accepted.name()))
    }

    /// True when a fresh record answered the check as it started: the
    /// first poll is `done`, with no request.
    #[cfg(feature = "test-exports")]
    #[wasm_bindgen(js_name = isDecided)]
    pub fn is_decided(&self) -> bool {
        self.machine.is_decided()
    }

    /// `limitBudget(ms)`: a shorter deadline for a check that has not sent
    /// anything yet (see `SingleFlight`'s `lead` and `alone`).
    #[cfg(feature = "test-exports")]
    #[wasm_bindgen(js_name = limitBudget)]
    pub fn limit_budget(&mut self, budget_ms: f64) -> Result<(), JsValue> {
        self.machine
            .limit_budget(Duration::from_millis(time(budget_ms)?));
        Ok(())
    }

    /// How many reviews this check runs.
    #[cfg(feature = "test-exports")]
    #[wasm_bindgen(js_name = probeCount)]
    pub fn probe_count(&self) -> u32 {
        self.machine.probe_count() as u32
    }
}

/// One check of one hook step, from the first file read to the last line
/// printed (see `src/check/`).
#[wasm_bindgen(js_name = Check)]
pub struct WasmCheck {
    check: Check,
}

#[wasm_bindgen(js_class = Check)]
impl WasmCheck {
    /// `new Check(env, permissions, namespace, credential, cacheDir, process, nowMs)`:
    /// `credential` a string, a Uint8Array or null; `cacheDir` a string or
    /// null; `process` `{pid, host}`.
    #[wasm_bindgen(constructor)]
    pub fn new(
        env: &JsValue,
        permissions: JsValue,
        namespace: &str,
        credential: &JsValue,
        cache_dir: &JsValue,
        process: &JsValue,
        now_ms: f64,
    ) -> Result<WasmCheck, JsValue> {
        let env = env_pairs(env);
        let env = values(&env);
        let permissions = read(&permissions, "permissions", wire::permission_specs)?;
        let credential = bytes(credential);
        let cache_dir = cache_dir.as_string();
        let (process, settings_warned) = read(process, "process", wire::process_facts)?;
        let input = CheckInput {
            env: &env,
            permissions: &permissions,
            namespace,
            credential: credential.as_deref(),
            cache_dir: cache_dir.as_deref(),
            process,
            settings_warned,
        };
        let check = Check::new(input, time(now_ms)?).map_err(setup_error)?;
        Ok(WasmCheck { check })
    }

    /// `step(nowMs, facts)`: reports `facts` (the results of earlier
    /// actions, in any order), then returns the actions up to and including
    /// the next `wait` or `done`. Do the file and log actions at once, in
    /// order; their facts go into the next step, made at once. Requests
    /// report whenever they settle.
    pub fn step(&mut self, now_ms: f64, facts: &JsValue) -> Result<js_sys::Array, JsValue> {
        let now = time(now_ms)?;
        for fact in read(facts, "facts", wire::facts)? {
            self.check.on_fact(now, fact).map_err(fact_error)?;
        }
        Ok(steps(
            || self.check.poll(now),
            |a| write(&wire::CheckActionOut::from(a)),
            |a| matches!(a, CheckAction::Wait { .. } | CheckAction::Done { .. }),
        ))
    }
}

/// The calls of one set of settings (`new CallPolicy(env, warned)`), one
/// [`Call`] machine per Kubernetes call (see `src/call/`).
#[wasm_bindgen(js_name = CallPolicy)]
pub struct WasmCallPolicy {
    policy: CallPolicy,
}

#[wasm_bindgen(js_class = CallPolicy)]
impl WasmCallPolicy {
    /// `new CallPolicy(env, warned)`: the settings in `env`; `warned`: the
    /// host printed their warnings before in this process.
    #[wasm_bindgen(constructor)]
    pub fn new(env: &JsValue, warned: Option<bool>) -> WasmCallPolicy {
        let env = env_pairs(env);
        WasmCallPolicy {
            policy: CallPolicy::new(&values(&env), warned == Some(true)),
        }
    }

    /// The settings' warnings, to print once.
    pub fn warnings(&self) -> Vec<String> {
        self.policy.warnings().to_vec()
    }

    /// `passesThrough(method)`: whether a call of client method `method`
    /// is made as it is, with no machine.
    #[wasm_bindgen(js_name = passesThrough)]
    pub fn passes_through(&self, method: &str) -> bool {
        self.policy.passes_through(method)
    }

    /// `call(spec, nowMs)`: the machine of one call; `spec` is `{method,
    /// namespace?, kind?, name?, body?, operation?, cluster?}`.
    pub fn call(&self, spec: &JsValue, now_ms: f64) -> Result<WasmCall, JsValue> {
        let spec = read(spec, "spec", wire::call_spec)?;
        Ok(WasmCall {
            call: self.policy.call(spec, time(now_ms)?),
        })
    }
}

/// One Kubernetes call, retried by the rules of its kind.
#[wasm_bindgen(js_name = Call)]
pub struct WasmCall {
    call: Call,
}

#[wasm_bindgen(js_class = Call)]
impl WasmCall {
    /// `step(nowMs, facts)`: reports `facts` (`{type: 'response', probe,
    /// result}`, `result` `{type: 'succeeded'}`, `{type: 'readBack', body}`
    /// or `{type: 'failed', facts}`), then returns the actions up to and
    /// including the next `wait` or `done`. A report for a request no
    /// longer current is ignored (the host closes what it holds from it).
    pub fn step(&mut self, now_ms: f64, facts: &JsValue) -> Result<js_sys::Array, JsValue> {
        let now = time(now_ms)?;
        for (request, result) in read(facts, "facts", wire::call_facts)? {
            self.call
                .on_result(request, now, result)
                .map_err(|e| error("PREFLIGHT_BAD_RESULT", &e.to_string()))?;
        }
        Ok(steps(
            || self.call.poll(now),
            |a| write(&wire::CallActionOut::from(a)),
            |a| matches!(a, CallAction::Wait { .. } | CallAction::Done { .. }),
        ))
    }
}

/// Polls until an action `ends` the list (`wait` or `done`), each written
/// with `out`.
fn steps<A>(
    mut poll: impl FnMut() -> A,
    out: impl Fn(&A) -> JsValue,
    ends: impl Fn(&A) -> bool,
) -> js_sys::Array {
    let actions = js_sys::Array::new();
    loop {
        let action = poll();
        actions.push(&out(&action));
        if ends(&action) {
            return actions;
        }
    }
}

fn fact_error(e: FactError) -> JsValue {
    match e {
        FactError::Result(e) => result_error(e),
        other => error("PREFLIGHT_BAD_FACT", &other.to_string()),
    }
}

/// `cacheFileName(env, permissions, namespace, credential)`: the cache file
/// name for these inputs, or null when caching is off.
#[cfg(feature = "test-exports")]
#[wasm_bindgen(js_name = cacheFileName)]
pub fn cache_file_name(
    env: &JsValue,
    permissions: JsValue,
    namespace: &str,
    credential: &JsValue,
) -> Result<Option<String>, JsValue> {
    let env = env_pairs(env);
    let permissions = read(&permissions, "permissions", wire::permission_specs)?;
    let credential = bytes(credential);
    preflight::cache_file_name(values(&env), &permissions, namespace, credential.as_deref())
        .map_err(setup_error)
}

/// `cacheFolder(env, cacheDir)`: the folder for the cache record, from
/// `options.cacheDir` and `env.RUNNER_TEMP`: `{ folder, warning }`, one of
/// them null.
#[cfg(feature = "test-exports")]
#[wasm_bindgen(js_name = cacheFolder)]
pub fn cache_folder(env: &JsValue, cache_dir: &JsValue) -> JsValue {
    let runner_temp = if env.is_object() {
        Reflect::get(env, &JsValue::from_str(crate::cache_folder::RUNNER_TEMP))
            .ok()
            .and_then(|v| v.as_string())
    } else {
        None
    };
    let answer =
        crate::cache_folder::cache_folder(runner_temp.as_deref(), cache_dir.as_string().as_deref());
    write(&wire::CacheFolderOut::from(&answer))
}

/// `runnerKeyFile(env)`: `{file, folder}` where the runner key file is
/// (from the `KEY_FILE` setting, else `HOME`), with the folder to make for
/// it (mode 0700) or null; `{file: null, folder: null}` when there is none.
#[cfg(feature = "test-exports")]
#[wasm_bindgen(js_name = runnerKeyFile)]
pub fn runner_key_file(env: &JsValue) -> JsValue {
    let env = env_pairs(env);
    let settings = Settings::from_env_values(&values(&env)).0;
    let home = env.iter().find_map(|(k, v)| match v {
        EnvText::Text(home) if k == "HOME" => Some(home.as_str()),
        _ => None,
    });
    let at = runner_key::location(&settings, home)
        .ok()
        .filter(|_| settings.cache_enabled);
    write(&wire::KeyLocationOut::from(at.as_ref()))
}

/// `runnerKeyToCreate(facts)`: the text of a new key file to create after
/// this report on the path, or null (something is there already).
#[cfg(feature = "test-exports")]
#[wasm_bindgen(js_name = runnerKeyToCreate)]
pub fn runner_key_to_create(facts: &JsValue) -> Result<Option<String>, JsValue> {
    let report = read(facts, "keyFile", wire::key_file_report)?;
    Ok(runner_key::to_create(&report.facts))
}

/// `runnerKeyMaxBytes()`: the most of a key file worth reading; the shim
/// reads at most one byte more.
#[cfg(feature = "test-exports")]
#[wasm_bindgen(js_name = runnerKeyMaxBytes)]
pub fn runner_key_max_bytes() -> u32 {
    runner_key::KEY_FILE_LEN as u32
}

/// `rulesProve(status, permissions)`: for each permission (flattened, one
/// verb each, in the order given), whether the rules review status proves it.
#[cfg(feature = "test-exports")]
#[wasm_bindgen(js_name = rulesProve)]
pub fn rules_prove(status: JsValue, permissions: JsValue) -> Result<Vec<u8>, JsValue> {
    let status = read(&status, "status", wire::rules_status)?;
    let permissions = read(&permissions, "permissions", wire::permissions)?;
    Ok(rules::proven(&status, &permissions)
        .into_iter()
        .map(u8::from)
        .collect())
}

/// `classify(facts, nowMs, env?)`: the class of one failure.
#[cfg(feature = "test-exports")]
#[wasm_bindgen]
pub fn classify(facts: JsValue, now_ms: f64, env: &JsValue) -> Result<JsValue, JsValue> {
    let facts = read(&facts, "facts", wire::error_facts)?;
    let settings = settings_from(env).0;
    let class = classify_facts(&facts, time(now_ms)?, settings.max_retry_after);
    Ok(write(&wire::ClassOut::from(&class)))
}

/// `settingsWarnings(env)`: the warnings the settings in `env` produce.
#[cfg(feature = "test-exports")]
#[wasm_bindgen(js_name = settingsWarnings)]
pub fn settings_warnings(env: &JsValue) -> Vec<String> {
    settings_from(env).1
}

/// `previewSchedule(env)`: the delays (ms) the settings in `env` give if
/// every attempt fails at once (seeded by `ACTIONS_RUNNER_PREFLIGHT_SEED`,
/// else OS randomness).
#[cfg(feature = "test-exports")]
#[wasm_bindgen(js_name = previewSchedule)]
pub fn preview_schedule(env: &JsValue) -> Vec<f64> {
    let settings = settings_from(env).0;
    let mut random = RandomSource::for_seed(settings.seed, 0);
    Schedule::preview(settings.backoff, &mut random)
        .into_iter()
        .map(|d| crate::millis(d) as f64)
        .collect()
}

#[cfg(feature = "test-exports")]
fn settings_from(env: &JsValue) -> (Settings, Vec<String>) {
    let env = env_pairs(env);
    let (settings, errors) = Settings::from_env_values(&values(&env));
    (settings, errors.iter().map(|e| e.to_string()).collect())
}

/// The `ACTIONS_RUNNER_PREFLIGHT_*` entries and `HOME` (where the runner key
/// file is) of an object (`process.env`, or the `env` option), as text: strings as they are, numbers and booleans
/// as JS writes them (`3000`, `false`), `null` and `undefined` as unset;
/// for anything else its type, which the settings report. Anything that is
/// not an object is empty.
fn env_pairs(env: &JsValue) -> Vec<(String, EnvText)> {
    if !env.is_object() {
        return Vec::new();
    }
    let mut pairs = Vec::new();
    for entry in Object::entries(env.unchecked_ref::<Object>()).iter() {
        let Some(key) = Reflect::get_u32(&entry, 0).ok().and_then(|k| k.as_string()) else {
            continue;
        };
        if !key.starts_with(PREFIX) && key != "HOME" && key != crate::cache_folder::RUNNER_TEMP {
            continue;
        }
        let value = Reflect::get_u32(&entry, 1).unwrap_or(JsValue::UNDEFINED);
        let text = if let Some(s) = value.as_string() {
            EnvText::Text(s)
        } else if let Some(b) = value.as_bool() {
            EnvText::Text(if b { "true" } else { "false" }.into())
        } else if let Some(n) = value.as_f64() {
            EnvText::Text(js_number(n))
        } else if value.is_bigint() {
            EnvText::Text(String::from(
                js_sys::BigInt::unchecked_from_js(value)
                    .to_string(10)
                    .unwrap_or_default(),
            ))
        } else if value.is_null() || value.is_undefined() {
            continue;
        } else {
            EnvText::NotText(js_type(&value))
        };
        pairs.push((key, text));
    }
    pairs
}

/// [`env_pairs`] as the core reads them.
fn values(env: &[(String, EnvText)]) -> Vec<(&str, EnvValue<'_>)> {
    env.iter().map(|(k, v)| (k.as_str(), v.value())).collect()
}

/// An env value after [`env_pairs`]: owned text, or the type of a value
/// that is not text.
enum EnvText {
    Text(String),
    NotText(&'static str),
}

impl EnvText {
    fn value(&self) -> EnvValue<'_> {
        match self {
            EnvText::Text(text) => EnvValue::Text(text),
            EnvText::NotText(kind) => EnvValue::NotText(kind),
        }
    }
}

/// `typeof`, with arrays told apart from other objects.
fn js_type(value: &JsValue) -> &'static str {
    if js_sys::Array::is_array(value) {
        "array"
    } else if value.is_function() {
        "function"
    } else if value.is_symbol() {
        "symbol"
    } else {
        "object"
    }
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
            &format!(
                "nowMs must be a finite, non-negative number of ms, got {}",
                js_number(now_ms)
            ),
        ))
    }
}

/// Converts an argument; a value of the wrong shape is a
/// `PREFLIGHT_BAD_INPUT` error that names the argument and the field.
fn read<T>(
    value: &JsValue,
    what: &str,
    convert: fn(&JsValue) -> Result<T, Bad>,
) -> Result<T, JsValue> {
    convert(value).map_err(|e| error("PREFLIGHT_BAD_INPUT", &e.message(what)))
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
pub fn runner_hooks_permissions() -> JsValue {
    let table = crate::permission::runner_hooks_permissions();
    let rows: Vec<wire::PermissionSpecOut> = table.iter().map(Into::into).collect();
    write(&rows)
}

/// `maxRecordBytes()`: the largest cache file worth reading; the shim reads
/// at most one byte more, so a larger file is seen as too large.
#[cfg(feature = "test-exports")]
#[wasm_bindgen(js_name = maxRecordBytes)]
pub fn max_record_bytes() -> u32 {
    crate::cache::MAX_RECORD_BYTES as u32
}

/// One process's turn at the job's lock file (see `single_flight.rs`).
#[cfg(feature = "test-exports")]
#[wasm_bindgen(js_name = SingleFlight)]
pub struct WasmSingleFlight {
    flight: SingleFlight,
}

#[cfg(feature = "test-exports")]
#[wasm_bindgen(js_class = SingleFlight)]
impl WasmSingleFlight {
    /// `new SingleFlight(env, nowMs)`.
    #[wasm_bindgen(constructor)]
    pub fn new(env: &JsValue, now_ms: f64) -> Result<WasmSingleFlight, JsValue> {
        let env = env_pairs(env);
        let settings = Settings::from_env_values(&values(&env)).0;
        Ok(WasmSingleFlight {
            flight: SingleFlight::new(&settings, time(now_ms)?),
        })
    }

    /// The next action: `{type:'acquire'}`, `{type:'removeStale'}`,
    /// `{type:'reread'}`, `{type:'wait', untilMs}`, `{type:'lead', budgetMs}`,
    /// `{type:'alone', budgetMs, warning}` or `{type:'useRecord'}`.
    pub fn poll(&mut self, now_ms: f64) -> Result<JsValue, JsValue> {
        Ok(write(&wire::FlightActionOut::from(
            &self.flight.poll(time(now_ms)?),
        )))
    }

    /// `onLock(nowMs, attempt)`: `{type:'acquired'}`, `{type:'unavailable'}`
    /// or `{type:'held', ageMs, holder}` with holder `alive`, `dead`,
    /// `unknown` or `invalid`.
    #[wasm_bindgen(js_name = onLock)]
    pub fn on_lock(&mut self, now_ms: f64, attempt: &JsValue) -> Result<(), JsValue> {
        let now = time(now_ms)?;
        let attempt = read(attempt, "lock attempt", wire::lock_attempt)?;
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

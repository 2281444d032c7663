//! The WebAssembly boundary: conversion only, no decisions.
//!
//! Every function here turns JS values into Rust values, calls the core, and
//! turns the answer back: the core's types with their serde derives, and the
//! few shapes of [`wire`] that differ from them; read by [`de`] (a
//! `Deserializer` over the JS value that names a bad field), written by
//! serde-wasm-bindgen (camelCase objects in JSON-compatible form, `null` for
//! none, plain numbers for times). Errors cross as JS `Error`s
//! with a stable `code` property.
//!
//! Exports that only tests call (`classify`, `rulesProve`,
//! `settingsWarnings`, `previewSchedule`, `probeCount`) are built with the
//! cargo feature `test-exports` only: `wasm-pack test` turns it on (the
//! crate's dev-dependency on itself), and `scripts/build.sh` builds a second
//! module with it for the JS tests; the package ships without them.

mod de;
mod wire;

use js_sys::Reflect;
#[cfg(feature = "test-exports")]
use js_sys::Uint8Array;
use wasm_bindgen::prelude::*;

use crate::cache_folder::RUNNER_TEMP;
use crate::call::{Call, CallAction, CallPolicy};
use crate::check::{Check, CheckAction, CheckInput, FactError};
use crate::config::{EnvValue, PREFIX};
use crate::environment::{Environment, Unreadable};
use crate::permission::PermissionSpec;
use crate::preflight::SetupError;
use crate::protocol::BadReport;
use de::{js_number, js_type, Bad};
use wire::write;

#[cfg(feature = "test-exports")]
mod test_exports;
#[cfg(feature = "test-exports")]
pub use test_exports::*;

/// A process's settings environment, read once (`new Settings(env)`):
/// the host makes one per environment object and hands it to the check;
/// its calls are made here, under the one [`CallPolicy`] of these settings
/// (its breaker shared by all of them; see `src/environment.rs` and
/// `src/call/call_policy.rs`).
#[wasm_bindgen(js_name = Settings)]
pub struct WasmSettings {
    environment: Environment,
    calls: Option<CallPolicy>,
}

#[wasm_bindgen(js_class = Settings)]
impl WasmSettings {
    /// `new Settings(env)`: the `ACTIONS_RUNNER_PREFLIGHT_*` settings,
    /// `HOME` and `RUNNER_TEMP` of `env`.
    #[wasm_bindgen(constructor)]
    pub fn new(env: &JsValue) -> WasmSettings {
        let from_pairs = |env: Vec<_>| Environment::read(&values(&env));
        let environment = env_pairs(env).map_or_else(Environment::unreadable, from_pairs);
        WasmSettings {
            environment,
            calls: None,
        }
    }

    /// `callWarnings()`: the settings' warnings for the calls, the first
    /// time they are asked for (none if the check took them).
    #[wasm_bindgen(js_name = callWarnings)]
    pub fn call_warnings(&mut self) -> Vec<String> {
        self.calls().take_warnings()
    }

    /// `passesThrough(method)`: whether a call of client method `method`
    /// is made as it is, with no machine.
    #[wasm_bindgen(js_name = passesThrough)]
    pub fn passes_through(&mut self, method: &str) -> bool {
        self.calls().passes_through(method)
    }

    /// `call(spec, nowMs)`: the machine of one call; `spec` is `{method,
    /// namespace?, kind?, name?, body?, operation?, cluster?}`.
    pub fn call(&mut self, spec: &JsValue, now_ms: f64) -> Result<WasmCall, JsValue> {
        let spec = read(spec, "spec", de::read)?;
        let now = time(now_ms)?;
        Ok(WasmCall {
            call: self.calls().call(spec, now),
        })
    }
}

#[wasm_bindgen(js_class = Settings)]
impl WasmSettings {
    /// The machine of a durable exec of `spec` (`{namespace, pod,
    /// command}`), or `undefined` when the exec runs plainly.
    #[wasm_bindgen(js_name = durableRun)]
    pub fn durable_run(
        &mut self,
        spec: &JsValue,
        stdin: bool,
        tty: bool,
        now_ms: f64,
    ) -> Result<Option<WasmDurable>, JsValue> {
        let spec = read(spec, "spec", wire::durable_spec)?;
        let now = time(now_ms)?;
        let command = spec.command.clone();
        let run = self.calls().durable(spec, stdin, tty, now);
        Ok(run.map(|run| WasmDurable { run, command }))
    }

    /// `[pingEveryMs, pongDeadlineMs]` for an open plain exec stream, or
    /// `undefined` when the calls pass through.
    #[wasm_bindgen(js_name = streamWatch)]
    pub fn stream_watch(&mut self) -> Option<Vec<f64>> {
        let (ping, pong) = self.calls().stream_watch()?;
        Some(vec![ping as f64, pong as f64])
    }
}

/// The `V1Status` a plain exec's caller gets when its stream ended with
/// no status.
#[wasm_bindgen(js_name = cutStatus)]
pub fn cut_status(pod: &str, why: &str) -> JsValue {
    wire::unknown_status(crate::durable::plain_cut(pod, why))
}

/// Whether a `V1Status` reason is one this package gives in place of the
/// command's own (`crate::durable::is_incomplete`).
#[wasm_bindgen(js_name = isIncompleteReason)]
pub fn is_incomplete_reason(reason: &str) -> bool {
    crate::durable::is_incomplete(reason)
}

/// The pod program's `lib/table.sh` (`crate::durable::shell_table`): what
/// the build puts in place of the statuses' and utilities' names.
#[wasm_bindgen(js_name = podShellTable)]
pub fn pod_shell_table() -> String {
    crate::durable::shell_table(crate::durable::UTILITIES)
}

/// How long a process that is stopping waits for its durable runs' commands
/// to be stopped (`crate::durable::STOP_WAIT_MS`).
#[wasm_bindgen(js_name = stopWaitMs)]
pub fn stop_wait_ms() -> f64 {
    crate::durable::STOP_WAIT_MS as f64
}

/// Whether the process raises the signal again after its runs were stopped,
/// given how many handlers of its own the host has for it.
#[wasm_bindgen(js_name = raiseAfterStop)]
pub fn raise_after_stop(host_handlers: u32) -> bool {
    crate::durable::raise_after_stop(host_handlers)
}

/// One durable exec (`crate::durable::DurableRun`).
#[wasm_bindgen(js_name = Durable)]
pub struct WasmDurable {
    run: crate::durable::DurableRun,
    command: Vec<String>,
}

#[wasm_bindgen(js_class = Durable)]
impl WasmDurable {
    /// Takes the facts, returns the actions up to a wait or the end.
    pub fn step(&mut self, now_ms: f64, facts: &JsValue) -> Result<js_sys::Array, JsValue> {
        let now = time(now_ms)?;
        for fact in read(facts, "facts", wire::durable_facts)? {
            self.run.on_fact(now, fact);
        }
        let (run, command) = (&mut self.run, &self.command);
        steps(
            || run.poll(now),
            |a| wire::durable_action(a, command),
            |a| a.ends_turn(),
        )
    }
}

/// One copy of a folder into or out of a pod (`crate::copy::CopyRun`).
#[wasm_bindgen(js_name = Copy)]
pub struct WasmCopy {
    run: crate::copy::CopyRun,
}

#[wasm_bindgen(js_class = Copy)]
impl WasmCopy {
    /// A copy of `spec` (`{direction, pod, from, to}`).
    #[wasm_bindgen(constructor)]
    pub fn new(spec: &JsValue) -> Result<WasmCopy, JsValue> {
        let spec = read(spec, "spec", wire::copy_spec)?;
        Ok(WasmCopy {
            run: crate::copy::CopyRun::new(spec),
        })
    }

    /// Takes the facts, returns the actions up to a wait or the end.
    pub fn step(&mut self, now_ms: f64, facts: &JsValue) -> Result<js_sys::Array, JsValue> {
        let now = time(now_ms)?;
        for fact in read(facts, "facts", wire::copy_facts)? {
            match fact {
                wire::CopyFact::Copied(attempt) => self.run.on_attempt(now, &attempt),
                wire::CopyFact::Removed(removal) => self.run.on_removed(now, &removal),
            }
        }
        let run = &mut self.run;
        steps(|| run.poll(now), wire::copy_action, |a| a.ends_turn())
    }
}

impl WasmSettings {
    fn calls(&mut self) -> &mut CallPolicy {
        let environment = &self.environment;
        self.calls
            .get_or_insert_with(|| CallPolicy::new(environment))
    }
}

/// One check of one hook step, from the first file read to the last line
/// printed (see `src/check/`).
#[wasm_bindgen(js_name = Check)]
pub struct WasmCheck {
    check: Check,
}

impl WasmCheck {
    /// A check of `settings` (a `Settings`); `user` the current user's
    /// credential candidates (see `wire::user_facts`), or null; `cacheDir` a string or null; `process` `{pid,
    /// host}`. JS starts one with `startCheck`.
    pub fn new(
        settings: &WasmSettings,
        permissions: JsValue,
        namespace: &str,
        user: &JsValue,
        cache_dir: &JsValue,
        process: &JsValue,
        now_ms: f64,
    ) -> Result<WasmCheck, JsValue> {
        let permissions: Vec<PermissionSpec> = read(&permissions, "permissions", de::read)?;
        let user = read(user, "user", wire::user_facts)?;
        let cache_dir = cache_dir.as_string();
        let process = read(process, "process", de::read)?;
        let input = CheckInput {
            environment: &settings.environment,
            permissions: &permissions,
            namespace,
            user: &user,
            cache_dir: cache_dir.as_deref(),
            process,
        };
        let check = Check::new(input, time(now_ms)?).map_err(setup_error)?;
        Ok(WasmCheck { check })
    }
}

#[wasm_bindgen(js_class = Check)]
impl WasmCheck {
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
        steps(
            || self.check.poll(now),
            write,
            |a| matches!(a, CheckAction::Wait { .. } | CheckAction::Done { .. }),
        )
    }
}

/// `startCheck(settings, permissions, namespace, user, cacheDir, process, nowMs)`:
/// `[check, actions]`: a new `Check` (the arguments of `WasmCheck::new`)
/// and its first actions (what `check.step(nowMs, [])` returns), in one
/// crossing instead of two.
#[wasm_bindgen(js_name = startCheck)]
pub fn start_check(
    settings: &WasmSettings,
    permissions: JsValue,
    namespace: &str,
    user: &JsValue,
    cache_dir: &JsValue,
    process: &JsValue,
    now_ms: f64,
) -> Result<js_sys::Array, JsValue> {
    let mut check = WasmCheck::new(
        settings,
        permissions,
        namespace,
        user,
        cache_dir,
        process,
        now_ms,
    )?;
    let actions = check.step(now_ms, &js_sys::Array::new())?;
    Ok(js_sys::Array::of2(&JsValue::from(check), &actions))
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
                .map_err(result_error)?;
        }
        steps(
            || self.call.poll(now),
            wire::call_action,
            |a| matches!(a, CallAction::Wait { .. } | CallAction::Done { .. }),
        )
    }
}

/// Polls until an action `ends` the list (`wait` or `done`), each written
/// with `out`.
fn steps<A>(
    mut poll: impl FnMut() -> A,
    out: impl Fn(&A) -> JsValue,
    ends: impl Fn(&A) -> bool,
) -> Result<js_sys::Array, JsValue> {
    // A machine's turn is a few actions; this many is a bug of ours, said
    // as one rather than a process that runs out of memory.
    const MOST: usize = 10_000;
    let actions = js_sys::Array::new();
    for _ in 0..MOST {
        let action = poll();
        actions.push(&out(&action));
        if ends(&action) {
            return Ok(actions);
        }
    }
    Err(error(
        "PREFLIGHT_BUG",
        &format!("k8s-auth-preflight: a machine asked for {MOST} actions without a wait"),
    ))
}

fn fact_error(e: FactError) -> JsValue {
    match e {
        FactError::Result(e) => result_error(e),
        other => error("PREFLIGHT_BAD_FACT", &other.to_string()),
    }
}

/// An env value as the settings read it: text, or the type of a value that
/// is not text.
type EnvText = Result<String, &'static str>;

/// The `ACTIONS_RUNNER_PREFLIGHT_*` entries, `HOME` (where the runner key
/// file is) and `RUNNER_TEMP` of an object (`process.env`, or the `env`
/// option), as text: strings as they are, numbers, bigints and booleans as
/// JS writes them (`3000`, `false`), `null` and `undefined` as unset; for
/// anything else its type, which the settings report. `null` and
/// `undefined` are empty.
fn env_pairs(env: &JsValue) -> Result<Vec<(String, EnvText)>, Unreadable> {
    if env.is_null() || env.is_undefined() {
        return Ok(Vec::new());
    }
    if !env.is_object() {
        return Err(Unreadable::NotAnObject(js_type(env)));
    }
    // A getter or a Proxy trap may throw (a revoked Proxy does at any
    // touch): caught here, it is a fact.
    let entries = object_entries(env).map_err(|e| Unreadable::Threw(thrown_message(&e)))?;
    if js_sys::Array::is_array(env) {
        return Err(Unreadable::NotAnObject("array"));
    }
    let mut pairs = Vec::new();
    for entry in entries.iter() {
        let Some(key) = Reflect::get_u32(&entry, 0).ok().and_then(|k| k.as_string()) else {
            continue;
        };
        let value = Reflect::get_u32(&entry, 1).unwrap_or(JsValue::UNDEFINED);
        if !(key.starts_with(PREFIX) || key == "HOME" || key == RUNNER_TEMP)
            || value.is_null()
            || value.is_undefined()
        {
            continue;
        }
        let text = match js_type(&value) {
            // `String(value)`: a number as JS spells it (`NaN`, `1e21`).
            "string" | "number" | "boolean" | "bigint" => Ok(String::from(
                value.unchecked_ref::<js_sys::Object>().to_string(),
            )),
            kind => Err(kind),
        };
        pairs.push((key, text));
    }
    Ok(pairs)
}

/// [`env_pairs`] as the core reads them.
fn values(env: &[(String, EnvText)]) -> Vec<(&str, EnvValue<'_>)> {
    env.iter()
        .map(|(k, v)| match v {
            Ok(text) => (k.as_str(), EnvValue::Text(text)),
            Err(kind) => (k.as_str(), EnvValue::NotText(kind)),
        })
        .collect()
}

#[wasm_bindgen]
extern "C" {
    /// `Object.entries(value)`, with what it throws as an error.
    #[wasm_bindgen(catch, js_namespace = Object, js_name = entries)]
    fn object_entries(value: &JsValue) -> Result<js_sys::Array, JsValue>;
}

/// The message of a thrown value, as text, whatever was thrown.
fn thrown_message(thrown: &JsValue) -> String {
    // `Reflect.get` is caught: the thrown value may be a Proxy too.
    let message = || Reflect::get(thrown, &"message".into()).ok()?.as_string();
    thrown
        .as_string()
        .or_else(|| thrown.is_object().then(message).flatten())
        .unwrap_or_else(|| format!("a thrown {}", js_type(thrown)))
}

/// A string or Uint8Array as bytes; anything else is "none".
#[cfg(feature = "test-exports")]
fn bytes(value: &JsValue) -> Option<Vec<u8>> {
    if let Some(s) = value.as_string() {
        return Some(s.into_bytes());
    }
    value.dyn_ref::<Uint8Array>().map(Uint8Array::to_vec)
}

/// Epoch milliseconds from JS: finite, not negative, exact in a double.
fn time(now_ms: f64) -> Result<u64, JsValue> {
    // NaN and the infinities are outside the range too.
    if (0.0..=9_007_199_254_740_991.0).contains(&now_ms) {
        return Ok(now_ms as u64);
    }
    let got = js_number(now_ms);
    let message = format!("nowMs must be a finite, non-negative number of ms, got {got}");
    Err(error("PREFLIGHT_BAD_TIME", &message))
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

fn result_error(e: BadReport) -> JsValue {
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
    write(&crate::permission::runner_hooks_permissions())
}

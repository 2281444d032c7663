//! The exports only tests call (cargo feature `test-exports`): the
//! review machine alone, the lock's sub-machine alone, and single
//! functions of the core. The package ships without them.

use super::*;
use crate::check::single_flight::SingleFlight;
use crate::classify::classify as classify_facts;
use crate::config::Settings;
use crate::preflight;
use crate::preflight::Preflight as Machine;
use crate::random::RandomSource;
use crate::rules;
use crate::runner_key;
use crate::schedule::Schedule;
use std::time::Duration;

/// A preflight check's request machine driven from JavaScript, alone, for
/// tests (the shim runs `Check` and `Call`).
#[wasm_bindgen(js_name = Preflight)]
pub struct WasmPreflight {
    machine: Machine,
}

#[wasm_bindgen(js_class = Preflight)]
impl WasmPreflight {
    /// `new Preflight(env, permissions, namespace, credential, cachedRecord, nowMs, keyFile?)`.
    /// `credential` and `cachedRecord` are a string, a Uint8Array, or null;
    /// `keyFile` is the shim's report on the runner key file (see
    /// `runnerKeyFile`); without it the record is signed with the
    /// token-derived key.
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
        let env = env_pairs(env).unwrap_or_default();
        let permissions: Vec<PermissionSpec> = read(&permissions, "permissions", de::read)?;
        let credential = bytes(credential);
        let cached = bytes(cached_record);
        let key_file = if key_file.is_undefined() {
            None
        } else {
            Some(read(key_file, "keyFile", de::read)?)
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
    pub fn poll(&mut self, now_ms: f64) -> Result<JsValue, JsValue> {
        let now = time(now_ms)?;
        Ok(write(&wire::ActionOut::from(&self.machine.poll(now))))
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
        let result = read(&result, "result", de::read)?;
        let accepted = self
            .machine
            .on_result(probe as usize, attempt, time(now_ms)?, result)
            .map_err(result_error)?;
        Ok(JsValue::from_str(accepted.name()))
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
    let env = env_pairs(env).unwrap_or_default();
    let permissions: Vec<PermissionSpec> = read(&permissions, "permissions", de::read)?;
    let credential = bytes(credential);
    preflight::cache_file_name(values(&env), &permissions, namespace, credential.as_deref())
        .map_err(setup_error)
}

/// `cacheFolder(env, cacheDir)`: the folder for the cache record, from
/// `options.cacheDir` and `env.RUNNER_TEMP`: `{ folder, warning }`, one of
/// them null.
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
#[wasm_bindgen(js_name = runnerKeyFile)]
pub fn runner_key_file(env: &JsValue) -> JsValue {
    let env = env_pairs(env).unwrap_or_default();
    let settings = Settings::from_env_values(&values(&env)).0;
    let home = env.iter().find_map(|(k, v)| match v {
        Ok(home) if k == "HOME" => Some(home.as_str()),
        _ => None,
    });
    let at = runner_key::location(settings.key_file.as_deref(), home)
        .ok()
        .filter(|_| settings.cache_enabled);
    write(&wire::KeyLocationOut::from(at.as_ref()))
}

/// `runnerKeyToCreate(facts)`: the text of a new key file to create after
/// this report on the path, or null (something is there already).
#[wasm_bindgen(js_name = runnerKeyToCreate)]
pub fn runner_key_to_create(facts: &JsValue) -> Result<Option<String>, JsValue> {
    let report: runner_key::KeyFileReport = read(facts, "keyFile", de::read)?;
    Ok(runner_key::to_create(&report.facts))
}

/// `runnerKeyMaxBytes()`: the most of a key file worth reading; the shim
/// reads at most one byte more.
#[wasm_bindgen(js_name = runnerKeyMaxBytes)]
pub fn runner_key_max_bytes() -> u32 {
    runner_key::KEY_FILE_LEN as u32
}

/// `rulesProve(status, permissions)`: for each permission (flattened, one
/// verb each, in the order given), whether the rules review status proves it.
#[wasm_bindgen(js_name = rulesProve)]
pub fn rules_prove(status: JsValue, permissions: JsValue) -> Result<Vec<u8>, JsValue> {
    let status = read(&status, "status", de::read)?;
    let permissions: Vec<crate::permission::Permission> =
        read(&permissions, "permissions", de::read)?;
    Ok(rules::proven(&status, &permissions)
        .into_iter()
        .map(u8::from)
        .collect())
}

/// `classify(facts, nowMs, env?)`: the class of one failure.
#[wasm_bindgen]
pub fn classify(facts: JsValue, now_ms: f64, env: &JsValue) -> Result<JsValue, JsValue> {
    let facts = read(&facts, "facts", de::read)?;
    let settings = settings_from(env).0;
    let class = classify_facts(&facts, time(now_ms)?, settings.max_retry_after);
    Ok(write(&wire::ClassOut::from(&class)))
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
    let mut random = RandomSource::for_seed(settings.seed, 0);
    Schedule::preview(settings.backoff, &mut random)
        .into_iter()
        .map(|d| crate::millis(d) as f64)
        .collect()
}

fn settings_from(env: &JsValue) -> (Settings, Vec<String>) {
    let env = env_pairs(env).unwrap_or_default();
    let (settings, errors) = Settings::from_env_values(&values(&env));
    (settings, errors.iter().map(|e| e.to_string()).collect())
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
        let env = env_pairs(env).unwrap_or_default();
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

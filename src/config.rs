//! Settings: the defaults, and overrides from `ACTIONS_RUNNER_PREFLIGHT_*`
//! environment variables.
//!
//! A bad value never stops a check: [`Settings::from_env`] keeps the default
//! for that one setting and returns a [`SettingError`] that names the
//! variable, the value and what is accepted; the shim prints it as a warning.

use std::time::Duration;

use thiserror::Error;

use crate::cache::CachePolicy;
use crate::schedule::{Backoff, Jitter};
use crate::text::{parse_decimal, quoted, whole_number};

/// Every setting of a check.
///
/// # Default
/// The backoff of [`Backoff::new`] (1 s doubling to 8 s, equal jitter, at
/// most 20 attempts, 90 s deadline), 10 s per request, `Retry-After` honoured
/// up to 32 s, cache on with [`CachePolicy::new`] (TTL 1 h, grace 24 h), the
/// rules-review fast path on, no hedged requests, no retry quota, OS
/// randomness (no seed); the hooks' other API calls wrapped
/// ([`crate::call`]) with a 120 s deadline each.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Backoff, jitter, attempt limit and deadline of every review.
    pub backoff: Backoff,
    /// Each request is abandoned after this long.
    pub request_timeout: Duration,
    /// The longest `Retry-After` honoured (APF asks for at most 32 s).
    pub max_retry_after: Duration,
    /// Whether verdicts are cached at all.
    pub cache_enabled: bool,
    /// Whether one SelfSubjectRulesReview goes first, so that only what its
    /// rules do not prove is asked with SelfSubjectAccessReviews.
    pub rules_review: bool,
    /// Whether hook processes of one job that start together with no usable
    /// record take turns through a lock file, so only one asks the API.
    pub single_flight: bool,
    /// Cache TTL, grace and skew.
    pub cache: CachePolicy,
    /// Send a second copy of a review that has had no answer for this long
    /// ([`crate::preflight::hedge`]); `None`: never.
    pub hedge_after: Option<Duration>,
    /// The size of the check's retry token bucket
    /// ([`crate::preflight::retry_quota`]); `None`: no quota.
    pub retry_quota: Option<u32>,
    /// Seed for jitter (reproducible runs); `None` draws from the OS.
    pub seed: Option<u64>,
    /// What an inconclusive check with no grace record does: fail the step
    /// (the default), or let it go on to meet the API's own enforcement.
    pub on_inconclusive: OnInconclusive,
    /// The runner key file ([`crate::runner_key`]); `None`: in `$HOME`.
    pub key_file: Option<String>,
    /// What only the calls read ([`crate::call`]).
    pub calls: CallSettings,
}

/// The settings only the hooks' other Kubernetes calls read; the backoff,
/// jitter, request timeout, `Retry-After` limit and seed are shared with
/// the check.
#[derive(Debug, Clone, PartialEq)]
pub struct CallSettings {
    /// Whether they are retried by the call machine at all; off: every
    /// call passes through unchanged.
    pub resilient: bool,
    /// How long one wrapped call keeps retrying; its last attempt may then
    /// run for one request timeout more.
    pub deadline: Duration,
    /// How long a wrapped call's attempt is awaited before it is
    /// abandoned: past the apiserver's own 60 s request timeout, so that
    /// no answer the apiserver gives is cut off. A read that has had no
    /// answer for `request_timeout` sends a second copy meanwhile.
    pub request_timeout: Duration,
    /// How long a wrapped call retries answers that refuse its credentials
    /// or its permissions (401, an authorization 403), counted from the
    /// first; then the apiserver's answer is final.
    pub auth_retry: Duration,
    /// The most attempts one wrapped call makes, the first included (the
    /// check's `MAX_ATTEMPTS` bounds a review, not a call).
    pub max_attempts: u32,
    /// Whether an exec with no stdin and no tty runs durably
    /// ([`crate::durable`]).
    pub durable: bool,
    /// An open exec stream that has answered no ping for this long is cut.
    pub pong_deadline: Duration,
    /// How long a durable exec may be without a connection before it
    /// gives up.
    pub disconnect_limit: Duration,
}

/// What an inconclusive check does when no grace record answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnInconclusive {
    /// Fail the step with `PreflightInconclusiveError` (the default).
    Fail,
    /// Return `true` with a warning that says so. The check is advisory:
    /// the apiserver still enforces RBAC on every real call. A denial is
    /// never turned into a pass.
    Proceed,
}

impl Default for Settings {
    fn default() -> Self {
        Settings::new()
    }
}

impl Settings {
    /// The defaults (see `# Default`).
    pub const fn new() -> Self {
        Settings {
            backoff: Backoff::new(),
            request_timeout: Duration::from_secs(10),
            max_retry_after: Duration::from_secs(32),
            cache_enabled: true,
            rules_review: true,
            single_flight: true,
            cache: CachePolicy::new(),
            hedge_after: None,
            retry_quota: None,
            seed: None,
            on_inconclusive: OnInconclusive::Fail,
            key_file: None,
            calls: CallSettings {
                resilient: true,
                deadline: Duration::from_secs(120),
                request_timeout: Duration::from_secs(65),
                auth_retry: Duration::from_secs(15),
                max_attempts: 100,
                durable: true,
                pong_deadline: Duration::from_secs(15),
                disconnect_limit: Duration::from_secs(300),
            },
        }
    }
}

/// The prefix of every variable read.
pub const PREFIX: &str = "ACTIONS_RUNNER_PREFLIGHT_";

/// One variable: what it accepts (for errors and the README) and which
/// field of [`Settings`] it sets. A row carries its own setter, so a new
/// variable cannot land in another's field.
#[derive(Debug, Clone, Copy)]
pub struct Variable {
    /// Full name, e.g. `ACTIONS_RUNNER_PREFLIGHT_DEADLINE_MS`.
    pub name: &'static str,
    /// What is accepted, e.g. `a whole number of ms from 1000 to 3600000`.
    pub accepts: &'static str,
    /// The default, as text.
    pub default: &'static str,
    /// What it does, as the README's table says. Only in test builds (the
    /// README test reads it): the texts would be 1 KB of `.wasm` that no
    /// message prints.
    #[cfg(test)]
    meaning: &'static str,
    kind: Kind,
}

/// How a variable's value is read, and the setter that stores it: each
/// kind's setter takes the value already parsed and checked.
#[derive(Debug, Clone, Copy)]
enum Kind {
    /// A whole number of ms within `min..=max`.
    Millis {
        min: u64,
        max: u64,
        set: fn(&mut Settings, Duration),
    },
    /// A whole number within `min..=max` (at most `u32::MAX`).
    Count {
        min: u64,
        max: u64,
        set: fn(&mut Settings, u32),
    },
    /// A number from 1 to 10.
    Factor { set: fn(&mut Settings, f64) },
    /// A jitter name.
    Jitter { set: fn(&mut Settings, Jitter) },
    /// on / off and their synonyms.
    Switch { set: fn(&mut Settings, bool) },
    /// fail / proceed.
    OnInconclusive {
        set: fn(&mut Settings, OnInconclusive),
    },
    /// Any `u64`.
    Seed { set: fn(&mut Settings, u64) },
    /// An absolute path.
    Path { set: fn(&mut Settings, &str) },
}

const H: u64 = 3_600_000;

/// Every variable, in the order the README lists them.
pub const VARIABLES: &[Variable] = &[
    Variable {
        name: "ACTIONS_RUNNER_PREFLIGHT_DEADLINE_MS",
        accepts: "a whole number of ms from 1000 to 3600000",
        default: "90000",
        #[cfg(test)]
        meaning: "how long a check keeps retrying before it is inconclusive",
        kind: Kind::Millis { min: 1_000, max: H, set: |s, d| s.backoff.deadline = d },
    },
    Variable {
        name: "ACTIONS_RUNNER_PREFLIGHT_MAX_ATTEMPTS",
        accepts: "a whole number from 1 to 100",
        default: "20",
        #[cfg(test)]
        meaning: "attempts per review, the first included",
        kind: Kind::Count { min: 1, max: 100, set: |s, n| s.backoff.max_attempts = n },
    },
    Variable {
        name: "ACTIONS_RUNNER_PREFLIGHT_BASE_DELAY_MS",
        accepts: "a whole number of ms from 1 to 60000",
        default: "1000",
        #[cfg(test)]
        meaning: "the first backoff delay, before jitter",
        kind: Kind::Millis { min: 1, max: 60_000, set: |s, d| s.backoff.base = d },
    },
    Variable {
        name: "ACTIONS_RUNNER_PREFLIGHT_BACKOFF_FACTOR",
        accepts: "a number from 1 to 10",
        default: "2",
        #[cfg(test)]
        meaning: "how much each backoff delay grows",
        kind: Kind::Factor { set: |s, f| s.backoff.factor = f },
    },
    Variable {
        name: "ACTIONS_RUNNER_PREFLIGHT_MAX_DELAY_MS",
        accepts: "a whole number of ms from 1 to 300000",
        default: "8000",
        #[cfg(test)]
        meaning: "the cap on any one backoff delay, jitter included",
        kind: Kind::Millis { min: 1, max: 300_000, set: |s, d| s.backoff.max_delay = d },
    },
    Variable {
        name: "ACTIONS_RUNNER_PREFLIGHT_JITTER",
        accepts: "one of none, equal, full, decorrelated",
        default: "equal",
        #[cfg(test)]
        meaning: "how backoff delays are randomized",
        kind: Kind::Jitter { set: |s, j| s.backoff.jitter = j },
    },
    Variable {
        name: "ACTIONS_RUNNER_PREFLIGHT_REQUEST_TIMEOUT_MS",
        accepts: "a whole number of ms from 100 to 300000",
        default: "10000",
        #[cfg(test)]
        meaning: "each request is abandoned after this long",
        kind: Kind::Millis { min: 100, max: 300_000, set: |s, d| s.request_timeout = d },
    },
    Variable {
        name: "ACTIONS_RUNNER_PREFLIGHT_MAX_RETRY_AFTER_MS",
        accepts: "a whole number of ms from 0 to 300000",
        default: "32000",
        #[cfg(test)]
        meaning: "the longest Retry-After honoured",
        kind: Kind::Millis { min: 0, max: 300_000, set: |s, d| s.max_retry_after = d },
    },
    Variable {
        name: "ACTIONS_RUNNER_PREFLIGHT_HEDGE_MS",
        accepts: "a whole number of ms from 0 to 300000 (0: off)",
        default: "0",
        #[cfg(test)]
        meaning: "send a second copy of a review that has had no answer for this long; the first answer wins",
        kind: Kind::Millis { min: 0, max: 300_000, set: |s, d| s.hedge_after = Some(d).filter(|d| !d.is_zero()) },
    },
    Variable {
        name: "ACTIONS_RUNNER_PREFLIGHT_RETRY_QUOTA",
        accepts: "a whole number of tokens from 0 to 100000 (0: off)",
        default: "0",
        #[cfg(test)]
        meaning: "the size of each check's retry token bucket: a retry takes 5 tokens (10 after a timeout), an answer gives 1 back (a retry's answer, what it took); when a retry cannot be paid for, the check is inconclusive",
        kind: Kind::Count { min: 0, max: 100_000, set: |s, n| s.retry_quota = Some(n).filter(|&n| n > 0) },
    },
    Variable {
        name: "ACTIONS_RUNNER_PREFLIGHT_CACHE",
        accepts: "on or off (also true/false, 1/0, yes/no)",
        default: "on",
        #[cfg(test)]
        meaning: "whether an allowed verdict is cached for later steps of the job",
        kind: Kind::Switch { set: |s, on| s.cache_enabled = on },
    },
    Variable {
        name: "ACTIONS_RUNNER_PREFLIGHT_RULES_REVIEW",
        accepts: "on or off (also true/false, 1/0, yes/no)",
        default: "on",
        #[cfg(test)]
        meaning: "ask one SelfSubjectRulesReview first and send access reviews only for what its rules do not prove",
        kind: Kind::Switch { set: |s, on| s.rules_review = on },
    },
    Variable {
        name: "ACTIONS_RUNNER_PREFLIGHT_SINGLE_FLIGHT",
        accepts: "on or off (also true/false, 1/0, yes/no)",
        default: "on",
        #[cfg(test)]
        meaning: "hook processes of one job that start together with no usable cached verdict take turns through a lock file: one asks the API, the others wait for its record",
        kind: Kind::Switch { set: |s, on| s.single_flight = on },
    },
    Variable {
        name: "ACTIONS_RUNNER_PREFLIGHT_CACHE_TTL_MS",
        accepts: "a whole number of ms from 0 to 604800000",
        default: "3600000",
        #[cfg(test)]
        meaning: "a cached verdict younger than this answers with no API call",
        kind: Kind::Millis { min: 0, max: 168 * H, set: |s, d| s.cache.ttl = d },
    },
    Variable {
        name: "ACTIONS_RUNNER_PREFLIGHT_CACHE_GRACE_MS",
        accepts: "a whole number of ms from 0 to 2592000000, not below the TTL",
        default: "86400000",
        #[cfg(test)]
        meaning: "a cached verdict younger than this answers only when the API is unreachable",
        kind: Kind::Millis { min: 0, max: 720 * H, set: |s, d| s.cache.grace = d },
    },
    Variable {
        name: "ACTIONS_RUNNER_PREFLIGHT_ON_INCONCLUSIVE",
        accepts: "fail or proceed",
        default: "fail",
        #[cfg(test)]
        meaning: "when the API gives no definitive answer by the deadline and no grace record exists: fail the step, or proceed with a warning (the API still refuses anything the service account may not do; a denial always fails)",
        kind: Kind::OnInconclusive { set: |s, o| s.on_inconclusive = o },
    },
    Variable {
        name: "ACTIONS_RUNNER_PREFLIGHT_SEED",
        accepts: "a whole number from 0 to 18446744073709551615",
        default: "unset (OS randomness)",
        #[cfg(test)]
        meaning: "seed for jitter, for reproducible runs",
        kind: Kind::Seed { set: |s, seed| s.seed = Some(seed) },
    },
    Variable {
        name: "ACTIONS_RUNNER_PREFLIGHT_KEY_FILE",
        accepts: "an absolute path",
        default: "unset ($HOME/.k8s-auth-preflight/runner-key)",
        #[cfg(test)]
        meaning: "the runner's secret key file (mode 0600, in a folder job containers do not mount) that signs cached verdicts, so that they survive token rotation; made if missing",
        kind: Kind::Path { set: |s, path| s.key_file = Some(path.to_string()) },
    },
    Variable {
        name: "ACTIONS_RUNNER_PREFLIGHT_RESILIENT_CALLS",
        accepts: "on or off (also true/false, 1/0, yes/no)",
        default: "on",
        #[cfg(test)]
        meaning: "whether the wrapped clients' calls are retried by the rules of their kind (docs/CALLS.md); off: every call passes through, as if unwrapped",
        kind: Kind::Switch { set: |s, on| s.calls.resilient = on },
    },
    Variable {
        name: "ACTIONS_RUNNER_PREFLIGHT_CALL_DEADLINE_MS",
        accepts: "a whole number of ms from 1000 to 3600000",
        default: "120000",
        #[cfg(test)]
        meaning: "how long one wrapped call (`resilientKubeConfig`, `resilientExec`, `resilientLog`, `retryK8sApiCall`) keeps retrying; the last attempt may run one request timeout past it. A call that starts within this long after another call of the process gave up, with none answered since, tries once",
        kind: Kind::Millis { min: 1_000, max: H, set: |s, d| s.calls.deadline = d },
    },
    Variable {
        name: "ACTIONS_RUNNER_PREFLIGHT_CALL_REQUEST_TIMEOUT_MS",
        accepts: "a whole number of ms from 100 to 600000",
        default: "65000",
        #[cfg(test)]
        meaning: "how long one attempt of a wrapped call (an exec's TLS handshake too) is awaited before it is abandoned (past the apiserver's own 60 s, so a slow answer is never cut off); a read with no answer after `REQUEST_TIMEOUT_MS` sends other copies meanwhile, each cut at `REQUEST_TIMEOUT_MS` (two out at most), and the first answer wins",
        kind: Kind::Millis { min: 100, max: 600_000, set: |s, d| s.calls.request_timeout = d },
    },
    Variable {
        name: "ACTIONS_RUNNER_PREFLIGHT_CALL_AUTH_RETRY_MS",
        accepts: "a whole number of ms from 0 to 300000",
        default: "15000",
        #[cfg(test)]
        meaning: "how long a wrapped call retries a 401 or an authorization 403 (an apiserver just back may refuse for a few seconds), counted from the first; then the apiserver's answer is thrown as the plain client throws it. An admission 403 (PodSecurity, a quota, a webhook) is never retried",
        kind: Kind::Millis { min: 0, max: 300_000, set: |s, d| s.calls.auth_retry = d },
    },
    Variable {
        name: "ACTIONS_RUNNER_PREFLIGHT_CALL_MAX_ATTEMPTS",
        accepts: "a whole number from 1 to 1000",
        default: "100",
        #[cfg(test)]
        meaning: "attempts per wrapped call, the first included (a read's extra copies count); the call's deadline usually ends it first. `MAX_ATTEMPTS` bounds the check's reviews, not the calls",
        kind: Kind::Count { min: 1, max: 1000, set: |s, n| s.calls.max_attempts = n },
    },
    Variable {
        name: "ACTIONS_RUNNER_PREFLIGHT_DURABLE_EXEC",
        accepts: "on or off (also true/false, 1/0, yes/no)",
        default: "on",
        #[cfg(test)]
        meaning: "whether `resilientExec`'s execs with no stdin and no tty run durably: detached in the pod, reattached from the bytes received when their stream is cut, started once, their exit code read from the pod (docs/CALLS.md); off: a cut stream fails the exec as unknown",
        kind: Kind::Switch { set: |s, on| s.calls.durable = on },
    },
    Variable {
        name: "ACTIONS_RUNNER_PREFLIGHT_EXEC_PONG_DEADLINE_MS",
        accepts: "a whole number of ms from 1000 to 600000",
        default: "15000",
        #[cfg(test)]
        meaning: "an open exec stream is pinged every 5 s; one that has answered no ping for this long counts as cut (a silent connection can stay open for minutes)",
        kind: Kind::Millis { min: 1_000, max: 600_000, set: |s, d| s.calls.pong_deadline = d },
    },
    Variable {
        name: "ACTIONS_RUNNER_PREFLIGHT_DURABLE_DISCONNECT_MS",
        accepts: "a whole number of ms from 1000 to 86400000",
        default: "300000",
        #[cfg(test)]
        meaning: "how long a durable exec may be without a connection to its script (counted from the cut, not from the script's start) before it gives up, saying the script may still be running",
        kind: Kind::Millis { min: 1_000, max: 86_400_000, set: |s, d| s.calls.disconnect_limit = d },
    },
];

/// A variable whose value was not used.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error(
    "{variable}={} ignored: {problem}; accepted: {accepts}; using the default {default}",
    quoted(value)
)]
pub struct SettingError {
    /// The variable's name.
    pub variable: String,
    /// The value as given (shortened to 64 characters).
    pub value: String,
    /// What is wrong with it.
    pub problem: Problem,
    /// What is accepted.
    pub accepts: &'static str,
    /// The default used instead.
    pub default: &'static str,
}

/// What is wrong with a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum Problem {
    /// Set, but to nothing.
    #[error("empty")]
    Empty,
    /// Not a number where one is needed.
    #[error("not a number")]
    NotANumber,
    /// A number outside the accepted range.
    #[error("out of range")]
    OutOfRange,
    /// Not one of the accepted names.
    #[error("not a known name")]
    UnknownName,
    /// A grace limit below the TTL.
    #[error("below the cache TTL")]
    BelowTtl,
    /// A relative path where an absolute one is needed.
    #[error("not an absolute path")]
    NotAbsolute,
    /// A variable with our prefix that we do not read (a typo?).
    #[error("not a setting of this package")]
    UnknownVariable,
    /// A value that is not text (an object, an array, a function, ... in
    /// the `env` option): its type.
    #[error("a value of type {0}, not a string, number or boolean")]
    NotText(&'static str),
}

/// One environment value as the host gave it. `process.env` holds only
/// text; the `env` option of the JS API may hold anything, and the boundary
/// turns numbers and booleans into their text (`3000`, `false`) and reports
/// the type of anything else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnvValue<'a> {
    /// Text, to be parsed by the setting's rules.
    Text(&'a str),
    /// Something that is not text: its type (`object`, `function`, ...).
    NotText(&'static str),
}

impl<'a> From<&'a str> for EnvValue<'a> {
    fn from(text: &'a str) -> Self {
        EnvValue::Text(text)
    }
}

impl Settings {
    /// Applies every `ACTIONS_RUNNER_PREFLIGHT_*` variable found in `env`
    /// to the defaults. Variables without the prefix are ignored.
    pub fn from_env<'a, I, V>(env: I) -> (Settings, Vec<SettingError>)
    where
        I: IntoIterator<Item = (&'a str, V)>,
        V: Into<EnvValue<'a>>,
    {
        let env: Vec<(&str, EnvValue<'a>)> = env.into_iter().map(|(k, v)| (k, v.into())).collect();
        Settings::from_env_values(&env)
    }

    /// [`Settings::from_env`] on values already read (one copy of the
    /// parsing in the `.wasm`, whatever the callers' types).
    pub fn from_env_values(env: &[(&str, EnvValue<'_>)]) -> (Settings, Vec<SettingError>) {
        let mut settings = Settings::new();
        let mut errors = Vec::new();
        let mut grace_given = None;
        let mut ours: Vec<(&str, EnvValue<'_>)> = env
            .iter()
            .copied()
            .filter(|(k, _)| k.starts_with(PREFIX))
            .collect();
        ours.sort_by(|a, b| a.0.cmp(b.0));
        for (name, value) in ours {
            let Some(variable) = VARIABLES.iter().find(|v| v.name == name) else {
                let shown = match value {
                    EnvValue::Text(text) => text,
                    EnvValue::NotText(_) => "",
                };
                errors.push(error_for(
                    name,
                    shown,
                    Problem::UnknownVariable,
                    "no such setting",
                    "-",
                ));
                continue;
            };
            let value = match value {
                EnvValue::Text(text) => text,
                EnvValue::NotText(kind) => {
                    errors.push(error_for(
                        name,
                        "",
                        Problem::NotText(kind),
                        variable.accepts,
                        variable.default,
                    ));
                    continue;
                }
            };
            match apply(&mut settings, variable, value) {
                Ok(()) if variable.name.ends_with("CACHE_GRACE_MS") => grace_given = Some(value),
                Ok(()) => {}
                Err(problem) => errors.push(error_for(
                    name,
                    value,
                    problem,
                    variable.accepts,
                    variable.default,
                )),
            }
        }
        if settings.cache.grace < settings.cache.ttl {
            let default_grace = CachePolicy::new().grace;
            settings.cache.grace = default_grace.max(settings.cache.ttl);
            if let Some(value) = grace_given {
                let name = "ACTIONS_RUNNER_PREFLIGHT_CACHE_GRACE_MS";
                if let Some(variable) = VARIABLES.iter().find(|v| v.name == name) {
                    errors.push(error_for(
                        name,
                        value,
                        Problem::BelowTtl,
                        variable.accepts,
                        variable.default,
                    ));
                }
            }
        }
        (settings, errors)
    }
}

fn error_for(
    name: &str,
    value: &str,
    problem: Problem,
    accepts: &'static str,
    default: &'static str,
) -> SettingError {
    SettingError {
        variable: name.to_string(),
        value: value.chars().take(64).collect(),
        problem,
        accepts,
        default,
    }
}

fn apply(settings: &mut Settings, variable: &Variable, raw: &str) -> Result<(), Problem> {
    let value = raw.trim();
    if value.is_empty() {
        return Err(Problem::Empty);
    }
    match variable.kind {
        Kind::Millis { min, max, set } => {
            set(settings, Duration::from_millis(number(value, min, max)?))
        }
        // `max` is at most u32::MAX for every count.
        Kind::Count { min, max, set } => set(settings, number(value, min, max)? as u32),
        Kind::Factor { set } => {
            let factor = match parse_decimal(value) {
                Some(f) => f,
                None if value.strip_prefix('-').and_then(parse_decimal).is_some() => {
                    return Err(Problem::OutOfRange)
                }
                None => return Err(Problem::NotANumber),
            };
            if !(1.0..=10.0).contains(&factor) {
                return Err(Problem::OutOfRange);
            }
            set(settings, factor);
        }
        Kind::Jitter { set } => set(
            settings,
            Jitter::from_name(value).ok_or(Problem::UnknownName)?,
        ),
        Kind::Switch { set } => {
            let on = match value.to_ascii_lowercase().as_str() {
                "on" | "true" | "1" | "yes" => true,
                "off" | "false" | "0" | "no" => false,
                _ => return Err(Problem::UnknownName),
            };
            set(settings, on);
        }
        Kind::OnInconclusive { set } => {
            let choice = match value.to_ascii_lowercase().as_str() {
                "fail" => OnInconclusive::Fail,
                "proceed" => OnInconclusive::Proceed,
                _ => return Err(Problem::UnknownName),
            };
            set(settings, choice);
        }
        Kind::Seed { set } => set(settings, number(value, 0, u64::MAX)?),
        Kind::Path { set } => {
            if !crate::runner_key::is_absolute(value) {
                return Err(Problem::NotAbsolute);
            }
            set(settings, value);
        }
    }
    Ok(())
}

/// A whole decimal number within `min..=max`.
fn number(value: &str, min: u64, max: u64) -> Result<u64, Problem> {
    let digits = value.strip_prefix('+').unwrap_or(value);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        // "-5" and "1e3" are numbers to a person, but out of range / not whole here.
        return Err(
            if value
                .strip_prefix('-')
                .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
            {
                Problem::OutOfRange
            } else {
                Problem::NotANumber
            },
        );
    }
    let n = whole_number(digits).ok_or(Problem::OutOfRange)?;
    if n < min || n > max {
        return Err(Problem::OutOfRange);
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    fn env(pairs: &[(&'static str, &'static str)]) -> (Settings, Vec<SettingError>) {
        Settings::from_env(pairs.iter().copied())
    }

    #[test]
    fn defaults_are_documented() {
        let s = Settings::default();
        assert_eq!(s.backoff, Backoff::new());
        assert_eq!(s.request_timeout, Duration::from_secs(10));
        assert_eq!(s.max_retry_after, Duration::from_secs(32));
        assert!(s.cache_enabled);
        assert!(s.rules_review);
        assert!(s.single_flight);
        assert_eq!(s.cache, CachePolicy::new());
        assert_eq!(s.hedge_after, None);
        assert_eq!(s.retry_quota, None);
        assert_eq!(s.seed, None);
        assert!(s.calls.resilient);
        assert_eq!(s.calls.deadline, Duration::from_secs(120));
        // The table's default texts agree with the values.
        let (from_table, errors) = Settings::from_env(
            VARIABLES
                .iter()
                .filter(|v| !matches!(v.kind, Kind::Seed { .. } | Kind::Path { .. }))
                .map(|v| (v.name, v.default)),
        );
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(from_table, s);
    }

    #[test]
    fn every_variable_is_applied() {
        let (s, errors) = env(&[
            ("ACTIONS_RUNNER_PREFLIGHT_DEADLINE_MS", "2500"),
            ("ACTIONS_RUNNER_PREFLIGHT_MAX_ATTEMPTS", "4"),
            ("ACTIONS_RUNNER_PREFLIGHT_BASE_DELAY_MS", "30"),
            ("ACTIONS_RUNNER_PREFLIGHT_BACKOFF_FACTOR", "1.5"),
            ("ACTIONS_RUNNER_PREFLIGHT_MAX_DELAY_MS", "240"),
            ("ACTIONS_RUNNER_PREFLIGHT_JITTER", "Equal"),
            ("ACTIONS_RUNNER_PREFLIGHT_REQUEST_TIMEOUT_MS", "500"),
            ("ACTIONS_RUNNER_PREFLIGHT_MAX_RETRY_AFTER_MS", "0"),
            ("ACTIONS_RUNNER_PREFLIGHT_HEDGE_MS", "150"),
            ("ACTIONS_RUNNER_PREFLIGHT_RETRY_QUOTA", "100"),
            ("ACTIONS_RUNNER_PREFLIGHT_CACHE", "off"),
            ("ACTIONS_RUNNER_PREFLIGHT_RULES_REVIEW", "no"),
            ("ACTIONS_RUNNER_PREFLIGHT_SINGLE_FLIGHT", "false"),
            ("ACTIONS_RUNNER_PREFLIGHT_CACHE_TTL_MS", "1000"),
            ("ACTIONS_RUNNER_PREFLIGHT_CACHE_GRACE_MS", "5000"),
            ("ACTIONS_RUNNER_PREFLIGHT_SEED", "42"),
            ("ACTIONS_RUNNER_PREFLIGHT_KEY_FILE", "/etc/runner/key"),
            ("ACTIONS_RUNNER_PREFLIGHT_RESILIENT_CALLS", "off"),
            ("ACTIONS_RUNNER_PREFLIGHT_CALL_DEADLINE_MS", "30000"),
            ("PATH", "/bin"),
        ]);
        assert!(errors.is_empty(), "{errors:?}");
        let ms = Duration::from_millis;
        assert_eq!(s.backoff.deadline, ms(2500));
        assert_eq!(s.backoff.max_attempts, 4);
        assert_eq!(s.backoff.base, ms(30));
        assert_eq!(s.backoff.factor, 1.5);
        assert_eq!(s.backoff.max_delay, ms(240));
        assert_eq!(s.backoff.jitter, Jitter::Equal);
        assert_eq!(s.request_timeout, ms(500));
        assert_eq!(s.max_retry_after, ms(0));
        assert_eq!(s.hedge_after, Some(ms(150)));
        assert_eq!(s.retry_quota, Some(100));
        assert!(!s.cache_enabled);
        assert!(!s.rules_review);
        assert!(!s.single_flight);
        assert_eq!(s.cache.ttl, ms(1000));
        assert_eq!(s.cache.grace, ms(5000));
        assert_eq!(s.seed, Some(42));
        assert_eq!(s.key_file.as_deref(), Some("/etc/runner/key"));
        assert!(!s.calls.resilient);
        assert_eq!(s.calls.deadline, ms(30_000));
    }

    /// Each variable, set alone to a valid value that is not its default,
    /// changes exactly the field it names: the whole `Settings` is compared,
    /// so a row whose setter writes another field (or a second one) fails.
    #[test]
    fn each_variable_sets_its_own_field_and_no_other() {
        type Expect = fn(&mut Settings);
        let cases: [(&str, &str, Expect); 26] = [
            ("ACTIONS_RUNNER_PREFLIGHT_DEADLINE_MS", "2500", |s| {
                s.backoff.deadline = Duration::from_millis(2500)
            }),
            ("ACTIONS_RUNNER_PREFLIGHT_MAX_ATTEMPTS", "4", |s| {
                s.backoff.max_attempts = 4
            }),
            ("ACTIONS_RUNNER_PREFLIGHT_BASE_DELAY_MS", "30", |s| {
                s.backoff.base = Duration::from_millis(30)
            }),
            ("ACTIONS_RUNNER_PREFLIGHT_BACKOFF_FACTOR", "1.5", |s| {
                s.backoff.factor = 1.5
            }),
            ("ACTIONS_RUNNER_PREFLIGHT_MAX_DELAY_MS", "240", |s| {
                s.backoff.max_delay = Duration::from_millis(240)
            }),
            ("ACTIONS_RUNNER_PREFLIGHT_JITTER", "full", |s| {
                s.backoff.jitter = Jitter::Full
            }),
            ("ACTIONS_RUNNER_PREFLIGHT_REQUEST_TIMEOUT_MS", "500", |s| {
                s.request_timeout = Duration::from_millis(500)
            }),
            ("ACTIONS_RUNNER_PREFLIGHT_MAX_RETRY_AFTER_MS", "7000", |s| {
                s.max_retry_after = Duration::from_millis(7000)
            }),
            ("ACTIONS_RUNNER_PREFLIGHT_HEDGE_MS", "150", |s| {
                s.hedge_after = Some(Duration::from_millis(150))
            }),
            ("ACTIONS_RUNNER_PREFLIGHT_RETRY_QUOTA", "100", |s| {
                s.retry_quota = Some(100)
            }),
            ("ACTIONS_RUNNER_PREFLIGHT_CACHE", "off", |s| {
                s.cache_enabled = false
            }),
            ("ACTIONS_RUNNER_PREFLIGHT_RULES_REVIEW", "off", |s| {
                s.rules_review = false
            }),
            ("ACTIONS_RUNNER_PREFLIGHT_SINGLE_FLIGHT", "off", |s| {
                s.single_flight = false
            }),
            ("ACTIONS_RUNNER_PREFLIGHT_CACHE_TTL_MS", "1000", |s| {
                s.cache.ttl = Duration::from_millis(1000)
            }),
            ("ACTIONS_RUNNER_PREFLIGHT_CACHE_GRACE_MS", "7200000", |s| {
                s.cache.grace = Duration::from_millis(7_200_000)
            }),
            ("ACTIONS_RUNNER_PREFLIGHT_ON_INCONCLUSIVE", "proceed", |s| {
                s.on_inconclusive = OnInconclusive::Proceed
            }),
            ("ACTIONS_RUNNER_PREFLIGHT_SEED", "42", |s| s.seed = Some(42)),
            (
                "ACTIONS_RUNNER_PREFLIGHT_KEY_FILE",
                "/etc/runner/key",
                |s| s.key_file = Some("/etc/runner/key".into()),
            ),
            ("ACTIONS_RUNNER_PREFLIGHT_RESILIENT_CALLS", "off", |s| {
                s.calls.resilient = false
            }),
            ("ACTIONS_RUNNER_PREFLIGHT_CALL_DEADLINE_MS", "30000", |s| {
                s.calls.deadline = Duration::from_secs(30)
            }),
            (
                "ACTIONS_RUNNER_PREFLIGHT_CALL_REQUEST_TIMEOUT_MS",
                "2000",
                |s| s.calls.request_timeout = Duration::from_secs(2),
            ),
            ("ACTIONS_RUNNER_PREFLIGHT_CALL_AUTH_RETRY_MS", "0", |s| {
                s.calls.auth_retry = Duration::ZERO
            }),
            ("ACTIONS_RUNNER_PREFLIGHT_CALL_MAX_ATTEMPTS", "7", |s| {
                s.calls.max_attempts = 7
            }),
            ("ACTIONS_RUNNER_PREFLIGHT_DURABLE_EXEC", "off", |s| {
                s.calls.durable = false
            }),
            (
                "ACTIONS_RUNNER_PREFLIGHT_EXEC_PONG_DEADLINE_MS",
                "4000",
                |s| s.calls.pong_deadline = Duration::from_millis(4000),
            ),
            (
                "ACTIONS_RUNNER_PREFLIGHT_DURABLE_DISCONNECT_MS",
                "60000",
                |s| s.calls.disconnect_limit = Duration::from_millis(60_000),
            ),
        ];
        // One case per row of the table, in its order.
        let names: Vec<&str> = cases.iter().map(|c| c.0).collect();
        let rows: Vec<&str> = VARIABLES.iter().map(|v| v.name).collect();
        assert_eq!(names, rows);
        for (name, value, expect) in cases {
            let (got, errors) = Settings::from_env([(name, value)]);
            assert!(errors.is_empty(), "{name}={value:?}: {errors:?}");
            let mut want = Settings::new();
            expect(&mut want);
            assert_ne!(want, Settings::new(), "{name}={value:?} is the default");
            assert_eq!(got, want, "{name}={value:?} set the wrong field(s)");
        }
    }

    #[test]
    fn bad_values_keep_the_default_and_name_the_variable() {
        let bad = [
            "",
            "  ",
            "abc",
            "-5",
            "1e3",
            "99999999999999999999999",
            "NaN",
            "0x10",
            "1.5",
        ];
        for variable in VARIABLES {
            for value in bad {
                // Some of these are fine for some variables (1.5 is a factor).
                if matches!(variable.kind, Kind::Factor { .. }) && value == "1.5" {
                    continue;
                }
                let (s, errors) = Settings::from_env([(variable.name, value)]);
                assert_eq!(
                    errors.len(),
                    1,
                    "{}={value:?} gave {errors:?}",
                    variable.name
                );
                let text = errors[0].to_string();
                assert!(text.starts_with(variable.name), "{text}");
                assert!(text.contains(variable.accepts), "{text}");
                assert!(text.contains(&format!("{value:?}")), "{text}");
                assert_eq!(
                    s,
                    Settings::default(),
                    "{}={value:?} changed settings",
                    variable.name
                );
            }
        }
    }

    #[test]
    fn out_of_range_is_named_as_such() {
        let (_, e) = env(&[("ACTIONS_RUNNER_PREFLIGHT_MAX_ATTEMPTS", "0")]);
        assert_eq!(e[0].problem, Problem::OutOfRange);
        let (_, e) = env(&[("ACTIONS_RUNNER_PREFLIGHT_DEADLINE_MS", "-5")]);
        assert_eq!(e[0].problem, Problem::OutOfRange);
        let (_, e) = env(&[("ACTIONS_RUNNER_PREFLIGHT_JITTER", "random")]);
        assert_eq!(e[0].problem, Problem::UnknownName);
        let (_, e) = env(&[("ACTIONS_RUNNER_PREFLIGHT_BACKOFF_FACTOR", "inf")]);
        assert_eq!(e[0].problem, Problem::NotANumber);
    }

    #[test]
    fn hedging_and_the_retry_quota_are_off_at_zero_and_refuse_garbage() {
        let (s, e) = env(&[
            ("ACTIONS_RUNNER_PREFLIGHT_HEDGE_MS", "0"),
            ("ACTIONS_RUNNER_PREFLIGHT_RETRY_QUOTA", "0"),
        ]);
        assert!(e.is_empty(), "{e:?}");
        assert_eq!((s.hedge_after, s.retry_quota), (None, None));
        let (s, e) = env(&[
            ("ACTIONS_RUNNER_PREFLIGHT_HEDGE_MS", "300001"),
            ("ACTIONS_RUNNER_PREFLIGHT_RETRY_QUOTA", "lots"),
        ]);
        assert_eq!(s, Settings::default());
        assert_eq!(e.len(), 2);
        assert_eq!(e[0].variable, "ACTIONS_RUNNER_PREFLIGHT_HEDGE_MS");
        assert_eq!(e[0].problem, Problem::OutOfRange);
        assert_eq!(e[1].variable, "ACTIONS_RUNNER_PREFLIGHT_RETRY_QUOTA");
        assert_eq!(e[1].problem, Problem::NotANumber);
        assert_eq!(
            e[0].to_string(),
            "ACTIONS_RUNNER_PREFLIGHT_HEDGE_MS=\"300001\" ignored: out of range; accepted: a whole number of ms from 0 to 300000 (0: off); using the default 0"
        );
        let (s, e) = env(&[("ACTIONS_RUNNER_PREFLIGHT_HEDGE_MS", " 25 ")]);
        assert!(e.is_empty());
        assert_eq!(s.hedge_after, Some(Duration::from_millis(25)));
    }

    #[test]
    fn unknown_variables_with_our_prefix_are_reported() {
        let (s, e) = env(&[("ACTIONS_RUNNER_PREFLIGHT_DEADLINE", "5000")]);
        assert_eq!(s, Settings::default());
        assert_eq!(e[0].problem, Problem::UnknownVariable);
        assert!(e[0]
            .to_string()
            .contains("ACTIONS_RUNNER_PREFLIGHT_DEADLINE="));
    }

    #[test]
    fn grace_below_ttl_is_refused() {
        let (s, e) = env(&[
            ("ACTIONS_RUNNER_PREFLIGHT_CACHE_TTL_MS", "7200000"),
            ("ACTIONS_RUNNER_PREFLIGHT_CACHE_GRACE_MS", "60000"),
        ]);
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].problem, Problem::BelowTtl);
        assert_eq!(s.cache.ttl, Duration::from_secs(7200));
        assert_eq!(s.cache.grace, CachePolicy::new().grace);
    }

    #[test]
    fn readme_lists_every_setting_with_its_default() {
        let readme = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"));
        for v in VARIABLES {
            let row = format!(
                "| `{}` | {} | {} | {} |",
                v.name, v.default, v.accepts, v.meaning
            );
            assert!(readme.contains(&row), "README.md lacks the row:\n{row}");
        }
    }

    #[test]
    fn long_values_are_shortened_in_errors() {
        let long = "9".repeat(500);
        let (_, e) = Settings::from_env([("ACTIONS_RUNNER_PREFLIGHT_DEADLINE_MS", long.as_str())]);
        assert_eq!(e[0].value.len(), 64);
    }

    #[test]
    fn a_value_that_is_not_text_is_named_and_the_default_used() {
        let (s, errors) = Settings::from_env([
            (
                "ACTIONS_RUNNER_PREFLIGHT_DEADLINE_MS",
                EnvValue::NotText("object"),
            ),
            ("ACTIONS_RUNNER_PREFLIGHT_MAX_ATTEMPTS", EnvValue::Text("4")),
        ]);
        assert_eq!(s.backoff.deadline, Backoff::new().deadline);
        assert_eq!(s.backoff.max_attempts, 4);
        assert_eq!(errors.len(), 1);
        let text = errors[0].to_string();
        assert!(
            text.starts_with("ACTIONS_RUNNER_PREFLIGHT_DEADLINE_MS="),
            "{text}"
        );
        assert!(
            text.contains("a value of type object, not a string, number or boolean"),
            "{text}"
        );
        assert!(text.contains("using the default"), "{text}");
    }
}

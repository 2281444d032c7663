//! The check itself: a sans-I/O state machine with a three-way outcome.
//!
//! The machine never sleeps, reads a clock, or touches a socket or a file.
//! The caller (the JS shim, the replay, a test) drives it:
//!
//! ```text
//! let mut check = Preflight::new(settings, &permissions, namespace, identity, cached, now)?;
//! loop {
//!     match check.poll(now) {
//!         Action::Send { probe, attempt, request, timeout_ms } => start it; report with on_result
//!         Action::Warn { message } => print it, poll again
//!         Action::Wait { until_ms } => sleep until then or until a request settles
//!         Action::Done { outcome } => act on it; stop
//!     }
//! }
//! ```
//!
//! Inputs are [`Preflight::on_result`] (what a request returned) and the time
//! given to every call; outputs are the [`Action`]s `poll` returns. Call
//! `poll` until it returns `Wait` or `Done`: each call returns at most one
//! `Send` or `Warn`.
//!
//! Every required permission is one probe (one SelfSubjectAccessReview). By
//! default one more probe goes first: a SelfSubjectRulesReview, whose rules
//! prove what they can ([`crate::rules`]); only the permissions it does not
//! prove are then asked, in parallel, each with its own [`Schedule`]. If the
//! rules review is refused (a fatal error such as 404 from an old server, or
//! [`RULES_REFUSALS_BEFORE_FALLBACK`] error answers such as 403 from a
//! cluster that forbids it),
//! every permission is asked. Each
//! `Send` builds a fresh request body for that probe and attempt, so a retry
//! can never submit another probe's verb.
//!
//! The outcome, decided once nothing is in flight:
//! - any definitive `allowed: false` -> [`Verdict::Denied`] naming every
//!   permission that was denied; nothing is cached and the record for this
//!   key is to be deleted. A denial wins over everything else.
//! - a fatal error -> [`Verdict::Error`], never retried.
//! - a probe out of attempts, or the deadline -> a grace record if there is
//!   one ([`Verdict::Allowed`] from [`Source::GraceCache`], with a warning),
//!   else [`Verdict::Inconclusive`], whose message says it is NOT a denial.
//! - every probe allowed -> [`Verdict::Allowed`] and the record to write.
//!
//! Once a probe is denied, exhausted or fatal, no new attempt starts; the
//! requests in flight are awaited (each is bounded by its timeout), so a
//! denial that is on its way is not lost.
//!
//! Two variants, off by default (the incident replay did not earn them a
//! place, see the README):
//! - hedging (`hedge_after`, [`crate::hedge`]): a review unanswered after
//!   the delay is sent once more, under a request number of its own; the
//!   first answer wins and the other is `Stale`; a failure of one copy
//!   waits for the other. Hedges count as requests, not as attempts.
//! - a retry quota (`retry_quota`, [`crate::retry_quota`]): a token bucket
//!   per check; a retry (or hedge) the bucket cannot pay for is not made,
//!   and the check ends as inconclusive (never denied) saying why.

use std::time::Duration;

use thiserror::Error;

use crate::cache::{self, CacheKey, CacheState};
use crate::classify::{classify, request_cannot_be_sent, Class, ErrorFacts};
use crate::config::{EnvValue, OnInconclusive, SettingError, Settings};
use crate::hedge::{AfterFailure, Attempt};
use crate::identity::Identity;
use crate::millis;
use crate::permission::{self, Permission, PermissionError, PermissionSpec};
use crate::random::RandomSource;
use crate::retry_quota::{self, RetryQuota};
use crate::review_answer::{self, AccessAnswer, Malformed};
use crate::rules::{self, RulesStatus};
use crate::runner_key;
use crate::schedule::Schedule;
use crate::text::{self, quoted, seconds};

/// What the caller must do next.
#[must_use]
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Start this request now, abandon it after `timeout_ms`, and report
    /// its result with [`Preflight::on_result`] (`probe`, `attempt`). Then
    /// poll again.
    Send {
        /// Which probe.
        probe: usize,
        /// Which request of that probe, from 1: its attempt number, or for
        /// a hedge ([`crate::hedge`]) a number of its own. Report the
        /// result under it.
        attempt: u32,
        /// What to send.
        request: Request,
        /// Abort the request after this long and report it as timed out.
        timeout_ms: u64,
    },
    /// Print this warning (to the job log), then poll again.
    Warn {
        /// The text.
        message: String,
    },
    /// Print this at debug level (shown when step debug logging is on),
    /// then poll again: one line per attempt and one per check.
    Debug {
        /// The text.
        message: String,
    },
    /// Nothing to do until `until_ms` (Unix epoch ms) or until a request
    /// settles, whichever comes first; then poll again.
    Wait {
        /// When to poll again at the latest.
        until_ms: u64,
    },
    /// The check is over. Abort anything still in flight; every later poll
    /// returns the same outcome.
    Done {
        /// What was decided.
        outcome: Outcome,
    },
}

/// The request a `Send` asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// POST this SelfSubjectAccessReview; report `Reviewed`.
    AccessReview(AccessReview),
    /// POST this SelfSubjectRulesReview; report `RulesReviewed`.
    RulesReview(RulesReview),
    /// Call the generic function ([`Preflight::for_call`]); report `Succeeded`.
    Call,
}

/// A SelfSubjectRulesReview body, exactly as the API expects it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RulesReview {
    /// `authorization.k8s.io/v1`
    pub api_version: String,
    /// `SelfSubjectRulesReview`
    pub kind: String,
    /// What is asked.
    pub spec: RulesReviewSpec,
}

/// The spec of a [`RulesReview`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RulesReviewSpec {
    /// The namespace whose rules are asked for.
    pub namespace: String,
}

impl RulesReview {
    fn new(namespace: &str) -> Self {
        RulesReview {
            api_version: "authorization.k8s.io/v1".into(),
            kind: "SelfSubjectRulesReview".into(),
            spec: RulesReviewSpec {
                namespace: namespace.into(),
            },
        }
    }
}

/// A SelfSubjectAccessReview body, exactly as the API expects it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessReview {
    /// `authorization.k8s.io/v1`
    pub api_version: String,
    /// `SelfSubjectAccessReview`
    pub kind: String,
    /// What is asked.
    pub spec: AccessReviewSpec,
}

/// The spec of an [`AccessReview`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessReviewSpec {
    /// The permission asked about.
    pub resource_attributes: ResourceAttributes,
}

/// The resource attributes of an [`AccessReview`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceAttributes {
    /// Namespace checked.
    pub namespace: String,
    /// API group; `""` for core.
    pub group: String,
    /// Resource.
    pub resource: String,
    /// Subresource, `""` for none.
    pub subresource: String,
    /// Verb.
    pub verb: String,
}

impl AccessReview {
    fn new(namespace: &str, p: &Permission) -> Self {
        AccessReview {
            api_version: "authorization.k8s.io/v1".into(),
            kind: "SelfSubjectAccessReview".into(),
            spec: AccessReviewSpec {
                resource_attributes: ResourceAttributes {
                    namespace: namespace.into(),
                    group: p.group.clone(),
                    resource: p.resource.clone(),
                    subresource: p.subresource.clone(),
                    verb: p.verb.clone(),
                },
            },
        }
    }
}

/// What a request returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProbeResult {
    /// The review answered: `status.allowed`.
    Reviewed {
        /// The API's verdict for this permission.
        allowed: bool,
        /// `status.reason`, if any (kept for the denial message).
        reason: Option<String>,
    },
    /// The rules review answered: its `status`.
    RulesReviewed {
        /// The review's status.
        status: RulesStatus,
    },
    /// An access review answered (2xx): its body, as the server sent it.
    /// The core reads it ([`crate::review_answer`]); a body without a
    /// boolean `status.allowed` is a malformed answer.
    AccessBody {
        /// The response body.
        body: String,
    },
    /// The rules review answered (2xx): its body, as the server sent it. A
    /// body whose fields are not of their documented types proves nothing.
    RulesBody {
        /// The response body.
        body: String,
    },
    /// A generic call ([`Preflight::for_call`]) succeeded.
    Succeeded,
    /// The request failed; the facts the shim saw.
    Failed {
        /// Normalized error facts.
        facts: ErrorFacts,
    },
}

/// What [`Preflight::on_result`] did with a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accepted {
    /// It changed the check.
    Applied,
    /// It was for an attempt that is no longer current (already timed out,
    /// or the check is over) and was ignored.
    Stale,
}

/// A result the machine cannot take.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ResultError {
    /// No such probe.
    #[error("no probe {0} in this check")]
    UnknownProbe(usize),
    /// A result of the wrong kind for the probe (e.g. `succeeded` for an
    /// access review, which must say allowed or not).
    #[error("probe {0} got a result of the wrong kind for its request")]
    WrongResultKind(usize),
}

/// The verdict of a check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Every permission is granted (or a usable record says so).
    Allowed,
    /// At least one permission was definitively denied.
    Denied,
    /// The API gave no definitive answer in time. NOT a denial.
    Inconclusive,
    /// A fatal, non-retryable error.
    Error,
}

/// Where an `allowed` verdict came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// This check's reviews.
    Reviews,
    /// A record younger than the TTL: no API call was made.
    Cache,
    /// A record past the TTL but within grace, used because the API could
    /// not be reached.
    GraceCache,
}

/// The result of a check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The verdict.
    pub verdict: Verdict,
    /// For `allowed`: where it came from.
    pub source: Option<Source>,
    /// For `denied`: exactly the permissions the API denied.
    pub missing: Vec<Permission>,
    /// One line a person can act on (printed for every verdict but a plain
    /// `allowed`).
    pub message: String,
    /// Warnings to print (cache problems, grace use).
    pub warnings: Vec<String>,
    /// The record to write to the cache file, if any.
    pub record: Option<String>,
    /// True when the cache file for this key must be deleted (a denial).
    pub delete_record: bool,
    /// For `inconclusive`: the step goes on anyway
    /// (`ACTIONS_RUNNER_PREFLIGHT_ON_INCONCLUSIVE=proceed`); the warnings
    /// say so. Never set for any other verdict.
    pub proceed: bool,
    /// The last transient error seen, if any.
    pub last_error: Option<String>,
    /// Requests started by this check.
    pub requests: u32,
    /// Permissions the rules review proved (no access review needed).
    pub proven_by_rules: u32,
    /// Time from the start of the check to the verdict, in ms.
    pub elapsed_ms: u64,
}

/// A check that cannot start.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SetupError {
    /// The permission table is unusable.
    #[error(transparent)]
    Permissions(#[from] PermissionError),
    /// The namespace is empty or not a Kubernetes name.
    #[error("invalid namespace {}", quoted(.0))]
    Namespace(String),
}

#[derive(Debug, Clone)]
enum Probe {
    Access(Permission),
    Rules,
    Call,
}

#[derive(Debug, Clone)]
enum State {
    /// The next attempt may start at this time.
    Due {
        at_ms: u64,
    },
    /// An attempt is in flight: its request, and its hedge if one was sent.
    InFlight(Attempt),
    /// Waiting for the rules review to say whether this is needed.
    Blocked,
    Allowed,
    /// Proven by the rules review: no request needed.
    Proven,
    Denied,
    /// The rules review was refused; the access reviews go ahead instead.
    Skipped,
    /// Out of attempts (or stopped because the check is ending).
    Exhausted,
    Fatal(String),
}

#[derive(Debug, Clone)]
struct ProbeRun {
    probe: Probe,
    schedule: Schedule,
    state: State,
    /// Requests sent for this probe: the last request number given out
    /// (hedges have their own).
    attempt: u32,
    /// Retry-quota tokens the next attempt took when it was scheduled.
    tokens_for_next: u32,
    /// Answers `allowed: false` with an evaluation error so far.
    evaluation_errors: u32,
    /// The last evaluation error the API gave for this probe.
    evaluation_error: Option<String>,
}

/// One preflight check (or one generic call). See the module docs.
#[derive(Debug, Clone)]
pub struct Preflight {
    settings: Settings,
    namespace: String,
    key: Option<CacheKey>,
    cache: CacheState,
    probes: Vec<ProbeRun>,
    random: RandomSource,
    started_ms: u64,
    deadline_ms: u64,
    latest_ms: u64,
    /// No new attempts: a probe was denied, exhausted or fatal.
    stopping: bool,
    requests: u32,
    last_error: Option<String>,
    /// Warnings not yet returned by `poll`, oldest first (a handful at most).
    pending_warnings: Vec<String>,
    /// Debug lines not yet returned by `poll`, oldest first.
    pending_debug: Vec<String>,
    warnings: Vec<String>,
    warned_unreachable: bool,
    warned_evaluation_error: bool,
    /// Error answers (an HTTP status) to the rules review so far.
    rules_refusals: u32,
    /// The check's retry token bucket, when the quota is on.
    quota: Option<RetryQuota>,
    /// A retry was refused because the bucket could not pay for it.
    quota_spent: bool,
    /// Hedged requests sent (counted in `requests` too).
    hedges: u32,
    outcome: Option<Outcome>,
}

/// How many error answers (a 403, a 5xx, a 429: anything with an HTTP
/// status) the rules review may get, in all, before the check gives up on it
/// and asks one access review per permission instead.
///
/// A 403 to the rules review is most often the unwarmed apiserver's
/// transient 403 (the default `system:basic-user` role lets every account
/// create rules reviews), so it is retried like one: falling back at the
/// first 403 sent 13 reviews per waiting check into the recovery window, and
/// the incident replay measured a higher peak than with no rules review at
/// all. But a server that answers and keeps refusing only the rules review
/// (a cluster that forbids it, a broken aggregation layer) must not make the
/// fast path worse than no fast path: after this many answers, fall back.
/// Connection failures (no answer at all) and 2xx answers whose body was cut
/// off do not count: access reviews would fail the same way. Nor do
/// throttled answers (429, 503): a server that sheds load must never make
/// the check send more requests.
pub const RULES_REFUSALS_BEFORE_FALLBACK: u32 = 3;

/// How many answers `allowed: false` with an `evaluationError` (and no
/// outright `denied`) one permission may get before they count as a denial.
/// Such an answer means no authorizer allowed the request and one of them
/// failed: a webhook that is down (transient, often during the same
/// control-plane trouble this package rides through), or RBAC finding a
/// binding to a missing role (permanent, and a real denial). A few quick
/// retries tell the two apart without holding a real denial for the whole
/// deadline; the denial then quotes the API's error.
pub const EVALUATION_ERROR_ANSWERS: u32 = 3;

/// What a result says, once read (see [`Preflight::on_result`]).
enum Answer {
    Failed(ErrorFacts),
    Succeeded,
    Access(AccessAnswer),
    Rules(RulesStatus),
    Malformed(Malformed),
}

impl Preflight {
    /// A permission check of `permissions` in `namespace`.
    ///
    /// `identity` binds the cache record (`None`: caching off); `cached` is
    /// the cache file's content, if there is one; `now_ms` is Unix epoch ms.
    pub fn new(
        settings: Settings,
        permissions: &[PermissionSpec],
        namespace: &str,
        identity: Option<Identity>,
        cached: Option<&[u8]>,
        now_ms: u64,
    ) -> Result<Preflight, SetupError> {
        let permissions = permission::flatten(permissions)?;
        check_namespace(namespace)?;
        let key = identity
            .filter(|_| settings.cache_enabled)
            .map(|identity| CacheKey {
                namespace: namespace.to_string(),
                identity,
                permissions: permission::fingerprint(&permissions),
            });
        let cache = match &key {
            Some(key) => cache::judge(cached, key, &settings.cache, now_ms),
            None => CacheState::Unusable(cache::Unusable::Missing),
        };
        let rules_first = settings.rules_review;
        let mut probes: Vec<Probe> = permissions.into_iter().map(Probe::Access).collect();
        if rules_first {
            probes.push(Probe::Rules);
        }
        let mut check = Preflight::start(settings, namespace, key, cache, probes, now_ms);
        if rules_first {
            for run in &mut check.probes {
                if let Probe::Access(_) = run.probe {
                    run.state = State::Blocked;
                }
            }
        }
        if let CacheState::Unusable(why) = &check.cache {
            if why.deserves_warning() {
                check.warnings.push(format!(
                    "Ignoring this job's cached permission verdict: {}. Asking the Kubernetes API instead.",
                    why.reason()
                ));
            }
        }
        if let CacheState::Fresh { .. } = check.cache {
            let outcome = check.finish(Verdict::Allowed, Some(Source::Cache), now_ms);
            check.outcome = Some(outcome);
        }
        Ok(check)
    }

    /// A check configured from `ACTIONS_RUNNER_PREFLIGHT_*` variables in
    /// `env`, for the service account whose credential (bearer token, or
    /// client key) is given. Bad settings and a missing credential become
    /// warnings (`Warn` actions), never errors.
    ///
    /// The record is signed with the token-derived key
    /// ([`Identity::from_credential`]); [`Preflight::from_env_keyed`] signs
    /// it with the runner key.
    pub fn from_env<'a, V: Into<EnvValue<'a>>>(
        env: impl IntoIterator<Item = (&'a str, V)>,
        permissions: &[PermissionSpec],
        namespace: &str,
        credential: Option<&[u8]>,
        cached: Option<&[u8]>,
        now_ms: u64,
    ) -> Result<Preflight, SetupError> {
        Preflight::from_env_keyed(
            env,
            permissions,
            namespace,
            credential,
            None,
            cached,
            now_ms,
        )
    }

    /// Like [`Preflight::from_env`], with the shim's report on the runner
    /// key file ([`crate::runner_key`]), found where `HOME` or the
    /// `KEY_FILE` setting in `env` puts it. A usable key signs the record
    /// (it then survives token rotation); otherwise a warning names the
    /// file and the reason, and the token-derived key signs it.
    pub fn from_env_keyed<'a, V: Into<EnvValue<'a>>>(
        env: impl IntoIterator<Item = (&'a str, V)>,
        permissions: &[PermissionSpec],
        namespace: &str,
        credential: Option<&[u8]>,
        runner_key: Option<&runner_key::KeyFileReport>,
        cached: Option<&[u8]>,
        now_ms: u64,
    ) -> Result<Preflight, SetupError> {
        let env: Vec<(&str, EnvValue<'a>)> = env.into_iter().map(|(k, v)| (k, v.into())).collect();
        Preflight::keyed(
            &env,
            permissions,
            namespace,
            credential,
            runner_key,
            cached,
            now_ms,
        )
    }

    fn keyed(
        env: &[(&str, EnvValue<'_>)],
        permissions: &[PermissionSpec],
        namespace: &str,
        credential: Option<&[u8]>,
        runner_key: Option<&runner_key::KeyFileReport>,
        cached: Option<&[u8]>,
        now_ms: u64,
    ) -> Result<Preflight, SetupError> {
        let (settings, errors) = Settings::from_env_values(env);
        let home = env.iter().find_map(|(k, v)| match v {
            EnvValue::Text(home) if *k == "HOME" => Some(*home),
            _ => None,
        });
        let mut key_warning = None;
        let identity = credential.and_then(|credential| {
            let report = runner_key.filter(|_| settings.cache_enabled)?;
            let secret = runner_key::location(&settings, home)
                .map_err(|problem| (None, problem))
                .and_then(|at| runner_key::judge(report).map_err(|p| (Some(at.file), p)));
            match secret {
                Ok(secret) => Identity::with_runner_secret(credential, &secret),
                Err((file, problem)) => {
                    key_warning = Some(runner_key::fallback_warning(file.as_deref(), &problem));
                    None
                }
            }
        });
        let identity = identity.or_else(|| credential.and_then(Identity::from_credential));
        let no_credential = identity.is_none() && settings.cache_enabled;
        let mut check = Preflight::new(settings, permissions, namespace, identity, cached, now_ms)?;
        check.queue_setting_warnings(errors);
        check.pending_warnings.extend(key_warning);
        if no_credential {
            check.pending_warnings.push(
                "No service-account token or client key found in the kubeconfig: the permission verdict will not be cached for later steps.".into(),
            );
        }
        Ok(check)
    }

    /// A generic call configured from `env`, like [`Preflight::from_env`].
    pub fn call_from_env<'a, V: Into<EnvValue<'a>>>(
        env: impl IntoIterator<Item = (&'a str, V)>,
        now_ms: u64,
    ) -> Preflight {
        let env: Vec<(&str, EnvValue<'a>)> = env.into_iter().map(|(k, v)| (k, v.into())).collect();
        let (settings, errors) = Settings::from_env_values(&env);
        let mut check = Preflight::for_call(settings, now_ms);
        check.queue_setting_warnings(errors);
        check
    }

    fn queue_setting_warnings(&mut self, errors: Vec<SettingError>) {
        self.pending_warnings
            .extend(errors.iter().map(|e| e.to_string()));
    }

    /// A generic call with the same classifier and schedule: one probe, no
    /// cache. `Send` actions carry no review; report `succeeded` or `failed`.
    pub fn for_call(settings: Settings, now_ms: u64) -> Preflight {
        let cache = CacheState::Unusable(cache::Unusable::Missing);
        Preflight::start(settings, "", None, cache, vec![Probe::Call], now_ms)
    }

    fn start(
        settings: Settings,
        namespace: &str,
        key: Option<CacheKey>,
        cache: CacheState,
        probes: Vec<Probe>,
        now_ms: u64,
    ) -> Preflight {
        let random = match settings.seed {
            Some(seed) => RandomSource::seeded(seed),
            None => RandomSource::from_os(),
        };
        let deadline_ms = now_ms.saturating_add(millis(settings.backoff.deadline));
        let probes = probes
            .into_iter()
            .map(|probe| ProbeRun {
                probe,
                schedule: Schedule::new(settings.backoff),
                state: State::Due { at_ms: now_ms },
                attempt: 0,
                tokens_for_next: 0,
                evaluation_errors: 0,
                evaluation_error: None,
            })
            .collect();
        let quota = settings.retry_quota.map(RetryQuota::new);
        Preflight {
            settings,
            namespace: namespace.to_string(),
            key,
            cache,
            probes,
            random,
            started_ms: now_ms,
            deadline_ms,
            latest_ms: now_ms,
            stopping: false,
            requests: 0,
            last_error: None,
            pending_warnings: Vec::new(),
            pending_debug: Vec::new(),
            warnings: Vec::new(),
            warned_unreachable: false,
            warned_evaluation_error: false,
            rules_refusals: 0,
            quota,
            quota_spent: false,
            hedges: 0,
            outcome: None,
        }
    }

    /// The number of probes (reviews) this check runs.
    pub fn probe_count(&self) -> usize {
        self.probes.len()
    }

    /// The cache's state as judged when the check started.
    pub fn cache_state(&self) -> &CacheState {
        &self.cache
    }

    /// Hedged requests sent so far (they are counted in the outcome's
    /// `requests` too).
    pub fn hedges(&self) -> u32 {
        self.hedges
    }

    /// The retry quota's bucket, when the quota is on.
    pub fn retry_quota(&self) -> Option<&RetryQuota> {
        self.quota.as_ref()
    }

    /// The cache file name for this check's key, if caching is on.
    pub fn cache_file_name(&self) -> Option<String> {
        self.key.as_ref().map(cache::file_name)
    }

    /// True when the check was answered as it started (a fresh record):
    /// the first poll is `Done` with no request.
    pub fn is_decided(&self) -> bool {
        self.outcome.is_some()
    }

    /// Shortens the check's deadline to `budget` from its start (a process
    /// that waited its turn at the lock has less time left). Takes effect
    /// only before the first poll; a longer budget changes nothing.
    pub fn limit_budget(&mut self, budget: Duration) {
        if self.requests > 0 || budget >= self.settings.backoff.deadline {
            return;
        }
        self.settings.backoff.deadline = budget;
        self.deadline_ms = self.started_ms.saturating_add(millis(budget));
        for run in &mut self.probes {
            run.schedule = Schedule::new(self.settings.backoff);
        }
    }

    /// The next thing to do. See [`Action`].
    pub fn poll(&mut self, now_ms: u64) -> Action {
        let now = self.observe(now_ms);
        if self.outcome.is_none() {
            self.expire_timeouts(now);
        }
        if !self.pending_warnings.is_empty() {
            let message = self.pending_warnings.remove(0);
            return Action::Warn { message };
        }
        if self.outcome.is_none() {
            if now >= self.deadline_ms {
                self.stop_everything();
            }
            self.outcome = self.try_conclude(now);
        }
        if !self.pending_debug.is_empty() {
            let message = self.pending_debug.remove(0);
            return Action::Debug { message };
        }
        if let Some(outcome) = &self.outcome {
            return Action::Done {
                outcome: outcome.clone(),
            };
        }
        if let Some(send) = self.next_send(now) {
            return send;
        }
        Action::Wait {
            until_ms: self.next_wake(),
        }
    }

    /// Reports what attempt `attempt` of probe `probe` returned, at `now_ms`.
    pub fn on_result(
        &mut self,
        probe: usize,
        attempt: u32,
        now_ms: u64,
        result: ProbeResult,
    ) -> Result<Accepted, ResultError> {
        let now = self.observe(now_ms);
        let run = self
            .probes
            .get(probe)
            .ok_or(ResultError::UnknownProbe(probe))?;
        let current = matches!(&run.state, State::InFlight(a) if a.holds(attempt));
        if !current || self.outcome.is_some() {
            return Ok(Accepted::Stale);
        }
        let answer = match (&run.probe, result) {
            (_, ProbeResult::Failed { facts }) => Answer::Failed(facts),
            (Probe::Call, ProbeResult::Succeeded) => Answer::Succeeded,
            (Probe::Access(_), ProbeResult::Reviewed { allowed, reason }) => {
                Answer::Access(AccessAnswer {
                    allowed,
                    denied: false,
                    reason,
                    evaluation_error: None,
                })
            }
            (Probe::Access(_), ProbeResult::AccessBody { body }) => {
                match review_answer::access_answer(&body) {
                    Ok(answer) => Answer::Access(answer),
                    Err(why) => Answer::Malformed(why),
                }
            }
            (Probe::Rules, ProbeResult::RulesReviewed { status }) => Answer::Rules(status),
            (Probe::Rules, ProbeResult::RulesBody { body }) => {
                match review_answer::rules_answer(&body) {
                    Ok(status) => Answer::Rules(status),
                    Err(why) => Answer::Malformed(why),
                }
            }
            _ => return Err(ResultError::WrongResultKind(probe)),
        };
        if !matches!(answer, Answer::Failed(_)) {
            // The first answer wins; the other copy's, if any, is stale.
            if let (Some(quota), State::InFlight(a)) = (&mut self.quota, &run.state) {
                quota.on_answer(a.tokens_taken);
            }
        }
        let what = match &answer {
            Answer::Failed(_) => None,
            Answer::Succeeded => Some("succeeded".to_string()),
            Answer::Access(a) if a.allowed => Some("allowed".to_string()),
            Answer::Access(a) => Some(match (&a.evaluation_error, a.denied) {
                (Some(e), false) => format!(
                    "allowed: false with an evaluation error, {}",
                    quoted(&text::clip(e, 200))
                ),
                _ => "denied".to_string(),
            }),
            Answer::Rules(status) => Some(format!(
                "{} rules{}",
                status.resource_rules.len(),
                if status.incomplete {
                    ", incomplete"
                } else {
                    ""
                }
            )),
            Answer::Malformed(Malformed(why)) => Some(format!("a malformed answer ({why})")),
        };
        match answer {
            Answer::Failed(facts) => self.copy_failed(probe, attempt, facts, now),
            Answer::Succeeded => self.probes[probe].state = State::Allowed,
            Answer::Access(answer) => self.on_access_answer(probe, answer, now),
            Answer::Rules(status) => {
                self.probes[probe].state = State::Allowed;
                self.apply_rules(&status, now);
            }
            Answer::Malformed(Malformed(why)) => {
                if matches!(self.probes[probe].probe, Probe::Rules) {
                    // Fields of the wrong type prove nothing: ask every
                    // permission instead (issue 10).
                    self.pending_warnings.push(format!(
                        "The SelfSubjectRulesReview's answer does not have the documented types ({why}); it proves nothing, so each permission is asked with its own access review."
                    ));
                    self.skip_rules(probe, now);
                } else {
                    self.probes[probe].state = State::Fatal(format!(
                        "the SelfSubjectAccessReview's answer is malformed ({why})"
                    ));
                    self.stopping = true;
                }
            }
        }
        if let Some(what) = what {
            self.debug_attempt(probe, attempt, "answered", &what, now);
        }
        Ok(Accepted::Applied)
    }

    /// An access review answered. `allowed: false` is a denial, unless no
    /// authorizer said no outright (`denied` is not true) and one of them
    /// failed (`evaluationError`): then the answer may be the failure's,
    /// not RBAC's. Such an answer is retried like a transient error, up to
    /// [`EVALUATION_ERROR_ANSWERS`] times; if it persists, it is a denial
    /// whose message quotes the API's error.
    fn on_access_answer(&mut self, probe: usize, answer: AccessAnswer, now: u64) {
        if answer.allowed {
            self.probes[probe].state = State::Allowed;
            return;
        }
        if let (false, Some(error)) = (answer.denied, answer.evaluation_error) {
            let run = &mut self.probes[probe];
            run.evaluation_errors += 1;
            let error = text::clip(&error, 300);
            let evidence = format!(
                "the API answered allowed: false with an evaluation error: {}",
                quoted(&error)
            );
            run.evaluation_error = Some(error);
            if run.evaluation_errors < EVALUATION_ERROR_ANSWERS && !self.stopping {
                if !self.warned_evaluation_error {
                    self.warned_evaluation_error = true;
                    self.pending_warnings.push(format!(
                        "An authorizer failed while the Kubernetes API checked a permission ({evidence}); asking again before calling it a denial."
                    ));
                }
                self.last_error = Some(evidence.clone());
                let class = Class::Transient { why: evidence };
                self.retry_later(probe, &ErrorFacts::default(), &class, now);
                return;
            }
        }
        self.probes[probe].state = State::Denied;
        self.stopping = true;
    }

    /// The rules review answered: what it proves needs no request; the
    /// rest go ahead now.
    fn apply_rules(&mut self, status: &RulesStatus, now: u64) {
        let blocked: Vec<usize> = (0..self.probes.len())
            .filter(|&i| matches!(self.probes[i].state, State::Blocked))
            .collect();
        let permissions: Vec<Permission> = blocked
            .iter()
            .filter_map(|&i| match &self.probes[i].probe {
                Probe::Access(p) => Some(p.clone()),
                _ => None,
            })
            .collect();
        let proofs = rules::proven(status, &permissions);
        for (&index, proven) in blocked.iter().zip(proofs) {
            self.probes[index].state = if proven {
                State::Proven
            } else {
                State::Due { at_ms: now }
            };
        }
    }

    /// The rules review was refused: ask every permission instead.
    fn skip_rules(&mut self, probe: usize, now: u64) {
        self.probes[probe].state = State::Skipped;
        for run in &mut self.probes {
            if matches!(run.state, State::Blocked) {
                run.state = State::Due { at_ms: now };
            }
        }
    }

    /// Request `request` of probe `probe` failed. If the other copy of its
    /// attempt (a hedge, or the request a hedge was for) is still out, the
    /// attempt goes on: that copy may still answer. Else the attempt failed.
    fn copy_failed(&mut self, probe: usize, request: u32, facts: ErrorFacts, now: u64) {
        let class = classify(&facts, now, self.settings.max_retry_after);
        let fatal = matches!(class, Class::Fatal { .. });
        let State::InFlight(attempt) = &mut self.probes[probe].state else {
            return;
        };
        let what = format!("{}, {}", class.kind_name(), describe(&class, &facts));
        match attempt.fail(request, &facts, fatal) {
            AfterFailure::StillOut => {
                if !fatal {
                    self.note_transient(describe(&class, &facts));
                }
            }
            AfterFailure::Failed(facts) => self.on_failure(probe, &facts, now),
        }
        self.debug_attempt(probe, request, "failed", &what, now);
    }

    /// One debug line for request `request` of `probe`: what came back, and
    /// what the probe does next (read from its state, after the result).
    fn debug_attempt(&mut self, probe: usize, request: u32, verb: &str, what: &str, now: u64) {
        let run = &self.probes[probe];
        let name = match &run.probe {
            Probe::Access(p) => format!("access review of {p}"),
            Probe::Rules => "rules review".to_string(),
            Probe::Call => "call".to_string(),
        };
        let next = match &run.state {
            State::Due { at_ms } => {
                format!("next attempt in {}", seconds(at_ms.saturating_sub(now)))
            }
            State::InFlight(_) => "its other copy is still out".to_string(),
            State::Blocked => "waiting for the rules review".to_string(),
            State::Allowed | State::Proven => "done".to_string(),
            State::Denied => "denied".to_string(),
            State::Skipped => "each permission is asked with an access review instead".to_string(),
            State::Exhausted => "no more attempts".to_string(),
            State::Fatal(_) => "not retried".to_string(),
        };
        let left = seconds(self.deadline_ms.saturating_sub(now));
        self.pending_debug.push(format!(
            "k8s-auth-preflight: {name}, request {request}: {verb}: {what}; {next}; {left} of the deadline left"
        ));
    }

    /// A transient failure: the last error, and the warning (once).
    fn note_transient(&mut self, evidence: String) {
        if !self.warned_unreachable {
            self.warned_unreachable = true;
            self.pending_warnings.push(format!(
                "The Kubernetes API did not answer a permission check ({evidence}); retrying for up to {} s. This is not a permissions problem.",
                self.settings.backoff.deadline.as_secs()
            ));
        }
        self.last_error = Some(evidence);
    }

    fn on_failure(&mut self, probe: usize, facts: &ErrorFacts, now: u64) {
        let class = classify(facts, now, self.settings.max_retry_after);
        let evidence = describe(&class, facts);
        if matches!(self.probes[probe].probe, Probe::Rules) && !self.stopping {
            if counts_as_refusal(&class, facts) {
                self.rules_refusals += 1;
            }
            // A request the client cannot send at all (a bad credential)
            // would fail the same way as an access review: no fall-back.
            let fatal = matches!(class, Class::Fatal { .. }) && !request_cannot_be_sent(facts);
            if fatal || self.rules_refusals >= RULES_REFUSALS_BEFORE_FALLBACK {
                // An old server (404), or a server that keeps refusing the
                // rules review (403, 5xx, ...): ask every permission.
                self.skip_rules(probe, now);
                return;
            }
        }
        if let Class::Fatal { .. } = class {
            self.probes[probe].state = State::Fatal(evidence);
            self.stopping = true;
            return;
        }
        self.note_transient(evidence);
        self.retry_later(probe, facts, &class, now);
    }

    /// Schedules the next attempt of `probe` after a failure of class
    /// `class`, or ends the probe (exhausted) when the schedule, the retry
    /// quota or the end of the check says so.
    fn retry_later(&mut self, probe: usize, facts: &ErrorFacts, class: &Class, now: u64) {
        if self.stopping {
            self.probes[probe].state = State::Exhausted;
            return;
        }
        let elapsed = Duration::from_millis(now - self.started_ms);
        let run = &mut self.probes[probe];
        let delay = match class {
            Class::Throttled {
                retry_after_ms: Some(ms),
                ..
            } => run.schedule.next_delay_after_pushback(
                elapsed,
                Duration::from_millis(*ms),
                &mut self.random,
            ),
            _ => run.schedule.next_delay(elapsed, &mut self.random),
        };
        match delay {
            Some(delay) => {
                if let Some(quota) = &mut self.quota {
                    let cost = RetryQuota::cost_of(facts);
                    if !quota.try_take(cost) {
                        // Most of this check's requests fail: stop
                        // retrying, as the AWS SDKs' retry quota does.
                        run.state = State::Exhausted;
                        self.stopping = true;
                        self.quota_spent = true;
                        return;
                    }
                    run.tokens_for_next = cost;
                }
                run.state = State::Due {
                    at_ms: now + millis(delay),
                }
            }
            None => {
                run.state = State::Exhausted;
                self.stopping = true;
            }
        }
    }

    /// Time never runs backwards inside the machine.
    fn observe(&mut self, now_ms: u64) -> u64 {
        self.latest_ms = self.latest_ms.max(now_ms);
        self.latest_ms
    }

    fn expire_timeouts(&mut self, now: u64) {
        for index in 0..self.probes.len() {
            // Both copies of a hedged attempt may be due.
            while let State::InFlight(attempt) = &self.probes[index].state {
                let Some(request) = attempt.timed_out(now) else {
                    break;
                };
                let facts = ErrorFacts {
                    timed_out: true,
                    message: "request timed out".into(),
                    ..ErrorFacts::default()
                };
                self.copy_failed(index, request, facts, now);
            }
        }
    }

    fn stop_everything(&mut self) {
        self.stopping = true;
        for run in &mut self.probes {
            if matches!(
                run.state,
                State::Due { .. } | State::InFlight(_) | State::Blocked
            ) {
                run.state = State::Exhausted;
            }
        }
    }

    fn next_send(&mut self, now: u64) -> Option<Action> {
        if self.stopping {
            return None;
        }
        let remaining = self.deadline_ms.saturating_sub(now);
        let timeout_ms = millis(self.settings.request_timeout).min(remaining);
        if timeout_ms == 0 {
            return None;
        }
        if let Some(hedge) = self.next_hedge(now, timeout_ms) {
            return Some(hedge);
        }
        let index = self
            .probes
            .iter()
            .position(|run| matches!(run.state, State::Due { at_ms } if at_ms <= now))?;
        let run = &mut self.probes[index];
        run.attempt += 1;
        let hedge_after = match run.probe {
            // A generic call may not be idempotent: never sent twice at once.
            Probe::Call => None,
            _ => self.settings.hedge_after.map(millis),
        };
        let mut attempt = Attempt::start(run.attempt, now, now + timeout_ms, hedge_after);
        attempt.tokens_taken = std::mem::take(&mut run.tokens_for_next);
        run.state = State::InFlight(attempt);
        self.requests += 1;
        Some(Action::Send {
            probe: index,
            attempt: run.attempt,
            request: request_for(&run.probe, &self.namespace),
            timeout_ms,
        })
    }

    /// A hedge whose time has come ([`crate::hedge`]): the same request
    /// again, with a request number of its own.
    fn next_hedge(&mut self, now: u64, timeout_ms: u64) -> Option<Action> {
        loop {
            let index = self
                .probes
                .iter()
                .position(|run| matches!(&run.state, State::InFlight(a) if a.hedge_due(now)))?;
            let run = &mut self.probes[index];
            let State::InFlight(attempt) = &mut run.state else {
                return None;
            };
            if let Some(quota) = &mut self.quota {
                // Hedges are subject to the quota too (as in gRPC's retry
                // throttling): none when the bucket cannot pay for one.
                if !quota.try_take(retry_quota::RETRY_COST) {
                    attempt.forgo_hedge();
                    continue;
                }
                attempt.tokens_taken += retry_quota::RETRY_COST;
            }
            run.attempt += 1;
            attempt.add_hedge(run.attempt, now + timeout_ms);
            self.requests += 1;
            self.hedges += 1;
            return Some(Action::Send {
                probe: index,
                attempt: run.attempt,
                request: request_for(&run.probe, &self.namespace),
                timeout_ms,
            });
        }
    }

    fn next_wake(&self) -> u64 {
        self.probes
            .iter()
            .filter_map(|run| match &run.state {
                State::Due { at_ms } if !self.stopping => Some(*at_ms),
                State::InFlight(a) => {
                    let hedge = a.hedge_at().filter(|_| !self.stopping);
                    [a.next_timeout(), hedge].into_iter().flatten().min()
                }
                _ => None,
            })
            .fold(self.deadline_ms, u64::min)
    }

    fn try_conclude(&mut self, now: u64) -> Option<Outcome> {
        if self.stopping {
            for run in &mut self.probes {
                if matches!(run.state, State::Due { .. } | State::Blocked) {
                    run.state = State::Exhausted;
                }
            }
        }
        let busy = self.probes.iter().any(|run| {
            matches!(
                run.state,
                State::Due { .. } | State::InFlight(_) | State::Blocked
            )
        });
        if busy {
            return None;
        }
        let any = |f: fn(&State) -> bool| self.probes.iter().any(|run| f(&run.state));
        let outcome = if any(|s| matches!(s, State::Denied)) {
            self.finish(Verdict::Denied, None, now)
        } else if any(|s| matches!(s, State::Fatal(_))) {
            self.finish(Verdict::Error, None, now)
        } else if any(|s| matches!(s, State::Exhausted)) {
            match self.cache {
                CacheState::Grace { .. } => {
                    self.finish(Verdict::Allowed, Some(Source::GraceCache), now)
                }
                _ => self.finish(Verdict::Inconclusive, None, now),
            }
        } else {
            self.finish(Verdict::Allowed, Some(Source::Reviews), now)
        };
        Some(outcome)
    }

    /// Why the retries stopped early, for the inconclusive message; empty
    /// unless the retry quota stopped them.
    fn quota_note(&self) -> String {
        match &self.quota {
            Some(quota) if self.quota_spent => format!(
                "; retries stopped before the deadline: this check's retry quota of {} tokens was spent",
                quota.capacity()
            ),
            _ => String::new(),
        }
    }

    fn finish(&mut self, verdict: Verdict, source: Option<Source>, now: u64) -> Outcome {
        let elapsed_ms = now.saturating_sub(self.started_ms);
        let tried = seconds(elapsed_ms);
        let last_error = self.last_error.clone();
        let last = last_error.as_deref().unwrap_or("none");
        let mut warnings = std::mem::take(&mut self.warnings);
        let is_call = self
            .probes
            .iter()
            .all(|run| matches!(run.probe, Probe::Call));
        let mut missing = Vec::new();
        let mut record = None;
        let proceed = verdict == Verdict::Inconclusive
            && !is_call
            && self.settings.on_inconclusive == OnInconclusive::Proceed;
        let message = match (verdict, source) {
            (Verdict::Allowed, Some(Source::Cache)) => {
                "Permissions verified earlier in this job (cached verdict); no API call made.".to_string()
            }
            (Verdict::Allowed, Some(Source::GraceCache)) => {
                let age = match self.cache {
                    CacheState::Grace { age } if age.as_secs() >= 120 => format!("{} min", age.as_secs() / 60),
                    CacheState::Grace { age } => format!("{} s", age.as_secs()),
                    _ => "an unknown time".to_string(),
                };
                let text = format!(
                    "The Kubernetes API could not be reached for {tried} (last error: {last}); using this job's earlier successful permission check from {age} ago. This is not a permissions problem."
                );
                warnings.push(text.clone());
                text
            }
            (Verdict::Allowed, _) => {
                record = self.key.as_ref().map(|key| cache::record_for(key, now));
                if self.last_error.is_some() {
                    format!(
                        "Permissions verified after {} requests in {tried} (the API failed transiently: {last}).",
                        self.requests
                    )
                } else {
                    "Permissions verified.".to_string()
                }
            }
            (Verdict::Denied, _) => {
                missing = self
                    .probes
                    .iter()
                    .filter(|run| matches!(run.state, State::Denied))
                    .filter_map(|run| match &run.probe {
                        Probe::Access(p) => Some(p.clone()),
                        _ => None,
                    })
                    .collect();
                let names: Vec<String> = missing.iter().map(|p| p.to_string()).collect();
                let unchecked = self
                    .probes
                    .iter()
                    .filter(|run| matches!(run.probe, Probe::Access(_)))
                    .filter(|run| !matches!(run.state, State::Denied | State::Allowed | State::Proven))
                    .count();
                let mut text = format!("denied: {} in namespace {}", names.join(", "), quoted(&self.namespace));
                if unchecked > 0 {
                    text.push_str(&format!(" ({unchecked} other permission(s) could not be checked)"));
                }
                let evaluation_error = self
                    .probes
                    .iter()
                    .filter(|run| matches!(run.state, State::Denied))
                    .find_map(|run| run.evaluation_error.as_deref());
                if let Some(error) = evaluation_error {
                    text.push_str(&format!(
                        "; the API also reported an evaluation error, {}: an authorizer failed, and the denial may be that failure's rather than RBAC's",
                        quoted(error)
                    ));
                }
                text
            }
            (Verdict::Error, _) => {
                let why = self
                    .probes
                    .iter()
                    .find_map(|run| match &run.state {
                        State::Fatal(why) => Some(why.clone()),
                        _ => None,
                    })
                    .unwrap_or_default();
                if is_call {
                    format!("The Kubernetes API call failed with a non-retryable error: {why}.")
                } else {
                    format!("The permission check failed with a non-retryable error: {why}. It was not retried.")
                }
            }
            (Verdict::Inconclusive, _) if is_call => format!(
                "The Kubernetes API call did not succeed within {tried} ({} attempts; last error: {last}{}).",
                self.requests, self.quota_note()
            ),
            (Verdict::Inconclusive, _) if proceed => {
                let text = format!(
                    "Could not verify the service account's permissions in namespace {}: the Kubernetes API gave no definitive answer within {tried} ({} requests; last error: {last}{}); proceeding because ACTIONS_RUNNER_PREFLIGHT_ON_INCONCLUSIVE=proceed. The API will still refuse anything the service account may not do.",
                    quoted(&self.namespace), self.requests, self.quota_note()
                );
                warnings.push(text.clone());
                text
            }
            (Verdict::Inconclusive, _) => format!(
                "Could not verify the service account's permissions in namespace {}: the Kubernetes API gave no definitive answer within {tried} ({} requests; last error: {last}{}). This is NOT a permissions denial: the control plane was unreachable or unstable. Re-run the job; if this persists, check the apiserver's health, not RBAC.",
                quoted(&self.namespace), self.requests, self.quota_note()
            ),
        };
        let source_name = match source {
            Some(Source::Cache) => " from the cache",
            Some(Source::GraceCache) => " from a grace record",
            Some(Source::Reviews) => " from the reviews",
            None => "",
        };
        self.pending_debug.push(format!(
            "k8s-auth-preflight: check finished: {}{source_name}; {} requests; {tried}",
            verdict_name(verdict),
            self.requests
        ));
        Outcome {
            verdict,
            source,
            delete_record: verdict == Verdict::Denied && self.key.is_some(),
            proceed,
            missing,
            message,
            warnings,
            record,
            last_error,
            requests: self.requests,
            proven_by_rules: self
                .probes
                .iter()
                .filter(|run| matches!(run.state, State::Proven))
                .count() as u32,
            elapsed_ms,
        }
    }
}

fn verdict_name(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Allowed => "allowed",
        Verdict::Denied => "denied",
        Verdict::Inconclusive => "inconclusive",
        Verdict::Error => "error",
    }
}

/// A fresh request body for `probe` (every request, hedges included, gets
/// its own).
fn request_for(probe: &Probe, namespace: &str) -> Request {
    match probe {
        Probe::Access(p) => Request::AccessReview(AccessReview::new(namespace, p)),
        Probe::Rules => Request::RulesReview(RulesReview::new(namespace)),
        Probe::Call => Request::Call,
    }
}

/// The cache file name a check with these inputs would use, or `None` when
/// caching is off (by setting, or for want of a credential). Lets the caller
/// read the file before it builds the check.
pub fn cache_file_name<'a, V: Into<EnvValue<'a>>>(
    env: impl IntoIterator<Item = (&'a str, V)>,
    permissions: &[PermissionSpec],
    namespace: &str,
    credential: Option<&[u8]>,
) -> Result<Option<String>, SetupError> {
    let env: Vec<(&str, EnvValue<'a>)> = env.into_iter().map(|(k, v)| (k, v.into())).collect();
    let (settings, _) = Settings::from_env_values(&env);
    let permissions = permission::flatten(permissions)?;
    check_namespace(namespace)?;
    if !settings.cache_enabled {
        return Ok(None);
    }
    Ok(credential
        .and_then(Identity::from_credential)
        .map(|identity| {
            cache::file_name(&CacheKey {
                namespace: namespace.to_string(),
                identity,
                permissions: permission::fingerprint(&permissions),
            })
        }))
}

/// True when an error answer to the rules review counts toward
/// [`RULES_REFUSALS_BEFORE_FALLBACK`]: an HTTP error status that is not a
/// sign of load. A throttled answer (429, or 503 with `Retry-After`) or a 503 says
/// the server is overloaded; falling back would send 13 requests where one
/// was refused, so it is retried like any transient failure instead.
fn counts_as_refusal(class: &Class, facts: &ErrorFacts) -> bool {
    match facts.status {
        // No answer, a 2xx cut off mid-body, or an overloaded server.
        None | Some(200..=299) | Some(503) => false,
        Some(_) => !matches!(class, Class::Throttled { .. }),
    }
}

fn describe(class: &Class, facts: &ErrorFacts) -> String {
    let why = class.why();
    let detail = facts.message.trim().trim_end_matches('.');
    // An abort's message ("The user aborted a request.", "This operation was
    // aborted") depends on the client and says nothing more than the flag.
    if facts.timed_out || detail.is_empty() || detail.len() > 160 {
        why.to_string()
    } else if text::contains(detail, why) {
        detail.to_string()
    } else {
        format!("{why}: {detail}")
    }
}

fn check_namespace(namespace: &str) -> Result<(), SetupError> {
    let ok = !namespace.is_empty()
        && namespace.len() <= 253
        && namespace
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.');
    if ok {
        Ok(())
    } else {
        Err(SetupError::Namespace(namespace.chars().take(80).collect()))
    }
}

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
//!         Action::Log { level, message } => print it, poll again
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
//! prove are then asked, in parallel, each with its own [`Schedule`](crate::schedule::Schedule). If the
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
//! - hedging (`hedge_after`, [`crate::preflight::hedge`]): a review unanswered after
//!   the delay is sent once more, under a request number of its own; the
//!   first answer wins and the other is `Stale`; a failure of one copy
//!   waits for the other. Hedges count as requests, not as attempts.
//! - a retry quota (`retry_quota`, [`crate::preflight::retry_quota`]): a token bucket
//!   per check; a retry (or hedge) the bucket cannot pay for is not made,
//!   and the check ends as inconclusive (never denied) saying why.
//!
//! The code follows the machine's seams, one concept per file: the
//! requests it asks for (`action.rs`), the results it takes (`result.rs`),
//! what a failed request does (`failure.rs`), each probe's state and
//! scheduling (`probe.rs`), the rules-review fast path
//! (`rules_fast_path.rs`), the verdict and its message text
//! (`outcome.rs`), how a check is built (`setup.rs`) and its debug trail
//! (`debug.rs`). This file holds the machine's fields, its accessors and
//! its two entry points, `poll` and `on_result`.

mod action;
mod debug;
mod failure;
pub mod hedge;
mod outcome;
mod probe;
mod result;
pub mod retry_quota;
mod rules_fast_path;
mod setup;

use crate::cache::{CacheKey, CacheState};
use crate::config::Settings;
use crate::preflight::retry_quota::RetryQuota;
use crate::protocol::Level;
use crate::random::RandomSource;
use crate::retry::{SteadyClock, Trouble};
use crate::review_answer::Malformed;

pub use action::{
    AccessReview, AccessReviewSpec, Action, Request, ResourceAttributes, RulesReview,
    RulesReviewSpec,
};
pub use outcome::{Outcome, Source, Verdict};
pub use result::{Accepted, BadReport, ProbeResult, EVALUATION_ERROR_ANSWERS};
pub use rules_fast_path::RULES_REFUSALS_BEFORE_FALLBACK;
pub use setup::{cache_file_name, SetupError, NO_CREDENTIAL_WARNING};
pub(crate) use setup::{check_namespace, identity_for};

use probe::{ProbeRun, State};
use result::Answer;

/// One preflight check. See the module docs.
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
    clock: SteadyClock,
    /// No new attempts: a probe was denied, exhausted or fatal.
    stopping: bool,
    requests: u32,
    /// The failures met: the warning given once, the last error.
    trouble: Trouble,
    /// Warnings not yet returned by `poll`, oldest first (a handful at most).
    pending_warnings: Vec<String>,
    /// Debug lines not yet returned by `poll`, oldest first.
    pending_debug: Vec<String>,
    warnings: Vec<String>,
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

impl Preflight {
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

    /// True when the check was answered as it started (a fresh record):
    /// the first poll is `Done` with no request.
    pub fn is_decided(&self) -> bool {
        self.outcome.is_some()
    }

    /// The next thing to do. See [`Action`].
    pub fn poll(&mut self, now_ms: u64) -> Action {
        let now = self.clock.observe(now_ms);
        if self.outcome.is_none() {
            self.expire_timeouts(now);
        }
        if !self.pending_warnings.is_empty() {
            let message = self.pending_warnings.remove(0);
            return Action::Log {
                level: Level::Warning,
                message,
            };
        }
        if self.outcome.is_none() {
            if now >= self.deadline_ms {
                self.stop_everything();
            }
            self.outcome = self.try_conclude(now);
        }
        if !self.pending_debug.is_empty() {
            let message = self.pending_debug.remove(0);
            return Action::Log {
                level: Level::Debug,
                message,
            };
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
    ) -> Result<Accepted, BadReport> {
        let now = self.clock.observe(now_ms);
        let run = self
            .probes
            .get(probe)
            .ok_or(BadReport::UnknownProbe(probe))?;
        let current = matches!(&run.state, State::InFlight(a) if a.holds(attempt));
        if !current || self.outcome.is_some() {
            return Ok(Accepted::Stale);
        }
        let answer = Answer::read(&run.probe, result).ok_or(BadReport::WrongResultKind(probe))?;
        if !matches!(answer, Answer::Failed(_)) {
            // The first answer wins; the other copy's, if any, is stale.
            if let (Some(quota), State::InFlight(a)) = (&mut self.quota, &run.state) {
                quota.on_answer(a.tokens_taken);
            }
        }
        let what = debug::answer_summary(&answer);
        match answer {
            Answer::Failed(facts) => self.copy_failed(probe, attempt, facts, now),
            Answer::Access(answer) => self.on_access_answer(probe, answer, now),
            Answer::Rules(status) => {
                self.probes[probe].state = State::Allowed;
                self.apply_rules(&status, now);
            }
            Answer::Malformed(Malformed(why)) => self.on_malformed(probe, why, now),
        }
        if let Some(what) = what {
            self.debug_attempt(probe, attempt, "answered", &what, now);
        }
        Ok(Accepted::Applied)
    }
}

//! Each probe's state and scheduling: when its next attempt is due, its
//! request in flight (and hedge, [`crate::preflight::hedge`]), timeouts, the retry
//! quota ([`crate::preflight::retry_quota`]), and the next request to send.

use super::action::{request_for, Action};
use super::Preflight;
use crate::classify::{Class, ErrorFacts};
use crate::millis;
use crate::permission::Permission;
use crate::preflight::hedge::Attempt;
use crate::preflight::retry_quota::{self, RetryQuota};
use crate::retry::{Line, RequestNumbers};
use crate::schedule::Backoff;

/// What a probe asks.
#[derive(Debug, Clone)]
pub(super) enum Probe {
    /// One permission, with a SelfSubjectAccessReview.
    Access(Permission),
    /// The rules of the namespace, with a SelfSubjectRulesReview.
    Rules,
}

/// Where a probe stands. One per review, in place: an attempt in flight
/// (with the facts of the last failure) is the common state, so it is not
/// boxed.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub(super) enum State {
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

/// One probe: what it asks, its schedule and where it stands.
#[derive(Debug, Clone)]
pub(super) struct ProbeRun {
    pub(super) probe: Probe,
    /// Its attempts: their schedule, the check's start and deadline.
    pub(super) line: Line,
    pub(super) state: State,
    /// The numbers of its requests (hedges have their own).
    pub(super) requests: RequestNumbers,
    /// Retry-quota tokens the next attempt took when it was scheduled.
    pub(super) tokens_for_next: u32,
    /// Answers `allowed: false` with an evaluation error so far.
    pub(super) evaluation_errors: u32,
    /// The last evaluation error the API gave for this probe.
    pub(super) evaluation_error: Option<String>,
}

impl ProbeRun {
    /// A probe whose first attempt is due at `now_ms`.
    pub(super) fn new(probe: Probe, backoff: Backoff, now_ms: u64) -> ProbeRun {
        ProbeRun {
            probe,
            line: Line::new(backoff, now_ms),
            state: State::Due { at_ms: now_ms },
            requests: RequestNumbers::default(),
            tokens_for_next: 0,
            evaluation_errors: 0,
            evaluation_error: None,
        }
    }
}

impl Preflight {
    /// Schedules the next attempt of `probe` after a failure of class
    /// `class`, or ends the probe (exhausted) when the schedule, the retry
    /// quota or the end of the check says so.
    pub(super) fn retry_later(
        &mut self,
        probe: usize,
        facts: &ErrorFacts,
        class: &Class,
        now: u64,
    ) {
        if self.stopping {
            self.probes[probe].state = State::Exhausted;
            return;
        }
        let run = &mut self.probes[probe];
        match run.line.next_delay(class, now, &mut self.random) {
            Some(delay) => {
                if let Some(quota) = &mut self.quota {
                    let cost = RetryQuota::cost_of(facts);
                    if !quota.try_take(cost) {
                        // Most of this check's requests fail: stop
                        // retrying, as the AWS SDKs' retry quota does.
                        run.state = State::Exhausted;
                        self.stop();
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
                self.stop();
            }
        }
    }

    pub(super) fn expire_timeouts(&mut self, now: u64) {
        for index in 0..self.probes.len() {
            // Both copies of a hedged attempt may be due.
            while let State::InFlight(attempt) = &self.probes[index].state {
                let Some(request) = attempt.timed_out(now) else {
                    break;
                };
                self.copy_failed(index, request, ErrorFacts::own_timeout(), now);
            }
        }
    }

    /// No new attempt, and no hedge: a stopping check only waits for what
    /// is out, so the hedges' timers are cleared and no longer wake it.
    pub(super) fn stop(&mut self) {
        self.stopping = true;
        for run in &mut self.probes {
            if let State::InFlight(attempt) = &mut run.state {
                attempt.forgo_hedge();
            }
        }
    }

    pub(super) fn stop_everything(&mut self) {
        self.stop();
        for run in &mut self.probes {
            if matches!(
                run.state,
                State::Due { .. } | State::InFlight(_) | State::Blocked
            ) {
                run.state = State::Exhausted;
            }
        }
    }

    pub(super) fn next_send(&mut self, now: u64) -> Option<Action> {
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
        let request = run.requests.give_out();
        let hedge_after = self.settings.hedge_after.map(millis);
        let mut attempt = Attempt::start(request, now, now + timeout_ms, hedge_after);
        attempt.tokens_taken = std::mem::take(&mut run.tokens_for_next);
        run.state = State::InFlight(attempt);
        self.requests += 1;
        Some(Action::Send {
            probe: index,
            attempt: request,
            request: request_for(&run.probe, &self.namespace),
            timeout_ms,
        })
    }

    /// A hedge whose time has come ([`crate::preflight::hedge`]): the same request
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
            let request = run.requests.give_out();
            attempt.add_hedge(request, now + timeout_ms);
            self.requests += 1;
            self.hedges += 1;
            return Some(Action::Send {
                probe: index,
                attempt: request,
                request: request_for(&run.probe, &self.namespace),
                timeout_ms,
            });
        }
    }

    pub(super) fn next_wake(&self) -> u64 {
        self.probes
            .iter()
            .filter_map(|run| match &run.state {
                State::Due { at_ms } if !self.stopping => Some(*at_ms),
                State::InFlight(a) => a.next_timeout(),
                _ => None,
            })
            .fold(self.deadline_ms, u64::min)
    }
}

//! What a failed request does: each failure is classified once
//! ([`crate::classify`]); a transient or throttled one is retried on the
//! probe's schedule, a fatal one ends the check. A failure of one copy of a
//! hedged attempt waits for the other copy ([`crate::preflight::hedge`]).

use super::probe::{Probe, State};
use super::Preflight;
use crate::classify::{classify, describe, Class, ErrorFacts};
use crate::preflight::hedge::AfterFailure;
use crate::retry::messages;

impl Preflight {
    /// Request `request` of probe `probe` failed. If the other copy of its
    /// attempt (a hedge, or the request a hedge was for) is still out, the
    /// attempt goes on: that copy may still answer. Else the attempt failed.
    pub(super) fn copy_failed(&mut self, probe: usize, request: u32, facts: ErrorFacts, now: u64) {
        let class = classify(&facts, now, self.settings.max_retry_after);
        let fatal = matches!(class, Class::Fatal { .. });
        let State::InFlight(attempt) = &mut self.probes[probe].state else {
            return;
        };
        let what = format!("{}, {}", class.kind_name(), describe(&class, &facts));
        match attempt.fail(request, &facts, &class) {
            AfterFailure::StillOut => {
                if !fatal {
                    self.note_transient(describe(&class, &facts));
                }
            }
            // This copy's failure, or the other copy's fatal one: either way
            // classified when it came, and not again.
            AfterFailure::Failed(facts, class) => self.on_failure(probe, &facts, &class, now),
        }
        self.debug_attempt(probe, request, "failed", &what, now);
    }

    /// A transient failure: the last error, and the warning (once).
    fn note_transient(&mut self, evidence: String) {
        // The budget may be a deadline less the time spent at the lock.
        let deadline_ms = crate::millis(self.settings.backoff.deadline);
        if let Some(evidence) = self.trouble.retrying(evidence) {
            self.pending_warnings.push(messages::starts_failing(
                "a permission check",
                evidence,
                deadline_ms,
                "This is not a permissions problem.",
            ));
        }
    }

    /// The attempt failed with `facts`, of class `class`.
    fn on_failure(&mut self, probe: usize, facts: &ErrorFacts, class: &Class, now: u64) {
        let evidence = describe(class, facts);
        if matches!(self.probes[probe].probe, Probe::Rules)
            && !self.stopping
            && self.rules_given_up(probe, class, facts, now)
        {
            return;
        }
        if let Class::Fatal { .. } = class {
            self.probes[probe].state = State::Fatal(evidence);
            self.stop();
            return;
        }
        self.note_transient(evidence);
        self.retry_later(probe, facts, class, now);
    }
}

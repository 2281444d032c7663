//! The debug trail: one line per request (what came back, what the probe
//! does next) and one per check, shown when step debug logging is on.

use super::outcome::{Source, Verdict};
use super::probe::{Probe, State};
use super::result::Answer;
use super::Preflight;
use crate::review_answer::Malformed;
use crate::text::{self, quoted, seconds};

impl Preflight {
    /// One debug line for request `request` of `probe`: what came back, and
    /// what the probe does next (read from its state, after the result).
    pub(super) fn debug_attempt(
        &mut self,
        probe: usize,
        request: u32,
        verb: &str,
        what: &str,
        now: u64,
    ) {
        let run = &self.probes[probe];
        let name = match &run.probe {
            Probe::Access(p) => format!("access review of {p}"),
            Probe::Rules => "rules review".to_string(),
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

    /// The line that ends the trail: the verdict, where it came from, the
    /// requests and the time (`tried`) the check took.
    pub(super) fn debug_finished(&mut self, verdict: Verdict, source: Option<Source>, tried: &str) {
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
    }
}

/// What an answer said, for its request's debug line; `None` for a
/// failure (its line is written where the failure is classified).
pub(super) fn answer_summary(answer: &Answer) -> Option<String> {
    match answer {
        Answer::Failed(_) => None,
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

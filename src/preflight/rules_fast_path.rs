//! The rules-review fast path: one SelfSubjectRulesReview goes first, and
//! only what its rules do not prove ([`crate::rules`]) is asked with access
//! reviews. When the rules review is refused, or its answer is malformed,
//! it gives way and every permission is asked.

use super::probe::{Probe, State};
use super::Preflight;
use crate::classify::{request_cannot_be_sent, Class, ErrorFacts};
use crate::permission::Permission;
use crate::rules::{self, RulesStatus};

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

impl Preflight {
    /// The rules review answered: what it proves needs no request; the
    /// rest go ahead now.
    pub(super) fn apply_rules(&mut self, status: &RulesStatus, now: u64) {
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

    /// The rules review's attempt failed with `facts` (of class `class`):
    /// true when the fast path gives way (every permission is then asked),
    /// false when the failure is handled like any other.
    pub(super) fn rules_given_up(
        &mut self,
        probe: usize,
        class: &Class,
        facts: &ErrorFacts,
        now: u64,
    ) -> bool {
        if counts_as_refusal(class, facts) {
            self.rules_refusals += 1;
        }
        // A request the client cannot send at all (a bad credential)
        // would fail the same way as an access review: no fall-back.
        let fatal = matches!(class, Class::Fatal { .. }) && !request_cannot_be_sent(facts);
        if fatal || self.rules_refusals >= RULES_REFUSALS_BEFORE_FALLBACK {
            // An old server (404), or a server that keeps refusing the
            // rules review (403, 5xx, ...): ask every permission.
            self.skip_rules(probe, now);
            return true;
        }
        false
    }

    /// The rules review's answer does not have the documented types.
    pub(super) fn malformed_rules(&mut self, probe: usize, why: &str, now: u64) {
        // Fields of the wrong type prove nothing: ask every
        // permission instead.
        self.pending_warnings.push(format!(
            "The SelfSubjectRulesReview's answer does not have the documented types ({why}); it proves nothing, so each permission is asked with its own access review."
        ));
        self.skip_rules(probe, now);
    }
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

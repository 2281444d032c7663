//! What one process remembers of the API between its calls ([`Outage`]).
//!
//! A call gives up only after the API failed it for a whole deadline (or
//! in a way that may not be retried). A host that loops around its calls,
//! as the runner hooks loop 30 times around a copy into the pod, would
//! otherwise wait that whole deadline again on every turn of its loop: 30
//! times 90 s through an outage that outlasts the first call. So a call
//! that starts less than one deadline after a call of the same process
//! gave up, with no call answered since, makes one attempt and does not
//! retry: the outage is already known, and the host's loop decides. The
//! first answer from the API (any answer, even an error of the caller's)
//! ends the outage, and so does a deadline's quiet.

use std::time::Duration;

use super::action::CallOutcome;
use super::machine::Call;
use super::spec::CallSpec;
use crate::config::Settings;
use crate::millis;

/// The process's memory of the last call given up on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outage {
    /// When a wrapped call last gave up, if no call was answered since.
    gave_up_at_ms: Option<u64>,
}

impl Outage {
    /// No outage known.
    pub fn new() -> Outage {
        Outage::default()
    }

    /// How long ago a call gave up, if that is less than `deadline` ago
    /// and no call was answered since.
    pub fn known(&self, deadline: Duration, now_ms: u64) -> Option<u64> {
        let at = self.gave_up_at_ms?;
        let ago = now_ms.saturating_sub(at);
        (ago < millis(deadline)).then_some(ago)
    }

    /// The machine of a call of `spec` starting at `now_ms`: the full
    /// deadline, or one attempt and no retry while an outage is known.
    pub fn start(&self, settings: &Settings, spec: CallSpec, now_ms: u64) -> Call {
        let call = Call::new(settings, spec, now_ms);
        match self.known(settings.call_deadline, now_ms) {
            Some(ago) => call.in_known_outage(ago),
            None => call,
        }
    }

    /// Learns from how a call ended at `now_ms`: a give-up starts (or
    /// extends) the outage; any answer ends it. A call that passed
    /// through (`wrapped` false) says nothing.
    pub fn learn(&mut self, outcome: &CallOutcome, wrapped: bool, now_ms: u64) {
        if !wrapped {
            return;
        }
        self.gave_up_at_ms = match outcome {
            CallOutcome::GiveUp { .. } => Some(now_ms),
            CallOutcome::Return { .. }
            | CallOutcome::Deleted { .. }
            | CallOutcome::Throw { .. } => None,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    const GIVE_UP: CallOutcome = CallOutcome::GiveUp {
        message: String::new(),
        last_request: None,
    };

    #[test]
    fn a_give_up_is_known_for_one_deadline_and_an_answer_ends_it() {
        let deadline = Duration::from_secs(90);
        let mut o = Outage::new();
        assert_eq!(o.known(deadline, 1_000), None);
        o.learn(&GIVE_UP, true, 1_000);
        assert_eq!(o.known(deadline, 1_000), Some(0));
        assert_eq!(o.known(deadline, 90_999), Some(89_999));
        assert_eq!(o.known(deadline, 91_000), None);
        o.learn(&GIVE_UP, true, 50_000);
        assert_eq!(o.known(deadline, 91_000), Some(41_000));
        o.learn(&CallOutcome::Throw { request: 1 }, true, 60_000);
        assert_eq!(o.known(deadline, 60_000), None);
        o.learn(&GIVE_UP, true, 70_000);
        o.learn(&CallOutcome::Return { request: 1 }, false, 71_000);
        assert_eq!(
            o.known(deadline, 71_000),
            Some(1_000),
            "a pass-through says nothing"
        );
        o.learn(&CallOutcome::Deleted { request: 2 }, true, 72_000);
        assert_eq!(o.known(deadline, 72_000), None);
    }
}

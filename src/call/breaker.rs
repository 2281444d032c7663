//! What one process remembers of the API between its calls: a circuit
//! breaker ([`Breaker`]).
//!
//! A call gives up only after the API failed it for a whole deadline (or
//! in a way that may not be retried). A host that loops around its calls,
//! as the runner hooks loop 30 times around a copy into the pod, would
//! otherwise wait that whole deadline again on every turn of its loop: 30
//! times 120 s (the calls' deadline) through an outage that outlasts the first call. So a call
//! that starts less than one deadline after a call of the same process
//! gave up, with no call answered since, makes one attempt and does not
//! retry: the outage is already known, and the host's loop decides. The
//! first answer from the API (any answer, even an error of the caller's)
//! ends the outage, and so does a deadline's quiet.
//!
//! It is a breaker per cluster: an outage of one apiserver (the
//! call's `cluster`, its server URL) says nothing of another's. Times are
//! the host's steady clock, one for all the calls of a process.

use std::time::Duration;

use super::action::CallOutcome;
use super::machine::Call;
use super::spec::CallSpec;
use crate::config::Settings;
use crate::millis;

/// The process's memory of the last call given up on, per cluster.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Breaker {
    /// Per cluster (its server URL; "" when the host did not say): when a
    /// wrapped call last gave up, if no call to it was answered since.
    gave_up_at_ms: Vec<(String, u64)>,
}

/// Clusters remembered at once; the oldest give-up is forgotten first.
const MAX_CLUSTERS: usize = 16;

fn key(cluster: Option<&str>) -> &str {
    cluster.unwrap_or("")
}

impl Breaker {
    /// No outage known.
    pub fn new() -> Breaker {
        Breaker::default()
    }

    /// How long ago a call to a cluster the host did not name gave up
    /// (see [`Breaker::known_for`]).
    pub fn known(&self, deadline: Duration, now_ms: u64) -> Option<u64> {
        self.known_for(None, deadline, now_ms)
    }

    /// How long ago a call to `cluster` gave up, if that is less than
    /// `deadline` ago and no call to it was answered since.
    pub fn known_for(&self, cluster: Option<&str>, deadline: Duration, now_ms: u64) -> Option<u64> {
        let key = key(cluster);
        let at = self.gave_up_at_ms.iter().find(|(k, _)| k == key)?.1;
        let ago = now_ms.saturating_sub(at);
        (ago < millis(deadline)).then_some(ago)
    }

    fn set(&mut self, cluster: Option<&str>, at_ms: Option<u64>) {
        let key = key(cluster);
        self.gave_up_at_ms.retain(|(k, _)| k != key);
        if let Some(at) = at_ms {
            if self.gave_up_at_ms.len() >= MAX_CLUSTERS {
                self.gave_up_at_ms.remove(0);
            }
            self.gave_up_at_ms.push((key.to_string(), at));
        }
    }

    /// The machine of a call of `spec` starting at `now_ms`: the full
    /// deadline, or one attempt and no retry while an outage is known.
    pub fn start(&self, settings: &Settings, spec: CallSpec, now_ms: u64) -> Call {
        let known = self.known_for(spec.cluster.as_deref(), settings.calls.deadline, now_ms);
        let call = Call::new(settings, spec, now_ms);
        match known {
            Some(ago) => call.in_known_outage(ago),
            None => call,
        }
    }

    /// Learns from how `call` ended, at `now_ms`: giving up on the API
    /// (out of time while it kept failing, or a failure in a known outage)
    /// starts or extends the outage; any answer ends it. A give-up for a
    /// reason of the call's own (a set-up that may have started, a create
    /// that may have been made) says nothing of the API, nor does a call
    /// that passed through, or one not over.
    pub fn learn(&mut self, call: &Call, now_ms: u64) {
        if !call.is_wrapped() {
            return;
        }
        let cluster = call.cluster();
        match call.outcome() {
            Some(CallOutcome::GiveUp { .. }) if call.gave_up_on_the_api() => {
                self.set(cluster, Some(now_ms))
            }
            Some(CallOutcome::GiveUp { .. }) | None => {}
            Some(_) => self.set(cluster, None),
        }
    }

    /// An outage known to have started at `at_ms` (a call gave up then).
    pub fn gave_up_at(at_ms: u64) -> Breaker {
        let mut outage = Breaker::new();
        outage.set(None, Some(at_ms));
        outage
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn a_give_up_is_known_for_one_deadline() {
        let deadline = Duration::from_secs(90);
        assert_eq!(Breaker::new().known(deadline, 1_000), None);
        let o = Breaker::gave_up_at(1_000);
        assert_eq!(o.known(deadline, 1_000), Some(0));
        assert_eq!(o.known(deadline, 90_999), Some(89_999));
        assert_eq!(o.known(deadline, 91_000), None);
    }

    #[test]
    fn an_outage_is_known_only_for_its_cluster() {
        let deadline = Duration::from_secs(90);
        let mut o = Breaker::new();
        o.set(Some("https://a:6443"), Some(1_000));
        assert_eq!(
            o.known_for(Some("https://a:6443"), deadline, 2_000),
            Some(1_000)
        );
        assert_eq!(o.known_for(Some("https://b:6443"), deadline, 2_000), None);
        assert_eq!(o.known(deadline, 2_000), None);
        for i in 0..40 {
            o.set(Some(&format!("https://c{i}")), Some(1_000));
        }
        assert_eq!(o.gave_up_at_ms.len(), MAX_CLUSTERS);
        o.set(Some("https://c39"), None);
        assert_eq!(o.known_for(Some("https://c39"), deadline, 2_000), None);
    }
}

//! Stopping the command when the hook process is stopped (the `Cancel`
//! fact): a kill step, tried again within a window, and the `Cancelled`
//! status the run ends with.

use super::{DurableRun, State};
use crate::durable::action::{Delivery, DurableAction, PodStep};
use crate::durable::messages;
use crate::protocol::Level;

// A stopping process has this long to stop the command (its host waits
// 8 s in all): each kill attempt gets 2 s, and a failed one is made again
// after a short pause.
pub(super) const KILL_WINDOW_MS: u64 = 6_000;
pub(super) const KILL_ATTEMPT_MS: u64 = 2_000;
const KILL_PAUSE_MS: u64 = 250;

impl DurableRun {
    pub(super) fn cancel(&mut self, now_ms: u64, signal: &str) {
        // After the delivery there is nothing to stop.
        if matches!(
            self.state,
            State::Killing { .. } | State::Cleaning | State::Over
        ) {
            return;
        }
        // A start still out may yet reach the pod: the kill claims the run
        // first, so a start that arrives after it starts nothing.
        let start_out = matches!(self.in_flight, Some((_, PodStep::Start)));
        if !self.claim.may_have_started() && !start_out {
            return self.cancelled(signal, true, "");
        }
        self.claim.start_may_have_reached(None);
        self.log(Level::Warning, messages::stopping(&self.pod, signal));
        self.state = State::Killing {
            until_ms: now_ms.saturating_add(KILL_WINDOW_MS),
            signal: signal.to_string(),
        };
        self.disconnected = None;
        // The stream that is open stays open; the kill goes beside it.
        self.in_flight = None;
        self.next = Some((PodStep::Kill, 0));
    }

    /// A kill that did not get through: again after a pause, while the
    /// window lasts; then the run ends saying the command may be running.
    pub(super) fn kill_again(&mut self, now_ms: u64, why: &str) {
        let at = now_ms.saturating_add(KILL_PAUSE_MS);
        if matches!(self.state, State::Killing { until_ms, .. } if at < until_ms) {
            self.next = Some((PodStep::Kill, at));
        } else {
            self.log(Level::Warning, messages::not_stopped(&self.pod, why));
            self.killed(false, why);
        }
    }

    /// A kill ended: `stopped` when it got through.
    pub(super) fn killed(&mut self, stopped: bool, why: &str) {
        let signal = match &self.state {
            State::Killing { signal, .. } => signal.clone(),
            _ => String::new(),
        };
        self.cancelled(&signal, stopped, why);
    }

    /// The run ends stopped by `signal`: a host that lives on gets a
    /// status that says so (most end with the signal first).
    fn cancelled(&mut self, signal: &str, stopped: bool, why: &str) {
        let message = if !self.claim.may_have_started() {
            messages::cancelled_before_start(&self.pod, signal)
        } else if stopped {
            messages::cancelled(&self.pod, signal)
        } else {
            messages::not_stopped(&self.pod, why)
        };
        if !self.resolved {
            self.resolved = true;
            self.queue.push_back(DurableAction::Resolve);
        }
        self.finish_with(Some(Delivery::Failed {
            reason: "Cancelled",
            message,
        }));
    }
}

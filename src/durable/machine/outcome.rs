//! How the run ends: its code delivered and its files removed after, a
//! failure delivered or the set-up's error given, or the command run as a
//! plain exec.

use super::{DurableRun, State};
use crate::durable::action::{Delivery, DurableAction, PodStep};
use crate::durable::messages;
use crate::protocol::Level;

// A delivered run's own clean-up waits this long, idle (the process need
// not stay for it): a start in the same pod made meanwhile (a host's next
// exec, most often within milliseconds) removes its files in passing, with
// no exec of its own.
pub(super) const CLEANUP_AFTER_MS: u64 = 2_000;

impl DurableRun {
    /// The code is known: the caller gets it at once, and the run's files
    /// are removed after, by the next start in the pod or, when none comes
    /// soon, by a clean-up of its own (a host that ends first leaves it to
    /// the job's next start in the pod).
    pub(super) fn cleanup(&mut self, now_ms: u64, delivery: Delivery) {
        // Written down before the caller hears: it may end the process at once.
        let line = self.delivered.borrow_mut().delivered(&self.pod, &self.run);
        self.append(line);
        self.queue.push_back(DurableAction::Deliver { delivery });
        self.state = State::Cleaning;
        self.disconnected = None;
        self.next = Some((PodStep::Cleanup, now_ms.saturating_add(CLEANUP_AFTER_MS)));
    }

    pub(super) fn fall_back(&mut self, what: &str) {
        self.log(Level::Warning, messages::fallback(&self.pod, what));
        self.plain();
    }

    /// The command runs as a plain exec: it was not started.
    pub(super) fn plain(&mut self) {
        self.state = State::Over;
        self.queue.push_back(DurableAction::Plain);
        self.queue.push_back(DurableAction::Done);
    }

    pub(super) fn reject(&mut self, request: u32) {
        self.state = State::Over;
        self.queue.push_back(DurableAction::Reject { request });
        self.queue.push_back(DurableAction::Done);
    }

    /// Ends with a failure of a run whose command has ended: its files are
    /// removed after, as a delivered run's are.
    pub(super) fn fail_ended(&mut self, now_ms: u64, reason: &'static str, message: String) {
        if !self.resolved {
            return self.fail(reason, message);
        }
        self.cleanup(now_ms, Delivery::Failed { reason, message });
    }

    /// Ends with a failure: delivered when the caller's promise has
    /// resolved, else the caller gets the last set-up's error.
    pub(super) fn fail(&mut self, reason: &'static str, message: String) {
        if !self.resolved {
            if let Some(request) = self.last_failed {
                return self.reject(request);
            }
            self.resolved = true;
            self.queue.push_back(DurableAction::Resolve);
        }
        self.finish_with(Some(Delivery::Failed { reason, message }));
    }

    pub(super) fn finish_with(&mut self, delivery: Option<Delivery>) {
        self.state = State::Over;
        if let Some(delivery) = delivery {
            self.queue.push_back(DurableAction::Deliver { delivery });
        }
        self.queue.push_back(DurableAction::Done);
    }
}

//! Time without a connection: a cut, the attempts after it on one line of
//! backoff, a stream that opens again, and the limit of that time.
//!
//! The limit is kept once, as the deadline of the disconnection's line
//! ([`Line::deadline_ms`]): the line's schedule starts no attempt past it,
//! and [`DurableRun::poll`] gives up when it comes before a connection
//! (most often with a step still out).

use super::{Claim, DurableRun, State, PING_EVERY_MS};
use crate::classify::Class;
use crate::durable::action::PodStep;
use crate::durable::messages;
use crate::millis;
use crate::protocol::Level;
use crate::retry::Line;
use crate::schedule::Backoff;

/// How long a stream that opened again must hold, with no output, to count
/// as a connection: a round of pings.
pub(super) const HELD_MS: u64 = PING_EVERY_MS;

/// Time without a connection, from when it was lost (when its line
/// started).
#[derive(Debug, Clone)]
pub(super) struct Disconnection {
    line: Line,
    /// Whether nothing more is to be said of it (the run's first
    /// connection is no reattach; a reattach is said once).
    warned: bool,
    /// Whether the cut was told (the run's first connection is no cut).
    told: bool,
    /// When a stream opened again, and the bytes received by then. A stream
    /// that holds (for [`HELD_MS`], or brings output) ends the
    /// disconnection; one cut again at once does not: its line, its backoff
    /// and its time go on, and nothing is said again.
    reattached: Option<(u64, (u64, u64))>,
}

impl Disconnection {
    /// The run's own, until its first stream opens: that is no reattach,
    /// and there was no cut to tell.
    pub(super) fn before_first(backoff: Backoff, now_ms: u64) -> Disconnection {
        Disconnection {
            line: Line::new(backoff, now_ms),
            warned: true,
            told: false,
            reattached: None,
        }
    }

    /// One from a cut at `now_ms`, told at once.
    fn after_cut(backoff: Backoff, now_ms: u64) -> Disconnection {
        Disconnection {
            line: Line::new(backoff, now_ms),
            warned: false,
            told: true,
            reattached: None,
        }
    }

    /// When the time without a connection reaches its limit: `None` while
    /// a stream that opened again may yet hold.
    pub(super) fn limit_at(&self) -> Option<u64> {
        match self.reattached {
            Some(_) => None,
            None => Some(self.line.deadline_ms()),
        }
    }
}

impl DurableRun {
    /// When the run gives up, unless a connection comes first.
    pub(super) fn limit_at(&self) -> Option<u64> {
        self.disconnected.as_ref().and_then(Disconnection::limit_at)
    }

    /// A start's, an attach's or a finish's stream opened: a reattach, said
    /// once, that counts as a connection once it holds.
    pub(super) fn reopened(&mut self, now_ms: u64) {
        let received = self.received;
        if let Some(d) = &mut self.disconnected {
            d.reattached = Some((now_ms, received));
            if !d.warned {
                d.warned = true;
                let after = d.line.elapsed_ms(now_ms);
                let line = messages::reattached(&self.pod, after);
                self.log(Level::Info, line);
            }
        }
    }

    /// The connection is lost (or a step broke): try again, at once the
    /// first time, then on the line's backoff, until the time without a
    /// connection reaches its limit.
    pub(super) fn lost(&mut self, now_ms: u64, why: &str, class: Class) {
        if self.state == State::Over {
            return;
        }
        let step = match (&self.state, self.claim) {
            (State::Finishing { .. }, _) => PodStep::Finish,
            (_, Claim::Claimed) => PodStep::Attach,
            // A start may have run: look for it before another is made.
            (_, Claim::Maybe { .. }) => PodStep::Look,
            (_, Claim::NotStarted) => PodStep::Start,
        };
        if self.last_error.is_empty() || !why.is_empty() {
            self.last_error = why.to_string();
        }
        let received = self.received;
        let held = self
            .disconnected
            .as_ref()
            .and_then(|d| d.reattached)
            .is_some_and(|(at, bytes)| now_ms.saturating_sub(at) >= HELD_MS || bytes != received);
        if held {
            self.disconnected = None;
        }
        // What is known of the script decides what the warning says of it.
        let said = match step {
            PodStep::Start => messages::start_failed(&self.pod, why),
            PodStep::Look => messages::start_unanswered(&self.pod, why),
            PodStep::Attach | PodStep::Finish | PodStep::Cleanup | PodStep::Kill => {
                messages::cut(&self.pod, why)
            }
        };
        match &mut self.disconnected {
            None => {
                self.disconnected = Some(Disconnection::after_cut(self.backoff, now_ms));
                self.log(Level::Warning, said);
                self.next = Some((step, now_ms));
            }
            Some(d) => {
                d.reattached = None;
                let tell = !d.told;
                d.told = true;
                match d.line.next_delay(&class, now_ms, &mut self.random) {
                    Some(delay) => self.next = Some((step, now_ms.saturating_add(millis(delay)))),
                    None => self.give_up(),
                }
                if tell {
                    self.log(Level::Warning, said);
                }
            }
        }
    }

    pub(super) fn give_up(&mut self) {
        let message = messages::gave_up(
            &self.pod,
            millis(self.backoff.deadline),
            &self.last_error,
            self.claim.may_have_started(),
        );
        self.fail("StreamLost", message);
    }
}

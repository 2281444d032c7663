//! One line of attempts under a deadline ([`Line`]).

use std::time::Duration;

use crate::classify::Class;
use crate::millis;
use crate::random::RandomSource;
use crate::schedule::{Backoff, Schedule};

/// The attempts of one thing a machine asks (a review, a call): their
/// schedule, when the line started, and its deadline, after which no
/// attempt starts.
#[derive(Debug, Clone)]
pub struct Line {
    schedule: Schedule,
    started_ms: u64,
    deadline_ms: u64,
}

impl Line {
    /// A line on `backoff` (its delays, attempt limit and deadline) that
    /// starts at `now_ms`.
    pub fn new(backoff: Backoff, now_ms: u64) -> Line {
        Line {
            schedule: Schedule::new(backoff),
            started_ms: now_ms,
            deadline_ms: now_ms.saturating_add(millis(backoff.deadline)),
        }
    }

    /// When the line started.
    pub fn started_ms(&self) -> u64 {
        self.started_ms
    }

    /// When its deadline is.
    pub fn deadline_ms(&self) -> u64 {
        self.deadline_ms
    }

    /// How long the line has run at `now_ms`.
    pub fn elapsed_ms(&self, now_ms: u64) -> u64 {
        now_ms.saturating_sub(self.started_ms)
    }

    /// How long is left of its deadline at `now_ms`.
    pub fn left_ms(&self, now_ms: u64) -> u64 {
        self.deadline_ms.saturating_sub(now_ms)
    }

    /// The wait before the next attempt after a failure of class `class`
    /// at `now_ms`: the server's `Retry-After` when it pushed back with one
    /// (within the schedule's limits), else the schedule's next delay.
    /// `None` when the schedule (attempts, deadline) says no more.
    pub fn next_delay(
        &mut self,
        class: &Class,
        now_ms: u64,
        random: &mut RandomSource,
    ) -> Option<Duration> {
        let elapsed = Duration::from_millis(self.elapsed_ms(now_ms));
        match class {
            Class::Throttled {
                retry_after_ms: Some(ms),
                ..
            } => {
                self.schedule
                    .next_delay_after_pushback(elapsed, Duration::from_millis(*ms), random)
            }
            _ => self.schedule.next_delay(elapsed, random),
        }
    }
}

#[cfg(test)]
mod tests {
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    use super::*;

    #[test]
    fn a_line_keeps_its_deadline_and_honours_a_servers_push_back() {
        let backoff = Backoff::new().with_deadline(Duration::from_secs(20));
        let mut line = Line::new(backoff, 1_000);
        assert_eq!(line.deadline_ms(), 21_000);
        assert_eq!(line.left_ms(6_000), 15_000);
        assert_eq!(line.left_ms(30_000), 0);
        let throttled = Class::Throttled {
            retry_after_ms: Some(3_000),
            why: "HTTP 429".into(),
        };
        // At least what the server asked, and at most half as long again.
        let wait = line
            .next_delay(&throttled, 2_000, &mut RandomSource::seeded(1))
            .unwrap();
        assert!(
            wait >= Duration::from_secs(3) && wait <= Duration::from_millis(4_500),
            "{wait:?}"
        );
        // Past the deadline, no more.
        let transient = Class::Transient {
            why: "ECONNRESET".into(),
        };
        assert_eq!(
            line.next_delay(&transient, 21_000, &mut RandomSource::seeded(1)),
            None
        );
    }
}

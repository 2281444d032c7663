//! The wait before the next attempt ([`next_delay`]).

use std::time::Duration;

use crate::classify::Class;
use crate::random::RandomSource;
use crate::schedule::Schedule;

/// The wait before the next attempt after a failure of class `class`,
/// `elapsed` into the line: the server's `Retry-After` when it pushed back
/// with one (within the schedule's limits), else the schedule's next
/// delay. `None` when the schedule (attempts, deadline) says no more.
pub fn next_delay(
    schedule: &mut Schedule,
    class: &Class,
    elapsed: Duration,
    random: &mut RandomSource,
) -> Option<Duration> {
    match class {
        Class::Throttled {
            retry_after_ms: Some(ms),
            ..
        } => schedule.next_delay_after_pushback(elapsed, Duration::from_millis(*ms), random),
        _ => schedule.next_delay(elapsed, random),
    }
}

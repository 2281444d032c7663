//! The named timers of a request in flight ([`Timer`], [`Timers`]).

/// What a request in flight may be waiting for. Each has at most one time;
/// the machine wakes at the earliest set ([`Timers::next_timeout`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timer {
    /// The machine counts the request as failed (our own timeout).
    Timeout,
    /// The host has abandoned the request: no answer will come after it.
    Abandon,
    /// Another copy of the request may go out if none has answered.
    Hedge,
}

impl Timer {
    const COUNT: usize = 3;

    fn index(self) -> usize {
        self as usize
    }
}

/// One time per [`Timer`], or none; the earliest set is when to wake.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Timers {
    at_ms: [Option<u64>; Timer::COUNT],
}

impl Timers {
    /// Sets `timer` to fire at `at_ms`, in place of any time it had.
    pub fn set(&mut self, timer: Timer, at_ms: u64) {
        self.at_ms[timer.index()] = Some(at_ms);
    }

    /// Stops `timer`: it no longer fires or wakes the machine.
    pub fn clear(&mut self, timer: Timer) {
        self.at_ms[timer.index()] = None;
    }

    /// When `timer` fires, if it is set.
    pub fn get(&self, timer: Timer) -> Option<u64> {
        self.at_ms[timer.index()]
    }

    /// True when `timer` is set and its time has come at `now_ms`.
    pub fn is_due(&self, timer: Timer, now_ms: u64) -> bool {
        self.get(timer).is_some_and(|at| at <= now_ms)
    }

    /// The earliest time a timer is set for: when the machine must be
    /// polled again for this request. `None`: nothing but an answer.
    pub fn next_timeout(&self) -> Option<u64> {
        self.at_ms.iter().flatten().copied().min()
    }
}

#[cfg(test)]
mod tests {
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    use super::{Timer, Timers};

    #[test]
    fn the_earliest_named_timer_wins_whichever_it_is() {
        let mut timers = Timers::default();
        assert_eq!(timers.next_timeout(), None);
        timers.set(Timer::Abandon, 9_000);
        timers.set(Timer::Timeout, 5_000);
        timers.set(Timer::Hedge, 7_000);
        assert_eq!(timers.next_timeout(), Some(5_000));
        timers.set(Timer::Hedge, 1_200);
        assert_eq!(timers.next_timeout(), Some(1_200));
        assert_eq!(timers.get(Timer::Timeout), Some(5_000));
    }

    #[test]
    fn a_cleared_timer_no_longer_wakes_nor_is_due() {
        let mut timers = Timers::default();
        timers.set(Timer::Hedge, 1_200);
        timers.set(Timer::Abandon, 9_000);
        timers.clear(Timer::Hedge);
        assert_eq!(timers.get(Timer::Hedge), None);
        assert!(!timers.is_due(Timer::Hedge, 5_000));
        assert_eq!(timers.next_timeout(), Some(9_000));
        timers.clear(Timer::Abandon);
        assert_eq!(timers.next_timeout(), None);
    }

    #[test]
    fn a_timer_is_due_from_its_own_millisecond_on() {
        let mut timers = Timers::default();
        timers.set(Timer::Timeout, 10_000);
        assert!(!timers.is_due(Timer::Timeout, 9_999));
        assert!(timers.is_due(Timer::Timeout, 10_000));
        assert!(timers.is_due(Timer::Timeout, 10_001));
        assert!(!timers.is_due(Timer::Abandon, 10_001));
    }
}

//! One request in flight ([`InFlight`]): its number, when it went out, and
//! its timers.

use super::timers::{Timer, Timers};

/// A request that has been sent and not yet settled: the machine waits for
/// its answer until it times out, and the host gives up on it when it is
/// abandoned. The timeout is never after the abandon: an answer that can
/// no longer come is not waited for.
///
/// Without an abandon time (a call that passes through), nothing but the
/// answer ends the wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InFlight {
    request: u32,
    sent_ms: u64,
    timers: Timers,
}

impl InFlight {
    /// Request `request`, sent at `sent_ms`, abandoned at `abandon_at_ms`
    /// and waited for until then.
    pub fn new(request: u32, sent_ms: u64, abandon_at_ms: Option<u64>) -> InFlight {
        let mut timers = Timers::default();
        if let Some(at) = abandon_at_ms {
            timers.set(Timer::Abandon, at);
            timers.set(Timer::Timeout, at);
        }
        InFlight {
            request,
            sent_ms,
            timers,
        }
    }

    /// This request timing out at `at_ms` if that comes before its abandon:
    /// after it, the machine goes on without it while the host may still
    /// deliver its answer.
    pub fn timing_out_by(mut self, at_ms: u64) -> InFlight {
        if let Some(timeout) = self.timers.get(Timer::Timeout) {
            self.timers.set(Timer::Timeout, timeout.min(at_ms));
        }
        self
    }

    /// Its request number.
    pub fn request(&self) -> u32 {
        self.request
    }

    /// When it was sent.
    pub fn sent_ms(&self) -> u64 {
        self.sent_ms
    }

    /// How long after it was sent the host abandons it: what the host is
    /// told when the request goes out.
    pub fn abandon_after_ms(&self) -> Option<u64> {
        self.timers
            .get(Timer::Abandon)
            .map(|at| at.saturating_sub(self.sent_ms))
    }

    /// True when its timeout has come at `now_ms`.
    pub fn timed_out(&self, now_ms: u64) -> bool {
        self.timers.is_due(Timer::Timeout, now_ms)
    }

    /// True when the host has abandoned it at `now_ms`.
    pub fn abandoned(&self, now_ms: u64) -> bool {
        self.timers.is_due(Timer::Abandon, now_ms)
    }

    /// The same request, no longer waited for: its answer may still come
    /// until it is abandoned, but no timeout of its own wakes the machine.
    pub fn no_longer_awaited(mut self) -> InFlight {
        self.timers.clear(Timer::Timeout);
        self
    }

    /// The same request, waited for again until it is abandoned.
    pub fn awaited_until_abandoned(mut self) -> InFlight {
        if let Some(at) = self.timers.get(Timer::Abandon) {
            self.timers.set(Timer::Timeout, at);
        }
        self
    }

    /// Its timers, for one a machine keeps of its own (a hedge's).
    pub fn timers(&self) -> &Timers {
        &self.timers
    }

    /// Its timers, to set or clear one a machine keeps of its own.
    pub fn timers_mut(&mut self) -> &mut Timers {
        &mut self.timers
    }

    /// When the machine must next be polled for it: the earliest of its
    /// timers.
    pub fn next_timeout(&self) -> Option<u64> {
        self.timers.next_timeout()
    }
}

#[cfg(test)]
mod tests {
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    use super::{InFlight, Timer};

    #[test]
    fn a_request_times_out_and_is_abandoned_at_the_same_millisecond_by_default() {
        let flight = InFlight::new(3, 1_000, Some(11_000));
        assert_eq!((flight.request(), flight.sent_ms()), (3, 1_000));
        assert_eq!(flight.abandon_after_ms(), Some(10_000));
        assert_eq!(flight.next_timeout(), Some(11_000));
        assert!(!flight.timed_out(10_999) && !flight.abandoned(10_999));
        assert!(flight.timed_out(11_000) && flight.abandoned(11_000));
    }

    #[test]
    fn an_earlier_timeout_wakes_first_and_a_later_one_is_capped_at_the_abandon() {
        let flight = InFlight::new(1, 0, Some(60_000)).timing_out_by(10_000);
        assert_eq!(flight.next_timeout(), Some(10_000));
        assert!(flight.timed_out(10_000) && !flight.abandoned(10_000));
        let capped = InFlight::new(1, 0, Some(5_000)).timing_out_by(10_000);
        assert_eq!(capped.timers().get(Timer::Timeout), Some(5_000));
    }

    #[test]
    fn a_request_no_longer_awaited_wakes_nobody_until_it_is_awaited_again() {
        let straggler = InFlight::new(1, 0, Some(60_000))
            .timing_out_by(10_000)
            .no_longer_awaited();
        assert!(!straggler.timed_out(30_000));
        assert!(straggler.abandoned(60_000));
        assert_eq!(straggler.timers().get(Timer::Timeout), None);
        let again = straggler.awaited_until_abandoned();
        assert_eq!(again.next_timeout(), Some(60_000));
        assert!(!again.timed_out(59_999) && again.timed_out(60_000));
    }

    #[test]
    fn a_request_with_no_abandon_time_waits_only_for_its_answer() {
        let flight = InFlight::new(1, 0, None).timing_out_by(10_000);
        assert_eq!(flight.next_timeout(), None);
        assert_eq!(flight.abandon_after_ms(), None);
        assert!(!flight.timed_out(u64::MAX) && !flight.abandoned(u64::MAX));
    }

    #[test]
    fn a_machines_own_timer_wakes_it_before_the_timeout() {
        let mut flight = InFlight::new(1, 0, Some(10_000));
        flight.timers_mut().set(Timer::Hedge, 200);
        assert_eq!(flight.next_timeout(), Some(200));
        flight.timers_mut().clear(Timer::Hedge);
        assert_eq!(flight.next_timeout(), Some(10_000));
    }
}

//! The host's time as a machine sees it ([`SteadyClock`]).

/// The latest time a machine was given. The host's clock may step back (a
/// wall clock corrected, two clocks mixed); inside a machine, time never
/// runs backwards, so no deadline moves away and no wait grows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SteadyClock {
    latest_ms: u64,
}

impl SteadyClock {
    /// A clock that starts at `now_ms`.
    pub fn starting_at(now_ms: u64) -> SteadyClock {
        SteadyClock { latest_ms: now_ms }
    }

    /// The time to act on, given the host's `now_ms`: the latest seen.
    pub fn observe(&mut self, now_ms: u64) -> u64 {
        self.latest_ms = self.latest_ms.max(now_ms);
        self.latest_ms
    }

    /// The latest time seen.
    pub fn now(&self) -> u64 {
        self.latest_ms
    }
}

#[cfg(test)]
mod tests {
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    use super::SteadyClock;

    #[test]
    fn a_clock_that_steps_back_is_held_at_the_latest_time() {
        let mut clock = SteadyClock::starting_at(1_000);
        assert_eq!(clock.observe(900), 1_000);
        assert_eq!(clock.observe(1_500), 1_500);
        assert_eq!(clock.observe(0), 1_500);
        assert_eq!(clock.now(), 1_500);
    }
}

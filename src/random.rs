//! Where jitter's randomness comes from.
//!
//! A seeded generator (SplitMix64) for tests and the replay, so the same seed
//! gives the same schedule everywhere, natively and under WASM; OS randomness
//! (through `getrandom`, the JS `crypto` backend on wasm32) by default. The OS
//! is asked once, lazily, for a 64-bit seed the first time a jitter actually
//! needs a number, so a check that never retries never pays for it.

/// A source of uniformly distributed `u64`s.
#[derive(Debug, Clone)]
pub struct RandomSource {
    state: Option<u64>,
}

impl RandomSource {
    /// A deterministic generator: the same seed gives the same numbers.
    pub const fn seeded(seed: u64) -> Self {
        RandomSource { state: Some(seed) }
    }

    /// A generator seeded from the operating system on first use.
    pub const fn from_os() -> Self {
        RandomSource { state: None }
    }

    /// The generator of one use (`stream`, a constant of its own) under
    /// the settings' `seed`: seeded, each use on a sequence of its own, or
    /// from the operating system when no seed is set.
    pub const fn for_seed(seed: Option<u64>, stream: u64) -> Self {
        match seed {
            Some(seed) => RandomSource::seeded(seed ^ stream),
            None => RandomSource::from_os(),
        }
    }

    /// The next number (SplitMix64, Steele, Lea and Flood 2014).
    pub fn next_u64(&mut self) -> u64 {
        let state = self.state.get_or_insert_with(os_seed);
        *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number uniformly drawn from `low..=high` (swapped if reversed).
    pub fn between(&mut self, low: u64, high: u64) -> u64 {
        let (low, high) = if low <= high {
            (low, high)
        } else {
            (high, low)
        };
        let span = high - low;
        if span == 0 {
            return low;
        }
        if span == u64::MAX {
            return self.next_u64();
        }
        // Lemire's multiply-shift; the bias for spans of milliseconds is
        // below 2^-40 and irrelevant to jitter.
        let r = u128::from(self.next_u64()) * u128::from(span + 1);
        low + (r >> 64) as u64
    }
}

fn os_seed() -> u64 {
    let mut bytes = [0u8; 8];
    // If the OS source fails (it does not on Linux or Node), fall back to a
    // fixed odd constant: jitter gets weaker, the preflight still works.
    match getrandom::fill(&mut bytes) {
        Ok(()) => u64::from_le_bytes(bytes),
        Err(_) => 0x2545_F491_4F6C_DD1D,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn same_seed_same_numbers_other_seed_other_numbers() {
        let a: Vec<u64> = {
            let mut r = RandomSource::seeded(7);
            (0..5).map(|_| r.next_u64()).collect()
        };
        let b: Vec<u64> = {
            let mut r = RandomSource::seeded(7);
            (0..5).map(|_| r.next_u64()).collect()
        };
        let c: Vec<u64> = {
            let mut r = RandomSource::seeded(8);
            (0..5).map(|_| r.next_u64()).collect()
        };
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn splitmix_reference_values() {
        // First outputs of SplitMix64 seeded with 0 (the reference
        // implementation's published sequence).
        let mut r = RandomSource::seeded(0);
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next_u64(), 0x6E78_9E6A_A1B9_65F4);
    }

    #[test]
    fn between_stays_in_range_and_reaches_both_ends() {
        let mut r = RandomSource::seeded(1);
        let (mut saw_low, mut saw_high) = (false, false);
        for _ in 0..2000 {
            let v = r.between(3, 6);
            assert!((3..=6).contains(&v));
            saw_low |= v == 3;
            saw_high |= v == 6;
        }
        assert!(saw_low && saw_high);
        assert_eq!(r.between(5, 5), 5);
        assert!((2..=9).contains(&r.between(9, 2)));
    }

    #[test]
    fn os_source_draws_distinct_seeds() {
        let a = RandomSource::from_os().next_u64();
        let b = RandomSource::from_os().next_u64();
        assert_ne!(
            a, b,
            "two OS-seeded generators agreed; getrandom is not wired"
        );
    }
}

//! # k8s-auth-preflight
//!
//! The policy of the Kubernetes runner hooks' permission preflight, without
//! I/O: which errors are worth a retry ([`classify`]), how long to wait
//! ([`schedule`]), whether a cached verdict may be used ([`cache`]), two
//! opt-in variants (a second copy of a slow request, [`hedge`]; a per-check
//! retry budget, [`retry_quota`]), and the three-way outcome state machine
//! that ties them together ([`preflight`]).
//! The JavaScript shim in `js-shim/` does the HTTP and file work and drives
//! the machine through the WebAssembly boundary in [`wasm`].
//!
//! The crate never reads a clock, sleeps, opens a file or a socket, or keeps
//! global state: time and randomness are inputs.
#![deny(missing_docs)]

// Talc instead of the default dlmalloc: about 7 KB less `.wasm`, which every
// hook step compiles. Single-threaded wasm only, as built here.
#[cfg(all(target_arch = "wasm32", not(target_feature = "atomics")))]
#[global_allocator]
static ALLOCATOR: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();

pub mod api_status;
pub mod bad_input;
pub mod cache;
pub mod cache_folder;
pub mod call;
pub mod check;
pub mod classify;
pub mod config;
pub mod environment;
pub mod error_codes;
pub mod identity;
pub mod json_tree;
pub mod permission;
pub mod preflight;
pub mod protocol;
pub mod random;
pub mod retry;
pub mod retry_after;
pub mod review_answer;
pub mod rules;
pub mod runner_key;
pub mod schedule;
pub mod text;
pub mod wasm;

pub use cache::{CacheKey, CachePolicy, CacheState, Unusable};
pub use classify::{classify, Class, ErrorFacts};
pub use config::{SettingError, Settings};
pub use identity::Identity;
pub use permission::{Permission, PermissionSpec};
pub use preflight::retry_quota::RetryQuota;
pub use preflight::{Action, Outcome, Preflight, ProbeResult, Source, Verdict};
pub use random::RandomSource;
pub use schedule::{Backoff, Jitter, Schedule};

/// A duration in whole milliseconds, `u64::MAX` when it does not fit.
/// One function for the whole crate, never inlined: each inlined copy of
/// `as_millis`'s `u128` arithmetic costs code in the `.wasm`.
#[inline(never)]
pub(crate) fn millis(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn millis_agrees_with_as_millis() {
        use std::time::Duration;
        for d in [
            Duration::ZERO,
            Duration::from_nanos(999_999),
            Duration::from_nanos(1_000_000),
            Duration::from_millis(90_000),
            Duration::new(12, 345_678_901),
            Duration::from_millis(u64::MAX),
            Duration::new(u64::MAX / 1000, 807_999_999),
            Duration::new(u64::MAX / 1000, 808_000_000),
            Duration::MAX,
        ] {
            let expected = u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
            assert_eq!(super::millis(d), expected, "{d:?}");
        }
    }
}

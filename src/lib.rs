//! # k8s-auth-preflight
//!
//! The policy core of the Kubernetes runner hooks' resilience, without
//! I/O. Two machines are driven by the JavaScript shim in `js-shim/`
//! through the WebAssembly boundary ([`wasm`]):
//!
//! - [`Check`] ([`check`]): one permission check of one hook step, from
//!   the first file read (runner key, record, lock) to the last line
//!   printed; its reviews run on the review machine ([`preflight`]: the
//!   three-way outcome, the rules-review fast path, hedging and the retry
//!   quota, opt-in).
//! - [`Call`] ([`call`]): every other Kubernetes call of a job, retried
//!   by the rules of its kind; a [`call::CallPolicy`] per settings makes
//!   them and keeps the breaker they report to.
//!
//! What both share: one process's settings, read once
//! ([`environment`], over [`config`]); the attempt line's parts
//! ([`retry`]: the line of attempts with its deadline and `Retry-After`,
//! the request in flight and its named timers, the steady clock, the
//! warning given once, the last error) over [`schedule`] and [`classify`] (with
//! [`error_codes`], listed once, and [`failure_stage`], how far a failed
//! request got); and the protocol's words ([`protocol`]).
//! Below them: the credential, chosen from the user's candidates
//! ([`credential`]), the record ([`cache`], [`identity`], [`runner_key`]), the
//! permission table and RBAC rules ([`permission`], [`rules`]), the
//! readers ([`json_tree`], [`review_answer`], [`api_status`]).
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
pub mod copy;
pub mod credential;
pub mod dates;
pub mod durable;
pub mod environment;
pub mod error_codes;
pub mod failure_stage;
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
pub use call::{Call, CallPolicy};
pub use check::Check;
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

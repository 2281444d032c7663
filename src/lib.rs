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

pub mod cache;
pub mod classify;
pub mod config;
pub mod hedge;
pub mod identity;
pub mod json;
pub mod permission;
pub mod preflight;
pub mod random;
pub mod retry_after;
pub mod retry_quota;
pub mod rules;
pub mod schedule;
pub mod text;
pub mod wasm;

pub use cache::{CacheKey, CachePolicy, CacheState, Unusable};
pub use classify::{classify, Class, ErrorFacts};
pub use config::{SettingError, Settings};
pub use identity::Identity;
pub use permission::{Permission, PermissionSpec};
pub use preflight::{Action, Outcome, Preflight, ProbeResult, Source, Verdict};
pub use random::RandomSource;
pub use retry_quota::RetryQuota;
pub use schedule::{Backoff, Jitter, Schedule};

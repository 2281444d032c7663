//! Every other Kubernetes call a hook makes, retried by the rules of its
//! kind: a sans-I/O machine per call ([`Call`]). The shim's wrapped clients
//! (`resilientKubeConfig`, `resilientExec`, `resilientLog`) and
//! `retryK8sApiCall` run one per call, through the boundary's `CallPolicy`
//! and `Call` (src/wasm.rs).
//!
//! ```text
//! let mut call = Call::new(&settings, CallSpec { method: "createNamespacedPod", body, .. }, now);
//! loop {
//!     match call.poll(now) {
//!         CallAction::Send { request, attempt, timeout_ms } => make the call; report on_success / on_failure
//!             (a connection: on_stream_opened / on_failure)
//!         CallAction::ReadBack { request, method, name, namespace, timeout_ms } => read it; report on_read_back / on_failure
//!         CallAction::Log { level, message } => print it, poll again
//!         CallAction::Wait { until_ms } => sleep until then or until the request settles
//!         CallAction::Done { outcome } => return, throw or give up as it says; stop
//!     }
//! }
//! ```
//!
//! The kind of operation is decided from the client method's name
//! ([`Operation::of_method`]); the rules per kind ([`policy`], docs/CALLS.md):
//!
//! - **read, list**: retried like the check, with the same classifier
//!   ([`crate::classify`]), schedule ([`crate::schedule`]), `Retry-After`
//!   and a deadline of its own (`ACTIONS_RUNNER_PREFLIGHT_CALL_DEADLINE_MS`).
//! - **create**: retried on a transient error. A 409 on a retry, after an
//!   attempt that may have been applied ([`FailureStage::may_have_applied`]),
//!   is read back and returned only when the object is ours
//!   ([`Ownership`]); otherwise, and on a first attempt always, the 409 is
//!   the caller's. A create that names no object is not sent again once
//!   an attempt may have been applied.
//! - **delete**: retried; a 404 on a retry after an attempt that may have
//!   been applied is done; otherwise the 404 is the caller's.
//! - **connect** (exec, attach, port-forward, log): only a set-up that
//!   provably never started the command is retried
//!   ([`FailureStage::setup_may_be_retried`]); once the stream is open, the
//!   call is over. A set-up that timed out or failed after its request may
//!   have gone out is never sent again: a script must never run twice.
//! - **pass-through** (patch, replace, unknown): one attempt, no timeout,
//!   no retry, no messages. Everything is pass-through with
//!   `ACTIONS_RUNNER_PREFLIGHT_RESILIENT_CALLS=off`.
//!
//! A wrapped call starts no attempt at or after its deadline, and an
//! attempt in flight is abandoned at its timeout, so the call is over by
//! the deadline plus one request timeout ([`Call::ends_by_ms`]).
//!
//! Files, one concept each: the kinds (`operation.rs`), what the host
//! says about a call (`spec.rs`), whether an object read back is ours
//! (`ownership.rs`), the rules (`policy.rs`), the messages
//! (`messages.rs`), the actions and outcomes (`action.rs`) and the machine
//! (`machine.rs`). How far a failure got is read by
//! [`crate::failure_stage`], which the durable execs share: `call` uses
//! `durable` (its [`CallPolicy`] makes the durable runs), and `durable`
//! never uses `call`.

mod action;
mod breaker;
mod call_policy;
mod machine;
mod messages;
mod operation;
mod ownership;
pub mod policy;
mod spec;

pub use crate::failure_stage::{with_upgrade_status, FailureStage};
pub use action::{Accepted, BadReport, CallAction, CallOutcome, CallResult};
pub use breaker::Breaker;
pub use call_policy::CallPolicy;
pub use machine::Call;
pub use operation::Operation;
pub use ownership::{Judgement, Ownership};
pub use spec::CallSpec;

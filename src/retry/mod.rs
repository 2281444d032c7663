//! What every retrying machine shares, written once: the check's reviews
//! ([`crate::preflight`]) and each Kubernetes call ([`crate::call`]) are
//! both a line of attempts under one deadline.
//!
//! - [`SteadyClock`]: the host's time as the machine sees it, which never
//!   runs backwards.
//! - [`Line`]: one line of attempts (a review, a call): its schedule, its
//!   start and deadline, and the wait before the next attempt (the
//!   server's `Retry-After` when it pushed back).
//! - [`Trouble`]: what a line of attempts has met so far: whether the
//!   warning was printed (once), the last error, how many failures were
//!   retried.
//! - [`messages`]: the words both machines print.
//!
//! What differs stays with each machine: the check hedges and spends a
//! retry quota per review; a call decides by the kind of its operation.

mod clock;
mod line;
pub mod messages;
mod trouble;

pub use clock::SteadyClock;
pub use line::Line;
pub use trouble::Trouble;

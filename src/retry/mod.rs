//! What every retrying machine shares, written once: the check's reviews
//! ([`crate::preflight`]) and each Kubernetes call ([`crate::call`]) are
//! both a line of attempts under one deadline.
//!
//! - [`SteadyClock`]: the host's time as the machine sees it, which never
//!   runs backwards.
//! - [`Line`]: one line of attempts (a review, a call): its schedule, its
//!   start and deadline, and the wait before the next attempt (the
//!   server's `Retry-After` when it pushed back).
//! - [`InFlight`]: one request out: its number ([`RequestNumbers`]), when
//!   it was sent, and its named [`Timers`] (its timeout, when the host
//!   abandons it, any of the machine's own), the earliest of which is
//!   when to wake.
//! - [`Trouble`]: what a line of attempts has met so far: whether the
//!   warning was printed (once), the last error, how many failures were
//!   retried.
//! - [`messages`]: the words both machines print.
//!
//! What differs stays with each machine: the check hedges (a second
//! [`InFlight`] copy of a review) and spends a retry quota per review; a
//! call decides by the kind of its operation, and keeps a read that timed
//! out as an [`InFlight`] it no longer waits for.

mod clock;
mod in_flight;
mod line;
pub mod messages;
mod request_numbers;
mod timers;
mod trouble;

pub use clock::SteadyClock;
pub use in_flight::InFlight;
pub use line::Line;
pub use request_numbers::RequestNumbers;
pub use timers::{Timer, Timers};
pub use trouble::Trouble;

//! Durable execs: a command with no stdin and no tty that survives its exec
//! stream being cut ([`DurableRun`]).
//!
//! The command runs detached in the pod: a start exec claims the run
//! (a mark made with `O_EXCL`, so nothing can start it twice), launches it in a
//! session of its own with stdin from `/dev/null` and stdout and stderr to
//! files, and then, like every later attach exec, streams those files from
//! the byte offsets the host has already received. When the command ends
//! its exit code is written to a file; the reader that sent the last byte
//! exits with it (a finish exec reads it when that status could be one of
//! ours), the code is delivered to the caller in client-node's `V1Status`
//! shapes, and a clean-up exec removes the run's files after.
//!
//! The machine decides everything: which pod step comes next, when (the
//! shared attempt line, [`crate::retry::Line`], restarted at each cut and
//! bounded by the time without a connection), what each end of a step
//! means, and every message. The host builds the pod-side shell commands
//! from the steps it is asked for (`js-shim/pod-commands.js`), runs them,
//! and reports facts.

mod action;
mod delivered;
mod machine;
mod messages;
mod pod_status;
mod reasons;
mod stopping;

pub use action::{
    Delivery, DurableAction, DurableFact, PodStep, StepEnd, StepOutput, OWN_STDIO_WAIT_MS,
    UTILITIES,
};
pub use delivered::{Delivered, DeliveredRuns, LEDGER_NAME};
pub use machine::{DurableRun, DurableSpec, PING_EVERY_MS};
pub use messages::plain_cut;
pub use pod_status::{exit_status_of, shell_table};
pub use reasons::{is_incomplete, INCOMPLETE};
pub use stopping::{raise_after_stop, STOP_WAIT_MS};

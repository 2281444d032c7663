//! What a durable run asks the host to do ([`DurableAction`]), what the
//! host reports ([`DurableFact`]), what the caller gets ([`Delivery`]), and
//! what the exit status of each pod-side step means ([`StepEnd`]).

use crate::classify::ErrorFacts;
use crate::protocol::Level;

use super::pod_status::{
    BROKE, MISSING_UTILITY_FIRST, NAME_TAKEN, NOT_A_PROGRAM, NO_FOLDER, NO_RECORD, OUTPUT_NOT_KEPT,
    SHELL_NOT_FOUND, WATCHER_GONE,
};

/// The utilities the pod-side steps use besides `sh` and its builtins, in
/// the order the start step checks for them: each is in GNU coreutils and
/// BusyBox alike, but `setsid` (util-linux and BusyBox; coreutils has no way
/// to start a session). The start step exits with `200 + index` of the
/// first one missing, before it claims anything.
pub const UTILITIES: &[&str] = &[
    "mkdir", "mkfifo", "setsid", "tail", "head", "wc", "cat", "rm", "sleep",
];

/// How long a delivery waits, at most, for the host process's own stdout
/// and stderr (when they are the caller's streams) to hand what they hold
/// to the OS before the status goes: a reattach delivers its backlog at
/// once, more than a pipe holds, and a caller that exits on the status
/// would cut it.
pub const OWN_STDIO_WAIT_MS: u64 = 10_000;

/// One pod-side step of a run, each an exec of `sh -c` the host builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PodStep {
    /// Check the utilities and that the command is a program; claim the
    /// run (a mark made with `O_EXCL`); if the claim is ours, launch the command
    /// detached; then attach (below). A run already claimed is only
    /// attached to: never started again.
    Start,
    /// Exit 0 when the run has a folder (it was claimed), 98 when not: made
    /// before another start when a start may have reached the pod.
    Look,
    /// Stream the run's stdout and stderr files from the offsets the host
    /// has received, until the command has ended and everything is sent;
    /// then exit with the command's code (98 when the run has no folder, or
    /// its output files were removed before the end).
    Attach,
    /// Print the run's `done`: the command's code and the sizes of its
    /// stdout and stderr (97 when it is not done, 98 with no folder).
    Finish,
    /// Remove the run's files, leaving its folder with a `done` mark: a
    /// start that arrives late finds the run claimed.
    Cleanup,
    /// Stop the command's process group (TERM, then KILL), then leave the
    /// run as a clean-up does.
    Kill,
}

/// What the host does with the output a step's exec brings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepOutput {
    /// Passed on to the caller's streams, and counted: the command's.
    Caller,
    /// The first `bytes` of stdout kept and reported with the step's end;
    /// the rest, and stderr, dropped.
    Kept {
        /// How many.
        bytes: u64,
    },
    /// Dropped.
    Dropped,
}

// What a finish prints: a code and two sizes (3 + 20 + 20 digits and two
// spaces); anything past this is not what a finish prints.
const FINISH_OUTPUT_BYTES: u64 = 64;

impl PodStep {
    /// What the host does with this step's output.
    pub fn output(self) -> StepOutput {
        match self {
            PodStep::Start | PodStep::Attach => StepOutput::Caller,
            PodStep::Finish => StepOutput::Kept {
                bytes: FINISH_OUTPUT_BYTES,
            },
            PodStep::Look | PodStep::Cleanup | PodStep::Kill => StepOutput::Dropped,
        }
    }
}

/// How a pod-side step's exec ended, from the exit status it reported. A
/// start or an attach that sent all of the command's output exits with the
/// command's code; the statuses below other than `Code` are our own steps',
/// and since a command may exit with them too, a start's or an attach's is
/// confirmed by a finish step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepEnd {
    /// Any status not ours: for a start or an attach the command's code;
    /// for the other steps, 0 is done.
    Code(i64),
    /// 92: the container's environment sets a variable named as one of the
    /// pod program's own: nothing was claimed, and the exec runs plainly
    /// (the command would get our value of it).
    NameTaken,
    /// 93: a relay could not write the command's output into its file (a
    /// full disk, a file size limit): the output is incomplete.
    OutputNotKept,
    /// 94: the process in the pod that waits for the command ended without
    /// writing its code (something killed or stopped it): the code will
    /// never come.
    WatcherGone,
    /// 95: the command is not a program on the container's `PATH` (a shell
    /// builtin, a missing file): nothing was claimed.
    NotAProgram,
    /// 96: the run's folder cannot be made (no writable temp folder).
    NoFolder,
    /// 97: the step broke (its reader lost its stream), the run is not
    /// done yet, or what was sent does not add up to what is left.
    Broke,
    /// A status no shell gives (below 0, above 255): garbled on its way.
    Garbled,
    /// 98: the run has no folder (never claimed, or removed).
    NoRecord,
    /// 126, 127: `sh` could not run our script.
    NoShell,
    /// The container's runtime found no `sh` to run: the step never ran.
    ShellNotFound,
    /// 128 to 255 (but a missing utility's): a signal ended the step's own
    /// shell (a pod being deleted kills it), or the command's.
    Signalled(i64),
    /// 200 + i: utility `i` of [`UTILITIES`] is missing.
    Missing(&'static str),
}

impl StepEnd {
    /// The meaning of exit status `code`.
    pub fn of(code: i64) -> StepEnd {
        match code {
            SHELL_NOT_FOUND => StepEnd::ShellNotFound,
            // No shell gives these: a status garbled on its way.
            ..0 | 256.. => StepEnd::Garbled,
            c if c == NAME_TAKEN.code => StepEnd::NameTaken,
            c if c == OUTPUT_NOT_KEPT.code => StepEnd::OutputNotKept,
            c if c == WATCHER_GONE.code => StepEnd::WatcherGone,
            c if c == NOT_A_PROGRAM.code => StepEnd::NotAProgram,
            c if c == NO_FOLDER.code => StepEnd::NoFolder,
            c if c == BROKE.code => StepEnd::Broke,
            c if c == NO_RECORD.code => StepEnd::NoRecord,
            126 | 127 => StepEnd::NoShell,
            c if c >= MISSING_UTILITY_FIRST => match usize::try_from(c - MISSING_UTILITY_FIRST)
                .ok()
                .and_then(|i| UTILITIES.get(i))
            {
                Some(name) => StepEnd::Missing(name),
                None => StepEnd::Signalled(code),
            },
            128.. => StepEnd::Signalled(code),
            other => StepEnd::Code(other),
        }
    }
}

/// What the caller of `exec` gets through its status callback.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivery {
    /// The command exited 0.
    Success,
    /// The command exited with this code (1..=255).
    ExitCode(i64),
    /// The run's outcome is unknown, or it failed for a reason of the pod's:
    /// `message` says which, and whether the command may still be running.
    Failed {
        /// A short reason for the status's `reason` field.
        reason: &'static str,
        /// The message.
        message: String,
    },
}

/// What the host must do next. Poll again after each, but `Done`.
#[must_use]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DurableAction {
    /// Run pod step `step` of run `run` as an exec, report its end under
    /// `request`; abandon its set-up after `setup_timeout_ms` (the steps are
    /// safe to make again, so a slow one is cut); once its stream is open,
    /// ping every `ping_every_ms` and count no pong for `pong_deadline_ms`
    /// as a cut.
    Exec {
        /// The report number.
        request: u32,
        /// Which step.
        step: PodStep,
        /// The run's id (its folder's name).
        run: String,
        /// For a start: delivered runs of the pod whose files it removes.
        cleanup: Vec<String>,
        /// Abandon a set-up whose connection is not made by then.
        connect_timeout_ms: u64,
        /// Abandon a set-up that takes longer.
        setup_timeout_ms: u64,
        /// How often to ping an open stream.
        ping_every_ms: u64,
        /// No pong for this long is a cut.
        pong_deadline_ms: u64,
    },
    /// Read the pod: report whether it exists, its phase and its reason.
    ReadPod {
        /// The report number.
        request: u32,
        /// Abandon it after this long.
        timeout_ms: u64,
    },
    /// Read the ledger of delivered runs (`file`, at most `limit + 1`
    /// bytes, a regular file only, no link followed) and report its text
    /// (`Ledger`), or none when it could not be read.
    ReadLedger {
        /// Its path.
        file: String,
        /// How much of it to read.
        limit: usize,
    },
    /// Append `text` to the ledger `file` (made if missing, mode 0600, no
    /// link followed), best effort: nothing is reported.
    AppendLedger {
        /// Its path.
        file: String,
        /// Whole lines.
        text: String,
    },
    /// Resolve the caller's `exec` promise: the run's stream is open.
    Resolve,
    /// Reject the caller's `exec` promise with what request `request`
    /// failed with, as the plain client would have rejected it.
    Reject {
        /// The request whose error the caller gets.
        request: u32,
    },
    /// Run the command as a plain exec instead: the container cannot run it
    /// durably, and it was not started.
    Plain,
    /// Print a line.
    Log {
        /// How to print it.
        level: Level,
        /// The text.
        message: String,
    },
    /// Give the caller `delivery` through its status callback.
    Deliver {
        /// What the caller gets.
        delivery: Delivery,
    },
    /// Nothing to do until `until_ms` or until a fact arrives; `None`: until
    /// a fact arrives.
    Wait {
        /// When to poll again at the latest.
        until_ms: Option<u64>,
    },
    /// Nothing to do until `until_ms`, and nothing that should keep the
    /// process alive: a host that ends meanwhile loses nothing.
    Idle {
        /// When to poll again.
        until_ms: u64,
    },
    /// The run is over for this process: abort anything in flight.
    Done,
}

impl DurableAction {
    /// Whether the host has nothing more to do now after this one: a
    /// wait, an idle wait, or the end.
    pub fn ends_turn(&self) -> bool {
        matches!(
            self,
            DurableAction::Wait { .. } | DurableAction::Idle { .. } | DurableAction::Done
        )
    }
}

/// What the host saw.
#[derive(Debug, Clone, PartialEq)]
pub enum DurableFact {
    /// The stream of request `request` opened.
    Opened {
        /// Which request.
        request: u32,
    },
    /// The stream of request `request` ended: with its step's exit status
    /// (`Some`) and what that step printed to stdout (only a finish step's
    /// is kept), or with no status (`None`: closed, reset, or no pong),
    /// `why` saying what the host saw. `received` is how many bytes of the
    /// command's stdout and stderr the host has passed on in all.
    Ended {
        /// Which request.
        request: u32,
        /// The bytes of stdout and of stderr passed on so far.
        received: (u64, u64),
        /// The step's exit status, if a status arrived.
        exit_code: Option<i64>,
        /// The step's own stdout (a finish step's code).
        stdout: String,
        /// What the host saw when no status arrived.
        why: String,
    },
    /// The set-up of request `request` failed before a stream opened (a
    /// pod read failed).
    Failed {
        /// Which request.
        request: u32,
        /// What the error said.
        facts: ErrorFacts,
    },
    /// The pod was read: `found` false for a 404.
    Pod {
        /// Which request.
        request: u32,
        /// Whether it exists.
        found: bool,
        /// Its `status.phase`.
        phase: Option<String>,
        /// Whether it is being deleted.
        deleting: bool,
    },
    /// What the ledger of delivered runs holds: `None` when it could not be
    /// read (missing, not a regular file, too long).
    Ledger {
        /// Its text.
        text: Option<String>,
    },
    /// The hook process is being stopped (`signal`): stop the command.
    Cancel {
        /// The signal's name.
        signal: String,
    },
    /// The caller closed the stream before its status: stop attaching, and
    /// leave the command running, as closing a plain exec's stream does.
    Closed,
}

#[cfg(test)]
#[path = "action_tests.rs"]
mod tests;

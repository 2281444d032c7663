//! What the check asks the caller to do ([`CheckAction`]) and the plain
//! facts the caller reports back ([`Fact`]).
//!
//! Every file action is done at once, in the order given, and answered by
//! exactly one fact of the kind its doc names; a `Send` is answered by a
//! [`Fact::Response`] whenever its request settles.

use crate::preflight::{Outcome, ProbeResult, Request};
use crate::runner_key::KeyFileReport;
use serde::Serialize;

pub use crate::protocol::Level;

/// What the caller must do next; on the wire `{type: 'readKeyFile', file,
/// limit}`, ... (camelCase names and keys).
#[must_use]
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum CheckAction {
    /// Report what is at the runner key file's path ([`Fact::KeyFile`]):
    /// `lstat` (never following a link), then for a regular file at most
    /// `limit + 1` bytes read through `O_NOFOLLOW`.
    ReadKeyFile {
        /// The key file's path.
        file: String,
        /// The most bytes worth reading.
        limit: u32,
    },
    /// Create the key file holding `text` (make `folder`, mode 0700, first
    /// when given; a temp file, mode 0600, hard-linked to `file`), then
    /// report what is at the path as for `ReadKeyFile`, with the error code
    /// of the step that failed, if one did ([`Fact::KeyFile`]).
    CreateKeyFile {
        /// The key file's path.
        file: String,
        /// The folder to make first, if any.
        #[serde(skip_serializing_if = "Option::is_none")]
        folder: Option<String>,
        /// The new file's content.
        text: String,
        /// The most bytes worth reading back.
        limit: u32,
    },
    /// Read the cache record: open with `O_NOFOLLOW | O_NONBLOCK`, check
    /// that it is a regular file, read at most `limit + 1` bytes
    /// ([`Fact::Record`]).
    ReadRecord {
        /// The record's path.
        file: String,
        /// The most bytes a record may have.
        limit: u32,
    },
    /// Create the lock: a temp file next to it (`O_EXCL | O_NOFOLLOW`, mode
    /// 0600) holding `content`, hard-linked to `file`; the temp file is
    /// removed either way ([`Fact::LockCreated`]).
    CreateLock {
        /// The lock's path.
        file: String,
        /// What the lock holds.
        content: String,
    },
    /// Look at the lock: `lstat` (never following a link), then for a
    /// regular file its content, read as a record is, at most `limit + 1`
    /// bytes ([`Fact::LockSeen`]).
    InspectLock {
        /// The lock's path.
        file: String,
        /// The most bytes a lock may have.
        limit: u32,
    },
    /// Ask whether process `pid` of this host exists (signal 0)
    /// ([`Fact::Process`]).
    ProbeProcess {
        /// The process id.
        pid: u32,
    },
    /// Remove this file (a stale lock, or our own lock) ([`Fact::Removed`]).
    RemoveFile {
        /// The path.
        file: String,
    },
    /// Write the record atomically: a temp file next to it, fsynced, renamed
    /// over `file` ([`Fact::Written`]).
    WriteRecord {
        /// The record's path.
        file: String,
        /// Its content.
        text: String,
    },
    /// Delete the record ([`Fact::Deleted`]).
    DeleteRecord {
        /// The record's path.
        file: String,
    },
    /// Start this request now, abandon it after `timeout_ms`, and report its
    /// result whenever it settles ([`Fact::Response`]).
    Send {
        /// Which probe.
        probe: usize,
        /// Which request of that probe.
        attempt: u32,
        /// What to send.
        request: Request,
        /// Abort the request after this long and report it as timed out.
        timeout_ms: u64,
    },
    /// Print this line.
    Log {
        /// At what level.
        level: Level,
        /// The text.
        message: String,
    },
    /// Nothing more to do until `until_ms` (Unix epoch ms) or until a
    /// request settles, whichever comes first; then step again. After file
    /// actions, step again at once with their facts.
    Wait {
        /// When to step again at the latest.
        until_ms: u64,
    },
    /// The check is over: abort anything still in flight. Every later step
    /// returns the same.
    Done {
        /// What was decided.
        outcome: Outcome,
    },
}

/// What a file at a path turned out to be, as `lstat`/`fstat` said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordRead {
    /// The open failed with this error code (`ENOENT`, `ELOOP`, ...).
    OpenFailed {
        /// The errno code, or the error's message if it had none.
        code: String,
    },
    /// What was opened is not a regular file.
    NotAFile,
    /// The read failed with this error code.
    ReadFailed {
        /// The errno code, or the error's message if it had none.
        code: String,
    },
    /// The file's first bytes (at most the limit + 1).
    Bytes(Vec<u8>),
}

/// What creating the lock did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockCreated {
    /// Linked: the lock is ours.
    Linked,
    /// The temp file could not be written (read-only or full disk, ...).
    TempFailed {
        /// The errno code.
        code: String,
    },
    /// The link failed (`EEXIST`: a lock is there).
    LinkFailed {
        /// The errno code.
        code: String,
        /// The temp file's modification time, Unix epoch ms: the clock of
        /// the file system that stamps the lock's time too (`None` if it
        /// could not be read). Lock ages are measured against it, so a
        /// process clock that differs from the file server's (NFS, a
        /// host's own `now`) does not age a fresh lock.
        fs_now_ms: Option<u64>,
    },
}

/// What looking at the lock found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockSeen {
    /// `lstat` failed with this code (`ENOENT`: it is gone).
    StatFailed {
        /// The errno code.
        code: String,
    },
    /// Something is there.
    Found {
        /// A regular file (not a link, a folder, a FIFO...).
        is_file: bool,
        /// Its modification time, Unix epoch ms.
        mtime_ms: u64,
        /// For a regular file, its first bytes; `None` if it could not be
        /// read.
        content: Option<Vec<u8>>,
    },
}

/// A fact the caller reports: the result of one action (read at the
/// boundary by `src/wasm/wire/check.rs`).
#[derive(Debug, Clone, PartialEq)]
pub enum Fact {
    /// After `ReadKeyFile` or `CreateKeyFile`.
    KeyFile(KeyFileReport),
    /// After `ReadRecord`.
    Record(RecordRead),
    /// After `CreateLock`.
    LockCreated(LockCreated),
    /// After `InspectLock`.
    LockSeen(LockSeen),
    /// After `ProbeProcess`: the error code of `kill(pid, 0)`, `None` if it
    /// succeeded.
    Process {
        /// The errno code (`ESRCH`, `EPERM`), or `None`.
        code: Option<String>,
    },
    /// After `RemoveFile`: the error code, `None` if it was removed.
    Removed {
        /// The errno code, or `None`.
        code: Option<String>,
    },
    /// After `WriteRecord`: the error code, `None` if it was written.
    Written {
        /// The errno code, or `None`.
        code: Option<String>,
    },
    /// After `DeleteRecord`: the error code, `None` if it was deleted.
    Deleted {
        /// The errno code, or `None`.
        code: Option<String>,
    },
    /// What request `attempt` of `probe` returned.
    Response {
        /// Which probe.
        probe: usize,
        /// Which request of that probe.
        attempt: u32,
        /// Its result.
        result: ProbeResult,
    },
}

impl From<crate::preflight::Action> for CheckAction {
    /// The request machine's action as the check's.
    fn from(action: crate::preflight::Action) -> CheckAction {
        use crate::preflight::Action;
        match action {
            Action::Send {
                probe,
                attempt,
                request,
                timeout_ms,
            } => CheckAction::Send {
                probe,
                attempt,
                request,
                timeout_ms,
            },
            Action::Log { level, message } => CheckAction::Log { level, message },
            Action::Wait { until_ms } => CheckAction::Wait { until_ms },
            Action::Done { outcome } => CheckAction::Done { outcome },
        }
    }
}

impl Fact {
    /// The fact's name, as the shim spells its `type` (for messages).
    pub fn name(&self) -> &'static str {
        match self {
            Fact::KeyFile(_) => "keyFile",
            Fact::Record(_) => "record",
            Fact::LockCreated(_) => "lockCreated",
            Fact::LockSeen(_) => "lockSeen",
            Fact::Process { .. } => "process",
            Fact::Removed { .. } => "removed",
            Fact::Written { .. } => "written",
            Fact::Deleted { .. } => "deleted",
            Fact::Response { .. } => "response",
        }
    }
}

//! The removal of what an attempt may have written (see
//! [`super::listing`]): what the host is given to run, and what one run of
//! it came to.
//!
//! The same script (`pod/copy-remove.sh`) runs in the pod, for a copy into
//! it, and on the runner, for a copy out of it: it goes into the folder,
//! reads the names one a line, removes each file and each empty folder it
//! finds there (never through a link, never a folder that still holds
//! something), and prints [`REMOVED_MARK`] when it has read the end line.

use super::verdict::{open_failed, tail, Verdict};
use crate::classify::ErrorFacts;

/// The line the script prints once it has read [`END_LINE`].
pub const REMOVED_MARK: &str = "k8s-auth-preflight-removed";

/// The line after the last name: no name is `/` (names are relative), so
/// a script that reads it has read every name.
pub const END_LINE: &str = "/";

/// Where the names are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// In the pod's folder: the script runs as an exec.
    Pod,
    /// In the runner's folder: the script runs as a local `sh`.
    Runner,
}

/// The script's input: each name on a line, a backslash written `\\` and
/// a newline `\n` (the script reads those back with `printf %b`), then the
/// end line.
pub fn input(names: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    for name in names {
        for &b in name {
            match b {
                b'\\' => out.extend_from_slice(b"\\\\"),
                b'\n' => out.extend_from_slice(b"\\n"),
                b => out.push(b),
            }
        }
        out.push(b'\n');
    }
    out.extend_from_slice(END_LINE.as_bytes());
    out.push(b'\n');
    out
}

/// What the host saw of one run of the script.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Removal {
    /// The end of its stdout.
    pub out: String,
    /// The end of its stderr.
    pub err: String,
    /// In the pod: the exec's status, if one came.
    pub status: Option<super::ExecStatus>,
    /// On the runner: its exit code, or `None` when it did not exit by
    /// itself.
    pub exit_code: Option<i64>,
    /// In the pod: the exec could not be opened.
    pub open_error: Option<ErrorFacts>,
}

/// What one run came to: `Accept` (its byte count and hash unused) when
/// every name was read and every leftover found is gone.
pub fn removed(place: Place, run: &Removal) -> Verdict {
    if let Some(facts) = &run.open_error {
        return open_failed(facts);
    }
    let ended_well = match place {
        Place::Pod => {
            let Some(status) = &run.status else {
                return Verdict::Again("its stream ended with no status".into());
            };
            if crate::durable::is_incomplete(&status.reason) {
                return Verdict::Again(format!("its stream was cut ({})", status.message));
            }
            status.status == "Success"
        }
        Place::Runner => run.exit_code == Some(0),
    };
    let read_all = run.out.split('\n').any(|line| line == REMOVED_MARK);
    if ended_well && read_all {
        return Verdict::Accept {
            bytes: 0,
            sha256: String::new(),
        };
    }
    let how = if read_all {
        "some could not be removed"
    } else {
        "the script did not read them all"
    };
    Verdict::Fail(format!("{how}: {}", tail(&run.err)))
}

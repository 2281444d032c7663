//! A folder copied into or out of a pod with one exec of `tar`, accepted
//! only when the bytes the pod counted and hashed as they went through are
//! the bytes the runner counted and hashed, in the same exec: no listing of
//! files afterwards, no process per file, no sleeping on a mismatch.
//!
//! The host (`js-shim/copy.js`) makes each attempt and reports what it saw
//! ([`Attempt`]); [`verdict`] reads it, and [`CopyRun`] decides what comes
//! next: done, the whole copy again after a wait, or a failure that says
//! why. A cut stream or bytes that arrived different are copied again; what
//! the same bytes would meet again (a folder tar cannot write, an exec that
//! cannot be opened) fails at once.

mod listing;
mod removal;
mod report;
mod run;
mod verdict;

pub use listing::written;
pub use removal::{input as removal_input, removed, Place, Removal, END_LINE, REMOVED_MARK};
pub use report::{Check, Report, REPORT_MARK};
pub use run::{CopyAction, CopyOutcome, CopyRun, ATTEMPTS, WAITS_MS};
pub use verdict::{verdict, Verdict};

/// Which way the bytes go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// From a folder of the runner into a folder of the pod.
    ToPod,
    /// From a folder of the pod into a folder of the runner.
    FromPod,
}

/// What one copy is: its way, its container, and its two folders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopySpec {
    /// Which way.
    pub direction: Direction,
    /// The pod's namespace.
    pub namespace: String,
    /// The pod's name.
    pub pod: String,
    /// The container in it.
    pub container: String,
    /// The folder copied (the runner's into the pod; the pod's out of it).
    pub from: String,
    /// Where it goes: into the pod, the folder its contents go into; out of
    /// the pod, the runner's folder that gets a folder named as `from`'s
    /// last part (the hooks' `execCpFromPod`).
    pub to: String,
}

/// A spec that cannot be copied, said plainly.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field} {problem}")]
pub struct BadSpec {
    /// The field.
    pub field: &'static str,
    /// What is wrong with it.
    pub problem: &'static str,
}

impl CopySpec {
    /// The spec, checked: every name and path non-empty and free of NUL (no
    /// program can be given one); a pod folder copied out has a last part to name
    /// the runner's copy after.
    pub fn new(
        direction: Direction,
        [namespace, pod, container]: [String; 3],
        from: String,
        to: String,
    ) -> Result<CopySpec, BadSpec> {
        let fields = [
            ("namespace", &namespace),
            ("pod", &pod),
            ("container", &container),
            ("from", &from),
            ("to", &to),
        ];
        for (field, value) in fields {
            if value.is_empty() {
                return Err(BadSpec {
                    field,
                    problem: "is empty",
                });
            }
            if value.as_bytes().contains(&0) {
                return Err(BadSpec {
                    field,
                    problem: "holds a NUL byte",
                });
            }
        }
        let spec = CopySpec {
            direction,
            namespace,
            pod,
            container,
            from,
            to,
        };
        if direction == Direction::FromPod && spec.pod_parts().1.is_empty() {
            return Err(BadSpec {
                field: "from",
                problem: "names no folder (it is / or ends in . or ..)",
            });
        }
        Ok(spec)
    }

    /// A pod folder copied out, as the parent `tar -C` goes into and the
    /// name it packs: `/__w/_temp/x/` is `("/__w/_temp", "x")`, `x` is
    /// `(".", "x")`, and a last part `.` or `..` is no name.
    pub fn pod_parts(&self) -> (String, String) {
        let path = self.from.trim_end_matches('/');
        // (`split_at_checked` rather than indexing: a slice that can panic
        // brings the panic's Unicode tables into the .wasm.)
        let (parent, name) = match path.rfind('/').and_then(|i| path.split_at_checked(i)) {
            Some(("", name)) => ("/", name.strip_prefix('/').unwrap_or(name)),
            Some((parent, name)) => (parent, name.strip_prefix('/').unwrap_or(name)),
            None => (".", path),
        };
        let name = if name == "." || name == ".." {
            ""
        } else {
            name
        };
        (parent.to_string(), name.to_string())
    }

    /// The arguments of the pod-side script: the folder to unpack into, or
    /// the parent and the name to pack.
    pub fn pod_args(&self) -> Vec<String> {
        match self.direction {
            Direction::ToPod => vec![self.to.clone()],
            Direction::FromPod => {
                let (parent, name) = self.pod_parts();
                vec![parent, name]
            }
        }
    }

    /// "into pod p at /x" or "out of pod p from /x", for messages.
    pub fn what(&self) -> String {
        match self.direction {
            Direction::ToPod => {
                format!("copy of {} into pod {} at {}", self.from, self.pod, self.to)
            }
            Direction::FromPod => format!(
                "copy of {} out of pod {} into {}",
                self.from, self.pod, self.to
            ),
        }
    }
}

/// What the host saw of one attempt.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Attempt {
    /// How many bytes of the archive the runner counted (sent into the
    /// pod, or received out of it).
    pub runner_bytes: u64,
    /// Their SHA-256, as lowercase hex.
    pub runner_sha256: String,
    /// Their POSIX `cksum` CRC (over the bytes and their count).
    pub runner_cksum: u32,
    /// The runner's `tar`'s exit code, or `None` when it did not exit by
    /// itself (a signal, or it could not start).
    pub runner_tar: Option<i64>,
    /// The end of what the runner's `tar` wrote to stderr, or why it could
    /// not start.
    pub runner_tar_error: String,
    /// The end of the pod's stdout and stderr as they arrived.
    pub pod_out: String,
    /// See `pod_out`.
    pub pod_err: String,
    /// The exec's status, if one came.
    pub status: Option<ExecStatus>,
    /// The exec could not be opened: its error's facts, as the caller's
    /// client gave it (after that client's own retries), the credential
    /// hidden.
    pub open_error: Option<crate::classify::ErrorFacts>,
    /// The exec stream's subprotocol (`v5.channel.k8s.io`, ...), when it
    /// opened and the client said.
    pub protocol: Option<String>,
    /// What the runner's `tar` listed: each name it packed (into the pod)
    /// or unpacked (out of it), escaped, one a line ([`listing`]).
    pub listing: Vec<u8>,
    /// Whether that listing is whole: the runner's `tar` ended by itself
    /// (one that is killed loses what it had not yet written of it).
    pub listing_whole: bool,
}

/// The parts of a `V1Status` the verdict reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecStatus {
    /// `Success` or `Failure`.
    pub status: String,
    /// Its reason (`NonZeroExitCode`, or one of this package's own when
    /// the stream was cut).
    pub reason: String,
    /// Its message.
    pub message: String,
    /// The message of its `ExitCode` cause: the script's exit status.
    pub exit_code: Option<String>,
}

#[cfg(test)]
mod tests;

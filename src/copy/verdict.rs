//! What one attempt of a copy came to.

use super::{Attempt, Check, Direction, Report};

/// What one attempt came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The pod got the runner's bytes (or the runner the pod's), and both
    /// tars ended well: `bytes` of them, with SHA-256 `sha256`.
    Accept {
        /// How many.
        bytes: u64,
        /// Their hash.
        sha256: String,
    },
    /// The copy did not arrive whole, and another may: why.
    Again(String),
    /// The same bytes would meet the same end: why.
    Fail(String),
}

// What GNU tar exits with when a file changed, grew or went while it was
// packed: the archive is whole, but not of one moment. Anything else from
// the packing tar (2: a fatal error, BusyBox's 1 included) is not a race.
const TAR_SOME_FILES_DIFFER: i64 = 1;

// The exec subprotocol in which a client can close its stdin and still
// read the command's output and status.
const STDIN_CLOSES: &str = "v5.channel.k8s.io";

/// What `attempt` of a copy `direction` came to.
pub fn verdict(direction: Direction, attempt: &Attempt) -> Verdict {
    if let Some(facts) = &attempt.open_error {
        return open_failed(facts);
    }
    let cut = match &attempt.status {
        None => Some("its stream ended with no status".to_string()),
        Some(status) if crate::durable::is_incomplete(&status.reason) => {
            Some(format!("its stream was cut ({})", status.message))
        }
        Some(_) => None,
    };
    if direction == Direction::ToPod && cut.is_some() {
        if let Some(protocol) = attempt.protocol.as_deref().filter(|p| *p != STDIN_CLOSES) {
            // Before v5 the client ends stdin by closing the whole stream:
            // no report can come back, on any attempt.
            return Verdict::Fail(format!(
                "the apiserver chose {protocol} for its exec, where the end of the archive closes the stream, so no report can come back; a copy into a pod needs {STDIN_CLOSES} (Kubernetes 1.30 and later)"
            ));
        }
    }
    if let Some(cut) = cut {
        return Verdict::Again(cut);
    }
    let Some(status) = &attempt.status else {
        return Verdict::Again("its stream ended with no status".into());
    };
    let report_stream = match direction {
        Direction::ToPod => &attempt.pod_out,
        Direction::FromPod => &attempt.pod_err,
    };
    let Some((report, before)) = Report::find(report_stream) else {
        // (The status's message names the command, the whole script: its
        // exit status says as much.)
        let how = match &status.exit_code {
            Some(code) => format!("its script exited with {code}"),
            None => format!("its status was {}", status.status),
        };
        return Verdict::Fail(format!(
            "the pod did not report the bytes it got ({how}): {}",
            tail(&attempt.pod_err)
        ));
    };
    // Into the pod, its tar's words are on stderr; out of it, before the
    // report on stderr (stdout is the archive).
    let pod_error = match direction {
        Direction::ToPod => attempt.pod_err.as_str(),
        Direction::FromPod => before,
    };
    // The runner's check of the same kind as the pod's.
    let runner = (
        attempt.runner_bytes,
        match &report.check {
            Check::Cksum(_) => Check::Cksum(attempt.runner_cksum),
            Check::Sha256(_) => Check::Sha256(attempt.runner_sha256.clone()),
        },
    );
    let pod = (report.bytes, report.check.clone());
    let (sent, arrived) = match direction {
        Direction::ToPod => (runner, pod),
        Direction::FromPod => (pod, runner),
    };
    if sent != arrived {
        let how = if sent.0 == arrived.0 {
            "other bytes in their place"
        } else {
            "a different count"
        };
        return Verdict::Again(format!(
            "{} bytes were sent and {} arrived, {how}",
            sent.0, arrived.0
        ));
    }
    let runner_tar = (attempt.runner_tar, attempt.runner_tar_error.as_str());
    let pod_tar = (Some(report.tar), pod_error);
    let (packer, unpacker, packer_where, unpacker_where) = match direction {
        Direction::ToPod => (runner_tar, pod_tar, "the runner", "the pod"),
        Direction::FromPod => (pod_tar, runner_tar, "the pod", "the runner"),
    };
    match packer.0 {
        Some(0) => {}
        Some(TAR_SOME_FILES_DIFFER) => {
            return Verdict::Again(format!(
                "files changed in {packer_where} while tar packed them: {}",
                tail(packer.1)
            ))
        }
        code => return Verdict::Fail(tar_failed("pack", packer_where, code, packer.1)),
    }
    match unpacker.0 {
        Some(0) => Verdict::Accept {
            bytes: sent.0,
            sha256: attempt.runner_sha256.clone(),
        },
        code => Verdict::Fail(tar_failed("unpack", unpacker_where, code, unpacker.1)),
    }
}

/// An exec that could not be opened: its client retried what may be
/// retried for a command that must not run twice. A copy may run twice
/// (the same archive unpacked over itself), and so may a removal, so what
/// may pass is made again; what will not (no such pod, a bad credential)
/// fails.
pub(super) fn open_failed(facts: &crate::classify::ErrorFacts) -> Verdict {
    // (The `ws` client gives an upgrade's HTTP answer in its message.)
    let facts = crate::failure_stage::with_upgrade_status(facts.clone());
    match crate::classify::classify(&facts, 0, std::time::Duration::ZERO) {
        crate::classify::Class::Fatal { .. } => {
            Verdict::Fail(format!("its exec could not be opened: {}", facts.message))
        }
        class => Verdict::Again(format!(
            "its exec could not be opened ({}): {}",
            class.why(),
            facts.message
        )),
    }
}

fn tar_failed(what: &str, place: &str, code: Option<i64>, error: &str) -> String {
    let how = match code {
        Some(code) => format!("exited with {code}"),
        None => "did not end by itself".into(),
    };
    format!("tar could not {what} in {place} ({how}): {}", tail(error))
}

// The last lines of what a tar said, enough to name the file: a message
// stays a line or two whatever a tar printed.
const TAIL_BYTES: usize = 600;

/// The end of `text`, trimmed, at most `TAIL_BYTES` (from a character's
/// start), or "(nothing on stderr)".
pub(super) fn tail(text: &str) -> String {
    let text = text.trim();
    if text.is_empty() {
        return "(nothing on stderr)".into();
    }
    let mut start = text.len().saturating_sub(TAIL_BYTES);
    // (`get`: a slice that can panic brings the panic's Unicode tables into
    // the .wasm.)
    let mut end = None;
    while end.is_none() && start < text.len() {
        end = text.get(start..);
        start += 1;
    }
    let end = end.unwrap_or(text);
    let cut = if end.len() < text.len() { "..." } else { "" };
    format!("{cut}{end}")
}

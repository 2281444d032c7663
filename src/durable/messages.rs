//! What a durable run says.

fn seconds(ms: u64) -> String {
    format!("{}.{} s", ms / 1000, (ms % 1000) / 100)
}

/// The warning when the stream of a running script is cut.
pub fn cut(pod: &str, why: &str) -> String {
    format!(
        "the exec stream of pod \"{pod}\" was cut ({why}); reattaching; the script is still running in the pod and will not be started again"
    )
}

/// A start failed before it could reach the pod: nothing runs yet.
pub fn start_failed(pod: &str, why: &str) -> String {
    format!("the exec of the script in pod \"{pod}\" could not be set up ({why}); retrying; the script has not started")
}

/// A start may have reached the pod, and its answer was lost.
pub fn start_unanswered(pod: &str, why: &str) -> String {
    format!("the start of the script in pod \"{pod}\" got no answer ({why}); retrying; the script may have started, and will not be started twice")
}

/// The line when the run is attached again.
pub fn reattached(pod: &str, after_ms: u64) -> String {
    format!(
        "reattached to the script in pod \"{pod}\" after {}; its output goes on from where the stream was cut",
        seconds(after_ms)
    )
}

/// The give-up: no connection for the whole limit.
pub fn gave_up(pod: &str, limit_ms: u64, last_error: &str, may_run: bool) -> String {
    let state = if may_run {
        "the script may still be running in the pod; its exit code is unknown"
    } else {
        "the script was not started"
    };
    format!(
        "gave up reaching the script in pod \"{pod}\" after {} without a connection (last error: {last_error}): {state}",
        seconds(limit_ms)
    )
}

/// The pod went away while its script ran.
pub fn pod_gone(pod: &str) -> String {
    format!("the pod \"{pod}\" is gone (deleted) while its script ran: the script's exit code is unknown")
}

/// The pod is no longer running.
pub fn pod_not_running(pod: &str, phase: &str) -> String {
    format!("the pod \"{pod}\" is no longer running (phase {phase}, or being deleted) while its script ran: the script's exit code is unknown")
}

/// The run's record is gone from the pod.
pub fn record_missing(pod: &str) -> String {
    format!(
        "the record of the script's run in pod \"{pod}\" is gone (the container was restarted, or its temp folder cleared): the script is not started again; its exit code is unknown"
    )
}

/// The run is done, but some of its output went away before it arrived.
pub fn output_lost(pod: &str, out: u64, err: u64) -> String {
    format!(
        "the script in pod \"{pod}\" ended, but {out} bytes of its stdout and {err} of its stderr were removed before they arrived: its output is incomplete"
    )
}

/// The command's output could not be written into its files in the pod:
/// what arrived is all there is of it.
pub fn output_not_kept(pod: &str) -> String {
    format!(
        "the script in pod \"{pod}\" ended, but its output could not be kept in the pod (writing it into the container's temp folder failed: a full disk, or a file size limit): its output is incomplete"
    )
}

/// What waited for the command in the pod ended or was stopped without
/// writing the command's code.
pub fn watcher_gone(pod: &str) -> String {
    format!(
        "the process that waits for the script in pod \"{pod}\" ended or was stopped without writing the script's exit code (killed or stopped by the script itself or from outside, or its temp folder full): the script's exit code is unknown; it may still be running"
    )
}

/// The answers to reading the command's code were none a read gives.
pub fn code_unread(pod: &str, reads: u32) -> String {
    format!(
        "the exit code of the script in pod \"{pod}\" could not be read: {reads} answers to reading it were garbled on their way (a proxy rewriting exec statuses?): the script's outcome is unknown"
    )
}

/// A step of ours broke in a way that says nothing of the script.
pub fn step_broke(pod: &str, code: i64) -> String {
    format!("the pod-side reader of the script in pod \"{pod}\" ended with status {code}")
}

/// The container cannot run the command durably.
pub fn fallback(pod: &str, what: &str) -> String {
    format!(
        "the container of pod \"{pod}\" {what}: this exec runs as a plain exec, whose script a cut stream can leave with its output and exit code lost"
    )
}

/// The hook process is being stopped.
pub fn stopping(pod: &str, signal: &str) -> String {
    format!("{signal}: stopping the script in pod \"{pod}\" before this process ends")
}

/// The command was stopped because the host process was.
pub fn cancelled(pod: &str, signal: &str) -> String {
    format!("{signal}: the script in pod \"{pod}\" was stopped before it ended; it did not finish")
}

/// The host process was stopped before the command was started.
pub fn cancelled_before_start(pod: &str, signal: &str) -> String {
    format!("{signal}: the script in pod \"{pod}\" was not started")
}

/// The command could not be stopped in time.
pub fn not_stopped(pod: &str, last_error: &str) -> String {
    format!("could not stop the script in pod \"{pod}\" (last error: {last_error}): it may still be running")
}

/// A plain exec (with stdin, a tty, or durable execs off) whose stream
/// ended with no status: its outcome is unknown, never a success.
pub fn plain_cut(pod: &str, why: &str) -> String {
    format!(
        "the exec stream of pod \"{pod}\" was cut before the command's status arrived ({why}): the command's outcome is unknown; it may have run in part or in whole"
    )
}

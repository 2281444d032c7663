//! What a person reads about a call: one warning when it starts failing,
//! one line when it recovers, the give-up error, and a debug line per
//! attempt. The tone is the permission check's
//! ([`crate::preflight`]'s outcome messages): what happened, the evidence,
//! and whose fault it is.

use crate::failure_stage::FailureStage;
use crate::text::seconds;

/// Whose fault a call's last failure was, read from the evidence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// No answer: refused, reset, timed out, cut off.
    Unreachable,
    /// The apiserver answered, with errors (5xx, 429, ...).
    AnsweredWithErrors,
    /// The apiserver refused the request's credentials or permissions.
    Refused,
}

impl Fault {
    /// The fault of a failure at `stage`; `refused` when its answer was a
    /// deliberate refusal (401, 403).
    pub fn of(stage: &FailureStage, refused: bool) -> Fault {
        match stage {
            FailureStage::Answered { .. } if refused => Fault::Refused,
            FailureStage::Answered { .. } => Fault::AnsweredWithErrors,
            _ => Fault::Unreachable,
        }
    }

    fn says(self) -> &'static str {
        match self {
            Fault::Unreachable => "The Kubernetes API failed, not the job: the control plane was unreachable or unstable. Re-run the job; if this persists, check the apiserver's health.",
            Fault::AnsweredWithErrors => "The Kubernetes API failed, not the job: the apiserver kept answering with errors. Re-run the job; if this persists, check the apiserver's health.",
            Fault::Refused => "The apiserver refused the request's credentials or permissions for all that time: if it goes on, check the service account's token and RBAC.",
        }
    }
}

/// The line printed when a call that failed succeeds after all.
pub fn recovered(what: &str, attempts: u32, tried_ms: u64, last_error: &str) -> String {
    format!(
        "The Kubernetes API answered {what} after {} in {} (it failed transiently: {last_error}).",
        count(attempts),
        seconds(tried_ms)
    )
}

/// `1 attempt`, `3 attempts`.
fn count(attempts: u32) -> String {
    match attempts {
        1 => "1 attempt".to_string(),
        n => format!("{n} attempts"),
    }
}

/// The line printed when a create's retry met its own earlier success.
pub fn found_own_object(what: &str, attempts: u32, tried_ms: u64) -> String {
    format!(
        "The Kubernetes API answered {what} after {attempts} attempts in {}: an earlier attempt had made the object and its answer was lost; the object read back carries the labels and owner references that were sent, so it is used.",
        seconds(tried_ms)
    )
}

/// The give-up error: which call, for how long, the last error, and whose
/// fault it was. `note` says why it stopped early, if it did.
pub fn gave_up(
    what: &str,
    tried_ms: u64,
    attempts: u32,
    last_error: &str,
    note: Option<&str>,
    fault: Fault,
) -> String {
    let attempts = count(attempts);
    let note = match note {
        Some(note) => format!(" It was {note}."),
        None => String::new(),
    };
    format!(
        "The Kubernetes API call {what} did not succeed within {} ({attempts}; last error: {last_error}).{note} {}",
        seconds(tried_ms),
        fault.says()
    )
}

/// The line printed when a delete's retry found the object gone: an
/// earlier attempt, whose answer was lost, had deleted it.
pub fn found_deleted(what: &str, attempts: u32, tried_ms: u64) -> String {
    format!(
        "The Kubernetes API answered {what} after {attempts} attempts in {}: the object is gone (an earlier attempt, whose answer was lost, may have deleted it; or it was never there).",
        seconds(tried_ms)
    )
}

/// Why a call in a known outage was not retried (the give-up quotes it
/// after "It was ").
pub fn known_outage(ago_ms: u64) -> String {
    format!(
        "not retried: another call of this step gave up on the Kubernetes API {} ago and none has been answered since, so this one tried once",
        seconds(ago_ms)
    )
}

/// One debug line for a request: what came back and what happens next.
pub fn attempt_line(what: &str, request: &str, result: &str, next: &str, left_ms: u64) -> String {
    format!(
        "k8s-auth-preflight: {what}, {request}: {result}; {next}; {} of the deadline left",
        seconds(left_ms)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn the_give_up_says_which_call_how_long_the_last_error_and_whose_fault() {
        let text = gave_up(
            "createNamespacedPod for Pod \"job-1\"",
            90_400,
            12,
            "ECONNREFUSED",
            None,
            Fault::Unreachable,
        );
        assert_eq!(
            text,
            "The Kubernetes API call createNamespacedPod for Pod \"job-1\" did not succeed within 90.4 s (12 attempts; last error: ECONNREFUSED). The Kubernetes API failed, not the job: the control plane was unreachable or unstable. Re-run the job; if this persists, check the apiserver's health."
        );
        let once = gave_up(
            "exec for \"job-1\"",
            10_000,
            1,
            "request timed out",
            Some("not retried: why"),
            Fault::Unreachable,
        );
        assert!(once.contains("(1 attempt; last error: request timed out). It was not retried: why. The Kubernetes API failed, not the job"), "{once}");
    }
}

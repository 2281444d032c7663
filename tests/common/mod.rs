//! A simulated apiserver and clock for driving the state machine in tests.
//!
//! The clock jumps to the next thing that happens (a response arriving, or
//! the machine's wake-up time); a run gives up after a bounded number of
//! steps, so a livelock fails the test instead of hanging it.

#![allow(dead_code)]

use k8s_auth_preflight::preflight::{
    Accepted, Action, Outcome, ProbeResult, Request, ResourceAttributes,
};
pub use k8s_auth_preflight::protocol::Level;
use k8s_auth_preflight::rules::{ResourceRule, RulesStatus};
use k8s_auth_preflight::{ErrorFacts, PermissionSpec, Preflight};

/// Epoch ms at which simulated checks start (2026-10-21T02:15:26Z).
pub const T0: u64 = 1_792_548_926_000;

/// What the simulated server does with one request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// Answer after `latency` ms with `status.allowed`.
    Review { allowed: bool, latency: u64 },
    /// Answer a rules review after `latency` ms with this status.
    Rules { status: RulesStatus, latency: u64 },
    /// Answer after `latency` ms with this body, as the shim reports a 2xx
    /// answer: `AccessBody` or `RulesBody` by the request's kind.
    Body { body: String, latency: u64 },
    /// Fail after `latency` ms with these facts.
    Fail { facts: ErrorFacts, latency: u64 },
    /// Never answer (the shim's timeout, or the machine's, ends it).
    Hang,
}

/// One request the machine sent.
#[derive(Debug, Clone)]
pub struct Sent {
    pub at: u64,
    pub probe: usize,
    pub attempt: u32,
    pub request: Request,
    pub timeout_ms: u64,
    /// When another request of the same probe, still unanswered, was sent:
    /// set for a hedge (the server had not answered the other copy yet).
    pub alongside: Option<u64>,
    /// How many requests of this probe were out, this one included.
    pub out: usize,
}

impl Sent {
    /// The resource attributes of an access review (panics for other requests).
    pub fn access(&self) -> &ResourceAttributes {
        match &self.request {
            Request::AccessReview(review) => &review.spec.resource_attributes,
            other => panic!("not an access review: {other:?}"),
        }
    }

    pub fn is_rules(&self) -> bool {
        matches!(self.request, Request::RulesReview(_))
    }
}

/// What a run produced.
#[derive(Debug)]
pub struct Run {
    pub outcome: Outcome,
    pub sent: Vec<Sent>,
    pub warnings: Vec<String>,
    /// Debug lines, in order.
    pub debug: Vec<String>,
    pub done_at: u64,
    /// Results the machine applied (not stale), in order: (probe, result).
    pub applied: Vec<(usize, ProbeResult)>,
}

pub fn refused() -> ErrorFacts {
    ErrorFacts {
        codes: vec!["ECONNREFUSED".into()],
        name: Some("TypeError".into()),
        message: "fetch failed".into(),
        ..Default::default()
    }
}

pub fn status(code: u16) -> ErrorFacts {
    ErrorFacts {
        status: Some(code),
        message: format!("HTTP-Code: {code}"),
        ..Default::default()
    }
}

pub fn healthy(allowed: bool) -> Reply {
    Reply::Review {
        allowed,
        latency: 10,
    }
}

/// A body answer (see [`Reply::Body`]).
pub fn body(text: &str) -> Reply {
    Reply::Body {
        body: text.to_string(),
        latency: 10,
    }
}

pub fn fail(facts: ErrorFacts) -> Reply {
    Reply::Fail { facts, latency: 5 }
}

/// A complete rules review that grants every verb on every resource.
pub fn grant_all() -> RulesStatus {
    RulesStatus {
        resource_rules: vec![ResourceRule {
            verbs: vec!["*".into()],
            api_groups: vec!["*".into()],
            resources: vec!["*".into()],
            resource_names: vec![],
        }],
        incomplete: false,
        evaluation_error: None,
    }
}

/// The hooks' permission table (13 reviews).
pub fn hooks_permissions() -> Vec<PermissionSpec> {
    k8s_auth_preflight::permission::runner_hooks_permissions()
}

/// `check.poll(now)`, past any debug lines (which only print).
pub fn poll_past_debug(check: &mut Preflight, now: u64) -> Action {
    loop {
        match check.poll(now) {
            Action::Log {
                level: Level::Debug,
                ..
            } => continue,
            other => return other,
        }
    }
}

/// Drives `check` against `server(now, sent) -> Reply` until it is done.
pub fn drive(
    check: &mut Preflight,
    start: u64,
    mut server: impl FnMut(u64, &Sent) -> Reply,
) -> Run {
    let mut now = start;
    let mut sent = Vec::new();
    let mut warnings = Vec::new();
    let mut debug = Vec::new();
    let mut applied = Vec::new();
    // (arrives_at, probe, attempt, result)
    let mut pending: Vec<(u64, usize, u32, ProbeResult)> = Vec::new();
    // When each request was sent and times out: (probe, attempt) -> (at, timeout_at).
    let mut sent_at = std::collections::HashMap::new();
    for _step in 0..100_000 {
        match check.poll(now) {
            Action::Send {
                probe,
                attempt,
                request,
                timeout_ms,
            } => {
                // Out: sent, its answer still to come after now, and not
                // yet past its timeout (when the machine gives up on it).
                let others: Vec<u64> = pending
                    .iter()
                    .filter(|p| p.1 == probe && p.0 > now)
                    .map(|p| sent_at[&(p.1, p.2)])
                    .filter(|&(_, timeout_at)| timeout_at > now)
                    .map(|(at, _)| at)
                    .collect();
                sent_at.insert((probe, attempt), (now, now + timeout_ms));
                let s = Sent {
                    at: now,
                    probe,
                    attempt,
                    request,
                    timeout_ms,
                    alongside: others.iter().copied().max(),
                    out: others.len() + 1,
                };
                match server(now, &s) {
                    Reply::Review { allowed, latency } => pending.push((
                        now + latency,
                        probe,
                        attempt,
                        ProbeResult::Reviewed {
                            allowed,
                            reason: None,
                        },
                    )),
                    Reply::Rules { status, latency } => pending.push((
                        now + latency,
                        probe,
                        attempt,
                        ProbeResult::RulesReviewed { status },
                    )),
                    Reply::Body { body, latency } => pending.push((
                        now + latency,
                        probe,
                        attempt,
                        match s.request {
                            Request::RulesReview(_) => ProbeResult::RulesBody { body },
                            _ => ProbeResult::AccessBody { body },
                        },
                    )),
                    Reply::Fail { facts, latency } => {
                        pending.push((now + latency, probe, attempt, ProbeResult::Failed { facts }))
                    }
                    // The shim's timer reports the timeout.
                    Reply::Hang => pending.push((
                        now + timeout_ms,
                        probe,
                        attempt,
                        ProbeResult::Failed {
                            facts: ErrorFacts {
                                timed_out: true,
                                name: Some("AbortError".into()),
                                message: "This operation was aborted".into(),
                                ..Default::default()
                            },
                        },
                    )),
                }
                sent.push(s);
            }
            Action::Log {
                level: Level::Debug,
                message,
            } => debug.push(message),
            Action::Log { message, .. } => warnings.push(message),
            Action::Done { outcome } => {
                return Run {
                    outcome,
                    sent,
                    warnings,
                    debug,
                    done_at: now,
                    applied,
                }
            }
            Action::Wait { until_ms } => {
                assert!(
                    until_ms >= now || !pending.is_empty(),
                    "wait into the past: {until_ms} < {now}"
                );
                let next_arrival = pending.iter().map(|p| p.0).min();
                match next_arrival {
                    Some(at) if at <= until_ms => {
                        now = now.max(at);
                        let index = pending.iter().position(|p| p.0 == at).unwrap();
                        let (_, probe, attempt, result) = pending.remove(index);
                        let accepted = check
                            .on_result(probe, attempt, now, result.clone())
                            .unwrap();
                        if accepted == Accepted::Applied {
                            applied.push((probe, result));
                        }
                    }
                    _ => now = now.max(until_ms),
                }
            }
        }
    }
    panic!("the check did not finish within 100000 steps");
}

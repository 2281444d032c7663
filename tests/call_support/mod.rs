//! A simulated apiserver and clock for driving one call machine
//! ([`k8s_auth_preflight::call::Call`]) in tests.
//!
//! The clock jumps to the next thing that happens (the reply to the
//! request in flight, or the machine's wake-up time); a run gives up after
//! a bounded number of steps, so a livelock fails the test instead of
//! hanging it.

#![allow(dead_code)]

use k8s_auth_preflight::call::{Accepted, Call, CallAction, CallOutcome, CallSpec, Operation};
pub use k8s_auth_preflight::protocol::Level;
use k8s_auth_preflight::{ErrorFacts, Settings};

/// Epoch ms at which simulated calls start (2026-10-21T02:15:26Z).
pub const T0: u64 = 1_792_548_926_000;

/// What the simulated server (or connection) does with one request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// Succeed after `latency` ms (a connection: its stream opens).
    Ok { latency: u64 },
    /// Answer a read-back after `latency` ms with this object.
    Body { body: String, latency: u64 },
    /// Fail after `latency` ms with these facts.
    Fail { facts: ErrorFacts, latency: u64 },
    /// Fail after `latency` ms before the request was written (the host
    /// saw the connection never made): `on_failure_before_sending`.
    FailBeforeSending { facts: ErrorFacts, latency: u64 },
    /// The connection is never made: the host aborts it at its connect
    /// timeout and reports that it was never written.
    HangConnecting,
    /// Never answer: the machine's timeout ends it (or, for a call that
    /// passes through, nothing does).
    Hang,
}

/// One request the machine asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sent {
    pub at: u64,
    pub request: u32,
    /// `Some(attempt)` for a `Send`, `None` for a read-back.
    pub attempt: Option<u32>,
    pub timeout_ms: Option<u64>,
    /// For a connection: the host's connect timeout.
    pub connect_timeout_ms: Option<u64>,
    /// For a read-back: the method, name and namespace it reads.
    pub read_back: Option<(String, String, Option<String>)>,
}

/// What a run produced.
#[derive(Debug, Clone)]
pub struct Run {
    pub sent: Vec<Sent>,
    pub warnings: Vec<String>,
    pub infos: Vec<String>,
    pub debug: Vec<String>,
    /// Every `Wait` the machine asked for, with the time it was asked.
    pub waits: Vec<(u64, Option<u64>)>,
    /// Reports the machine called stale.
    pub stale: Vec<u32>,
    pub outcome: CallOutcome,
    pub done_at: u64,
}

impl Run {
    pub fn attempts(&self) -> usize {
        self.sent.iter().filter(|s| s.attempt.is_some()).count()
    }
    pub fn read_backs(&self) -> usize {
        self.sent.iter().filter(|s| s.read_back.is_some()).count()
    }
}

/// Settings with a fixed seed (reproducible jitter).
pub fn settings() -> Settings {
    let mut s = Settings::new();
    s.seed = Some(7);
    s
}

/// A call of `method`, started at `T0`.
pub fn call(settings: &Settings, spec: CallSpec) -> Call {
    Call::new(settings, spec, T0)
}

/// Runs `call` to its end, answering its requests, in order, with
/// `replies` (the last one repeats).
pub fn run(call: &mut Call, replies: &[Reply]) -> Run {
    let mut i = 0;
    run_with(call, |_| {
        let reply = replies[i.min(replies.len() - 1)].clone();
        i += 1;
        reply
    })
}

/// Runs `call` to its end; `reply` answers each request as it is sent.
pub fn run_with(call: &mut Call, mut reply: impl FnMut(&Sent) -> Reply) -> Run {
    let mut now = T0;
    let mut run = Run {
        sent: Vec::new(),
        warnings: Vec::new(),
        infos: Vec::new(),
        debug: Vec::new(),
        waits: Vec::new(),
        stale: Vec::new(),
        outcome: CallOutcome::Throw { request: 0 },
        done_at: 0,
    };
    // The request in flight: (request, reply, when it arrives).
    let mut in_flight: Option<(u32, Reply, Option<u64>)> = None;
    for _ in 0..10_000 {
        match call.poll(now) {
            CallAction::Send {
                request,
                attempt,
                timeout_ms,
                connect_timeout_ms,
            } => {
                let sent = Sent {
                    at: now,
                    request,
                    attempt: Some(attempt),
                    timeout_ms,
                    connect_timeout_ms,
                    read_back: None,
                };
                in_flight = Some(start(&mut reply, &sent, now));
                run.sent.push(sent);
            }
            CallAction::ReadBack {
                request,
                method,
                name,
                namespace,
                timeout_ms,
            } => {
                let sent = Sent {
                    at: now,
                    request,
                    attempt: None,
                    timeout_ms: Some(timeout_ms),
                    connect_timeout_ms: None,
                    read_back: Some((method, name, namespace)),
                };
                in_flight = Some(start(&mut reply, &sent, now));
                run.sent.push(sent);
            }
            CallAction::Log {
                level: Level::Warning,
                message,
            } => run.warnings.push(message),
            CallAction::Log {
                level: Level::Info,
                message,
            } => run.infos.push(message),
            CallAction::Log { message, .. } => run.debug.push(message),
            CallAction::Wait { until_ms } => {
                run.waits.push((now, until_ms));
                let arrives = in_flight.as_ref().and_then(|f| f.2);
                match (arrives, until_ms) {
                    (Some(at), until) if until.is_none_or(|u| at <= u) => {
                        now = now.max(at);
                        let (request, reply, _) = in_flight.take().unwrap();
                        if deliver(call, request, reply, now) == Accepted::Stale {
                            run.stale.push(request);
                        }
                    }
                    (_, Some(until)) => now = now.max(until),
                    (_, None) => panic!("the machine waits for a request that never settles"),
                }
            }
            CallAction::Done { outcome } => {
                run.outcome = outcome.clone();
                run.done_at = now;
                // Done stays done, and nothing more is asked for.
                for later in [now, now + 1, now + 3_600_000] {
                    assert_eq!(
                        call.poll(later),
                        CallAction::Done {
                            outcome: outcome.clone()
                        }
                    );
                }
                return run;
            }
        }
    }
    panic!("no outcome after 10,000 steps: {run:?}");
}

fn start(
    reply: &mut impl FnMut(&Sent) -> Reply,
    sent: &Sent,
    now: u64,
) -> (u32, Reply, Option<u64>) {
    let r = reply(sent);
    let at = match &r {
        Reply::Ok { latency }
        | Reply::Body { latency, .. }
        | Reply::Fail { latency, .. }
        | Reply::FailBeforeSending { latency, .. } => Some(now + latency),
        Reply::HangConnecting => sent.connect_timeout_ms.or(sent.timeout_ms).map(|t| now + t),
        Reply::Hang => None,
    };
    (sent.request, r, at)
}

/// Reports `reply` for `request` to the machine.
pub fn deliver(call: &mut Call, request: u32, reply: Reply, now: u64) -> Accepted {
    let result = match reply {
        Reply::Ok { .. } if call.operation() == Operation::Connect => {
            call.on_stream_opened(request, now)
        }
        Reply::Ok { .. } => call.on_success(request, now),
        Reply::Body { body, .. } => call.on_read_back(request, now, &body),
        Reply::Fail { facts, .. } => call.on_failure(request, now, facts),
        Reply::FailBeforeSending { facts, .. } => {
            call.on_failure_before_sending(request, now, facts)
        }
        Reply::HangConnecting => call.on_failure_before_sending(
            request,
            now,
            ErrorFacts {
                timed_out: true,
                name: Some("AbortError".into()),
                message: "This operation was aborted".into(),
                ..ErrorFacts::default()
            },
        ),
        Reply::Hang => unreachable!("a hung request is never delivered"),
    };
    result.expect("the machine takes every report of a request it sent")
}

/// A failure with these codes (as the shim collects them).
pub fn code(c: &str) -> Reply {
    Reply::Fail {
        facts: ErrorFacts {
            codes: vec![c.into()],
            name: Some("TypeError".into()),
            message: "fetch failed".into(),
            ..ErrorFacts::default()
        },
        latency: 5,
    }
}

/// An HTTP error status.
pub fn status(s: u16) -> Reply {
    Reply::Fail {
        facts: ErrorFacts {
            status: Some(s),
            // client-node's message (status, body, headers) is longer than
            // what the messages quote; the status alone is.
            message: String::new(),
            ..ErrorFacts::default()
        },
        latency: 20,
    }
}

/// A 429 with this `Retry-After`.
pub fn throttled(retry_after: &str) -> Reply {
    Reply::Fail {
        facts: ErrorFacts {
            status: Some(429),
            retry_after: Some(retry_after.into()),
            message: "HTTP-Code: 429".into(),
            ..ErrorFacts::default()
        },
        latency: 20,
    }
}

pub const OK: Reply = Reply::Ok { latency: 30 };

pub fn body(text: &str) -> Reply {
    Reply::Body {
        body: text.into(),
        latency: 30,
    }
}

/// The body the job pod's create sends.
pub const POD: &str = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"runner-1-workflow","labels":{"runner-pod":"runner-1-workflow"},"ownerReferences":[{"apiVersion":"v1","kind":"Pod","name":"runner-1","uid":"8c3e-runner-1"}]},"spec":{"containers":[{"name":"job","image":"node:20"}]}}"#;

/// The same pod as the server returns it: ours.
pub const POD_AS_STORED: &str = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"runner-1-workflow","namespace":"ci","uid":"p-1","resourceVersion":"42","labels":{"runner-pod":"runner-1-workflow"},"ownerReferences":[{"apiVersion":"v1","kind":"Pod","name":"runner-1","uid":"8c3e-runner-1","controller":true}]},"spec":{"containers":[{"name":"job","image":"node:20"}]},"status":{"phase":"Pending"}}"#;

/// A pod of the same name owned by another runner: not ours.
pub const POD_OF_ANOTHER_RUNNER: &str = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"runner-1-workflow","namespace":"ci","uid":"p-0","labels":{"runner-pod":"runner-1-workflow"},"ownerReferences":[{"apiVersion":"v1","kind":"Pod","name":"runner-1","uid":"77aa-an-older-runner-1"}]},"status":{"phase":"Running"}}"#;

/// The create of the job pod in namespace `ci`.
pub fn pod_create() -> CallSpec {
    CallSpec {
        method: "createNamespacedPod".into(),
        namespace: Some("ci".into()),
        body: Some(POD.into()),
        ..CallSpec::default()
    }
}

/// A call of `method` on the object `name` in namespace `ci`.
pub fn on(method: &str, kind: &str, name: &str) -> CallSpec {
    CallSpec {
        method: method.into(),
        namespace: Some("ci".into()),
        kind: Some(kind.into()),
        name: Some(name.into()),
        ..CallSpec::default()
    }
}

//! Properties of the call machine under generated fault histories: every
//! request gets a generated reply (success, a failure from a palette of
//! real shapes, an object read back, or no answer at all), arriving before
//! or after the request's timeout; the host is sometimes late to poll.
//!
//! - an exec or log connection is sent again only after a failure that
//!   proves its command never started, and never once its stream opened;
//! - a create whose first attempt got 409 never reads back;
//! - a create is returned from a read-back only when the object is ours;
//! - a create that names no object is never sent again after an attempt
//!   that may have made it;
//! - the call always ends (`Done`) by its deadline plus one request
//!   timeout (plus the host's lateness), and no retry starts at or after
//!   its deadline;
//! - after `Done`, nothing more is sent, and every report is stale.

#![cfg(not(target_arch = "wasm32"))]

mod call_support;

use std::time::Duration;

use call_support::{pod_create, POD_AS_STORED, POD_OF_ANOTHER_RUNNER, T0};
use k8s_auth_preflight::call::{
    Accepted, Call, CallAction, CallOutcome, CallSpec, FailureStage, Operation,
};
use k8s_auth_preflight::{ErrorFacts, Settings};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Reply {
    Ok,
    Fail(ErrorFacts),
    /// Failed before the request was written (`on_failure_before_sending`).
    FailBeforeSending(ErrorFacts),
    /// The connection is never made: the host aborts at its own timeout
    /// and reports it as failed before sending.
    HangConnecting,
    /// A read-back's object: ours or another runner's.
    Object {
        ours: bool,
    },
    Hang,
}

fn facts() -> impl Strategy<Value = ErrorFacts> {
    let code = |c: &'static str| ErrorFacts {
        codes: vec![c.into()],
        message: "fetch failed".into(),
        ..ErrorFacts::default()
    };
    let status = |s: u16| ErrorFacts {
        status: Some(s),
        ..ErrorFacts::default()
    };
    prop_oneof![
        Just(code("ECONNREFUSED")),
        Just(code("ENOTFOUND")),
        Just(code("EAI_AGAIN")),
        Just(code("CERT_HAS_EXPIRED")),
        Just(code("ECONNRESET")),
        Just(code("UND_ERR_SOCKET")),
        Just(code("ETIMEDOUT")),
        Just(ErrorFacts {
            message: "socket hang up".into(),
            ..ErrorFacts::default()
        }),
        Just(ErrorFacts {
            timed_out: true,
            message: "This operation was aborted".into(),
            ..ErrorFacts::default()
        }),
        prop::sample::select(vec![
            200u16, 400, 401, 403, 404, 408, 409, 409, 409, 422, 429, 500, 502, 503, 504
        ])
        .prop_map(status),
        (
            prop_oneof![Just(429u16), Just(503u16)],
            prop::sample::select(vec!["0", "1", "3", "-2", "later", "40"])
        )
            .prop_map(|(s, ra)| ErrorFacts {
                status: Some(s),
                retry_after: Some(ra.into()),
                ..ErrorFacts::default()
            }),
    ]
}

fn reply() -> impl Strategy<Value = Reply> {
    let conflict = ErrorFacts {
        status: Some(409),
        ..ErrorFacts::default()
    };
    prop_oneof![
        3 => Just(Reply::Ok),
        8 => facts().prop_map(Reply::Fail),
        1 => facts().prop_map(Reply::FailBeforeSending),
        1 => Just(Reply::HangConnecting),
        // 409s and objects read back often enough for the create's rules.
        2 => Just(Reply::Fail(conflict)),
        3 => any::<bool>().prop_map(|ours| Reply::Object { ours }),
        3 => Just(Reply::Hang),
    ]
}

#[derive(Debug, Clone)]
struct World {
    spec: usize,
    deadline_ms: u64,
    timeout_ms: u64,
    seed: u64,
    replies: Vec<(Reply, u64)>,
    lateness: Vec<u64>,
}

const SPECS: usize = 6;

/// An attempt is abandoned after this many request timeouts (a read's
/// first copy is awaited that long while others go out).
const ABANDON_FACTOR: u64 = 3;

fn spec(i: usize) -> CallSpec {
    match i {
        0 => CallSpec::method("listNamespacedPod"),
        1 => pod_create(),
        2 => CallSpec {
            body: Some(
                r#"{"kind":"Pod","metadata":{"generateName":"job-","labels":{"a":"b"}}}"#.into(),
            ),
            ..CallSpec::method("createNamespacedPod")
        },
        3 => CallSpec::method("deleteNamespacedPod"),
        4 => CallSpec::method("exec"),
        _ => CallSpec::method("attach"),
    }
}

fn world() -> impl Strategy<Value = World> {
    (
        0..SPECS,
        1_000u64..120_000,
        100u64..20_000,
        any::<u64>(),
        // Each reply with its latency as a share of the timeout (over 100:
        // it arrives after the machine abandoned the request).
        prop::collection::vec((reply(), 0u64..150), 1..40),
        prop::collection::vec(prop_oneof![8 => Just(0u64), 1 => 0u64..5_000], 1..20),
    )
        .prop_map(
            |(spec, deadline_ms, timeout_ms, seed, replies, lateness)| World {
                spec,
                deadline_ms,
                timeout_ms,
                seed,
                replies: replies
                    .into_iter()
                    .map(|(r, share)| (r, timeout_ms * share / 100))
                    .collect(),
                lateness,
            },
        )
}

/// A report the host made, and what the machine did with it.
#[derive(Debug, Clone)]
struct Report {
    request: u32,
    reply: Reply,
    accepted: Accepted,
}

#[derive(Debug)]
struct Trace {
    /// (time, request, attempt) of every `Send`; attempt 0 for a read-back.
    sent: Vec<(u64, u32, u32)>,
    reports: Vec<Report>,
    outcome: CallOutcome,
    done_at: u64,
    operation: Operation,
    max_lateness: u64,
}

fn drive(w: &World) -> Trace {
    let mut settings = Settings::new();
    settings.seed = Some(w.seed);
    settings.calls.deadline = Duration::from_millis(w.deadline_ms);
    settings.request_timeout = Duration::from_millis(w.timeout_ms);
    settings.calls.request_timeout = Duration::from_millis(w.timeout_ms * ABANDON_FACTOR);
    let mut call = Call::new(&settings, spec(w.spec), T0);
    let mut now = T0;
    let mut trace = Trace {
        sent: Vec::new(),
        reports: Vec::new(),
        outcome: CallOutcome::Throw { request: 0 },
        done_at: 0,
        operation: call.operation(),
        max_lateness: 0,
    };
    // Replies on their way: (arrives at, request, is a read-back, reply).
    let mut out: Vec<(u64, u32, bool, Reply)> = Vec::new();
    let (mut next_reply, mut late) = (0, 0);
    let mut done = false;
    for step in 0..5_000 {
        let action = call.poll(now);
        match action {
            CallAction::Send {
                request,
                attempt,
                timeout_ms,
                connect_timeout_ms,
            } => {
                assert!(!done, "a Send after Done: {trace:?}");
                trace.sent.push((now, request, attempt));
                let (reply, latency) = w.replies[next_reply % w.replies.len()].clone();
                next_reply += 1;
                match reply {
                    Reply::Hang => {}
                    Reply::HangConnecting => {
                        let at = now
                            + connect_timeout_ms
                                .or(timeout_ms)
                                .expect("a wrapped call has a timeout");
                        out.push((at, request, false, reply));
                    }
                    reply => out.push((now + latency, request, false, reply)),
                }
            }
            CallAction::ReadBack {
                request,
                timeout_ms,
                ..
            } => {
                assert!(!done, "a ReadBack after Done: {trace:?}");
                trace.sent.push((now, request, 0));
                let (reply, latency) = w.replies[next_reply % w.replies.len()].clone();
                next_reply += 1;
                match reply {
                    Reply::Hang => {}
                    Reply::HangConnecting => out.push((now + timeout_ms, request, true, reply)),
                    reply => out.push((now + latency, request, true, reply)),
                }
            }
            CallAction::Log { .. } => {}
            CallAction::Wait { until_ms } => {
                assert!(!done);
                out.sort_by_key(|o| o.0);
                let arrival = out.first().map(|o| o.0);
                match (arrival, until_ms) {
                    (Some(at), until) if until.is_none_or(|u| at <= u) => {
                        now = now.max(at);
                        let (_, request, read_back, reply) = out.remove(0);
                        report(&mut call, &mut trace, request, read_back, reply, now);
                    }
                    (_, Some(until)) => {
                        let lateness = w.lateness[late % w.lateness.len()];
                        late += 1;
                        trace.max_lateness = trace.max_lateness.max(lateness);
                        now = now.max(until + lateness);
                    }
                    _ => panic!("waits for nothing: {trace:?}"),
                }
            }
            CallAction::Done { outcome } => {
                if !done {
                    done = true;
                    trace.outcome = outcome;
                    trace.done_at = now;
                }
                // Deliver whatever is still on its way, then poll on.
                if out.is_empty() || step > 4_000 {
                    for later in [now, now + 1, now + 1_000_000] {
                        assert!(matches!(call.poll(later), CallAction::Done { .. }));
                    }
                    return trace;
                }
                out.sort_by_key(|o| o.0);
                let (at, request, read_back, reply) = out.remove(0);
                now = now.max(at);
                let before = trace.reports.len();
                report(&mut call, &mut trace, request, read_back, reply, now);
                assert_eq!(
                    trace.reports[before].accepted,
                    Accepted::Stale,
                    "a report after Done was applied: {trace:?}"
                );
            }
        }
    }
    panic!("no outcome after 5,000 steps: {trace:?}");
}

fn report(
    call: &mut Call,
    trace: &mut Trace,
    request: u32,
    read_back: bool,
    reply: Reply,
    now: u64,
) {
    let aborted = ErrorFacts {
        timed_out: true,
        message: "This operation was aborted".into(),
        ..ErrorFacts::default()
    };
    let result = match (&reply, read_back) {
        (Reply::Fail(facts), _) => call.on_failure(request, now, facts.clone()),
        (Reply::FailBeforeSending(facts), _) => {
            call.on_failure_before_sending(request, now, facts.clone())
        }
        (Reply::HangConnecting, _) => call.on_failure_before_sending(request, now, aborted),
        (Reply::Ok, true) => call.on_read_back(request, now, POD_AS_STORED),
        (Reply::Object { ours }, true) => call.on_read_back(
            request,
            now,
            if *ours {
                POD_AS_STORED
            } else {
                POD_OF_ANOTHER_RUNNER
            },
        ),
        (_, false) if call.operation() == Operation::Connect => call.on_stream_opened(request, now),
        (_, false) => call.on_success(request, now),
        (Reply::Hang, true) => unreachable!(),
    };
    let accepted = result.expect("every report of a request sent is taken");
    let reply = match (reply, read_back) {
        (Reply::Ok, true) => Reply::Object { ours: true },
        (r, _) => r,
    };
    trace.reports.push(Report {
        request,
        reply,
        accepted,
    });
}

/// True when the applied report proves nothing reached the apiserver's
/// handler for a connection (the set-up may be sent again).
fn proves_not_started(reply: &Reply) -> bool {
    match reply {
        Reply::Fail(facts) => FailureStage::of(facts).setup_may_be_retried(),
        Reply::FailBeforeSending(_) | Reply::HangConnecting => true,
        _ => false,
    }
}

/// True when the applied failure may have applied a write.
fn may_have_applied(reply: Option<&Reply>) -> bool {
    match reply {
        None => true,
        Some(Reply::Fail(facts)) => FailureStage::of(facts).may_have_applied(),
        Some(_) => false,
    }
}

/// True when the applied report is a failure.
fn is_failure(reply: Option<&Reply>) -> bool {
    matches!(
        reply,
        Some(Reply::Fail(_) | Reply::FailBeforeSending(_) | Reply::HangConnecting)
    )
}

/// The applied report for `request`, if any (none: the machine's own
/// timeout ended it).
fn applied(trace: &Trace, request: u32) -> Option<&Reply> {
    trace
        .reports
        .iter()
        .find(|r| r.request == request && r.accepted == Accepted::Applied)
        .map(|r| &r.reply)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1500, ..ProptestConfig::default() })]

    #[test]
    fn the_rules_hold_for_any_fault_history(w in world()) {
        let t = drive(&w);
        let start = T0;
        let deadline = start + w.deadline_ms;
        let last_wait = match t.operation {
            Operation::Connect => w.timeout_ms,
            _ => w.timeout_ms * ABANDON_FACTOR,
        };
        let end = deadline + last_wait;

        // Ends by the deadline plus the last attempt's longest wait (plus
        // the host's lateness to poll); no retry starts at or after the
        // deadline.
        prop_assert!(t.done_at <= end + t.max_lateness, "done {} ms after the start: {:?}", t.done_at - start, t);
        for &(at, _, attempt) in &t.sent {
            if attempt > 1 {
                prop_assert!(at < deadline, "attempt {} started {} ms after the start", attempt, at - start);
            }
            prop_assert!(at < end + t.max_lateness);
        }

        // A give-up's cause is the last failure of the API's the host
        // reported: never our own timeout (whether this machine's clock or
        // the host's timer noticed it), nor hidden by one after it.
        if let CallOutcome::GiveUp { last_request, .. } = &t.outcome {
            let own_timeout = |r: &Report| match &r.reply {
                Reply::Fail(f) | Reply::FailBeforeSending(f) => f.timed_out,
                // Reported with the host's own abort (see `report`).
                Reply::HangConnecting => true,
                _ => false,
            };
            let last_api_failure = t
                .reports
                .iter()
                .rfind(|r| {
                    r.accepted == Accepted::Applied
                        && is_failure(Some(&r.reply))
                        && !own_timeout(r)
                })
                .map(|r| r.request);
            prop_assert_eq!(*last_request, last_api_failure, "{:?}", t);
        }

        match w.spec {
            // exec, log: sent again only after a failure that proves the
            // command never started; never after the stream opened.
            4 | 5 => {
                prop_assert_eq!(t.operation, Operation::Connect);
                for pair in t.sent.windows(2) {
                    let previous = pair[0].1;
                    let reply = applied(&t, previous);
                    prop_assert!(reply.is_some_and(proves_not_started), "sent again after {:?}: {:?}", reply, t);
                }
                if let Some(opened) = t.reports.iter().position(|r| {
                    r.accepted == Accepted::Applied && matches!(r.reply, Reply::Ok | Reply::Object { .. })
                }) {
                    let request = t.reports[opened].request;
                    prop_assert_eq!(&t.outcome, &CallOutcome::Return { request });
                    prop_assert!(t.sent.iter().all(|s| s.1 <= request));
                }
            }
            // The named create.
            1 => {
                if let Some(Reply::Fail(facts)) = applied(&t, 1) {
                    if facts.status == Some(409) {
                        prop_assert!(t.sent.iter().all(|s| s.2 != 0), "read back after a first 409: {:?}", t);
                        prop_assert_eq!(&t.outcome, &CallOutcome::Throw { request: 1 });
                    }
                }
                for &(_, request, attempt) in &t.sent {
                    if attempt == 0 && t.outcome == (CallOutcome::Return { request }) {
                        let ours = matches!(applied(&t, request), Some(Reply::Object { ours: true }));
                        prop_assert!(ours, "returned an object that is not ours: {:?}", t);
                    }
                }
            }
            // The create with no name: never sent again once an attempt
            // may have made the object.
            2 => {
                for pair in t.sent.windows(2) {
                    let reply = applied(&t, pair[0].1);
                    prop_assert!(is_failure(reply) && !may_have_applied(reply), "sent again after {:?}", reply);
                }
                prop_assert!(t.sent.iter().all(|s| s.2 != 0));
            }
            // delete: done on a 404 only after an attempt that may have
            // deleted it.
            3 => {
                if let CallOutcome::Deleted { request } = t.outcome {
                    prop_assert!(request > 1);
                    let earlier_may_have = t.sent.iter().filter(|s| s.1 < request).any(|s| may_have_applied(applied(&t, s.1)));
                    prop_assert!(earlier_may_have, "{:?}", t);
                }
            }
            _ => {}
        }
    }
}

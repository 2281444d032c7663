//! The call machine's rules per kind of operation (docs/CALLS.md), driven
//! with a simulated clock and apiserver. Each test pins one rule.

mod call_support;

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

use std::time::Duration;

use call_support::*;
use k8s_auth_preflight::call::{
    Accepted, BadReport, Call, CallAction, CallOutcome, CallSpec, Operation,
};
use k8s_auth_preflight::ErrorFacts;

const TIMEOUT: u64 = 10_000;
/// How long an attempt is awaited before it is abandoned.
const ABANDON: u64 = 65_000;
const DEADLINE: u64 = 120_000;

fn gave_up(run: &Run) -> &str {
    match &run.outcome {
        CallOutcome::GiveUp { message, .. } => message,
        other => panic!("expected a give-up, got {other:?}"),
    }
}

// ---- reads and lists ----------------------------------------------------

#[test]
fn a_read_is_retried_like_the_check_until_it_succeeds() {
    let s = settings();
    let mut c = call(&s, on("listNamespacedPod", "Pod", "runner-1-workflow"));
    assert_eq!(c.operation(), Operation::Read);
    let r = run(
        &mut c,
        &[code("ECONNREFUSED"), status(503), status(403), OK],
    );
    assert_eq!(r.outcome, CallOutcome::Return { request: 4 });
    assert_eq!(r.attempts(), 4);
    assert!(r.sent.iter().all(|s| s.timeout_ms == Some(ABANDON)));
    // One warning when it starts failing, one line when it recovers.
    assert_eq!(r.warnings.len(), 1, "{:?}", r.warnings);
    assert_eq!(
        r.warnings[0],
        "The Kubernetes API did not answer listNamespacedPod for Pod \"runner-1-workflow\" (ECONNREFUSED: fetch failed); retrying for up to 120 s. The job has not failed."
    );
    assert_eq!(r.infos.len(), 1, "{:?}", r.infos);
    assert!(
        r.infos[0].starts_with("The Kubernetes API answered listNamespacedPod for Pod \"runner-1-workflow\" after 4 attempts in ")
            && r.infos[0].ends_with("(it failed transiently: HTTP 403).")
    );
    // A debug line per attempt.
    assert_eq!(r.debug.len(), 4, "{:#?}", r.debug);
    assert!(r.debug[0].starts_with("k8s-auth-preflight: listNamespacedPod for Pod \"runner-1-workflow\", attempt 1 (request 1): failed: transient, ECONNREFUSED"), "{}", r.debug[0]);
    assert!(
        r.debug[3].contains("attempt 4 (request 4): answered; done"),
        "{}",
        r.debug[3]
    );
}

#[test]
fn a_read_that_succeeds_at_once_prints_nothing_but_its_debug_line() {
    let s = settings();
    let mut c = call(&s, CallSpec::method("readNamespacedPod"));
    let r = run(&mut c, &[OK]);
    assert_eq!(r.outcome, CallOutcome::Return { request: 1 });
    assert!(r.warnings.is_empty() && r.infos.is_empty());
    assert_eq!(r.debug.len(), 1);
}

#[test]
fn a_fatal_answer_to_a_read_is_the_callers_unchanged() {
    let s = settings();
    let mut c = call(&s, on("readNamespacedPod", "Pod", "gone"));
    let r = run(&mut c, &[status(404)]);
    assert_eq!(r.outcome, CallOutcome::Throw { request: 1 });
    assert_eq!(r.attempts(), 1);
    assert!(r.warnings.is_empty());
}

#[test]
fn a_read_gives_up_at_its_deadline_naming_the_call_the_time_and_the_last_error() {
    let mut s = settings();
    s.calls.deadline = Duration::from_secs(20);
    let mut c = call(&s, on("readNamespacedPod", "Pod", "runner-1-workflow"));
    let r = run(&mut c, &[code("ECONNREFUSED")]);
    let message = gave_up(&r);
    assert!(
        message.starts_with("The Kubernetes API call readNamespacedPod for Pod \"runner-1-workflow\" did not succeed within "),
        "{message}"
    );
    assert!(
        message.contains("attempts; last error: ECONNREFUSED: fetch failed). The Kubernetes API failed, not the job"),
        "{message}"
    );
    // No attempt starts at or after the deadline; the check's own 90 s
    // deadline is not the call's.
    assert!(r.sent.iter().all(|s| s.at < T0 + 20_000), "{:?}", r.sent);
    assert!(r.done_at < T0 + 20_000, "{}", r.done_at - T0);
    assert!(matches!(
        r.outcome,
        CallOutcome::GiveUp {
            last_request: Some(_),
            ..
        }
    ));
}

#[test]
fn a_hung_read_is_abandoned_at_its_timeout_and_the_call_ends_by_deadline_plus_one_abandon_time() {
    let mut s = settings();
    s.calls.deadline = Duration::from_secs(30);
    let mut c = call(&s, CallSpec::method("listNamespacedSecret"));
    let r = run(&mut c, &[Reply::Hang]);
    let message = gave_up(&r);
    assert!(
        message.contains("last error: request timed out"),
        "{message}"
    );
    assert!(r.done_at <= T0 + 30_000 + ABANDON, "{}", r.done_at - T0);
    assert_eq!(c.ends_by_ms(), Some(T0 + 30_000 + ABANDON));
    // The first copy is awaited until it is abandoned; the copies sent
    // meanwhile are cut at the request timeout, one at a time.
    assert_eq!(r.sent[0].timeout_ms, Some(ABANDON));
    assert!(
        r.sent[1..].iter().any(|s| s.timeout_ms == Some(TIMEOUT)),
        "{:?}",
        r.sent
    );
    // Our own timeout has no error object for the host to attach.
    assert!(matches!(
        r.outcome,
        CallOutcome::GiveUp {
            last_request: None,
            ..
        }
    ));
}

#[test]
fn a_timeout_is_ours_and_never_the_calls_last_error_the_apis_last_answer_is() {
    let mut s = settings();
    s.calls.deadline = Duration::from_secs(20);
    // The host's timer (the timeout this machine set) ended an attempt:
    // what it holds is our own abort.
    let own = || Reply::Fail {
        facts: ErrorFacts {
            timed_out: true,
            name: Some("AbortError".into()),
            message: "This operation was aborted".into(),
            ..ErrorFacts::default()
        },
        latency: 5,
    };
    // A 503, then only our own timeouts (the host's timer, then the
    // machine's clock): the 503 is the API's last answer.
    for rest in [own(), Reply::Hang] {
        let mut c = call(&s, CallSpec::method("listNamespacedSecret"));
        let r = run(&mut c, &[status(503), rest]);
        assert!(
            gave_up(&r).contains("last error: request timed out"),
            "{}",
            gave_up(&r)
        );
        assert_eq!(
            r.outcome,
            CallOutcome::GiveUp {
                message: gave_up(&r).to_string(),
                last_request: Some(1),
            }
        );
    }
    // Only our own timeouts: no error of the API's to name.
    let mut c = call(&s, CallSpec::method("listNamespacedSecret"));
    let r = run(&mut c, &[own()]);
    assert!(matches!(
        r.outcome,
        CallOutcome::GiveUp {
            last_request: None,
            ..
        }
    ));
}

#[test]
fn retry_after_is_honoured_on_a_read() {
    let s = settings();
    let mut c = call(&s, CallSpec::method("listNamespacedPod"));
    let r = run(&mut c, &[throttled("5"), OK]);
    assert_eq!(r.outcome, CallOutcome::Return { request: 2 });
    let gap = r.sent[1].at - r.sent[0].at;
    assert!(gap >= 5_000 + 20, "the retry came {gap} ms after the first");
}

#[test]
fn a_retry_after_beyond_the_deadline_gives_up_at_once() {
    let mut s = settings();
    s.calls.deadline = Duration::from_secs(10);
    let mut c = call(&s, CallSpec::method("listNamespacedPod"));
    let r = run(&mut c, &[throttled("30"), OK]);
    gave_up(&r);
    assert_eq!(r.attempts(), 1);
}

// ---- create ---------------------------------------------------------------

#[test]
fn a_create_is_retried_on_a_transient_error() {
    let s = settings();
    let mut c = call(&s, pod_create());
    assert_eq!(c.operation(), Operation::Create);
    let r = run(&mut c, &[status(503), code("ECONNRESET"), OK]);
    assert_eq!(r.outcome, CallOutcome::Return { request: 3 });
    assert_eq!(r.read_backs(), 0);
    // Named from the body.
    assert!(
        r.warnings[0].contains("createNamespacedPod for Pod \"runner-1-workflow\""),
        "{}",
        r.warnings[0]
    );
}

#[test]
fn a_409_on_a_retry_after_a_lost_answer_reads_back_and_returns_our_own_object() {
    let s = settings();
    let mut c = call(&s, pod_create());
    // The first attempt's answer is lost (it hangs past the timeout, the
    // pod was made); the retry meets it.
    let r = run(&mut c, &[Reply::Hang, status(409), body(POD_AS_STORED)]);
    assert_eq!(r.outcome, CallOutcome::Return { request: 3 });
    assert_eq!(r.read_backs(), 1);
    assert_eq!(
        r.sent[2].read_back,
        Some((
            "readNamespacedPod".to_string(),
            "runner-1-workflow".to_string(),
            Some("ci".to_string())
        ))
    );
    assert_eq!(r.infos.len(), 1);
    assert!(
        r.infos[0].contains("an earlier attempt had made the object and its answer was lost"),
        "{}",
        r.infos[0]
    );
}

/// A pod left over from an earlier job, of the same name and labels (its
/// deletion failed), made long before this call: never adopted, whatever
/// its labels say. One made during the call (the API's clock in whole
/// seconds, a little behind ours) is.
#[test]
fn a_409_for_an_object_made_before_the_call_started_is_the_callers_409() {
    let s = settings();
    let made_at = |time: &str| {
        POD_AS_STORED.replace(
            r#""resourceVersion":"42","#,
            &format!(r#""resourceVersion":"42","creationTimestamp":"{time}","#),
        )
    };
    // T0 is 2026-10-21T02:15:26Z.
    for (time, ours) in [
        ("2020-01-01T00:00:00Z", false),
        ("2026-10-21T02:14:25Z", false),
        ("2026-10-21T02:14:27Z", true),
        ("2026-10-21T02:15:26Z", true),
        ("2026-10-21T02:15:40.5Z", true),
    ] {
        let mut c = call(&s, pod_create());
        let r = run(&mut c, &[Reply::Hang, status(409), body(&made_at(time))]);
        let expected = if ours {
            CallOutcome::Return { request: 3 }
        } else {
            CallOutcome::Throw { request: 2 }
        };
        assert_eq!(r.outcome, expected, "made at {time}");
        if !ours {
            assert!(
                r.debug.iter().any(
                    |d| d.contains(&format!("it was made at {time}, before this call started"))
                ),
                "{:#?}",
                r.debug
            );
        }
    }
}

#[test]
fn a_409_on_a_retry_for_someone_elses_object_is_the_callers_409() {
    let s = settings();
    let mut c = call(&s, pod_create());
    let r = run(
        &mut c,
        &[status(502), status(409), body(POD_OF_ANOTHER_RUNNER)],
    );
    assert_eq!(r.outcome, CallOutcome::Throw { request: 2 });
    assert_eq!(r.read_backs(), 1);
    assert!(
        r.debug.iter().any(|d| d.contains(
            "the object is not this call's own: it has no owner reference with uid \"8c3e-runner-1\""
        )),
        "{:#?}",
        r.debug
    );
}

#[test]
fn a_409_on_the_first_attempt_is_always_the_callers_and_never_read_back() {
    let s = settings();
    let mut c = call(&s, pod_create());
    let r = run(&mut c, &[status(409), body(POD_AS_STORED)]);
    assert_eq!(r.outcome, CallOutcome::Throw { request: 1 });
    assert_eq!(r.sent.len(), 1);
    assert!(r.warnings.is_empty() && r.infos.is_empty());
}

#[test]
fn a_409_after_attempts_that_never_reached_the_apiserver_is_the_callers() {
    let s = settings();
    let mut c = call(&s, pod_create());
    // Refused, DNS, a 429 from priority and fairness: none of them made
    // the pod, so the 409 is someone else's, even with our labels.
    let r = run(
        &mut c,
        &[
            code("ECONNREFUSED"),
            code("EAI_AGAIN"),
            status(429),
            status(409),
            body(POD_AS_STORED),
        ],
    );
    assert_eq!(r.outcome, CallOutcome::Throw { request: 4 });
    assert_eq!(r.read_backs(), 0);
}

#[test]
fn a_create_with_nothing_to_recognise_its_object_by_never_reads_back() {
    let s = settings();
    let spec = CallSpec {
        body: Some(r#"{"kind":"Secret","metadata":{"name":"s-1"},"data":{}}"#.into()),
        ..CallSpec::method("createNamespacedSecret")
    };
    let mut c = call(&s, spec);
    let r = run(&mut c, &[Reply::Hang, status(409), body(POD_AS_STORED)]);
    assert_eq!(r.outcome, CallOutcome::Throw { request: 2 });
    assert_eq!(r.read_backs(), 0);
}

#[test]
fn a_read_back_that_fails_transiently_is_retried_and_a_404_leaves_the_409_to_the_caller() {
    let s = settings();
    let mut c = call(&s, pod_create());
    let r = run(
        &mut c,
        &[
            Reply::Hang,
            status(409),
            code("ECONNREFUSED"),
            body(POD_AS_STORED),
        ],
    );
    assert_eq!(r.outcome, CallOutcome::Return { request: 4 });
    assert_eq!(r.read_backs(), 2);

    let mut c = call(&s, pod_create());
    let r = run(&mut c, &[Reply::Hang, status(409), status(404)]);
    assert_eq!(r.outcome, CallOutcome::Throw { request: 2 });
}

#[test]
fn a_create_that_names_no_object_is_not_sent_again_once_it_may_have_been_made() {
    let s = settings();
    let spec = || CallSpec {
        body: Some(
            r#"{"kind":"Pod","metadata":{"generateName":"job-","labels":{"a":"b"}}}"#.into(),
        ),
        ..CallSpec::method("createNamespacedPod")
    };
    let mut c = call(&s, spec());
    let r = run(&mut c, &[Reply::Hang, OK]);
    assert_eq!(r.attempts(), 1);
    assert!(
        gave_up(&r).contains("could make a second object"),
        "{}",
        gave_up(&r)
    );

    // Refused: it was not made, and is sent again.
    let mut c = call(&s, spec());
    let r = run(&mut c, &[code("ECONNREFUSED"), OK]);
    assert_eq!(r.outcome, CallOutcome::Return { request: 2 });

    // Attack on the wrappers, F10: an empty name is no name (the API
    // generates one from generateName): two pods were made.
    let empty = CallSpec {
        body: Some(
            r#"{"kind":"Pod","metadata":{"name":"","generateName":"job-","labels":{"a":"b"}}}"#
                .into(),
        ),
        ..CallSpec::method("createNamespacedPod")
    };
    let mut c = call(&s, empty);
    let r = run(&mut c, &[Reply::Hang, OK]);
    assert_eq!(r.attempts(), 1);
    assert!(gave_up(&r).contains("could make a second object"));
}

// ---- delete ---------------------------------------------------------------

#[test]
fn a_404_on_a_delete_retry_after_a_lost_answer_is_done() {
    let s = settings();
    let mut c = call(&s, on("deleteNamespacedPod", "Pod", "runner-1-workflow"));
    assert_eq!(c.operation(), Operation::Delete);
    let r = run(&mut c, &[Reply::Hang, status(404)]);
    assert_eq!(r.outcome, CallOutcome::Deleted { request: 2 });
    // One warning when it started failing, and (attack on the wrappers,
    // L4) one line when it is settled, as for a call that recovers.
    assert_eq!(r.warnings.len(), 1, "{:?}", r.warnings);
    assert_eq!(r.infos.len(), 1, "{:?}", r.infos);
    assert!(
        r.infos[0].starts_with("The Kubernetes API answered deleteNamespacedPod for Pod \"runner-1-workflow\" after 2 attempts in ")
            && r.infos[0].ends_with(": the object is gone (an earlier attempt, whose answer was lost, may have deleted it; or it was never there)."),
        "{}",
        r.infos[0]
    );
}

#[test]
fn a_404_on_the_first_delete_is_the_callers() {
    let s = settings();
    let mut c = call(&s, on("deleteNamespacedSecret", "Secret", "s-1"));
    let r = run(&mut c, &[status(404)]);
    assert_eq!(r.outcome, CallOutcome::Throw { request: 1 });
}

#[test]
fn a_404_after_deletes_that_never_reached_the_apiserver_is_the_callers() {
    let s = settings();
    let mut c = call(&s, on("deleteNamespacedPod", "Pod", "p"));
    let r = run(&mut c, &[code("ECONNREFUSED"), status(401), status(404)]);
    assert_eq!(r.outcome, CallOutcome::Throw { request: 3 });
}

#[test]
fn a_delete_is_retried_on_a_transient_error() {
    let s = settings();
    let mut c = call(&s, on("deleteCollectionNamespacedPod", "Pod", "x"));
    let r = run(&mut c, &[status(500), OK]);
    assert_eq!(r.outcome, CallOutcome::Return { request: 2 });
}

// ---- exec and log connections ---------------------------------------------

#[test]
fn an_exec_set_up_that_never_started_the_command_is_retried() {
    let s = settings();
    for failure in [
        code("ECONNREFUSED"),
        code("ENOTFOUND"),
        code("CERT_HAS_EXPIRED"),
        code("UND_ERR_CONNECT_TIMEOUT"),
    ] {
        let mut c = call(&s, on("exec", "Pod", "runner-1-workflow"));
        assert_eq!(c.operation(), Operation::Connect);
        let r = run(&mut c, &[failure.clone(), OK]);
        assert_eq!(r.outcome, CallOutcome::Return { request: 2 }, "{failure:?}");
    }
}

/// An HTTP answer instead of the protocol switch proves nothing: a gateway
/// may answer 503 ("reset before headers"), 429, 401 or 403 after it
/// forwarded the upgrade and the command started. A 4xx is the caller's,
/// as the plain client gives it; a 5xx may have started the command.
#[test]
fn an_exec_set_up_answered_with_any_status_is_never_sent_again() {
    let s = settings();
    for code in [401, 403, 429] {
        let mut c = call(&s, on("exec", "Pod", "runner-1-workflow"));
        let r = run(&mut c, &[status(code), OK]);
        assert_eq!(r.outcome, CallOutcome::Throw { request: 1 }, "HTTP {code}");
    }
    let mut c = call(&s, on("exec", "Pod", "runner-1-workflow"));
    let r = run(&mut c, &[status(503), OK]);
    assert_eq!(r.attempts(), 1);
    assert!(gave_up(&r).contains("may have started"));
}

/// A header the client will not send (a token with a newline) fails every
/// attempt alike: the plain client's error, at once.
#[test]
fn an_exec_whose_request_cannot_be_sent_is_thrown_at_once() {
    let s = settings();
    let bad = Reply::Fail {
        facts: ErrorFacts {
            codes: vec!["ERR_INVALID_CHAR".into()],
            message: "Invalid character in header content [\"Authorization\"]".into(),
            ..ErrorFacts::default()
        },
        latency: 1,
    };
    let mut c = call(&s, on("exec", "Pod", "p"));
    let r = run(&mut c, &[bad, OK]);
    assert_eq!(r.outcome, CallOutcome::Throw { request: 1 });
}

/// Attack on the wrappers, F2: an upgrade slower than the request timeout
/// (a loaded apiserver, a slow kubelet) is not given up at 10 s: a set-up
/// that timed out is never sent again, so cutting it short only turned a
/// slow success into a failure, and killed the command when its stream
/// opened late. It may take until the call's end.
#[test]
fn a_slow_exec_set_up_is_awaited_until_the_calls_end() {
    let s = settings();
    let mut c = call(&s, on("exec", "Pod", "runner-1-workflow"));
    let r = run(&mut c, &[Reply::Ok { latency: 45_000 }]);
    assert_eq!(r.outcome, CallOutcome::Return { request: 1 });
    assert_eq!(r.attempts(), 1);
    // The host's own timeout is the call's end, a little early.
    let host = r.sent[0].timeout_ms.unwrap();
    assert!(host > 100_000 && host < DEADLINE + TIMEOUT, "{host}");
    // A set-up that hangs still ends by the deadline plus one request timeout.
    let mut c = call(&s, on("exec", "Pod", "runner-1-workflow"));
    let r = run(&mut c, &[Reply::Hang]);
    assert!(r.done_at <= T0 + DEADLINE + TIMEOUT, "{}", r.done_at - T0);
    assert_eq!(r.attempts(), 1);
}

/// Attack on the wrappers, F1: a gateway in front of the apiserver may
/// forward the upgrade, the command start, and the gateway then answer
/// 500, 502 or 504 (an error, a bad or late answer from upstream). The
/// `ws` client shows only the status, not who sent it: the command may
/// have started, so the set-up is not sent again.
#[test]
fn an_exec_set_up_answered_500_502_or_504_may_have_started_and_is_not_sent_again() {
    let s = settings();
    for code in [500, 502, 504] {
        let mut c = call(&s, on("exec", "Pod", "runner-1-workflow"));
        let r = run(&mut c, &[status(code), OK]);
        assert_eq!(r.attempts(), 1, "HTTP {code}");
        let message = gave_up(&r);
        assert!(message.contains("It was not retried: the connection's set-up failed after its request may have reached the apiserver"), "{message}");
    }
}

#[test]
fn an_exec_set_up_that_timed_out_after_sending_is_never_sent_again() {
    let s = settings();
    let mut c = call(&s, on("exec", "Pod", "runner-1-workflow"));
    let r = run(&mut c, &[Reply::Hang, OK]);
    assert_eq!(r.attempts(), 1);
    let message = gave_up(&r);
    assert!(
        message.contains("(1 attempt; last error: request timed out). It was not retried: the connection's set-up failed after its request may have reached the apiserver, so the command may have started, and a command must never run twice."),
        "{message}"
    );
    assert!(message.contains("The Kubernetes API failed, not the job"));
}

#[test]
fn an_exec_set_up_that_failed_after_sending_is_never_sent_again() {
    let s = settings();
    for failure in [
        code("ECONNRESET"),
        code("UND_ERR_SOCKET"),
        code("ETIMEDOUT"),
        Reply::Fail {
            facts: ErrorFacts {
                message: "socket hang up".into(),
                ..ErrorFacts::default()
            },
            latency: 3,
        },
    ] {
        let mut c = call(&s, on("exec", "Pod", "p"));
        let r = run(&mut c, &[failure.clone(), OK]);
        assert_eq!(r.attempts(), 1, "{failure:?}");
        gave_up(&r);
    }
}

#[test]
fn an_exec_set_up_whose_connection_was_never_made_is_retried_even_after_a_timeout() {
    // A stale endpoint: the TCP connect hangs. A host that sees the
    // connection itself never made (its connect timeout, here after one
    // request timeout) reports that the request was never written.
    let s = settings();
    let mut c = call(&s, on("exec", "Pod", "runner-1-workflow"));
    let never = || Reply::FailBeforeSending {
        facts: ErrorFacts {
            timed_out: true,
            message: "connect timed out".into(),
            ..ErrorFacts::default()
        },
        latency: TIMEOUT,
    };
    let r = run(&mut c, &[never(), never(), OK]);
    assert_eq!(r.outcome, CallOutcome::Return { request: 3 });
    assert_eq!(r.warnings.len(), 1);
    // The machine gives the host a connect timeout (as long as an answer
    // is awaited: a slow TLS handshake is not cut short) apart from the
    // set-up's: a connection never made by then is aborted and reported
    // never written, and sent again.
    let mut c = call(&s, on("exec", "Pod", "runner-1-workflow"));
    let r = run(&mut c, &[Reply::HangConnecting, OK]);
    assert_eq!(r.outcome, CallOutcome::Return { request: 2 });
    assert!(
        r.sent.iter().all(|s| s.connect_timeout_ms == Some(ABANDON)),
        "{:?}",
        r.sent
    );
    let mut c = call(&s, on("readNamespacedPod", "Pod", "p"));
    let r = run(&mut c, &[OK]);
    assert_eq!(
        r.sent[0].connect_timeout_ms, None,
        "only a connection has one"
    );
    // A failure reported before sending proves nothing was sent, whatever
    // its codes say.
    let mut c = call(&s, on("exec", "Pod", "p"));
    let reset = Reply::FailBeforeSending {
        facts: ErrorFacts {
            codes: vec!["ECONNRESET".into()],
            ..ErrorFacts::default()
        },
        latency: 40,
    };
    let r = run(&mut c, &[reset, OK]);
    assert_eq!(r.outcome, CallOutcome::Return { request: 2 });
}

#[test]
fn an_exec_upgrade_refused_with_a_client_error_is_the_callers() {
    let s = settings();
    for s_ in [400, 404] {
        let mut c = call(&s, on("exec", "Pod", "p"));
        let r = run(&mut c, &[status(s_), OK]);
        assert_eq!(r.outcome, CallOutcome::Throw { request: 1 });
    }
}

#[test]
fn once_the_stream_is_open_the_call_is_over_and_nothing_is_sent_again() {
    let s = settings();
    let mut c = call(&s, on("attach", "Pod", "p"));
    let r = run(&mut c, &[code("ECONNREFUSED"), OK]);
    assert_eq!(r.outcome, CallOutcome::Return { request: 2 });
    // Whatever the host reports afterwards (the stream failing, a
    // duplicate report), it is stale and nothing is sent.
    let late = r.done_at + 1_000;
    assert_eq!(
        c.on_failure(2, late, ErrorFacts::default()),
        Ok(Accepted::Stale)
    );
    assert_eq!(c.on_stream_opened(2, late), Ok(Accepted::Stale));
    assert!(matches!(c.poll(late + 60_000), CallAction::Done { .. }));
}

#[test]
fn a_stream_that_opens_after_its_set_up_timed_out_is_stale() {
    let s = settings();
    let mut c = call(&s, on("exec", "Pod", "p"));
    let CallAction::Send { request, .. } = c.poll(T0) else {
        panic!()
    };
    // A set-up is awaited until the call's end.
    let end = T0 + DEADLINE + TIMEOUT;
    assert!(matches!(c.poll(T0), CallAction::Wait { until_ms: Some(t) } if t == end));
    // The timeout fires; the machine gives up (never re-sends).
    let mut actions = Vec::new();
    loop {
        let a = c.poll(end);
        let done = matches!(a, CallAction::Done { .. });
        actions.push(a);
        if done {
            break;
        }
    }
    assert!(!actions.iter().any(|a| matches!(a, CallAction::Send { .. })));
    assert_eq!(c.on_stream_opened(request, end + 5), Ok(Accepted::Stale));
}

// ---- pass-through and the switch ------------------------------------------

#[test]
fn patch_replace_and_unknown_methods_pass_through_unchanged() {
    let s = settings();
    for method in [
        "patchNamespacedPod",
        "replaceNamespacedSecret",
        "connectPostNamespacedPodProxy",
        "frobnicate",
    ] {
        let mut c = call(&s, on(method, "Pod", "p"));
        assert_eq!(c.operation(), Operation::PassThrough);
        let r = run(&mut c, &[status(503), OK]);
        assert_eq!(r.outcome, CallOutcome::Throw { request: 1 }, "{method}");
        assert_eq!(r.sent.len(), 1);
        assert_eq!(r.sent[0].timeout_ms, None, "no timeout of ours");
        assert!(r.waits.iter().all(|w| w.1.is_none()), "{:?}", r.waits);
        assert!(r.warnings.is_empty() && r.infos.is_empty() && r.debug.is_empty());

        let mut c = call(&s, on(method, "Pod", "p"));
        let r = run(&mut c, &[OK]);
        assert_eq!(r.outcome, CallOutcome::Return { request: 1 });
        assert!(r.debug.is_empty());
        assert_eq!(c.ends_by_ms(), None);
    }
}

#[test]
fn with_the_switch_off_every_call_passes_through() {
    let mut s = settings();
    s.calls.resilient = false;
    for spec in [
        pod_create(),
        CallSpec::method("listNamespacedPod"),
        CallSpec::method("exec"),
    ] {
        let mut c = call(&s, spec);
        assert_eq!(c.operation(), Operation::PassThrough);
        let r = run(&mut c, &[code("ECONNREFUSED"), OK]);
        assert_eq!(r.outcome, CallOutcome::Throw { request: 1 });
        assert!(r.warnings.is_empty() && r.debug.is_empty());
    }
}

#[test]
fn the_call_deadline_comes_from_its_own_setting() {
    let (s, errors) = k8s_auth_preflight::Settings::from_env([
        ("ACTIONS_RUNNER_PREFLIGHT_CALL_DEADLINE_MS", "15000"),
        ("ACTIONS_RUNNER_PREFLIGHT_DEADLINE_MS", "60000"),
        ("ACTIONS_RUNNER_PREFLIGHT_SEED", "3"),
    ]);
    assert!(errors.is_empty(), "{errors:?}");
    let mut c = Call::new(&s, CallSpec::method("listNamespacedPod"), T0);
    assert_eq!(c.ends_by_ms(), Some(T0 + 15_000 + ABANDON));
    let r = run(&mut c, &[code("ECONNREFUSED")]);
    gave_up(&r);
    assert!(
        r.warnings[0].contains("retrying for up to 15 s"),
        "{}",
        r.warnings[0]
    );
    assert!(r.done_at < T0 + 15_000);

    let (s, errors) = k8s_auth_preflight::Settings::from_env([(
        "ACTIONS_RUNNER_PREFLIGHT_CALL_DEADLINE_MS",
        "soon",
    )]);
    assert_eq!(s.calls.deadline, Duration::from_millis(DEADLINE));
    assert_eq!(
        errors[0].to_string(),
        "ACTIONS_RUNNER_PREFLIGHT_CALL_DEADLINE_MS=\"soon\" ignored: not a number; accepted: a whole number of ms from 1000 to 3600000; using the default 120000"
    );
}

// ---- reports ----------------------------------------------------------------

#[test]
fn reports_for_requests_never_sent_or_of_the_wrong_kind_are_errors() {
    let s = settings();
    let mut c = call(&s, pod_create());
    assert_eq!(c.on_success(1, T0), Err(BadReport::UnknownRequest(1)));
    let CallAction::Send { request, .. } = c.poll(T0) else {
        panic!()
    };
    assert_eq!(
        c.on_read_back(request, T0, POD_AS_STORED),
        Err(BadReport::WrongReport(1))
    );
    assert_eq!(c.on_success(7, T0), Err(BadReport::UnknownRequest(7)));
    assert_eq!(c.on_success(0, T0), Err(BadReport::UnknownRequest(0)));
    assert_eq!(c.on_success(request, T0 + 5), Ok(Accepted::Applied));
    assert_eq!(c.on_success(request, T0 + 6), Ok(Accepted::Stale));
}

#[test]
fn a_create_body_that_does_not_parse_is_named_in_a_debug_line_and_treated_as_unnamed() {
    let s = settings();
    let spec = || CallSpec {
        body: Some("{not json".into()),
        ..CallSpec::method("createNamespacedPod")
    };
    // Whether it names its object is unknown: once it may have been made,
    // it is not sent again, and a 409 is never read back.
    let mut c = call(&s, spec());
    let r = run(&mut c, &[Reply::Hang, status(409), body(POD_AS_STORED)]);
    assert_eq!(r.attempts(), 1);
    assert!(gave_up(&r).contains("could make a second object"));
    assert!(
        r.debug[0].contains("the body sent is not an object of the API's shape"),
        "{}",
        r.debug[0]
    );
    let mut c = call(&s, spec());
    let r = run(
        &mut c,
        &[code("ECONNREFUSED"), status(409), body(POD_AS_STORED)],
    );
    assert_eq!(r.outcome, CallOutcome::Throw { request: 2 });
    assert_eq!(r.read_backs(), 0);
    // No body at all: the same.
    let mut c = call(&s, CallSpec::method("createNamespacedPod"));
    let r = run(&mut c, &[status(504), OK]);
    assert_eq!(r.attempts(), 1);
    assert!(gave_up(&r).contains("could make a second object"));
}

// ---- a known outage ------------------------------------------------------

/// A host that loops around its calls (the hooks' 30 copy attempts) must
/// not wait a whole deadline on every turn once the API is known to be
/// down: after a give-up, the process's next calls try once.
#[test]
fn after_a_give_up_the_next_call_tries_once_and_an_answer_ends_the_outage() {
    use k8s_auth_preflight::call::Breaker;
    let s = settings();
    let mut breaker = Breaker::new();
    let mut first = breaker.start(&s, on("readNamespacedPod", "Pod", "p"), T0);
    let r = run(&mut first, &[code("ECONNREFUSED")]);
    assert!(r.attempts() > 5, "the first call retries for its deadline");
    breaker.learn(&first, r.done_at);

    // The next call, moments later: one attempt, no "retrying" warning.
    let mut next = breaker.start(&s, on("exec", "Pod", "p"), r.done_at + 1_000);
    let mut now = r.done_at + 1_000;
    let CallAction::Send { request, .. } = next.poll(now) else {
        panic!("no attempt");
    };
    now += 5;
    next.on_failure(
        request,
        now,
        ErrorFacts {
            codes: vec!["ECONNREFUSED".into()],
            message: "connect ECONNREFUSED".into(),
            ..ErrorFacts::default()
        },
    )
    .unwrap();
    // Bounded: without the rule the call waits to retry, and never ends here.
    let mut actions = Vec::new();
    for _ in 0..20 {
        let a = next.poll(now);
        let done = matches!(a, CallAction::Done { .. });
        actions.push(a);
        if done {
            break;
        }
    }
    assert!(
        !actions.iter().any(|a| matches!(
            a,
            CallAction::Log {
                level: Level::Warning,
                ..
            } | CallAction::Send { .. }
        )),
        "{actions:#?}"
    );
    let Some(CallAction::Done {
        outcome: CallOutcome::GiveUp { message, .. },
    }) = actions.last()
    else {
        panic!("{actions:#?}");
    };
    assert!(message.contains("(1 attempt;"), "{message}");
    assert!(
        message.contains("another call of this step gave up on the Kubernetes API 1.0 s ago"),
        "{message}"
    );
    // A call that fails in a known outage extends it.
    assert!(next.gave_up_on_the_api());
    breaker.learn(&next, now);
    assert_eq!(breaker.known(s.calls.deadline, now), Some(0));

    // The API answers a call: the outage is over, the next call has its deadline.
    let mut answered = breaker.start(&s, on("listNamespacedPod", "Pod", "p"), now + 1_000);
    let r = run(&mut answered, &[OK]);
    assert_eq!(r.outcome, CallOutcome::Return { request: 1 });
    breaker.learn(&answered, r.done_at);
    let mut later = breaker.start(&s, on("readNamespacedPod", "Pod", "p"), r.done_at + 1);
    let r = run(
        &mut later,
        &[code("ECONNREFUSED"), code("ECONNREFUSED"), OK],
    );
    assert_eq!(r.attempts(), 3);

    // And a deadline's quiet ends it too.
    let quiet = Breaker::gave_up_at(T0);
    let mut c = quiet.start(&s, on("readNamespacedPod", "Pod", "p"), T0 + DEADLINE);
    let r = run(&mut c, &[code("ECONNREFUSED"), OK]);
    assert_eq!(r.attempts(), 2);
}

#[test]
fn the_deadline_bounds_a_call_not_the_checks_attempt_limit() {
    // MAX_ATTEMPTS is per review of the check; 20 attempts 4-8 s apart
    // would end a 120 s call early.
    let (s, errors) = k8s_auth_preflight::Settings::from_env([
        ("ACTIONS_RUNNER_PREFLIGHT_MAX_ATTEMPTS", "3"),
        ("ACTIONS_RUNNER_PREFLIGHT_SEED", "7"),
    ]);
    assert!(errors.is_empty(), "{errors:?}");
    let mut c = call(&s, on("readNamespacedPod", "Pod", "p"));
    let r = run(&mut c, &[code("ECONNREFUSED")]);
    assert!(r.attempts() > 20, "{} attempts", r.attempts());
    assert!(
        r.done_at >= T0 + DEADLINE - 8_000,
        "gave up {} ms in",
        r.done_at - T0
    );
    assert!(r.sent.iter().all(|s| s.at < T0 + DEADLINE));
}

/// The whole-job bench, a 60 s stall at the first exec: the exec set-up was
/// cut after its request went out (it may have started), so it gave up at
/// once, and the known outage then made each of the hooks' 30 copy tries
/// try once: the job failed. A give-up for a reason of the call's own says
/// nothing about the API.
#[test]
fn a_give_up_for_a_reason_of_the_calls_own_is_no_outage() {
    use k8s_auth_preflight::call::Breaker;
    let s = settings();
    let mut breaker = Breaker::new();
    let mut exec = breaker.start(&s, on("exec", "Pod", "p"), T0);
    let r = run(&mut exec, &[code("ECONNRESET")]);
    assert_eq!(r.attempts(), 1);
    gave_up(&r);
    assert!(!exec.gave_up_on_the_api());
    breaker.learn(&exec, r.done_at);
    assert_eq!(breaker.known(s.calls.deadline, r.done_at), None);
    // The next exec retries through the stall as usual.
    let mut next = breaker.start(&s, on("exec", "Pod", "p"), r.done_at + 1_000);
    let r = run(&mut next, &[code("ECONNREFUSED"), code("ECONNREFUSED"), OK]);
    assert_eq!(r.attempts(), 3);
    // A passed-through call, and a call not over, teach nothing either.
    let mut off = s.clone();
    off.calls.resilient = false;
    let mut gone = Breaker::gave_up_at(T0);
    let mut pass = Call::new(&off, on("readNamespacedPod", "Pod", "p"), T0);
    let _ = run(&mut pass, &[OK]);
    gone.learn(&pass, T0 + 1);
    assert_eq!(gone.known(s.calls.deadline, T0 + 1), Some(1));
    let pending = Call::new(&s, on("readNamespacedPod", "Pod", "p"), T0);
    gone.learn(&pending, T0 + 2);
    assert_eq!(gone.known(s.calls.deadline, T0 + 2), Some(2));
}

// ---- never worse than the plain call ---------------------------------------

/// Polls `c` at `now` until it asks to wait or is done; the last action.
fn settle(c: &mut Call, now: u64) -> (Vec<CallAction>, CallAction) {
    let mut seen = Vec::new();
    for _ in 0..50 {
        let a = c.poll(now);
        if matches!(a, CallAction::Wait { .. } | CallAction::Done { .. }) {
            return (seen, a);
        }
        seen.push(a);
    }
    panic!("no wait or done in 50 polls: {seen:#?}");
}

fn sends(actions: &[CallAction]) -> Vec<(u32, Option<u64>)> {
    actions
        .iter()
        .filter_map(|a| match a {
            CallAction::Send {
                request,
                timeout_ms,
                ..
            } => Some((*request, *timeout_ms)),
            _ => None,
        })
        .collect()
}

/// A slow but healthy apiserver (a read answered after 50 s): the first
/// copy is awaited while later copies go out and are cut, and its answer
/// is the call's.
#[test]
fn a_read_answered_after_50_s_succeeds_with_its_first_copy() {
    let s = settings();
    let mut c = call(&s, on("readNamespacedPod", "Pod", "p"));
    let (first, _) = settle(&mut c, T0);
    assert_eq!(sends(&first), vec![(1, Some(ABANDON))]);
    let mut now = T0;
    let mut later = Vec::new();
    while now < T0 + 50_000 {
        now += 500;
        let (actions, _) = settle(&mut c, now);
        later.extend(sends(&actions));
    }
    // Copies went out meanwhile, each cut at the request timeout: two out
    // at most.
    assert!(!later.is_empty(), "no second copy in 50 s");
    assert!(later.iter().all(|(_, t)| *t == Some(TIMEOUT)), "{later:?}");
    assert_eq!(c.on_success(1, now), Ok(Accepted::Applied));
    let (_, done) = settle(&mut c, now);
    assert!(
        matches!(
            done,
            CallAction::Done {
                outcome: CallOutcome::Return { request: 1 }
            }
        ),
        "{done:?}"
    );
}

/// A create behind a slow admission webhook (answered after 50 s): one
/// attempt, awaited past the apiserver's own 60 s, never cut and sent
/// again.
#[test]
fn a_create_answered_after_50_s_is_one_attempt_that_succeeds() {
    let s = settings();
    let mut c = call(&s, pod_create());
    let r = run(&mut c, &[Reply::Ok { latency: 50_000 }]);
    assert_eq!(r.outcome, CallOutcome::Return { request: 1 });
    assert_eq!(r.attempts(), 1);
    assert_eq!(r.sent[0].timeout_ms, Some(ABANDON));
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
}

fn refused(status: u16, message: &str) -> Reply {
    Reply::Fail {
        facts: ErrorFacts {
            status: Some(status),
            body: Some(format!(
                r#"{{"kind":"Status","apiVersion":"v1","metadata":{{}},"status":"Failure","message":{},"reason":"Forbidden","code":{status}}}"#,
                serde_json::to_string(message).unwrap()
            )),
            ..ErrorFacts::default()
        },
        latency: 5,
    }
}

const RBAC: &str = r#"pods is forbidden: User "system:serviceaccount:ci:runner" cannot create resource "pods" in API group "" in the namespace "ci""#;

/// Admission refusals are the apiserver's final answer: thrown at once,
/// as the plain client throws them, for every kind.
#[test]
fn an_admission_denial_is_thrown_at_once() {
    let s = settings();
    for message in [
        r#"pods "p" is forbidden: violates PodSecurity "restricted:latest": privileged"#,
        r#"pods "p" is forbidden: exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1"#,
        r#"admission webhook "deny.example.com" denied the request: no"#,
    ] {
        let mut c = call(&s, pod_create());
        let r = run(&mut c, &[refused(403, message)]);
        assert_eq!(r.outcome, CallOutcome::Throw { request: 1 }, "{message}");
        assert_eq!(r.attempts(), 1);
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    }
}

/// A 401 or an authorization 403 may be an apiserver that has just come
/// back: retried within the window, then the apiserver's answer is
/// thrown, as the plain client throws it.
#[test]
fn a_refused_credential_or_permission_is_retried_within_its_window_then_thrown() {
    let s = settings();
    for reply in [status(401), refused(403, RBAC)] {
        for spec in [on("readNamespacedPod", "Pod", "p"), pod_create()] {
            let mut c = call(&s, spec.clone());
            let r = run(&mut c, std::slice::from_ref(&reply));
            let CallOutcome::Throw { request } = r.outcome else {
                panic!("{spec:?}: {:?}", r.outcome);
            };
            assert_eq!(request as usize, r.sent.len(), "the last answer is thrown");
            assert!(r.attempts() > 1, "{spec:?}: not retried at all");
            let window = millis(s.calls.auth_retry);
            assert!(r.done_at - T0 >= window, "{spec:?}: {}", r.done_at - T0);
            assert!(
                r.done_at - T0 < window + 8_000 + 1_000,
                "{spec:?}: {}",
                r.done_at - T0
            );
        }
        // A 403 after a refused connection: the window opens at the first 403.
        let mut c = call(&s, on("readNamespacedPod", "Pod", "p"));
        let r = run(
            &mut c,
            &[
                code("ECONNREFUSED"),
                code("ECONNREFUSED"),
                reply.clone(),
                OK,
            ],
        );
        assert_eq!(r.outcome, CallOutcome::Return { request: 4 });
    }
}

fn millis(d: Duration) -> u64 {
    d.as_millis() as u64
}

/// The give-up says whose fault it was from the evidence, and quotes the
/// last answer's reason and message.
#[test]
fn the_give_up_quotes_the_last_answer_and_says_whose_fault_it_was() {
    let mut s = settings();
    s.calls.deadline = Duration::from_secs(10);
    let unavailable = Reply::Fail {
        facts: ErrorFacts {
            status: Some(503),
            body: Some(r#"{"kind":"Status","status":"Failure","message":"the server is currently unable to handle the request","reason":"ServiceUnavailable","code":503}"#.into()),
            ..ErrorFacts::default()
        },
        latency: 5,
    };
    let mut c = call(&s, CallSpec::method("listNamespacedPod"));
    let r = run(&mut c, &[unavailable]);
    let message = gave_up(&r);
    assert!(
        message.contains("last error: HTTP 503 (ServiceUnavailable: the server is currently unable to handle the request))"),
        "{message}"
    );
    assert!(
        message.contains("the apiserver kept answering with errors"),
        "{message}"
    );
    let mut c = call(&s, CallSpec::method("listNamespacedPod"));
    let r = run(&mut c, &[code("ECONNREFUSED")]);
    assert!(gave_up(&r).contains("the control plane was unreachable"));
}

/// A proxy's report that it could not reach the apiserver: nothing was
/// sent, so a read is retried and an exec's set-up is sent again.
#[test]
fn a_proxys_refused_target_is_retried_like_a_refused_connection() {
    let s = settings();
    let socks = Reply::Fail {
        facts: ErrorFacts {
            message: "Socks5 proxy rejected connection - ConnectionRefused".into(),
            ..ErrorFacts::default()
        },
        latency: 5,
    };
    let connect = Reply::Fail {
        facts: ErrorFacts {
            message: "Bad response: 503".into(),
            ..ErrorFacts::default()
        },
        latency: 5,
    };
    for reply in [socks, connect] {
        for spec in [
            CallSpec::method("listNamespacedPod"),
            on("exec", "Pod", "p"),
        ] {
            let mut c = call(&s, spec.clone());
            let r = run(&mut c, &[reply.clone(), OK]);
            assert_eq!(
                r.outcome,
                CallOutcome::Return { request: 2 },
                "{spec:?} {reply:?}"
            );
        }
    }
}

/// The calls a policy makes tell its breaker themselves how they ended:
/// after one gives up on the API, the policy's next call tries once; a
/// call of another policy (another process's settings) knows nothing.
#[test]
fn the_calls_of_one_policy_report_to_its_breaker_themselves() {
    use k8s_auth_preflight::call::CallPolicy;
    use k8s_auth_preflight::config::EnvValue;
    use k8s_auth_preflight::environment::Environment;
    let env = [("ACTIONS_RUNNER_PREFLIGHT_SEED", EnvValue::Text("7"))];
    let environment = Environment::read(&env);
    let policy = CallPolicy::new(&environment);
    let mut first = policy.call(on("readNamespacedPod", "Pod", "p"), T0);
    let r = run(&mut first, &[code("ECONNREFUSED")]);
    assert!(r.attempts() > 5, "the first call retries for its deadline");
    let mut next = policy.call(on("readNamespacedPod", "Pod", "p"), r.done_at + 1_000);
    let r2 = run(&mut next, &[code("ECONNREFUSED")]);
    assert_eq!(r2.attempts(), 1);
    assert!(
        gave_up(&r2).contains("gave up on the Kubernetes API"),
        "{}",
        gave_up(&r2)
    );
    let other = CallPolicy::new(&Environment::read(&env));
    let mut fresh = other.call(on("readNamespacedPod", "Pod", "p"), r.done_at + 1_000);
    assert!(run(&mut fresh, &[code("ECONNREFUSED")]).attempts() > 5);
}

/// What is learned of one cluster's outage says nothing of another's.
#[test]
fn an_outage_of_one_cluster_leaves_calls_to_another_their_retries() {
    use k8s_auth_preflight::call::Breaker;
    let s = settings();
    let to = |server: &str| CallSpec {
        cluster: Some(server.into()),
        ..CallSpec::method("listNamespacedPod")
    };
    let mut breaker = Breaker::new();
    let mut dead = breaker.start(&s, to("https://a.example:6443"), T0);
    let r = run(&mut dead, &[code("ECONNREFUSED")]);
    breaker.learn(&dead, r.done_at);
    let mut other = breaker.start(&s, to("https://b.example:6443"), r.done_at + 1_000);
    let got = run(&mut other, &[status(503), OK]);
    assert_eq!(got.outcome, CallOutcome::Return { request: 2 });
    let mut same = breaker.start(&s, to("https://a.example:6443"), r.done_at + 1_000);
    let got = run(&mut same, &[status(503), OK]);
    assert!(
        matches!(got.outcome, CallOutcome::GiveUp { .. }),
        "{:?}",
        got.outcome
    );
}

/// A call's attempts are bounded by a setting of its own, never raised
/// silently; the check's `MAX_ATTEMPTS` (per review) is not a call's.
#[test]
fn a_calls_attempts_are_bounded_by_its_own_setting() {
    let (s, errors) = k8s_auth_preflight::Settings::from_env([
        ("ACTIONS_RUNNER_PREFLIGHT_CALL_MAX_ATTEMPTS", "2"),
        ("ACTIONS_RUNNER_PREFLIGHT_SEED", "3"),
    ]);
    assert!(errors.is_empty(), "{errors:?}");
    let mut c = Call::new(&s, CallSpec::method("listNamespacedPod"), T0);
    let r = run(&mut c, &[code("ECONNREFUSED")]);
    assert_eq!(r.attempts(), 2);
    assert!(gave_up(&r).contains("(2 attempts;"), "{}", gave_up(&r));
    let (s, _) = k8s_auth_preflight::Settings::from_env([
        ("ACTIONS_RUNNER_PREFLIGHT_MAX_ATTEMPTS", "2"),
        ("ACTIONS_RUNNER_PREFLIGHT_SEED", "3"),
    ]);
    let mut c = Call::new(&s, CallSpec::method("listNamespacedPod"), T0);
    let r = run(&mut c, &[code("ECONNREFUSED")]);
    assert!(r.attempts() > 2, "the check's limit bounded a call");
}

//! Hedged requests (`ACTIONS_RUNNER_PREFLIGHT_HEDGE_MS`, src/hedge.rs),
//! driven with a simulated clock and apiserver. Each test pins one rule.

mod common;

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

use std::time::Duration;

use common::*;
use k8s_auth_preflight::preflight::{Accepted, Action, Request};
use k8s_auth_preflight::{Identity, Preflight, ProbeResult, Settings, Verdict};

/// Access reviews only (13 probes), hedging after `hedge_ms`.
fn settings(hedge_ms: Option<u64>) -> Settings {
    let mut s = Settings::new();
    s.seed = Some(11);
    s.rules_review = false;
    s.hedge_after = hedge_ms.map(Duration::from_millis);
    s
}

fn check(settings: Settings) -> Preflight {
    Preflight::new(
        settings,
        &hooks_permissions(),
        "ci",
        Some(Identity::from_credential(b"hedge-token").unwrap()),
        None,
        T0,
    )
    .unwrap()
}

fn is_exec(s: &Sent) -> bool {
    let a = s.access();
    a.verb == "create" && a.subresource == "exec"
}

#[test]
fn the_hedge_goes_exactly_at_the_delay_not_before_and_repeats_the_request() {
    let mut c = check(settings(Some(200)));
    let mut first = Vec::new();
    for _ in 0..13 {
        match c.poll(T0) {
            Action::Send {
                probe,
                attempt,
                request,
                ..
            } => first.push((probe, attempt, request)),
            other => panic!("expected a send, got {other:?}"),
        }
    }
    assert!(matches!(c.poll(T0), Action::Wait { until_ms } if until_ms == T0 + 200));
    assert!(
        matches!(c.poll(T0 + 199), Action::Wait { until_ms } if until_ms == T0 + 200),
        "no hedge 1 ms early"
    );
    for (probe, attempt, request) in &first {
        match c.poll(T0 + 200) {
            Action::Send {
                probe: p,
                attempt: a,
                request: r,
                timeout_ms,
            } => {
                assert_eq!(p, *probe);
                assert_eq!(a, attempt + 1, "a request number of its own");
                assert_eq!(&r, request, "the same review again");
                assert_eq!(timeout_ms, 10_000);
            }
            other => panic!("expected the hedge of probe {probe}, got {other:?}"),
        }
    }
    // One hedge per attempt: next comes the first request's timeout.
    assert!(matches!(c.poll(T0 + 200), Action::Wait { until_ms } if until_ms == T0 + 10_000));
    assert_eq!(c.hedges(), 13);
}

#[test]
fn no_hedge_when_off_or_when_the_delay_reaches_the_timeout() {
    for hedge in [None, Some(10_000), Some(60_000)] {
        let mut c = check(settings(hedge));
        let run = drive(&mut c, T0, |_, s| {
            if s.attempt == 1 {
                Reply::Hang
            } else {
                healthy(true)
            }
        });
        assert_eq!(run.outcome.verdict, Verdict::Allowed);
        assert_eq!(c.hedges(), 0, "hedge {hedge:?}");
        assert_eq!(run.sent.len(), 26, "13 hung, 13 retries, hedge {hedge:?}");
        assert!(run.sent.iter().all(|s| s.out == 1), "hedge {hedge:?}");
        assert!(
            run.sent.iter().all(|s| s.at == T0 || s.at >= T0 + 10_000),
            "nothing between the first requests and their timeout"
        );
    }
}

#[test]
fn a_hedge_rescues_an_attempt_stuck_on_a_stale_backend() {
    // The first request of every review hangs; each hedge is answered.
    let mut c = check(settings(Some(150)));
    let run = drive(&mut c, T0, |_, s| {
        if s.attempt == 1 {
            Reply::Hang
        } else {
            healthy(true)
        }
    });
    assert_eq!(run.outcome.verdict, Verdict::Allowed);
    assert_eq!(run.done_at, T0 + 150 + 10, "not the 10 s timeout");
    assert_eq!(run.outcome.requests, 26, "a hedge counts as a request");
    assert!(run.sent[13..].iter().all(|s| s.alongside == Some(T0)));
    // The hung requests were never given up on, so no failure was seen.
    assert!(run.warnings.is_empty(), "{:?}", run.warnings);
}

#[test]
fn the_first_answer_wins_and_the_other_copy_is_stale() {
    // One probe: the rules review (fast path on).
    for hedge_first in [true, false] {
        let mut s = settings(Some(100));
        s.rules_review = true;
        let mut c = check(s);
        let (probe, attempt) = match c.poll(T0) {
            Action::Send { probe, attempt, .. } => (probe, attempt),
            other => panic!("{other:?}"),
        };
        assert!(matches!(c.poll(T0), Action::Wait { .. }));
        let hedge = match c.poll(T0 + 100) {
            Action::Send {
                probe: p,
                attempt: a,
                request: Request::RulesReview(_),
                ..
            } => {
                assert_eq!(p, probe);
                a
            }
            other => panic!("{other:?}"),
        };
        let (winner, loser) = if hedge_first {
            (hedge, attempt)
        } else {
            (attempt, hedge)
        };
        let rules = ProbeResult::RulesReviewed {
            status: grant_all(),
        };
        assert_eq!(
            c.on_result(probe, winner, T0 + 120, rules.clone()),
            Ok(Accepted::Applied)
        );
        // The loser's answer, whatever it says, changes nothing.
        assert_eq!(
            c.on_result(probe, loser, T0 + 130, fail_result()),
            Ok(Accepted::Stale)
        );
        assert_eq!(
            c.on_result(probe, loser, T0 + 140, rules),
            Ok(Accepted::Stale)
        );
        match poll_past_debug(&mut c, T0 + 140) {
            Action::Done { outcome } => {
                assert_eq!(outcome.verdict, Verdict::Allowed);
                assert_eq!(outcome.requests, 2);
                assert_eq!(outcome.elapsed_ms, 140);
                assert!(outcome.last_error.is_none(), "a stale failure is not seen");
            }
            other => panic!("{other:?}"),
        }
    }
}

fn fail_result() -> ProbeResult {
    ProbeResult::Failed { facts: refused() }
}

#[test]
fn a_denial_wins_over_its_hedges_transient_error() {
    // create pods/exec: the first request is slow and denies; its hedge is
    // refused at once. The denial must not be lost to a retry.
    let mut c = check(settings(Some(100)));
    let run = drive(&mut c, T0, |_, s| match (is_exec(s), s.attempt) {
        (true, 1) => Reply::Review {
            allowed: false,
            latency: 400,
        },
        (true, _) => fail(refused()),
        (false, _) => healthy(true),
    });
    assert_eq!(run.outcome.verdict, Verdict::Denied);
    let names: Vec<String> = run.outcome.missing.iter().map(|p| p.to_string()).collect();
    assert_eq!(names, ["create pods/exec"]);
    let exec: Vec<&Sent> = run.sent.iter().filter(|s| is_exec(s)).collect();
    assert_eq!(exec.len(), 2, "the request and its hedge, no retry");
    assert_eq!(run.done_at, T0 + 400);
    assert_eq!(
        run.outcome.last_error.as_deref(),
        Some("ECONNREFUSED: fetch failed")
    );

    // The mirror: the first request fails (transient) while the hedge is
    // out; the hedge brings the denial.
    let mut c = check(settings(Some(100)));
    let run = drive(&mut c, T0, |_, s| match (is_exec(s), s.attempt) {
        (true, 1) => Reply::Fail {
            facts: status(503),
            latency: 300,
        },
        (true, _) => Reply::Review {
            allowed: false,
            latency: 400,
        },
        (false, _) => healthy(true),
    });
    assert_eq!(run.outcome.verdict, Verdict::Denied);
    assert_eq!(run.sent.iter().filter(|s| is_exec(s)).count(), 2);
    assert_eq!(run.done_at, T0 + 500);
}

#[test]
fn when_both_copies_fail_the_attempt_fails_once_and_is_retried() {
    let mut c = check(settings(Some(100)));
    let run = drive(&mut c, T0, |_, s| match (is_exec(s), s.attempt) {
        (true, 1) => Reply::Fail {
            facts: status(503),
            latency: 300,
        },
        (true, 2) => Reply::Fail {
            facts: refused(),
            latency: 250,
        },
        _ => healthy(true),
    });
    assert_eq!(run.outcome.verdict, Verdict::Allowed);
    let exec: Vec<&Sent> = run.sent.iter().filter(|s| is_exec(s)).collect();
    assert_eq!(exec.len(), 3, "request, hedge, one retry");
    // The retry waits a backoff (0.5-1 s, equal jitter) after the last
    // copy failed at 350 ms.
    assert!(
        exec[2].at >= T0 + 350 + 500 && exec[2].at <= T0 + 350 + 1000,
        "{}",
        exec[2].at - T0
    );
    assert_eq!(exec[2].attempt, 3);
}

#[test]
fn a_fatal_copy_failure_decides_only_if_the_other_copy_fails_too() {
    let malformed = || k8s_auth_preflight::ErrorFacts {
        name: Some("SyntaxError".into()),
        message: "Unexpected token < in JSON".into(),
        ..Default::default()
    };
    // Fatal first, then the hedge answers: the answer wins.
    let mut c = check(settings(Some(100)));
    let run = drive(&mut c, T0, |_, s| match (is_exec(s), s.attempt) {
        (true, 1) => Reply::Fail {
            facts: malformed(),
            latency: 150,
        },
        (true, _) => healthy(true),
        _ => healthy(true),
    });
    assert_eq!(run.outcome.verdict, Verdict::Allowed);
    // Fatal first, then the hedge fails transiently: fatal, not retried.
    let mut c = check(settings(Some(100)));
    let run = drive(&mut c, T0, |_, s| match (is_exec(s), s.attempt) {
        (true, 1) => Reply::Fail {
            facts: malformed(),
            latency: 150,
        },
        (true, _) => fail(refused()),
        _ => healthy(true),
    });
    assert_eq!(run.outcome.verdict, Verdict::Error);
    assert!(
        run.outcome.message.contains("malformed"),
        "{}",
        run.outcome.message
    );
    assert_eq!(run.sent.iter().filter(|s| is_exec(s)).count(), 2);
}

#[test]
fn a_hedge_never_starts_or_runs_past_the_deadline() {
    // Deadline 5 s: the first request's timeout is cut to 5 s; its hedge
    // at 3 s gets the 2 s that are left; both end at the deadline.
    let mut s = settings(Some(3_000));
    s.backoff.deadline = Duration::from_secs(5);
    let mut c = check(s);
    let run = drive(&mut c, T0, |_, _| Reply::Hang);
    assert_eq!(run.outcome.verdict, Verdict::Inconclusive);
    assert_eq!(c.hedges(), 13);
    assert!(run.done_at <= T0 + 5_000);
    for s in &run.sent {
        assert!(s.at < T0 + 5_000);
        assert!(
            s.at + s.timeout_ms <= T0 + 5_000,
            "{} + {}",
            s.at - T0,
            s.timeout_ms
        );
    }
    let hedge = run.sent.iter().find(|s| s.alongside.is_some()).unwrap();
    assert_eq!((hedge.at, hedge.timeout_ms), (T0 + 3_000, 2_000));

    // A hedge delay longer than what is left of the deadline: no hedge.
    let mut s = settings(Some(6_000));
    s.backoff.deadline = Duration::from_secs(5);
    let mut c = check(s);
    let run = drive(&mut c, T0, |_, _| Reply::Hang);
    assert_eq!(c.hedges(), 0);
    assert_eq!(run.sent.len(), 13);
}

#[test]
fn hedges_count_as_requests_but_not_against_the_attempt_limit() {
    let mut s = settings(Some(100));
    s.backoff.max_attempts = 2;
    let mut c = check(s);
    let run = drive(&mut c, T0, |_, _| Reply::Hang);
    assert_eq!(run.outcome.verdict, Verdict::Inconclusive);
    assert_eq!(c.hedges(), 26, "one per attempt");
    assert_eq!(run.outcome.requests, 13 * 2 * 2);
    assert!(
        run.sent.iter().all(|s| s.out <= 2),
        "never more than two copies out"
    );
    assert!(
        run.outcome.message.contains("52 requests"),
        "{}",
        run.outcome.message
    );
}

#[test]
fn no_new_hedge_once_the_check_is_stopping() {
    // One review is denied at 50 ms; the others hang. Their hedges (due at
    // 100 ms) would be new requests in a check that is already decided.
    let mut c = check(settings(Some(100)));
    let run = drive(&mut c, T0, |_, s| {
        if is_exec(s) {
            Reply::Review {
                allowed: false,
                latency: 50,
            }
        } else {
            Reply::Hang
        }
    });
    assert_eq!(run.outcome.verdict, Verdict::Denied);
    assert_eq!(c.hedges(), 0);
    assert_eq!(run.sent.len(), 13);
}

#[test]
fn a_stopping_check_is_not_woken_for_a_hedge_it_will_not_send() {
    // One review is denied at 50 ms; the others hang. The check waits for
    // them to time out, not for their hedges' time (100 ms).
    let mut c = check(settings(Some(100)));
    let mut exec = None;
    for _ in 0..13 {
        match c.poll(T0) {
            Action::Send {
                probe,
                attempt,
                request: Request::AccessReview(review),
                ..
            } => {
                let a = &review.spec.resource_attributes;
                if a.verb == "create" && a.subresource == "exec" {
                    exec = Some((probe, attempt));
                }
            }
            other => panic!("expected a send, got {other:?}"),
        }
    }
    let (probe, attempt) = exec.expect("an exec review");
    let denied = ProbeResult::Reviewed {
        allowed: false,
        reason: None,
    };
    assert_eq!(
        c.on_result(probe, attempt, T0 + 50, denied),
        Ok(Accepted::Applied)
    );
    assert!(matches!(
        poll_past_debug(&mut c, T0 + 50),
        Action::Wait { until_ms } if until_ms == T0 + 10_000
    ));
    assert_eq!(c.hedges(), 0);
}

#[test]
fn the_hedge_setting_is_read_from_the_environment() {
    let env = [
        ("ACTIONS_RUNNER_PREFLIGHT_HEDGE_MS", "250"),
        ("ACTIONS_RUNNER_PREFLIGHT_RULES_REVIEW", "off"),
        ("ACTIONS_RUNNER_PREFLIGHT_SEED", "3"),
    ];
    let token: &[u8] = b"hedge-token";
    let mut c =
        Preflight::from_env(env, &hooks_permissions(), "ci", Some(token), None, T0).unwrap();
    let mut sends = 0;
    loop {
        match c.poll(T0) {
            Action::Send { .. } => sends += 1,
            Action::Wait { until_ms } => {
                assert_eq!(until_ms, T0 + 250);
                break;
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(sends, 13);
}

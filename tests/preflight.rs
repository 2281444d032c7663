//! The three-way outcome state machine, driven with a simulated clock and
//! apiserver. Each test pins one rule of the outcome.

mod common;

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

use std::collections::HashMap;
use std::time::Duration;

use common::*;
use k8s_auth_preflight::cache::{self, CacheKey};
use k8s_auth_preflight::preflight::{Accepted, Action, BadReport, Request};
use k8s_auth_preflight::{
    permission, ErrorFacts, Identity, Jitter, Preflight, ProbeResult, Settings, Source, Verdict,
};

const TOKEN: &str = "test-token-for-the-runner";
const MIN: u64 = 60_000;

/// Settings for the access-review machinery alone (the rules-review fast
/// path has its own tests in tests/rules_fast_path.rs).
fn settings() -> Settings {
    let mut s = Settings::new();
    s.seed = Some(7);
    s.rules_review = false;
    s
}

fn identity() -> Identity {
    Identity::from_credential(TOKEN.as_bytes()).unwrap()
}

fn key(namespace: &str) -> CacheKey {
    let perms = permission::flatten(&hooks_permissions()).unwrap();
    CacheKey {
        namespace: namespace.into(),
        identity: identity(),
        permissions: permission::fingerprint(&perms),
    }
}

fn check(settings: Settings, cached: Option<&str>, now: u64) -> Preflight {
    Preflight::new(
        settings,
        &hooks_permissions(),
        "ci",
        Some(identity()),
        cached.map(str::as_bytes),
        now,
    )
    .unwrap()
}

fn per_probe(run: &Run) -> HashMap<usize, usize> {
    let mut counts = HashMap::new();
    for s in &run.sent {
        *counts.entry(s.probe).or_insert(0) += 1;
    }
    counts
}

#[test]
fn fresh_cache_answers_before_any_request() {
    let record = cache::record_for(&key("ci"), T0 - 10 * MIN);
    let mut c = check(settings(), Some(&record), T0);
    let run = drive(&mut c, T0, |_, _| panic!("a fresh cache must not send"));
    assert_eq!(run.outcome.verdict, Verdict::Allowed);
    assert_eq!(run.outcome.source, Some(Source::Cache));
    assert_eq!(run.outcome.requests, 0);
    assert!(
        run.outcome.record.is_none(),
        "a cache hit does not rewrite the record"
    );
}

#[test]
fn all_allowed_is_allowed_with_a_record_that_the_next_step_uses() {
    let mut c = check(settings(), None, T0);
    let run = drive(&mut c, T0, |_, _| healthy(true));
    assert_eq!(run.outcome.verdict, Verdict::Allowed);
    assert_eq!(run.outcome.source, Some(Source::Reviews));
    assert_eq!(run.sent.len(), 13, "one review per verb, in parallel");
    assert!(
        run.sent.iter().all(|s| s.at == T0),
        "all reviews start at once"
    );
    assert!(run.warnings.is_empty(), "{:?}", run.warnings);
    let record = run
        .outcome
        .record
        .clone()
        .expect("an allowed verdict is cached");
    // The next step of the job, a minute later: zero requests.
    let mut next = check(settings(), Some(&record), T0 + MIN);
    let again = drive(&mut next, T0 + MIN, |_, _| {
        panic!("must be served from the cache")
    });
    assert_eq!(again.outcome.source, Some(Source::Cache));
}

#[test]
fn a_definitive_denial_names_exactly_what_is_missing() {
    let mut c = check(settings(), None, T0);
    let run = drive(&mut c, T0, |_, s| {
        let a = s.access();
        let denied = (a.verb == "create" && a.subresource == "exec")
            || (a.verb == "delete" && a.resource == "secrets");
        healthy(!denied)
    });
    assert_eq!(run.outcome.verdict, Verdict::Denied);
    let names: Vec<String> = run.outcome.missing.iter().map(|p| p.to_string()).collect();
    assert_eq!(names, ["create pods/exec", "delete secrets"]);
    assert_eq!(
        run.outcome.message,
        "denied: create pods/exec, delete secrets in namespace \"ci\""
    );
    assert!(run.outcome.record.is_none(), "a denial is never cached");
    assert!(
        run.outcome.delete_record,
        "a stale record for this key is to be deleted"
    );
    assert_eq!(run.sent.len(), 13, "a denial is not retried");
}

#[test]
fn a_denial_wins_over_transient_errors_elsewhere() {
    let mut c = check(settings(), None, T0);
    let run = drive(&mut c, T0, |_, s| {
        if s.probe == 0 {
            healthy(false)
        } else {
            fail(refused())
        }
    });
    assert_eq!(run.outcome.verdict, Verdict::Denied);
    assert_eq!(run.outcome.missing.len(), 1);
    assert!(run
        .outcome
        .message
        .contains("12 other permission(s) could not be checked"));
    assert!(
        run.done_at < T0 + 1_000,
        "no retries once a denial is known"
    );
}

#[test]
fn a_stall_then_a_403_window_then_recovery_is_allowed() {
    // The 2026-10-21 shape: 25 s refused, then 3 s of transient 403 for half
    // the requests, then healthy.
    let mut c = check(settings(), None, T0);
    let mut n = 0u64;
    let run = drive(&mut c, T0, |now, _| {
        n += 1;
        match now - T0 {
            t if t < 25_000 => fail(refused()),
            t if t < 28_000 && n % 2 == 0 => fail(status(403)),
            _ => healthy(true),
        }
    });
    assert_eq!(run.outcome.verdict, Verdict::Allowed);
    assert_eq!(run.outcome.source, Some(Source::Reviews));
    assert!(run.outcome.record.is_some());
    assert!(run.sent.len() > 13);
    assert_eq!(
        run.warnings.len(),
        1,
        "one warning per check, not per retry: {:?}",
        run.warnings
    );
    assert!(
        run.warnings[0].contains("ECONNREFUSED"),
        "{}",
        run.warnings[0]
    );
    assert!(run.warnings[0].contains("not a permissions problem"));
    assert!(
        run.outcome.message.contains("after"),
        "{}",
        run.outcome.message
    );
    assert!(run.done_at >= T0 + 25_000 && run.done_at < T0 + 60_000);
}

#[test]
fn a_stall_past_the_deadline_is_inconclusive_and_says_it_is_not_a_denial() {
    let mut c = check(settings(), None, T0);
    let run = drive(&mut c, T0, |_, _| fail(refused()));
    let o = &run.outcome;
    assert_eq!(o.verdict, Verdict::Inconclusive);
    assert!(
        o.message.contains("NOT a permissions denial"),
        "{}",
        o.message
    );
    assert!(
        o.message.contains("ECONNREFUSED"),
        "names the last transient error: {}",
        o.message
    );
    assert!(
        o.message
            .contains(&format!("{:.1} s", o.elapsed_ms as f64 / 1000.0)),
        "says how long it tried: {}",
        o.message
    );
    assert!(o.record.is_none() && !o.delete_record);
    assert!(run.done_at <= T0 + 90_000, "finishes by the deadline");
    assert!(o.elapsed_ms > 40_000, "it really tried: {}", o.elapsed_ms);
}

#[test]
fn a_stall_past_the_deadline_uses_a_grace_record() {
    let record = cache::record_for(&key("ci"), T0 - 2 * 60 * MIN);
    let mut c = check(settings(), Some(&record), T0);
    let run = drive(&mut c, T0, |_, _| fail(refused()));
    assert_eq!(run.outcome.verdict, Verdict::Allowed);
    assert_eq!(run.outcome.source, Some(Source::GraceCache));
    assert_eq!(run.outcome.warnings.len(), 1);
    assert!(
        run.outcome.warnings[0].contains("120 min ago"),
        "{}",
        run.outcome.warnings[0]
    );
    assert!(
        run.outcome.record.is_none(),
        "a grace answer does not refresh the record"
    );
}

#[test]
fn a_grace_record_is_not_used_while_the_api_answers() {
    let record = cache::record_for(&key("ci"), T0 - 2 * 60 * MIN);
    let mut c = check(settings(), Some(&record), T0);
    let run = drive(&mut c, T0, |_, _| healthy(true));
    assert_eq!(run.outcome.source, Some(Source::Reviews));
    assert_eq!(run.sent.len(), 13);
    assert!(run.outcome.record.is_some(), "refreshed");
    let mut denied = check(settings(), Some(&record), T0);
    let run = drive(&mut denied, T0, |_, s| healthy(s.probe != 3));
    assert_eq!(
        run.outcome.verdict,
        Verdict::Denied,
        "a grace record never hides a denial"
    );
    assert!(run.outcome.delete_record);
}

#[test]
fn a_fatal_error_ends_the_check_without_retrying() {
    for facts in [
        status(404),
        ErrorFacts {
            status: Some(201),
            name: Some("SyntaxError".into()),
            message: "Unexpected end of JSON input".into(),
            ..Default::default()
        },
    ] {
        let mut c = check(settings(), None, T0);
        let f = facts.clone();
        let run = drive(&mut c, T0, move |_, s| {
            if s.probe == 2 {
                fail(f.clone())
            } else {
                healthy(true)
            }
        });
        assert_eq!(run.outcome.verdict, Verdict::Error, "{facts:?}");
        assert_eq!(per_probe(&run)[&2], 1, "not retried");
        assert_eq!(run.sent.len(), 13);
        assert!(
            run.outcome.message.contains("non-retryable"),
            "{}",
            run.outcome.message
        );
        assert!(run.outcome.record.is_none());
    }
}

#[test]
fn a_hung_request_is_abandoned_at_its_timeout_and_a_late_answer_is_ignored() {
    let mut c = check(settings(), None, T0);
    // Attempt 1 of every probe hangs; the machine gives up on it at 10 s.
    let mut first = None;
    for _ in 0..13 {
        match c.poll(T0) {
            Action::Send {
                timeout_ms,
                probe,
                attempt,
                ..
            } => {
                assert_eq!(timeout_ms, 10_000);
                first.get_or_insert((probe, attempt));
            }
            other => panic!("expected a send, got {other:?}"),
        }
    }
    let (probe, attempt) = first.unwrap();
    assert!(matches!(c.poll(T0), Action::Wait { until_ms } if until_ms == T0 + 10_000));
    // Nobody reported the timeout: the machine expires the attempt itself
    // and warns once.
    assert!(matches!(
        c.poll(T0 + 10_000),
        Action::Log {
            level: Level::Warning,
            ..
        }
    ));
    // The answer to the abandoned attempt arrives late: ignored.
    let late = c.on_result(
        probe,
        attempt,
        T0 + 10_050,
        ProbeResult::Reviewed {
            allowed: false,
            reason: None,
        },
    );
    assert_eq!(late, Ok(Accepted::Stale));
    // The retries succeed.
    let run = drive(&mut c, T0 + 10_050, |_, _| healthy(true));
    assert_eq!(run.outcome.verdict, Verdict::Allowed);
    assert!(run.sent.iter().all(|s| s.attempt == 2));
}

#[test]
fn hangs_reported_by_the_shim_are_retried() {
    let mut c = check(settings(), None, T0);
    let mut hung = 0;
    let run = drive(&mut c, T0, |_, s| {
        if s.attempt == 1 {
            hung += 1;
            Reply::Hang
        } else {
            healthy(true)
        }
    });
    assert_eq!(hung, 13);
    assert_eq!(run.outcome.verdict, Verdict::Allowed);
    assert!(run.done_at >= T0 + 10_000);
}

#[test]
fn retry_after_is_honoured() {
    let mut c = check(settings(), None, T0);
    let run = drive(&mut c, T0, |now, _| {
        if now == T0 {
            let mut f = status(429);
            f.retry_after = Some("5".into());
            fail(f)
        } else {
            healthy(true)
        }
    });
    assert_eq!(run.outcome.verdict, Verdict::Allowed);
    let retries: Vec<_> = run.sent.iter().filter(|s| s.attempt == 2).collect();
    assert_eq!(retries.len(), 13);
    // The 429 arrived at T0 + 5 ms; the retry waits the full 5 s after it.
    assert!(
        retries.iter().all(|s| s.at >= T0 + 5 + 5_000),
        "{:?}",
        retries.iter().map(|s| s.at - T0).collect::<Vec<_>>()
    );
}

#[test]
fn retry_after_beyond_the_deadline_gives_up_instead_of_waiting() {
    let mut s = settings();
    s.backoff.deadline = Duration::from_secs(20);
    let mut c = check(s, None, T0);
    let run = drive(&mut c, T0, |_, _| {
        let mut f = status(429);
        f.retry_after = Some("30".into());
        fail(f)
    });
    assert_eq!(run.outcome.verdict, Verdict::Inconclusive);
    assert!(
        run.done_at < T0 + 1_000,
        "did not sit out a wait it could not finish"
    );
}

#[test]
fn every_request_carries_its_own_fresh_review() {
    let mut c = check(settings(), None, T0);
    let run = drive(&mut c, T0, |now, _| {
        if now < T0 + 5_000 {
            fail(refused())
        } else {
            healthy(true)
        }
    });
    let expected = permission::flatten(&hooks_permissions()).unwrap();
    for s in &run.sent {
        let a = s.access();
        let p = &expected[s.probe];
        assert_eq!(
            (
                &a.verb,
                &a.group,
                &a.resource,
                &a.subresource,
                a.namespace.as_str()
            ),
            (&p.verb, &p.group, &p.resource, &p.subresource, "ci"),
            "probe {} attempt {} sent another probe's review",
            s.probe,
            s.attempt
        );
        assert!(
            matches!(&s.request, Request::AccessReview(r) if r.kind == "SelfSubjectAccessReview")
        );
    }
    assert!(run.sent.iter().any(|s| s.attempt >= 3));
}

#[test]
fn the_attempt_limit_bounds_requests() {
    let mut s = settings();
    s.backoff.max_attempts = 3;
    let mut c = check(s, None, T0);
    let run = drive(&mut c, T0, |_, _| fail(refused()));
    assert_eq!(run.outcome.verdict, Verdict::Inconclusive);
    assert!(per_probe(&run).values().all(|&n| n <= 3));
    assert!(run.sent.len() <= 13 * 3);
    // The attempt limit bounds the load, not the time: the last
    // attempt it allows is kept for the deadline's final window.
    let last = run.sent.iter().map(|s| s.at).max().unwrap();
    assert_eq!(last, T0 + 89_000);
}

#[test]
fn a_forged_record_is_refused_with_a_warning_and_the_api_is_asked() {
    let forger = Identity::from_credential(b"what-the-job-container-has").unwrap();
    let mut forged_key = key("ci");
    forged_key.identity.mac_key = forger.mac_key;
    // It copies our key id from a record it has seen (records show it);
    // with its own, the record would be "written with another key".
    let forged = cache::record_for(&forged_key, T0 - MIN).replace(
        &k8s_auth_preflight::runner_key::key_id(&forger.mac_key),
        &k8s_auth_preflight::runner_key::key_id(&key("ci").identity.mac_key),
    );
    let mut c = check(settings(), Some(&forged), T0);
    let run = drive(&mut c, T0, |_, _| healthy(true));
    assert_eq!(run.outcome.source, Some(Source::Reviews));
    assert_eq!(run.sent.len(), 13);
    assert!(
        run.outcome
            .warnings
            .iter()
            .any(|w| w.contains("edited or forged")),
        "{:?}",
        run.outcome.warnings
    );
}

#[test]
fn settings_warnings_and_a_missing_credential_surface_as_warn_actions() {
    let env = [
        ("ACTIONS_RUNNER_PREFLIGHT_DEADLINE_MS", "soon"),
        ("ACTIONS_RUNNER_PREFLIGHT_SEED", "3"),
        ("ACTIONS_RUNNER_PREFLIGHT_RULES_REVIEW", "off"),
    ];
    let mut c = Preflight::from_env(env, &hooks_permissions(), "ci", None, None, T0).unwrap();
    let run = drive(&mut c, T0, |_, _| healthy(true));
    assert_eq!(run.warnings.len(), 2, "{:?}", run.warnings);
    assert!(run.warnings[0].starts_with("ACTIONS_RUNNER_PREFLIGHT_DEADLINE_MS=\"soon\" ignored"));
    assert!(run.warnings[1].contains("will not be cached"));
    assert!(run.outcome.record.is_none(), "no credential, no record");
}

#[test]
fn bad_setup_is_a_named_error() {
    let err = Preflight::new(settings(), &[], "ci", None, None, T0).unwrap_err();
    assert_eq!(err.to_string(), "the required permission list is empty");
    let err = Preflight::new(
        settings(),
        &hooks_permissions(),
        "Not A Namespace",
        None,
        None,
        T0,
    )
    .unwrap_err();
    assert!(err.to_string().contains("invalid namespace"));
}

#[test]
fn bad_results_are_errors_not_panics() {
    let mut c = check(settings(), None, T0);
    let _ = c.poll(T0);
    assert_eq!(
        c.on_result(99, 1, T0, ProbeResult::Failed { facts: refused() }),
        Err(BadReport::UnknownProbe(99))
    );
    assert_eq!(
        c.on_result(0, 1, T0, ProbeResult::RulesBody { body: "{}".into() }),
        Err(BadReport::WrongResultKind(0))
    );
    assert_eq!(
        c.on_result(
            0,
            7,
            T0,
            ProbeResult::Reviewed {
                allowed: true,
                reason: None
            }
        ),
        Ok(Accepted::Stale),
        "a result for an attempt never sent is ignored"
    );
}

#[test]
fn time_running_backwards_does_not_confuse_the_machine() {
    let mut c = check(settings(), None, T0);
    let mut n = 0;
    let run = drive(&mut c, T0, |_, _| {
        n += 1;
        if n <= 13 {
            fail(refused())
        } else {
            healthy(true)
        }
    });
    assert_eq!(run.outcome.verdict, Verdict::Allowed);
    // Polling a finished check with an older time returns the same outcome.
    match c.poll(T0) {
        Action::Done { outcome } => assert_eq!(outcome, run.outcome),
        other => panic!("{other:?}"),
    }
}

#[test]
fn jitter_spreads_retries_and_none_does_not() {
    let retry_times = |jitter: Jitter, seed: u64| {
        let mut s = settings();
        s.backoff.jitter = jitter;
        s.seed = Some(seed);
        let mut c = check(s, None, T0);
        let run = drive(&mut c, T0, |now, _| {
            if now < T0 + 100 {
                fail(refused())
            } else {
                healthy(true)
            }
        });
        let mut at: Vec<u64> = run
            .sent
            .iter()
            .filter(|s| s.attempt == 2)
            .map(|s| s.at)
            .collect();
        at.sort();
        at.dedup();
        at
    };
    assert_eq!(
        retry_times(Jitter::None, 1).len(),
        1,
        "no jitter: all 13 retry in the same ms"
    );
    assert!(
        retry_times(Jitter::Full, 1).len() > 6,
        "full jitter spreads them"
    );
    assert_eq!(
        retry_times(Jitter::Full, 1),
        retry_times(Jitter::Full, 1),
        "same seed, same schedule"
    );
}

/// Issue 10, bug 3: `Retry-After: 0`, a negative value, a date in the past
/// or garbage is no hint. One check once sent 263 requests in 1.9 s and was
/// inconclusive right after announcing "retrying for up to 90 s".
#[test]
fn a_retry_after_of_zero_negative_past_or_garbage_never_makes_a_storm() {
    for value in [
        "0",
        "-1",
        "-86400",
        "0.0",
        "Wed, 21 Oct 2026 02:00:00 GMT",
        "Thu, 01 Jan 1970 00:00:00 GMT",
        "soon",
    ] {
        let mut c = check(settings(), None, T0);
        let run = drive(&mut c, T0, |_, _| {
            let mut f = status(429);
            f.retry_after = Some(value.into());
            fail(f)
        });
        assert_eq!(run.outcome.verdict, Verdict::Inconclusive, "{value}");
        let counts = per_probe(&run);
        assert!(
            counts.values().all(|&n| n <= 20),
            "{value}: at most 20 attempts per probe: {counts:?}"
        );
        // The schedule covers the deadline it announces: the last attempt
        // starts in the final second of the 90 s.
        let last = run.sent.iter().map(|s| s.at).max().unwrap();
        assert!(
            last >= T0 + 89_000,
            "{value}: the last attempt started {} ms after the first",
            last - T0
        );
        assert!(
            run.warnings[0].contains("retrying for up to 90 s"),
            "{value}"
        );
    }
}

/// A server's wait may lengthen the backoff, never shorten it below the
/// schedule's own delay.
#[test]
fn a_short_retry_after_never_shortens_the_backoff() {
    let mut s = settings();
    s.backoff.jitter = Jitter::None;
    let mut c = check(s, None, T0);
    let run = drive(&mut c, T0, |now, _| {
        if now < T0 + 20_000 {
            let mut f = status(429);
            f.retry_after = Some("0.2".into());
            fail(f)
        } else {
            healthy(true)
        }
    });
    assert_eq!(run.outcome.verdict, Verdict::Allowed);
    let probe0: Vec<u64> = run
        .sent
        .iter()
        .filter(|s| s.probe == 0)
        .map(|s| s.at - T0)
        .collect();
    // Failures arrive 5 ms after each request; waits are 1, 2, 4, 8, 8 s.
    assert_eq!(
        &probe0[..5],
        &[0, 1_005, 3_010, 7_015, 15_020],
        "{probe0:?}"
    );
}

/// With refused connections (each attempt fails at once), the attempt
/// limit never ends the check before the deadline it announced, whatever
/// the jitter drew.
#[test]
fn twenty_attempts_cover_the_announced_deadline_for_every_seed() {
    for seed in 0..40 {
        let mut s = settings();
        s.seed = Some(seed);
        let mut c = check(s, None, T0);
        let run = drive(&mut c, T0, |_, _| fail(refused()));
        assert_eq!(run.outcome.verdict, Verdict::Inconclusive);
        assert!(per_probe(&run).values().all(|&n| n <= 20));
        let last = run.sent.iter().map(|s| s.at).max().unwrap();
        assert!(
            last >= T0 + 89_000,
            "seed {seed}: the last attempt started at {} ms",
            last - T0
        );
    }
}

/// Issue 10: `allowed: false` with an `evaluationError` (an authorizer in
/// the chain failed) is asked again; when it persists it is a denial whose
/// message says what the API said.
#[test]
fn a_denial_with_an_evaluation_error_is_asked_again_then_quoted() {
    let mut c = check(settings(), None, T0);
    let run = drive(&mut c, T0, |_, s| {
        if s.probe == 4 {
            body(
                r#"{"status":{"allowed":false,"evaluationError":"webhook \"authz\" failed: connection refused"}}"#,
            )
        } else {
            body(r#"{"status":{"allowed":true}}"#)
        }
    });
    assert_eq!(run.outcome.verdict, Verdict::Denied);
    assert_eq!(per_probe(&run)[&4], 3, "asked three times");
    assert_eq!(run.outcome.missing.len(), 1);
    assert!(
        run.outcome.message.contains("evaluation error")
            && run
                .outcome
                .message
                .contains("webhook \\\"authz\\\" failed: connection refused"),
        "{}",
        run.outcome.message
    );
    assert!(run.outcome.delete_record);
    assert!(
        run.warnings
            .iter()
            .any(|w| w.contains("An authorizer failed")),
        "{:?}",
        run.warnings
    );
}

#[test]
fn an_evaluation_error_that_clears_is_allowed_and_an_outright_denial_is_not_retried() {
    let mut c = check(settings(), None, T0);
    let run = drive(&mut c, T0, |_, s| {
        if s.probe == 2 && s.attempt == 1 {
            body(r#"{"status":{"allowed":false,"evaluationError":"webhook timeout"}}"#)
        } else {
            body(r#"{"status":{"allowed":true}}"#)
        }
    });
    assert_eq!(run.outcome.verdict, Verdict::Allowed);
    assert_eq!(run.outcome.requests, 14);

    let mut c = check(settings(), None, T0);
    let run = drive(&mut c, T0, |_, s| {
        if s.probe == 2 {
            body(r#"{"status":{"allowed":false,"denied":true,"evaluationError":"partial"}}"#)
        } else {
            body(r#"{"status":{"allowed":true}}"#)
        }
    });
    assert_eq!(run.outcome.verdict, Verdict::Denied);
    assert_eq!(per_probe(&run)[&2], 1, "an outright denial is final");
}

/// An access review's body without a boolean `status.allowed` is a
/// malformed answer (an error, never a verdict of either kind).
#[test]
fn a_malformed_access_review_body_is_an_error_not_a_verdict() {
    for text in [
        r#"{"status":{}}"#,
        r#"{"status":{"allowed":"true"}}"#,
        r#"{"kind":"Status"}"#,
        "<html>",
    ] {
        let mut c = check(settings(), None, T0);
        let run = drive(&mut c, T0, |_, s| {
            if s.probe == 0 {
                body(text)
            } else {
                body(r#"{"status":{"allowed":true}}"#)
            }
        });
        assert_eq!(run.outcome.verdict, Verdict::Error, "{text}");
        assert!(
            run.outcome.message.contains("malformed"),
            "{}",
            run.outcome.message
        );
    }
}

/// Issue 12: `ON_INCONCLUSIVE=proceed` lets an inconclusive check pass with
/// a warning that says so; the default fails; a denial never passes.
#[test]
fn proceeding_on_an_inconclusive_check_is_opt_in_and_never_covers_a_denial() {
    let env = |value: &'static str| [("ACTIONS_RUNNER_PREFLIGHT_ON_INCONCLUSIVE", value)];
    let from = |value| {
        let mut s = settings();
        let (parsed, errors) = Settings::from_env(env(value));
        assert!(errors.is_empty());
        s.on_inconclusive = parsed.on_inconclusive;
        s.backoff.deadline = Duration::from_secs(5);
        Preflight::new(s, &hooks_permissions(), "ci", None, None, T0).unwrap()
    };
    let down = |_: u64, _: &Sent| fail(refused());
    let run = drive(&mut from("proceed"), T0, down);
    assert_eq!(run.outcome.verdict, Verdict::Inconclusive);
    assert!(run.outcome.proceed);
    assert!(run.outcome.record.is_none(), "nothing is cached");
    let warning = run.outcome.warnings.last().unwrap();
    assert!(
        warning.contains("proceeding because ACTIONS_RUNNER_PREFLIGHT_ON_INCONCLUSIVE=proceed")
            && warning
                .contains("The API will still refuse anything the service account may not do"),
        "{warning}"
    );
    let run = drive(&mut from("fail"), T0, down);
    assert_eq!(run.outcome.verdict, Verdict::Inconclusive);
    assert!(!run.outcome.proceed);
    let run = drive(&mut from("proceed"), T0, |_, _| healthy(false));
    assert_eq!(run.outcome.verdict, Verdict::Denied);
    assert!(!run.outcome.proceed);
    let (s, errors) = Settings::from_env(env("maybe"));
    assert_eq!(
        s.on_inconclusive,
        k8s_auth_preflight::config::OnInconclusive::Fail
    );
    assert_eq!(errors.len(), 1);
}

/// Issue 12: a debug trail. One line per attempt (which request, its
/// number, what came back, the class, the wait chosen, the time left) and
/// one summary per check (source, requests, time taken).
#[test]
fn the_debug_trail_has_a_line_per_attempt_and_a_summary() {
    let mut c = check(settings(), None, T0);
    let run = drive(&mut c, T0, |now, s| {
        if now == T0 && s.probe == 3 {
            let mut f = status(429);
            f.retry_after = Some("2".into());
            fail(f)
        } else {
            healthy(true)
        }
    });
    assert_eq!(run.outcome.verdict, Verdict::Allowed);
    assert_eq!(run.debug.len(), run.sent.len() + 1, "{:#?}", run.debug);
    let throttled = run
        .debug
        .iter()
        .find(|l| l.contains("request 1: failed"))
        .expect("the failure has a line");
    assert!(
        throttled.contains("access review of")
            && throttled.contains("throttled, HTTP 429")
            && throttled.contains("next attempt in 2.")
            && throttled.contains("s of the deadline left"),
        "{throttled}"
    );
    assert!(run
        .debug
        .iter()
        .any(|l| l.contains("request 2: answered: allowed; done")));
    let summary = run.debug.last().unwrap();
    assert!(
        summary.contains("check finished: allowed from the reviews; 14 requests;"),
        "{summary}"
    );
    // A cached verdict: the summary alone.
    let record = run.outcome.record.unwrap();
    let mut cached = check(settings(), Some(&record), T0 + 1_000);
    let run = drive(&mut cached, T0 + 1_000, |_, _| panic!("no request"));
    assert_eq!(run.debug.len(), 1);
    assert!(
        run.debug[0].contains("check finished: allowed from the cache; 0 requests"),
        "{:?}",
        run.debug
    );
}

/// The retry warning announces the deadline in whole seconds rounded up: a
/// budget of 1,999 ms (what is left after a turn at the lock) is "2 s".
#[test]
fn the_retry_warning_rounds_the_deadline_up() {
    let mut s = settings();
    s.backoff.deadline = Duration::from_millis(1_999);
    let mut c = check(s, None, T0);
    let run = drive(&mut c, T0, |_, _| fail(refused()));
    assert!(
        run.warnings[0].contains("retrying for up to 2 s"),
        "{}",
        run.warnings[0]
    );
}

//! The two things the state machine offers the single-flight turn taking:
//! telling whether a record already answers the check, and running a check
//! with the shorter budget a process has left after waiting its turn.

mod common;

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

use std::time::Duration;

use common::*;
use k8s_auth_preflight::{Identity, Preflight, Settings, Source, Verdict};

const TOKEN: &str = "single-flight-test-token";

fn settings() -> Settings {
    let mut s = Settings::new();
    s.seed = Some(11);
    s.rules_review = false;
    s
}

fn check(settings: Settings, cached: Option<&[u8]>, now: u64) -> Preflight {
    Preflight::new(
        settings,
        &hooks_permissions(),
        "ci",
        Identity::from_credential(TOKEN.as_bytes()),
        cached,
        now,
    )
    .unwrap()
}

#[test]
fn a_fresh_record_decides_the_check_before_any_poll() {
    let mut first = check(settings(), None, T0);
    assert!(!first.is_decided(), "no record: the API must be asked");
    let run = drive(&mut first, T0, |_, _| healthy(true));
    assert_eq!(run.outcome.verdict, Verdict::Allowed);
    let record = run.outcome.record.expect("an allowed verdict is recorded");

    let later = check(settings(), Some(record.as_bytes()), run.done_at + 1_000);
    assert!(later.is_decided(), "a fresh record answers the check");

    // Past the TTL (within grace) the record does not decide it: only an
    // unreachable API may fall back on it.
    let stale = check(
        settings(),
        Some(record.as_bytes()),
        run.done_at + 2 * 3_600_000,
    );
    assert!(!stale.is_decided());
}

#[test]
fn a_limited_budget_ends_the_check_sooner_and_says_so() {
    let mut full = check(settings(), None, T0);
    let run = drive(&mut full, T0, |_, _| fail(refused()));
    assert_eq!(run.outcome.verdict, Verdict::Inconclusive);
    let full_time = run.done_at - T0;
    assert!(full_time > 60_000, "full budget retried for {full_time} ms");

    let mut limited = check(settings(), None, T0);
    limited.limit_budget(Duration::from_millis(9_000));
    let run = drive(&mut limited, T0, |_, _| fail(refused()));
    assert_eq!(run.outcome.verdict, Verdict::Inconclusive);
    let took = run.done_at - T0;
    assert!((8_000..=9_000).contains(&took), "9 s budget took {took} ms");
    assert!(run.sent.iter().all(|s| s.at < T0 + 9_000));
    // Its last attempt still comes near the end of the budget, not early.
    let last = run.sent.iter().map(|s| s.at).max().unwrap();
    assert!(last >= T0 + 7_000, "last attempt at +{} ms", last - T0);
    assert!(
        run.warnings.iter().any(|w| w.contains("up to 9 s")),
        "{:?}",
        run.warnings
    );
}

#[test]
fn a_longer_budget_or_a_late_call_changes_nothing() {
    let mut longer = check(settings(), None, T0);
    longer.limit_budget(Duration::from_secs(3_600));
    let run = drive(&mut longer, T0, |_, _| fail(refused()));
    let baseline = {
        let mut plain = check(settings(), None, T0);
        drive(&mut plain, T0, |_, _| fail(refused()))
    };
    assert_eq!(run.done_at, baseline.done_at);
    assert_eq!(run.sent.len(), baseline.sent.len());

    // Once requests are out, the budget is the one the check started with.
    let mut started = check(settings(), None, T0);
    let _ = started.poll(T0);
    started.limit_budget(Duration::from_millis(100));
    let run = drive(&mut started, T0, |now, _| {
        if now < T0 + 5_000 {
            fail(refused())
        } else {
            healthy(true)
        }
    });
    assert_eq!(run.outcome.verdict, Verdict::Allowed);
    assert_eq!(run.outcome.source, Some(Source::Reviews));
}

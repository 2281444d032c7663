//! The retry quota (`ACTIONS_RUNNER_PREFLIGHT_RETRY_QUOTA`,
//! src/retry_quota.rs), driven with a simulated clock and apiserver. Each
//! test pins one rule.

mod common;

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

use std::time::Duration;

use common::*;
use k8s_auth_preflight::cache::{self, CacheKey};
use k8s_auth_preflight::preflight::retry_quota::SUGGESTED_TOKENS;
use k8s_auth_preflight::{permission, Identity, Preflight, Settings, Source, Verdict};

const TOKEN: &[u8] = b"quota-token";

fn settings(quota: Option<u32>, rules_review: bool) -> Settings {
    let mut s = Settings::new();
    s.seed = Some(5);
    s.rules_review = rules_review;
    s.retry_quota = quota;
    s
}

fn check(settings: Settings, cached: Option<&str>) -> Preflight {
    Preflight::new(
        settings,
        &hooks_permissions(),
        "ci",
        Some(Identity::from_credential(TOKEN).unwrap()),
        cached.map(str::as_bytes),
        T0,
    )
    .unwrap()
}

/// The server's answer to a rules review: everything granted.
fn granted() -> Reply {
    Reply::Rules {
        status: grant_all(),
        latency: 10,
    }
}

#[test]
fn an_empty_bucket_stops_retries_and_the_check_is_inconclusive_not_denied() {
    // One probe (the rules review), refused forever. 12 tokens pay for two
    // retries at 5; the third retry cannot be paid for.
    let mut c = check(settings(Some(12), true), None);
    let run = drive(&mut c, T0, |_, _| fail(refused()));
    assert_eq!(run.sent.len(), 3, "the first request and two retries");
    assert_eq!(run.outcome.verdict, Verdict::Inconclusive);
    assert!(run.outcome.missing.is_empty());
    assert!(run.outcome.record.is_none());
    assert!(!run.outcome.delete_record, "not a denial: the record stays");
    let m = &run.outcome.message;
    assert!(
        m.contains(
            "retries stopped before the deadline: this check's retry quota of 12 tokens was spent"
        ),
        "{m}"
    );
    assert!(m.contains("This is NOT a permissions denial"), "{m}");
    assert!(m.contains("3 requests"), "{m}");
    assert!(
        run.done_at < T0 + 10_000,
        "ended by the quota, long before the 90 s deadline ({} ms)",
        run.done_at - T0
    );
    assert_eq!(c.retry_quota().unwrap().tokens(), 2);

    // Without a quota the same server is retried until the deadline.
    let mut c = check(settings(None, true), None);
    let run = drive(&mut c, T0, |_, _| fail(refused()));
    assert!(run.sent.len() > 10);
    assert!(!run.outcome.message.contains("quota"));
}

#[test]
fn an_empty_bucket_still_serves_a_grace_record() {
    let perms = permission::flatten(&hooks_permissions()).unwrap();
    let key = CacheKey {
        namespace: "ci".into(),
        identity: Identity::from_credential(TOKEN).unwrap(),
        permissions: permission::fingerprint(&perms),
    };
    let record = cache::record_for(&key, T0 - 2 * 3_600_000);
    let mut c = check(settings(Some(5), true), Some(&record));
    let run = drive(&mut c, T0, |_, _| fail(refused()));
    assert_eq!(run.sent.len(), 2);
    assert_eq!(run.outcome.verdict, Verdict::Allowed);
    assert_eq!(run.outcome.source, Some(Source::GraceCache));
}

#[test]
fn a_retry_after_a_timeout_costs_ten() {
    // 15 tokens: one retry after a timeout (10), then 5 left: not enough.
    let mut c = check(settings(Some(15), true), None);
    let run = drive(&mut c, T0, |_, _| Reply::Hang);
    assert_eq!(run.sent.len(), 2);
    assert_eq!(run.outcome.verdict, Verdict::Inconclusive);
    assert_eq!(c.retry_quota().unwrap().tokens(), 5);
    // The same 15 tokens pay for three retries after refusals.
    let mut c = check(settings(Some(15), true), None);
    let run = drive(&mut c, T0, |_, _| fail(refused()));
    assert_eq!(run.sent.len(), 4);
}

#[test]
fn a_denial_still_wins_with_an_empty_bucket() {
    // 13 reviews, 5 tokens: the first refusal takes them all, the second
    // cannot be paid for and ends the check; the denial already on its way
    // still decides it.
    let mut c = check(settings(Some(5), false), None);
    let run = drive(&mut c, T0, |_, s| {
        let a = s.access();
        match (a.verb.as_str(), a.resource.as_str(), a.subresource.as_str()) {
            ("get", "pods", "") => Reply::Review {
                allowed: false,
                latency: 300,
            },
            ("list", "pods", "") | ("create", "pods", "") => fail(refused()),
            _ => healthy(true),
        }
    });
    assert_eq!(run.outcome.verdict, Verdict::Denied);
    assert_eq!(run.outcome.missing.len(), 1);
    assert_eq!(run.outcome.missing[0].to_string(), "get pods");
}

#[test]
fn answers_refund_one_token_or_what_their_retry_took() {
    // 13 reviews, 6 tokens. get pods is refused at 5 ms (its retry takes 5:
    // 1 left). The 11 others are answered at 10 ms (+1 each: full again, 6).
    // list pods is refused at 50 ms and can pay for its retry only thanks
    // to those refunds.
    let mut c = check(settings(Some(6), false), None);
    let run = drive(&mut c, T0, |_, s| {
        let a = s.access();
        match (
            a.verb.as_str(),
            a.resource.as_str(),
            a.subresource.as_str(),
            s.attempt,
        ) {
            ("get", "pods", "", 1) => fail(refused()),
            ("list", "pods", "", 1) => Reply::Fail {
                facts: refused(),
                latency: 50,
            },
            _ => healthy(true),
        }
    });
    assert_eq!(
        run.outcome.verdict,
        Verdict::Allowed,
        "{}",
        run.outcome.message
    );
    assert_eq!(run.sent.len(), 15);
    // After list pods' retry took 5 (1 left), both retries were answered
    // and each gave back the 5 it took (not just 1): full again.
    assert_eq!(c.retry_quota().unwrap().tokens(), 6);
}

#[test]
fn the_suggested_bucket_never_cuts_the_fast_path_short_but_bounds_thirteen_reviews() {
    // A 60 s refused stall, then healthy.
    let stalled = |now: u64| now < T0 + 60_000;
    // Fast path: one rules review retried through the stall.
    let mut c = check(settings(Some(SUGGESTED_TOKENS), true), None);
    let run = drive(&mut c, T0, |now, _| {
        if stalled(now) {
            fail(refused())
        } else {
            granted()
        }
    });
    assert_eq!(run.outcome.verdict, Verdict::Allowed);
    // Thirteen access reviews share the same bucket: 20 retries paid for in
    // all, and the check gives up at the first one it cannot pay for (some
    // paid ones were not due yet and are never sent).
    let mut c = check(settings(Some(SUGGESTED_TOKENS), false), None);
    let run = drive(&mut c, T0, |now, _| {
        if stalled(now) {
            fail(refused())
        } else {
            healthy(true)
        }
    });
    assert_eq!(run.outcome.verdict, Verdict::Inconclusive);
    assert!(
        (13 + 1..=13 + 20).contains(&run.sent.len()),
        "{}",
        run.sent.len()
    );
    assert!(run.done_at < T0 + 5_000);
    assert!(run.outcome.message.contains("retry quota of 100 tokens"));
}

#[test]
fn a_hedge_is_paid_for_from_the_bucket_or_not_sent() {
    let mut s = settings(Some(4), true);
    s.hedge_after = Some(Duration::from_millis(100));
    let mut c = check(s.clone(), None);
    let run = drive(&mut c, T0, |_, s| {
        if s.attempt == 1 {
            Reply::Hang
        } else {
            granted()
        }
    });
    assert_eq!(c.hedges(), 0, "4 tokens do not pay for a hedge");
    assert_eq!(
        run.outcome.verdict,
        Verdict::Inconclusive,
        "nor for the retry"
    );

    s.retry_quota = Some(5);
    let mut c = check(s, None);
    let run = drive(&mut c, T0, |_, s| {
        if s.attempt == 1 {
            Reply::Hang
        } else {
            granted()
        }
    });
    assert_eq!(c.hedges(), 1);
    assert_eq!(run.outcome.verdict, Verdict::Allowed);
    assert_eq!(run.done_at, T0 + 110);
    assert_eq!(
        c.retry_quota().unwrap().tokens(),
        5,
        "the answered hedge gave back its 5"
    );
}

#[test]
fn the_quota_setting_is_read_from_the_environment() {
    let env = [("ACTIONS_RUNNER_PREFLIGHT_RETRY_QUOTA", "40")];
    let c = Preflight::from_env(env, &hooks_permissions(), "ci", Some(TOKEN), None, T0).unwrap();
    assert_eq!(
        c.retry_quota().map(|q| (q.capacity(), q.tokens())),
        Some((40, 40))
    );
    let c = Preflight::from_env(
        [] as [(&str, &str); 0],
        &hooks_permissions(),
        "ci",
        Some(TOKEN),
        None,
        T0,
    )
    .unwrap();
    assert!(c.retry_quota().is_none(), "off by default");
}

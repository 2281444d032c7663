//! Properties of the state machine under generated interleavings: whatever
//! the server answers, in whatever order and with whatever delays,
//! - a definitive denial the machine accepted always decides the outcome;
//! - the check finishes by its deadline, and no request starts or runs past it;
//! - no probe is sent more often than the attempt limit, plus at most one
//!   hedge per attempt: requests never exceed probes x attempt limit + hedges;
//! - a hedge goes only after its request has been out for the hedge delay,
//!   never more than two requests of a probe are out, none without hedging;
//! - `allowed` from reviews means every permission was allowed or proven;
//! - the retry quota only ever ends a check as inconclusive (or with a
//!   grace record), never as a denial the server did not give.

#![cfg(not(target_arch = "wasm32"))]

mod common;

use std::collections::HashSet;
use std::time::Duration;

use common::*;
use k8s_auth_preflight::preflight::Request;
use k8s_auth_preflight::rules::{self, ResourceRule, RulesStatus};
use k8s_auth_preflight::{
    permission, Identity, Jitter, Preflight, ProbeResult, Settings, Source, Verdict,
};
use proptest::prelude::*;

/// One scripted answer; the server hands them out in order, then repeats
/// the last.
#[derive(Debug, Clone)]
enum Answer {
    Allowed(u64),
    Denied(u64),
    Refused,
    Status(u16, u64),
    Throttled(u64),
    Hang,
    Rules { complete: bool, grant_all: bool },
}

fn answers() -> impl Strategy<Value = Vec<Answer>> {
    let one = prop_oneof![
        4 => (1u64..3000).prop_map(Answer::Allowed),
        1 => (1u64..3000).prop_map(Answer::Denied),
        3 => Just(Answer::Refused),
        2 => (prop_oneof![Just(403u16), Just(500), Just(503), Just(401), Just(404)], 1u64..500).prop_map(|(s, l)| Answer::Status(s, l)),
        1 => (0u64..5).prop_map(Answer::Throttled),
        1 => Just(Answer::Hang),
        1 => (any::<bool>(), any::<bool>()).prop_map(|(complete, grant_all)| Answer::Rules { complete, grant_all }),
    ];
    prop::collection::vec(one, 1..80)
}

fn settings() -> impl Strategy<Value = Settings> {
    (
        (
            any::<u64>(),
            any::<bool>(),
            1u32..8,
            1_000u64..60_000,
            100u64..5_000,
            0usize..4,
        ),
        prop::option::of(1u64..3_000),
        prop::option::of(0u32..120),
    )
        .prop_map(
            |((seed, rules_review, attempts, deadline, timeout, jitter), hedge, quota)| {
                let mut s = Settings::new();
                s.seed = Some(seed);
                s.rules_review = rules_review;
                s.backoff.max_attempts = attempts;
                s.backoff.deadline = Duration::from_millis(deadline);
                s.backoff.base = Duration::from_millis(50);
                s.backoff.max_delay = Duration::from_millis(2_000);
                s.backoff.jitter = Jitter::ALL[jitter];
                s.request_timeout = Duration::from_millis(timeout);
                s.hedge_after = hedge.map(Duration::from_millis);
                s.retry_quota = quota;
                s
            },
        )
}

fn full_rules(complete: bool, grant_all: bool) -> RulesStatus {
    let resources: &[&str] = if grant_all { &["*"] } else { &["pods"] };
    RulesStatus {
        resource_rules: vec![ResourceRule {
            verbs: vec!["*".into()],
            api_groups: vec![String::new()],
            resources: resources.iter().map(|r| r.to_string()).collect(),
            resource_names: vec![],
        }],
        incomplete: !complete,
        evaluation_error: None,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn any_interleaving_keeps_the_outcome_honest(settings in settings(), script in answers(), cached in 0u8..3) {
        let deadline = settings.backoff.deadline.as_millis() as u64;
        let max_attempts = settings.backoff.max_attempts;
        let hedge_after = settings.hedge_after.map(|d| d.as_millis() as u64);
        let quota = settings.retry_quota;
        let identity = Identity::from_credential(b"property-token").unwrap();
        let permissions = permission::flatten(&hooks_permissions()).unwrap();
        let key = k8s_auth_preflight::CacheKey {
            namespace: "ci".into(),
            identity: identity.clone(),
            permissions: permission::fingerprint(&permissions),
        };
        // 0: none, 1: grace-aged record, 2: garbage
        let record = match cached {
            1 => Some(k8s_auth_preflight::cache::record_for(&key, T0 - 2 * 3_600_000).into_bytes()),
            2 => Some(b"{not a record".to_vec()),
            _ => None,
        };
        let mut check = Preflight::new(settings, &hooks_permissions(), "ci", Some(identity), record.as_deref(), T0).unwrap();
        let mut next = 0usize;
        let run = drive(&mut check, T0, |_, sent| {
            let answer = script[next.min(script.len() - 1)].clone();
            next += 1;
            match (answer, &sent.request) {
                (Answer::Rules { complete, grant_all }, Request::RulesReview(_)) => {
                    Reply::Rules { status: full_rules(complete, grant_all), latency: 10 }
                }
                (Answer::Rules { .. }, _) => healthy(true),
                (Answer::Allowed(l), Request::RulesReview(_)) => Reply::Rules { status: full_rules(true, l % 2 == 0), latency: l },
                (Answer::Allowed(l), _) => Reply::Review { allowed: true, latency: l },
                (Answer::Denied(l), Request::RulesReview(_)) => Reply::Rules { status: RulesStatus::default(), latency: l },
                (Answer::Denied(l), _) => Reply::Review { allowed: false, latency: l },
                (Answer::Refused, _) => fail(refused()),
                (Answer::Status(code, l), _) => Reply::Fail { facts: status(code), latency: l },
                (Answer::Throttled(s), _) => {
                    let mut f = status(429);
                    f.retry_after = Some(s.to_string());
                    fail(f)
                }
                (Answer::Hang, _) => Reply::Hang,
            }
        });
        let o = &run.outcome;

        // Finishes by its deadline.
        prop_assert!(run.done_at <= T0 + deadline, "done at +{} ms, deadline {deadline}", run.done_at - T0);
        for s in &run.sent {
            prop_assert!(s.at < T0 + deadline && s.at + s.timeout_ms <= T0 + deadline, "a request past the deadline");
        }
        // Never more attempts than allowed, per probe, plus one hedge per
        // attempt; in all, probes x attempts + hedges.
        let hedges = check.hedges() as usize;
        let mut per_probe = std::collections::HashMap::new();
        let mut seen_hedges = 0usize;
        for s in &run.sent {
            let entry = per_probe.entry(s.probe).or_insert((0u32, 0u32));
            if s.alongside.is_some() { entry.1 += 1; seen_hedges += 1; } else { entry.0 += 1; }
        }
        prop_assert!(run.sent.len() <= check.probe_count() * max_attempts as usize + hedges, "{} requests, {hedges} hedges", run.sent.len());
        prop_assert!(seen_hedges <= hedges, "{seen_hedges} requests went alongside another, the machine counted {hedges} hedges");
        prop_assert!(per_probe.values().all(|&(n, h)| n + h <= 2 * max_attempts && n <= max_attempts), "{per_probe:?} > {max_attempts}");
        prop_assert!(run.sent.iter().all(|s| s.out <= 2), "more than two requests of a probe out at once");
        match hedge_after {
            None => {
                prop_assert_eq!(hedges, 0);
                prop_assert!(run.sent.iter().all(|s| s.out == 1), "a second request out without hedging");
            }
            Some(after) => {
                for s in &run.sent {
                    if let Some(other) = s.alongside {
                        prop_assert!(s.at >= other + after, "hedge at +{} for a request of +{}, delay {after}", s.at - T0, other - T0);
                    }
                }
            }
        }
        // The quota says so when it ends a check, and only ends it as
        // inconclusive (a grace record may still answer, a denial already
        // given still wins).
        if o.message.contains("retry quota") {
            prop_assert!(quota.is_some());
            prop_assert!(o.verdict == Verdict::Inconclusive, "{:?}", o.verdict);
        }

        // A denial the machine accepted always wins.
        let denied: HashSet<usize> = run
            .applied
            .iter()
            .filter(|(_, r)| matches!(r, ProbeResult::Reviewed { allowed: false, .. }))
            .map(|(p, _)| *p)
            .collect();
        if !denied.is_empty() {
            prop_assert_eq!(o.verdict, Verdict::Denied);
            prop_assert_eq!(o.missing.len(), denied.len());
        }
        if o.verdict == Verdict::Denied {
            prop_assert!(!denied.is_empty(), "denied without an accepted denial");
        }

        // Allowed from reviews: every permission allowed or proven.
        if o.verdict == Verdict::Allowed && o.source == Some(Source::Reviews) {
            let allowed: HashSet<usize> = run
                .applied
                .iter()
                .filter(|(_, r)| matches!(r, ProbeResult::Reviewed { allowed: true, .. }))
                .map(|(p, _)| *p)
                .collect();
            let mut proven = HashSet::new();
            for (_, r) in &run.applied {
                if let ProbeResult::RulesReviewed { status } = r {
                    for (i, yes) in rules::proven(status, &permissions).into_iter().enumerate() {
                        if yes { proven.insert(i); }
                    }
                }
            }
            for (i, p) in permissions.iter().enumerate() {
                prop_assert!(allowed.contains(&i) || proven.contains(&i), "{} neither allowed nor proven", p);
            }
        }
        // A stale record answers only when nothing definitive came back.
        if o.source == Some(Source::GraceCache) {
            prop_assert_eq!(cached, 1);
            prop_assert!(denied.is_empty());
        }
        prop_assert!(o.source != Some(Source::Cache), "no fresh record was given");
        if o.verdict != Verdict::Allowed {
            prop_assert!(o.record.is_none());
        }
    }
}

//! The state machine under arbitrary interleavings of results and time:
//! never a panic, it finishes by its deadline, it never sends more than
//! probes x attempts, and it never says `allowed` without a verified record
//! or an allowed review (or a rules proof) for every permission; a denial
//! names only permissions the API denied.
#![no_main]

mod input;

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use input::Input;
use k8s_auth_preflight::cache::{self, CacheKey};
use k8s_auth_preflight::preflight::{Accepted, Action, Request};
use k8s_auth_preflight::rules::{self, ResourceRule, RulesStatus};
use k8s_auth_preflight::{permission, ErrorFacts, Identity, PermissionSpec, Preflight, ProbeResult, Settings, Source, Verdict};
use libfuzzer_sys::fuzz_target;

const T0: u64 = 1_792_548_926_000;

fn table() -> Vec<PermissionSpec> {
    let row = |resource: &str, sub: &str, verbs: &[&str]| PermissionSpec {
        resource: resource.into(),
        subresource: sub.into(),
        verbs: verbs.iter().map(|v| v.to_string()).collect(),
        ..PermissionSpec::default()
    };
    vec![row("pods", "", &["get", "create"]), row("pods", "exec", &["create"]), row("secrets", "", &["get"])]
}

fn status(input: &mut Input) -> RulesStatus {
    RulesStatus {
        resource_rules: (0..input.u8() % 3)
            .map(|_| ResourceRule {
                verbs: input.strings(&["get", "create", "*"], 2),
                api_groups: vec![String::new()],
                resources: input.strings(&["pods", "pods/exec", "*/exec", "*", "secrets"], 2),
                resource_names: input.strings(&["one"], 1),
            })
            .collect(),
        incomplete: input.bool(),
        evaluation_error: None,
    }
}

fn facts(input: &mut Input) -> ErrorFacts {
    ErrorFacts {
        codes: input.strings(&["ECONNREFUSED", "UND_ERR_SOCKET", "EWHAT", "ERR_STREAM_PREMATURE_CLOSE"], 2),
        status: if input.bool() { Some([403, 404, 429, 500, 503, 201, 401, 200][usize::from(input.u8()) % 8]) } else { None },
        retry_after: if input.bool() { Some(input.string(&["1", "40", "-1", "x"])) } else { None },
        timed_out: input.bool(),
        name: if input.bool() { Some("SyntaxError".into()) } else { None },
        message: input.string(&["fetch failed", "socket hang up", "odd", "terminated", "Premature close", "Bearer <redacted> is not a legal HTTP header value"]),
        credential_source: if input.bool() { Some("the token file /t".into()) } else { None },
        body: None,
    }
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input::new(data);
    let mut settings = Settings::new();
    settings.seed = Some(input.u64());
    settings.rules_review = input.bool();
    settings.backoff.max_attempts = 1 + u32::from(input.u8() % 6);
    settings.backoff.deadline = Duration::from_millis(1_000 + u64::from(input.u16()) * 4);
    settings.request_timeout = Duration::from_millis(100 + u64::from(input.u16()));
    // The two opt-in variants: a hedge after 1-2000 ms, a quota of 0-510 tokens.
    if input.bool() {
        settings.hedge_after = Some(Duration::from_millis(1 + u64::from(input.u16() % 2000)));
    }
    if input.bool() {
        settings.retry_quota = Some(u32::from(input.u8()) * 2);
    }
    // A hedge is a request, not an attempt: at most one per attempt.
    let max_sends = settings.backoff.max_attempts * if settings.hedge_after.is_some() { 2 } else { 1 };
    let max_attempts = settings.backoff.max_attempts;
    let deadline_ms = settings.backoff.deadline.as_millis() as u64;

    let permissions = permission::flatten(&table()).expect("table");
    let identity = Identity::from_credential(b"fuzz-token").expect("identity");
    let key = CacheKey {
        namespace: "ci".into(),
        identity: identity.clone(),
        permissions: permission::fingerprint(&permissions),
    };
    // 0: none, 1: fresh, 2: grace, 3: expired, 4: garbage
    let record_kind = input.u8() % 5;
    let cached = match record_kind {
        1 => Some(cache::record_for(&key, T0 - 60_000).into_bytes()),
        2 => Some(cache::record_for(&key, T0 - 2 * 3_600_000).into_bytes()),
        3 => Some(cache::record_for(&key, T0 - 48 * 3_600_000).into_bytes()),
        4 => Some(input.string(&[]).into_bytes()),
        _ => None,
    };
    let mut check = Preflight::new(settings, &table(), "ci", Some(identity), cached.as_deref(), T0).expect("setup");

    let mut now = T0;
    let mut in_flight: Vec<(usize, u32, Request)> = Vec::new();
    let mut sends: HashMap<usize, u32> = HashMap::new();
    let mut allowed: HashSet<usize> = HashSet::new();
    let mut denied: HashSet<usize> = HashSet::new();
    let mut proofs: HashSet<usize> = HashSet::new();
    for _step in 0..20_000 {
        let until = match check.poll(now) {
            Action::Send { probe, attempt, request, timeout_ms } => {
                assert!(now < T0 + deadline_ms, "a request sent at or after the deadline");
                assert!(timeout_ms > 0 && now + timeout_ms <= T0 + deadline_ms, "a request outlives the deadline");
                *sends.entry(probe).or_insert(0) += 1;
                assert!(sends[&probe] <= max_sends, "probe {probe} sent more than {max_sends} times ({max_attempts} attempts)");
                in_flight.push((probe, attempt, request));
                continue;
            }
            Action::Log { .. } => continue,
            Action::Wait { until_ms } => {
                // The machine never sleeps past its deadline; a caller that
                // polls late (the fuzzer jumps time) gets `done` at once.
                assert!(until_ms <= T0 + deadline_ms, "wake-up after the deadline");
                assert!(now < T0 + deadline_ms, "still waiting at the deadline");
                until_ms
            }
            Action::Done { outcome } => {
                assert!(outcome.elapsed_ms <= now - T0);
                match (outcome.verdict, outcome.source) {
                    (Verdict::Allowed, Some(Source::Cache)) => assert_eq!(record_kind, 1),
                    (Verdict::Allowed, Some(Source::GraceCache)) => assert_eq!(record_kind, 2),
                    (Verdict::Allowed, Some(Source::Reviews)) => {
                        for probe in 0..permissions.len() {
                            assert!(
                                allowed.contains(&probe) || proofs.contains(&probe),
                                "allowed without an allowed review or proof for {}",
                                permissions[probe]
                            );
                        }
                    }
                    (Verdict::Allowed, None) => panic!("allowed without a source"),
                    (Verdict::Denied, _) => {
                        assert!(!outcome.missing.is_empty());
                        for p in &outcome.missing {
                            let probe = permissions.iter().position(|q| q == p).expect("a known permission");
                            assert!(denied.contains(&probe), "named {p} missing without a denial");
                        }
                        assert!(outcome.record.is_none());
                    }
                    (Verdict::Inconclusive | Verdict::Error, _) => assert!(outcome.record.is_none()),
                }
                return;
            }
        };
        assert!(until >= now || !in_flight.is_empty(), "asked to wait until the past");
        // The fuzzer picks what happens next; once its bytes run out, time
        // jumps to the machine's wake-up and nothing answers.
        if input.is_empty() {
            now = now.max(until);
            continue;
        }
        match input.u8() % 8 {
            0 => now = now.max(until),
            1 => now += u64::from(input.u16()),
            7 => {
                // a result for a probe/attempt that may not be current
                let probe = usize::from(input.u8()) % (permissions.len() + 2);
                let _ = check.on_result(probe, u32::from(input.u8() % 4), now, ProbeResult::Failed { facts: facts(&mut input) });
            }
            _ if !in_flight.is_empty() => {
                let index = usize::from(input.u8()) % in_flight.len();
                let (probe, attempt, request) = in_flight.swap_remove(index);
                let result = match (&request, input.u8() % 3) {
                    (_, 0) => ProbeResult::Failed { facts: facts(&mut input) },
                    (Request::RulesReview(_), _) => ProbeResult::RulesReviewed { status: status(&mut input) },
                    (Request::AccessReview(_), _) => ProbeResult::Reviewed { allowed: input.bool(), reason: None },
                };
                let reviewed = match &result {
                    ProbeResult::Reviewed { allowed, .. } => Some(*allowed),
                    _ => None,
                };
                let rules_status = match &result {
                    ProbeResult::RulesReviewed { status } => Some(status.clone()),
                    _ => None,
                };
                if check.on_result(probe, attempt, now, result) == Ok(Accepted::Applied) {
                    match reviewed {
                        Some(true) => {
                            allowed.insert(probe);
                        }
                        Some(false) => {
                            denied.insert(probe);
                        }
                        None => {}
                    }
                    if let Some(status) = rules_status {
                        for (i, proven) in rules::proven(&status, &permissions).into_iter().enumerate() {
                            if proven {
                                proofs.insert(i);
                            }
                        }
                    }
                }
            }
            _ => now = now.max(until),
        }
    }
    panic!("the check did not finish in 20000 steps");
});

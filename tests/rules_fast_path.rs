//! The SelfSubjectRulesReview fast path: one review instead of thirteen,
//! access reviews only for what the rules do not prove, and never a denial
//! from the rules alone.

mod common;

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

use common::*;
use k8s_auth_preflight::preflight::{BadReport, Request};
use k8s_auth_preflight::rules::{rule_grants, ResourceRule, RulesStatus};
use k8s_auth_preflight::{
    permission, ErrorFacts, Identity, Permission, Preflight, ProbeResult, Settings, Source, Verdict,
};

fn settings() -> Settings {
    let mut s = Settings::new();
    s.seed = Some(3);
    s
}

fn check() -> Preflight {
    let identity = Identity::from_credential(b"fast-path-token");
    Preflight::new(settings(), &hooks_permissions(), "ci", identity, None, T0).unwrap()
}

fn rule(verbs: &[&str], resources: &[&str]) -> ResourceRule {
    let v = |xs: &[&str]| xs.iter().map(|s| s.to_string()).collect();
    ResourceRule {
        verbs: v(verbs),
        api_groups: vec![String::new()],
        resources: v(resources),
        resource_names: vec![],
    }
}

/// The hooks' full Role.
fn full_role() -> Vec<ResourceRule> {
    vec![
        rule(&["get", "list", "create", "delete"], &["pods"]),
        rule(&["get", "create"], &["pods/exec"]),
        rule(&["get", "list", "watch"], &["pods/log"]),
        rule(&["get", "list", "create", "delete"], &["secrets"]),
    ]
}

fn permission_of(s: &Sent) -> Permission {
    let a = s.access();
    Permission {
        verb: a.verb.clone(),
        group: a.group.clone(),
        resource: a.resource.clone(),
        subresource: a.subresource.clone(),
    }
}

/// A simulated apiserver whose one Role answers both kinds of review.
fn role_server(role: Vec<ResourceRule>, incomplete: bool) -> impl FnMut(u64, &Sent) -> Reply {
    move |_, s| {
        if s.is_rules() {
            Reply::Rules {
                status: RulesStatus {
                    resource_rules: role.clone(),
                    incomplete,
                    evaluation_error: incomplete.then(|| "webhook authorizer".to_string()),
                },
                latency: 10,
            }
        } else {
            let p = permission_of(s);
            healthy(role.iter().any(|r| rule_grants(r, &p)))
        }
    }
}

#[test]
fn a_complete_role_is_proven_with_exactly_one_request() {
    let mut c = check();
    let run = drive(&mut c, T0, role_server(full_role(), false));
    assert_eq!(run.outcome.verdict, Verdict::Allowed);
    assert_eq!(run.outcome.source, Some(Source::Reviews));
    assert_eq!(run.sent.len(), 1);
    assert!(run.sent[0].is_rules());
    match &run.sent[0].request {
        Request::RulesReview(r) => {
            assert_eq!(r.kind, "SelfSubjectRulesReview");
            assert_eq!(r.spec.namespace, "ci");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(run.outcome.requests, 1);
    assert_eq!(run.outcome.proven_by_rules, 13);
    assert!(
        run.outcome.record.is_some(),
        "a verdict proven by rules is cached like any other"
    );
}

#[test]
fn an_incomplete_review_falls_back_to_one_access_review_per_permission() {
    let mut c = check();
    let run = drive(&mut c, T0, role_server(full_role(), true));
    assert_eq!(run.outcome.verdict, Verdict::Allowed);
    assert_eq!(run.sent.iter().filter(|s| s.is_rules()).count(), 1);
    assert_eq!(run.sent.iter().filter(|s| !s.is_rules()).count(), 13);
    assert_eq!(run.outcome.proven_by_rules, 0);
}

#[test]
fn only_the_unproven_permissions_are_asked() {
    // The Role grants pods/exec through `*/exec`, which this review's rules
    // list; pods/log only through a rule with resourceNames, which proves
    // nothing on all objects.
    let mut role = full_role();
    role[1] = rule(&["get", "create"], &["*/exec"]);
    role[2] = ResourceRule {
        resource_names: vec!["only-this-pod".into()],
        ..rule(&["get", "list", "watch"], &["pods/log"])
    };
    let mut c = check();
    // The access reviews say allowed: the apiserver may know more than the
    // rules list (e.g. an aggregated ClusterRole).
    let run = drive(&mut c, T0, |now, s| {
        if s.is_rules() {
            role_server(role.clone(), false)(now, s)
        } else {
            healthy(true)
        }
    });
    assert_eq!(run.outcome.verdict, Verdict::Allowed);
    let asked: Vec<String> = run
        .sent
        .iter()
        .filter(|s| !s.is_rules())
        .map(|s| permission_of(s).to_string())
        .collect();
    let mut asked_sorted = asked.clone();
    asked_sorted.sort();
    assert_eq!(
        asked_sorted,
        ["get pods/log", "list pods/log", "watch pods/log"]
    );
    assert_eq!(run.outcome.proven_by_rules, 10);
    // The unproven reviews go out together, right after the rules answer.
    let first_access = run.sent.iter().find(|s| !s.is_rules()).unwrap().at;
    assert!(run
        .sent
        .iter()
        .filter(|s| !s.is_rules())
        .all(|s| s.at == first_access));
}

#[test]
fn a_role_missing_two_verbs_is_denied_naming_both() {
    let mut role = full_role();
    role[1] = rule(&["get"], &["pods/exec"]);
    role[3] = rule(&["get", "list", "create"], &["secrets"]);
    let mut c = check();
    let run = drive(&mut c, T0, role_server(role, false));
    assert_eq!(run.outcome.verdict, Verdict::Denied);
    assert_eq!(
        run.outcome.message,
        "denied: create pods/exec, delete secrets in namespace \"ci\""
    );
    assert_eq!(
        run.sent.len(),
        1 + 2,
        "one rules review, then only the two unproven permissions"
    );
    assert!(run.outcome.record.is_none());
}

#[test]
fn rules_alone_never_deny() {
    // An empty rules list proves nothing; the access reviews decide.
    let mut c = check();
    let run = drive(&mut c, T0, |_, s| {
        if s.is_rules() {
            Reply::Rules {
                status: RulesStatus::default(),
                latency: 10,
            }
        } else {
            healthy(true)
        }
    });
    assert_eq!(run.outcome.verdict, Verdict::Allowed);
    assert_eq!(run.sent.len(), 14);
}

#[test]
fn a_refused_rules_review_falls_back_to_access_reviews() {
    for code in [404, 400, 422] {
        let mut c = check();
        let run = drive(&mut c, T0, |_, s| {
            if s.is_rules() {
                fail(status(code))
            } else {
                healthy(true)
            }
        });
        assert_eq!(run.outcome.verdict, Verdict::Allowed, "HTTP {code}");
        assert_eq!(
            run.sent.iter().filter(|s| s.is_rules()).count(),
            1,
            "HTTP {code}: not retried"
        );
        assert_eq!(run.sent.len(), 14, "HTTP {code}");
        assert!(
            run.done_at < T0 + 1_000,
            "HTTP {code}: no backoff before falling back"
        );
    }
}

#[test]
fn a_rules_review_forbidden_again_and_again_falls_back_after_three() {
    let mut c = check();
    let run = drive(&mut c, T0, |_, s| {
        if s.is_rules() {
            fail(status(403))
        } else {
            healthy(true)
        }
    });
    assert_eq!(run.outcome.verdict, Verdict::Allowed);
    assert_eq!(
        run.sent.iter().filter(|s| s.is_rules()).count() as u32,
        k8s_auth_preflight::preflight::RULES_REFUSALS_BEFORE_FALLBACK
    );
    assert_eq!(run.sent.iter().filter(|s| !s.is_rules()).count(), 13);
}

#[test]
fn a_transient_403_on_the_rules_review_does_not_fan_out() {
    // The unwarmed apiserver's 403 window: the first rules review is
    // forbidden, the retry succeeds; no access review is sent.
    let mut c = check();
    let mut server = role_server(full_role(), false);
    let run = drive(&mut c, T0, |now, s| {
        if s.attempt == 1 {
            fail(status(403))
        } else {
            server(now, s)
        }
    });
    assert_eq!(run.outcome.verdict, Verdict::Allowed);
    assert_eq!(run.sent.len(), 2);
    assert!(run.sent.iter().all(|s| s.is_rules()));
}

#[test]
fn a_transient_failure_of_the_rules_review_is_retried_within_the_deadline() {
    let mut c = check();
    let mut server = role_server(full_role(), false);
    let run = drive(&mut c, T0, |now, s| {
        if now < T0 + 5_000 {
            fail(refused())
        } else {
            server(now, s)
        }
    });
    assert_eq!(run.outcome.verdict, Verdict::Allowed);
    assert!(
        run.sent.iter().all(|s| s.is_rules()),
        "no access review was needed"
    );
    assert!(run.sent.len() > 1);
    assert!(run.done_at >= T0 + 5_000);

    let mut c = check();
    let run = drive(&mut c, T0, |_, _| fail(refused()));
    assert_eq!(run.outcome.verdict, Verdict::Inconclusive);
    assert!(run.outcome.message.contains("NOT a permissions denial"));
    assert!(
        run.sent.iter().all(|s| s.is_rules()),
        "a stall never fans out to 13 reviews"
    );
    assert!(run.done_at <= T0 + 90_000);
}

#[test]
fn the_fast_path_can_be_turned_off() {
    let mut s = settings();
    s.rules_review = false;
    let mut c = Preflight::new(s, &hooks_permissions(), "ci", None, None, T0).unwrap();
    let run = drive(&mut c, T0, role_server(full_role(), false));
    assert_eq!(run.sent.len(), 13);
    assert!(run.sent.iter().all(|s| !s.is_rules()));
    let (from_env, errors) = Settings::from_env([("ACTIONS_RUNNER_PREFLIGHT_RULES_REVIEW", "off")]);
    assert!(errors.is_empty());
    assert!(!from_env.rules_review);
}

#[test]
fn results_of_the_wrong_kind_are_refused() {
    let mut c = check();
    let rules_probe = match c.poll(T0) {
        k8s_auth_preflight::Action::Send { probe, request, .. } => {
            assert!(matches!(request, Request::RulesReview(_)));
            probe
        }
        other => panic!("{other:?}"),
    };
    assert_eq!(
        c.on_result(
            rules_probe,
            1,
            T0,
            ProbeResult::Reviewed {
                allowed: false,
                reason: None
            }
        ),
        Err(BadReport::WrongResultKind(rules_probe)),
        "an access-review answer cannot deny through the rules probe"
    );
    assert_eq!(
        c.on_result(
            rules_probe,
            1,
            T0,
            ProbeResult::AccessBody { body: "{}".into() }
        ),
        Err(BadReport::WrongResultKind(rules_probe))
    );
}

#[test]
fn what_the_rules_prove_agrees_with_the_permission_table() {
    // Sanity of the fixture itself: every default permission is granted by
    // the full Role and each rule-matching case is exercised above.
    let perms = permission::flatten(&hooks_permissions()).unwrap();
    assert!(perms
        .iter()
        .all(|p| full_role().iter().any(|r| rule_grants(r, p))));
}

#[test]
fn a_rules_review_failing_with_5xx_again_and_again_falls_back_too() {
    // Only the rules review fails; access reviews answer. The fast path
    // must not end inconclusive where no fast path would be allowed.
    let mut c = check();
    let run = drive(&mut c, T0, |_, s| {
        if s.is_rules() {
            fail(status(500))
        } else {
            healthy(true)
        }
    });
    assert_eq!(run.outcome.verdict, Verdict::Allowed);
    assert_eq!(run.sent.iter().filter(|s| s.is_rules()).count(), 3);
    assert_eq!(run.sent.iter().filter(|s| !s.is_rules()).count(), 13);
}

#[test]
fn refused_connections_do_not_count_toward_the_fallback() {
    let mut c = check();
    let mut server = role_server(full_role(), false);
    let run = drive(&mut c, T0, |now, s| {
        if s.attempt <= 5 {
            fail(refused())
        } else {
            server(now, s)
        }
    });
    assert_eq!(run.outcome.verdict, Verdict::Allowed);
    assert!(
        run.sent.iter().all(|s| s.is_rules()),
        "five refused connections did not fan out"
    );
}

/// Issue 10: a throttled answer must never make the check send more
/// requests. Three 429s to the rules review used to trigger the fall-back to
/// 13 access reviews (60 requests in 8 s of throttling instead of about 7).
#[test]
fn throttled_rules_reviews_never_fan_out() {
    for (code, retry_after) in [(429, None), (429, Some("1")), (503, Some("2")), (503, None)] {
        let mut c = check();
        let mut server = role_server(full_role(), false);
        let run = drive(&mut c, T0, |now, s| {
            if now < T0 + 8_000 {
                let mut f = status(code);
                f.retry_after = retry_after.map(str::to_string);
                fail(f)
            } else {
                server(now, s)
            }
        });
        assert_eq!(
            run.outcome.verdict,
            Verdict::Allowed,
            "{code} {retry_after:?}"
        );
        assert!(
            run.sent.iter().all(|s| s.is_rules()),
            "{code} {retry_after:?}: throttling fanned out to {} access reviews",
            run.sent.iter().filter(|s| !s.is_rules()).count()
        );
    }
}

/// Issue 10, bug 5: with access reviews that deny, the check answered
/// `true` from a rules review whose fields were not of their documented
/// types. Such a review proves nothing; the access reviews decide.
#[test]
fn a_malformed_rules_review_proves_nothing() {
    let all = r#"{"verbs":["*"],"apiGroups":["*"],"resources":["*"]}"#;
    for status in [
        format!(r#"{{"resourceRules":[{all}],"incomplete":"true"}}"#),
        format!(r#"{{"resourceRules":[{all}],"incomplete":1}}"#),
        r#"{"resourceRules":[{"verbs":["*"],"apiGroups":["*"],"resources":["*"],"resourceNames":[42]}],"incomplete":false}"#.to_string(),
        r#"{"resourceRules":[{"verbs":"*","apiGroups":["*"],"resources":["*"]}],"incomplete":false}"#.to_string(),
    ] {
        let mut c = check();
        let run = drive(&mut c, T0, |_, s| {
            if s.is_rules() {
                body(&format!(r#"{{"status":{status}}}"#))
            } else {
                body(r#"{"status":{"allowed":false,"reason":"no RBAC rule"}}"#)
            }
        });
        assert_eq!(run.outcome.verdict, Verdict::Denied, "{status}");
        assert_eq!(run.outcome.proven_by_rules, 0, "{status}");
        assert_eq!(run.sent.iter().filter(|s| s.is_rules()).count(), 1, "not retried");
        assert!(
            run.warnings.iter().any(|w| w.contains("does not have the documented types")),
            "{status}: {:?}",
            run.warnings
        );
    }
    // The same rules, well-formed, prove everything in one request.
    let mut c = check();
    let run = drive(&mut c, T0, |_, s| {
        if s.is_rules() {
            body(&format!(
                r#"{{"status":{{"resourceRules":[{all}],"incomplete":false}}}}"#
            ))
        } else {
            body(r#"{"status":{"allowed":false}}"#)
        }
    });
    assert_eq!(run.outcome.verdict, Verdict::Allowed);
    assert_eq!(run.outcome.requests, 1);
}

/// A rotating endpoint cuts the rules review's 2xx body mid-way, five
/// times: each cut is retried (it is transient), none counts toward the
/// fall-back (no error answer came back), and the rules review, answered at
/// last, proves everything.
#[test]
fn a_rules_review_cut_mid_body_is_retried_and_does_not_count_toward_the_fallback() {
    let node_fetch_cut = ErrorFacts {
        codes: vec!["ERR_STREAM_PREMATURE_CLOSE".into()],
        name: Some("FetchError".into()),
        message: "Invalid response body while trying to fetch https://127.0.0.1:1/apis/authorization.k8s.io/v1/selfsubjectrulesreviews: Premature close".into(),
        ..Default::default()
    };
    let reported_with_its_200 = ErrorFacts {
        status: Some(200),
        ..node_fetch_cut.clone()
    };
    let undici_cut = ErrorFacts {
        codes: vec!["UND_ERR_SOCKET".into()],
        name: Some("TypeError".into()),
        message: "terminated: other side closed".into(),
        ..Default::default()
    };
    for cut in [node_fetch_cut, reported_with_its_200, undici_cut] {
        let mut c = check();
        let mut server = role_server(full_role(), false);
        let run = drive(&mut c, T0, |now, s| {
            if s.attempt <= 5 {
                fail(cut.clone())
            } else {
                server(now, s)
            }
        });
        assert_eq!(run.outcome.verdict, Verdict::Allowed, "{cut:?}");
        assert!(
            run.sent.iter().all(|s| s.is_rules()),
            "five cut bodies did not fan out: {cut:?}"
        );
    }
}

/// A token the HTTP client refuses as a header value fails every request
/// the same way: the check ends with one request, naming the token's
/// source, and never fans out to the access reviews.
#[test]
fn a_credential_the_client_cannot_send_ends_the_check_without_fanning_out() {
    let mut c = check();
    let run = drive(&mut c, T0, |_, _| {
        fail(ErrorFacts {
            name: Some("TypeError".into()),
            message: "Bearer <redacted> is not a legal HTTP header value".into(),
            credential_source: Some("the token file /run/token".into()),
            ..Default::default()
        })
    });
    assert_eq!(run.outcome.verdict, Verdict::Error);
    assert_eq!(run.sent.len(), 1, "one request, the rules review");
    assert!(
        run.outcome.message.contains("such as a trailing newline")
            && run.outcome.message.contains("the token file /run/token"),
        "{}",
        run.outcome.message
    );
}

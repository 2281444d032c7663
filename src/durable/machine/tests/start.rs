//! A healthy run, and the start: made once, looked for when it may have
//! reached the pod, never made again once the run is claimed.

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

use super::*;

#[test]
fn a_healthy_run_starts_once_delivers_the_code_then_cleans_up() {
    let mut r = run();
    assert!(matches!(
        r.clone().poll(T0),
        DurableAction::Exec {
            step: PodStep::Start,
            connect_timeout_ms: 10_000,
            setup_timeout_ms: 65_000,
            ping_every_ms: 5_000,
            pong_deadline_ms: 15_000,
            ..
        }
    ));
    let start = started(&mut r);
    let end = finish(&mut r, start, T0 + 5, 3);
    assert_eq!(delivered(&end), Some(Delivery::ExitCode(3)));
    assert_eq!(end.last(), Some(&DurableAction::Done));
    assert!(logs(&end, Level::Warning).is_empty());

    let mut r = run();
    let start = started(&mut r);
    assert_eq!(
        delivered(&finish(&mut r, start, T0, 0)),
        Some(Delivery::Success)
    );
}

#[test]
fn a_start_that_provably_never_reached_the_pod_is_made_again() {
    let mut r = run();
    let (start, _) = exec(&drain(&mut r, T0)).unwrap();
    let until = fail_then_wait(&mut r, T0, start, refused());
    assert_eq!(exec(&drain(&mut r, until)).unwrap().1, PodStep::Start);
}

#[test]
fn the_warning_of_a_failed_start_says_what_is_known_of_the_script() {
    for (facts, says) in [
        (refused(), "the script has not started"),
        (
            timed_out(),
            "the script may have started, and will not be started twice",
        ),
    ] {
        let mut r = run();
        let (_, actions) = start_fails(&mut r, facts);
        let warnings = logs(&actions, Level::Warning);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains(says), "{}", warnings[0]);
        assert!(!warnings[0].contains("still running"), "{}", warnings[0]);
    }
}

#[test]
fn a_start_that_may_have_reached_the_pod_is_looked_for_before_another_is_made() {
    let mut r = run();
    let (start, _) = exec(&drain(&mut r, T0)).unwrap();
    let until = fail_then_wait(&mut r, T0, start, timed_out());
    let (attach, step) = exec(&drain(&mut r, until)).unwrap();
    assert_eq!(step, PodStep::Look, "a look first: the start may have run");
    // No run: nothing was claimed, a start may be made.
    r.on_fact(until, DurableFact::Opened { request: attach });
    r.on_fact(until, ended(attach, Some(98), ""));
    let actions = drain(&mut r, until);
    assert!(delivered(&actions).is_none(), "{actions:?}");
    let DurableAction::Wait {
        until_ms: Some(next),
    } = *actions.last().unwrap()
    else {
        panic!("{actions:?}")
    };
    assert_eq!(exec(&drain(&mut r, next)).unwrap().1, PodStep::Start);
}

#[test]
fn an_attach_that_finds_the_run_after_a_start_answered_with_a_status_follows_it() {
    // A gateway answered 503 after forwarding the upgrade: the start ran.
    let mut r = run();
    let (start, _) = exec(&drain(&mut r, T0)).unwrap();
    let until = fail_then_wait(&mut r, T0, start, answered(503));
    let (look, step) = exec(&drain(&mut r, until)).unwrap();
    assert_eq!(step, PodStep::Look);
    r.on_fact(until, DurableFact::Opened { request: look });
    r.on_fact(until, ended(look, Some(0), ""));
    let (attach, step) = exec(&drain(&mut r, until)).unwrap();
    assert_eq!(step, PodStep::Attach);
    r.on_fact(until, DurableFact::Opened { request: attach });
    assert!(drain(&mut r, until).contains(&DurableAction::Resolve));
    assert_eq!(
        delivered(&finish(&mut r, attach, until, 0)),
        Some(Delivery::Success)
    );
}

#[test]
fn a_start_refused_with_a_final_answer_is_the_callers_error_when_no_run_is_found() {
    let mut r = run();
    let (start, _) = exec(&drain(&mut r, T0)).unwrap();
    let until = fail_then_wait(&mut r, T0, start, answered(403));
    let (look, step) = exec(&drain(&mut r, until)).unwrap();
    assert_eq!(step, PodStep::Look);
    r.on_fact(
        until,
        DurableFact::Failed {
            request: look,
            facts: answered(403),
        },
    );
    let end = drain(&mut r, until);
    assert_eq!(
        end,
        vec![
            DurableAction::Reject { request: start },
            DurableAction::Done
        ]
    );
}

#[test]
fn a_start_that_fails_with_no_transport_failure_is_the_plain_clients_error_at_once() {
    // What a mocked client-node or a bug in the client throws: no code,
    // no status, no message we know. The plain exec throws it; so do we.
    let mut r = run();
    let (start, end) = start_fails(
        &mut r,
        ErrorFacts {
            message: "container not found".into(),
            ..ErrorFacts::default()
        },
    );
    assert_eq!(
        end[end.len() - 2..],
        [
            DurableAction::Reject { request: start },
            DurableAction::Done
        ],
        "{end:?}"
    );
}

#[test]
fn two_runs_never_share_an_id_whatever_the_seed() {
    let (a, b) = (run(), run());
    assert_ne!(a.run_id(), b.run_id());
    assert_eq!(a.run_id().len(), 32);
    assert!(a.run_id().bytes().all(|c| c.is_ascii_hexdigit()));
}

/// Whatever the host reports, in any order: once a start's stream has
/// opened (its script claims the run), no start is asked for again, a
/// and a delivery comes at most once.
#[test]
fn no_sequence_of_reports_starts_a_claimed_run_again() {
    let mut dice = RandomSource::seeded(11);
    for round in 0..300 {
        let mut r = run();
        let mut now = T0;
        let mut out: Option<(u32, PodStep)> = None;
        let mut pod_read = None;
        let mut start_opened = false;
        let mut deliveries = 0;
        for _ in 0..400 {
            let actions = drain(&mut r, now);
            for a in &actions {
                match a {
                    DurableAction::Exec { request, step, .. } => {
                        assert!(
                            !(start_opened && *step == PodStep::Start),
                            "round {round}: a claimed run was started again"
                        );
                        out = Some((*request, *step));
                    }
                    DurableAction::ReadPod { request, .. } => pod_read = Some(*request),
                    DurableAction::Deliver { .. } => deliveries += 1,
                    _ => {}
                }
            }
            if actions.last() == Some(&DurableAction::Done) {
                break;
            }
            now += dice.between(0, 3_000);
            let fact = match (out, dice.between(0, 9)) {
                (_, 0) if pod_read.is_some() => DurableFact::Pod {
                    request: pod_read.take().unwrap(),
                    found: dice.between(0, 4) > 0,
                    phase: Some("Running".into()),
                    deleting: false,
                },
                (Some((request, step)), 1..=3) => {
                    if step == PodStep::Start {
                        start_opened = true;
                    }
                    DurableFact::Opened { request }
                }
                (Some((request, _)), 4..=5) => {
                    let codes = [0, 1, 98, 137, 202];
                    let code = codes[dice.between(0, codes.len() as u64 - 1) as usize];
                    out = None;
                    ended(
                        request,
                        if dice.between(0, 1) == 0 {
                            None
                        } else {
                            Some(code)
                        },
                        "0",
                    )
                }
                (Some((request, _)), 6..=8) => {
                    let facts = [
                        refused(),
                        timed_out(),
                        answered(503),
                        answered(404),
                        answered(403),
                    ];
                    out = None;
                    DurableFact::Failed {
                        request,
                        facts: facts[dice.between(0, 4) as usize].clone(),
                    }
                }
                _ => continue,
            };
            // A start whose stream opens claims the run (its script ran).
            r.on_fact(now, fact);
        }
        assert!(deliveries <= 1, "round {round}: {deliveries} deliveries");
    }
}

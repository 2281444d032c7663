//! Cuts and reattaches: the time without a connection and its limit, the
//! set-ups' timeouts, the pod read after an answer, late reports.

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

use super::*;

#[test]
fn a_cut_reattaches_at_once_with_one_warning_and_one_line_and_never_starts_again() {
    let mut r = run();
    let start = started(&mut r);
    r.on_fact(T0 + 100, ended(start, None, ""));
    let after_cut = drain(&mut r, T0 + 100);
    let warnings = logs(&after_cut, Level::Warning);
    assert_eq!(warnings.len(), 1);
    assert!(
        warnings[0].starts_with("the exec stream of pod \"ci/job-pod\" was cut"),
        "{}",
        warnings[0]
    );
    assert!(warnings[0].contains(
        "reattaching; the script is still running in the pod and will not be started again"
    ));
    let (attach, step) = exec(&after_cut).expect("reattached at once");
    assert_eq!(step, PodStep::Attach);
    // Refused for a while: attaches again and again, never a start.
    let mut now = T0 + 100;
    let mut request = attach;
    for _ in 0..5 {
        r.on_fact(
            now,
            DurableFact::Failed {
                request,
                facts: refused(),
            },
        );
        let actions = drain(&mut r, now);
        assert!(
            logs(&actions, Level::Warning).is_empty(),
            "one warning per cut"
        );
        let DurableAction::Wait {
            until_ms: Some(until),
        } = actions.last().unwrap()
        else {
            panic!("{actions:?}")
        };
        now = *until;
        let (next, step) = exec(&drain(&mut r, now)).unwrap();
        assert_eq!(step, PodStep::Attach);
        request = next;
    }
    r.on_fact(now, DurableFact::Opened { request });
    let back = drain(&mut r, now);
    let lines = logs(&back, Level::Info);
    assert_eq!(lines.len(), 1);
    assert!(
        lines[0].starts_with("reattached to the script in pod \"ci/job-pod\" after "),
        "{}",
        lines[0]
    );
    assert!(!back.contains(&DurableAction::Resolve), "resolved once");
    let end = finish(&mut r, request, now, 0);
    assert_eq!(delivered(&end), Some(Delivery::Success));
}

#[test]
fn the_disconnection_limit_counts_time_without_a_connection_not_the_scripts_run_time() {
    let mut r = run();
    let start = started(&mut r);
    // Attached for two hours, then cut: the whole minute is still there.
    let cut_at = T0 + 2 * 3_600_000;
    r.on_fact(cut_at, ended(start, None, ""));
    let (mut request, _) = exec(&drain(&mut r, cut_at)).unwrap();
    let mut now = cut_at;
    let mut gave_up = None;
    for _ in 0..200 {
        r.on_fact(
            now,
            DurableFact::Failed {
                request,
                facts: refused(),
            },
        );
        let actions = drain(&mut r, now);
        if let Some(d) = delivered(&actions) {
            gave_up = Some((now, d));
            break;
        }
        let DurableAction::Wait {
            until_ms: Some(until),
        } = actions.last().unwrap()
        else {
            panic!("{actions:?}")
        };
        now = *until;
        let actions = drain(&mut r, now);
        if let Some(d) = delivered(&actions) {
            gave_up = Some((now, d));
            break;
        }
        request = exec(&actions).unwrap().0;
    }
    let (at, delivery) = gave_up.expect("gave up");
    assert!(
        at >= cut_at + 60_000 - 8_000 && at <= cut_at + 60_000,
        "gave up {} ms after the cut",
        at - cut_at
    );
    let Delivery::Failed { reason, message } = delivery else {
        panic!()
    };
    assert_eq!(reason, "StreamLost");
    assert!(
        message.contains("ci/job-pod") && message.contains("may still be running"),
        "{message}"
    );
    assert!(message.contains("ECONNREFUSED"), "{message}");
}

#[test]
fn a_set_up_that_hangs_past_the_limit_gives_up_at_the_limit() {
    let mut r = run();
    let start = started(&mut r);
    r.on_fact(T0, ended(start, None, ""));
    let actions = drain(&mut r, T0);
    assert!(exec(&actions).is_some());
    assert_eq!(
        actions.last(),
        Some(&DurableAction::Wait {
            until_ms: Some(T0 + 60_000)
        })
    );
    let end = drain(&mut r, T0 + 60_000);
    assert!(
        matches!(
            delivered(&end),
            Some(Delivery::Failed {
                reason: "StreamLost",
                ..
            })
        ),
        "{end:?}"
    );
}

#[test]
fn an_attach_answered_404_reads_the_pod_and_a_pod_gone_fails_at_once_naming_it() {
    let mut r = run();
    let start = started(&mut r);
    r.on_fact(T0, ended(start, Some(137), ""));
    let (attach, _) = exec(&drain(&mut r, T0)).unwrap();
    r.on_fact(
        T0 + 10,
        DurableFact::Failed {
            request: attach,
            facts: answered(404),
        },
    );
    let actions = drain(&mut r, T0 + 10);
    let read = actions
        .iter()
        .find_map(|a| match a {
            DurableAction::ReadPod { request, .. } => Some(*request),
            _ => None,
        })
        .expect("the pod is read");
    r.on_fact(
        T0 + 20,
        DurableFact::Pod {
            request: read,
            found: false,
            phase: None,
            deleting: false,
        },
    );
    let end = drain(&mut r, T0 + 20);
    let Some(Delivery::Failed { reason, message }) = delivered(&end) else {
        panic!("{end:?}")
    };
    assert_eq!(reason, "PodGone");
    assert!(message.contains("\"ci/job-pod\" is gone"), "{message}");
}

#[test]
fn a_pod_that_is_not_running_or_is_being_deleted_fails_and_a_running_one_is_attached_again() {
    for (phase, deleting, fails) in [
        ("Succeeded", false, true),
        ("Running", true, true),
        ("Running", false, false),
    ] {
        let mut r = run();
        let start = started(&mut r);
        r.on_fact(T0, ended(start, None, ""));
        let (attach, _) = exec(&drain(&mut r, T0)).unwrap();
        r.on_fact(
            T0,
            DurableFact::Failed {
                request: attach,
                facts: answered(400),
            },
        );
        let actions = drain(&mut r, T0);
        let read = actions
            .iter()
            .find_map(|a| match a {
                DurableAction::ReadPod { request, .. } => Some(*request),
                _ => None,
            })
            .unwrap();
        r.on_fact(
            T0,
            DurableFact::Pod {
                request: read,
                found: true,
                phase: Some(phase.into()),
                deleting,
            },
        );
        let after = drain(&mut r, T0);
        match delivered(&after) {
            Some(Delivery::Failed { reason, message }) => {
                assert!(fails, "{phase} {deleting}: {message}");
                assert_eq!(reason, "PodNotRunning");
                assert!(message.contains(phase), "{message}");
            }
            other => assert!(!fails && other.is_none(), "{phase} {deleting}: {after:?}"),
        }
    }
}

#[test]
fn a_reattach_whose_answer_does_not_come_is_made_again_soon_waiting_longer_each_time() {
    let setup_of = |actions: &[DurableAction]| {
        actions.iter().find_map(|a| match a {
            DurableAction::Exec {
                request,
                step,
                setup_timeout_ms,
                ..
            } => Some((*request, *step, *setup_timeout_ms)),
            _ => None,
        })
    };
    let mut long = settings();
    long.calls.disconnect_limit = Duration::from_secs(600);
    let spec = DurableSpec {
        namespace: "ci".into(),
        pod: "job-pod".into(),
        command: vec!["true".into()],
    };
    let mut r = DurableRun::new(
        &long,
        spec,
        RandomSource::seeded(7),
        Delivered::default(),
        T0,
    );
    let (start, step, start_setup) = setup_of(&drain(&mut r, T0)).unwrap();
    assert_eq!(step, PodStep::Start);
    assert_eq!(start_setup, 65_000, "a start is awaited whole");
    r.on_fact(T0, DurableFact::Opened { request: start });
    // (A stream that held: the attach goes at once.)
    r.on_fact(T0 + HELD_MS, ended(start, None, ""));
    let mut now = T0 + HELD_MS;
    let mut waits = Vec::new();
    let (mut attach, step, mut setup) = setup_of(&drain(&mut r, now)).unwrap();
    assert_eq!(step, PodStep::Attach);
    for _ in 0..5 {
        waits.push(setup);
        now += setup;
        let until = fail_then_wait(&mut r, now, attach, timed_out());
        now = until;
        let next = setup_of(&drain(&mut r, now)).unwrap();
        assert_eq!(next.1, PodStep::Attach);
        (attach, setup) = (next.0, next.2);
    }
    assert_eq!(waits, vec![10_000, 20_000, 40_000, 65_000, 65_000]);
    // Once one opens, the next cut starts short again.
    r.on_fact(now, DurableFact::Opened { request: attach });
    r.on_fact(now + HELD_MS, ended(attach, None, ""));
    let (_, step, setup) = setup_of(&drain(&mut r, now + HELD_MS)).unwrap();
    assert_eq!((step, setup), (PodStep::Attach, 10_000));
}

#[test]
fn streams_cut_again_at_once_are_one_disconnection_backed_off_and_told_once() {
    // A proxy that ends every stream with no status: each reattach opens
    // and is cut at once, with no output.
    let mut r = run();
    let mut request = started(&mut r);
    let mut now = T0;
    let mut sent_at = Vec::new();
    let mut warnings = 0;
    let mut gave_up = None;
    for _ in 0..200 {
        r.on_fact(now, DurableFact::Opened { request });
        r.on_fact(now, ended(request, None, "closed with no status"));
        let mut next = None;
        for _ in 0..50 {
            let actions = drain(&mut r, now);
            warnings += logs(&actions, Level::Warning).len();
            if let Some(d) = delivered(&actions) {
                gave_up = Some(d);
                break;
            }
            if let Some((req, _)) = exec(&actions) {
                next = Some(req);
                break;
            }
            match actions.last() {
                Some(DurableAction::Wait { until_ms: Some(at) }) => now = *at,
                _ => break,
            }
        }
        match next {
            Some(req) => {
                sent_at.push(now);
                request = req;
            }
            None => break,
        }
    }
    assert!(
        matches!(
            gave_up,
            Some(Delivery::Failed {
                reason: "StreamLost",
                ..
            })
        ),
        "gave up: {gave_up:?}"
    );
    assert_eq!(warnings, 1, "one warning for the whole disconnection");
    assert!(
        now - T0 >= 60_000 - 8_000,
        "not before the limit: {} ms",
        now - T0
    );
    assert!(
        sent_at.len() < 40,
        "backed off, not a storm: {} reattaches",
        sent_at.len()
    );
    let gaps: Vec<u64> = sent_at.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(gaps.iter().skip(3).all(|g| *g >= 1000), "gaps: {gaps:?}");
}

#[test]
fn late_reports_of_requests_no_longer_out_are_ignored() {
    let mut r = run();
    let start = started(&mut r);
    r.on_fact(T0, ended(start, None, ""));
    let (attach, _) = exec(&drain(&mut r, T0)).unwrap();
    r.on_fact(T0, ended(start, Some(0), ""));
    r.on_fact(T0, DurableFact::Opened { request: 999 });
    assert_eq!(
        drain(&mut r, T0),
        vec![DurableAction::Wait {
            until_ms: Some(T0 + 60_000)
        }]
    );
    r.on_fact(T0, DurableFact::Opened { request: attach });
    assert!(exec(&drain(&mut r, T0)).is_none());
}

#[test]
fn a_pod_read_answered_404_is_the_pod_gone_and_any_other_failure_says_nothing() {
    for (status, gone) in [(404, true), (503, false), (403, false)] {
        let mut r = run();
        let start = started(&mut r);
        r.on_fact(T0, ended(start, Some(137), ""));
        let (attach, _) = exec(&drain(&mut r, T0)).unwrap();
        r.on_fact(
            T0 + 10,
            DurableFact::Failed {
                request: attach,
                facts: answered(404),
            },
        );
        let read = drain(&mut r, T0 + 10)
            .iter()
            .find_map(|a| match a {
                DurableAction::ReadPod { request, .. } => Some(*request),
                _ => None,
            })
            .expect("the pod is read");
        r.on_fact(
            T0 + 20,
            DurableFact::Failed {
                request: read,
                facts: answered(status),
            },
        );
        let end = drain(&mut r, T0 + 20);
        match delivered(&end) {
            Some(Delivery::Failed { reason, .. }) if gone => assert_eq!(reason, "PodGone"),
            None if !gone => {}
            other => panic!("{status}: {other:?} in {end:?}"),
        }
    }
}

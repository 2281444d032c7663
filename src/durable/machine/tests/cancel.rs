//! A signal: the kill step, tried again within its window, and closing
//! the stream, which kills nothing.

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

use super::*;
use crate::durable::machine::cancel::KILL_WINDOW_MS;

#[test]
fn a_signal_kills_the_command_once_started_and_ends_at_once_before() {
    let mut r = run();
    let start = started(&mut r);
    r.on_fact(T0, sigterm());
    let actions = drain(&mut r, T0);
    let (kill, step) = exec(&actions).unwrap();
    assert_eq!(step, PodStep::Kill);
    // The attach that is still open ending changes nothing.
    r.on_fact(T0, ended(start, None, ""));
    assert!(exec(&drain(&mut r, T0)).is_none());
    r.on_fact(T0, ended(kill, Some(0), ""));
    let actions = drain(&mut r, T0);
    assert_eq!(actions.last(), Some(&DurableAction::Done));
    // A host that lives on through the signal hears how the run ended.
    match delivered(&actions) {
        Some(Delivery::Failed { reason, message }) => {
            assert_eq!(reason, "Cancelled");
            assert!(
                message.starts_with("SIGTERM: the script in pod \"ci/job-pod\" was stopped"),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }

    // A start still out: the kill goes, and claims the run if the start
    // did not (98): then nothing was started.
    for (kill_status, said) in [(98, "was not started"), (0, "was stopped")] {
        let mut r = run();
        let (start, _) = exec(&drain(&mut r, T0)).unwrap();
        r.on_fact(T0, sigterm());
        let (kill, step) = exec(&drain(&mut r, T0)).unwrap();
        assert_eq!(step, PodStep::Kill);
        r.on_fact(T0, DurableFact::Opened { request: start });
        r.on_fact(T0, ended(kill, Some(kill_status), ""));
        let actions = drain(&mut r, T0);
        match delivered(&actions) {
            Some(Delivery::Failed { reason, message }) => {
                assert_eq!(reason, "Cancelled");
                assert!(message.contains(said), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }

    // No start out yet (the ledger is being read, say): nothing to stop.
    let mut r = run();
    r.in_flight = None;
    r.next = Some((PodStep::Start, T0 + 1_000));
    r.on_fact(
        T0,
        DurableFact::Cancel {
            signal: "SIGINT".into(),
        },
    );
    let actions = drain(&mut r, T0);
    assert!(exec(&actions).is_none(), "{actions:?}");
    assert_eq!(
        actions.first(),
        Some(&DurableAction::Resolve),
        "the caller's promise settles"
    );
    match delivered(&actions) {
        Some(Delivery::Failed { reason, message }) => {
            assert_eq!(reason, "Cancelled");
            assert!(message.contains("was not started"), "{message}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn closing_the_stream_stops_following_the_run_without_killing_it() {
    let mut r = run();
    let _ = started(&mut r);
    r.on_fact(T0, DurableFact::Closed);
    assert_eq!(drain(&mut r, T0), vec![DurableAction::Done]);
}

#[test]
fn a_kill_that_does_not_get_through_is_made_again_within_its_window_then_said() {
    let mut r = run();
    let _ = started(&mut r);
    r.on_fact(T0, sigterm());
    let actions = drain(&mut r, T0);
    assert!(logs(&actions, Level::Warning)[0].contains("stopping the script in pod \"ci/job-pod\""));
    let (mut kill, _) = exec(&actions).unwrap();
    let mut now = T0;
    let mut kills = 1;
    loop {
        r.on_fact(
            now,
            DurableFact::Failed {
                request: kill,
                facts: refused(),
            },
        );
        let actions = drain(&mut r, now);
        if actions.last() == Some(&DurableAction::Done) {
            let warnings = logs(&actions, Level::Warning);
            assert!(
                warnings[0].contains("could not stop the script")
                    && warnings[0].contains("may still be running"),
                "{warnings:?}"
            );
            break;
        }
        let DurableAction::Wait {
            until_ms: Some(until),
        } = *actions.last().unwrap()
        else {
            panic!("{actions:?}")
        };
        now = until;
        let (next, step) = exec(&drain(&mut r, now)).unwrap();
        assert_eq!(step, PodStep::Kill);
        kill = next;
        kills += 1;
        assert!(kills < 100);
    }
    assert!(kills >= 10, "{kills} kills in the window");
    assert!(now - T0 <= KILL_WINDOW_MS, "tried for {} ms", now - T0);
}

#[test]
fn a_kill_is_not_cut_short_by_the_limit_of_the_time_without_a_connection() {
    // No stream ever opened: the time without a connection runs from T0,
    // and its limit (60 s) comes while the kill is out.
    let mut r = run();
    let (start, _) = exec(&drain(&mut r, T0)).unwrap();
    let late = T0 + 50_000;
    r.on_fact(
        late,
        DurableFact::Failed {
            request: start,
            facts: answered(503),
        },
    );
    r.on_fact(late, sigterm());
    let (kill, step) = exec(&drain(&mut r, late)).unwrap();
    assert_eq!(step, PodStep::Kill);
    let past = T0 + 61_000;
    let actions = drain(&mut r, past);
    assert_eq!(actions, vec![DurableAction::Wait { until_ms: None }]);
    r.on_fact(past, ended(kill, Some(0), ""));
    match delivered(&drain(&mut r, past)) {
        Some(Delivery::Failed { reason, .. }) => assert_eq!(reason, "Cancelled"),
        other => panic!("{other:?}"),
    }
}

//! The ledger of delivered runs and their clean-up: read before the first
//! start, written before the caller hears, clean-ups left to the next start.

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

use super::*;
use crate::durable::machine::outcome::CLEANUP_AFTER_MS;

#[test]
fn a_clean_up_not_made_is_left_to_the_next_start_in_the_pod_and_a_signal_after_the_delivery_kills_nothing(
) {
    let list = Delivered::default();
    let mut first = run_in("job-pod", 1, &list, T0);
    let start = started(&mut first);
    first.on_fact(T0, ended(start, Some(0), ""));
    let actions = drain(&mut first, T0);
    assert_eq!(delivered(&actions), Some(Delivery::Success));
    assert!(matches!(actions.last(), Some(DurableAction::Idle { .. })));
    // The host stops: SIGTERM now kills nothing, the clean-up is not made.
    first.on_fact(
        T0,
        DurableFact::Cancel {
            signal: "SIGTERM".into(),
        },
    );
    assert!(exec(&drain(&mut first, T0)).is_none());
    assert_eq!(list.borrow().len(), 1);

    // Another pod's start leaves it; the same pod's start cleans it up.
    let mut other = run_in("other-pod", 2, &list, T0);
    let cleanup_of = |actions: &[DurableAction]| {
        actions.iter().find_map(|a| match a {
            DurableAction::Exec { cleanup, .. } => Some(cleanup.clone()),
            _ => None,
        })
    };
    assert_eq!(cleanup_of(&drain(&mut other, T0)), Some(vec![]));
    let mut next = run_in("job-pod", 3, &list, T0);
    let actions = drain(&mut next, T0);
    assert_eq!(cleanup_of(&actions), Some(vec![first.run_id().to_string()]));
    let (start, _) = exec(&actions).unwrap();
    next.on_fact(T0, DurableFact::Opened { request: start });
    assert!(list.borrow().is_empty(), "cleaned up by the start");
}

#[test]
fn the_ledger_is_read_before_the_first_start_and_each_delivery_is_written_down_before_the_caller_hears(
) {
    let list: Delivered = Rc::new(std::cell::RefCell::new(
        crate::durable::DeliveredRuns::with_ledger(Some("/rt/ledger".into())),
    ));
    let left = "0123456789abcdef0123456789abcdef";
    let mut first = run_in("job-pod", 1, &list, T0);
    let actions = drain(&mut first, T0);
    assert_eq!(
        actions,
        vec![
            DurableAction::ReadLedger {
                file: "/rt/ledger".into(),
                limit: LEDGER_LIMIT
            },
            DurableAction::Wait { until_ms: None }
        ]
    );
    // Another run of the same process does not read it again.
    let mut second = run_in("job-pod", 2, &list, T0);
    assert!(!drain(&mut second, T0)
        .iter()
        .any(|a| matches!(a, DurableAction::ReadLedger { .. })));
    first.on_fact(
        T0,
        DurableFact::Ledger {
            text: Some(format!("d {left} ci/job-pod\n")),
        },
    );
    let actions = drain(&mut first, T0);
    let (request, cleanup) = start_and_cleanup(&actions);
    assert_eq!(cleanup, vec![left.to_string()]);
    first.on_fact(T0, DurableFact::Opened { request });
    let actions = drain(&mut first, T0);
    assert!(
        actions.contains(&DurableAction::AppendLedger {
            file: "/rt/ledger".into(),
            text: format!("c {left}\n")
        }),
        "{actions:?}"
    );
    first.on_fact(T0, ended(request, Some(0), ""));
    let actions = drain(&mut first, T0);
    let written = actions.iter().position(|a| {
        *a == DurableAction::AppendLedger {
            file: "/rt/ledger".into(),
            text: format!("d {} ci/job-pod\n", first.run_id()),
        }
    });
    let given = actions
        .iter()
        .position(|a| matches!(a, DurableAction::Deliver { .. }));
    assert!(
        written.is_some() && written < given,
        "written down before the caller hears: {actions:?}"
    );
    let (clean, step) = exec(&idle_then(&mut first, &actions)).unwrap();
    assert_eq!(step, PodStep::Cleanup);
    first.on_fact(T0, DurableFact::Opened { request: clean });
    first.on_fact(T0, ended(clean, Some(0), ""));
    let actions = drain(&mut first, T0);
    assert!(actions.contains(&DurableAction::AppendLedger {
        file: "/rt/ledger".into(),
        text: format!("c {}\n", first.run_id())
    }));
    assert!(list.borrow().is_empty());
}

#[test]
fn a_start_in_the_pod_within_the_idle_wait_removes_the_runs_files_and_no_clean_up_of_its_own_is_made(
) {
    let list = Delivered::default();
    let mut first = run_in("job-pod", 1, &list, T0);
    let start = started(&mut first);
    first.on_fact(T0, ended(start, Some(0), ""));
    let actions = drain(&mut first, T0);
    assert_eq!(
        actions.last(),
        Some(&DurableAction::Idle {
            until_ms: T0 + CLEANUP_AFTER_MS
        })
    );
    let mut next = run_in("job-pod", 2, &list, T0 + 5);
    let actions = drain(&mut next, T0 + 5);
    let (request, cleanup) = start_and_cleanup(&actions);
    assert_eq!(cleanup, vec![first.run_id().to_string()]);
    next.on_fact(T0 + 5, DurableFact::Opened { request });
    // The first run's wait ends with nothing left to do.
    assert_eq!(
        drain(&mut first, T0 + CLEANUP_AFTER_MS),
        vec![DurableAction::Done]
    );
}

#[test]
fn a_signal_while_the_ledger_is_read_ends_the_run_before_any_start() {
    let list: Delivered = Rc::new(std::cell::RefCell::new(
        crate::durable::DeliveredRuns::with_ledger(Some("/rt/ledger".into())),
    ));
    let mut r = run_in("job-pod", 1, &list, T0);
    let actions = drain(&mut r, T0);
    assert!(
        matches!(actions.first(), Some(DurableAction::ReadLedger { .. })),
        "{actions:?}"
    );
    assert_eq!(
        actions.last(),
        Some(&DurableAction::Wait { until_ms: None })
    );
    r.on_fact(T0 + 10, sigterm());
    let actions = drain(&mut r, T0 + 10);
    assert!(exec(&actions).is_none(), "{actions:?}");
    match delivered(&actions) {
        Some(Delivery::Failed { reason, message }) => {
            assert_eq!(reason, "Cancelled");
            assert!(message.contains("was not started"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(actions.last(), Some(&DurableAction::Done));
    // The ledger's text, late, changes nothing.
    r.on_fact(T0 + 20, DurableFact::Ledger { text: None });
    assert_eq!(drain(&mut r, T0 + 20), vec![DurableAction::Done]);
}

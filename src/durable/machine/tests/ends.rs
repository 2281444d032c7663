//! What a step's end means, and the finish step: statuses of ours
//! confirmed, `done` read, output lost, a record missing.

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

use super::*;
use crate::durable::machine::step_ends::{delivery_of, FINISHES_UNREAD};

#[test]
fn a_missing_record_after_the_start_ran_fails_and_never_starts_again() {
    let mut r = run();
    let start = started(&mut r);
    r.on_fact(T0, ended(start, None, ""));
    let (attach, _) = exec(&drain(&mut r, T0)).unwrap();
    r.on_fact(T0, DurableFact::Opened { request: attach });
    r.on_fact(T0, ended(attach, Some(98), ""));
    // 98 could be the command's own: the finish step finds no folder.
    let (fin, step) = exec(&drain(&mut r, T0)).unwrap();
    assert_eq!(step, PodStep::Finish);
    r.on_fact(T0, ended(fin, Some(98), ""));
    let end = drain(&mut r, T0);
    let Some(Delivery::Failed { reason, message }) = delivered(&end) else {
        panic!("{end:?}")
    };
    assert_eq!(reason, "RunRecordMissing");
    assert!(
        message.contains("is not started again") && message.contains("ci/job-pod"),
        "{message}"
    );
    assert_eq!(end.last(), Some(&DurableAction::Done));
    assert!(exec(&end).is_none());
}

#[test]
fn a_status_of_ours_is_confirmed_by_a_finish_step_which_a_cut_makes_again() {
    // The command exited 98, or 97, as it may: the finish step says so.
    for code in [
        92, 93, 94, 95, 96, 97, 98, 126, 127, 128, 130, 137, 143, 199, 202, 255,
    ] {
        let mut r = run();
        let start = started(&mut r);
        r.on_fact(T0, ended(start, Some(code), ""));
        let (fin, step) = exec(&drain(&mut r, T0)).unwrap();
        assert_eq!(step, PodStep::Finish, "{code}");
        r.on_fact(T0, ended(fin, None, ""));
        let actions = drain(&mut r, T0);
        let (again, step) = exec(&actions).unwrap();
        assert_eq!(step, PodStep::Finish, "{code}: a cut finish is made again");
        r.on_fact(T0, ended(again, Some(0), &format!("{code} 10 5")));
        let actions = drain(&mut r, T0);
        assert_eq!(delivered(&actions), Some(Delivery::ExitCode(code)));
        assert_eq!(
            exec(&idle_then(&mut r, &actions)).unwrap().1,
            PodStep::Cleanup
        );
    }
    // A status not ours needs no finish step.
    for code in [0, 1, 2, 3, 91, 99, 125] {
        let mut r = run();
        let start = started(&mut r);
        r.on_fact(T0, ended(start, Some(code), ""));
        let actions = drain(&mut r, T0);
        assert_eq!(delivered(&actions), Some(delivery_of(code)), "{code}");
        assert_eq!(
            exec(&idle_then(&mut r, &actions)).unwrap().1,
            PodStep::Cleanup,
            "{code}"
        );
    }
}

#[test]
fn a_done_whose_sizes_are_not_what_arrived_fails_saying_output_was_lost_and_a_bad_one_is_unknown() {
    let mut r = run();
    let start = started(&mut r);
    r.on_fact(T0, ended(start, Some(97), ""));
    let (fin, _) = exec(&drain(&mut r, T0)).unwrap();
    r.on_fact(T0, ended(fin, Some(0), "0 4096 5"));
    let end = drain(&mut r, T0);
    let Some(Delivery::Failed { reason, message }) = delivered(&end) else {
        panic!("{end:?}")
    };
    assert_eq!(reason, "OutputLost");
    assert!(message.contains("4086 bytes of its stdout"), "{message}");

    for garbage in ["garbage", "", "0 10", "256 10 5", "0 10 5 extra", "-1 10 5"] {
        let mut r = run();
        let start = started(&mut r);
        r.on_fact(T0, ended(start, Some(97), ""));
        let (fin, _) = exec(&drain(&mut r, T0)).unwrap();
        r.on_fact(T0, ended(fin, Some(0), garbage));
        let end = drain(&mut r, T0);
        assert!(
            matches!(
                delivered(&end),
                Some(Delivery::Failed {
                    reason: "RunRecordMissing",
                    ..
                })
            ),
            "{garbage:?}: {end:?}"
        );
    }
    // Not done yet (97): the run goes on, attached again.
    let mut r = run();
    let start = started(&mut r);
    r.on_fact(T0, ended(start, Some(97), ""));
    let (fin, _) = exec(&drain(&mut r, T0)).unwrap();
    r.on_fact(T0, ended(fin, Some(97), ""));
    assert_eq!(exec(&drain(&mut r, T0)).unwrap().1, PodStep::Attach);

    // Not done, and never will be: what waits for the command is gone
    // (94), or a relay could not keep the output (93). The run fails at
    // once, saying what is unknown.
    for (status, reason, says) in [
        (
            94,
            "ExitCodeLost",
            "exit code is unknown; it may still be running",
        ),
        (93, "OutputLost", "could not be kept in the pod"),
    ] {
        let mut r = run();
        let start = started(&mut r);
        r.on_fact(T0, ended(start, Some(status), ""));
        let (fin, step) = exec(&drain(&mut r, T0)).unwrap();
        assert_eq!(step, PodStep::Finish);
        r.on_fact(T0, ended(fin, Some(97), ""));
        let end = drain(&mut r, T0);
        assert!(exec(&end).is_none(), "{end:?}");
        let Some(Delivery::Failed {
            reason: got,
            message,
        }) = delivered(&end)
        else {
            panic!("{end:?}")
        };
        assert_eq!(got, reason);
        assert!(message.contains(says), "{message}");
    }

    // The command's own 93 (its run done) is its code.
    let mut r = run();
    let start = started(&mut r);
    r.on_fact(T0, ended(start, Some(93), ""));
    let (fin, _) = exec(&drain(&mut r, T0)).unwrap();
    r.on_fact(T0, ended(fin, Some(0), "93 10 5"));
    assert_eq!(delivered(&drain(&mut r, T0)), Some(Delivery::ExitCode(93)));
}

#[test]
fn a_status_no_shell_could_give_is_confirmed_by_a_finish_step_never_taken_as_the_code() {
    for said in [-1, 256, 300, 999, i64::MAX, i64::MIN] {
        assert_eq!(StepEnd::of(said), StepEnd::Garbled, "{said}");
        let mut r = run();
        let start = started(&mut r);
        r.on_fact(T0, ended(start, Some(said), ""));
        let (fin, step) = exec(&drain(&mut r, T0)).unwrap();
        assert_eq!(step, PodStep::Finish, "{said}");
        r.on_fact(T0, ended(fin, Some(0), "3 10 5"));
        assert_eq!(
            delivered(&drain(&mut r, T0)),
            Some(Delivery::ExitCode(3)),
            "{said}"
        );
    }
    assert_eq!(StepEnd::of(255), StepEnd::Signalled(255));
    assert_eq!(StepEnd::of(93), StepEnd::OutputNotKept);
}

#[test]
fn a_finish_whose_status_is_not_one_a_finish_gives_is_made_again_a_few_times_then_unknown() {
    // A proxy garbled the finish's status (no shell gives -1 or 300; a
    // finish exits 0, 97 or 98): its answer says nothing, and must not be
    // read as "not done" (for a command's own 93 or 94, a false
    // OutputLost or ExitCodeLost).
    for confirmed in [93, 94, 3] {
        for answer in [-1, 300, 3, 1] {
            let mut r = run();
            let start = started(&mut r);
            let status = if confirmed == 3 { 300 } else { confirmed };
            r.on_fact(T0, ended(start, Some(status), ""));
            let (fin, step) = exec(&drain(&mut r, T0)).unwrap();
            assert_eq!(step, PodStep::Finish);
            r.on_fact(T0, DurableFact::Opened { request: fin });
            r.on_fact(T0, ended(fin, Some(answer), ""));
            let actions = drain(&mut r, T0);
            assert!(delivered(&actions).is_none(), "{answer}: {actions:?}");
            let mut at = T0;
            let (again, step) = loop {
                match exec(&drain(&mut r, at)) {
                    Some(found) => break found,
                    None => at += 100,
                }
                assert!(at < T0 + 10_000, "{answer}: no finish again");
            };
            assert_eq!(step, PodStep::Finish, "{answer}");
            r.on_fact(at, DurableFact::Opened { request: again });
            r.on_fact(at, ended(again, Some(0), &format!("{confirmed} 10 5")));
            assert_eq!(
                delivered(&drain(&mut r, at)),
                Some(Delivery::ExitCode(confirmed)),
                "{confirmed} after {answer}"
            );
        }
    }
    // Garbled every time: a few finishes, then the outcome is unknown,
    // well within the disconnection limit.
    let mut r = run();
    let start = started(&mut r);
    r.on_fact(T0, ended(start, Some(93), ""));
    let mut at = T0;
    let mut finishes = 0;
    let end = loop {
        let actions = drain(&mut r, at);
        if let Some(delivery) = delivered(&actions) {
            break delivery;
        }
        match exec(&actions) {
            Some((fin, PodStep::Finish)) => {
                finishes += 1;
                r.on_fact(at, DurableFact::Opened { request: fin });
                r.on_fact(at, ended(fin, Some(3), ""));
            }
            Some(other) => panic!("{other:?}"),
            None => at += 50,
        }
        assert!(at < T0 + 20_000, "still finishing after 20 s");
    };
    assert_eq!(finishes, FINISHES_UNREAD);
    let Delivery::Failed { reason, message } = end else {
        panic!("{end:?}")
    };
    assert_eq!(reason, "ExitCodeUnknown");
    assert!(message.contains("could not be read"), "{message}");
}

#[test]
fn a_run_failed_for_output_it_could_not_keep_or_lost_is_written_down_and_cleaned_up() {
    // 93 confirmed (a relay failed), and a done whose sizes are not what
    // arrived: the command has ended, so its files are removed as a
    // delivered run's are (a full temp folder stays full otherwise).
    for (status, finish_status, finish_out) in [(93, 97, ""), (97, 0, "0 4096 5")] {
        let list = Delivered::default();
        let mut r = run_in("job-pod", 1, &list, T0);
        let start = started(&mut r);
        r.on_fact(T0, ended(start, Some(status), ""));
        let (fin, _) = exec(&drain(&mut r, T0)).unwrap();
        r.on_fact(T0, ended(fin, Some(finish_status), finish_out));
        let actions = drain(&mut r, T0);
        assert!(
            matches!(
                delivered(&actions),
                Some(Delivery::Failed {
                    reason: "OutputLost",
                    ..
                })
            ),
            "{actions:?}"
        );
        assert!(list.borrow().holds(r.run_id()), "{status}: written down");
        let (clean, step) = exec(&idle_then(&mut r, &actions)).unwrap();
        assert_eq!(step, PodStep::Cleanup);
        r.on_fact(T0, ended(clean, Some(0), ""));
        assert_eq!(drain(&mut r, T0).last(), Some(&DurableAction::Done));
        assert!(list.borrow().is_empty());
    }
    // 94: the command may still be running; its files stay.
    let list = Delivered::default();
    let mut r = run_in("job-pod", 1, &list, T0);
    let start = started(&mut r);
    r.on_fact(T0, ended(start, Some(94), ""));
    let (fin, _) = exec(&drain(&mut r, T0)).unwrap();
    r.on_fact(T0, ended(fin, Some(97), ""));
    let actions = drain(&mut r, T0);
    assert_eq!(actions.last(), Some(&DurableAction::Done), "{actions:?}");
    assert!(list.borrow().is_empty());
}

#[test]
fn finishes_unread_count_over_the_whole_run_a_reattach_between_them_included() {
    // Two garbled finishes, a finish that finds the run not done (an
    // attach, ended with 97 again), then one more garbled finish: the
    // third unread answer ends the run, as three in a row would.
    let mut r = run();
    let start = started(&mut r);
    r.on_fact(T0, ended(start, Some(97), ""));
    let mut answers = vec![
        (PodStep::Finish, 3),
        (PodStep::Finish, 3),
        (PodStep::Finish, 97),
        (PodStep::Attach, 97),
        (PodStep::Finish, 3),
    ]
    .into_iter();
    let mut at = T0;
    let end = loop {
        let actions = drain(&mut r, at);
        if let Some(delivery) = delivered(&actions) {
            break delivery;
        }
        match exec(&actions) {
            Some((request, step)) => {
                let (expected, status) = answers.next().expect("no more steps");
                assert_eq!(step, expected, "{actions:?}");
                r.on_fact(at, DurableFact::Opened { request });
                r.on_fact(at, ended(request, Some(status), ""));
            }
            None => at += 50,
        }
        assert!(at < T0 + 20_000, "still running after 20 s");
    };
    assert_eq!(answers.next(), None, "every step was made");
    let Delivery::Failed { reason, .. } = end else {
        panic!("{end:?}")
    };
    assert_eq!(reason, "ExitCodeUnknown");
}

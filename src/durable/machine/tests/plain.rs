//! Commands run as plain execs: empty, not a program, too long for the URL,
//! a container without a utility, starts refused.

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

use super::*;

#[test]
fn a_container_without_a_utility_runs_the_exec_plainly_with_one_warning_naming_it() {
    let index = UTILITIES.iter().position(|u| *u == "setsid").unwrap() as i64;
    let mut r = run();
    let start = started(&mut r);
    r.on_fact(T0, ended(start, Some(200 + index), ""));
    let (fin, step) = exec(&drain(&mut r, T0)).unwrap();
    assert_eq!(step, PodStep::Finish, "200 + i could be the command's own");
    r.on_fact(T0, ended(fin, Some(98), ""));
    let end = drain(&mut r, T0);
    let warnings = logs(&end, Level::Warning);
    assert_eq!(warnings.len(), 1);
    assert!(
        warnings[0].contains("has no `setsid`") && warnings[0].contains("plain exec"),
        "{}",
        warnings[0]
    );
    assert_eq!(
        end[end.len() - 2..],
        [DurableAction::Plain, DurableAction::Done]
    );
    assert_eq!(StepEnd::of(96), StepEnd::NoFolder);
    assert_eq!(
        StepEnd::of(200 + UTILITIES.len() as i64),
        StepEnd::Signalled(200 + UTILITIES.len() as i64)
    );
}

#[test]
fn a_start_whose_runtime_found_no_shell_runs_the_exec_plainly_at_once_with_one_warning() {
    let mut r = run();
    let start = started(&mut r);
    r.on_fact(
        T0,
        ended(start, Some(crate::durable::pod_status::SHELL_NOT_FOUND), ""),
    );
    let end = drain(&mut r, T0);
    assert!(exec(&end).is_none(), "no other step: {end:?}");
    let warnings = logs(&end, Level::Warning);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("has no `sh`"), "{}", warnings[0]);
    assert_eq!(
        end[end.len() - 2..],
        [DurableAction::Plain, DurableAction::Done]
    );
}

fn run_of(command: Vec<String>) -> DurableRun {
    let spec = DurableSpec {
        namespace: "ci".into(),
        pod: "job-pod".into(),
        command,
    };
    DurableRun::new(
        &settings(),
        spec,
        RandomSource::seeded(7),
        Delivered::default(),
        T0,
    )
}

#[test]
fn an_empty_command_a_non_program_and_a_command_too_long_run_plainly() {
    let mut empty = run_of(vec![]);
    assert_eq!(
        drain(&mut empty, T0),
        vec![DurableAction::Plain, DurableAction::Done]
    );

    // Counted as in the URL: a multi-byte letter is 6 bytes there.
    assert_eq!(url_bytes(&["é x".into()]), 9 + 6 + 3 + 1);
    let mut long = run_of(vec![
        "sh".into(),
        "-c".into(),
        "é".repeat(MAX_COMMAND_BYTES / 6),
    ]);
    let actions = drain(&mut long, T0);
    let warnings = logs(&actions, Level::Warning);
    assert_eq!(warnings.len(), 1);
    assert!(
        warnings[0].contains("too long to run durably"),
        "{}",
        warnings[0]
    );
    assert_eq!(
        actions[actions.len() - 2..],
        [DurableAction::Plain, DurableAction::Done]
    );
    let mut fits = run_of(vec!["x".repeat(MAX_COMMAND_BYTES - 9)]);
    assert!(exec(&drain(&mut fits, T0)).is_some());
    let mut over = run_of(vec!["x".repeat(MAX_COMMAND_BYTES - 8)]);
    assert!(exec(&drain(&mut over, T0)).is_none());

    // The start found the command is no program: the runtime says so.
    let mut r = run();
    let start = started(&mut r);
    r.on_fact(T0, ended(start, Some(95), ""));
    let (fin, _) = exec(&drain(&mut r, T0)).unwrap();
    r.on_fact(T0, ended(fin, Some(98), ""));
    assert_eq!(
        drain(&mut r, T0),
        vec![DurableAction::Plain, DurableAction::Done]
    );
}

#[test]
fn a_start_refused_as_too_long_or_refused_again_and_again_while_looks_answer_runs_plainly_with_a_warning(
) {
    for status in [414, 431] {
        let mut r = run();
        let (_, actions) = start_fails(&mut r, answered(status));
        assert_eq!(
            actions[actions.len() - 2..],
            [DurableAction::Plain, DurableAction::Done],
            "{status}"
        );
        let warnings = logs(&actions, Level::Warning);
        assert!(
            warnings[0].contains("refused the start as too long"),
            "{warnings:?}"
        );
    }
    // A start hung up on, and a look that finds nothing, three times.
    let mut r = run();
    let mut now = T0;
    let hung_up = || ErrorFacts {
        codes: vec!["ECONNRESET".into()],
        message: "socket hang up".into(),
        ..ErrorFacts::default()
    };
    let mut starts = 0;
    let end = loop {
        let actions = drain(&mut r, now);
        if actions.last() == Some(&DurableAction::Done) {
            break actions;
        }
        match exec(&actions) {
            Some((start, PodStep::Start)) => {
                starts += 1;
                r.on_fact(
                    now,
                    DurableFact::Failed {
                        request: start,
                        facts: hung_up(),
                    },
                );
            }
            Some((look, PodStep::Look)) => {
                r.on_fact(now, DurableFact::Opened { request: look });
                r.on_fact(now, ended(look, Some(98), ""));
            }
            None => match actions.last() {
                Some(DurableAction::Wait {
                    until_ms: Some(until),
                }) => now = *until,
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        }
        assert!(starts <= 3, "started {starts} times");
    };
    assert_eq!(starts, 3);
    assert_eq!(
        end[end.len() - 2..],
        [DurableAction::Plain, DurableAction::Done]
    );
    let warnings = logs(&end, Level::Warning);
    assert!(
        warnings[0].contains("refused 3 starts while it answered (last error: "),
        "{warnings:?}"
    );
}

#[test]
fn a_container_whose_environment_takes_one_of_the_programs_names_runs_the_exec_plainly_with_one_warning(
) {
    // The start stops at its first line (92, which the command could give
    // too): the finish step, stopped the same way, says it was not the
    // command's.
    let mut r = run();
    let start = started(&mut r);
    r.on_fact(T0, ended(start, Some(92), ""));
    let (fin, step) = exec(&drain(&mut r, T0)).unwrap();
    assert_eq!(step, PodStep::Finish);
    r.on_fact(T0 + 5, ended(fin, Some(92), ""));
    let actions = drain(&mut r, T0 + 5);
    assert!(actions.contains(&DurableAction::Plain), "{actions:?}");
    let warnings = logs(&actions, Level::Warning);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("a variable named as one of the durable exec's own"),
        "{warnings:?}"
    );
    // A command of its own that exits 92 is the command's code.
    let mut r = run();
    let start = started(&mut r);
    r.on_fact(T0, ended(start, Some(92), ""));
    let (fin, _) = exec(&drain(&mut r, T0)).unwrap();
    r.on_fact(T0 + 5, ended(fin, Some(0), "92 10 5"));
    let actions = drain(&mut r, T0 + 5);
    assert_eq!(delivered(&actions), Some(Delivery::ExitCode(92)));
}

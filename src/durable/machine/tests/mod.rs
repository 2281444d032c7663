//! The machine's tests, by topic, and what they share: a run, its
//! settings, and readers of the actions it asks for.

use std::rc::Rc;

use super::*;
use crate::classify::ErrorFacts;
use crate::durable::{Delivery, StepEnd, UTILITIES};

mod cancel;
mod cuts;
mod ends;
mod ledger;
mod plain;
mod start;

const T0: u64 = 1_000_000;

fn settings() -> Settings {
    let mut s = Settings::new();
    s.calls.disconnect_limit = Duration::from_secs(60);
    s.calls.pong_deadline = Duration::from_secs(15);
    s
}

fn run() -> DurableRun {
    let spec = DurableSpec {
        namespace: "ci".into(),
        pod: "job-pod".into(),
        command: vec!["sh".into(), "-e".into(), "script.sh".into()],
    };
    DurableRun::new(
        &settings(),
        spec,
        RandomSource::seeded(7),
        Delivered::default(),
        T0,
    )
}

/// Every action up to a wait or the end.
fn drain(r: &mut DurableRun, now: u64) -> Vec<DurableAction> {
    let mut out = Vec::new();
    for _ in 0..100 {
        let a = r.poll(now);
        let stop = a.ends_turn();
        out.push(a);
        if stop {
            return out;
        }
    }
    panic!("no wait or end in 100 actions: {out:?}");
}

/// The exec asked for among `actions`: its request and step.
fn exec(actions: &[DurableAction]) -> Option<(u32, PodStep)> {
    actions.iter().find_map(|a| match a {
        DurableAction::Exec { request, step, .. } => Some((*request, *step)),
        _ => None,
    })
}

fn refused() -> ErrorFacts {
    ErrorFacts {
        codes: vec!["ECONNREFUSED".into()],
        message: "connect ECONNREFUSED 127.0.0.1:6443".into(),
        ..ErrorFacts::default()
    }
}

fn answered(status: u16) -> ErrorFacts {
    ErrorFacts {
        status: Some(status),
        message: format!("Unexpected server response: {status}"),
        ..ErrorFacts::default()
    }
}

fn timed_out() -> ErrorFacts {
    ErrorFacts::own_timeout()
}

fn ended(request: u32, code: Option<i64>, stdout: &str) -> DurableFact {
    DurableFact::Ended {
        request,
        received: (10, 5),
        exit_code: code,
        stdout: stdout.into(),
        why: if code.is_none() {
            "the connection was lost".into()
        } else {
            String::new()
        },
    }
}

fn sigterm() -> DurableFact {
    DurableFact::Cancel {
        signal: "SIGTERM".into(),
    }
}

/// Request `request` failed with `facts` at `now`: when the next try is.
fn fail_then_wait(r: &mut DurableRun, now: u64, request: u32, facts: ErrorFacts) -> u64 {
    r.on_fact(now, DurableFact::Failed { request, facts });
    match *drain(r, now).last().unwrap() {
        DurableAction::Wait {
            until_ms: Some(until),
        } => until,
        ref other => panic!("{other:?}"),
    }
}

/// A run's first start failed with `facts`: its request, and what the run
/// does at once.
fn start_fails(r: &mut DurableRun, facts: ErrorFacts) -> (u32, Vec<DurableAction>) {
    let (start, _) = exec(&drain(r, T0)).unwrap();
    r.on_fact(
        T0,
        DurableFact::Failed {
            request: start,
            facts,
        },
    );
    (start, drain(r, T0))
}

fn delivered(actions: &[DurableAction]) -> Option<Delivery> {
    actions.iter().find_map(|a| match a {
        DurableAction::Deliver { delivery } => Some(delivery.clone()),
        _ => None,
    })
}

fn logs(actions: &[DurableAction], level: Level) -> Vec<String> {
    actions
        .iter()
        .filter_map(|a| match a {
            DurableAction::Log { level: l, message } if *l == level => Some(message.clone()),
            _ => None,
        })
        .collect()
}

/// The exec asked for among `actions`: its request and the runs it
/// cleans up.
fn start_and_cleanup(actions: &[DurableAction]) -> (u32, Vec<String>) {
    actions
        .iter()
        .find_map(|a| match a {
            DurableAction::Exec {
                request, cleanup, ..
            } => Some((*request, cleanup.clone())),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no exec: {actions:?}"))
}

/// A run of `true` in pod `ci/<pod>` sharing `list`, made at `now`.
fn run_in(pod: &str, seed: u64, list: &Delivered, now: u64) -> DurableRun {
    let spec = DurableSpec {
        namespace: "ci".into(),
        pod: pod.into(),
        command: vec!["true".into()],
    };
    DurableRun::new(
        &settings(),
        spec,
        RandomSource::seeded(seed),
        Rc::clone(list),
        now,
    )
}

/// A run started and attached at T0: the request of its start.
fn started(r: &mut DurableRun) -> u32 {
    let (start, step) = exec(&drain(r, T0)).unwrap();
    assert_eq!(step, PodStep::Start);
    r.on_fact(T0, DurableFact::Opened { request: start });
    assert!(drain(r, T0).contains(&DurableAction::Resolve));
    start
}

/// After `actions` ended idle, waiting for a delivered run's own
/// clean-up: the actions when that wait is over.
fn idle_then(r: &mut DurableRun, actions: &[DurableAction]) -> Vec<DurableAction> {
    let Some(DurableAction::Idle { until_ms }) = actions.last() else {
        panic!("not idle: {actions:?}")
    };
    drain(r, *until_ms)
}

/// From the end of the output to the delivery: the attach exits with
/// the command's `code`, the code is given, then, after an idle wait,
/// the run is cleaned up.
fn finish(r: &mut DurableRun, attach: u32, at: u64, code: i64) -> Vec<DurableAction> {
    r.on_fact(at, ended(attach, Some(code), ""));
    let mut actions = drain(r, at);
    assert!(
        actions
            .iter()
            .any(|a| matches!(a, DurableAction::Deliver { .. })),
        "the code is given before the clean-up: {actions:?}"
    );
    actions.extend(idle_then(r, &actions));
    let (clean, step) = exec(&actions).unwrap();
    assert_eq!(step, PodStep::Cleanup);
    r.on_fact(at, DurableFact::Opened { request: clean });
    r.on_fact(at, ended(clean, Some(0), ""));
    actions.extend(drain(r, at));
    actions
}

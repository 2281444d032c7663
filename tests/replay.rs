//! The replay simulator's arithmetic, pinned on tiny scenarios computed by
//! hand: one job, one stall.

#![cfg(not(target_arch = "wasm32"))]

#[path = "../examples/replay/sim.rs"]
#[allow(dead_code)]
mod sim;

use std::time::Duration;

use k8s_auth_preflight::Jitter;
use sim::{percentile, run, run_planned, JobPlan, Plan, Policy, Scenario};

/// One job: prepare and cleanup only, 1 s apart; the apiserver refuses
/// every connection for the first 5 s; answers take exactly 10 ms.
fn one_job_one_stall() -> Scenario {
    Scenario {
        jobs: 1,
        start_spread: Duration::ZERO,
        script_steps: 0,
        step_work: (Duration::from_millis(1000), Duration::from_millis(1000)),
        stall_at: Duration::ZERO,
        stall: Duration::from_secs(5),
        stall_hangs: false,
        forbidden_window: Duration::ZERO,
        forbidden_share: 0.0,
        latency: (Duration::from_millis(10), Duration::from_millis(10)),
        seed: 1,
    }
}

#[test]
fn upstream_fails_both_steps_and_blames_rbac() {
    // prepare at 0: 13 reviews refused at 1 ms, no retry -> failed.
    // cleanup at 1001 ms: still refused -> failed.
    let r = run(&Policy::upstream(), &one_job_one_stall());
    assert_eq!((r.steps, r.steps_failed, r.false_rbac_reports), (2, 2, 2));
    assert_eq!((r.requests_sent, r.requests_served), (26, 0));
    assert!(r.recovery_to_verdict_ms.is_empty());
}

#[test]
fn pr64_rides_a_five_second_stall_on_its_third_attempt() {
    // prepare: attempts at 0 (refused at 1), 1 + 3000 = 3001 (refused at
    // 3002), 3002 + 6000 = 9002 (served, answered at 9012) -> allowed.
    // cleanup at 10012: no cache in #64, 13 more reviews, served.
    let r = run(&Policy::pr64(), &one_job_one_stall());
    assert_eq!((r.steps, r.steps_failed), (2, 0));
    assert_eq!((r.requests_sent, r.requests_served), (13 * 4, 13 * 2));
    assert_eq!(r.check_ms, vec![9012, 10]);
    assert_eq!(r.recovery_to_verdict_ms, vec![9012 - 5000]);
    assert_eq!(r.peak_per_second_after_recovery, 13);
}

#[test]
fn ours_without_jitter_needs_one_rules_review_and_then_the_cache() {
    // prepare: one rules review at 0, 1001, 3002 (refused 1 ms later each:
    // delays 1 s, 2 s, 4 s), then at 7003: served, proves all 13 at 7013.
    // cleanup at 8013: fresh cached verdict, zero requests.
    let r = run(
        &Policy::ours_with_jitter(Jitter::None),
        &one_job_one_stall(),
    );
    assert_eq!((r.steps, r.steps_failed), (2, 0));
    assert_eq!((r.requests_sent, r.requests_served), (4, 1));
    assert_eq!(r.check_ms, vec![7013, 0]);
    assert_eq!(r.recovery_to_verdict_ms, vec![2013]);
    assert_eq!(r.peak_per_second_after_recovery, 1);
    assert_eq!(r.requests_per_job(), 4.0);
}

#[test]
fn a_plan_fixes_the_start_the_gaps_and_each_process_start_up_and_exit() {
    // The job's first process is due at 500 ms and reaches its check 200 ms
    // later: rules review at 700, 1701, 3702 (refused 1 ms later each), then
    // at 7703: served, answered at 7713. The process ends 50 ms after its
    // verdict, then 1000 ms of work, then cleanup's process takes 300 ms to
    // reach its check: at 9063, from the fresh cache, zero requests.
    let plan = Plan {
        jobs: vec![JobPlan {
            start: Duration::from_millis(500),
            gaps: vec![Duration::from_millis(1000)],
            startups: vec![Duration::from_millis(200), Duration::from_millis(300)],
            exits: vec![Duration::from_millis(50)],
        }],
        startup: Duration::from_millis(999),
        exit: Duration::ZERO,
    };
    let r = run_planned(
        &Policy::ours_with_jitter(Jitter::None),
        &one_job_one_stall(),
        Some(&plan),
    );
    assert_eq!((r.steps, r.steps_failed), (2, 0));
    assert_eq!((r.requests_sent, r.requests_served), (4, 1));
    assert_eq!(r.check_ms, vec![7013, 0]);
    assert_eq!(r.recovery_to_verdict_ms, vec![7713 - 5000]);
    assert_eq!(r.peak_per_second_after_recovery, 1);
}

#[test]
fn a_stall_longer_than_the_deadline_fails_the_step_without_blaming_rbac() {
    let mut s = one_job_one_stall();
    s.stall = Duration::from_secs(200);
    let r = run(&Policy::ours(), &s);
    assert_eq!(r.steps_failed, 2);
    assert_eq!(
        r.false_rbac_reports, 0,
        "inconclusive says it is not a denial"
    );
    assert!(
        r.check_ms.iter().all(|&ms| ms <= 90_000),
        "{:?}",
        r.check_ms
    );
}

#[test]
fn the_same_seed_gives_the_same_report() {
    let mut s = Scenario::incident();
    s.jobs = 20;
    let a = run(&Policy::ours(), &s);
    let b = run(&Policy::ours(), &s);
    assert_eq!(
        (a.requests_sent, a.steps_failed, a.check_ms.clone()),
        (b.requests_sent, b.steps_failed, b.check_ms)
    );
}

#[test]
fn percentiles_are_nearest_rank() {
    assert_eq!(percentile(&[], 50.0), 0);
    assert_eq!(percentile(&[5], 99.0), 5);
    assert_eq!(percentile(&[4, 1, 3, 2], 50.0), 2);
    assert_eq!(percentile(&(1..=100).collect::<Vec<_>>(), 99.0), 99);
}

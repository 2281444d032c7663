//! The replay simulator's arithmetic, pinned on tiny scenarios computed by
//! hand: one job, one stall.

#![cfg(not(target_arch = "wasm32"))]

#[path = "../examples/replay/sim.rs"]
#[allow(dead_code)]
mod sim;

use std::time::Duration;

use k8s_auth_preflight::Jitter;
use sim::{healthy_p95, percentile, run, run_planned, JobPlan, Plan, Policy, Report, Scenario};

/// Ours with 13 access reviews and no jitter (hand-computable).
fn plain_reviews() -> Policy {
    let mut p = Policy::ours_with_jitter(Jitter::None);
    p.settings.rules_review = false;
    p
}

/// Half the requests during the stall (the 2nd, 4th, ...) hang on a stale
/// backend; the others are answered.
fn half_hang() -> Scenario {
    let mut s = one_job_one_stall();
    s.stall_hang_share = 0.5;
    s.stall_rest_answered = true;
    s
}

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
        stall_hang_share: 0.0,
        stall_rest_answered: false,
        stall_hang_random: false,
        forbidden_window: Duration::ZERO,
        forbidden_share: 0.0,
        latency: (Duration::from_millis(10), Duration::from_millis(10)),
        slow_window: Duration::ZERO,
        slow_latency: (Duration::from_millis(10), Duration::from_millis(10)),
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

#[test]
fn a_stale_backend_hangs_every_second_request_and_the_rest_are_answered() {
    // prepare at 0: 13 reviews; requests 2, 4, ..., 12 (probes 1, 3, ...,
    // 11) hang, the 7 others are answered at 10 ms. The 6 hung ones time
    // out at 10000, are retried 1 s later at 11000 (the stall ended at
    // 5000) and answered at 11010. cleanup at 12010: cached, no request.
    let r = run(&plain_reviews(), &half_hang());
    assert_eq!((r.steps, r.steps_failed), (2, 0));
    assert_eq!((r.requests_sent, r.requests_served), (19, 13));
    assert_eq!(r.check_ms, vec![11_010, 0]);
    assert_eq!(r.asking_check_ms, vec![11_010]);
    assert_eq!(r.recovery_to_verdict_ms, vec![11_010 - 5_000]);
    assert_eq!(r.peak_per_second_after_recovery, 6);
    assert_eq!(r.hedges, 0);
}

#[test]
fn hedges_go_to_the_next_backends_in_turn() {
    // As above, and at 100 ms the 6 hung reviews are hedged: requests 14,
    // 16, 18 (the hedges of probes 1, 5, 9) hang again, 15, 17, 19 are
    // answered at 110. Probes 1, 5, 9: the first copy times out at 10000,
    // the hedge at 10100; the retry at 11100 is answered at 11110 (no hedge:
    // 10 ms < 100 ms).
    let mut p = plain_reviews();
    p.settings.hedge_after = Some(Duration::from_millis(100));
    let r = run(&p, &half_hang());
    assert_eq!((r.steps, r.steps_failed), (2, 0));
    assert_eq!(r.hedges, 6);
    assert_eq!(
        (r.requests_sent, r.requests_served),
        (13 + 6 + 3, 7 + 3 + 3)
    );
    assert_eq!(r.check_ms, vec![11_110, 0]);
    assert_eq!(r.recovery_to_verdict_ms, vec![11_110 - 5_000]);
    assert_eq!(r.peak_per_second_after_recovery, 3);
}

#[test]
fn a_spent_retry_quota_fails_the_step_without_blaming_rbac() {
    // Quota 12, one rules review, refused stall of 5 s. prepare at 0:
    // refused at 1, retry (5 tokens, 7 left) at 1001, refused at 1002, retry
    // (2 left) at 3002, refused at 3003: 2 tokens do not pay for a retry,
    // inconclusive at 3003. The job's script steps are skipped; cleanup at
    // 4003, with a new bucket: refused at 4004, retry at 5004, answered at
    // 5014.
    let mut p = Policy::ours_with_quota(12);
    p.settings.backoff.jitter = Jitter::None;
    let r = run(&p, &one_job_one_stall());
    assert_eq!((r.steps, r.steps_failed, r.false_rbac_reports), (2, 1, 0));
    assert_eq!((r.requests_sent, r.requests_served), (5, 1));
    assert_eq!(r.check_ms, vec![3_003, 1_011]);
    assert_eq!(r.recovery_to_verdict_ms, vec![5_014 - 5_000]);
    assert_eq!(r.peak_per_second_after_recovery, 1);
}

#[test]
fn slow_answers_after_the_stall_take_the_slow_latency() {
    // As ours_without_jitter_needs_one_rules_review_and_then_the_cache, but
    // answers in the 2 s after the stall take 700 ms: the rules review at
    // 7003 is past that window (5000-7000) and still takes 10 ms; at 6 s it
    // would not be.
    let mut s = one_job_one_stall();
    s.slow_window = Duration::from_secs(2);
    s.slow_latency = (Duration::from_millis(700), Duration::from_millis(700));
    let r = run(&Policy::ours_with_jitter(Jitter::None), &s);
    assert_eq!(r.check_ms, vec![7013, 0]);
    s.slow_window = Duration::from_secs(3);
    let r = run(&Policy::ours_with_jitter(Jitter::None), &s);
    assert_eq!(r.check_ms, vec![7003 + 700, 0]);
}

#[test]
fn the_hedge_delay_is_the_healthy_p95() {
    let ms = Duration::from_millis;
    // 5..=20 ms: 16 values, 1 above 19 ms (6 %).
    assert_eq!(healthy_p95((ms(5), ms(20))), ms(19));
    // 49..=92 ms (the chaos run's measured latency): 44 values, 3 above 89.
    assert_eq!(healthy_p95((ms(49), ms(92))), ms(89));
    assert_eq!(healthy_p95((ms(10), ms(10))), ms(10));
}

#[test]
fn pooled_seeds_add_counts_and_keep_each_peak() {
    let mut s = one_job_one_stall();
    let mut pooled: Report = run(&Policy::pr64(), &s);
    s.seed = 2;
    pooled.pool(run(&Policy::pr64(), &s));
    // pr64 has no jitter: both seeds give the run pinned above.
    assert_eq!((pooled.steps, pooled.jobs), (4, 2));
    assert_eq!((pooled.requests_sent, pooled.requests_served), (104, 52));
    assert_eq!(pooled.check_ms, vec![9012, 10, 9012, 10]);
    assert_eq!(pooled.peaks, vec![13, 13]);
    assert_eq!(pooled.peak_per_second_after_recovery, 13);
    assert_eq!(pooled.requests_per_job(), 52.0);
}

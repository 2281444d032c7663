//! Properties of one process's turn at the lock file under generated lock
//! reports, removal results, record looks and clock jumps:
//! - the turn always ends (lead, alone or use the record) within a bounded
//!   number of polls, by the deadline less the reserve;
//! - no wait reaches past the deadline less the reserve;
//! - a turn that ends with a check leaves it at least the reserve, and never
//!   more than the deadline;
//! - it leads only right after the lock was reported acquired, and uses the
//!   record only right after the record was reported to answer.

#![cfg(not(target_arch = "wasm32"))]

use std::time::Duration;

use k8s_auth_preflight::check::single_flight::{FlightAction, Holder, LockAttempt, SingleFlight};
use k8s_auth_preflight::Settings;
use proptest::prelude::*;

const T0: u64 = 1_792_548_926_000;

#[derive(Debug, Clone, Copy)]
enum Report {
    Acquired,
    Unavailable,
    Held(u64, Holder),
}

fn report() -> impl Strategy<Value = Report> {
    let holder = prop_oneof![
        12 => Just(Holder::Alive),
        1 => Just(Holder::Dead),
        1 => Just(Holder::Unknown),
        1 => Just(Holder::Invalid),
    ];
    prop_oneof![
        1 => Just(Report::Acquired),
        1 => Just(Report::Unavailable),
        // Mostly a holder that keeps it, so turns reach the give-up time.
        12 => (prop_oneof![9 => 0u64..5_000, 1 => 0u64..400_000], holder)
            .prop_map(|(age, h)| Report::Held(age, h)),
    ]
}

#[derive(Debug, Clone)]
struct World {
    deadline_ms: u64,
    timeout_ms: u64,
    seed: u64,
    locks: Vec<Report>,
    removals: Vec<bool>,
    records: Vec<bool>,
    /// Extra ms the process is late to each poll (a busy machine).
    lateness: Vec<u64>,
}

fn world() -> impl Strategy<Value = World> {
    (
        1_000u64..120_000,
        100u64..20_000,
        any::<u64>(),
        prop::collection::vec(report(), 1..60),
        prop::collection::vec(any::<bool>(), 1..8),
        prop::collection::vec(prop::bool::weighted(0.05), 1..200),
        prop::collection::vec(prop_oneof![8 => Just(0u64), 1 => 0u64..5_000], 1..50),
    )
        .prop_map(
            |(deadline_ms, timeout_ms, seed, locks, removals, records, lateness)| World {
                deadline_ms,
                timeout_ms,
                seed,
                locks,
                removals,
                records,
                lateness,
            },
        )
}

fn cycle<T: Copy>(list: &[T], i: &mut usize) -> T {
    let v = list[*i % list.len()];
    *i += 1;
    v
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn a_turn_always_ends_in_time_with_a_budget_and_for_a_reason(w in world()) {
        let mut s = Settings::new();
        s.backoff.deadline = Duration::from_millis(w.deadline_ms);
        s.request_timeout = Duration::from_millis(w.timeout_ms);
        s.seed = Some(w.seed);
        let reserve = SingleFlight::reserve_ms(&s);
        let give_up_at = T0 + w.deadline_ms - reserve;
        let mut flight = SingleFlight::new(&s, T0);
        let (mut li, mut ri, mut ci, mut late) = (0, 0, 0, 0);
        let mut now = T0;
        let mut last_report: Option<&str> = None;
        let mut polls = 0u32;
        let end = loop {
            polls += 1;
            // Looks start at 12 ms and grow to 250 ms, so a turn of at most
            // 120 s takes well under this many polls.
            prop_assert!(polls < 20_000, "the turn never ended");
            let action = flight.poll(now);
            match action {
                FlightAction::Acquire => {
                    let r = cycle(&w.locks, &mut li);
                    let attempt = match r {
                        Report::Acquired => LockAttempt::Acquired,
                        Report::Unavailable => LockAttempt::Unavailable,
                        Report::Held(age_ms, holder) => LockAttempt::Held { age_ms, holder },
                    };
                    flight.on_lock(now, attempt);
                    last_report = Some(match r {
                        Report::Acquired => "acquired",
                        _ => "other",
                    });
                }
                FlightAction::RemoveStale => {
                    flight.on_removed(now, cycle(&w.removals, &mut ri));
                    last_report = Some("removed");
                }
                FlightAction::Reread => {
                    let answers = cycle(&w.records, &mut ci);
                    flight.on_record(now, answers);
                    last_report = Some(if answers { "answers" } else { "other" });
                }
                FlightAction::Wait { until_ms } => {
                    prop_assert!(until_ms > now, "a wait into the past");
                    prop_assert!(until_ms <= give_up_at, "waits past the deadline less the reserve");
                    now = until_ms + cycle(&w.lateness, &mut late);
                }
                done => break done,
            }
        };
        match &end {
            FlightAction::Lead { budget_ms } => {
                prop_assert_eq!(last_report, Some("acquired"));
                prop_assert!(*budget_ms >= reserve.max(1) && *budget_ms <= w.deadline_ms);
            }
            FlightAction::Alone { budget_ms, .. } => {
                prop_assert!(*budget_ms >= reserve.max(1) && *budget_ms <= w.deadline_ms);
            }
            FlightAction::UseRecord => prop_assert_eq!(last_report, Some("answers")),
            other => prop_assert!(false, "not an end: {:?}", other),
        }
        // A turn that waited ended by the time it had to give up (plus the
        // lateness of the last poll).
        prop_assert!(now <= give_up_at.max(T0) + 5_000);
        // And the end is stable.
        prop_assert_eq!(flight.poll(now + 1), end);
    }
}

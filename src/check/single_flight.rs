//! Single flight: when several hook processes of one job start at once and
//! no cached verdict answers them, one of them (the one that holds the lock
//! file) asks the Kubernetes API; the others wait for the record it writes
//! instead of asking too.
//!
//! The shim does the file work: it creates the lock atomically, says who
//! holds it and how old it is, removes a stale one, and re-reads the record.
//! This machine decides what to do next, how long to wait between looks,
//! when a lock is stale, and when a waiting process stops waiting and asks
//! on its own.
//!
//! What it guarantees:
//! - a waiting process never waits past its own deadline less a reserve
//!   ([`SingleFlight::reserve_ms`]), so it always keeps time for a check of
//!   its own (behind a leader that stalls, that check has only the reserve:
//!   the leader was already retrying for everyone);
//! - a lock whose holder has died, whose content is not a lock, or that is
//!   older than any check can last, is removed and taken over (at most
//!   [`MAX_TAKEOVERS`] times, then the process checks on its own);
//! - a lock that cannot be made (read-only or full disk, a directory in the
//!   way) never blocks: the process checks on its own;
//! - with the cache off or a TTL of 0 no record can answer another process,
//!   so nobody waits.
//!
//! A forged lock (the job container can write to `$RUNNER_TEMP`) can only
//! make this job's own steps wait, and no longer than their deadline less
//! the reserve; it can never make a check say `allowed`.

use crate::config::Settings;
use crate::millis;
use crate::random::RandomSource;
use crate::retry::SteadyClock;
use crate::text::seconds;

/// The first wait before looking at the record again, in ms.
pub const FIRST_LOOK_MS: u64 = 25;
/// The longest wait between looks, in ms.
pub const MAX_LOOK_MS: u64 = 250;
/// How many stale locks one process removes before it gives up on the lock.
pub const MAX_TAKEOVERS: u32 = 3;
/// Added to the longest a check can last before a live holder's lock counts
/// as stale (process exit, writing the record).
pub const STALE_MARGIN_MS: u64 = 5_000;

/// Who holds a lock, as the shim could tell (`'alive'`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(variant_identifier, rename_all = "camelCase")]
pub enum Holder {
    /// A process of this host that is still running.
    Alive,
    /// A process of this host that has exited.
    Dead,
    /// Cannot tell (another host's process id): only the lock's age counts.
    Unknown,
    /// Not a lock this package writes (wrong content, not a regular file).
    Invalid,
}

/// What happened when the shim tried to create the lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockAttempt {
    /// The lock is ours.
    Acquired,
    /// Another lock is there.
    Held {
        /// Its age (now less its modification time), in ms.
        age_ms: u64,
        /// Who holds it.
        holder: Holder,
    },
    /// No lock can be made here (read-only or full disk, no permission).
    Unavailable,
}

/// What the shim must do next.
#[must_use]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FlightAction {
    /// Create the lock atomically; report with [`SingleFlight::on_lock`].
    Acquire,
    /// Remove the lock that is there (it is stale); report with
    /// [`SingleFlight::on_removed`].
    RemoveStale,
    /// Read the record again; report with [`SingleFlight::on_record`]
    /// whether it now answers the check.
    Reread,
    /// Nothing to do until `until_ms` (Unix epoch ms); then poll again.
    Wait {
        /// When to poll again.
        until_ms: u64,
    },
    /// Done: the lock is ours. Check, with at most `budget_ms`, write the
    /// record, then remove the lock.
    Lead {
        /// The check's deadline, from now, in ms.
        budget_ms: u64,
    },
    /// Done: check without the lock, with at most `budget_ms`.
    Alone {
        /// The check's deadline, from now, in ms.
        budget_ms: u64,
        /// A warning to print, if waiting ended in a way worth telling.
        warning: Option<String>,
    },
    /// Done: the record written by the lock's holder answers the check.
    UseRecord,
}

#[derive(Debug, Clone)]
enum Step {
    Start,
    AwaitLock,
    AwaitRemoval,
    Waiting { until_ms: u64 },
    AwaitRecord,
    Finished(FlightAction),
}

/// One process's turn at the lock. See the module docs.
#[derive(Debug, Clone)]
pub struct SingleFlight {
    started_ms: u64,
    deadline_ms: u64,
    reserve_ms: u64,
    stale_after_ms: u64,
    look_ms: u64,
    takeovers: u32,
    clock: SteadyClock,
    random: RandomSource,
    step: Step,
}

impl SingleFlight {
    /// A turn that starts at `now_ms` under `settings` (its deadline, request
    /// timeout, seed, and whether single flight is on at all).
    pub fn new(settings: &Settings, now_ms: u64) -> SingleFlight {
        let deadline = millis(settings.backoff.deadline);
        let timeout = millis(settings.request_timeout);
        let random = RandomSource::for_seed(settings.seed, 0x0051_464c_4947_4854);
        // Waiting only helps when the record another process writes can
        // answer this one: not with the cache off or a TTL of 0.
        let useful = settings.cache_enabled && !settings.cache.ttl.is_zero();
        let step = if settings.single_flight && useful {
            Step::Start
        } else {
            Step::Finished(FlightAction::Alone {
                budget_ms: deadline,
                warning: None,
            })
        };
        SingleFlight {
            started_ms: now_ms,
            deadline_ms: now_ms.saturating_add(deadline),
            reserve_ms: Self::reserve_ms(settings),
            stale_after_ms: deadline
                .saturating_add(timeout)
                .saturating_add(STALE_MARGIN_MS),
            look_ms: FIRST_LOOK_MS,
            takeovers: 0,
            clock: SteadyClock::starting_at(now_ms),
            random,
            step,
        }
    }

    /// The time a waiting process keeps for a check of its own: one request
    /// timeout, or a tenth of the deadline if that is shorter.
    pub fn reserve_ms(settings: &Settings) -> u64 {
        millis(settings.request_timeout).min(millis(settings.backoff.deadline) / 10)
    }

    /// The age past which a lock is stale whoever holds it, in ms.
    pub fn stale_after_ms(&self) -> u64 {
        self.stale_after_ms
    }

    /// The next thing to do.
    pub fn poll(&mut self, now_ms: u64) -> FlightAction {
        let now = self.clock.observe(now_ms);
        match &self.step {
            Step::Finished(action) => action.clone(),
            Step::Start => {
                self.step = Step::AwaitLock;
                FlightAction::Acquire
            }
            Step::Waiting { until_ms } if now < *until_ms => FlightAction::Wait {
                until_ms: *until_ms,
            },
            Step::Waiting { .. } => {
                self.step = Step::AwaitRecord;
                FlightAction::Reread
            }
            // Polled again without the report the last action asked for:
            // ask again (the shim must report before it polls).
            Step::AwaitLock => FlightAction::Acquire,
            Step::AwaitRemoval => FlightAction::RemoveStale,
            Step::AwaitRecord => FlightAction::Reread,
        }
    }

    /// Reports what creating the lock did.
    pub fn on_lock(&mut self, now_ms: u64, attempt: LockAttempt) {
        let now = self.clock.observe(now_ms);
        if !matches!(self.step, Step::AwaitLock) {
            return;
        }
        self.step = match attempt {
            LockAttempt::Acquired => Step::Finished(FlightAction::Lead {
                budget_ms: self.budget(now),
            }),
            LockAttempt::Unavailable => Step::Finished(FlightAction::Alone {
                budget_ms: self.budget(now),
                warning: None,
            }),
            LockAttempt::Held { age_ms, holder } if self.is_stale(age_ms, holder) => {
                if self.takeovers < MAX_TAKEOVERS {
                    Step::AwaitRemoval
                } else {
                    Step::Finished(FlightAction::Alone {
                        budget_ms: self.budget(now),
                        warning: Some(format!(
                            "The lock another step of this job left behind came back stale {MAX_TAKEOVERS} times; checking permissions without it."
                        )),
                    })
                }
            }
            LockAttempt::Held { .. } => self.wait_or_give_up(now),
        };
    }

    /// Reports whether removing a stale lock worked.
    pub fn on_removed(&mut self, now_ms: u64, removed: bool) {
        let now = self.clock.observe(now_ms);
        if !matches!(self.step, Step::AwaitRemoval) {
            return;
        }
        self.takeovers += 1;
        self.step = if removed {
            // Try again at once: the next poll says Acquire.
            Step::Start
        } else {
            Step::Finished(FlightAction::Alone {
                budget_ms: self.budget(now),
                warning: None,
            })
        };
    }

    /// Reports whether the record, read again, now answers the check.
    pub fn on_record(&mut self, now_ms: u64, answers: bool) {
        self.clock.observe(now_ms);
        if !matches!(self.step, Step::AwaitRecord) {
            return;
        }
        self.step = if answers {
            Step::Finished(FlightAction::UseRecord)
        } else {
            // The holder may be gone without a record (a denial is never
            // cached): try for the lock again.
            Step::Start
        };
    }

    fn is_stale(&self, age_ms: u64, holder: Holder) -> bool {
        match holder {
            Holder::Dead | Holder::Invalid => true,
            Holder::Alive | Holder::Unknown => age_ms > self.stale_after_ms,
        }
    }

    fn wait_or_give_up(&mut self, now: u64) -> Step {
        let give_up_at = self.deadline_ms.saturating_sub(self.reserve_ms);
        if now >= give_up_at {
            return Step::Finished(FlightAction::Alone {
                budget_ms: self.budget(now),
                warning: Some(format!(
                    "Another step of this job has been checking permissions for {} and has no verdict yet; this step checks on its own.",
                    seconds(now - self.started_ms)
                )),
            });
        }
        // Equal jitter on a growing interval: half fixed, half drawn, so
        // waiting processes do not look in lockstep.
        let half = self.look_ms / 2;
        let wait = half + self.random.between(0, self.look_ms - half);
        self.look_ms = (self.look_ms.saturating_mul(3) / 2).min(MAX_LOOK_MS);
        Step::Waiting {
            until_ms: now.saturating_add(wait).min(give_up_at),
        }
    }

    /// What is left of the deadline, but never less than the reserve.
    fn budget(&self, now: u64) -> u64 {
        self.deadline_ms
            .saturating_sub(now)
            .max(self.reserve_ms)
            .max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    const T0: u64 = 1_792_548_926_000;

    fn settings() -> Settings {
        let mut s = Settings::new();
        s.seed = Some(7);
        s
    }

    fn alone(budget_ms: u64) -> FlightAction {
        FlightAction::Alone {
            budget_ms,
            warning: None,
        }
    }

    fn held(age_ms: u64, holder: Holder) -> LockAttempt {
        LockAttempt::Held { age_ms, holder }
    }

    /// Polls until the machine asks for something other than waiting;
    /// returns that action and the time.
    fn next(flight: &mut SingleFlight, mut now: u64) -> (FlightAction, u64) {
        loop {
            match flight.poll(now) {
                FlightAction::Wait { until_ms } => {
                    assert!(until_ms > now, "wait until {until_ms} at {now}");
                    now = until_ms;
                }
                other => return (other, now),
            }
        }
    }

    #[test]
    fn first_process_leads_with_the_whole_deadline() {
        let mut f = SingleFlight::new(&settings(), T0);
        assert_eq!(f.poll(T0), FlightAction::Acquire);
        f.on_lock(T0, LockAttempt::Acquired);
        assert_eq!(f.poll(T0), FlightAction::Lead { budget_ms: 90_000 });
        assert_eq!(f.poll(T0 + 5), FlightAction::Lead { budget_ms: 90_000 });
    }

    #[test]
    fn off_means_alone_at_once_with_no_file_work() {
        let mut s = settings();
        s.single_flight = false;
        let mut f = SingleFlight::new(&s, T0);
        assert_eq!(f.poll(T0), alone(90_000));
    }

    #[test]
    fn no_waiting_when_no_record_could_answer() {
        let mut no_ttl = settings();
        no_ttl.cache.ttl = Duration::ZERO;
        let mut no_cache = settings();
        no_cache.cache_enabled = false;
        for s in [no_ttl, no_cache] {
            let mut f = SingleFlight::new(&s, T0);
            assert_eq!(f.poll(T0), alone(90_000));
        }
    }

    #[test]
    fn a_lock_that_cannot_be_made_never_blocks() {
        let mut f = SingleFlight::new(&settings(), T0);
        assert_eq!(f.poll(T0), FlightAction::Acquire);
        f.on_lock(T0 + 3, LockAttempt::Unavailable);
        assert_eq!(f.poll(T0 + 3), alone(89_997));
    }

    #[test]
    fn a_follower_looks_again_and_uses_the_leaders_record() {
        let mut f = SingleFlight::new(&settings(), T0);
        assert_eq!(f.poll(T0), FlightAction::Acquire);
        f.on_lock(T0, held(10, Holder::Alive));
        let (action, at) = next(&mut f, T0);
        assert_eq!(action, FlightAction::Reread);
        // The first look comes between half and all of FIRST_LOOK_MS.
        assert!(
            (T0 + FIRST_LOOK_MS / 2..=T0 + FIRST_LOOK_MS).contains(&at),
            "{at}"
        );
        f.on_record(at, false);
        assert_eq!(f.poll(at), FlightAction::Acquire);
        f.on_lock(at, held(40, Holder::Alive));
        let (action, at) = next(&mut f, at);
        assert_eq!(action, FlightAction::Reread);
        f.on_record(at, true);
        assert_eq!(f.poll(at), FlightAction::UseRecord);
    }

    #[test]
    fn looks_grow_to_the_cap_and_stay_jittered() {
        let mut f = SingleFlight::new(&settings(), T0);
        let mut now = T0;
        let mut gaps = Vec::new();
        for _ in 0..40 {
            assert_eq!(f.poll(now), FlightAction::Acquire);
            f.on_lock(now, held(1_000, Holder::Alive));
            let (action, at) = next(&mut f, now);
            assert_eq!(action, FlightAction::Reread);
            gaps.push(at - now);
            f.on_record(at, false);
            now = at;
        }
        assert!(
            gaps.iter()
                .all(|&g| (FIRST_LOOK_MS / 2..=MAX_LOOK_MS).contains(&g)),
            "{gaps:?}"
        );
        let late = &gaps[20..];
        assert!(late.iter().all(|&g| g >= MAX_LOOK_MS / 2), "{late:?}");
        let distinct: std::collections::BTreeSet<_> = late.iter().collect();
        assert!(distinct.len() > 3, "looks are not jittered: {late:?}");
    }

    #[test]
    fn a_follower_stops_waiting_with_the_reserve_left() {
        let s = settings();
        let reserve = SingleFlight::reserve_ms(&s);
        assert_eq!(
            reserve, 9_000,
            "90 s deadline: a tenth, below the 10 s timeout"
        );
        let mut f = SingleFlight::new(&s, T0);
        let mut now = T0;
        let mut looks = 0;
        let action = loop {
            match f.poll(now) {
                FlightAction::Acquire => f.on_lock(now, held(now - T0 + 100, Holder::Alive)),
                FlightAction::Wait { until_ms } => now = until_ms,
                FlightAction::Reread => {
                    looks += 1;
                    f.on_record(now, false)
                }
                other => break other,
            }
            assert!(looks < 2_000, "never stopped waiting");
        };
        assert_eq!(
            now,
            T0 + 90_000 - reserve,
            "waited until the deadline less the reserve"
        );
        match action {
            FlightAction::Alone {
                budget_ms,
                warning: Some(w),
            } => {
                assert_eq!(budget_ms, reserve);
                assert!(w.contains("Another step of this job"), "{w}");
                assert!(w.contains("81.0 s"), "{w}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn dead_or_invalid_holders_are_taken_over_at_once() {
        for holder in [Holder::Dead, Holder::Invalid] {
            let mut f = SingleFlight::new(&settings(), T0);
            assert_eq!(f.poll(T0), FlightAction::Acquire);
            f.on_lock(T0, held(0, holder));
            assert_eq!(f.poll(T0), FlightAction::RemoveStale, "{holder:?}");
            f.on_removed(T0 + 1, true);
            assert_eq!(f.poll(T0 + 1), FlightAction::Acquire);
            f.on_lock(T0 + 1, LockAttempt::Acquired);
            assert_eq!(f.poll(T0 + 1), FlightAction::Lead { budget_ms: 89_999 });
        }
    }

    #[test]
    fn a_live_holder_is_stale_only_past_the_longest_check() {
        let s = settings();
        let limit = 90_000 + 10_000 + STALE_MARGIN_MS;
        for holder in [Holder::Alive, Holder::Unknown] {
            let mut f = SingleFlight::new(&s, T0);
            assert_eq!(f.stale_after_ms(), limit);
            assert_eq!(f.poll(T0), FlightAction::Acquire);
            f.on_lock(T0, held(limit, holder));
            assert!(
                matches!(f.poll(T0), FlightAction::Wait { .. }),
                "{holder:?} at the limit"
            );
            let mut f = SingleFlight::new(&s, T0);
            assert_eq!(f.poll(T0), FlightAction::Acquire);
            f.on_lock(T0, held(limit + 1, holder));
            assert_eq!(
                f.poll(T0),
                FlightAction::RemoveStale,
                "{holder:?} past the limit"
            );
        }
    }

    #[test]
    fn takeovers_are_bounded_and_a_failed_removal_means_alone() {
        let mut f = SingleFlight::new(&settings(), T0);
        for _ in 0..MAX_TAKEOVERS {
            assert_eq!(f.poll(T0), FlightAction::Acquire);
            f.on_lock(T0, held(0, Holder::Dead));
            assert_eq!(f.poll(T0), FlightAction::RemoveStale);
            f.on_removed(T0, true);
        }
        assert_eq!(f.poll(T0), FlightAction::Acquire);
        f.on_lock(T0, held(0, Holder::Dead));
        match f.poll(T0) {
            FlightAction::Alone {
                warning: Some(w), ..
            } => assert!(w.contains("stale 3 times"), "{w}"),
            other => panic!("{other:?}"),
        }

        let mut f = SingleFlight::new(&settings(), T0);
        assert_eq!(f.poll(T0), FlightAction::Acquire);
        f.on_lock(T0, held(0, Holder::Invalid));
        assert_eq!(f.poll(T0), FlightAction::RemoveStale);
        f.on_removed(T0 + 2, false);
        assert_eq!(f.poll(T0 + 2), alone(89_998));
    }

    #[test]
    fn a_late_leader_gets_at_least_the_reserve() {
        let mut f = SingleFlight::new(&settings(), T0);
        assert_eq!(f.poll(T0), FlightAction::Acquire);
        // A report long after the start (a process paused by the OS).
        f.on_lock(T0 + 200_000, LockAttempt::Acquired);
        assert_eq!(
            f.poll(T0 + 200_000),
            FlightAction::Lead { budget_ms: 9_000 }
        );
    }

    #[test]
    fn reports_out_of_turn_change_nothing() {
        let mut f = SingleFlight::new(&settings(), T0);
        f.on_record(T0, true);
        f.on_removed(T0, true);
        assert_eq!(f.poll(T0), FlightAction::Acquire);
        f.on_record(T0, true);
        assert_eq!(
            f.poll(T0),
            FlightAction::Acquire,
            "asked again until reported"
        );
        f.on_lock(T0, LockAttempt::Acquired);
        f.on_lock(T0, LockAttempt::Unavailable);
        assert_eq!(f.poll(T0), FlightAction::Lead { budget_ms: 90_000 });
    }

    #[test]
    fn time_never_runs_backwards() {
        let mut f = SingleFlight::new(&settings(), T0);
        assert_eq!(f.poll(T0), FlightAction::Acquire);
        f.on_lock(T0 + 1_000, held(5, Holder::Alive));
        // A clock that jumps back does not shorten or lengthen the wait.
        let FlightAction::Wait { until_ms } = f.poll(T0) else {
            panic!("expected a wait");
        };
        assert!(until_ms > T0 + 1_000);
    }
}

//! Backoff and jitter: how long to wait before the next attempt.
//!
//! Exponential backoff `min(cap, base * factor^n)` for the n-th retry
//! (n = 0 for the wait before the second attempt), with one of the jitter
//! kinds from Marc Brooker, "Exponential Backoff and Jitter" (AWS
//! Architecture Blog, 2015):
//!
//! | kind | delay |
//! | --- | --- |
//! | `none` | `e = min(cap, base * factor^n)` |
//! | `equal` | `e/2 + random(0, e/2)` |
//! | `full` | `random(0, e)` |
//! | `decorrelated` | `min(cap, random(base, previous * 3))`, previous starts at base |
//!
//! Every delay is clamped to the cap after the jitter is applied (a cap that
//! jitter can exceed is not a cap). A [`Schedule`] also enforces the attempt
//! limit and the overall deadline: it never returns a delay that would start
//! the next attempt at or after the deadline.

use std::time::Duration;

use crate::millis;
use crate::random::RandomSource;

/// Room left for the final attempt of a schedule, before its deadline (see
/// [`Schedule::next_delay`]).
pub const FINAL_WINDOW: Duration = Duration::from_secs(1);

/// How delays are randomized. See the module docs for the formulas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Jitter {
    /// No randomness: every client waits exactly the same.
    None,
    /// Half the exponential delay fixed, half random.
    Equal,
    /// Uniform between zero and the exponential delay.
    Full,
    /// Uniform between the base and three times the previous delay.
    Decorrelated,
}

impl Jitter {
    /// Every kind, in the order the docs list them.
    pub const ALL: [Jitter; 4] = [
        Jitter::None,
        Jitter::Equal,
        Jitter::Full,
        Jitter::Decorrelated,
    ];

    /// The name used in settings and tables.
    pub const fn name(self) -> &'static str {
        match self {
            Jitter::None => "none",
            Jitter::Equal => "equal",
            Jitter::Full => "full",
            Jitter::Decorrelated => "decorrelated",
        }
    }

    /// Parses a name as written in settings (`none`, `equal`, `full`,
    /// `decorrelated`; case-insensitive).
    pub fn from_name(name: &str) -> Option<Jitter> {
        Jitter::ALL
            .into_iter()
            .find(|j| j.name().eq_ignore_ascii_case(name.trim()))
    }
}

/// The shape of a backoff: a small `Copy` value.
///
/// # Default
/// base 1 s, factor 2, cap 8 s, at most 20 attempts, deadline 90 s, equal
/// jitter: delays 1, 2, 4, 8, 8, ... s before jitter, each between half and
/// all of that after it.
///
/// Chosen by the incident replay (`cargo run --release --example replay --
/// --sweep`, bench/results/replay.md): the apiserver's peak load after
/// recovery was about 3x lower with equal jitter than with full jitter
/// (waiting checks retry every 6 s on average instead of 4 s), for the same
/// time from recovery to verdict. With full jitter the mean delay at the cap
/// is 4 s, so before the last attempt was held (below) the attempt limit
/// ended long stalls early: full jitter survived 55 s, equal jitter 85 s. 10 attempts (DESIGN.md's starting
/// point) cover as little as 17 s with full jitter, less than the
/// incident's 25 s stall; with equal jitter 20 attempts span at least 67 s.
/// The last attempt the limit allows is kept for the deadline's final
/// window (`last_attempt_at_deadline`), so a check that announced "retrying
/// for up to 90 s" really tries until then, whatever the jitter drew.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    /// The first delay before jitter.
    pub base: Duration,
    /// Growth per retry (>= 1).
    pub factor: f64,
    /// No delay is longer than this, jitter included (but for the held last
    /// attempt, see `last_attempt_at_deadline`).
    pub max_delay: Duration,
    /// Attempts in all, the first one included (>= 1).
    pub max_attempts: u32,
    /// No attempt starts at or after this much time from the first.
    pub deadline: Duration,
    /// The jitter kind.
    pub jitter: Jitter,
    /// When true, the last attempt the limit allows starts at the
    /// beginning of the deadline's final window, not earlier: the attempt
    /// limit bounds the load, the deadline bounds the time, and a check
    /// never gives up before the time it announced. Off only to model other
    /// designs (the seed PRs), whose deadline is not a budget.
    pub last_attempt_at_deadline: bool,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff::new()
    }
}

impl Backoff {
    /// The defaults (see `# Default`).
    pub const fn new() -> Self {
        Backoff {
            base: Duration::from_secs(1),
            factor: 2.0,
            max_delay: Duration::from_secs(8),
            max_attempts: 20,
            deadline: Duration::from_secs(90),
            jitter: Jitter::Equal,
            last_attempt_at_deadline: true,
        }
    }

    /// Sets the first delay.
    pub const fn with_base(mut self, base: Duration) -> Self {
        self.base = base;
        self
    }
    /// Sets the growth factor.
    pub const fn with_factor(mut self, factor: f64) -> Self {
        self.factor = factor;
        self
    }
    /// Sets the cap on any one delay.
    pub const fn with_max_delay(mut self, max_delay: Duration) -> Self {
        self.max_delay = max_delay;
        self
    }
    /// Sets the number of attempts, the first included.
    pub const fn with_max_attempts(mut self, max_attempts: u32) -> Self {
        self.max_attempts = max_attempts;
        self
    }
    /// Sets the overall deadline.
    pub const fn with_deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }
    /// Sets the jitter kind.
    pub const fn with_jitter(mut self, jitter: Jitter) -> Self {
        self.jitter = jitter;
        self
    }
    /// Sets whether the last attempt is kept for the deadline's final window.
    pub const fn with_last_attempt_at_deadline(mut self, hold: bool) -> Self {
        self.last_attempt_at_deadline = hold;
        self
    }

    /// The exponential delay before jitter for retry `n` (0-based), capped.
    pub fn exponential(&self, n: u32) -> Duration {
        // Through u64: a u128 -> f64 conversion is a compiler-runtime call
        // in the `.wasm`; settings cap every duration far below 2^64 ms.
        let cap_ms = millis(self.max_delay) as f64;
        let ms = millis(self.base) as f64 * self.factor.max(1.0).powi(n.min(1024) as i32);
        Duration::from_millis(ms.min(cap_ms).max(0.0) as u64)
    }
}

/// One probe's retry schedule: the backoff plus where it is.
#[derive(Debug, Clone)]
pub struct Schedule {
    backoff: Backoff,
    /// Attempts started so far.
    attempts: u32,
    /// The previous delay, for decorrelated jitter.
    previous: Duration,
}

impl Schedule {
    /// A schedule whose first attempt is about to start (counted already).
    pub fn new(backoff: Backoff) -> Self {
        Schedule {
            backoff,
            attempts: 1,
            previous: backoff.base,
        }
    }

    /// Attempts started so far, the first included.
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// The wait before the next attempt, given the time elapsed since the
    /// first attempt started; `None` when the attempt limit is reached or no
    /// attempt can start before the deadline. Counts the attempt when it
    /// returns `Some`.
    ///
    /// When the backoff would start the next attempt inside the last
    /// [`FINAL_WINDOW`] before the deadline, or past it, the wait is cut so
    /// that one final attempt starts at the beginning of that window: a
    /// check does not give up up to a whole capped delay (8 s) before its
    /// deadline, and still ends by it.
    pub fn next_delay(&mut self, elapsed: Duration, random: &mut RandomSource) -> Option<Duration> {
        let delay = self.own_delay(elapsed, random)?;
        self.admit(elapsed, delay)
    }

    /// The schedule's own wait before the next attempt (see
    /// [`Schedule::next_delay`]), without counting it.
    fn own_delay(&self, elapsed: Duration, random: &mut RandomSource) -> Option<Duration> {
        if self.attempts >= self.backoff.max_attempts {
            return None;
        }
        let latest_start = self.latest_start();
        if elapsed >= latest_start {
            return None;
        }
        let last = self.attempts + 1 == self.backoff.max_attempts;
        if last && self.backoff.last_attempt_at_deadline {
            return Some(latest_start - elapsed);
        }
        let delay = self.jittered(random);
        if elapsed.saturating_add(delay) >= latest_start {
            return Some(latest_start - elapsed);
        }
        Some(delay)
    }

    /// The last moment an attempt may start: the deadline less the final
    /// window (a tenth of the deadline when that is shorter).
    fn latest_start(&self) -> Duration {
        let deadline = self.backoff.deadline;
        deadline.saturating_sub(FINAL_WINDOW.min(deadline / 10))
    }

    /// Like [`Schedule::next_delay`], but the server said how long to wait
    /// (`Retry-After`, server pushback as in gRPC's retry design): its wait
    /// may lengthen the schedule's own delay, never shorten it, still within
    /// the attempt limit and deadline. Unless jitter is `none`, up to half
    /// the server's wait again is added at random: never sooner than the
    /// server asked, but a fleet told "retry after 1 s" does not come back
    /// in the same millisecond.
    pub fn next_delay_after_pushback(
        &mut self,
        elapsed: Duration,
        pushback: Duration,
        random: &mut RandomSource,
    ) -> Option<Duration> {
        let own = self.own_delay(elapsed, random)?;
        let ms = millis(pushback);
        let spread = match self.backoff.jitter {
            Jitter::None => 0,
            _ => random.between(0, ms / 2),
        };
        let asked = Duration::from_millis(ms.saturating_add(spread));
        if asked <= own {
            return self.admit(elapsed, own);
        }
        if elapsed.saturating_add(asked) >= self.backoff.deadline {
            return None;
        }
        self.admit(elapsed, asked)
    }

    /// Every delay of a schedule whose attempts all fail at once: the
    /// longest the backoff can wait, for tables and docs.
    pub fn preview(backoff: Backoff, random: &mut RandomSource) -> Vec<Duration> {
        let mut schedule = Schedule::new(backoff);
        let mut elapsed = Duration::ZERO;
        let mut out = Vec::new();
        while let Some(delay) = schedule.next_delay(elapsed, random) {
            elapsed += delay;
            out.push(delay);
        }
        out
    }

    fn admit(&mut self, elapsed: Duration, delay: Duration) -> Option<Duration> {
        if elapsed.saturating_add(delay) >= self.backoff.deadline {
            return None;
        }
        self.attempts += 1;
        self.previous = delay;
        Some(delay)
    }

    fn jittered(&self, random: &mut RandomSource) -> Duration {
        let b = &self.backoff;
        let retry = self.attempts - 1;
        let exp = millis(b.exponential(retry));
        let ms = match b.jitter {
            Jitter::None => exp,
            Jitter::Full => random.between(0, exp),
            Jitter::Equal => exp / 2 + random.between(0, exp - exp / 2),
            Jitter::Decorrelated => {
                let base = millis(b.base);
                let high = millis(self.previous).saturating_mul(3).max(base);
                random.between(base, high)
            }
        };
        Duration::from_millis(ms).min(b.max_delay)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    /// Runs a schedule as if every attempt failed instantly.
    fn delays(backoff: Backoff, seed: u64) -> Vec<u64> {
        Schedule::preview(backoff, &mut RandomSource::seeded(seed))
            .into_iter()
            .map(|d| d.as_millis() as u64)
            .collect()
    }

    #[test]
    fn default_is_documented() {
        let b = Backoff::default();
        assert_eq!(b.base, ms(1000));
        assert_eq!(b.factor, 2.0);
        assert_eq!(b.max_delay, ms(8000));
        assert_eq!(b.max_attempts, 20);
        assert_eq!(b.deadline, ms(90_000));
        assert_eq!(b.jitter, Jitter::Equal);
        let plain = delays(b.with_jitter(Jitter::None), 0);
        // 1+2+4+8*10 = 87 s; the next 8 s would pass the 90 s deadline, so
        // the last wait is cut to 2 s: a final attempt at 89 s.
        assert_eq!(
            plain,
            [1000, 2000, 4000, 8000, 8000, 8000, 8000, 8000, 8000, 8000, 8000, 8000, 8000, 2000]
        );
    }

    /// Issue 10, bug 3: the attempt limit never ends a schedule before the
    /// deadline it announces. With equal jitter, 20 attempts span as little
    /// as 67.5 s; the last attempt is kept for the final window.
    #[test]
    fn the_default_schedule_covers_its_deadline_for_every_draw() {
        for seed in 0..2_000 {
            let d = delays(Backoff::default(), seed);
            assert!(d.len() <= 19, "seed {seed}: {} retries", d.len());
            let span: u64 = d.iter().sum();
            assert!(
                (89_000..90_000).contains(&span),
                "seed {seed}: the last attempt starts at {span} ms: {d:?}"
            );
        }
    }

    #[test]
    fn a_short_pushback_never_shortens_the_schedule() {
        let b = Backoff::new().with_jitter(Jitter::None);
        let mut s = Schedule::new(b);
        let r = &mut RandomSource::seeded(1);
        assert_eq!(
            s.next_delay_after_pushback(ms(0), ms(10), r),
            Some(ms(1_000))
        );
        assert_eq!(
            s.next_delay_after_pushback(ms(1_000), ms(0), r),
            Some(ms(2_000))
        );
        assert_eq!(
            s.next_delay_after_pushback(ms(3_000), ms(6_000), r),
            Some(ms(6_000))
        );
    }

    #[test]
    fn seed_64_schedule_is_reproduced() {
        // PR #64: 4 attempts, 3/6/12 s, no jitter.
        let b = Backoff::new()
            .with_base(ms(3000))
            .with_factor(2.0)
            .with_max_delay(ms(60_000))
            .with_max_attempts(4)
            .with_deadline(ms(600_000))
            .with_jitter(Jitter::None)
            .with_last_attempt_at_deadline(false);
        assert_eq!(delays(b, 0), [3000, 6000, 12_000]);
    }

    #[test]
    fn seed_68_schedule_is_reproduced_without_jitter() {
        // PR #68: 6 attempts, 1.5 s doubling, cap 8 s.
        let b = Backoff::new()
            .with_base(ms(1500))
            .with_max_delay(ms(8000))
            .with_max_attempts(6)
            .with_deadline(ms(600_000))
            .with_jitter(Jitter::None)
            .with_last_attempt_at_deadline(false);
        assert_eq!(delays(b, 0), [1500, 3000, 6000, 8000, 8000]);
    }

    #[test]
    fn deadline_cuts_the_last_wait_and_stops_the_schedule() {
        let b = Backoff::new()
            .with_jitter(Jitter::None)
            .with_max_attempts(100)
            .with_deadline(ms(10_000));
        // 1 + 2 + 4 = 7 s; the next 8 s would start at 15 s, past the
        // deadline: the wait is cut to 2 s so the final attempt starts at
        // 9 s, one FINAL_WINDOW before the deadline; then nothing more.
        assert_eq!(delays(b, 0), [1000, 2000, 4000, 2000]);
        // A tiny deadline keeps a tenth of itself as the final window.
        let tiny = Backoff::new()
            .with_jitter(Jitter::None)
            .with_base(ms(300))
            .with_deadline(ms(1_000));
        assert_eq!(delays(tiny, 0), [300, 600]);
    }

    #[test]
    fn pushback_replaces_backoff_within_limits() {
        let b = Backoff::new()
            .with_jitter(Jitter::None)
            .with_max_attempts(3)
            .with_deadline(ms(20_000));
        let mut s = Schedule::new(b);
        let r = &mut RandomSource::seeded(1);
        assert_eq!(
            s.next_delay_after_pushback(ms(0), ms(15_000), r),
            Some(ms(15_000))
        );
        assert_eq!(
            s.next_delay_after_pushback(ms(16_000), ms(5_000), r),
            None,
            "would start past the deadline"
        );
        // The third attempt is the last the limit allows: it is kept for
        // the final window (19 s), later than the server asked.
        assert_eq!(
            s.next_delay_after_pushback(ms(16_000), ms(1_000), r),
            Some(ms(3_000))
        );
        assert_eq!(s.attempts(), 3);
        assert_eq!(
            s.next_delay_after_pushback(ms(17_000), ms(1), r),
            None,
            "attempt limit"
        );
    }

    #[test]
    fn jittered_pushback_is_never_sooner_than_asked_and_spreads_a_fleet() {
        let mut seen = std::collections::BTreeSet::new();
        for seed in 0..50 {
            let mut s = Schedule::new(Backoff::new());
            let d = s
                .next_delay_after_pushback(ms(0), ms(1_000), &mut RandomSource::seeded(seed))
                .unwrap();
            assert!(d >= ms(1_000) && d <= ms(1_500), "{d:?}");
            seen.insert(d);
        }
        assert!(
            seen.len() > 25,
            "50 clients told 'after 1 s' spread over {} distinct times",
            seen.len()
        );
    }

    #[test]
    fn jitter_names_round_trip() {
        for j in Jitter::ALL {
            assert_eq!(Jitter::from_name(j.name()), Some(j));
        }
        assert_eq!(Jitter::from_name(" FULL "), Some(Jitter::Full));
        assert_eq!(Jitter::from_name("random"), None);
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod properties {
    use super::*;
    use proptest::prelude::*;

    fn backoffs() -> impl Strategy<Value = Backoff> {
        (
            1u64..5_000,
            prop_oneof![Just(1.0), Just(1.5), Just(2.0), Just(3.0)],
            1u64..60_000,
            1u32..30,
            1u64..300_000,
            prop_oneof![
                Just(Jitter::None),
                Just(Jitter::Equal),
                Just(Jitter::Full),
                Just(Jitter::Decorrelated)
            ],
        )
            .prop_map(|(base, factor, cap, attempts, deadline, jitter)| {
                Backoff::new()
                    .with_base(Duration::from_millis(base))
                    .with_factor(factor)
                    .with_max_delay(Duration::from_millis(cap))
                    .with_max_attempts(attempts)
                    .with_deadline(Duration::from_millis(deadline))
                    .with_jitter(jitter)
                    .with_last_attempt_at_deadline(attempts % 2 == 0)
            })
    }

    proptest! {
        #[test]
        fn delays_respect_bounds_cap_deadline_and_attempts(b in backoffs(), seed in any::<u64>()) {
            let mut schedule = Schedule::new(b);
            let mut random = RandomSource::seeded(seed);
            let mut elapsed = Duration::ZERO;
            let mut previous = b.base;
            let mut n = 0u32;
            let window = FINAL_WINDOW.min(b.deadline / 10);
            let latest_start = b.deadline.saturating_sub(window);
            while let Some(d) = schedule.next_delay(elapsed, &mut random) {
                let exp = b.exponential(n);
                if b.last_attempt_at_deadline && n + 2 == b.max_attempts {
                    // The last attempt the limit allows waits for the final
                    // window, however long that is: it is exempt from the cap.
                    prop_assert_eq!(elapsed + d, latest_start, "the held last attempt");
                    elapsed += d;
                    n += 1;
                    continue;
                }
                prop_assert!(d <= b.max_delay, "delay {d:?} over cap");
                prop_assert!(elapsed + d <= latest_start, "an attempt starts inside the final window");
                // The one wait cut short to fit the final attempt is exempt
                // from the jitter bounds below (it is shorter, never longer).
                let cut = elapsed + d == latest_start;
                match b.jitter {
                    _ if cut => prop_assert!(d <= exp.max(previous.saturating_mul(3)).min(b.max_delay)),
                    Jitter::None => prop_assert_eq!(d, exp),
                    Jitter::Full => prop_assert!(d <= exp),
                    Jitter::Equal => {
                        let half = Duration::from_millis(exp.as_millis() as u64 / 2);
                        prop_assert!(d >= half && d <= exp, "equal {d:?} not in [{half:?}, {exp:?}]");
                    }
                    Jitter::Decorrelated => {
                        let high = previous.saturating_mul(3).max(b.base);
                        prop_assert!(d >= b.base.min(b.max_delay) && d <= high.min(b.max_delay));
                    }
                }
                previous = d;
                elapsed += d;
                n += 1;
                prop_assert!(elapsed < b.deadline, "sum {elapsed:?} reached the deadline");
            }
            prop_assert!(n < b.max_attempts);
        }

        #[test]
        fn same_seed_same_schedule(b in backoffs(), seed in any::<u64>()) {
            let run = |seed| {
                let mut s = Schedule::new(b);
                let mut r = RandomSource::seeded(seed);
                let mut e = Duration::ZERO;
                let mut out = vec![];
                while let Some(d) = s.next_delay(e, &mut r) { e += d; out.push(d); }
                out
            };
            prop_assert_eq!(run(seed), run(seed));
        }
    }
}

//! Hedged requests: one attempt of a review, sent a second time when the
//! first copy has not answered after a delay (off by default).
//!
//! The idea is gRPC's hedging policy (gRFC A6) and Dean and Barroso's "The
//! Tail at Scale" (2013): when a request sits on a bad backend (here: an
//! endpoint rule that still points at a stale apiserver, so the connection
//! hangs), a second copy sent shortly after is likely to reach a good one.
//! Set near the healthy p95 latency, it costs about 5 % more requests.
//!
//! The rules (an [`Attempt`] holds them; [`crate::preflight`] applies them):
//! - an attempt whose request has had no answer for the hedge delay gets
//!   exactly one more request, with its own request number and timeout
//!   ([`MAX_COPIES`]); never once the request has failed or answered, and
//!   never when the delay reaches the request's own timeout (the timeout,
//!   which is capped by the deadline, fires first);
//! - the first answer wins; the other copy's answer, when it comes, is stale;
//! - a failure of one copy while the other is still out does not end the
//!   attempt: the other may still bring an answer (a denial, say). When the
//!   last copy fails, the attempt fails, with a fatal error if either copy's
//!   was fatal;
//! - hedges go only to reviews, which create nothing. Other calls
//!   (`retryK8sApiCall`, the wrapped clients) run on the call machine
//!   ([`crate::call`]), which never hedges: they may not be idempotent.
//!
//! A hedge does not count against the attempt limit, so turning hedging on
//! never shortens the ride-through; it does count as a request.

use crate::classify::{Class, ErrorFacts};
use crate::retry::{InFlight, Timer};

/// Copies of one attempt: the request and at most one hedge.
///
/// One is enough for the shape it is for: a share of connections hang on a
/// stale backend. If that share is `s`, an attempt with one hedge hangs with
/// probability `s^2` instead of `s` (a third becomes a ninth); a second
/// hedge would add as many requests again to win `s^3`. And if every
/// connection hangs, each extra copy is one more hung socket per check.
pub const MAX_COPIES: usize = 2;

/// An attempt in flight: the copies still out, each timing out when the
/// host abandons it; the first also holds the hedge's timer until a hedge
/// is sent or forgone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    copies: Vec<InFlight>,
    /// Requests sent for this attempt so far (1 or 2).
    sent: usize,
    /// A fatal failure of a copy while another was still out, with its
    /// class (each failure is classified once).
    held_fatal: Option<(ErrorFacts, Class)>,
    /// Retry-quota tokens this attempt took (its retry's and its hedge's).
    pub tokens_taken: u32,
}

/// What became of an attempt when one of its copies failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AfterFailure {
    /// Another copy is still out; the attempt goes on.
    StillOut,
    /// That was the last copy: the attempt failed with these facts and
    /// their class (the fatal ones, if a copy failed fatally before).
    Failed(ErrorFacts, Class),
}

impl Attempt {
    /// An attempt whose first request `request` starts at `now_ms` and times
    /// out at `timeout_at_ms`; with `hedge_after_ms`, a hedge is due that
    /// long after, if the request is still out then.
    pub fn start(
        request: u32,
        now_ms: u64,
        timeout_at_ms: u64,
        hedge_after_ms: Option<u64>,
    ) -> Self {
        let mut first = InFlight::new(request, now_ms, Some(timeout_at_ms));
        let hedge_at_ms = hedge_after_ms
            .filter(|&after| after > 0)
            .map(|after| now_ms.saturating_add(after))
            .filter(|&at| at < timeout_at_ms);
        if let Some(at) = hedge_at_ms {
            first.timers_mut().set(Timer::Hedge, at);
        }
        Attempt {
            copies: vec![first],
            sent: 1,
            held_fatal: None,
            tokens_taken: 0,
        }
    }

    /// True when request number `request` is a copy of this attempt that is
    /// still out (its answer is the attempt's answer).
    pub fn holds(&self, request: u32) -> bool {
        self.copies.iter().any(|c| c.request() == request)
    }

    /// Requests sent for this attempt (1, or 2 once hedged).
    pub fn sent(&self) -> usize {
        self.sent
    }

    /// When a hedge is due, if one is still to come.
    pub fn hedge_at(&self) -> Option<u64> {
        self.copies
            .iter()
            .find_map(|c| c.timers().get(Timer::Hedge))
    }

    /// True when a hedge is due at `now_ms` (and may be sent).
    pub fn hedge_due(&self, now_ms: u64) -> bool {
        self.copies
            .iter()
            .any(|c| c.timers().is_due(Timer::Hedge, now_ms))
    }

    /// Records the hedge `request`, sent now, abandoned at `timeout_at_ms`.
    /// Only a hedge still due goes out: the hedge's timer is the one hedge
    /// an attempt may have ([`MAX_COPIES`]).
    pub fn add_hedge(&mut self, request: u32, timeout_at_ms: u64) {
        // The check sends a hedge at the first poll from its due time; that
        // time stands for when it went out (nothing decides on it).
        let Some(due_ms) = self.hedge_at() else {
            return;
        };
        self.forgo_hedge();
        self.sent += 1;
        self.copies
            .push(InFlight::new(request, due_ms, Some(timeout_at_ms)));
    }

    /// No hedge for this attempt after all (the check is stopping, or the
    /// quota cannot pay for it).
    pub fn forgo_hedge(&mut self) {
        for copy in &mut self.copies {
            copy.timers_mut().clear(Timer::Hedge);
        }
    }

    /// When the check must next be polled for this attempt: the earliest
    /// timer of its copies (a timeout, or the hedge).
    pub fn next_timeout(&self) -> Option<u64> {
        self.copies.iter().filter_map(InFlight::next_timeout).min()
    }

    /// A copy that has timed out at `now_ms`, if any.
    pub fn timed_out(&self, now_ms: u64) -> Option<u32> {
        self.copies
            .iter()
            .find(|c| c.timed_out(now_ms))
            .map(InFlight::request)
    }

    /// Copy `request` failed with `facts`, which the classifier put in
    /// `class` (a fatal class: not worth a retry).
    pub fn fail(&mut self, request: u32, facts: &ErrorFacts, class: &Class) -> AfterFailure {
        let fatal = matches!(class, Class::Fatal { .. });
        self.copies.retain(|c| c.request() != request);
        if !self.copies.is_empty() {
            if fatal && self.held_fatal.is_none() {
                self.held_fatal = Some((facts.clone(), class.clone()));
            }
            return AfterFailure::StillOut;
        }
        match self.held_fatal.take() {
            Some((held, held_class)) if !fatal => AfterFailure::Failed(held, held_class),
            _ => AfterFailure::Failed(facts.clone(), class.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    fn refused() -> ErrorFacts {
        ErrorFacts {
            codes: vec!["ECONNREFUSED".into()],
            ..ErrorFacts::default()
        }
    }

    fn transient() -> Class {
        Class::Transient {
            why: "ECONNREFUSED".into(),
        }
    }

    #[test]
    fn the_hedge_is_due_exactly_after_the_delay_and_only_before_the_timeout() {
        let a = Attempt::start(1, 1_000, 11_000, Some(200));
        assert_eq!(a.hedge_at(), Some(1_200));
        assert!(!a.hedge_due(1_199));
        assert!(a.hedge_due(1_200));
        // Off, zero, or a delay that reaches the timeout: no hedge.
        assert_eq!(Attempt::start(1, 1_000, 11_000, None).hedge_at(), None);
        assert_eq!(Attempt::start(1, 1_000, 11_000, Some(0)).hedge_at(), None);
        assert_eq!(
            Attempt::start(1, 1_000, 11_000, Some(10_000)).hedge_at(),
            None
        );
        assert_eq!(
            Attempt::start(1, 1_000, 11_000, Some(9_999)).hedge_at(),
            Some(10_999)
        );
    }

    #[test]
    fn one_hedge_per_attempt() {
        let mut a = Attempt::start(3, 0, 10_000, Some(100));
        a.add_hedge(4, 10_100);
        assert_eq!(a.sent(), 2);
        assert_eq!(a.hedge_at(), None);
        a.add_hedge(5, 10_200);
        assert_eq!(a.sent(), MAX_COPIES);
        assert!(a.holds(3) && a.holds(4) && !a.holds(5));
    }

    #[test]
    fn a_failed_copy_leaves_the_other_out_and_the_last_failure_ends_the_attempt() {
        let mut a = Attempt::start(1, 0, 10_000, Some(100));
        a.add_hedge(2, 10_100);
        assert_eq!(a.fail(2, &refused(), &transient()), AfterFailure::StillOut);
        assert!(a.holds(1) && !a.holds(2));
        assert_eq!(a.next_timeout(), Some(10_000));
        assert_eq!(a.timed_out(9_999), None);
        assert_eq!(a.timed_out(10_000), Some(1));
        assert_eq!(
            a.fail(1, &refused(), &transient()),
            AfterFailure::Failed(refused(), transient())
        );
    }

    #[test]
    fn the_hedge_wakes_the_check_first_until_it_is_forgone() {
        let mut a = Attempt::start(1, 1_000, 11_000, Some(200));
        assert_eq!(a.next_timeout(), Some(1_200));
        a.forgo_hedge();
        assert_eq!(a.next_timeout(), Some(11_000));
        assert!(!a.hedge_due(5_000));
        // A forgone hedge is not sent later either.
        a.add_hedge(2, 12_000);
        assert_eq!(a.sent(), 1);
        assert!(!a.holds(2));
    }

    #[test]
    fn a_hedged_attempt_wakes_at_its_first_copys_timeout_then_the_hedges() {
        let mut a = Attempt::start(1, 0, 10_000, Some(100));
        a.add_hedge(2, 10_100);
        assert_eq!(a.hedge_at(), None);
        assert_eq!(a.next_timeout(), Some(10_000));
        assert_eq!(a.timed_out(10_000), Some(1));
        assert_eq!(a.fail(1, &refused(), &transient()), AfterFailure::StillOut);
        assert_eq!(a.next_timeout(), Some(10_100));
        assert_eq!(a.timed_out(10_099), None);
        assert_eq!(a.timed_out(10_100), Some(2));
    }

    #[test]
    fn a_fatal_copy_failure_is_kept_for_when_the_other_fails_too() {
        let fatal = ErrorFacts {
            status: Some(404),
            ..ErrorFacts::default()
        };
        let not_found = Class::Fatal {
            why: "HTTP 404".into(),
        };
        let mut a = Attempt::start(1, 0, 10_000, Some(100));
        a.add_hedge(2, 10_100);
        assert_eq!(a.fail(1, &fatal, &not_found), AfterFailure::StillOut);
        assert_eq!(
            a.fail(2, &refused(), &transient()),
            AfterFailure::Failed(fatal, not_found)
        );
    }
}

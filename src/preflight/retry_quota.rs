//! The retry quota: a token bucket that stops a check from retrying once
//! most of its requests fail (off by default).
//!
//! The shape is the AWS SDKs' "standard" retry mode, as documented: a
//! bucket of 500 tokens per client; a retry takes 5, a retry after a
//! timeout takes 10; an attempt that succeeds without a retry puts 1 back,
//! and a retry that succeeds gives back what it took. When the bucket cannot
//! pay for a retry, the error is returned instead of retried.
//!
//! What "a client" is here: every hook step is a fresh Node process, so a
//! bucket lives exactly as long as one check ([`crate::preflight`] holds
//! one per check); nothing is shared between steps, jobs or runners. The
//! costs are AWS's; the size is scaled to one check ([`SUGGESTED_TOKENS`]).
//!
//! Hedged requests ([`crate::preflight::hedge`]) are subject to the same quota, as in
//! gRPC's retry throttling: a hedge takes [`RETRY_COST`] and is not sent
//! when the bucket cannot pay for it.

use crate::classify::ErrorFacts;
use crate::text::contains;

/// What a retry takes from the bucket (AWS: 5).
pub const RETRY_COST: u32 = 5;

/// What a retry after a timeout takes (AWS: 10): a hung request held a
/// connection, and a server that hangs is likely to hang again.
pub const TIMEOUT_RETRY_COST: u32 = 10;

/// What an answer to a request that needed no retry puts back (AWS: 1).
pub const NO_RETRY_INCREMENT: u32 = 1;

/// The bucket size suggested for one check (`ACTIONS_RUNNER_PREFLIGHT_RETRY_QUOTA=100`),
/// a fifth of AWS's 500.
///
/// AWS's bucket serves a long-lived client that makes many calls; ours
/// serves one check. 100 tokens pay for 20 retries after refused
/// connections, or 10 after timeouts, which is what one review uses in a
/// whole 90 s deadline with the default backoff (at most 19 retries, and at
/// a 10 s timeout about 8). So the quota never cuts short the one rules
/// review of the fast path, and where 13 access reviews go out at once (no
/// rules review, an `incomplete` one as on EKS, or a refused one) the check
/// as a whole retries no more than one review alone would.
pub const SUGGESTED_TOKENS: u32 = 100;

/// A token bucket, full at the start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryQuota {
    capacity: u32,
    tokens: u32,
}

impl RetryQuota {
    /// A full bucket of `capacity` tokens.
    pub const fn new(capacity: u32) -> Self {
        RetryQuota {
            capacity,
            tokens: capacity,
        }
    }

    /// Tokens left.
    pub const fn tokens(&self) -> u32 {
        self.tokens
    }

    /// The size of the bucket.
    pub const fn capacity(&self) -> u32 {
        self.capacity
    }

    /// What retrying after this failure costs: [`TIMEOUT_RETRY_COST`] when
    /// the request timed out (our own timeout, or a timeout code from the
    /// client), else [`RETRY_COST`].
    pub fn cost_of(facts: &ErrorFacts) -> u32 {
        let timeout_code = facts
            .codes
            .iter()
            .any(|c| contains(c, "TIMEDOUT") || contains(c, "TIMEOUT"));
        if facts.timed_out || timeout_code {
            TIMEOUT_RETRY_COST
        } else {
            RETRY_COST
        }
    }

    /// Takes `cost` tokens if the bucket holds that many; else takes
    /// nothing and returns false.
    pub fn try_take(&mut self, cost: u32) -> bool {
        if self.tokens >= cost {
            self.tokens -= cost;
            true
        } else {
            false
        }
    }

    /// An attempt got an answer: puts back what it took (a retry's or a
    /// hedge's cost), or [`NO_RETRY_INCREMENT`] when it took nothing; never
    /// above the capacity.
    pub fn on_answer(&mut self, took: u32) {
        let back = if took == 0 { NO_RETRY_INCREMENT } else { took };
        self.tokens = self.tokens.saturating_add(back).min(self.capacity);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn a_retry_takes_five_and_one_after_a_timeout_ten() {
        let refused = ErrorFacts {
            codes: vec!["ECONNREFUSED".into()],
            ..ErrorFacts::default()
        };
        let ours = ErrorFacts {
            timed_out: true,
            ..ErrorFacts::default()
        };
        let undici = ErrorFacts {
            codes: vec!["UND_ERR_CONNECT_TIMEOUT".into()],
            ..ErrorFacts::default()
        };
        let etimedout = ErrorFacts {
            codes: vec!["ETIMEDOUT".into()],
            ..ErrorFacts::default()
        };
        let forbidden = ErrorFacts {
            status: Some(403),
            ..ErrorFacts::default()
        };
        assert_eq!(RetryQuota::cost_of(&refused), 5);
        assert_eq!(RetryQuota::cost_of(&forbidden), 5);
        assert_eq!(RetryQuota::cost_of(&ours), 10);
        assert_eq!(RetryQuota::cost_of(&undici), 10);
        assert_eq!(RetryQuota::cost_of(&etimedout), 10);
    }

    #[test]
    fn an_empty_bucket_refuses_and_takes_nothing() {
        let mut q = RetryQuota::new(12);
        assert!(q.try_take(5));
        assert!(q.try_take(5));
        assert_eq!(q.tokens(), 2);
        assert!(!q.try_take(5), "2 tokens do not pay for a retry");
        assert_eq!(q.tokens(), 2, "a refused take leaves the bucket as it was");
        assert!(!RetryQuota::new(4).try_take(5));
        assert!(RetryQuota::new(0).try_take(0));
    }

    #[test]
    fn answers_refund_what_they_took_or_one_and_never_overfill() {
        let mut q = RetryQuota::new(100);
        assert!(q.try_take(10));
        assert!(q.try_take(5));
        assert_eq!(q.tokens(), 85);
        q.on_answer(5);
        assert_eq!(
            q.tokens(),
            90,
            "a retry that got an answer gives back its cost"
        );
        q.on_answer(0);
        assert_eq!(q.tokens(), 91, "an answer that needed no retry puts back 1");
        for _ in 0..20 {
            q.on_answer(10);
        }
        assert_eq!(q.tokens(), 100, "never above the capacity");
        assert_eq!(q.capacity(), 100);
    }
}

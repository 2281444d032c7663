//! What a request returned ([`ProbeResult`]), what the machine did with it
//! ([`Accepted`], [`BadReport`]), and how an answer is read and applied.

use super::probe::{Probe, State};
use super::Preflight;
use crate::classify::{Class, ErrorFacts};
use crate::review_answer::{self, AccessAnswer, Malformed};
use crate::rules::RulesStatus;
use crate::text::{self, quoted};

/// What a request returned; on the wire `{type: 'accessBody', body}`,
/// `{type: 'rulesBody', body}` or `{type: 'failed', facts?}` (read by
/// [`ResultIn`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProbeResult {
    /// The review answered: `status.allowed`. For tests and the fuzzer
    /// only (the shim reports the body, [`ProbeResult::AccessBody`]).
    #[cfg(feature = "test-exports")]
    Reviewed {
        /// The API's verdict for this permission.
        allowed: bool,
        /// `status.reason`, if any (kept for the denial message).
        reason: Option<String>,
    },
    /// The rules review answered: its `status`. For tests and the fuzzer
    /// only (the shim reports the body, [`ProbeResult::RulesBody`]).
    #[cfg(feature = "test-exports")]
    RulesReviewed {
        /// The review's status.
        status: RulesStatus,
    },
    /// An access review answered (2xx): its body, as the server sent it.
    /// The core reads it ([`crate::review_answer`]); a body without a
    /// boolean `status.allowed` is a malformed answer.
    AccessBody {
        /// The response body.
        body: String,
    },
    /// The rules review answered (2xx): its body, as the server sent it. A
    /// body whose fields are not of their documented types proves nothing.
    RulesBody {
        /// The response body.
        body: String,
    },
    /// The request failed; the facts the shim saw.
    Failed {
        /// Normalized error facts.
        facts: ErrorFacts,
    },
}

/// What a result's `type` may be.
#[derive(serde::Deserialize)]
#[serde(variant_identifier, rename_all = "camelCase")]
enum ResultType {
    #[cfg(feature = "test-exports")]
    Reviewed,
    #[cfg(feature = "test-exports")]
    RulesReviewed,
    AccessBody,
    RulesBody,
    Failed,
}

impl<'de> serde::Deserialize<'de> for ProbeResult {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<ProbeResult, D::Error> {
        use serde::de::Error;
        let r = crate::protocol::ResultFields::<ResultType>::deserialize(d)?;
        let body = |b: Option<String>| b.ok_or_else(|| D::Error::missing_field("body"));
        Ok(match r.kind {
            #[cfg(feature = "test-exports")]
            ResultType::Reviewed => ProbeResult::Reviewed {
                allowed: r
                    .allowed
                    .ok_or_else(|| D::Error::missing_field("allowed"))?,
                reason: r.reason,
            },
            #[cfg(feature = "test-exports")]
            ResultType::RulesReviewed => ProbeResult::RulesReviewed {
                status: r.status.unwrap_or_default(),
            },
            ResultType::AccessBody => ProbeResult::AccessBody {
                body: body(r.body)?,
            },
            ResultType::RulesBody => ProbeResult::RulesBody {
                body: body(r.body)?,
            },
            ResultType::Failed => ProbeResult::Failed {
                facts: r.facts.unwrap_or_default(),
            },
        })
    }
}

pub use crate::protocol::Accepted;

pub use crate::protocol::BadReport;

/// How many answers `allowed: false` with an `evaluationError` (and no
/// outright `denied`) one permission may get before they count as a denial.
/// Such an answer means no authorizer allowed the request and one of them
/// failed: a webhook that is down (transient, often during the same
/// control-plane trouble this package rides through), or RBAC finding a
/// binding to a missing role (permanent, and a real denial). A few quick
/// retries tell the two apart without holding a real denial for the whole
/// deadline; the denial then quotes the API's error.
pub const EVALUATION_ERROR_ANSWERS: u32 = 3;

/// What a result says, once read (see [`Preflight::on_result`]).
pub(super) enum Answer {
    Failed(ErrorFacts),
    Access(AccessAnswer),
    Rules(RulesStatus),
    Malformed(Malformed),
}

impl Answer {
    /// Reads `result` as an answer for `probe`; `None` when it is of the
    /// wrong kind for that probe's request.
    pub(super) fn read(probe: &Probe, result: ProbeResult) -> Option<Answer> {
        Some(match (probe, result) {
            (_, ProbeResult::Failed { facts }) => Answer::Failed(facts),
            #[cfg(feature = "test-exports")]
            (Probe::Access(_), ProbeResult::Reviewed { allowed, reason }) => {
                Answer::Access(AccessAnswer {
                    allowed,
                    denied: false,
                    reason,
                    evaluation_error: None,
                })
            }
            (Probe::Access(_), ProbeResult::AccessBody { body }) => {
                match review_answer::access_answer(&body) {
                    Ok(answer) => Answer::Access(answer),
                    Err(why) => Answer::Malformed(why),
                }
            }
            #[cfg(feature = "test-exports")]
            (Probe::Rules, ProbeResult::RulesReviewed { status }) => Answer::Rules(status),
            (Probe::Rules, ProbeResult::RulesBody { body }) => {
                match review_answer::rules_answer(&body) {
                    Ok(status) => Answer::Rules(status),
                    Err(why) => Answer::Malformed(why),
                }
            }
            _ => return None,
        })
    }
}

impl Preflight {
    /// An access review answered. `allowed: false` is a denial, unless no
    /// authorizer said no outright (`denied` is not true) and one of them
    /// failed (`evaluationError`): then the answer may be the failure's,
    /// not RBAC's. Such an answer is retried like a transient error, up to
    /// [`EVALUATION_ERROR_ANSWERS`] times; if it persists, it is a denial
    /// whose message quotes the API's error.
    pub(super) fn on_access_answer(&mut self, probe: usize, answer: AccessAnswer, now: u64) {
        if answer.allowed {
            self.probes[probe].state = State::Allowed;
            return;
        }
        if let (false, Some(error)) = (answer.denied, answer.evaluation_error) {
            let run = &mut self.probes[probe];
            run.evaluation_errors += 1;
            let error = text::clip(&error, 300);
            let evidence = format!(
                "the API answered allowed: false with an evaluation error: {}",
                quoted(&error)
            );
            run.evaluation_error = Some(error);
            if run.evaluation_errors < EVALUATION_ERROR_ANSWERS && !self.stopping {
                if !self.warned_evaluation_error {
                    self.warned_evaluation_error = true;
                    self.pending_warnings.push(format!(
                        "An authorizer failed while the Kubernetes API checked a permission ({evidence}); asking again before calling it a denial."
                    ));
                }
                self.trouble.last(evidence.clone());
                let class = Class::Transient { why: evidence };
                self.retry_later(probe, &ErrorFacts::default(), &class, now);
                return;
            }
        }
        self.probes[probe].state = State::Denied;
        self.stop();
    }

    /// An answer that is not of the documented shape: for the rules review,
    /// the fast path gives way; for an access review, the check ends.
    pub(super) fn on_malformed(&mut self, probe: usize, why: String, now: u64) {
        if matches!(self.probes[probe].probe, Probe::Rules) {
            self.malformed_rules(probe, &why, now);
        } else {
            self.probes[probe].state = State::Fatal(format!(
                "the SelfSubjectAccessReview's answer is malformed ({why})"
            ));
            self.stop();
        }
    }
}

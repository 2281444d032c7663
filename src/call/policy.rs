//! The rules per kind of operation: what one failed attempt does
//! ([`after_failure`]). Pure: the machine ([`super::Call`]) applies the
//! decision (schedule, deadline, messages).
//!
//! | kind | retried on | special answers |
//! | --- | --- | --- |
//! | read, list | what the check retries ([`crate::classify`]) | none |
//! | create | the same, while a retry cannot make a second object | 409 on a retry after an attempt that may have been applied: read back, returned only if ours ([`super::Ownership`]); a 409 otherwise is the caller's |
//! | delete | the same | 404 on a retry after an attempt that may have been applied: done |
//! | connect | a set-up whose connection was provably never made ([`FailureStage::setup_may_be_retried`]) | an open stream is never retried; an HTTP answer instead of the switch is the caller's (4xx) or may have started the command (5xx) |
//! | pass-through | never | none |

use super::operation::Operation;
use super::ownership::Ownership;
use crate::classify::Class;
use crate::failure_stage::FailureStage;

/// What one failed attempt does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Try again after the schedule's delay (a `Retry-After` honoured).
    Retry,
    /// Read the object back: the 409 may be an earlier attempt's success.
    ReadBack,
    /// The delete is done (404 after an earlier attempt may have deleted).
    Deleted,
    /// The API's answer to the caller: throw its error unchanged.
    Throw,
    /// Stop without another attempt, for this reason (the give-up
    /// message quotes it).
    Stop(&'static str),
}

/// Why a connection's set-up is not sent again.
pub const SETUP_MAY_HAVE_STARTED: &str = "not retried: the connection's set-up failed after its request may have reached the apiserver, so the command may have started, and a command must never run twice";

/// Why a create without a name is not sent again.
pub const UNNAMED_CREATE_MAY_HAVE_BEEN_MADE: &str = "not retried: the create gives no name (metadata.name) and may have been made, so sending it again could make a second object";

/// Whether an answer refused the request on purpose, and whose refusal
/// it was (see [`crate::api_status::Forbidden`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Not a refusal (a connection failure, a 5xx, a 404, ...).
    None,
    /// Admission refused what the request asked for (PodSecurity, a
    /// quota, a webhook): final.
    Admission,
    /// A 401 or an authorization 403: retried while the call's window for
    /// such answers is open (`window_over` false), then final.
    Authorization {
        /// The window has passed since the call's first such answer.
        window_over: bool,
    },
}

/// The facts of one failed attempt, as [`after_failure`] weighs them.
#[derive(Debug, Clone, Copy)]
pub struct Attempt<'a> {
    /// Which attempt of the call failed, from 1.
    pub number: u32,
    /// How far it got.
    pub stage: &'a FailureStage,
    /// What the classifier made of it.
    pub class: &'a Class,
    /// Whether any earlier attempt of this call may have been applied
    /// ([`FailureStage::may_have_applied`]).
    pub earlier_may_have_applied: bool,
    /// Whether the answer was a refusal, and whose.
    pub refusal: Refusal,
}

/// What a failed attempt of an `operation` does. `sent` is what a create
/// sent that marks its object (`None`: no body, or one that did not
/// parse).
pub fn after_failure(operation: Operation, sent: Option<&Ownership>, attempt: Attempt) -> Decision {
    let status = match attempt.stage {
        FailureStage::Answered { status } => Some(*status),
        _ => None,
    };
    let retry_if_transient = || match attempt.class {
        Class::Fatal { .. } => Decision::Throw,
        _ => Decision::Retry,
    };
    if operation == Operation::PassThrough {
        return Decision::Throw;
    }
    // The apiserver's deliberate answer is the caller's, as the plain
    // client gives it: at once for admission, after the window for
    // credentials and permissions.
    if matches!(
        attempt.refusal,
        Refusal::Admission | Refusal::Authorization { window_over: true }
    ) {
        return Decision::Throw;
    }
    match operation {
        Operation::PassThrough => Decision::Throw,
        Operation::Read => retry_if_transient(),
        Operation::Create => {
            if status == Some(409) {
                // Only a retry can meet its own earlier success, and only
                // when an earlier attempt may have been applied. Another
                // job's object is never adopted on a first attempt.
                let ours_possible = attempt.number > 1
                    && attempt.earlier_may_have_applied
                    && sent.is_some_and(Ownership::is_recognisable);
                return if ours_possible {
                    Decision::ReadBack
                } else {
                    Decision::Throw
                };
            }
            let unnamed = sent.is_none_or(|o| o.name.is_none());
            match retry_if_transient() {
                Decision::Retry if unnamed && attempt.stage.may_have_applied() => {
                    Decision::Stop(UNNAMED_CREATE_MAY_HAVE_BEEN_MADE)
                }
                other => other,
            }
        }
        Operation::Delete => {
            if status == Some(404) && attempt.number > 1 && attempt.earlier_may_have_applied {
                return Decision::Deleted;
            }
            retry_if_transient()
        }
        Operation::Connect => {
            if *attempt.stage == FailureStage::NotSent {
                // A header the client will not send fails every attempt
                // the same way: the plain client's error, at once.
                Decision::Throw
            } else if attempt.stage.setup_may_be_retried() {
                Decision::Retry
            } else if status.is_some_and(|s| s < 500) {
                // The apiserver refused the upgrade (400, 404, ...): its
                // answer, and no command ran.
                Decision::Throw
            } else if *attempt.stage == FailureStage::Unknown
                && matches!(attempt.class, Class::Fatal { .. })
            {
                // No transport failure we know of: there is nothing to
                // retry, so the plain client's error is the answer.
                Decision::Throw
            } else {
                Decision::Stop(SETUP_MAY_HAVE_STARTED)
            }
        }
    }
}

/// What a failed read-back (after a 409) does: retried when transient; a
/// fatal failure (a 404: the object is gone again) leaves the 409 the
/// caller's.
pub fn after_read_back_failure(class: &Class) -> Decision {
    match class {
        Class::Fatal { .. } => Decision::Throw,
        _ => Decision::Retry,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    fn transient() -> Class {
        Class::Transient { why: "x".into() }
    }
    fn fatal() -> Class {
        Class::Fatal { why: "x".into() }
    }
    fn sent() -> Ownership {
        Ownership::of_body(r#"{"metadata":{"name":"p","labels":{"a":"b"}}}"#).unwrap()
    }

    fn decide(
        op: Operation,
        number: u32,
        stage: FailureStage,
        class: Class,
        earlier: bool,
    ) -> Decision {
        let sent = sent();
        after_failure(
            op,
            Some(&sent),
            Attempt {
                number,
                stage: &stage,
                class: &class,
                earlier_may_have_applied: earlier,
                refusal: Refusal::None,
            },
        )
    }

    const CONFLICT: FailureStage = FailureStage::Answered { status: 409 };
    const GONE: FailureStage = FailureStage::Answered { status: 404 };

    #[test]
    fn a_409_is_read_back_only_on_a_retry_after_an_attempt_that_may_have_been_applied() {
        use Operation::Create;
        assert_eq!(
            decide(Create, 2, CONFLICT, fatal(), true),
            Decision::ReadBack
        );
        assert_eq!(decide(Create, 1, CONFLICT, fatal(), true), Decision::Throw);
        assert_eq!(decide(Create, 1, CONFLICT, fatal(), false), Decision::Throw);
        assert_eq!(decide(Create, 3, CONFLICT, fatal(), false), Decision::Throw);
        let unrecognisable = Ownership::of_body(r#"{"metadata":{"name":"p"}}"#).unwrap();
        for sent in [None, Some(&unrecognisable)] {
            let d = after_failure(
                Create,
                sent,
                Attempt {
                    number: 2,
                    stage: &CONFLICT,
                    class: &fatal(),
                    earlier_may_have_applied: true,
                    refusal: Refusal::None,
                },
            );
            assert_eq!(d, Decision::Throw);
        }
    }

    #[test]
    fn a_404_on_a_delete_is_done_only_on_a_retry_after_an_attempt_that_may_have_been_applied() {
        use Operation::Delete;
        assert_eq!(decide(Delete, 2, GONE, fatal(), true), Decision::Deleted);
        assert_eq!(decide(Delete, 1, GONE, fatal(), true), Decision::Throw);
        assert_eq!(decide(Delete, 2, GONE, fatal(), false), Decision::Throw);
        // A 404 is only "done" for a delete.
        assert_eq!(
            decide(Operation::Read, 2, GONE, fatal(), true),
            Decision::Throw
        );
        assert_eq!(
            decide(Operation::Create, 2, GONE, fatal(), true),
            Decision::Throw
        );
    }

    #[test]
    fn reads_creates_and_deletes_follow_the_classifier() {
        for op in [Operation::Read, Operation::Create, Operation::Delete] {
            let refused = FailureStage::NotConnected;
            assert_eq!(
                decide(op, 1, refused.clone(), transient(), false),
                Decision::Retry
            );
            assert_eq!(decide(op, 1, refused, fatal(), false), Decision::Throw);
        }
        assert_eq!(
            decide(
                Operation::PassThrough,
                1,
                FailureStage::NotConnected,
                transient(),
                false
            ),
            Decision::Throw
        );
    }

    #[test]
    fn an_unnamed_create_is_retried_only_while_no_attempt_may_have_been_made() {
        let unnamed =
            Ownership::of_body(r#"{"metadata":{"generateName":"p-","labels":{"a":"b"}}}"#).unwrap();
        let go = |stage: FailureStage| {
            after_failure(
                Operation::Create,
                Some(&unnamed),
                Attempt {
                    number: 1,
                    stage: &stage,
                    class: &transient(),
                    earlier_may_have_applied: false,
                    refusal: Refusal::None,
                },
            )
        };
        assert_eq!(go(FailureStage::NotConnected), Decision::Retry);
        assert_eq!(go(FailureStage::Answered { status: 429 }), Decision::Retry);
        assert_eq!(
            go(FailureStage::TimedOut),
            Decision::Stop(UNNAMED_CREATE_MAY_HAVE_BEEN_MADE)
        );
        assert_eq!(
            go(FailureStage::Answered { status: 503 }),
            Decision::Stop(UNNAMED_CREATE_MAY_HAVE_BEEN_MADE)
        );
    }

    #[test]
    fn a_connection_is_retried_only_when_the_command_never_started() {
        use Operation::Connect;
        // The class does not matter: the stage decides.
        assert_eq!(
            decide(Connect, 1, FailureStage::Dns, fatal(), false),
            Decision::Retry
        );
        assert_eq!(
            decide(Connect, 1, FailureStage::Tls, fatal(), false),
            Decision::Retry
        );
        // An answer instead of the switch proves nothing: a gateway may
        // have forwarded the upgrade first.
        assert_eq!(
            decide(
                Connect,
                1,
                FailureStage::Answered { status: 503 },
                transient(),
                false
            ),
            Decision::Stop(SETUP_MAY_HAVE_STARTED)
        );
        assert_eq!(
            decide(
                Connect,
                1,
                FailureStage::Answered { status: 401 },
                transient(),
                false
            ),
            Decision::Throw
        );
        assert_eq!(
            decide(Connect, 1, FailureStage::NotSent, fatal(), false),
            Decision::Throw
        );
        assert_eq!(
            decide(
                Connect,
                1,
                FailureStage::Answered { status: 404 },
                fatal(),
                false
            ),
            Decision::Throw
        );
        assert_eq!(
            decide(Connect, 1, FailureStage::TimedOut, transient(), false),
            Decision::Stop(SETUP_MAY_HAVE_STARTED)
        );
        assert_eq!(
            decide(Connect, 1, FailureStage::Unknown, transient(), false),
            Decision::Stop(SETUP_MAY_HAVE_STARTED)
        );
    }

    #[test]
    fn a_connection_error_that_is_no_transport_failure_is_the_plain_clients_own() {
        // Nothing in it says the network failed (no code, no status, no
        // message we know): the plain client throws it, and so do we, at
        // once, unchanged; never a retry, never a give-up of ours.
        assert_eq!(
            decide(Operation::Connect, 1, FailureStage::Unknown, fatal(), false),
            Decision::Throw
        );
    }

    #[test]
    fn a_refusal_is_final_at_once_for_admission_and_after_the_window_for_authorization() {
        for op in [
            Operation::Read,
            Operation::Create,
            Operation::Delete,
            Operation::Connect,
        ] {
            let go = |refusal| {
                after_failure(
                    op,
                    Some(&sent()),
                    Attempt {
                        number: 1,
                        stage: &FailureStage::Answered { status: 403 },
                        class: &transient(),
                        earlier_may_have_applied: false,
                        refusal,
                    },
                )
            };
            assert_eq!(go(Refusal::Admission), Decision::Throw, "{op:?}");
            assert_eq!(
                go(Refusal::Authorization { window_over: true }),
                Decision::Throw,
                "{op:?}"
            );
            // An exec's upgrade answered 401 or 403 is thrown at once: an
            // answer proves nothing about whether the command started.
            let within = match op {
                Operation::Connect => Decision::Throw,
                _ => Decision::Retry,
            };
            assert_eq!(
                go(Refusal::Authorization { window_over: false }),
                within,
                "{op:?}"
            );
        }
    }
}

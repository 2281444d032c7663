//! What the call machine asks the host to do ([`CallAction`]) and how a
//! call ends ([`CallOutcome`]).

use crate::classify::ErrorFacts;
use crate::protocol::Level;

/// What the host must do next. Poll again after each, but `Done`. On the
/// wire `{type: 'log', level, message}`, `{type: 'wait', untilMs}`, `{type:
/// 'done', outcome}`; `Send` and `ReadBack` are written by the boundary, in
/// the check's `send` shape.
#[must_use]
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum CallAction {
    /// Make the call now (the same method with the same arguments, for a
    /// create the same body), abandon it after `timeout_ms` if one is
    /// given, and report what happened under `request` (`on_success`,
    /// `on_failure`, or for a connection `on_stream_opened`,
    /// `on_setup_failed`). Keep what it returns: the outcome may ask for it.
    #[serde(skip)]
    Send {
        /// The report number, from 1, counting read-backs too.
        request: u32,
        /// Which attempt of the call this is, from 1.
        attempt: u32,
        /// Abort it after this long and report it as timed out (for a
        /// connection: abort the set-up, never an open stream); `None`
        /// for a call that passes through: no timeout of ours.
        timeout_ms: Option<u64>,
        /// For a connection: if its TCP (and TLS) connection is not made
        /// by then, abort it and report it with `on_failure_before_sending`
        /// (nothing reached the apiserver, so it may be sent again). A host
        /// that cannot see its connection ignores it.
        connect_timeout_ms: Option<u64>,
    },
    /// Read the object the create was for (the client's `read` method of
    /// the same resource: `method`), abandon it after `timeout_ms`, and
    /// report its body as JSON text with `on_read_back`, or its failure
    /// with `on_failure`, under `request`.
    #[serde(skip)]
    ReadBack {
        /// The report number.
        request: u32,
        /// The client method to call: the create's name with `read` for
        /// `create` (`createNamespacedPod` -> `readNamespacedPod`).
        method: String,
        /// The object's name.
        name: String,
        /// The namespace the create was made in, if any.
        namespace: Option<String>,
        /// Abort it after this long and report it as timed out.
        timeout_ms: u64,
    },
    /// Print this line at `level`, then poll again: a warning when the
    /// call starts failing, a plain line when it recovers, a debug line
    /// per attempt.
    Log {
        /// How to print it.
        level: Level,
        /// The text.
        message: String,
    },
    /// Nothing to do until `until_ms` (Unix epoch ms) or until the request
    /// in flight settles, whichever comes first; `None`: until it settles.
    Wait {
        /// When to poll again at the latest.
        until_ms: Option<u64>,
    },
    /// The call is over: abort anything still in flight (a late answer is
    /// `Stale`) and end the call as `outcome` says. Every later poll
    /// returns the same.
    Done {
        /// How the call ends.
        outcome: CallOutcome,
    },
}

/// How a call ends, for the host's wrapper: on the wire `{type: 'return'
/// | 'deleted' | 'throw', request}` or `{type: 'giveUp', message,
/// lastRequest}`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum CallOutcome {
    /// Resolve with what request `request` returned: its value, its open
    /// stream, or for a create the object read back (an earlier attempt
    /// made it).
    Return {
        /// The request whose result to return.
        request: u32,
    },
    /// The delete is done: request `request` got 404 after an earlier
    /// attempt may have deleted the object. Resolve with no value.
    Deleted {
        /// The request that got the 404.
        request: u32,
    },
    /// Reject with the error request `request` got, unchanged: it is the
    /// API's answer to the caller (a 404 on a read, a 409 on a first
    /// create, a 422, an exec the apiserver refused, a pass-through's
    /// error), as it would be without the wrapping.
    Throw {
        /// The request whose error to throw.
        request: u32,
    },
    /// Reject with a new error saying `message`: the call gave up (out of
    /// time or attempts, or a failure that may not be retried). The error
    /// of `last_request`, when the host has one, is its cause.
    GiveUp {
        /// Which call, for how long, the last error, and that the API
        /// failed, not the job.
        message: String,
        /// The last request that failed, if it reported an error.
        last_request: Option<u32>,
    },
}

/// What the host saw of one request, for [`Call::on_result`](super::Call::on_result);
/// on the wire `{type: 'succeeded'}`, `{type: 'readBack', body}`, `{type:
/// 'failed' | 'failedBeforeSending', facts?}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallResult {
    /// It succeeded (a connection: its stream opened).
    Succeeded,
    /// A read-back answered with this body, the object as JSON text.
    ReadBack {
        /// The response body.
        body: String,
    },
    /// It failed; what the host saw.
    Failed {
        /// The error facts.
        facts: ErrorFacts,
    },
    /// It failed before its connection was made (the host saw no TCP, or
    /// no TLS, connection before the error or its connect timeout): nothing
    /// reached the apiserver.
    FailedBeforeSending {
        /// The error facts.
        facts: ErrorFacts,
    },
}

/// What a call result's `type` may be.
#[derive(serde::Deserialize)]
#[serde(variant_identifier, rename_all = "camelCase")]
enum ResultType {
    Succeeded,
    ReadBack,
    Failed,
    FailedBeforeSending,
}

impl<'de> serde::Deserialize<'de> for CallResult {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<CallResult, D::Error> {
        use serde::de::Error;
        let r = crate::protocol::ResultFields::<ResultType>::deserialize(d)?;
        Ok(match r.kind {
            ResultType::Succeeded => CallResult::Succeeded,
            ResultType::ReadBack => CallResult::ReadBack {
                body: r.body.ok_or_else(|| D::Error::missing_field("body"))?,
            },
            ResultType::Failed => CallResult::Failed {
                facts: r.facts.unwrap_or_default(),
            },
            ResultType::FailedBeforeSending => CallResult::FailedBeforeSending {
                facts: r.facts.unwrap_or_default(),
            },
        })
    }
}

pub use crate::protocol::Accepted;

pub use crate::protocol::BadReport;

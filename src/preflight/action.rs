//! What the machine asks the caller to do ([`Action`]) and the requests it
//! sends ([`Request`]): the review bodies, exactly as the API expects them.

use super::probe::Probe;
use super::Outcome;
use crate::permission::Permission;
use crate::protocol::Level;
use serde::Serialize;

/// What the caller must do next.
#[must_use]
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Start this request now, abandon it after `timeout_ms`, and report
    /// its result with [`Preflight::on_result`](super::Preflight::on_result) (`probe`, `attempt`). Then
    /// poll again.
    Send {
        /// Which probe.
        probe: usize,
        /// Which request of that probe, from 1: its attempt number, or for
        /// a hedge ([`crate::preflight::hedge`]) a number of its own. Report the
        /// result under it.
        attempt: u32,
        /// What to send.
        request: Request,
        /// Abort the request after this long and report it as timed out.
        timeout_ms: u64,
    },
    /// Print this line at `level` (a warning to the job log; debug lines,
    /// one per attempt and one per check, shown when step debug logging
    /// is on), then poll again.
    Log {
        /// How to print it.
        level: Level,
        /// The text.
        message: String,
    },
    /// Nothing to do until `until_ms` (Unix epoch ms) or until a request
    /// settles, whichever comes first; then poll again.
    Wait {
        /// When to poll again at the latest.
        until_ms: u64,
    },
    /// The check is over. Abort anything still in flight; every later poll
    /// returns the same outcome.
    Done {
        /// What was decided.
        outcome: Outcome,
    },
}

/// The request a `Send` asks for; on the wire `{kind: 'accessReview' |
/// 'rulesReview', body}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "body", rename_all = "camelCase")]
pub enum Request {
    /// POST this SelfSubjectAccessReview; report `Reviewed`.
    AccessReview(AccessReview),
    /// POST this SelfSubjectRulesReview; report `RulesReviewed`.
    RulesReview(RulesReview),
}

/// A SelfSubjectRulesReview body, exactly as the API expects it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RulesReview {
    /// `authorization.k8s.io/v1`
    pub api_version: String,
    /// `SelfSubjectRulesReview`
    pub kind: String,
    /// What is asked.
    pub spec: RulesReviewSpec,
}

/// The spec of a [`RulesReview`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RulesReviewSpec {
    /// The namespace whose rules are asked for.
    pub namespace: String,
}

impl RulesReview {
    fn new(namespace: &str) -> Self {
        RulesReview {
            api_version: "authorization.k8s.io/v1".into(),
            kind: "SelfSubjectRulesReview".into(),
            spec: RulesReviewSpec {
                namespace: namespace.into(),
            },
        }
    }
}

/// A SelfSubjectAccessReview body, exactly as the API expects it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AccessReview {
    /// `authorization.k8s.io/v1`
    pub api_version: String,
    /// `SelfSubjectAccessReview`
    pub kind: String,
    /// What is asked.
    pub spec: AccessReviewSpec,
}

/// The spec of an [`AccessReview`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AccessReviewSpec {
    /// The permission asked about.
    pub resource_attributes: ResourceAttributes,
}

/// The resource attributes of an [`AccessReview`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ResourceAttributes {
    /// Namespace checked.
    pub namespace: String,
    /// API group; `""` for core.
    pub group: String,
    /// Resource.
    pub resource: String,
    /// Subresource, `""` for none.
    pub subresource: String,
    /// Verb.
    pub verb: String,
}

impl AccessReview {
    fn new(namespace: &str, p: &Permission) -> Self {
        AccessReview {
            api_version: "authorization.k8s.io/v1".into(),
            kind: "SelfSubjectAccessReview".into(),
            spec: AccessReviewSpec {
                resource_attributes: ResourceAttributes {
                    namespace: namespace.into(),
                    group: p.group.clone(),
                    resource: p.resource.clone(),
                    subresource: p.subresource.clone(),
                    verb: p.verb.clone(),
                },
            },
        }
    }
}

/// A fresh request body for `probe` (every request, hedges included, gets
/// its own).
pub(super) fn request_for(probe: &Probe, namespace: &str) -> Request {
    match probe {
        Probe::Access(p) => Request::AccessReview(AccessReview::new(namespace, p)),
        Probe::Rules => Request::RulesReview(RulesReview::new(namespace)),
    }
}

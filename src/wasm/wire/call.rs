//! The call machine's wire types: the spec of a call, what its requests
//! got, and the actions it asks for.

use super::*;
use crate::call::{CallAction, CallOutcome, CallResult, CallSpec, Operation};
use crate::text::quoted;

// ---- the call machine ------------------------------------------------------

/// `{method, namespace?, kind?, name?, body?, operation?, cluster?}`: one Kubernetes
/// call as the host describes it (see [`CallSpec`]); `body` is the JSON
/// text of a create's body, `operation` a kind's name (`read`, ...).
#[derive(Deserialize)]
pub(super) struct CallSpecIn {
    method: String,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    operation: Option<String>,
    #[serde(default)]
    cluster: Option<String>,
}

/// The kinds' names, for the message about one that is not.
pub(super) const OPERATIONS: &[&str] = &["read", "create", "delete", "connect", "pass-through"];

/// A call's description (see [`CallSpecIn`]).
pub fn call_spec(v: &JsValue) -> Result<CallSpec, Bad> {
    let s: CallSpecIn = read(v)?;
    let operation = match s.operation {
        None => None,
        Some(name) => Some(Operation::of_name(&name).ok_or_else(|| {
            Bad::new(format!(
                "{} (expected {})",
                quoted(&name),
                crate::bad_input::one_of(OPERATIONS)
            ))
            .at("operation")
        })?),
    };
    Ok(CallSpec {
        method: s.method,
        namespace: s.namespace,
        kind: s.kind,
        name: s.name,
        body: s.body,
        operation,
        cluster: s.cluster,
    })
}

/// `{type: 'response', probe, attempt?, result}`: what request `probe`
/// got; `result` is `{type: 'succeeded'}`, `{type: 'readBack', body}` or
/// `{type: 'failed', facts?}`.
#[derive(Deserialize)]
pub(super) struct CallFactIn {
    #[serde(rename = "type")]
    kind: String,
    probe: u32,
    result: CallResultIn,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) enum CallResultIn {
    Succeeded,
    ReadBack {
        body: String,
    },
    Failed {
        #[serde(default)]
        facts: Option<ErrorFactsIn>,
    },
    FailedBeforeSending {
        #[serde(default)]
        facts: Option<ErrorFactsIn>,
    },
}

/// The facts of one step of a call: `(request, result)` pairs.
pub fn call_facts(v: &JsValue) -> Result<Vec<(u32, CallResult)>, Bad> {
    let Some(list) = v.dyn_ref::<js_sys::Array>() else {
        return Err(Bad::new("expected an array".into()));
    };
    let mut facts = Vec::with_capacity(list.length() as usize);
    for (i, item) in list.iter().enumerate() {
        let f: CallFactIn = read(&item).map_err(|e| e.at_index(i))?;
        if f.kind != "response" {
            return Err(
                Bad::new(format!("{} (expected \"response\")", quoted(&f.kind)))
                    .at("type")
                    .at_index(i),
            );
        }
        let result = match f.result {
            CallResultIn::Succeeded => CallResult::Succeeded,
            CallResultIn::ReadBack { body } => CallResult::ReadBack { body },
            CallResultIn::Failed { facts } => CallResult::Failed {
                facts: facts.map(ErrorFacts::from).unwrap_or_default(),
            },
            CallResultIn::FailedBeforeSending { facts } => CallResult::FailedBeforeSending {
                facts: facts.map(ErrorFacts::from).unwrap_or_default(),
            },
        };
        facts.push((f.probe, result));
    }
    Ok(facts)
}

/// One action of a call machine, in the executor's shapes (those of
/// [`CheckActionOut`]): `send` (`probe` is the request's number, `request`
/// says what to send, `timeoutMs` null for no timeout of ours), `log`,
/// `wait` (`untilMs` null: until a request settles) and `done`.
#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct CallActionOut<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    probe: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    attempt: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    request: Option<CallRequestOut<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    timeout_ms: Option<Option<f64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    connect_timeout_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    level: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    until_ms: Option<Option<f64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    outcome: Option<CallOutcomeOut<'a>>,
}

/// `{kind: 'call'}` (the call itself, again) or `{kind: 'readBack',
/// method, name, namespace}`.
#[derive(Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum CallRequestOut<'a> {
    Call,
    ReadBack {
        method: &'a str,
        name: &'a str,
        namespace: Option<&'a str>,
    },
}

/// `{type: 'return' | 'deleted' | 'throw', request}` or `{type: 'giveUp',
/// message, lastRequest}`.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum CallOutcomeOut<'a> {
    Return {
        request: f64,
    },
    Deleted {
        request: f64,
    },
    Throw {
        request: f64,
    },
    GiveUp {
        message: &'a str,
        #[serde(rename = "lastRequest")]
        last_request: Option<f64>,
    },
}

impl<'a> From<&'a CallAction> for CallActionOut<'a> {
    fn from(a: &'a CallAction) -> Self {
        let out = |kind| CallActionOut {
            kind,
            ..Default::default()
        };
        let log = |level, message: &'a String| CallActionOut {
            level: Some(level),
            message: Some(message),
            ..out("log")
        };
        match a {
            CallAction::Send {
                request,
                attempt,
                timeout_ms,
                connect_timeout_ms,
            } => CallActionOut {
                probe: Some(f64::from(*request)),
                attempt: Some(f64::from(*attempt)),
                request: Some(CallRequestOut::Call),
                timeout_ms: Some(timeout_ms.map(|t| t as f64)),
                connect_timeout_ms: connect_timeout_ms.map(|t| t as f64),
                ..out("send")
            },
            CallAction::ReadBack {
                request,
                method,
                name,
                namespace,
                timeout_ms,
            } => CallActionOut {
                probe: Some(f64::from(*request)),
                attempt: Some(0.0),
                request: Some(CallRequestOut::ReadBack {
                    method,
                    name,
                    namespace: namespace.as_deref(),
                }),
                timeout_ms: Some(Some(*timeout_ms as f64)),
                ..out("send")
            },
            CallAction::Log { level, message } => log(level.name(), message),
            CallAction::Wait { until_ms } => CallActionOut {
                until_ms: Some(until_ms.map(|t| t as f64)),
                ..out("wait")
            },
            CallAction::Done { outcome } => CallActionOut {
                outcome: Some(match outcome {
                    CallOutcome::Return { request } => CallOutcomeOut::Return {
                        request: f64::from(*request),
                    },
                    CallOutcome::Deleted { request } => CallOutcomeOut::Deleted {
                        request: f64::from(*request),
                    },
                    CallOutcome::Throw { request } => CallOutcomeOut::Throw {
                        request: f64::from(*request),
                    },
                    CallOutcome::GiveUp {
                        message,
                        last_request,
                    } => CallOutcomeOut::GiveUp {
                        message,
                        last_request: last_request.map(f64::from),
                    },
                }),
                ..out("done")
            },
        }
    }
}

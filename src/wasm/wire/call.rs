//! The call machine's wire types: the spec of a call, what its requests
//! got, and the actions it asks for.

use super::*;
use crate::call::{CallAction, CallResult};
use crate::text::quoted;

/// `{type: 'response', probe, result}`: what request `probe` got.
#[derive(Deserialize)]
struct CallFactIn {
    #[serde(rename = "type")]
    kind: String,
    probe: u32,
    result: CallResult,
}

/// The facts of one step of a call: `(request, result)` pairs.
pub fn call_facts(v: &JsValue) -> Result<Vec<(u32, CallResult)>, Bad> {
    items(v, |item| {
        let f: CallFactIn = read(&item)?;
        if f.kind != "response" {
            let problem = format!("{} (expected \"response\")", quoted(&f.kind));
            return Err(Bad::new(problem).at("type"));
        }
        Ok((f.probe, f.result))
    })
}

/// A call's `send` or read-back, in the check's `send` shape: `probe` is
/// the request's number, `request` says what to send (`{kind: 'call'}`,
/// the call itself again, or `{kind: 'readBack', method, name,
/// namespace}`), `timeoutMs` null for no timeout of ours. The other actions
/// are written as they are ([`CallAction`]'s own shape).
pub fn call_action(a: &CallAction) -> JsValue {
    match a {
        CallAction::Send {
            request,
            attempt,
            timeout_ms,
            connect_timeout_ms,
        } => write(&SendOut {
            probe: *request,
            attempt: *attempt,
            request: CallRequestOut::Call,
            timeout_ms: *timeout_ms,
            connect_timeout_ms: *connect_timeout_ms,
        }),
        CallAction::ReadBack {
            request,
            method,
            name,
            namespace,
            timeout_ms,
        } => write(&SendOut {
            probe: *request,
            attempt: 0,
            request: CallRequestOut::ReadBack {
                method,
                name,
                namespace: namespace.as_deref(),
            },
            timeout_ms: Some(*timeout_ms),
            connect_timeout_ms: None,
        }),
        other => write(other),
    }
}

#[derive(Serialize)]
#[serde(tag = "type", rename = "send", rename_all = "camelCase")]
struct SendOut<'a> {
    probe: u32,
    attempt: u32,
    request: CallRequestOut<'a>,
    timeout_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    connect_timeout_ms: Option<u64>,
}

#[derive(Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
enum CallRequestOut<'a> {
    Call,
    ReadBack {
        method: &'a str,
        name: &'a str,
        namespace: Option<&'a str>,
    },
}

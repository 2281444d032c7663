//! A durable exec's wire shapes: the facts the host reports, the actions
//! it takes, and the caller's status in client-node's `V1Status` shapes.

use super::*;
use crate::classify::ErrorFacts;
use crate::durable::{Delivery, DurableAction, DurableFact, PodStep, UTILITIES};
use crate::protocol::Level;
use crate::text::quoted;

/// Every field a fact's `type` may have.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DurableFactIn {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    request: u32,
    #[serde(default)]
    exit_code: Option<f64>,
    #[serde(default)]
    stdout: String,
    #[serde(default)]
    why: String,
    #[serde(default)]
    facts: Option<ErrorFacts>,
    #[serde(default)]
    found: bool,
    #[serde(default)]
    phase: Option<String>,
    #[serde(default)]
    deleting: bool,
    #[serde(default)]
    signal: String,
}

/// The facts of one step of a durable run.
pub fn durable_facts(v: &JsValue) -> Result<Vec<DurableFact>, Bad> {
    items(v, |item| {
        let f: DurableFactIn = read(&item)?;
        let request = f.request;
        Ok(match f.kind.as_str() {
            "opened" => DurableFact::Opened { request },
            "ended" => DurableFact::Ended {
                request,
                // `as` saturates; a status is 0..=255 or a code of ours.
                exit_code: f.exit_code.map(|c| c as i64),
                stdout: f.stdout,
                why: f.why,
            },
            "failed" => DurableFact::Failed {
                request,
                facts: f.facts.unwrap_or_default(),
            },
            "pod" => DurableFact::Pod {
                request,
                found: f.found,
                phase: f.phase,
                deleting: f.deleting,
            },
            "cancel" => DurableFact::Cancel { signal: f.signal },
            "closed" => DurableFact::Closed,
            other => {
                let problem = format!(
                    "{} (expected opened, ended, failed, pod, cancel or closed)",
                    quoted(other)
                );
                return Err(Bad::new(problem).at("type"));
            }
        })
    })
}

#[derive(Serialize)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
enum ActionOut<'a> {
    Exec {
        request: u32,
        step: PodStep,
        run: &'a str,
        setup_timeout_ms: u64,
        ping_every_ms: u64,
        pong_deadline_ms: u64,
        utilities: &'a [&'a str],
    },
    ReadPod {
        request: u32,
        timeout_ms: u64,
    },
    Resolve,
    Reject {
        request: u32,
    },
    Plain,
    Log {
        level: Level,
        message: &'a str,
    },
    Deliver {
        status: Status<'a>,
    },
    Wait {
        until_ms: Option<u64>,
    },
    Done,
}

/// client-node's `V1Status` as the apiserver sends it on the status channel.
#[derive(Serialize)]
pub struct Status<'a> {
    metadata: Empty,
    status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    details: Option<Details>,
}

#[derive(Serialize)]
pub struct Empty {}

#[derive(Serialize)]
pub struct Details {
    causes: [Cause; 1],
}

#[derive(Serialize)]
pub struct Cause {
    reason: &'static str,
    message: String,
}

/// The status a delivery gives the caller; `command` is named in a non-zero
/// exit's message, as the kubelet names it.
pub fn status<'a>(delivery: &'a Delivery, command: &[String]) -> Status<'a> {
    let failure = |message, reason, details| Status {
        metadata: Empty {},
        status: "Failure",
        message: Some(message),
        reason: Some(reason),
        details,
    };
    match delivery {
        Delivery::Success => Status {
            metadata: Empty {},
            status: "Success",
            message: None,
            reason: None,
            details: None,
        },
        Delivery::ExitCode(code) => failure(
            format!(
                "command terminated with non-zero exit code: error executing command [{}], exit code {code}",
                command.join(" ")
            ),
            "NonZeroExitCode",
            Some(Details {
                causes: [Cause {
                    reason: "ExitCode",
                    message: code.to_string(),
                }],
            }),
        ),
        Delivery::Failed { reason, message } => failure(message.clone(), reason, None),
    }
}

/// A plain exec's status when its stream ended with none.
pub fn unknown_status(message: String) -> JsValue {
    write(&Status {
        metadata: Empty {},
        status: "Failure",
        message: Some(message),
        reason: Some("StreamCut"),
        details: None,
    })
}

/// One action of a durable run, `command` for its statuses' messages.
pub fn durable_action(a: &DurableAction, command: &[String]) -> JsValue {
    write(&match a {
        DurableAction::Exec {
            request,
            step,
            run,
            setup_timeout_ms,
            ping_every_ms,
            pong_deadline_ms,
        } => ActionOut::Exec {
            request: *request,
            step: *step,
            run,
            setup_timeout_ms: *setup_timeout_ms,
            ping_every_ms: *ping_every_ms,
            pong_deadline_ms: *pong_deadline_ms,
            utilities: UTILITIES,
        },
        DurableAction::ReadPod {
            request,
            timeout_ms,
        } => ActionOut::ReadPod {
            request: *request,
            timeout_ms: *timeout_ms,
        },
        DurableAction::Resolve => ActionOut::Resolve,
        DurableAction::Reject { request } => ActionOut::Reject { request: *request },
        DurableAction::Plain => ActionOut::Plain,
        DurableAction::Log { level, message } => ActionOut::Log {
            level: *level,
            message,
        },
        DurableAction::Deliver { delivery } => ActionOut::Deliver {
            status: status(delivery, command),
        },
        DurableAction::Wait { until_ms } => ActionOut::Wait {
            until_ms: *until_ms,
        },
        DurableAction::Done => ActionOut::Done,
    })
}

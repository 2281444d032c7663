//! A durable exec's wire shapes: the facts the host reports, the actions
//! it takes, and the caller's status in client-node's `V1Status` shapes.

use super::*;
use crate::classify::ErrorFacts;
use crate::durable::{Delivery, DurableAction, DurableFact, DurableSpec, PodStep, StepOutput};
use crate::text::quoted;

/// The spec of a durable exec: `{namespace, pod, command}`, read field by
/// field (a derived reader would cost the `.wasm` more than these lines).
pub fn durable_spec(v: &JsValue) -> Result<DurableSpec, Bad> {
    Ok(DurableSpec {
        namespace: read_field(v, "namespace")?,
        pod: read_field(v, "pod")?,
        command: read_field(v, "command")?,
    })
}

/// The facts of one step of a durable run: `{type, request, ...}` with the
/// fields of its type (see [`DurableFact`]).
pub fn durable_facts(v: &JsValue) -> Result<Vec<DurableFact>, Bad> {
    items(v, |f| {
        let kind: String = read_field(&f, "type")?;
        let request = || optional::<u32>(&f, "request");
        Ok(match kind.as_str() {
            "opened" => DurableFact::Opened {
                request: request()?,
            },
            "ended" => DurableFact::Ended {
                request: request()?,
                // Whole byte counts below 2^53: `as` is exact.
                received: (
                    optional::<f64>(&f, "receivedOut")? as u64,
                    optional::<f64>(&f, "receivedErr")? as u64,
                ),
                // The step's `V1Status` as the host found it, if one came.
                exit_code: match optional::<bool>(&f, "hasStatus")? {
                    true => Some(crate::durable::exit_status_of(
                        optional::<Option<String>>(&f, "status")?.as_deref(),
                        optional::<Option<String>>(&f, "exitCode")?.as_deref(),
                        optional::<Option<String>>(&f, "message")?.as_deref(),
                    )),
                    false => None,
                },
                stdout: optional(&f, "stdout")?,
                why: optional(&f, "why")?,
            },
            "failed" => DurableFact::Failed {
                request: request()?,
                facts: optional::<ErrorFacts>(&f, "facts")?,
            },
            "pod" => DurableFact::Pod {
                request: request()?,
                found: optional(&f, "found")?,
                phase: optional(&f, "phase")?,
                deleting: optional(&f, "deleting")?,
            },
            "ledger" => DurableFact::Ledger {
                text: optional(&f, "text")?,
            },
            "cancel" => DurableFact::Cancel {
                signal: optional(&f, "signal")?,
            },
            "closed" => DurableFact::Closed,
            other => {
                let problem = format!(
                    "{} (expected opened, ended, failed, pod, ledger, cancel or closed)",
                    quoted(other)
                );
                return Err(Bad::new(problem).at("type"));
            }
        })
    })
}

/// client-node's `V1Status` for `delivery`, as the apiserver sends it on
/// the status channel; `command` is named in a non-zero exit's message, as
/// the kubelet names it.
pub fn status(delivery: &Delivery, command: &[String]) -> JsValue {
    match delivery {
        Delivery::Success => object(&[("metadata", object(&[])), ("status", text("Success"))]),
        Delivery::ExitCode(code) => {
            let message = format!(
                "command terminated with non-zero exit code: error executing command [{}], exit code {code}",
                command.join(" ")
            );
            let cause = object(&[
                ("reason", text("ExitCode")),
                ("message", text(&code.to_string())),
            ]);
            let details = object(&[("causes", js_sys::Array::of1(&cause).into())]);
            failure(&message, "NonZeroExitCode", Some(details))
        }
        Delivery::Failed { reason, message } => failure(message, reason, None),
    }
}

fn failure(message: &str, reason: &str, details: Option<JsValue>) -> JsValue {
    let mut pairs = vec![
        ("metadata", object(&[])),
        ("status", text("Failure")),
        ("message", text(message)),
        ("reason", text(reason)),
    ];
    if let Some(details) = details {
        pairs.push(("details", details));
    }
    object(&pairs)
}

/// A plain exec's status when its stream ended with none.
pub fn unknown_status(message: String) -> JsValue {
    failure(&message, "StreamCut", None)
}

fn step_name(step: PodStep) -> &'static str {
    match step {
        PodStep::Start => "start",
        PodStep::Look => "look",
        PodStep::Attach => "attach",
        PodStep::Finish => "finish",
        PodStep::Cleanup => "cleanup",
        PodStep::Kill => "kill",
    }
}

fn output_name(output: StepOutput) -> &'static str {
    match output {
        StepOutput::Caller => "caller",
        StepOutput::Kept { .. } => "kept",
        StepOutput::Dropped => "dropped",
    }
}

fn kept_bytes(output: StepOutput) -> u64 {
    match output {
        StepOutput::Kept { bytes } => bytes,
        StepOutput::Caller | StepOutput::Dropped => 0,
    }
}

/// One action of a durable run, `command` for its statuses' messages:
/// `{type, ...}` with the fields of [`DurableAction`], camelCase.
pub fn durable_action(a: &DurableAction, command: &[String]) -> JsValue {
    let kind = |name: &str| ("type", text(name));
    match a {
        DurableAction::Exec {
            request,
            step,
            run,
            cleanup,
            connect_timeout_ms,
            setup_timeout_ms,
            ping_every_ms,
            pong_deadline_ms,
        } => object(&[
            kind("exec"),
            ("request", number(u64::from(*request))),
            ("step", text(step_name(*step))),
            ("output", text(output_name(step.output()))),
            ("keptBytes", number(kept_bytes(step.output()))),
            ("run", text(run)),
            (
                "cleanup",
                cleanup
                    .iter()
                    .map(|r| text(r))
                    .collect::<js_sys::Array>()
                    .into(),
            ),
            ("connectTimeoutMs", number(*connect_timeout_ms)),
            ("setupTimeoutMs", number(*setup_timeout_ms)),
            ("pingEveryMs", number(*ping_every_ms)),
            ("pongDeadlineMs", number(*pong_deadline_ms)),
        ]),
        DurableAction::ReadPod {
            request,
            timeout_ms,
        } => object(&[
            kind("readPod"),
            ("request", number(u64::from(*request))),
            ("timeoutMs", number(*timeout_ms)),
        ]),
        DurableAction::ReadLedger { file, limit } => object(&[
            kind("readLedger"),
            ("file", text(file)),
            ("limit", number(*limit as u64)),
        ]),
        DurableAction::AppendLedger { file, text: line } => object(&[
            kind("appendLedger"),
            ("file", text(file)),
            ("text", text(line)),
        ]),
        DurableAction::Resolve => object(&[kind("resolve")]),
        DurableAction::Reject { request } => {
            object(&[kind("reject"), ("request", number(u64::from(*request)))])
        }
        DurableAction::Plain => object(&[kind("plain")]),
        DurableAction::Log { level, message } => object(&[
            kind("log"),
            ("level", text(level.name())),
            ("message", text(message)),
        ]),
        DurableAction::Deliver { delivery } => object(&[
            kind("deliver"),
            ("status", status(delivery, command)),
            ("ownStdioWaitMs", number(crate::durable::OWN_STDIO_WAIT_MS)),
        ]),
        DurableAction::Wait { until_ms } => object(&[
            kind("wait"),
            ("untilMs", until_ms.map_or(JsValue::NULL, number)),
        ]),
        DurableAction::Idle { until_ms } => object(&[kind("idle"), ("untilMs", number(*until_ms))]),
        DurableAction::Done => object(&[kind("done")]),
    }
}

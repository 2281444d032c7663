//! A copy's wire shapes: its spec, what the host saw of an attempt, and
//! the actions it asks for.

use super::*;
use crate::copy::{Attempt, BadSpec, CopyAction, CopySpec, Direction, ExecStatus, Place, Removal};
use crate::text::quoted;

/// `{direction: 'toPod' | 'fromPod', namespace, pod, container, from, to}`,
/// checked.
pub fn copy_spec(v: &JsValue) -> Result<CopySpec, Bad> {
    let direction: String = read_field(v, "direction")?;
    let direction = match direction.as_str() {
        "toPod" => Direction::ToPod,
        "fromPod" => Direction::FromPod,
        other => {
            let problem = format!("{} (expected toPod or fromPod)", quoted(other));
            return Err(Bad::new(problem).at("direction"));
        }
    };
    let names = [
        read_field(v, "namespace")?,
        read_field(v, "pod")?,
        read_field(v, "container")?,
    ];
    let (from, to) = (read_field(v, "from")?, read_field(v, "to")?);
    CopySpec::new(direction, names, from, to)
        .map_err(|BadSpec { field, problem }| Bad::new(problem.into()).at(field))
}

/// What the host saw: of an attempt, or of a removal.
pub enum CopyFact {
    /// `{type: 'copied', runnerBytes, runnerSha256, runnerTar,
    /// runnerCksum, runnerTarError, podOut, podErr, status, openError, protocol, listing,
    /// listingWhole}`; `status` is the exec's `V1Status` as it came, or
    /// null; `listing` a `Uint8Array`.
    Copied(Attempt),
    /// `{type: 'removed', out, err, status, exitCode, openError}`.
    Removed(Removal),
}

/// A `V1Status` (its parts the copy reads) or null.
fn exec_status(f: &JsValue) -> Result<Option<ExecStatus>, Bad> {
    let status = field(f, "status")?;
    if status.is_undefined() || status.is_null() {
        return Ok(None);
    }
    let text = |key: &str| -> Result<String, Bad> {
        optional::<String>(&status, key).map_err(|e| e.at("status"))
    };
    Ok(Some(ExecStatus {
        status: text("status")?,
        reason: text("reason")?,
        message: text("message")?,
        exit_code: optional::<Option<String>>(&status, "exitCode").map_err(|e| e.at("status"))?,
    }))
}

/// A list of [`CopyFact`]s.
pub fn copy_facts(v: &JsValue) -> Result<Vec<CopyFact>, Bad> {
    items(v, |f| {
        let kind: String = read_field(&f, "type")?;
        let open_error = || optional::<Option<crate::classify::ErrorFacts>>(&f, "openError");
        match kind.as_str() {
            "copied" => Ok(CopyFact::Copied(Attempt {
                // Whole byte counts below 2^53: `as` is exact.
                runner_bytes: optional::<f64>(&f, "runnerBytes")? as u64,
                runner_sha256: optional(&f, "runnerSha256")?,
                // A CRC (below 2^32) as a number: `as` is exact.
                runner_cksum: optional::<f64>(&f, "runnerCksum")? as u32,
                runner_tar: optional::<Option<f64>>(&f, "runnerTar")?.map(|c| c as i64),
                runner_tar_error: optional(&f, "runnerTarError")?,
                pod_out: optional(&f, "podOut")?,
                pod_err: optional(&f, "podErr")?,
                status: exec_status(&f)?,
                open_error: open_error()?,
                protocol: optional(&f, "protocol")?,
                listing: optional::<Option<Bytes>>(&f, "listing")?
                    .map(|b| b.0)
                    .unwrap_or_default(),
                listing_whole: optional(&f, "listingWhole")?,
            })),
            "removed" => Ok(CopyFact::Removed(Removal {
                out: optional(&f, "out")?,
                err: optional(&f, "err")?,
                status: exec_status(&f)?,
                exit_code: optional::<Option<f64>>(&f, "exitCode")?.map(|c| c as i64),
                open_error: open_error()?,
            })),
            other => {
                let problem = format!("{} (expected \"copied\" or \"removed\")", quoted(other));
                Err(Bad::new(problem).at("type"))
            }
        }
    })
}

/// One action of a copy: `{type, ...}`.
pub fn copy_action(a: &CopyAction) -> JsValue {
    let kind = |name: &str| ("type", text(name));
    match a {
        CopyAction::Copy { attempt, args } => object(&[
            kind("copy"),
            ("attempt", number(u64::from(*attempt))),
            (
                "args",
                args.iter()
                    .map(|s| text(s))
                    .collect::<js_sys::Array>()
                    .into(),
            ),
        ]),
        CopyAction::Remove { place, args, input } => object(&[
            kind("remove"),
            (
                "place",
                text(match place {
                    Place::Pod => "pod",
                    Place::Runner => "runner",
                }),
            ),
            (
                "args",
                args.iter()
                    .map(|s| text(s))
                    .collect::<js_sys::Array>()
                    .into(),
            ),
            ("input", js_sys::Uint8Array::from(input.as_slice()).into()),
        ]),
        CopyAction::Log { level, message } => object(&[
            kind("log"),
            ("level", text(level.name())),
            ("message", text(message)),
        ]),
        CopyAction::Wait { until_ms } => object(&[
            kind("wait"),
            ("untilMs", until_ms.map_or(JsValue::NULL, number)),
        ]),
        CopyAction::Done { outcome } => object(&[
            kind("done"),
            (
                "outcome",
                object(&[
                    ("ok", JsValue::from_bool(outcome.ok)),
                    ("attempts", number(u64::from(outcome.attempts))),
                    ("bytes", number(outcome.bytes)),
                    ("sha256", text(&outcome.sha256)),
                    ("message", text(&outcome.message)),
                ]),
            ),
        ]),
    }
}

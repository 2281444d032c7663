//! The check's facts, read: what its file actions and requests report.
//! Its actions and outcome are written in their own shapes
//! ([`crate::check::CheckAction`]).

use super::*;
use crate::check::{Fact, LockCreated, LockSeen, RecordRead};
use crate::preflight::ProbeResult;
use crate::runner_key::KeyFileReport;
use crate::text::quoted;

/// The fields a file fact's `type` may have (`keyFile {report}` is read
/// apart, as the report is tagged by `type` itself).
/// One flat struct rather than an enum of fourteen: serde derives one
/// reader instead of fourteen. `code` null: the action worked.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FactIn {
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    bytes: Option<Bytes>,
    #[serde(default)]
    is_file: Option<bool>,
    #[serde(default)]
    mtime_ms: Option<f64>,
    #[serde(default)]
    content: Option<Bytes>,
    #[serde(default)]
    fs_now_ms: Option<f64>,
    #[serde(default)]
    probe: Option<u32>,
    #[serde(default)]
    attempt: Option<u32>,
    #[serde(default)]
    result: Option<ProbeResult>,
}

/// What a fact's `type` may be, for the message about one that is not.
const FACT_TYPES: &str = "keyFile, recordBytes, recordOpenFailed, recordNotAFile, recordReadFailed, lockLinked, lockTempFailed, lockLinkFailed, lockStatFailed, lockFound, process, removed, written, deleted or response";

/// `field`, or that it is missing.
fn needed<T>(field: Option<T>, name: &str) -> Result<T, Bad> {
    field.ok_or_else(|| Bad::new("missing".into()).at(name))
}

/// A file time in epoch ms (`stat.mtimeMs`: fractional, and before 1970 for
/// a file whose time was set so): whole ms, at least 0; `NaN` is 0.
fn file_time(ms: f64) -> u64 {
    // `as` saturates, and maps NaN to 0.
    ms.max(0.0) as u64
}

/// The facts of one step: an array of them (see [`FactIn`]).
pub fn facts(v: &JsValue) -> Result<Vec<Fact>, Bad> {
    items(v, fact)
}

fn fact(v: JsValue) -> Result<Fact, Bad> {
    let tag: TagIn = read(&v)?;
    if tag.kind == "keyFile" {
        let report = field(&v, "report")?;
        return Ok(Fact::KeyFile(
            read::<KeyFileReport>(&report).map_err(|e| e.at("report"))?,
        ));
    }
    let kind = tag.kind.as_str();
    let f: FactIn = read(&v)?;
    let code = |f: FactIn| needed(f.code, "code");
    Ok(match kind {
        "process" => Fact::Process { code: f.code },
        "removed" => Fact::Removed { code: f.code },
        "written" => Fact::Written { code: f.code },
        "deleted" => Fact::Deleted { code: f.code },
        "response" => Fact::Response {
            probe: needed(f.probe, "probe")? as usize,
            attempt: needed(f.attempt, "attempt")?,
            result: needed(f.result, "result")?,
        },
        "recordBytes" => Fact::Record(RecordRead::Bytes(needed(f.bytes, "bytes")?.0)),
        "recordOpenFailed" => Fact::Record(RecordRead::OpenFailed { code: code(f)? }),
        "recordNotAFile" => Fact::Record(RecordRead::NotAFile),
        "recordReadFailed" => Fact::Record(RecordRead::ReadFailed { code: code(f)? }),
        "lockLinked" => Fact::LockCreated(LockCreated::Linked),
        "lockTempFailed" => Fact::LockCreated(LockCreated::TempFailed { code: code(f)? }),
        "lockLinkFailed" => {
            let fs_now_ms = f.fs_now_ms.map(file_time);
            Fact::LockCreated(LockCreated::LinkFailed {
                code: code(f)?,
                fs_now_ms,
            })
        }
        "lockStatFailed" => Fact::LockSeen(LockSeen::StatFailed { code: code(f)? }),
        "lockFound" => Fact::LockSeen(LockSeen::Found {
            is_file: needed(f.is_file, "isFile")?,
            mtime_ms: file_time(needed(f.mtime_ms, "mtimeMs")?),
            content: f.content.map(|b| b.0),
        }),
        other => {
            let problem = format!("{} (expected {FACT_TYPES})", quoted(other));
            return Err(Bad::new(problem).at("type"));
        }
    })
}

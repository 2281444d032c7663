//! The check's wire types: the facts its file actions and requests
//! report, and the actions and outcome it writes.

use super::*;
use crate::check::{CheckAction, Fact, LockCreated, LockSeen, ProcessFacts, RecordRead};
use crate::permission::Permission;
use crate::preflight::{Outcome, ProbeResult, Request, Source, Verdict};
use crate::runner_key::{FileKind, KeyFileFacts, KeyFileReport};
use crate::text::quoted;

/// A request's result, by its `type`. Only the fields of that type are read.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) enum ResultIn {
    /// `{type: 'reviewed', allowed, reason?}` (tests only)
    #[cfg(feature = "test-exports")]
    Reviewed {
        allowed: bool,
        #[serde(default)]
        reason: Option<String>,
    },
    /// `{type: 'rulesReviewed', status?}` (tests only)
    #[cfg(feature = "test-exports")]
    RulesReviewed {
        #[serde(default)]
        status: Option<RulesStatusIn>,
    },
    /// `{type: 'accessBody', body}`
    AccessBody { body: String },
    /// `{type: 'rulesBody', body}`
    RulesBody { body: String },
    /// `{type: 'failed', facts?}`
    Failed {
        #[serde(default)]
        facts: Option<ErrorFactsIn>,
    },
}

pub(super) fn probe_result_from(result: ResultIn) -> ProbeResult {
    match result {
        #[cfg(feature = "test-exports")]
        ResultIn::Reviewed { allowed, reason } => ProbeResult::Reviewed { allowed, reason },
        #[cfg(feature = "test-exports")]
        ResultIn::RulesReviewed { status } => ProbeResult::RulesReviewed {
            status: status.map(RulesStatus::from).unwrap_or_default(),
        },
        ResultIn::AccessBody { body } => ProbeResult::AccessBody { body },
        ResultIn::RulesBody { body } => ProbeResult::RulesBody { body },
        ResultIn::Failed { facts } => ProbeResult::Failed {
            facts: facts.map(ErrorFacts::from).unwrap_or_default(),
        },
    }
}

/// The fields every key file report has, read first.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct KeyFileHeadIn {
    // Read for its message only (`type: missing`); the variant is read
    // from it by [`KeyFileIn`].
    #[serde(rename = "type")]
    _kind: String,
    #[serde(default)]
    process_uid: Option<u32>,
    #[serde(default)]
    create_error: Option<String>,
}

/// What is at the key file's path, by the report's `type`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) enum KeyFileIn {
    Missing,
    /// Nothing looked at, for want of a path: read as missing.
    None,
    Failed {
        #[serde(default)]
        code: String,
    },
    Found {
        kind: FileKindIn,
        #[serde(default)]
        mode: u32,
        uid: u32,
        #[serde(default)]
        bytes: Option<Bytes>,
    },
}

#[derive(Deserialize)]
#[serde(variant_identifier, rename_all = "camelCase")]
pub(super) enum FileKindIn {
    File,
    Symlink,
    Directory,
    Other,
}

/// The bytes of a Uint8Array.
pub(super) struct Bytes(pub(super) Vec<u8>);

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Bytes, D::Error> {
        struct Expect;
        impl Visitor<'_> for Expect {
            type Value = Bytes;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a Uint8Array")
            }
            fn visit_byte_buf<E>(self, bytes: Vec<u8>) -> Result<Bytes, E> {
                Ok(Bytes(bytes))
            }
        }
        d.deserialize_byte_buf(Expect)
    }
}

/// The shim's report on the runner key file: `{type: 'missing' | 'none'}`,
/// `{type: 'failed', code}`, or `{type: 'found', kind: 'file' | 'symlink' |
/// 'directory' | 'other', mode, uid, bytes (a Uint8Array)}`; each with
/// `processUid` (a number or null) and `createError` (a code or null).
pub fn key_file_report(v: &JsValue) -> Result<KeyFileReport, Bad> {
    let head: KeyFileHeadIn = read(v)?;
    let facts = match read::<KeyFileIn>(v)? {
        KeyFileIn::Missing | KeyFileIn::None => KeyFileFacts::Missing,
        KeyFileIn::Failed { code } => KeyFileFacts::failed(code),
        KeyFileIn::Found {
            kind,
            mode,
            uid,
            bytes,
        } => KeyFileFacts::Found {
            kind: match kind {
                FileKindIn::File => FileKind::File,
                FileKindIn::Symlink => FileKind::Symlink,
                FileKindIn::Directory => FileKind::Directory,
                FileKindIn::Other => FileKind::Other,
            },
            mode,
            owner: uid,
            bytes: bytes.map(|b| b.0).unwrap_or_default(),
        },
    };
    Ok(KeyFileReport {
        facts,
        process_uid: head.process_uid,
        create_error: head.create_error,
    })
}

/// `{kind: 'accessReview' | 'rulesReview', body}` or `{kind: 'call'}`.
#[derive(Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum RequestOut<'a> {
    AccessReview { body: AccessReviewOut<'a> },
    RulesReview { body: RulesReviewOut<'a> },
}

impl<'a> From<&'a Request> for RequestOut<'a> {
    fn from(r: &'a Request) -> Self {
        match r {
            Request::AccessReview(r) => {
                let a = &r.spec.resource_attributes;
                RequestOut::AccessReview {
                    body: AccessReviewOut {
                        api_version: &r.api_version,
                        kind: &r.kind,
                        spec: AccessSpecOut {
                            resource_attributes: AttributesOut {
                                namespace: &a.namespace,
                                group: &a.group,
                                resource: &a.resource,
                                subresource: &a.subresource,
                                verb: &a.verb,
                            },
                        },
                    },
                }
            }
            Request::RulesReview(r) => RequestOut::RulesReview {
                body: RulesReviewOut {
                    api_version: &r.api_version,
                    kind: &r.kind,
                    spec: RulesSpecOut {
                        namespace: &r.spec.namespace,
                    },
                },
            },
        }
    }
}

/// A SelfSubjectAccessReview exactly as the Kubernetes API takes it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AccessReviewOut<'a> {
    api_version: &'a str,
    kind: &'a str,
    spec: AccessSpecOut<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct AccessSpecOut<'a> {
    resource_attributes: AttributesOut<'a>,
}

#[derive(Serialize)]
pub(super) struct AttributesOut<'a> {
    namespace: &'a str,
    group: &'a str,
    resource: &'a str,
    subresource: &'a str,
    verb: &'a str,
}

/// A SelfSubjectRulesReview exactly as the Kubernetes API takes it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RulesReviewOut<'a> {
    api_version: &'a str,
    kind: &'a str,
    spec: RulesSpecOut<'a>,
}

#[derive(Serialize)]
pub(super) struct RulesSpecOut<'a> {
    namespace: &'a str,
}

/// The outcome of a check; every key always present.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OutcomeOut<'a> {
    verdict: &'static str,
    source: Option<&'static str>,
    missing: Vec<PermissionOut<'a>>,
    message: &'a str,
    warnings: &'a [String],
    record: Option<&'a str>,
    delete_record: bool,
    proceed: bool,
    last_error: Option<&'a str>,
    requests: f64,
    proven_by_rules: f64,
    elapsed_ms: f64,
}

impl<'a> From<&'a Outcome> for OutcomeOut<'a> {
    fn from(o: &'a Outcome) -> Self {
        OutcomeOut {
            verdict: match o.verdict {
                Verdict::Allowed => "allowed",
                Verdict::Denied => "denied",
                Verdict::Inconclusive => "inconclusive",
                Verdict::Error => "error",
            },
            source: o.source.map(|s| match s {
                Source::Reviews => "reviews",
                Source::Cache => "cache",
                Source::GraceCache => "graceCache",
            }),
            missing: o.missing.iter().map(PermissionOut::from).collect(),
            message: &o.message,
            warnings: &o.warnings,
            record: o.record.as_deref(),
            delete_record: o.delete_record,
            proceed: o.proceed,
            last_error: o.last_error.as_deref(),
            requests: f64::from(o.requests),
            proven_by_rules: f64::from(o.proven_by_rules),
            elapsed_ms: o.elapsed_ms as f64,
        }
    }
}

/// `{verb, group, resource, subresource}`.
#[derive(Serialize)]
pub struct PermissionOut<'a> {
    verb: &'a str,
    group: &'a str,
    resource: &'a str,
    subresource: &'a str,
}

impl<'a> From<&'a Permission> for PermissionOut<'a> {
    fn from(p: &'a Permission) -> Self {
        PermissionOut {
            verb: &p.verb,
            group: &p.group,
            resource: &p.resource,
            subresource: &p.subresource,
        }
    }
}

// ---- the check machine -----------------------------------------------------

/// `{pid, host}`: this process, as its lock names it.
#[derive(Deserialize)]
pub(super) struct ProcessIn {
    pid: u32,
    host: String,
}

/// This process (see [`ProcessIn`]).
pub fn process_facts(v: &JsValue) -> Result<ProcessFacts, Bad> {
    let p: ProcessIn = read(v)?;
    Ok(ProcessFacts {
        pid: p.pid,
        host: p.host,
    })
}

/// One fact: its `type` and the fields that type has (`keyFile
/// {report}` is read apart, as the report is tagged by `type` itself).
/// One flat struct rather than an enum of fourteen: serde derives one
/// reader instead of fourteen. `code` null: the action worked.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct FactIn {
    #[serde(rename = "type")]
    kind: String,
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
    result: Option<ResultIn>,
}

/// The fact types, for the message about one that is not.
pub(super) const FACT_TYPES: &[&str] = &[
    "keyFile",
    "recordBytes",
    "recordOpenFailed",
    "recordNotAFile",
    "recordReadFailed",
    "lockLinked",
    "lockTempFailed",
    "lockLinkFailed",
    "lockStatFailed",
    "lockFound",
    "process",
    "removed",
    "written",
    "deleted",
    "response",
];

/// `field`, or that it is missing.
pub(super) fn needed<T>(field: Option<T>, name: &str) -> Result<T, Bad> {
    field.ok_or_else(|| Bad::new("missing".into()).at(name))
}

/// A file time in epoch ms (`stat.mtimeMs`: fractional, and before 1970 for
/// a file whose time was set so): whole ms, at least 0; `NaN` is 0.
pub(super) fn file_time(ms: f64) -> u64 {
    // `as` saturates, and maps NaN to 0.
    ms.max(0.0) as u64
}

/// The facts of one step: an array of them (see [`FactIn`]).
pub fn facts(v: &JsValue) -> Result<Vec<Fact>, Bad> {
    let Some(list) = v.dyn_ref::<js_sys::Array>() else {
        return Err(Bad::new("expected an array".into()));
    };
    let mut facts = Vec::with_capacity(list.length() as usize);
    for (i, item) in list.iter().enumerate() {
        facts.push(fact(&item).map_err(|e| e.at_index(i))?);
    }
    Ok(facts)
}

pub(super) fn fact(v: &JsValue) -> Result<Fact, Bad> {
    let tag: TagIn = read(v)?;
    if tag.kind == "keyFile" {
        let report = js_sys::Reflect::get(v, &JsValue::from_str("report"))
            .map_err(|_| Bad::new("could not be read".into()).at("report"))?;
        return Ok(Fact::KeyFile(
            key_file_report(&report).map_err(|e| e.at("report"))?,
        ));
    }
    let f: FactIn = read(v)?;
    let code = |f: FactIn| needed(f.code, "code");
    Ok(match f.kind.as_str() {
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
        "process" => Fact::Process { code: f.code },
        "removed" => Fact::Removed { code: f.code },
        "written" => Fact::Written { code: f.code },
        "deleted" => Fact::Deleted { code: f.code },
        "response" => Fact::Response {
            probe: needed(f.probe, "probe")? as usize,
            attempt: needed(f.attempt, "attempt")?,
            result: probe_result_from(needed(f.result, "result")?),
        },
        other => {
            return Err(Bad::new(format!(
                "{} (expected {})",
                quoted(other),
                crate::bad_input::one_of(FACT_TYPES)
            ))
            .at("type"))
        }
    })
}

/// One action of the check machine: its `type` and the fields that type
/// has (see `src/check/action.rs`). One flat struct, fields left out when
/// a type has none: serde derives one writer instead of thirteen.
#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct CheckActionOut<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    file: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    folder: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    limit: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pid: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    probe: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    attempt: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    request: Option<RequestOut<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    timeout_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    level: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    until_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    outcome: Option<OutcomeOut<'a>>,
}

impl<'a> From<&'a CheckAction> for CheckActionOut<'a> {
    fn from(a: &'a CheckAction) -> Self {
        let out = |kind| CheckActionOut {
            kind,
            ..Default::default()
        };
        match a {
            CheckAction::ReadKeyFile { file, limit } => CheckActionOut {
                file: Some(file),
                limit: Some(f64::from(*limit)),
                ..out("readKeyFile")
            },
            CheckAction::CreateKeyFile {
                file,
                folder,
                text,
                limit,
            } => CheckActionOut {
                file: Some(file),
                folder: folder.as_deref(),
                text: Some(text),
                limit: Some(f64::from(*limit)),
                ..out("createKeyFile")
            },
            CheckAction::ReadRecord { file, limit } => CheckActionOut {
                file: Some(file),
                limit: Some(f64::from(*limit)),
                ..out("readRecord")
            },
            CheckAction::CreateLock { file, content } => CheckActionOut {
                file: Some(file),
                content: Some(content),
                ..out("createLock")
            },
            CheckAction::InspectLock { file, limit } => CheckActionOut {
                file: Some(file),
                limit: Some(f64::from(*limit)),
                ..out("inspectLock")
            },
            CheckAction::ProbeProcess { pid } => CheckActionOut {
                pid: Some(f64::from(*pid)),
                ..out("probeProcess")
            },
            CheckAction::RemoveFile { file } => CheckActionOut {
                file: Some(file),
                ..out("removeFile")
            },
            CheckAction::WriteRecord { file, text } => CheckActionOut {
                file: Some(file),
                text: Some(text),
                ..out("writeRecord")
            },
            CheckAction::DeleteRecord { file } => CheckActionOut {
                file: Some(file),
                ..out("deleteRecord")
            },
            CheckAction::Send {
                probe,
                attempt,
                request,
                timeout_ms,
            } => CheckActionOut {
                probe: Some(*probe as f64),
                attempt: Some(f64::from(*attempt)),
                request: Some(request.into()),
                timeout_ms: Some(*timeout_ms as f64),
                ..out("send")
            },
            CheckAction::Log { level, message } => CheckActionOut {
                level: Some(level.name()),
                message: Some(message),
                ..out("log")
            },
            CheckAction::Wait { until_ms } => CheckActionOut {
                until_ms: Some(*until_ms as f64),
                ..out("wait")
            },
            CheckAction::Done { outcome } => CheckActionOut {
                outcome: Some(outcome.into()),
                ..out("done")
            },
        }
    }
}

//! The boundary's wire types: plain structs in the shapes the shim builds
//! and reads (camelCase keys), crossing with serde-wasm-bindgen, and the
//! conversions to and from the core's types. No decisions.
//!
//! In: [`read`] takes a JS value into a wire struct, then into the core's
//! type. A missing field takes its default; `null` is "none" only where the
//! wire field is an `Option`. Anything of the wrong type is a [`Bad`] that
//! names the field (`[0].verbs[1]: expected a string, got a number`).
//! serde's errors carry no path, so when serde refuses a value the same
//! value is checked against the wire type's [`Shape`] (a table next to each
//! struct), which finds the first bad field in declaration order and says
//! what it is in JS terms; serde's own text is kept only if the check finds
//! nothing. A path tracker (serde_path_to_error) did the same for about
//! 23 KB of `.wasm`.
//!
//! Out: [`write`] makes fresh plain objects (serde-wasm-bindgen's
//! JSON-compatible serializer): keys in declaration order, `null` for none,
//! plain numbers for times and counts, and the tagged shapes the shim reads
//! (`{type: 'send', ...}`, `{kind: 'accessReview', body}`).

use js_sys::{Array, Reflect};
use serde::de::{DeserializeOwned, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use wasm_bindgen::{JsCast, JsValue};

use crate::cache_folder::CacheFolder;
#[cfg(feature = "test-exports")]
use crate::classify::Class;
use crate::classify::ErrorFacts;
use crate::permission::{Permission, PermissionSpec};
use crate::preflight::{Action, Outcome, ProbeResult, Request, Source, Verdict};
use crate::rules::{ResourceRule, RulesStatus};
use crate::runner_key::{FileKind, KeyFileFacts, KeyFileReport, KeyLocation};
use crate::single_flight::{FlightAction, Holder, LockAttempt};
use crate::text::quoted;

// ---- errors ----------------------------------------------------------------

/// An input that does not have the expected shape: where, and what is wrong.
pub struct Bad {
    path: String,
    problem: String,
}

impl Bad {
    fn new(problem: String) -> Bad {
        Bad {
            path: String::new(),
            problem,
        }
    }

    /// The same problem, one level further out (`key` or `[index]`).
    fn at(mut self, segment: &str) -> Bad {
        if !self.path.is_empty() && !self.path.starts_with('[') {
            self.path.insert(0, '.');
        }
        self.path.insert_str(0, segment);
        self
    }

    /// `invalid <what>: <path>: <problem>`.
    pub fn message(&self, what: &str) -> String {
        if self.path.is_empty() {
            format!("invalid {what}: {}", self.problem)
        } else {
            format!("invalid {what}: {}: {}", self.path, self.problem)
        }
    }
}

type Conv<T> = Result<T, Bad>;

/// What a value is, for messages: `a string`, `null`, `an array`, ...
/// (JS's `typeof`, with `null` and arrays told apart).
fn kind_of(v: &JsValue) -> String {
    if v.is_null() {
        return "null".into();
    }
    if Array::is_array(v) {
        return "an array".into();
    }
    let name = v.js_typeof().as_string().unwrap_or_default();
    match name.as_str() {
        "undefined" => name,
        "object" => "an object".into(),
        _ => format!("a {name}"),
    }
}

/// JS's own spelling of a number (`NaN`, `-1`, `Infinity`).
pub fn js_number(n: f64) -> String {
    js_sys::Number::from(n)
        .to_string_with_radix(10)
        .ok()
        .and_then(|s| s.as_string())
        .unwrap_or_default()
}

// ---- reading ---------------------------------------------------------------

/// A wire type and the shape its serde errors are explained by.
pub trait Wired: DeserializeOwned {
    /// What the JS value must look like.
    const SHAPE: Shape;
}

impl<W: Wired> Wired for Vec<W> {
    const SHAPE: Shape = Shape::List(&W::SHAPE);
}

/// `value` as the wire type `W`, then as `T`.
pub fn read<W, T>(value: &JsValue) -> Conv<T>
where
    W: Wired,
    T: TryFrom<W, Error = Bad>,
{
    let wire: W = parse(value)?;
    T::try_from(wire)
}

fn parse<W: Wired>(value: &JsValue) -> Conv<W> {
    serde_wasm_bindgen::from_value(value.clone()).map_err(|e| explain(value, &W::SHAPE, e))
}

#[cold]
fn explain(value: &JsValue, shape: &Shape, e: serde_wasm_bindgen::Error) -> Bad {
    match check(value, shape) {
        Err(bad) => bad,
        Ok(()) => Bad::new(e.to_string()),
    }
}

/// What a JS value must be, for messages.
pub enum Shape {
    /// A string.
    Str,
    /// `true` or `false`.
    Bool,
    /// A whole number up to this.
    Whole(u32),
    /// A finite number (of ms).
    Ms,
    /// A Uint8Array.
    Bytes,
    /// An array of these.
    List(&'static Shape),
    /// An object with these fields, in the order serde reads them.
    Object(&'static [Field]),
}

/// One field of an object: its key, its shape, and what missing and
/// `null` mean.
pub struct Field(&'static str, Shape, Need);

/// What a field may be besides its shape.
#[derive(PartialEq)]
pub enum Need {
    /// Must be there (`undefined` is missing).
    Required,
    /// Missing takes the default; `null` is wrong.
    Default,
    /// Missing or `null` is none.
    Optional,
}

/// The first problem with `v` as `shape`, in the order serde reads.
fn check(v: &JsValue, shape: &Shape) -> Conv<()> {
    let expected = match shape {
        Shape::Str if v.as_string().is_some() => return Ok(()),
        Shape::Bool if v.as_bool().is_some() => return Ok(()),
        Shape::Whole(max) => match v.as_f64() {
            Some(n) if (0.0..=f64::from(*max)).contains(&n) && n.fract() == 0.0 => return Ok(()),
            Some(n) => {
                return Err(Bad::new(format!(
                    "expected a whole number from 0 to {max}, got {}",
                    js_number(n)
                )))
            }
            None => {
                return Err(Bad::new(format!(
                    "expected a whole number from 0 to {max}, got {}",
                    kind_of(v)
                )))
            }
        },
        Shape::Ms => match v.as_f64() {
            Some(n) if n.is_finite() => return Ok(()),
            Some(n) => {
                return Err(Bad::new(format!(
                    "expected a finite number of ms, got {}",
                    js_number(n)
                )))
            }
            None => "a finite number of ms",
        },
        Shape::Bytes if v.is_instance_of::<js_sys::Uint8Array>() => return Ok(()),
        Shape::List(item) => match v.dyn_ref::<Array>() {
            Some(array) => {
                for i in 0..array.length() {
                    check(&array.get(i), item).map_err(|e| e.at(&format!("[{i}]")))?;
                }
                return Ok(());
            }
            None => "an array",
        },
        Shape::Object(fields) if v.is_object() => {
            for Field(key, shape, need) in fields.iter() {
                let value = Reflect::get(v, &JsValue::from_str(key)).unwrap_or(JsValue::UNDEFINED);
                if value.is_undefined() {
                    if *need == Need::Required {
                        return Err(Bad::new("missing".into()).at(key));
                    }
                    // Present and `undefined`: serde reads it, and only
                    // an `Option` takes it as none.
                    let present = Reflect::has(v, &JsValue::from_str(key)).unwrap_or(false);
                    if present && *need == Need::Default {
                        check(&value, shape).map_err(|e| e.at(key))?;
                    }
                } else if !(value.is_null() && *need == Need::Optional) {
                    check(&value, shape).map_err(|e| e.at(key))?;
                }
            }
            return Ok(());
        }
        Shape::Str => "a string",
        Shape::Bool => "true or false",
        Shape::Bytes => "a Uint8Array",
        Shape::Object(_) => "an object",
    };
    Err(Bad::new(format!("expected {expected}, got {}", kind_of(v))))
}

/// `Wired` for a struct, with its fields' shapes.
macro_rules! shape {
    ($wire:ty { $($key:literal: $shape:expr, $need:ident;)* }) => {
        impl Wired for $wire {
            const SHAPE: Shape = Shape::Object(&[$(Field($key, $shape, Need::$need)),*]);
        }
    };
}

const STRINGS: Shape = Shape::List(&Shape::Str);

/// A row of the permission table: `{group?, resource?, subresource?, verbs?, verb?}`.
#[derive(Deserialize)]
pub struct PermissionSpecIn {
    #[serde(default)]
    group: String,
    #[serde(default)]
    resource: String,
    #[serde(default)]
    subresource: String,
    #[serde(default)]
    verbs: Vec<String>,
    #[serde(default)]
    verb: Option<String>,
}

/// The permission table: an array of rows.
pub struct PermissionSpecs(pub Vec<PermissionSpec>);

impl TryFrom<Vec<PermissionSpecIn>> for PermissionSpecs {
    type Error = Bad;
    fn try_from(rows: Vec<PermissionSpecIn>) -> Conv<Self> {
        Ok(PermissionSpecs(
            rows.into_iter()
                .map(|r| PermissionSpec {
                    group: r.group,
                    resource: r.resource,
                    subresource: r.subresource,
                    verbs: r.verbs,
                    verb: r.verb,
                })
                .collect(),
        ))
    }
}

shape!(PermissionSpecIn {
    "group": Shape::Str, Default;
    "resource": Shape::Str, Default;
    "subresource": Shape::Str, Default;
    "verbs": STRINGS, Default;
    "verb": Shape::Str, Optional;
});

/// One flattened permission: `{verb, group, resource, subresource}`, all required.
#[cfg(feature = "test-exports")]
#[derive(Deserialize)]
pub struct PermissionIn {
    verb: String,
    group: String,
    resource: String,
    subresource: String,
}

#[cfg(feature = "test-exports")]
shape!(PermissionIn {
    "verb": Shape::Str, Required;
    "group": Shape::Str, Required;
    "resource": Shape::Str, Required;
    "subresource": Shape::Str, Required;
});

/// Flattened permissions: an array of them.
#[cfg(feature = "test-exports")]
pub struct Permissions(pub Vec<Permission>);

#[cfg(feature = "test-exports")]
impl TryFrom<Vec<PermissionIn>> for Permissions {
    type Error = Bad;
    fn try_from(list: Vec<PermissionIn>) -> Conv<Self> {
        Ok(Permissions(
            list.into_iter()
                .map(|p| Permission {
                    verb: p.verb,
                    group: p.group,
                    resource: p.resource,
                    subresource: p.subresource,
                })
                .collect(),
        ))
    }
}

/// What the shim saw about a failure (see `js-shim/facts.js`).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ErrorFactsIn {
    #[serde(default)]
    status: Option<u16>,
    #[serde(default)]
    codes: Vec<String>,
    #[serde(default)]
    retry_after: Option<String>,
    #[serde(default)]
    timed_out: bool,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    message: String,
    #[serde(default)]
    credential_source: Option<String>,
}

shape!(ErrorFactsIn {
    "status": Shape::Whole(65535), Optional;
    "codes": STRINGS, Default;
    "retryAfter": Shape::Str, Optional;
    "timedOut": Shape::Bool, Default;
    "name": Shape::Str, Optional;
    "message": Shape::Str, Default;
    "credentialSource": Shape::Str, Optional;
});

impl From<ErrorFactsIn> for ErrorFacts {
    fn from(f: ErrorFactsIn) -> ErrorFacts {
        ErrorFacts {
            codes: f.codes,
            status: f.status,
            retry_after: f.retry_after,
            timed_out: f.timed_out,
            name: f.name,
            message: f.message,
            credential_source: f.credential_source,
        }
    }
}

/// `TryFrom` for the plain `From`s, for [`read`].
#[cfg(feature = "test-exports")]
macro_rules! infallible {
    ($($wire:ty => $core:ty),*) => {$(
        impl TryFrom<$wire> for Wire<$core> {
            type Error = Bad;
            fn try_from(w: $wire) -> Conv<Self> {
                Ok(Wire(<$core>::from(w)))
            }
        }
    )*};
}

/// A core value read through its wire type.
#[cfg(feature = "test-exports")]
pub struct Wire<T>(pub T);

#[cfg(feature = "test-exports")]
infallible!(ErrorFactsIn => ErrorFacts, RulesStatusIn => RulesStatus);

/// The `status` of a SelfSubjectRulesReview.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RulesStatusIn {
    #[serde(default)]
    resource_rules: Vec<ResourceRuleIn>,
    #[serde(default)]
    incomplete: bool,
    #[serde(default)]
    evaluation_error: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResourceRuleIn {
    #[serde(default)]
    verbs: Vec<String>,
    #[serde(default)]
    api_groups: Vec<String>,
    #[serde(default)]
    resources: Vec<String>,
    #[serde(default)]
    resource_names: Vec<String>,
}

shape!(RulesStatusIn {
    "resourceRules": Shape::List(&ResourceRuleIn::SHAPE), Default;
    "incomplete": Shape::Bool, Default;
    "evaluationError": Shape::Str, Optional;
});

shape!(ResourceRuleIn {
    "verbs": STRINGS, Default;
    "apiGroups": STRINGS, Default;
    "resources": STRINGS, Default;
    "resourceNames": STRINGS, Default;
});

impl From<RulesStatusIn> for RulesStatus {
    fn from(s: RulesStatusIn) -> RulesStatus {
        RulesStatus {
            resource_rules: s
                .resource_rules
                .into_iter()
                .map(|r| ResourceRule {
                    verbs: r.verbs,
                    api_groups: r.api_groups,
                    resources: r.resources,
                    resource_names: r.resource_names,
                })
                .collect(),
            incomplete: s.incomplete,
            evaluation_error: s.evaluation_error,
        }
    }
}

/// The `type` of a tagged object; the rest is read by the type's own struct.
#[derive(Deserialize)]
struct TypeIn {
    #[serde(rename = "type")]
    kind: String,
}

#[derive(Deserialize)]
struct ReviewedIn {
    allowed: bool,
    #[serde(default)]
    reason: Option<String>,
}

#[derive(Deserialize)]
struct RulesReviewedIn {
    #[serde(default)]
    status: Option<RulesStatusIn>,
}

#[derive(Deserialize)]
struct BodyIn {
    body: String,
}

#[derive(Deserialize)]
struct FailedIn {
    #[serde(default)]
    facts: Option<ErrorFactsIn>,
}

shape!(TypeIn { "type": Shape::Str, Required; });
shape!(ReviewedIn {
    "allowed": Shape::Bool, Required;
    "reason": Shape::Str, Optional;
});
shape!(RulesReviewedIn { "status": RulesStatusIn::SHAPE, Optional; });
shape!(BodyIn { "body": Shape::Str, Required; });
shape!(FailedIn { "facts": ErrorFactsIn::SHAPE, Optional; });

/// A request's result, by its `type`: `{type: 'reviewed', allowed, reason?}`,
/// `{type: 'rulesReviewed', status?}`, `{type: 'accessBody', body}`,
/// `{type: 'rulesBody', body}`, `{type: 'succeeded'}` or
/// `{type: 'failed', facts?}`. Only the fields of that type are read.
pub fn probe_result(v: &JsValue) -> Conv<ProbeResult> {
    let tag: TypeIn = parse(v)?;
    Ok(match tag.kind.as_str() {
        "reviewed" => {
            let r: ReviewedIn = parse(v)?;
            ProbeResult::Reviewed {
                allowed: r.allowed,
                reason: r.reason,
            }
        }
        "rulesReviewed" => ProbeResult::RulesReviewed {
            status: parse::<RulesReviewedIn>(v)?
                .status
                .map(RulesStatus::from)
                .unwrap_or_default(),
        },
        "accessBody" => ProbeResult::AccessBody {
            body: parse::<BodyIn>(v)?.body,
        },
        "rulesBody" => ProbeResult::RulesBody {
            body: parse::<BodyIn>(v)?.body,
        },
        "succeeded" => ProbeResult::Succeeded,
        "failed" => ProbeResult::Failed {
            facts: parse::<FailedIn>(v)?
                .facts
                .map(ErrorFacts::from)
                .unwrap_or_default(),
        },
        other => {
            return Err(Bad::new(format!(
                "{} (expected reviewed, rulesReviewed, accessBody, rulesBody, succeeded or failed)",
                quoted(other)
            ))
            .at("type"))
        }
    })
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct HeldIn {
    age_ms: f64,
    holder: String,
}

shape!(HeldIn {
    "ageMs": Shape::Ms, Required;
    "holder": Shape::Str, Required;
});

/// `{type: 'acquired'}`, `{type: 'unavailable'}`, or `{type: 'held', ageMs,
/// holder}` with holder `alive`, `dead`, `unknown` or `invalid`. A negative
/// age (a clock stepped back) reads as 0.
pub fn lock_attempt(v: &JsValue) -> Conv<LockAttempt> {
    let tag: TypeIn = parse(v)?;
    match tag.kind.as_str() {
        "acquired" => Ok(LockAttempt::Acquired),
        "unavailable" => Ok(LockAttempt::Unavailable),
        "held" => {
            let held: HeldIn = parse(v)?;
            if !held.age_ms.is_finite() {
                return Err(Bad::new(format!(
                    "expected a finite number of ms, got {}",
                    js_number(held.age_ms)
                ))
                .at("ageMs"));
            }
            let holder = match held.holder.as_str() {
                "alive" => Holder::Alive,
                "dead" => Holder::Dead,
                "unknown" => Holder::Unknown,
                "invalid" => Holder::Invalid,
                other => {
                    return Err(Bad::new(format!(
                        "expected alive, dead, unknown or invalid, got {}",
                        quoted(other)
                    ))
                    .at("holder"))
                }
            };
            Ok(LockAttempt::Held {
                // `as` saturates: a huge age is just very old.
                age_ms: held.age_ms.max(0.0) as u64,
                holder,
            })
        }
        other => Err(Bad::new(format!(
            "expected acquired, unavailable or held, got {}",
            quoted(other)
        ))
        .at("type")),
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct KeyFileIn {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    process_uid: Option<u32>,
    #[serde(default)]
    create_error: Option<String>,
}

#[derive(Deserialize)]
struct KeyFailedIn {
    #[serde(default)]
    code: Option<String>,
}

#[derive(Deserialize)]
struct KeyFoundIn {
    kind: String,
    #[serde(default)]
    mode: u32,
    uid: u32,
    #[serde(default)]
    bytes: Option<Bytes>,
}

shape!(KeyFileIn {
    "type": Shape::Str, Required;
    "processUid": Shape::Whole(u32::MAX), Optional;
    "createError": Shape::Str, Optional;
});
shape!(KeyFailedIn { "code": Shape::Str, Optional; });
shape!(KeyFoundIn {
    "kind": Shape::Str, Required;
    "mode": Shape::Whole(u32::MAX), Default;
    "uid": Shape::Whole(u32::MAX), Required;
    "bytes": Shape::Bytes, Optional;
});

/// The bytes of a Uint8Array.
struct Bytes(Vec<u8>);

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
/// `none` (nothing looked at, for want of a path) reads as missing.
pub fn key_file_report(v: &JsValue) -> Conv<KeyFileReport> {
    let head: KeyFileIn = parse(v)?;
    let facts = match head.kind.as_str() {
        "missing" | "none" => KeyFileFacts::Missing,
        "failed" => KeyFileFacts::Failed {
            code: parse::<KeyFailedIn>(v)?.code.unwrap_or_default(),
        },
        "found" => {
            let found: KeyFoundIn = parse(v)?;
            let kind = match found.kind.as_str() {
                "file" => FileKind::File,
                "symlink" => FileKind::Symlink,
                "directory" => FileKind::Directory,
                "other" => FileKind::Other,
                other => {
                    return Err(Bad::new(format!(
                        "expected file, symlink, directory or other, got {}",
                        quoted(other)
                    ))
                    .at("kind"))
                }
            };
            KeyFileFacts::Found {
                kind,
                mode: found.mode,
                owner: found.uid,
                bytes: found.bytes.map(|b| b.0).unwrap_or_default(),
            }
        }
        other => {
            return Err(Bad::new(format!(
                "{} (expected missing, none, failed or found)",
                quoted(other)
            ))
            .at("type"))
        }
    };
    Ok(KeyFileReport {
        facts,
        process_uid: head.process_uid,
        create_error: head.create_error,
    })
}

// ---- writing ---------------------------------------------------------------

/// A fresh plain JS value for `value`.
pub fn write<T: Serialize>(value: &T) -> JsValue {
    // Every wire type below is plain strings, booleans, numbers as `f64`,
    // options and lists: serializing cannot fail.
    value
        .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .unwrap_or(JsValue::NULL)
}

/// `{type: 'send', probe, attempt, request, timeoutMs}`, `{type: 'warn',
/// message}`, `{type: 'debug', message}`, `{type: 'wait', untilMs}` or
/// `{type: 'done', outcome}`.
#[derive(Serialize)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum ActionOut<'a> {
    Send {
        probe: f64,
        attempt: f64,
        request: RequestOut<'a>,
        timeout_ms: f64,
    },
    Warn {
        message: &'a str,
    },
    Debug {
        message: &'a str,
    },
    Wait {
        until_ms: f64,
    },
    Done {
        outcome: OutcomeOut<'a>,
    },
}

impl<'a> From<&'a Action> for ActionOut<'a> {
    fn from(a: &'a Action) -> Self {
        match a {
            Action::Send {
                probe,
                attempt,
                request,
                timeout_ms,
            } => ActionOut::Send {
                probe: *probe as f64,
                attempt: f64::from(*attempt),
                request: request.into(),
                timeout_ms: *timeout_ms as f64,
            },
            Action::Warn { message } => ActionOut::Warn { message },
            Action::Debug { message } => ActionOut::Debug { message },
            Action::Wait { until_ms } => ActionOut::Wait {
                until_ms: *until_ms as f64,
            },
            Action::Done { outcome } => ActionOut::Done {
                outcome: outcome.into(),
            },
        }
    }
}

/// `{kind: 'accessReview' | 'rulesReview', body}` or `{kind: 'call'}`.
#[derive(Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum RequestOut<'a> {
    AccessReview { body: AccessReviewOut<'a> },
    RulesReview { body: RulesReviewOut<'a> },
    Call,
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
            Request::Call => RequestOut::Call,
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
struct AccessSpecOut<'a> {
    resource_attributes: AttributesOut<'a>,
}

#[derive(Serialize)]
struct AttributesOut<'a> {
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
struct RulesSpecOut<'a> {
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

/// `{group, resource, subresource, verbs}`, plus `verb` when set.
#[derive(Serialize)]
pub struct PermissionSpecOut<'a> {
    group: &'a str,
    resource: &'a str,
    subresource: &'a str,
    verbs: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    verb: Option<&'a str>,
}

impl<'a> From<&'a PermissionSpec> for PermissionSpecOut<'a> {
    fn from(p: &'a PermissionSpec) -> Self {
        PermissionSpecOut {
            group: &p.group,
            resource: &p.resource,
            subresource: &p.subresource,
            verbs: &p.verbs,
            verb: p.verb.as_deref(),
        }
    }
}

/// `{file, folder}` (folder null when none is to be made), or both null.
#[derive(Serialize)]
pub struct KeyLocationOut<'a> {
    file: Option<&'a str>,
    folder: Option<&'a str>,
}

impl<'a> From<Option<&'a KeyLocation>> for KeyLocationOut<'a> {
    fn from(at: Option<&'a KeyLocation>) -> Self {
        KeyLocationOut {
            file: at.map(|a| a.file.as_str()),
            folder: at.and_then(|a| a.folder.as_deref()),
        }
    }
}

/// `{folder, warning}`, one of them null.
#[derive(Serialize)]
pub struct CacheFolderOut<'a> {
    folder: Option<&'a str>,
    warning: Option<&'a str>,
}

impl<'a> From<&'a CacheFolder> for CacheFolderOut<'a> {
    fn from(answer: &'a CacheFolder) -> Self {
        match answer {
            CacheFolder::Folder(folder) => CacheFolderOut {
                folder: Some(folder),
                warning: None,
            },
            CacheFolder::None { warning } => CacheFolderOut {
                folder: None,
                warning: Some(warning),
            },
        }
    }
}

/// `{kind: 'transient' | 'fatal', why}` or
/// `{kind: 'throttled', retryAfterMs (null: use the backoff), why}`.
#[cfg(feature = "test-exports")]
#[derive(Serialize)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum ClassOut<'a> {
    Transient {
        why: &'a str,
    },
    Throttled {
        retry_after_ms: Option<f64>,
        why: &'a str,
    },
    Fatal {
        why: &'a str,
    },
}

#[cfg(feature = "test-exports")]
impl<'a> From<&'a Class> for ClassOut<'a> {
    fn from(c: &'a Class) -> Self {
        match c {
            Class::Transient { why } => ClassOut::Transient { why },
            Class::Throttled {
                retry_after_ms,
                why,
            } => ClassOut::Throttled {
                retry_after_ms: retry_after_ms.map(|ms| ms as f64),
                why,
            },
            Class::Fatal { why } => ClassOut::Fatal { why },
        }
    }
}

/// `{type: 'acquire' | 'removeStale' | 'reread' | 'useRecord'}`,
/// `{type: 'wait', untilMs}`, `{type: 'lead', budgetMs}` or
/// `{type: 'alone', budgetMs, warning (null: none)}`.
#[derive(Serialize)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum FlightActionOut<'a> {
    Acquire,
    RemoveStale,
    Reread,
    UseRecord,
    Wait {
        until_ms: f64,
    },
    Lead {
        budget_ms: f64,
    },
    Alone {
        budget_ms: f64,
        warning: Option<&'a str>,
    },
}

impl<'a> From<&'a FlightAction> for FlightActionOut<'a> {
    fn from(a: &'a FlightAction) -> Self {
        match a {
            FlightAction::Acquire => FlightActionOut::Acquire,
            FlightAction::RemoveStale => FlightActionOut::RemoveStale,
            FlightAction::Reread => FlightActionOut::Reread,
            FlightAction::UseRecord => FlightActionOut::UseRecord,
            FlightAction::Wait { until_ms } => FlightActionOut::Wait {
                until_ms: *until_ms as f64,
            },
            FlightAction::Lead { budget_ms } => FlightActionOut::Lead {
                budget_ms: *budget_ms as f64,
            },
            FlightAction::Alone { budget_ms, warning } => FlightActionOut::Alone {
                budget_ms: *budget_ms as f64,
                warning: warning.as_deref(),
            },
        }
    }
}

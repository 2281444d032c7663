//! Hand-written conversions between JS values and the core's types.
//!
//! In: plain objects as the shim builds them. A missing (`undefined`) field
//! takes its default; `null` is "none" only where the Rust field is an
//! `Option`. Anything of the wrong type is a [`Bad`] that names the field
//! (`[0].verbs[1]: expected a string, got a number`), never a panic.
//!
//! Arrays must be JS arrays (serde-wasm-bindgen also took other iterables,
//! and iterated a string as its characters).
//!
//! Out: fresh plain objects in JSON-compatible form: camelCase keys in
//! declaration order, `null` for none, plain numbers for times and counts,
//! and the tagged shapes the shim reads (`{type: 'send', ...}`,
//! `{kind: 'accessReview', body}`).

use js_sys::{Array, Object, Reflect};
use wasm_bindgen::{JsCast, JsValue};

use crate::check::{CheckAction, Fact, Level, LockCreated, LockSeen, ProcessFacts, RecordRead};
use crate::classify::{Class, ErrorFacts};
use crate::permission::{Permission, PermissionSpec};
use crate::preflight::{
    Accepted, AccessReview, Action, Outcome, ProbeResult, Request, RulesReview, Source, Verdict,
};
use crate::rules::{ResourceRule, RulesStatus};
use crate::runner_key::{FileKind, KeyFileFacts, KeyFileReport, KeyLocation};
use crate::single_flight::{FlightAction, Holder, LockAttempt};
use crate::text::quoted;

/// An input that does not have the expected shape: where, and what is wrong.
pub struct Bad(Box<Where>);

/// Boxed: a `Result<T, Bad>` is returned through every field read, and a
/// pointer is cheaper to pass along than two strings.
struct Where {
    path: String,
    problem: String,
}

impl Bad {
    fn new(problem: String) -> Bad {
        Bad(Box::new(Where {
            path: String::new(),
            problem,
        }))
    }

    fn expected(what: &str, got: &JsValue) -> Bad {
        Bad::new(format!("expected {what}, got {}", kind_of(got)))
    }

    /// The same problem, one level further out (`key` or `[index]`).
    fn at(mut self, segment: &str) -> Bad {
        if !self.0.path.is_empty() && !self.0.path.starts_with('[') {
            self.0.path.insert(0, '.');
        }
        self.0.path.insert_str(0, segment);
        self
    }

    /// `invalid <what>: <path>: <problem>`.
    pub fn message(&self, what: &str) -> String {
        if self.0.path.is_empty() {
            format!("invalid {what}: {}", self.0.problem)
        } else {
            format!("invalid {what}: {}: {}", self.0.path, self.0.problem)
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

/// JS's own spelling of a number (`NaN`, `-1`, `Infinity`): Rust's float
/// formatting would add about 15 KB of `.wasm` for one message.
pub fn js_number(n: f64) -> String {
    js_sys::Number::from(n)
        .to_string_with_radix(10)
        .ok()
        .and_then(|s| s.as_string())
        .unwrap_or_default()
}

// ---- reading ---------------------------------------------------------------
//
// Plain functions per type rather than generic helpers taking closures:
// every closure type would be another copy of the helper in the `.wasm`.

/// The fields of one JS object, read by name.
///
/// The readers do not fail one by one: a field of the wrong type reads as
/// its default and the first problem is kept, for [`Fields::done`] (or
/// [`Fields::check`]) to return. The message is the one an early return
/// would give (fields are read in order), with one `?` per object instead
/// of one per field: each of those freed what was read so far, which came
/// to kilobytes of `.wasm`.
struct Fields<'a> {
    object: &'a Object,
    bad: Option<Bad>,
}

impl<'a> Fields<'a> {
    fn of(v: &'a JsValue) -> Conv<Fields<'a>> {
        if v.is_object() {
            Ok(Fields {
                object: v.unchecked_ref(),
                bad: None,
            })
        } else {
            Err(Bad::expected("an object", v))
        }
    }

    /// `value`, or the first problem met reading the fields.
    fn done<T>(self, value: T) -> Conv<T> {
        match self.bad {
            Some(bad) => Err(bad),
            None => Ok(value),
        }
    }

    /// The first problem so far, if any (before reading depends on a field).
    fn check(&mut self) -> Conv<()> {
        match self.bad.take() {
            Some(bad) => Err(bad),
            None => Ok(()),
        }
    }

    /// Keeps `problem`, at `key`, unless an earlier field had one.
    fn fail(&mut self, key: &str, problem: Bad) {
        if self.bad.is_none() {
            self.bad = Some(problem.at(key));
        }
    }

    /// What a conversion of field `key` gave; its default if it failed.
    fn take<T: Default>(&mut self, key: &str, value: Conv<T>) -> T {
        value.unwrap_or_else(|problem| {
            self.fail(key, problem);
            T::default()
        })
    }

    /// The field's value; `None` when it is missing (`undefined`), or
    /// cannot be read.
    fn get(&mut self, key: &str) -> Option<JsValue> {
        match Reflect::get(self.object, &JsValue::from_str(key)) {
            Ok(v) if v.is_undefined() => None,
            Ok(v) => Some(v),
            Err(_) => {
                // A getter that throws (a hostile Proxy) is bad input, not
                // a crash.
                self.fail(key, Bad::new("could not be read".into()));
                None
            }
        }
    }

    /// Like [`Fields::get`], with `null` also `None` (for `Option` fields).
    fn get_some(&mut self, key: &str) -> Option<JsValue> {
        self.get(key).filter(|v| !v.is_null())
    }

    /// A string that must be there.
    fn required_string(&mut self, key: &str) -> String {
        match self.get(key) {
            Some(v) => self.take(key, string(&v)),
            None => {
                self.fail(key, Bad::new("missing".into()));
                String::new()
            }
        }
    }

    /// A string; missing is `""`.
    fn string(&mut self, key: &str) -> String {
        match self.get(key) {
            Some(v) => self.take(key, string(&v)),
            None => String::new(),
        }
    }

    /// A string; missing or `null` is `None`.
    fn optional_string(&mut self, key: &str) -> Option<String> {
        match self.get_some(key) {
            Some(v) => self.take(key, string(&v).map(Some)),
            None => None,
        }
    }

    /// An array of strings; missing is empty.
    fn strings(&mut self, key: &str) -> Vec<String> {
        match self.get(key) {
            Some(v) => self.take(key, list(&v, string)),
            None => Vec::new(),
        }
    }

    /// A boolean that must be there.
    fn required_flag(&mut self, key: &str) -> bool {
        match self.get(key) {
            Some(v) => self.take(key, boolean(&v)),
            None => {
                self.fail(key, Bad::new("missing".into()));
                false
            }
        }
    }

    /// A boolean; missing is `false`.
    fn flag(&mut self, key: &str) -> bool {
        match self.get(key) {
            Some(v) => self.take(key, boolean(&v)),
            None => false,
        }
    }
}

fn string(v: &JsValue) -> Conv<String> {
    v.as_string().ok_or_else(|| Bad::expected("a string", v))
}

fn boolean(v: &JsValue) -> Conv<bool> {
    v.as_bool().ok_or_else(|| Bad::expected("true or false", v))
}

fn http_status(v: &JsValue) -> Conv<u16> {
    let expected = "a whole number from 0 to 65535";
    let n = v.as_f64().ok_or_else(|| Bad::expected(expected, v))?;
    if (0.0..=65535.0).contains(&n) && n == f64::from(n as u16) {
        Ok(n as u16)
    } else {
        Err(Bad::new(format!(
            "expected {expected}, got {}",
            js_number(n)
        )))
    }
}

/// A JS array, item by item.
fn list<T>(v: &JsValue, read: fn(&JsValue) -> Conv<T>) -> Conv<Vec<T>> {
    let array = v
        .dyn_ref::<Array>()
        .ok_or_else(|| Bad::expected("an array", v))?;
    let mut items = Vec::with_capacity(array.length() as usize);
    for i in 0..array.length() {
        match read(&array.get(i)) {
            Ok(item) => items.push(item),
            Err(e) => return Err(e.at(&format!("[{i}]"))),
        }
    }
    Ok(items)
}

/// The permission table: an array of rows.
pub fn permission_specs(v: &JsValue) -> Conv<Vec<PermissionSpec>> {
    list(v, permission_spec)
}

/// Flattened permissions: an array of them.
pub fn permissions(v: &JsValue) -> Conv<Vec<Permission>> {
    list(v, permission)
}

/// A row of the permission table: `{group?, resource?, subresource?, verbs?, verb?}`.
fn permission_spec(v: &JsValue) -> Conv<PermissionSpec> {
    let mut f = Fields::of(v)?;
    let spec = PermissionSpec {
        group: f.string("group"),
        resource: f.string("resource"),
        subresource: f.string("subresource"),
        verbs: f.strings("verbs"),
        verb: f.optional_string("verb"),
    };
    f.done(spec)
}

/// One flattened permission: `{verb, group, resource, subresource}`, all required.
fn permission(v: &JsValue) -> Conv<Permission> {
    let mut f = Fields::of(v)?;
    let permission = Permission {
        verb: f.required_string("verb"),
        group: f.required_string("group"),
        resource: f.required_string("resource"),
        subresource: f.required_string("subresource"),
    };
    f.done(permission)
}

/// What the shim saw about a failure (see `js-shim/facts.js`).
pub fn error_facts(v: &JsValue) -> Conv<ErrorFacts> {
    let mut f = Fields::of(v)?;
    let status = match f.get_some("status") {
        Some(v) => f.take("status", http_status(&v).map(Some)),
        None => None,
    };
    let facts = ErrorFacts {
        codes: f.strings("codes"),
        status,
        retry_after: f.optional_string("retryAfter"),
        timed_out: f.flag("timedOut"),
        name: f.optional_string("name"),
        message: f.string("message"),
        credential_source: f.optional_string("credentialSource"),
    };
    f.done(facts)
}

/// The `status` of a SelfSubjectRulesReview.
pub fn rules_status(v: &JsValue) -> Conv<RulesStatus> {
    let mut f = Fields::of(v)?;
    let resource_rules = match f.get("resourceRules") {
        Some(v) => f.take("resourceRules", list(&v, resource_rule)),
        None => Vec::new(),
    };
    let status = RulesStatus {
        resource_rules,
        incomplete: f.flag("incomplete"),
        evaluation_error: f.optional_string("evaluationError"),
    };
    f.done(status)
}

fn resource_rule(v: &JsValue) -> Conv<ResourceRule> {
    let mut f = Fields::of(v)?;
    let rule = ResourceRule {
        verbs: f.strings("verbs"),
        api_groups: f.strings("apiGroups"),
        resources: f.strings("resources"),
        resource_names: f.strings("resourceNames"),
    };
    f.done(rule)
}

/// A request's result, by its `type`: `{type: 'reviewed', allowed, reason?}`,
/// `{type: 'rulesReviewed', status?}`, `{type: 'accessBody', body}`,
/// `{type: 'rulesBody', body}`, `{type: 'succeeded'}` or
/// `{type: 'failed', facts?}`. Only the fields of that type are read.
pub fn probe_result(v: &JsValue) -> Conv<ProbeResult> {
    let mut f = Fields::of(v)?;
    let kind = f.required_string("type");
    f.check()?;
    let result = match kind.as_str() {
        "reviewed" => ProbeResult::Reviewed {
            allowed: f.required_flag("allowed"),
            reason: f.optional_string("reason"),
        },
        "rulesReviewed" => ProbeResult::RulesReviewed {
            status: match f.get_some("status") {
                Some(v) => f.take("status", rules_status(&v)),
                None => RulesStatus::default(),
            },
        },
        "accessBody" => ProbeResult::AccessBody {
            body: f.required_string("body"),
        },
        "rulesBody" => ProbeResult::RulesBody {
            body: f.required_string("body"),
        },
        "succeeded" => ProbeResult::Succeeded,
        "failed" => ProbeResult::Failed {
            facts: match f.get_some("facts") {
                Some(v) => f.take("facts", error_facts(&v)),
                None => ErrorFacts::default(),
            },
        },
        other => {
            return Err(Bad::new(format!(
                "{} (expected reviewed, rulesReviewed, accessBody, rulesBody, succeeded or failed)",
                quoted(other)
            ))
            .at("type"))
        }
    };
    f.done(result)
}

/// `{type: 'acquired'}`, `{type: 'unavailable'}`, or `{type: 'held', ageMs,
/// holder}` with holder `alive`, `dead`, `unknown` or `invalid`. A negative
/// age (a clock stepped back) reads as 0.
pub fn lock_attempt(v: &JsValue) -> Conv<LockAttempt> {
    let mut f = Fields::of(v)?;
    let kind = f.required_string("type");
    f.check()?;
    match kind.as_str() {
        "acquired" => Ok(LockAttempt::Acquired),
        "unavailable" => Ok(LockAttempt::Unavailable),
        "held" => {
            let age = match f.get("ageMs") {
                Some(a) => a
                    .as_f64()
                    .filter(|n| n.is_finite())
                    .ok_or_else(|| Bad::expected("a finite number of ms", &a).at("ageMs"))?,
                None => {
                    f.check()?;
                    return Err(Bad::new("missing".into()).at("ageMs"));
                }
            };
            let holder = f.required_string("holder");
            f.check()?;
            let holder = match holder.as_str() {
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
                age_ms: age.max(0.0) as u64,
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

/// The shim's report on the runner key file: `{type: 'missing' | 'none'}`,
/// `{type: 'failed', code}`, or `{type: 'found', kind: 'file' | 'symlink' |
/// 'directory' | 'other', mode, uid, bytes (a Uint8Array)}`; each with
/// `processUid` (a number or null) and `createError` (a code or null).
/// `none` (nothing looked at, for want of a path) reads as missing.
pub fn key_file_report(v: &JsValue) -> Conv<KeyFileReport> {
    let mut f = Fields::of(v)?;
    let kind = f.required_string("type");
    let process_uid = match f.get_some("processUid") {
        Some(n) => f.take("processUid", uid(&n).map(Some)),
        None => None,
    };
    let create_error = f.optional_string("createError");
    f.check()?;
    let facts = match kind.as_str() {
        "missing" | "none" => KeyFileFacts::Missing,
        "failed" => KeyFileFacts::Failed {
            code: f.string("code"),
        },
        "found" => {
            let kind = f.required_string("kind");
            f.check()?;
            let kind = match kind.as_str() {
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
            let mode = match f.get("mode") {
                Some(n) => f.take("mode", uid(&n)),
                None => 0,
            };
            let owner = match f.get("uid") {
                Some(n) => f.take("uid", uid(&n)),
                None => {
                    f.fail("uid", Bad::new("missing".into()));
                    0
                }
            };
            let bytes = match f.get_some("bytes") {
                Some(b) => match b.dyn_ref::<js_sys::Uint8Array>() {
                    Some(array) => array.to_vec(),
                    None => {
                        f.fail("bytes", Bad::expected("a Uint8Array", &b));
                        Vec::new()
                    }
                },
                None => Vec::new(),
            };
            KeyFileFacts::Found {
                kind,
                mode,
                owner,
                bytes,
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
    f.done(KeyFileReport {
        facts,
        process_uid,
        create_error,
    })
}

/// A whole number from 0 to 2^32 - 1 (a uid, a mode).
fn uid(v: &JsValue) -> Conv<u32> {
    let expected = "a whole number from 0 to 4294967295";
    let n = v.as_f64().ok_or_else(|| Bad::expected(expected, v))?;
    if (0.0..=4_294_967_295.0).contains(&n) && n == f64::from(n as u32) {
        Ok(n as u32)
    } else {
        Err(Bad::new(format!(
            "expected {expected}, got {}",
            js_number(n)
        )))
    }
}

// ---- writing ---------------------------------------------------------------

/// A fresh plain object with these entries, in this order.
fn object(entries: &[(&str, JsValue)]) -> JsValue {
    let o = Object::new();
    for (key, value) in entries {
        // Defining a property on a fresh plain object cannot fail.
        let _ = Reflect::set(&o, &JsValue::from_str(key), value);
    }
    o.into()
}

fn text(s: &str) -> JsValue {
    JsValue::from_str(s)
}

/// A time or count as a plain JS number.
fn number(n: u64) -> JsValue {
    JsValue::from_f64(n as f64)
}

fn text_or_null(s: Option<&str>) -> JsValue {
    s.map_or(JsValue::NULL, text)
}

fn texts(items: &[String]) -> JsValue {
    let array = Array::new();
    for s in items {
        array.push(&text(s));
    }
    array.into()
}

/// `{type: 'send', probe, attempt, request, timeoutMs}`, `{type: 'warn',
/// message}`, `{type: 'debug', message}`, `{type: 'wait', untilMs}` or
/// `{type: 'done', outcome}`.
pub fn action(a: &Action) -> JsValue {
    match a {
        Action::Send {
            probe,
            attempt,
            request: r,
            timeout_ms,
        } => object(&[
            ("type", text("send")),
            ("probe", number(*probe as u64)),
            ("attempt", number(u64::from(*attempt))),
            ("request", request(r)),
            ("timeoutMs", number(*timeout_ms)),
        ]),
        Action::Warn { message } => object(&[("type", text("warn")), ("message", text(message))]),
        Action::Debug { message } => object(&[("type", text("debug")), ("message", text(message))]),
        Action::Wait { until_ms } => {
            object(&[("type", text("wait")), ("untilMs", number(*until_ms))])
        }
        Action::Done { outcome: o } => object(&[("type", text("done")), ("outcome", outcome(o))]),
    }
}

/// `{kind: 'accessReview' | 'rulesReview', body}` or `{kind: 'call'}`.
fn request(r: &Request) -> JsValue {
    match r {
        Request::AccessReview(body) => object(&[
            ("kind", text("accessReview")),
            ("body", access_review(body)),
        ]),
        Request::RulesReview(body) => {
            object(&[("kind", text("rulesReview")), ("body", rules_review(body))])
        }
        Request::Call => object(&[("kind", text("call"))]),
    }
}

/// A SelfSubjectAccessReview exactly as the Kubernetes API takes it.
fn access_review(r: &AccessReview) -> JsValue {
    let a = &r.spec.resource_attributes;
    let attributes = object(&[
        ("namespace", text(&a.namespace)),
        ("group", text(&a.group)),
        ("resource", text(&a.resource)),
        ("subresource", text(&a.subresource)),
        ("verb", text(&a.verb)),
    ]);
    object(&[
        ("apiVersion", text(&r.api_version)),
        ("kind", text(&r.kind)),
        ("spec", object(&[("resourceAttributes", attributes)])),
    ])
}

/// A SelfSubjectRulesReview exactly as the Kubernetes API takes it.
fn rules_review(r: &RulesReview) -> JsValue {
    object(&[
        ("apiVersion", text(&r.api_version)),
        ("kind", text(&r.kind)),
        ("spec", object(&[("namespace", text(&r.spec.namespace))])),
    ])
}

/// The outcome of a check; every key always present.
pub fn outcome(o: &Outcome) -> JsValue {
    object(&[
        ("verdict", text(verdict_name(o.verdict))),
        (
            "source",
            o.source.map_or(JsValue::NULL, |s| text(source_name(s))),
        ),
        ("missing", permissions_out(&o.missing)),
        ("message", text(&o.message)),
        ("warnings", texts(&o.warnings)),
        ("record", text_or_null(o.record.as_deref())),
        ("deleteRecord", JsValue::from_bool(o.delete_record)),
        ("proceed", JsValue::from_bool(o.proceed)),
        ("lastError", text_or_null(o.last_error.as_deref())),
        ("requests", number(u64::from(o.requests))),
        ("provenByRules", number(u64::from(o.proven_by_rules))),
        ("elapsedMs", number(o.elapsed_ms)),
    ])
}

fn verdict_name(v: Verdict) -> &'static str {
    match v {
        Verdict::Allowed => "allowed",
        Verdict::Denied => "denied",
        Verdict::Inconclusive => "inconclusive",
        Verdict::Error => "error",
    }
}

fn source_name(s: Source) -> &'static str {
    match s {
        Source::Reviews => "reviews",
        Source::Cache => "cache",
        Source::GraceCache => "graceCache",
    }
}

/// `[{verb, group, resource, subresource}, ...]`.
fn permissions_out(list: &[Permission]) -> JsValue {
    let array = Array::new();
    for p in list {
        array.push(&object(&[
            ("verb", text(&p.verb)),
            ("group", text(&p.group)),
            ("resource", text(&p.resource)),
            ("subresource", text(&p.subresource)),
        ]));
    }
    array.into()
}

/// `{group, resource, subresource, verbs}`, plus `verb` when set.
pub fn permission_spec_out(p: &PermissionSpec) -> JsValue {
    let mut entries = vec![
        ("group", text(&p.group)),
        ("resource", text(&p.resource)),
        ("subresource", text(&p.subresource)),
        ("verbs", texts(&p.verbs)),
    ];
    if let Some(verb) = &p.verb {
        entries.push(("verb", text(verb)));
    }
    object(&entries)
}

/// `{file, folder}` (folder null when none is to be made), or both null.
pub fn key_location(at: Option<&KeyLocation>) -> JsValue {
    object(&[
        ("file", text_or_null(at.map(|a| a.file.as_str()))),
        ("folder", text_or_null(at.and_then(|a| a.folder.as_deref()))),
    ])
}

/// `'applied'` or `'stale'`.
pub fn accepted(a: Accepted) -> JsValue {
    text(match a {
        Accepted::Applied => "applied",
        Accepted::Stale => "stale",
    })
}

/// `{kind: 'transient' | 'fatal', why}` or
/// `{kind: 'throttled', retryAfterMs (null: use the backoff), why}`.
pub fn class(c: &Class) -> JsValue {
    match c {
        Class::Transient { why } => object(&[("kind", text("transient")), ("why", text(why))]),
        Class::Throttled {
            retry_after_ms,
            why,
        } => object(&[
            ("kind", text("throttled")),
            ("retryAfterMs", retry_after_ms.map_or(JsValue::NULL, number)),
            ("why", text(why)),
        ]),
        Class::Fatal { why } => object(&[("kind", text("fatal")), ("why", text(why))]),
    }
}

/// `{type: 'acquire' | 'removeStale' | 'reread' | 'useRecord'}`,
/// `{type: 'wait', untilMs}`, `{type: 'lead', budgetMs}` or
/// `{type: 'alone', budgetMs, warning (null: none)}`.
pub fn flight_action(a: &FlightAction) -> JsValue {
    match a {
        FlightAction::Acquire => object(&[("type", text("acquire"))]),
        FlightAction::RemoveStale => object(&[("type", text("removeStale"))]),
        FlightAction::Reread => object(&[("type", text("reread"))]),
        FlightAction::UseRecord => object(&[("type", text("useRecord"))]),
        FlightAction::Wait { until_ms } => {
            object(&[("type", text("wait")), ("untilMs", number(*until_ms))])
        }
        FlightAction::Lead { budget_ms } => {
            object(&[("type", text("lead")), ("budgetMs", number(*budget_ms))])
        }
        FlightAction::Alone { budget_ms, warning } => object(&[
            ("type", text("alone")),
            ("budgetMs", number(*budget_ms)),
            ("warning", text_or_null(warning.as_deref())),
        ]),
    }
}

// ---- the check machine -----------------------------------------------------

/// `{pid, host}`: this process, as its lock names it.
pub fn process_facts(v: &JsValue) -> Conv<ProcessFacts> {
    let mut f = Fields::of(v)?;
    let pid = match f.get("pid") {
        Some(n) => f.take("pid", uid(&n)),
        None => {
            f.fail("pid", Bad::new("missing".into()));
            0
        }
    };
    let host = f.required_string("host");
    f.done(ProcessFacts { pid, host })
}

/// An array of facts (see [`fact`]).
pub fn facts(v: &JsValue) -> Conv<Vec<Fact>> {
    list(v, fact)
}

/// One fact, tagged by `type`: `keyFile {report}`, `recordBytes {bytes}`,
/// `recordOpenFailed {code}`, `recordNotAFile`, `recordReadFailed {code}`,
/// `lockLinked`, `lockTempFailed {code}`, `lockLinkFailed {code, fsNowMs}`,
/// `lockStatFailed {code}`, `lockFound {isFile, mtimeMs, content}`,
/// `process {code}`, `removed {code}`, `written {code}`, `deleted {code}`
/// (`code` null: it worked), or `response {probe, attempt, result}`.
fn fact(v: &JsValue) -> Conv<Fact> {
    let mut f = Fields::of(v)?;
    let kind = f.required_string("type");
    f.check()?;
    let fact = match kind.as_str() {
        "keyFile" => {
            let report = match f.get("report") {
                Some(r) => key_file_report(&r).map_err(|e| e.at("report"))?,
                None => return Err(Bad::new("missing".into()).at("report")),
            };
            Fact::KeyFile(report)
        }
        "recordBytes" => Fact::Record(RecordRead::Bytes(f.bytes("bytes"))),
        "recordOpenFailed" => Fact::Record(RecordRead::OpenFailed {
            code: f.required_string("code"),
        }),
        "recordNotAFile" => Fact::Record(RecordRead::NotAFile),
        "recordReadFailed" => Fact::Record(RecordRead::ReadFailed {
            code: f.required_string("code"),
        }),
        "lockLinked" => Fact::LockCreated(LockCreated::Linked),
        "lockTempFailed" => Fact::LockCreated(LockCreated::TempFailed {
            code: f.required_string("code"),
        }),
        "lockLinkFailed" => {
            let code = f.required_string("code");
            let fs_now_ms = f
                .get_some("fsNowMs")
                .map(|n| f.take("fsNowMs", file_time(&n)));
            Fact::LockCreated(LockCreated::LinkFailed { code, fs_now_ms })
        }
        "lockStatFailed" => Fact::LockSeen(LockSeen::StatFailed {
            code: f.required_string("code"),
        }),
        "lockFound" => {
            let is_file = f.required_flag("isFile");
            let mtime_ms = match f.get("mtimeMs") {
                Some(n) => f.take("mtimeMs", file_time(&n)),
                None => {
                    f.fail("mtimeMs", Bad::new("missing".into()));
                    0
                }
            };
            let content = f.get_some("content").map(|_| f.bytes("content"));
            Fact::LockSeen(LockSeen::Found {
                is_file,
                mtime_ms,
                content,
            })
        }
        "process" => Fact::Process {
            code: f.optional_string("code"),
        },
        "removed" => Fact::Removed {
            code: f.optional_string("code"),
        },
        "written" => Fact::Written {
            code: f.optional_string("code"),
        },
        "deleted" => Fact::Deleted {
            code: f.optional_string("code"),
        },
        "response" => {
            let probe = match f.get("probe") {
                Some(n) => f.take("probe", uid(&n)),
                None => 0,
            };
            let attempt = match f.get("attempt") {
                Some(n) => f.take("attempt", uid(&n)),
                None => 0,
            };
            f.check()?;
            let result = match f.get("result") {
                Some(r) => probe_result(&r).map_err(|e| e.at("result"))?,
                None => return Err(Bad::new("missing".into()).at("result")),
            };
            Fact::Response {
                probe: probe as usize,
                attempt,
                result,
            }
        }
        other => {
            return Err(Bad::new(format!("{} is not a fact", quoted(other))).at("type"));
        }
    };
    f.done(fact)
}

/// A file time in epoch ms (`stat.mtimeMs`: fractional, and before 1970
/// for a file whose time was set so): whole ms, at least 0.
fn file_time(v: &JsValue) -> Conv<u64> {
    let n = v
        .as_f64()
        .filter(|n| n.is_finite())
        .ok_or_else(|| Bad::expected("a finite number", v))?;
    Ok(n.clamp(0.0, 9_007_199_254_740_991.0) as u64)
}

impl Fields<'_> {
    /// A Uint8Array; missing is empty.
    fn bytes(&mut self, key: &str) -> Vec<u8> {
        match self.get(key) {
            Some(b) => match b.dyn_ref::<js_sys::Uint8Array>() {
                Some(array) => array.to_vec(),
                None => {
                    self.fail(key, Bad::expected("a Uint8Array", &b));
                    Vec::new()
                }
            },
            None => Vec::new(),
        }
    }
}

/// One action of the check machine, tagged by `type` (see
/// `src/check/action.rs`): `readKeyFile {file, limit}`, `createKeyFile
/// {file, folder, text, limit}`, `readRecord {file, limit}`, `createLock
/// {file, content}`, `inspectLock {file, limit}`, `probeProcess {pid}`,
/// `removeFile {file}`, `writeRecord {file, text}`, `deleteRecord {file}`,
/// `send {probe, attempt, request, timeoutMs}`, `log {level, message}`,
/// `wait {untilMs}`, `done {outcome}`.
pub fn check_action(a: &CheckAction) -> JsValue {
    match a {
        CheckAction::ReadKeyFile { file, limit } => object(&[
            ("type", text("readKeyFile")),
            ("file", text(file)),
            ("limit", number(u64::from(*limit))),
        ]),
        CheckAction::CreateKeyFile {
            file,
            folder,
            text: content,
            limit,
        } => object(&[
            ("type", text("createKeyFile")),
            ("file", text(file)),
            ("folder", text_or_null(folder.as_deref())),
            ("text", text(content)),
            ("limit", number(u64::from(*limit))),
        ]),
        CheckAction::ReadRecord { file, limit } => object(&[
            ("type", text("readRecord")),
            ("file", text(file)),
            ("limit", number(u64::from(*limit))),
        ]),
        CheckAction::CreateLock { file, content } => object(&[
            ("type", text("createLock")),
            ("file", text(file)),
            ("content", text(content)),
        ]),
        CheckAction::InspectLock { file, limit } => object(&[
            ("type", text("inspectLock")),
            ("file", text(file)),
            ("limit", number(u64::from(*limit))),
        ]),
        CheckAction::ProbeProcess { pid } => object(&[
            ("type", text("probeProcess")),
            ("pid", number(u64::from(*pid))),
        ]),
        CheckAction::RemoveFile { file } => {
            object(&[("type", text("removeFile")), ("file", text(file))])
        }
        CheckAction::WriteRecord {
            file,
            text: content,
        } => object(&[
            ("type", text("writeRecord")),
            ("file", text(file)),
            ("text", text(content)),
        ]),
        CheckAction::DeleteRecord { file } => {
            object(&[("type", text("deleteRecord")), ("file", text(file))])
        }
        CheckAction::Send {
            probe,
            attempt,
            request: r,
            timeout_ms,
        } => object(&[
            ("type", text("send")),
            ("probe", number(*probe as u64)),
            ("attempt", number(u64::from(*attempt))),
            ("request", request(r)),
            ("timeoutMs", number(*timeout_ms)),
        ]),
        CheckAction::Log { level, message } => object(&[
            ("type", text("log")),
            (
                "level",
                text(match level {
                    Level::Debug => "debug",
                    Level::Info => "info",
                    Level::Warning => "warning",
                    Level::Error => "error",
                }),
            ),
            ("message", text(message)),
        ]),
        CheckAction::Wait { until_ms } => {
            object(&[("type", text("wait")), ("untilMs", number(*until_ms))])
        }
        CheckAction::Done { outcome: o } => {
            object(&[("type", text("done")), ("outcome", outcome(o))])
        }
    }
}

//! The boundary's wire types: plain structs and enums in the shapes the shim
//! builds and reads (camelCase keys), and their conversions to and from the
//! core's types. No decisions.
//!
//! In: `#[derive(Deserialize)]` types, read by [`super::de`] (a serde
//! `Deserializer` over the JS value that names a bad field:
//! `[0].verbs[1]: expected a string, got a number`). A tagged input is a
//! wire enum: an object whose `type` names the variant, with the variant's
//! fields beside it; a new kind of fact is a new variant.
//!
//! Out: `#[derive(Serialize)]` types, written by serde-wasm-bindgen's
//! JSON-compatible serializer ([`write`]): fresh plain objects, keys in
//! declaration order, `null` for none, plain numbers for times and counts,
//! and the tagged shapes the shim reads (`#[serde(tag = "type")]`:
//! `{type: 'send', ...}`; `{kind: 'accessReview', body}`).
//!
//! One file per machine: the check's facts, actions and outcome
//! (`check.rs`), a call's spec, facts and actions (`call.rs`); what both
//! read and write stays here (the permission table, error facts, `write`);
//! what only tests use is in `test_exports.rs`.

use serde::de::Visitor;
use serde::{Deserialize, Deserializer, Serialize};
use wasm_bindgen::{JsCast, JsValue};

use super::de::{read, Bad};
use crate::classify::ErrorFacts;
use crate::permission::PermissionSpec;
#[cfg(feature = "test-exports")]
use crate::rules::{ResourceRule, RulesStatus};

mod call;
mod check;
mod credential;
#[cfg(feature = "test-exports")]
mod test_exports;
pub use call::*;
pub use check::*;
pub use credential::*;
#[cfg(feature = "test-exports")]
pub use test_exports::*;

// ---- reading ---------------------------------------------------------------

/// A row of the permission table: `{group?, resource?, subresource?, verbs?, verb?}`.
#[derive(Deserialize)]
struct PermissionSpecIn {
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
pub fn permission_specs(v: &JsValue) -> Result<Vec<PermissionSpec>, Bad> {
    let rows: Vec<PermissionSpecIn> = read(v)?;
    Ok(rows
        .into_iter()
        .map(|r| PermissionSpec {
            group: r.group,
            resource: r.resource,
            subresource: r.subresource,
            verbs: r.verbs,
            verb: r.verb,
        })
        .collect())
}

/// What the shim saw about a failure (see `js-shim/facts.js`).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ErrorFactsIn {
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
    #[serde(default)]
    body: Option<String>,
}

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
            body: f.body,
        }
    }
}

// ---- writing ---------------------------------------------------------------

/// The `type` of a lock attempt, read before the rest (its unknown-type
/// message predates the wire enums).
#[derive(Deserialize)]
struct TagIn {
    #[serde(rename = "type")]
    kind: String,
}

/// A fresh plain JS value for `value`.
pub fn write<T: Serialize>(value: &T) -> JsValue {
    // Every wire type below is plain strings, booleans, numbers as `f64`,
    // options and lists: serializing cannot fail.
    value
        .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .unwrap_or(JsValue::NULL)
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

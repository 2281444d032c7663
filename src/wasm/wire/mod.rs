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

use serde::{Deserialize, Serialize};
use wasm_bindgen::{JsCast, JsValue};

use super::de::{read, Bad};
use crate::protocol::Bytes;

mod call;
mod check;
#[cfg(feature = "test-exports")]
mod test_exports;
pub use call::*;
pub use check::*;
#[cfg(feature = "test-exports")]
pub use test_exports::*;

/// The `type` of a tagged input, read before the rest when its variants
/// are not one serde enum.
#[derive(Deserialize)]
struct TagIn {
    #[serde(rename = "type")]
    kind: String,
}

/// The items of a JS array, each read by `item`; a bad one is named by
/// its index.
fn items<T>(v: &JsValue, item: impl Fn(JsValue) -> Result<T, Bad>) -> Result<Vec<T>, Bad> {
    let Some(list) = v.dyn_ref::<js_sys::Array>() else {
        return Err(Bad::new("expected an array".into()));
    };
    let item = |(i, x)| item(x).map_err(|e| e.at_index(i));
    list.iter().enumerate().map(item).collect()
}

/// A fresh plain JS value for `value`.
pub fn write<T: Serialize>(value: &T) -> JsValue {
    // Every type written is plain strings, booleans, numbers (times below
    // 2^53), options and lists: serializing cannot fail.
    value
        .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .unwrap_or(JsValue::NULL)
}

//! The boundary's few wire types: the shapes the shim builds and reads that
//! are not a core type's own. No decisions.
//!
//! Most of what crosses is a core type with `#[derive(Deserialize)]` or
//! `#[derive(Serialize)]` and the serde attributes of its wire shape
//! (camelCase keys, `#[serde(tag = "type")]`, `default`, ...): read by
//! [`super::de`] (a serde `Deserializer` over the JS value that names a bad
//! field: `[0].verbs[1]: expected a string, got a number`; a tagged input is
//! an object whose `type` names the variant, with the variant's fields beside
//! it), written by serde-wasm-bindgen's JSON-compatible serializer
//! ([`write`]: fresh plain objects, keys in declaration order, `null` for
//! none, plain numbers for times and counts).
//!
//! What is here is where the two shapes differ: the check's file facts, whose
//! `type` names a variant of a variant (`recordBytes`, `lockFound`) and whose
//! key file report carries fields beside its own `type` (`check.rs`); a
//! call's facts and its `send` and read-back, written in the check's `send`
//! shape (`call.rs`); what only tests use is in `test_exports.rs`.

use serde::{Deserialize, Serialize};
use wasm_bindgen::{JsCast, JsValue};

use super::de::{field, read, read_field, Bad};
use crate::protocol::Bytes;

mod call;
mod check;
mod credential;
mod durable;
#[cfg(feature = "test-exports")]
mod test_exports;
pub use call::*;
pub use check::*;
pub use credential::*;
pub use durable::*;
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

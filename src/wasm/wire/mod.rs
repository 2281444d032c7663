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
mod copy;
mod credential;
mod durable;
#[cfg(feature = "test-exports")]
mod test_exports;
pub use call::*;
pub use check::*;
pub use copy::*;
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

/// `field` of `v` as `W`, or `W::default()` when it is absent (`undefined`
/// or `null`).
fn optional<W: serde::de::DeserializeOwned + Default>(v: &JsValue, key: &str) -> Result<W, Bad> {
    let value = field(v, key)?;
    if value.is_undefined() || value.is_null() {
        return Ok(W::default());
    }
    read(&value).map_err(|e| e.at(key))
}

/// A fresh plain object of `pairs`, written key by key.
fn object(pairs: &[(&str, JsValue)]) -> JsValue {
    let o = js_sys::Object::new();
    for (key, value) in pairs {
        // Setting a key of a fresh plain object cannot fail.
        let _ = js_sys::Reflect::set(&o, &JsValue::from_str(key), value);
    }
    o.into()
}

fn text(s: &str) -> JsValue {
    JsValue::from_str(s)
}

fn number(n: u64) -> JsValue {
    JsValue::from_f64(n as f64)
}

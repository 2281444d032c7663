//! Reading JS values into the types that cross the boundary (the core's,
//! derived, and [`super::wire`]'s): a serde `Deserializer` over a `JsValue`
//! that names the field a bad value is in.
//!
//! serde-wasm-bindgen's own deserializer says what was wrong but not where,
//! and its error texts (serde's `invalid type: floating point ...`) bring
//! float formatting into the `.wasm`; a path tracker around it
//! (serde_path_to_error) cost about 23 KB. This one is small: it reads a
//! value only as the wire type asks for it (`deserialize_string` wants a
//! string, and so on), so every refusal is made here, where the value and
//! its place are known, in the boundary's own words:
//! `[0].verbs[1]: expected a string, got a number`.
//!
//! The rules, the same for every wire type:
//! - an object's fields are read in the wire struct's order, by name; a
//!   field that is missing or `undefined` is absent (its `#[serde(default)]`
//!   applies, or it is `missing`); other keys are never looked at;
//! - `null` is "none" for an `Option` and a wrong type anywhere else;
//! - arrays must be JS arrays; bytes must be a `Uint8Array`;
//! - whole numbers (`u16`, `u32`) must be whole and in range; an `f64` is a
//!   time in ms and must be finite;
//! - an enum is an object whose `type` names the variant, with the
//!   variant's fields beside it (`{type: 'reviewed', allowed: true}`): add
//!   a variant to the wire enum and it is read; a `type` that names none is
//!   `type: "x" (expected a, b or c)`;
//! - a string that names one of a few values is a unit-only enum marked
//!   `#[serde(variant_identifier)]` (`holder: 'alive'`); another string is
//!   `expected a, b or c, got "x"`.

use js_sys::{Array, Reflect, Uint8Array};
use serde::de::value::{BorrowedStrDeserializer, StrDeserializer};
use serde::de::{
    self, DeserializeOwned, DeserializeSeed, EnumAccess, MapAccess, SeqAccess, VariantAccess,
    Visitor,
};
use serde::forward_to_deserialize_any;
use wasm_bindgen::{JsCast, JsValue};

use crate::bad_input::one_of;
pub use crate::bad_input::Bad;
use crate::text::quoted;

/// `expected <what>, got <what v is>`.
fn expected(what: &str, v: &JsValue) -> Bad {
    Bad::expected(what, &kind_of(v))
}

/// What a value is, for messages: `a string`, `null`, `an array`, ...
/// (JS's `typeof`, with `null` and arrays told apart).
fn kind_of(v: &JsValue) -> String {
    match js_type(v) {
        _ if v.is_null() => "null".into(),
        _ if v.is_undefined() => "undefined".into(),
        t @ ("array" | "object") => format!("an {t}"),
        t => format!("a {t}"),
    }
}

/// JS's `typeof` of a value that is not `undefined`, with arrays told apart
/// from other objects.
pub fn js_type(v: &JsValue) -> &'static str {
    #[rustfmt::skip]
    const TYPES: [&str; 6] = ["string", "number", "boolean", "bigint", "symbol", "function"];
    if Array::is_array(v) {
        return "array";
    }
    let name = v.js_typeof();
    TYPES.into_iter().find(|t| name == *t).unwrap_or("object")
}

/// JS's own spelling of a number (`NaN`, `-1`, `403.5`): Rust's float
/// formatting would add its own code for one message.
pub fn js_number(n: f64) -> String {
    js_sys::Number::from(n)
        .to_string_with_radix(10)
        .ok()
        .and_then(|s| s.as_string())
        .unwrap_or_default()
}

/// `value` as the wire type `W`.
pub fn read<W: DeserializeOwned>(value: &JsValue) -> Result<W, Bad> {
    W::deserialize(In(value.clone()))
}

/// The field `key` of `object` as `W`, a bad one named by its key. For
/// an object read field by field: a type read this way adds no reader of
/// its own to the `.wasm` beyond its fields'.
pub fn read_field<W: DeserializeOwned>(object: &JsValue, key: &str) -> Result<W, Bad> {
    read(&field(object, key)?).map_err(|e| e.at(key))
}

/// One JS value being read.
struct In(JsValue);

impl In {
    /// A whole number from 0 to `max`, as `f64` (exact for any `u32`).
    fn whole(&self, max: u32) -> Result<f64, Bad> {
        let want = if max == u32::from(u16::MAX) {
            "a whole number from 0 to 65535"
        } else {
            "a whole number from 0 to 4294967295"
        };
        let n = self.0.as_f64().ok_or_else(|| expected(want, &self.0))?;
        if (0.0..=f64::from(max)).contains(&n) && n.fract() == 0.0 {
            Ok(n)
        } else {
            Err(Bad::expected(want, &js_number(n)))
        }
    }
}

impl<'de> de::Deserializer<'de> for In {
    type Error = Bad;

    /// No wire type asks for "anything": every field says what it wants.
    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Bad> {
        Err(Bad::new(format!("unexpected {}", kind_of(&self.0))))
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Bad> {
        match self.0.as_bool() {
            Some(b) => visitor.visit_bool(b),
            None => Err(expected("true or false", &self.0)),
        }
    }

    fn deserialize_u16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Bad> {
        visitor.visit_u16(self.whole(u32::from(u16::MAX))? as u16)
    }

    fn deserialize_u32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Bad> {
        visitor.visit_u32(self.whole(u32::MAX)? as u32)
    }

    /// Numbers that are not counts are times in ms: finite.
    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Bad> {
        match self.0.as_f64() {
            Some(n) if n.is_finite() => visitor.visit_f64(n),
            Some(n) => Err(Bad::expected("a finite number of ms", &js_number(n))),
            None => Err(expected("a finite number of ms", &self.0)),
        }
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Bad> {
        match self.0.as_string() {
            Some(s) => visitor.visit_string(s),
            None => Err(expected("a string", &self.0)),
        }
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Bad> {
        match self.0.dyn_ref::<Uint8Array>() {
            Some(array) => visitor.visit_byte_buf(array.to_vec()),
            None => Err(expected("a Uint8Array", &self.0)),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Bad> {
        if self.0.is_null() || self.0.is_undefined() {
            visitor.visit_none()
        } else {
            visitor.visit_some(self)
        }
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Bad> {
        match self.0.dyn_into::<Array>() {
            // Refused before any item is read: a Proxy may claim 2^32 - 1
            // items, each one a valid string, and reading them would hold
            // the event loop for minutes.
            Ok(array) if array.length() > MAX_ITEMS => Err(Bad::new(format!(
                "has {} items; at most {MAX_ITEMS} are read",
                array.length()
            ))),
            Ok(array) => visitor.visit_seq(Items(array, 0)),
            Err(v) => Err(expected("an array", &v)),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Bad> {
        match self.0.is_object() {
            true => visitor.visit_map(Fields::new(self.0, fields)),
            false => Err(expected("an object", &self.0)),
        }
    }

    /// An object whose `type` names the variant, with the variant's
    /// fields beside it.
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Bad> {
        if !self.0.is_object() {
            return Err(expected("an object", &self.0));
        }
        let tag = field(&self.0, "type")?;
        let name = match tag.as_string() {
            Some(name) => name,
            None if tag.is_undefined() => return Err(Bad::new("missing".into()).at("type")),
            None => return Err(expected("a string", &tag).at("type")),
        };
        visitor.visit_enum(Variant(name, self.0, variants))
    }

    /// A string naming a unit variant of a `#[serde(variant_identifier)]`
    /// enum (`holder: 'alive'`).
    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Bad> {
        self.deserialize_string(visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Bad> {
        visitor.visit_unit()
    }

    // No wire type has these (`&str` and `&[u8]` are borrowed: every wire
    // type is read owned).
    forward_to_deserialize_any! {
        i8 i16 i32 i64 i128 u8 u64 u128 f32 char str bytes unit unit_struct
        newtype_struct tuple tuple_struct map
    }
}

/// The value of `key` in `object`; a getter that throws (a hostile Proxy)
/// is bad input, not a crash.
pub fn field(object: &JsValue, key: &str) -> Result<JsValue, Bad> {
    Reflect::get(object, &JsValue::from_str(key))
        .map_err(|_| Bad::new("could not be read".into()).at(key))
}

/// The most items of any one JS array read (the permission table's own
/// limit, 100, is checked once it is read).
pub const MAX_ITEMS: u32 = 100_000;

/// The items of a JS array, and the next one's index; a bad one is named by
/// its index.
struct Items(Array, u32);

impl<'de> SeqAccess<'de> for Items {
    type Error = Bad;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Bad> {
        let i = self.1;
        if i >= self.0.length() {
            return Ok(None);
        }
        self.1 += 1;
        let item = seed.deserialize(In(self.0.get(i)));
        item.map(Some).map_err(|e| e.at_index(i as usize))
    }

    fn size_hint(&self) -> Option<usize> {
        Some((self.0.length() - self.1) as usize)
    }
}

/// The fields of a JS object that a wire struct names, in its order, and
/// the one read last; a bad one is named by its key.
struct Fields {
    object: JsValue,
    names: std::slice::Iter<'static, &'static str>,
    value: (&'static str, JsValue),
}

impl Fields {
    fn new(object: JsValue, names: &'static [&'static str]) -> Fields {
        let value = ("", JsValue::UNDEFINED);
        Fields {
            object,
            names: names.iter(),
            value,
        }
    }

    /// The next field that is there (not missing, not `undefined`): its
    /// name, with its value kept for [`MapAccess::next_value_seed`]. Not
    /// generic, so one copy serves every wire struct.
    fn advance(&mut self) -> Result<Option<&'static str>, Bad> {
        for &name in self.names.by_ref() {
            let value = field(&self.object, name)?;
            if !value.is_undefined() {
                self.value = (name, value);
                return Ok(Some(name));
            }
        }
        Ok(None)
    }
}

impl<'de> MapAccess<'de> for Fields {
    type Error = Bad;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Bad> {
        let Some(name) = self.advance()? else {
            return Ok(None);
        };
        seed.deserialize(BorrowedStrDeserializer::new(name))
            .map(Some)
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, Bad> {
        let (name, value) = std::mem::take(&mut self.value);
        seed.deserialize(In(value)).map_err(|e| e.at(name))
    }
}

/// A tagged object's variant: its `type`, the object that holds the
/// variant's fields, and the names of all variants.
struct Variant(String, JsValue, &'static [&'static str]);

impl<'de> EnumAccess<'de> for Variant {
    type Error = Bad;
    type Variant = Self;

    fn variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<(T::Value, Self), Bad> {
        match seed.deserialize(StrDeserializer::<Bad>::new(&self.0)) {
            Ok(value) => Ok((value, self)),
            // A `type` that names no variant.
            Err(_) => {
                let expected = one_of(self.2);
                Err(Bad::new(format!("{} (expected {expected})", quoted(&self.0))).at("type"))
            }
        }
    }
}

impl<'de> VariantAccess<'de> for Variant {
    type Error = Bad;

    /// Other fields beside `type` are not read.
    fn unit_variant(self) -> Result<(), Bad> {
        Ok(())
    }

    /// The whole object (`type` included) as the variant's one value.
    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, Bad> {
        seed.deserialize(In(self.1))
    }

    /// No wire enum has tuple variants.
    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value, Bad> {
        de::Deserializer::deserialize_any(In(self.1), visitor)
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Bad> {
        visitor.visit_map(Fields::new(self.1, fields))
    }
}

//! JSON text read with serde_json into the crate's `#[derive(Deserialize)]`
//! types: the cache record, a token's claims, the review answers.
//!
//! Two steps. serde_json parses the text into a [`Json`] tree (its parser:
//! escapes, numbers, trailing text refused). A value nested more than
//! [`MAX_DEPTH`] deep is not built: serde_json skips it without recursing
//! and the tree holds [`Json::TooDeep`], which no type accepts, so deep
//! nesting in a field nobody reads is skipped, as serde_json skips it, and
//! no stack is ever exhausted.
//! Then the type is read from the tree by a serde `Deserializer` whose error
//! is [`Bad`]: it names the field (`status.incomplete: expected true or
//! false, got a string`) and never formats a float.
//!
//! Reading the types with serde_json's own `Deserializer` would give the
//! same answers, but its error texts format the value found with serde's
//! `Unexpected`, which brings Rust's float printing (about 15 KB) into the
//! `.wasm` though no message ever needs it.
//!
//! What the derived types see is what serde_json would show them: an
//! object's keys in document order, a repeated key twice (so a derived
//! struct refuses a repeated field), unknown keys skipped unless the type
//! says `#[serde(deny_unknown_fields)]`.

use serde::de::value::BorrowedStrDeserializer;
use serde::de::{
    self, Deserialize, DeserializeOwned, DeserializeSeed, Deserializer, IgnoredAny, MapAccess,
    SeqAccess, Visitor,
};
use serde::forward_to_deserialize_any;

use crate::bad_input::Bad;

/// How deep a value is built; deeper ones are skipped ([`Json::TooDeep`]).
/// The documents read here nest 4 deep at most; serde_json's own limit,
/// which this stays under, is 128.
pub const MAX_DEPTH: u32 = 64;

/// `text` as the type `T`. A syntax error is serde_json's own text
/// (`expected value at line 1 column 1`); a value of the wrong type names
/// its field.
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, Bad> {
    let tree: Json = serde_json::from_str(text).map_err(|e| Bad::new(e.to_string()))?;
    T::deserialize(&tree)
}

/// One JSON value, as serde_json parsed it. Objects keep every key in
/// document order, repeats included, for the reader to refuse.
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A whole number from 0 to 2^64 - 1.
    Unsigned(u64),
    /// A negative whole number from -2^63.
    Negative(i64),
    /// Any other number.
    Float(f64),
    /// A string, unescaped.
    Str(String),
    /// An array.
    Array(Vec<Json>),
    /// An object: its entries in order.
    Object(Vec<(String, Json)>),
    /// A value nested more than [`MAX_DEPTH`] deep, skipped unread.
    TooDeep,
}

impl Json {
    /// What this is, for messages: `a string`, `null`, `an array`, ...
    fn kind(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool(_) => "a boolean",
            Json::Unsigned(_) | Json::Negative(_) | Json::Float(_) => "a number",
            Json::Str(_) => "a string",
            Json::Array(_) => "an array",
            Json::Object(_) => "an object",
            Json::TooDeep => "a value nested more than 64 deep",
        }
    }

    fn expected(&self, what: &str) -> Bad {
        Bad::expected(what, self.kind())
    }
}

// ---- building the tree (serde_json's deserialize_any) ----------------------

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Json, D::Error> {
        Build { depth: 0 }.deserialize(d)
    }
}

/// Takes every value serde_json's `deserialize_any` hands over, so no value
/// is ever refused (and no error text is made) while the tree is built;
/// `depth` is how many arrays and objects hold the value.
#[derive(Clone, Copy)]
struct Build {
    depth: u32,
}

impl Build {
    fn inner(self) -> Build {
        Build {
            depth: self.depth + 1,
        }
    }
}

impl<'de> DeserializeSeed<'de> for Build {
    type Value = Json;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Json, D::Error> {
        if self.depth > MAX_DEPTH {
            // serde_json's skipping is a loop, not a recursion.
            IgnoredAny::deserialize(d)?;
            Ok(Json::TooDeep)
        } else {
            d.deserialize_any(self)
        }
    }
}

impl<'de> Visitor<'de> for Build {
    type Value = Json;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }
    fn visit_bool<E>(self, b: bool) -> Result<Json, E> {
        Ok(Json::Bool(b))
    }
    fn visit_u64<E>(self, n: u64) -> Result<Json, E> {
        Ok(Json::Unsigned(n))
    }
    fn visit_i64<E>(self, n: i64) -> Result<Json, E> {
        Ok(Json::Negative(n))
    }
    fn visit_f64<E>(self, n: f64) -> Result<Json, E> {
        Ok(Json::Float(n))
    }
    fn visit_str<E>(self, s: &str) -> Result<Json, E> {
        Ok(Json::Str(s.to_owned()))
    }
    fn visit_string<E>(self, s: String) -> Result<Json, E> {
        Ok(Json::Str(s))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<Json, A::Error> {
        let mut out = Vec::new();
        while let Some(item) = items.next_element_seed(self.inner())? {
            out.push(item);
        }
        Ok(Json::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut entries: A) -> Result<Json, A::Error> {
        let mut out = Vec::new();
        while let Some(key) = entries.next_key::<String>()? {
            out.push((key, entries.next_value_seed(self.inner())?));
        }
        Ok(Json::Object(out))
    }
}

// ---- reading a type from the tree ------------------------------------------

impl<'de> Deserializer<'de> for &'de Json {
    type Error = Bad;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Bad> {
        match self {
            Json::Null => visitor.visit_unit(),
            Json::Bool(b) => visitor.visit_bool(*b),
            Json::Unsigned(n) => visitor.visit_u64(*n),
            Json::Negative(n) => visitor.visit_i64(*n),
            Json::Float(n) => visitor.visit_f64(*n),
            Json::Str(s) => visitor.visit_borrowed_str(s),
            Json::Array(items) => visitor.visit_seq(Items {
                items: items.iter(),
                next: 0,
            }),
            Json::Object(entries) => visitor.visit_map(Entries {
                entries: entries.iter(),
                value: None,
            }),
            Json::TooDeep => Err(Bad::new(self.kind().into())),
        }
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Bad> {
        match self {
            Json::Bool(b) => visitor.visit_bool(*b),
            _ => Err(self.expected("true or false")),
        }
    }

    /// Whole numbers only: `2.0` and `-2` are no `u64`.
    fn deserialize_u64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Bad> {
        match self {
            Json::Unsigned(n) => visitor.visit_u64(*n),
            _ => Err(self.expected("a whole number from 0")),
        }
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Bad> {
        match self {
            Json::Str(s) => visitor.visit_borrowed_str(s),
            _ => Err(self.expected("a string")),
        }
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Bad> {
        self.deserialize_str(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Bad> {
        match self {
            Json::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    // Arrays and objects straight to `visit_seq` and `visit_map`, not
    // through `deserialize_any`: each wire type's visitor then brings only
    // the one method it uses into the `.wasm`.
    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Bad> {
        match self {
            Json::Array(items) => visitor.visit_seq(Items {
                items: items.iter(),
                next: 0,
            }),
            _ => Err(self.expected("an array")),
        }
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Bad> {
        match self {
            Json::Object(entries) => visitor.visit_map(Entries {
                entries: entries.iter(),
                value: None,
            }),
            _ => Err(self.expected("an object")),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Bad> {
        self.deserialize_map(visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Bad> {
        visitor.visit_unit()
    }

    forward_to_deserialize_any! {
        i8 i16 i32 i64 i128 u8 u16 u32 u128 f32 f64 char bytes byte_buf unit
        unit_struct newtype_struct tuple tuple_struct enum identifier
    }
}

/// An array's items, in order; a bad one is named by its index.
struct Items<'a> {
    items: std::slice::Iter<'a, Json>,
    next: usize,
}

impl<'de> SeqAccess<'de> for Items<'de> {
    type Error = Bad;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Bad> {
        let Some(item) = self.items.next() else {
            return Ok(None);
        };
        let i = self.next;
        self.next += 1;
        seed.deserialize(item).map(Some).map_err(|e| e.at_index(i))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.items.len())
    }
}

/// An object's entries, in order; a bad value is named by its key.
struct Entries<'a> {
    entries: std::slice::Iter<'a, (String, Json)>,
    value: Option<&'a (String, Json)>,
}

impl<'de> MapAccess<'de> for Entries<'de> {
    type Error = Bad;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Bad> {
        let Some(entry) = self.entries.next() else {
            return Ok(None);
        };
        self.value = Some(entry);
        let key = seed.deserialize(BorrowedStrDeserializer::<Bad>::new(&entry.0));
        key.map(Some).map_err(|e| e.at(&entry.0))
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, Bad> {
        match self.value.take() {
            Some((key, value)) => seed.deserialize(value).map_err(|e| e.at(key)),
            None => Err(de::Error::custom("a value without its key")),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    struct Strict {
        name: String,
        count: u64,
        #[serde(default)]
        tags: Vec<String>,
        #[serde(default)]
        note: Option<String>,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Loose {
        #[serde(default)]
        flag: Option<bool>,
    }

    fn refused<T: DeserializeOwned + std::fmt::Debug>(text: &str) -> String {
        from_str::<T>(text).expect_err(text).text()
    }

    #[test]
    fn documents_are_read_into_their_types() {
        assert_eq!(
            from_str::<Strict>(r#"{"name":"a\u0062","count":7,"tags":["x"],"note":null}"#).unwrap(),
            Strict {
                name: "ab".into(),
                count: 7,
                tags: vec!["x".into()],
                note: None,
            }
        );
        // Unknown keys, of any shape, are skipped where allowed.
        assert_eq!(
            from_str::<Loose>(r#"{"other":{"deep":[1,2.5,-3,"x",null]},"flag":true}"#).unwrap(),
            Loose { flag: Some(true) }
        );
    }

    /// A wrong value names its field and what it is, in words (no number is
    /// ever printed); a repeated, unknown or missing field is refused.
    #[test]
    fn wrong_values_name_their_field() {
        assert_eq!(
            refused::<Strict>(r#"{"name":"a","count":1.5}"#),
            "count: expected a whole number from 0, got a number"
        );
        assert_eq!(
            refused::<Strict>(r#"{"name":"a","count":-1}"#),
            "count: expected a whole number from 0, got a number"
        );
        assert_eq!(
            refused::<Strict>(r#"{"name":"a","count":1,"tags":["x",2]}"#),
            "tags[1]: expected a string, got a number"
        );
        assert_eq!(
            refused::<Strict>(r#"{"name":"a","name":"b","count":1}"#),
            "name: given twice"
        );
        assert_eq!(
            refused::<Strict>(r#"{"name":"a","count":1,"extra":0}"#),
            "extra: unknown field \"extra\""
        );
        assert_eq!(refused::<Strict>(r#"{"name":"a"}"#), "count: missing");
        assert_eq!(
            refused::<Loose>(r#"{"flag":"true"}"#),
            "flag: expected true or false, got a string"
        );
        assert_eq!(refused::<Loose>("[]"), "expected an object, got an array");
    }

    /// Syntax errors are serde_json's; trailing text is refused.
    #[test]
    fn bad_text_is_refused() {
        assert!(refused::<Loose>("").contains("EOF"));
        assert!(refused::<Loose>("{} x").contains("trailing"));
    }

    /// Deep nesting is skipped, not built, past 64 levels: in a field that
    /// is not read it changes nothing, in one that is read it is a wrong
    /// type; never a stack overflow, however deep.
    #[test]
    fn deep_nesting_is_skipped_without_recursion() {
        let (open, close) = ("[".repeat(100_000), "]".repeat(100_000));
        let skipped = format!(r#"{{"x":{{"y":{open}{close}}},"flag":false}}"#);
        assert_eq!(
            from_str::<Loose>(&skipped).unwrap(),
            Loose { flag: Some(false) }
        );
        let read = format!(r#"{{"name":"a","count":1,"tags":{open}{close}}}"#);
        assert_eq!(
            refused::<Strict>(&read),
            "tags[0]: expected a string, got an array"
        );
        // A value past the depth is no value of any type.
        assert_eq!(
            Option::<String>::deserialize(&Json::TooDeep)
                .unwrap_err()
                .text(),
            "expected a string, got a value nested more than 64 deep"
        );
        let tree: Json =
            serde_json::from_str(&format!("{}{}", "[".repeat(66), "]".repeat(66))).unwrap();
        let mut depth = 0;
        let mut at = &tree;
        while let Json::Array(items) = at {
            depth += 1;
            at = &items[0];
        }
        assert_eq!((depth, at), (65, &Json::TooDeep));
    }
}

//! Just enough JSON for the two documents the core reads itself: the cache
//! record and a service-account token's claims.
//!
//! Both are one object whose interesting fields are strings or whole
//! numbers. [`object`] reads such an object, keeps those fields, and checks
//! (and skips) everything else: nested objects and arrays up to a fixed
//! depth, other numbers, `true`, `false`, `null`. Anything that is not one
//! complete JSON object is `None`, never a panic. A hand-written reader
//! instead of serde_json keeps about 25 KB out of the `.wasm`, which every
//! hook step compiles; the `cache_record` fuzz target exercises it.

/// A field value the caller can use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// A string, unescaped.
    Str(String),
    /// A whole number that fits in a `u64`.
    UInt(u64),
    /// Any other valid value (checked, not kept).
    Other,
}

/// How deep nested arrays and objects may go.
const MAX_DEPTH: usize = 32;

/// The fields of the JSON object in `input`, in order. `None` when `input`
/// is not exactly one JSON object (surrounding whitespace allowed), when it
/// is nested deeper than 32 levels, or when a key repeats.
pub fn object(input: &[u8]) -> Option<Vec<(String, Value)>> {
    let mut reader = Reader { input, at: 0 };
    reader.space();
    let fields = reader.object_fields(0)?;
    reader.space();
    if reader.at != input.len() {
        return None;
    }
    for (i, (key, _)) in fields.iter().enumerate() {
        if fields[..i].iter().any(|(k, _)| k == key) {
            return None;
        }
    }
    Some(fields)
}

/// `s` as a JSON string literal.
pub fn string(s: &str) -> String {
    crate::text::quote_with(
        s,
        |c| (c as u32) < 0x20,
        |out, c| {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.push_str("\\u00");
            out.push(HEX[(c as usize) >> 4] as char);
            out.push(HEX[(c as usize) & 15] as char);
        },
    )
}

struct Reader<'a> {
    input: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn peek(&self) -> Option<u8> {
        self.input.get(self.at).copied()
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        if self.peek() == Some(byte) {
            self.at += 1;
            Some(())
        } else {
            None
        }
    }

    fn space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn object_fields(&mut self, depth: usize) -> Option<Vec<(String, Value)>> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.eat(b'{')?;
        let mut fields = Vec::new();
        self.space();
        if self.eat(b'}').is_some() {
            return Some(fields);
        }
        loop {
            self.space();
            let key = self.string()?;
            self.space();
            self.eat(b':')?;
            self.space();
            let value = self.value(depth)?;
            fields.push((key, value));
            self.space();
            match self.peek()? {
                b',' => self.at += 1,
                b'}' => {
                    self.at += 1;
                    return Some(fields);
                }
                _ => return None,
            }
        }
    }

    fn array(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.eat(b'[')?;
        self.space();
        if self.eat(b']').is_some() {
            return Some(());
        }
        loop {
            self.space();
            self.value(depth)?;
            self.space();
            match self.peek()? {
                b',' => self.at += 1,
                b']' => {
                    self.at += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    fn value(&mut self, depth: usize) -> Option<Value> {
        match self.peek()? {
            b'"' => self.string().map(Value::Str),
            b'{' => self.object_fields(depth + 1).map(|_| Value::Other),
            b'[' => self.array(depth + 1).map(|_| Value::Other),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    fn literal(&mut self, word: &[u8]) -> Option<Value> {
        if self.input[self.at..].starts_with(word) {
            self.at += word.len();
            Some(Value::Other)
        } else {
            None
        }
    }

    /// RFC 8259 number grammar; a plain whole number that fits is `UInt`.
    fn number(&mut self) -> Option<Value> {
        let start = self.at;
        let negative = self.eat(b'-').is_some();
        let int_start = self.at;
        match self.peek()? {
            b'0' => self.at += 1,
            b'1'..=b'9' => {
                while matches!(self.peek(), Some(b'0'..=b'9')) {
                    self.at += 1;
                }
            }
            _ => return None,
        }
        let int_end = self.at;
        let mut whole = true;
        if self.eat(b'.').is_some() {
            whole = false;
            self.digits()?;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            whole = false;
            self.at += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.at += 1;
            }
            self.digits()?;
        }
        if negative || !whole {
            return Some(Value::Other);
        }
        let mut n: u64 = 0;
        for &b in &self.input[int_start..int_end] {
            match n
                .checked_mul(10)
                .and_then(|n| n.checked_add(u64::from(b - b'0')))
            {
                Some(next) => n = next,
                None => return Some(Value::Other),
            }
        }
        debug_assert!(start < self.at);
        Some(Value::UInt(n))
    }

    fn digits(&mut self) -> Option<()> {
        let start = self.at;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.at += 1;
        }
        (self.at > start).then_some(())
    }

    fn string(&mut self) -> Option<String> {
        self.eat(b'"')?;
        let mut out: Vec<u8> = Vec::new();
        loop {
            let b = self.peek()?;
            self.at += 1;
            match b {
                b'"' => return String::from_utf8(out).ok(),
                b'\\' => {
                    let escaped = self.peek()?;
                    self.at += 1;
                    match escaped {
                        b'"' => out.push(b'"'),
                        b'\\' => out.push(b'\\'),
                        b'/' => out.push(b'/'),
                        b'b' => out.push(8),
                        b'f' => out.push(12),
                        b'n' => out.push(b'\n'),
                        b'r' => out.push(b'\r'),
                        b't' => out.push(b'\t'),
                        b'u' => {
                            let c = self.unicode_escape()?;
                            let mut buf = [0u8; 4];
                            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                        }
                        _ => return None,
                    }
                }
                0..=0x1f => return None,
                _ => out.push(b),
            }
        }
    }

    /// After `\u`: four hex digits, or a surrogate pair as two escapes.
    fn unicode_escape(&mut self) -> Option<char> {
        let first = self.hex4()?;
        if (0xD800..0xDC00).contains(&first) {
            self.eat(b'\\')?;
            self.eat(b'u')?;
            let second = self.hex4()?;
            if !(0xDC00..0xE000).contains(&second) {
                return None;
            }
            let c = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00);
            return char::from_u32(c);
        }
        char::from_u32(first)
    }

    fn hex4(&mut self) -> Option<u32> {
        let digits = self.input.get(self.at..self.at + 4)?;
        let mut n = 0;
        for &d in digits {
            n = n * 16 + char::from(d).to_digit(16)?;
        }
        self.at += 4;
        Some(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    fn s(v: &str) -> Value {
        Value::Str(v.into())
    }

    #[test]
    fn reads_strings_and_whole_numbers_and_skips_the_rest() {
        let doc = br#" {"a":"x","n":42,"f":1.5,"neg":-3,"e":1e3,"t":true,"z":null,
            "o":{"k":[1,{"d":[]}]},"arr":["s",2],"big":99999999999999999999} "#;
        let fields = object(doc).unwrap();
        let get = |k: &str| {
            fields
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.clone())
                .unwrap()
        };
        assert_eq!(get("a"), s("x"));
        assert_eq!(get("n"), Value::UInt(42));
        for other in ["f", "neg", "e", "t", "z", "o", "arr", "big"] {
            assert_eq!(get(other), Value::Other, "{other}");
        }
    }

    #[test]
    fn unescapes_strings() {
        let fields = object(br#"{"k":"a\"b\\c\/d\n\u00e9\ud83d\ude00"}"#).unwrap();
        assert_eq!(fields[0].1, s("a\"b\\c/d\n\u{e9}\u{1f600}"));
    }

    #[test]
    fn refuses_what_is_not_one_object() {
        let bad: &[&[u8]] = &[
            b"",
            b"{",
            b"}",
            b"[]",
            b"null",
            b"{}x",
            b"{} {}",
            b"{\"a\"}",
            b"{\"a\":}",
            b"{\"a\":1,}",
            b"{'a':1}",
            b"{\"a\":01}",
            b"{\"a\":1.}",
            b"{\"a\":.5}",
            b"{\"a\":-}",
            b"{\"a\":tru}",
            b"{\"a\":\"\\x\"}",
            b"{\"a\":\"\\ud800\"}",
            b"{\"a\":\"\n\"}",
            b"{\"a\":1 \"b\":2}",
            b"{\"a\":1,\"a\":2}",
            b"\xef\xbb\xbf{}",
            b"{\"a\":\"\xff\"}",
        ];
        for input in bad {
            assert_eq!(object(input), None, "{:?}", String::from_utf8_lossy(input));
        }
        assert_eq!(object(b"{}"), Some(vec![]));
    }

    #[test]
    fn depth_is_bounded() {
        let deep = format!("{{\"a\":{}{}}}", "[".repeat(40), "]".repeat(40));
        assert_eq!(object(deep.as_bytes()), None);
        let ok = format!("{{\"a\":{}{}}}", "[".repeat(20), "]".repeat(20));
        assert!(object(ok.as_bytes()).is_some());
    }

    #[test]
    fn strings_round_trip() {
        for text in [
            "",
            "plain",
            "q\"uote",
            "back\\slash",
            "ctl\u{1}\u{1f}",
            "tab\tnl\n",
            "ünï",
        ] {
            let doc = format!("{{\"k\":{}}}", string(text));
            assert_eq!(object(doc.as_bytes()).unwrap()[0].1, s(text), "{text:?}");
        }
    }
}

//! Small text helpers for messages, written without `{:?}` and float
//! formatting: both pull large tables and code into the `.wasm`.

/// `s` in double quotes, with `"`, `\` and control characters escaped, as
/// `{:?}` would show a plain string.
pub fn quoted(s: &str) -> String {
    quote_with(s, char::is_control, |out, c| {
        out.push_str("\\u{");
        push_hex(out, c as u32);
        out.push('}');
    })
}

/// `s` in double quotes with `"`, `\`, `\n`, `\r` and `\t` escaped, and
/// every other character for which `special` holds written by `escape`:
/// the loop behind [`quoted`].
pub(crate) fn quote_with(
    s: &str,
    special: fn(char) -> bool,
    escape: fn(&mut String, char),
) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if special(c) => escape(&mut out, c),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// At most `max` characters of `s`, with `...` when cut: for texts from
/// the server that a message quotes.
pub fn clip(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        // `get`, not indexing: `end` is a char boundary, and a slice that
        // cannot panic brings no panic message code into the `.wasm`.
        Some((end, _)) => format!("{}...", s.get(..end).unwrap_or(s)),
        None => s.to_string(),
    }
}

/// `n` in lower-case hex, no leading zeros (`1b`), as `{:x}` writes it.
fn push_hex(out: &mut String, n: u32) {
    let mut shift = 28;
    while shift > 0 && n >> shift == 0 {
        shift -= 4;
    }
    loop {
        out.push(char::from(b"0123456789abcdef"[(n >> shift & 15) as usize]));
        if shift == 0 {
            break;
        }
        shift -= 4;
    }
}

/// Milliseconds as seconds with one decimal, rounded: `27349` -> `"27.3 s"`.
pub fn seconds(ms: u64) -> String {
    let tenths = ms.saturating_add(50) / 100;
    format!("{}.{} s", tenths / 10, tenths % 10)
}

/// A plain decimal (`2`, `1.5`, `+0.25`) as a number; no exponents, no
/// `inf`/`NaN`, at most 6 decimals. `None` for anything else.
pub fn parse_decimal(s: &str) -> Option<f64> {
    let s = s.strip_prefix('+').unwrap_or(s);
    let (whole, fraction) = split_once(s, b'.').unwrap_or((s, ""));
    let digits = |p: &str| p.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty()
        || whole.len() > 9
        || fraction.len() > 6
        || !digits(whole)
        || !digits(fraction)
    {
        return None;
    }
    let whole = whole_number(whole)?;
    let mut scaled = whole * 1_000_000;
    let mut scale = 100_000;
    for b in fraction.bytes() {
        scaled += u64::from(b - b'0') * scale;
        scale /= 10;
    }
    Some(scaled as f64 / 1_000_000.0)
}

/// `s` split around the first `sep` (an ASCII byte), as `str::split_once`
/// with a char pattern would, without the standard char searcher.
pub fn split_once(s: &str, sep: u8) -> Option<(&str, &str)> {
    debug_assert!(sep.is_ascii());
    let i = s.bytes().position(|b| b == sep)?;
    Some((s.get(..i)?, s.get(i + 1..)?))
}

/// A plain whole number (ASCII digits only, at least one) that fits in a
/// `u64`, as `str::parse::<u64>` would read it without a sign.
pub fn whole_number(s: &str) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    let mut n: u64 = 0;
    for b in s.bytes() {
        if !b.is_ascii_digit() {
            return None;
        }
        n = n.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
    }
    Some(n)
}

/// True when `needle` occurs in `haystack`. The same answer as
/// `str::contains`, without the standard two-way searcher (about 3 KB of
/// `.wasm`, with its panic path): the strings here are short.
pub fn contains(haystack: &str, needle: &str) -> bool {
    find(haystack, needle).is_some()
}

/// Where `needle` first occurs in `haystack`, as `str::find` with a string
/// pattern would say, without the standard searcher (see [`contains`]).
pub fn find(haystack: &str, needle: &str) -> Option<usize> {
    if needle.is_empty() {
        return Some(0);
    }
    haystack
        .as_bytes()
        .windows(needle.len())
        .position(|w| w == needle.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn find_and_contains_agree_with_the_standard_ones() {
        for (h, n) in [
            ("", ""),
            ("abc", ""),
            ("", "a"),
            ("Unexpected server response: 403", "response: "),
            ("aaab", "aab"),
            ("ab", "abc"),
            ("héllo wörld", "wö"),
        ] {
            assert_eq!(find(h, n), h.find(n), "{h:?} {n:?}");
            assert_eq!(contains(h, n), h.contains(n), "{h:?} {n:?}");
        }
    }

    #[test]
    fn quoted_matches_debug_for_ordinary_strings() {
        for s in [
            "ci",
            "",
            "soon",
            "a\"b",
            "back\\slash",
            "tab\there",
            "line\nbreak",
            "ünïcode",
        ] {
            assert_eq!(quoted(s), format!("{s:?}"), "{s}");
        }
        assert_eq!(quoted("\u{1b}[31m"), "\"\\u{1b}[31m\"");
        for c in ['\u{1}', '\u{7f}', '\u{9f}', '\u{85}', '\u{1f}'] {
            assert_eq!(quoted(&c.to_string()), format!("{:?}", c.to_string()));
        }
    }

    #[test]
    fn contains_agrees_with_str_contains() {
        let haystacks = ["", "a", "socket hang up", "ünïcode ünï", "aaab", "abab"];
        let needles = [
            "", "a", "ab", "hang", "up!", "ünï", "ïc", "aab", "bab", "abab", "ababa",
        ];
        for h in haystacks {
            for n in needles {
                assert_eq!(contains(h, n), h.contains(n), "{h} / {n}");
            }
        }
    }

    #[test]
    fn split_once_agrees_with_str_split_once() {
        for s in ["", ".", "a.b", "1.5.5", "no dot", "ü.ï", ".x", "x."] {
            assert_eq!(split_once(s, b'.'), s.split_once('.'), "{s}");
        }
    }

    #[test]
    fn whole_numbers_agree_with_parse() {
        for s in [
            "0",
            "7",
            "0042",
            "18446744073709551615",
            "18446744073709551616",
            "",
            "+1",
            "-1",
            "1 ",
            "1.0",
            "٣",
        ] {
            assert_eq!(
                whole_number(s),
                s.parse::<u64>().ok().filter(|_| !s.starts_with('+')),
                "{s}"
            );
        }
    }

    #[test]
    fn seconds_round_to_tenths() {
        assert_eq!(seconds(0), "0.0 s");
        assert_eq!(seconds(27_349), "27.3 s");
        assert_eq!(seconds(27_350), "27.4 s");
        assert_eq!(seconds(90_000), "90.0 s");
        assert_eq!(
            seconds(u64::MAX),
            "18446744073709551.6 s",
            "saturates, never overflows"
        );
    }

    #[test]
    fn decimals_parse_and_garbage_does_not() {
        assert_eq!(parse_decimal("2"), Some(2.0));
        assert_eq!(parse_decimal("1.5"), Some(1.5));
        assert_eq!(parse_decimal("+0.25"), Some(0.25));
        assert_eq!(parse_decimal("10.000001"), Some(10.000001));
        for bad in [
            "",
            ".5",
            "1.",
            "1e3",
            "inf",
            "NaN",
            "-2",
            "1.5.5",
            "0x10",
            "1.1234567",
            "9999999999",
        ] {
            assert_eq!(
                parse_decimal(bad),
                if bad == "1." { Some(1.0) } else { None },
                "{bad}"
            );
        }
    }
}

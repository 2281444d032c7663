//! Reading a `Retry-After` header value.
//!
//! RFC 9110 §10.2.3 allows either a number of seconds (`120`) or an HTTP date
//! (`Sun, 06 Nov 1994 08:49:37 GMT`). Servers and proxies send other things
//! too: fractions, negative numbers, huge numbers, garbage. This module turns
//! the header into a wait in milliseconds that is never negative and never
//! longer than the caller's limit, and says `None` for anything it cannot
//! read, so the caller falls back to its own backoff.

use std::time::Duration;

use crate::dates::{self, number};
use crate::text::split_once;

/// Parses a `Retry-After` value given the current time (Unix epoch, ms) and
/// the longest wait the caller is willing to honour.
///
/// - seconds (`"3"`, `" 3 "`, `"1.5"`): that long, clamped to the limit;
/// - an IMF-fixdate (`"Wed, 21 Oct 2026 02:15:51 GMT"`): the time until then,
///   clamped to the limit;
/// - zero, a negative number, a date now or in the past, a limit of zero,
///   or anything else: `None` (no hint).
pub fn parse_retry_after(value: &str, now_ms: u64, limit: Duration) -> Option<Duration> {
    let value = value.trim();
    if value.is_empty() || value.len() > 64 {
        return None;
    }
    let limit_ms = crate::millis(limit);
    let wait_ms = match parse_seconds(value) {
        Some(ms) => ms,
        None => parse_http_date(value)?.saturating_sub(now_ms),
    };
    match wait_ms.min(limit_ms) {
        0 => None,
        ms => Some(Duration::from_millis(ms)),
    }
}

/// Seconds, possibly fractional, possibly negative (clamped to 0). Returns ms,
/// saturating for huge values.
fn parse_seconds(value: &str) -> Option<u64> {
    let (negative, digits) = match value.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, value.strip_prefix('+').unwrap_or(value)),
    };
    let (whole, fraction) = match split_once(digits, b'.') {
        Some((w, f)) => (w, f),
        None => (digits, ""),
    };
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !all_digits(whole) || !all_digits(fraction) {
        return None;
    }
    if negative {
        return Some(0);
    }
    let mut ms: u64 = 0;
    for b in whole.bytes() {
        ms = ms.saturating_mul(10).saturating_add(u64::from(b - b'0'));
    }
    ms = ms.saturating_mul(1000);
    let mut scale = 100;
    for b in fraction.bytes().take(3) {
        ms = ms.saturating_add(u64::from(b - b'0') * scale);
        scale /= 10;
    }
    Some(ms)
}

/// IMF-fixdate, the only date form RFC 9110 asks senders to produce:
/// `Sun, 06 Nov 1994 08:49:37 GMT`. Returns Unix epoch milliseconds.
fn parse_http_date(value: &str) -> Option<u64> {
    let rest = split_once(value, b',')?.1.strip_prefix(' ')?;
    let (day, rest) = split_once(rest, b' ')?;
    let (month, rest) = split_once(rest, b' ')?;
    let (year, rest) = split_once(rest, b' ')?;
    let (clock, zone) = split_once(rest, b' ')?;
    let (hour, rest) = split_once(clock, b':')?;
    let (minute, second) = split_once(rest, b':')?;
    if zone != "GMT" {
        return None;
    }
    let (day, month, year) = (number(day, 2)?, month_number(month)?, number(year, 4)?);
    let (hour, minute, second) = (number(hour, 2)?, number(minute, 2)?, number(second, 2)?);
    dates::epoch_ms(year, month, day, hour, minute, second)
}

fn month_number(s: &str) -> Option<u64> {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    MONTHS.iter().position(|m| *m == s).map(|i| i as u64 + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    const LIMIT: Duration = Duration::from_secs(32);
    // 2026-10-21T02:15:26Z, the start of the incident's stall.
    const NOW: u64 = 1_792_548_926_000;

    #[test]
    fn seconds_are_read_and_clamped() {
        let cases: &[(&str, Option<u64>)] = &[
            ("3", Some(3_000)),
            (" 7 ", Some(7_000)),
            ("1.5", Some(1_500)),
            ("0", None),
            ("0.000", None),
            ("0.0004", None),
            ("-4", None),
            ("-0.5", None),
            ("0.25", Some(250)),
            ("86400", Some(32_000)),
            ("99999999999999999999999", Some(32_000)),
            ("", None),
            ("soon", None),
            ("1e3", None),
            ("3 s", None),
            (".5", None),
        ];
        for (value, want) in cases {
            let got = parse_retry_after(value, NOW, LIMIT).map(|d| d.as_millis() as u64);
            assert_eq!(got, *want, "Retry-After {value:?}");
        }
    }

    #[test]
    fn http_dates_become_a_wait_from_now() {
        let at = |s: &str| parse_retry_after(s, NOW, LIMIT).map(|d| d.as_millis() as u64);
        assert_eq!(at("Wed, 21 Oct 2026 02:15:31 GMT"), Some(5_000));
        assert_eq!(at("Wed, 21 Oct 2026 02:15:26 GMT"), None, "now: no hint");
        assert_eq!(
            at("Wed, 21 Oct 2026 02:00:00 GMT"),
            None,
            "a past date (clock skew) is no hint"
        );
        assert_eq!(at("Thu, 22 Oct 2026 02:15:26 GMT"), Some(32_000), "clamped");
        assert_eq!(at("Wed, 21 Oct 2026 02:15:31 UTC"), None);
        assert_eq!(at("Wed, 31 Feb 2026 02:15:31 GMT"), None);
        assert_eq!(at("Wed, 21 Oct 2026 25:15:31 GMT"), None);
        assert_eq!(at("21 Oct 2026 02:15:31 GMT"), None);
    }

    #[test]
    fn a_limit_of_zero_turns_every_hint_off() {
        assert_eq!(parse_retry_after("5", NOW, Duration::ZERO), None);
    }

    #[test]
    fn epoch_arithmetic_matches_known_dates() {
        assert_eq!(parse_http_date("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
        assert_eq!(
            parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(784_111_777_000)
        );
        assert_eq!(
            parse_http_date("Tue, 29 Feb 2000 12:00:00 GMT"),
            Some(951_825_600_000)
        );
        assert_eq!(parse_http_date("Wed, 21 Oct 2026 02:15:26 GMT"), Some(NOW));
    }
}

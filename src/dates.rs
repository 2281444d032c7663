//! Calendar dates as the API and HTTP write them, read into Unix epoch
//! milliseconds: the HTTP date of a `Retry-After` and the RFC 3339 time of
//! an object's `creationTimestamp`.

use crate::text::{split_once, whole_number};

/// A date and time of day (UTC) as Unix epoch milliseconds; `None` when a
/// field is out of range or the year is before 1970 or after 9999. A leap
/// second (`:60`) is taken as the next second.
pub fn epoch_ms(
    year: u64,
    month: u64,
    day: u64,
    hour: u64,
    minute: u64,
    second: u64,
) -> Option<u64> {
    if !(1970..=9999).contains(&year)
        || !(1..=12).contains(&month)
        || !(1..=days_in_month(year, month)).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let days = days_since_epoch(year, month, day);
    Some((days * 86_400 + hour * 3600 + minute * 60 + second) * 1000)
}

/// An RFC 3339 time in UTC as the API writes it (`2026-12-02T01:02:03Z`,
/// fractions of a second allowed and dropped) as Unix epoch milliseconds.
pub fn rfc3339_ms(value: &str) -> Option<u64> {
    let (date, clock) = split_once(value, b'T')?;
    let clock = clock.strip_suffix('Z')?;
    let clock = split_once(clock, b'.').map_or(clock, |(whole, _)| whole);
    let (year, rest) = split_once(date, b'-')?;
    let (month, day) = split_once(rest, b'-')?;
    let (hour, rest) = split_once(clock, b':')?;
    let (minute, second) = split_once(rest, b':')?;
    epoch_ms(
        number(year, 4)?,
        number(month, 2)?,
        number(day, 2)?,
        number(hour, 2)?,
        number(minute, 2)?,
        number(second, 2)?,
    )
}

/// A field of exactly `width` ASCII digits.
pub fn number(s: &str, width: usize) -> Option<u64> {
    if s.len() != width {
        return None;
    }
    whole_number(s)
}

fn is_leap(year: u64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

fn days_in_month(year: u64, month: u64) -> u64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

fn days_since_epoch(year: u64, month: u64, day: u64) -> u64 {
    let mut days = 0;
    for y in 1970..year {
        days += if is_leap(y) { 366 } else { 365 };
    }
    for m in 1..month {
        days += days_in_month(year, m);
    }
    days + day - 1
}

#[cfg(test)]
mod tests {
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    use super::*;

    #[test]
    fn the_apis_times_are_read_to_the_second() {
        assert_eq!(rfc3339_ms("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(rfc3339_ms("2026-12-02T01:02:03Z"), Some(1_796_173_323_000));
        assert_eq!(
            rfc3339_ms("2024-02-29T23:59:59.999999Z"),
            Some(1_709_251_199_000)
        );
        for bad in [
            "",
            "2026-12-02",
            "2026-12-02T01:02:03",
            "2026-12-02T01:02:03+01:00",
            "2026-13-02T01:02:03Z",
            "2025-02-29T00:00:00Z",
            "1969-12-31T23:59:59Z",
            "2026-1-02T01:02:03Z",
            "２026-12-02T01:02:03Z",
        ] {
            assert_eq!(rfc3339_ms(bad), None, "{bad:?}");
        }
    }
}

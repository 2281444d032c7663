//! The classifier on arbitrary error facts: never a panic, and a throttle
//! wait never beyond the limit.
#![no_main]

mod input;

use std::time::Duration;

use input::Input;
use k8s_auth_preflight::{classify, Class, ErrorFacts};
use libfuzzer_sys::fuzz_target;

const CODES: &[&str] = &["ECONNREFUSED", "ECONNRESET", "UND_ERR_SOCKET", "ERR_X", "ETIMEDOUT", "", "ERR_STREAM_PREMATURE_CLOSE", "ERR_INVALID_CHAR"];
const WORDS: &[&str] = &[
    "fetch failed", "socket hang up", "SyntaxError", "TypeError", "3", "-1", "Wed, 21 Oct 2026 02:15:31 GMT", "99999999999",
    "terminated", "terminated:", "Premature close", "Invalid response body", "is not a legal HTTP header value",
    "Cannot convert argument to a ByteString", "ü", "\u{2019}", "",
];

fuzz_target!(|data: &[u8]| {
    let mut input = Input::new(data);
    let facts = ErrorFacts {
        codes: input.strings(CODES, 4),
        status: if input.bool() { Some(input.u16()) } else { None },
        retry_after: if input.bool() { Some(input.string(WORDS)) } else { None },
        timed_out: input.bool(),
        name: if input.bool() { Some(input.string(WORDS)) } else { None },
        message: input.string(WORDS),
        credential_source: if input.bool() { Some(input.string(WORDS)) } else { None },
        body: if input.bool() { Some(input.string(WORDS)) } else { None },
    };
    let limit = Duration::from_millis(input.u64() % 600_000);
    let now = input.u64() >> 1;
    match classify(&facts, now, limit) {
        Class::Throttled { retry_after_ms: Some(ms), .. } => assert!(ms <= limit.as_millis() as u64),
        Class::Transient { why } | Class::Fatal { why } | Class::Throttled { why, .. } => assert!(!why.is_empty()),
    }
});

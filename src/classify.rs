//! Error facts -> transient, throttled or fatal.
//!
//! The shim cannot know what a failure means; it only reports what it saw
//! ([`ErrorFacts`]): every `code` in the error's cause chain, the HTTP status,
//! the `Retry-After` header, whether our own per-request timeout fired, and
//! the message. [`classify`] decides what the preflight does with it.
//!
//! The rules, in order:
//! 1. our own per-request timeout fired: transient (a stale backend hangs).
//! 2. an HTTP status was received: 429 is throttled; 503 with a readable
//!    `Retry-After` is throttled; 401, 403, 408 and every 5xx are transient
//!    (the 403 is the unwarmed apiserver's RBAC cache, see DESIGN.md); 2xx
//!    with a body that did not parse (`SyntaxError`) and every other 4xx are
//!    fatal.
//! 3. no status: a transient connection code anywhere in the cause chain
//!    (`ECONNREFUSED`, ..., any `UND_ERR_*`), or a transient message signature
//!    (`socket hang up`, or a code spelled out inside the message) is
//!    transient; a `SyntaxError` is fatal; anything else is fatal, because an
//!    unknown error retried for 90 s only hides a bug.

use std::time::Duration;

use crate::retry_after::parse_retry_after;
use crate::text::contains;

/// What the shim observed about one failed request. Every field is optional
/// so that a half-filled report (a `throw "string"`, an error with no code)
/// is still classified.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ErrorFacts {
    /// Every `code` found walking `cause` chains and `AggregateError.errors`.
    pub codes: Vec<String>,
    /// HTTP status, when a response arrived.
    pub status: Option<u16>,
    /// The raw `Retry-After` header, when present.
    pub retry_after: Option<String>,
    /// True when the shim aborted the request because its timeout fired.
    pub timed_out: bool,
    /// The error's `name` (`SyntaxError`, `TypeError`, `FetchError`, ...).
    pub name: Option<String>,
    /// The error's message (joined with its causes' messages by the shim).
    pub message: String,
}

/// What to do about a failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Class {
    /// Worth another attempt after the normal backoff.
    Transient {
        /// Short reason, e.g. `ECONNREFUSED` or `HTTP 403`.
        why: String,
    },
    /// The server asked us to slow down. `retry_after_ms` is its requested
    /// wait, already clamped; `None` means "use the normal backoff".
    Throttled {
        /// The server's requested wait in ms, clamped to the configured limit.
        retry_after_ms: Option<u64>,
        /// Short reason, e.g. `HTTP 429`.
        why: String,
    },
    /// Retrying will not help.
    Fatal {
        /// Short reason, e.g. `HTTP 404` or `malformed response body`.
        why: String,
    },
}

impl Class {
    /// The reason text of any class.
    pub fn why(&self) -> &str {
        match self {
            Class::Transient { why } | Class::Throttled { why, .. } | Class::Fatal { why } => why,
        }
    }

    /// `transient`, `throttled` or `fatal`, for debug lines.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Class::Transient { .. } => "transient",
            Class::Throttled { .. } => "throttled",
            Class::Fatal { .. } => "fatal",
        }
    }

    /// True for `Transient` and `Throttled`.
    pub fn is_retryable(&self) -> bool {
        !matches!(self, Class::Fatal { .. })
    }
}

/// Connection-level codes that mean "the path to the apiserver blinked".
pub const TRANSIENT_CODES: &[&str] = &[
    "ECONNREFUSED",
    "ECONNRESET",
    "ETIMEDOUT",
    "EPIPE",
    "EHOSTUNREACH",
    "ENETUNREACH",
    "ENETDOWN",
    "EAI_AGAIN",
    "ECONNABORTED",
];

/// Undici's error codes all start with this; every one of them is a
/// transport failure (socket, connect timeout, headers timeout, closed).
const UNDICI_PREFIX: &str = "UND_ERR_";

/// Message fragments that mark a transport failure when no code survived.
const TRANSIENT_MESSAGES: &[&str] = &[
    "socket hang up",
    "other side closed",
    "client network socket disconnected",
];

/// Classifies one failure. `now_ms` (Unix epoch) is needed for HTTP-date
/// `Retry-After` values; `retry_after_limit` clamps what a server may ask.
pub fn classify(facts: &ErrorFacts, now_ms: u64, retry_after_limit: Duration) -> Class {
    if facts.timed_out {
        return Class::Transient {
            why: "request timed out".into(),
        };
    }
    if let Some(status) = facts.status {
        return classify_status(status, facts, now_ms, retry_after_limit);
    }
    if let Some(code) = transient_code(facts) {
        return Class::Transient { why: code };
    }
    let message = facts.message.to_ascii_lowercase();
    if let Some(sign) = TRANSIENT_MESSAGES.iter().find(|m| contains(&message, m)) {
        return Class::Transient {
            why: (*sign).to_string(),
        };
    }
    if let Some(code) = TRANSIENT_CODES.iter().find(|c| contains(&facts.message, c)) {
        return Class::Transient {
            why: (*code).to_string(),
        };
    }
    if facts.name.as_deref() == Some("SyntaxError") {
        return Class::Fatal {
            why: "malformed response body (not JSON)".into(),
        };
    }
    Class::Fatal {
        why: if facts.message.is_empty() {
            "unknown error".into()
        } else {
            format!("unknown error: {}", shorten(&facts.message))
        },
    }
}

fn classify_status(status: u16, facts: &ErrorFacts, now_ms: u64, limit: Duration) -> Class {
    let why = format!("HTTP {status}");
    let retry_after = || {
        facts
            .retry_after
            .as_deref()
            .and_then(|v| parse_retry_after(v, now_ms, limit))
            .map(crate::millis)
    };
    match status {
        429 => Class::Throttled {
            retry_after_ms: retry_after(),
            why,
        },
        503 => match retry_after() {
            Some(ms) => Class::Throttled {
                retry_after_ms: Some(ms),
                why,
            },
            None => Class::Transient { why },
        },
        401 | 403 | 408 | 500..=599 => Class::Transient { why },
        200..=299 if facts.name.as_deref() == Some("SyntaxError") => Class::Fatal {
            why: format!("{why} with a malformed body (not JSON)"),
        },
        _ => Class::Fatal { why },
    }
}

fn transient_code(facts: &ErrorFacts) -> Option<String> {
    facts
        .codes
        .iter()
        .find(|c| TRANSIENT_CODES.contains(&c.as_str()) || c.starts_with(UNDICI_PREFIX))
        .cloned()
}

/// Keeps reasons short enough for one log line.
fn shorten(message: &str) -> String {
    const MAX: usize = 200;
    match message.char_indices().nth(MAX) {
        Some((cut, _)) => {
            let mut short = message.to_string();
            short.truncate(cut);
            short.push_str("...");
            short
        }
        None => message.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    const LIMIT: Duration = Duration::from_secs(32);
    const NOW: u64 = 1_792_548_926_000;

    fn code(c: &str) -> ErrorFacts {
        ErrorFacts {
            codes: vec![c.into()],
            message: "fetch failed".into(),
            name: Some("TypeError".into()),
            ..Default::default()
        }
    }
    fn status(s: u16) -> ErrorFacts {
        ErrorFacts {
            status: Some(s),
            message: format!("HTTP-Code: {s}"),
            ..Default::default()
        }
    }
    fn with_retry_after(mut f: ErrorFacts, v: &str) -> ErrorFacts {
        f.retry_after = Some(v.into());
        f
    }
    fn message(m: &str) -> ErrorFacts {
        ErrorFacts {
            message: m.into(),
            ..Default::default()
        }
    }

    #[derive(Debug, PartialEq)]
    enum K {
        T,
        Th(Option<u64>),
        F,
    }

    fn kind(c: &Class) -> K {
        match c {
            Class::Transient { .. } => K::T,
            Class::Throttled { retry_after_ms, .. } => K::Th(*retry_after_ms),
            Class::Fatal { .. } => K::F,
        }
    }

    /// Every row the issue lists, with its expected class.
    #[test]
    fn classification_table() {
        let mut rows: Vec<(&str, ErrorFacts, K)> = Vec::new();
        for c in TRANSIENT_CODES {
            rows.push((c, code(c), K::T));
        }
        for c in [
            "UND_ERR_SOCKET",
            "UND_ERR_CONNECT_TIMEOUT",
            "UND_ERR_HEADERS_TIMEOUT",
            "UND_ERR_CLOSED",
        ] {
            rows.push((c, code(c), K::T));
        }
        rows.push((
            "fetch failed, cause nested two deep",
            ErrorFacts {
                codes: vec!["ERR_SOMETHING".into(), "ECONNREFUSED".into()],
                message: "fetch failed".into(),
                ..Default::default()
            },
            K::T,
        ));
        rows.push((
            "fetch failed with no transient cause",
            ErrorFacts {
                codes: vec!["ERR_INVALID_URL".into()],
                message: "fetch failed".into(),
                name: Some("TypeError".into()),
                ..Default::default()
            },
            K::F,
        ));
        rows.push(("socket hang up", message("socket hang up"), K::T));
        rows.push((
            "client-node 1.x message with the code spelled out",
            message("request to https://10.247.0.1/apis failed, reason: connect ECONNREFUSED 10.247.0.1:443"),
            K::T,
        ));
        rows.push((
            "our own timeout",
            ErrorFacts {
                timed_out: true,
                name: Some("AbortError".into()),
                message: "This operation was aborted".into(),
                ..Default::default()
            },
            K::T,
        ));
        for s in [401, 403, 408, 500, 502, 503, 504, 507, 599] {
            rows.push(("transient status", status(s), K::T));
        }
        rows.push(("429 without Retry-After", status(429), K::Th(None)));
        rows.push((
            "429 with Retry-After seconds",
            with_retry_after(status(429), "3"),
            K::Th(Some(3_000)),
        ));
        rows.push((
            "429 with Retry-After date",
            with_retry_after(status(429), "Wed, 21 Oct 2026 02:15:36 GMT"),
            K::Th(Some(10_000)),
        ));
        rows.push((
            "429 with absurd Retry-After is clamped",
            with_retry_after(status(429), "999999"),
            K::Th(Some(32_000)),
        ));
        rows.push((
            "429 with negative Retry-After is no hint",
            with_retry_after(status(429), "-5"),
            K::Th(None),
        ));
        rows.push((
            "429 with Retry-After 0 is no hint",
            with_retry_after(status(429), "0"),
            K::Th(None),
        ));
        rows.push((
            "503 with Retry-After 0 is a plain 503",
            with_retry_after(status(503), "0"),
            K::T,
        ));
        rows.push((
            "429 with unreadable Retry-After uses backoff",
            with_retry_after(status(429), "later"),
            K::Th(None),
        ));
        rows.push((
            "503 with Retry-After",
            with_retry_after(status(503), "2"),
            K::Th(Some(2_000)),
        ));
        rows.push((
            "503 with unreadable Retry-After",
            with_retry_after(status(503), "x"),
            K::T,
        ));
        for s in [400, 402, 404, 405, 409, 410, 413, 415, 422, 451] {
            rows.push(("fatal status", status(s), K::F));
        }
        rows.push((
            "2xx with a malformed body",
            ErrorFacts {
                status: Some(201),
                name: Some("SyntaxError".into()),
                message: "Unexpected end of JSON input".into(),
                ..Default::default()
            },
            K::F,
        ));
        rows.push((
            "SyntaxError with no status",
            ErrorFacts {
                name: Some("SyntaxError".into()),
                message: "Unexpected token < in JSON at position 0".into(),
                ..Default::default()
            },
            K::F,
        ));
        rows.push(("unknown error", message("something odd"), K::F));
        rows.push(("nothing at all", ErrorFacts::default(), K::F));

        for (name, facts, want) in rows {
            let got = classify(&facts, NOW, LIMIT);
            assert_eq!(kind(&got), want, "{name}: {facts:?} -> {got:?}");
        }
    }

    #[test]
    fn timeout_wins_over_everything_else() {
        let facts = ErrorFacts {
            timed_out: true,
            status: Some(404),
            ..Default::default()
        };
        assert_eq!(kind(&classify(&facts, NOW, LIMIT)), K::T);
    }

    #[test]
    fn reasons_name_the_evidence() {
        assert_eq!(
            classify(&code("ECONNREFUSED"), NOW, LIMIT).why(),
            "ECONNREFUSED"
        );
        assert_eq!(classify(&status(403), NOW, LIMIT).why(), "HTTP 403");
        let long = "x".repeat(1000);
        let why = classify(&message(&long), NOW, LIMIT).why().to_string();
        assert!(
            why.len() < 230,
            "unknown-error reasons are shortened: {}",
            why.len()
        );
    }
}

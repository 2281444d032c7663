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
//!    A 2xx whose body was cut off in transit (see rule 4) is transient.
//! 3. no status, and the HTTP client refused to send a header value (a
//!    credential with a trailing newline, a NUL, a character above U+00FF):
//!    fatal, with a message that says so and names where the credential came
//!    from ([`ErrorFacts::credential_source`]). The shim has already
//!    replaced the credential in the message with `<redacted>`.
//! 4. no status: a transient connection code anywhere in the cause chain
//!    (`ECONNREFUSED`, ..., any `UND_ERR_*`), a body cut off mid-way
//!    (`ERR_STREAM_PREMATURE_CLOSE`, "Premature close", "Invalid response
//!    body", undici's `terminated`), or a transient message signature
//!    (`socket hang up`, or a code spelled out inside the message) is
//!    transient; a `SyntaxError` is fatal; anything else is fatal, because an
//!    unknown error retried for 90 s only hides a bug.

use std::time::Duration;

use crate::api_status::ApiStatus;
use crate::error_codes;
use crate::retry_after::parse_retry_after;
use crate::text::contains;

/// What the shim observed about one failed request. Every field is optional
/// so that a half-filled report (a `throw "string"`, an error with no code)
/// is still classified.
///
/// On the wire (`js-shim/facts.js`) camelCase keys, each one optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ErrorFacts {
    /// HTTP status, when a response arrived.
    pub status: Option<u16>,
    /// Every `code` found walking `cause` chains and `AggregateError.errors`.
    pub codes: Vec<String>,
    /// The raw `Retry-After` header, when present.
    pub retry_after: Option<String>,
    /// True when the shim aborted the request because its timeout fired.
    pub timed_out: bool,
    /// The error's `name` (`SyntaxError`, `TypeError`, `FetchError`, ...).
    pub name: Option<String>,
    /// The error's message (joined with its causes' messages by the shim,
    /// with the credential replaced by `<redacted>`).
    pub message: String,
    /// Where the credential the request carried came from (`the token file
    /// /var/run/secrets/.../token`, `the kubeconfig's inline token`), when
    /// the shim knows; only ever named in messages.
    pub credential_source: Option<String>,
    /// The body of an HTTP error answer, as text (the credential hidden),
    /// when the client kept it: a Kubernetes `Status` says who refused and
    /// why ([`ErrorFacts::api_status`]).
    pub body: Option<String>,
}

impl ErrorFacts {
    /// The facts of a request a machine abandoned at its own timeout: the
    /// host saw no error.
    pub fn own_timeout() -> ErrorFacts {
        ErrorFacts {
            timed_out: true,
            message: "request timed out".into(),
            ..ErrorFacts::default()
        }
    }

    /// The apiserver's `Status` in the answer's body, if there is one.
    pub fn api_status(&self) -> Option<ApiStatus> {
        self.body.as_deref().and_then(ApiStatus::of_body)
    }

    /// A proxy between us and the apiserver reported that it could not
    /// reach the apiserver (see [`PROXY_REFUSALS`]): nothing was sent to
    /// the apiserver.
    pub fn proxy_could_not_connect(&self) -> bool {
        self.status.is_none() && PROXY_REFUSALS.iter().any(|m| contains(&self.message, m))
    }
}

/// How a proxy reports that it could not reach the target, as the proxy
/// agents client-node uses word it: a SOCKS5 reply that is not a success
/// (`Socks5 proxy rejected connection - ConnectionRefused`, also
/// `HostUnreachable`, `NetworkUnreachable`, `TTLExpired`, `Failure`), a
/// SOCKS4 refusal, and an HTTP CONNECT answered 502, 503 or 504 for a
/// target the proxy could not reach (`Bad response: 503` from hpagent,
/// `Proxy response (503) !== 200` from undici). Each comes before a byte
/// reaches the apiserver.
pub const PROXY_REFUSALS: &[&str] = &[
    "Socks5 proxy rejected connection - ConnectionRefused",
    "Socks5 proxy rejected connection - HostUnreachable",
    "Socks5 proxy rejected connection - NetworkUnreachable",
    "Socks5 proxy rejected connection - TTLExpired",
    "Socks5 proxy rejected connection - Failure",
    "Socks4 Proxy rejected connection",
    "Bad response: 502",
    "Bad response: 503",
    "Bad response: 504",
    // undici's ProxyAgent (client-node 2.x): "Proxy response (503) !==
    // 200 when HTTP Tunneling".
    "Proxy response (502)",
    "Proxy response (503)",
    "Proxy response (504)",
];

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

/// Undici's error codes all start with this; every one of them is a
/// transport failure (socket, connect timeout, headers timeout, closed).
const UNDICI_PREFIX: &str = "UND_ERR_";

/// Message fragments that mark a transport failure when no code survived.
const TRANSIENT_MESSAGES: &[&str] = &[
    "socket hang up",
    "other side closed",
    "client network socket disconnected",
];

/// Codes that mean the response body was cut off while it was read: the
/// stream ended before the body did. node-fetch (client-node 1.x) reports a
/// cut chunked body as `FetchError` with this code; undici (2.x) reports
/// every cut as `UND_ERR_SOCKET`, already transient by its prefix.
const BODY_CUT_CODES: &[&str] = &["ERR_STREAM_PREMATURE_CLOSE"];

/// Lower-case message fragments of a body read that failed mid-way:
/// node-fetch's "Invalid response body while trying to fetch <url>:
/// Premature close".
const BODY_CUT_MESSAGES: &[&str] = &["premature close", "invalid response body"];

/// Undici's message for a body whose connection ended mid-way, matched as
/// the whole message or its first part (`terminated: other side closed`):
/// the word alone is too common to look for anywhere.
const UNDICI_TERMINATED: &str = "terminated";

/// Lower-case message fragments of an HTTP client refusing a header value
/// before anything was sent. The only header value we do not write
/// ourselves is the credential's (`Authorization: Bearer <token>`).
const BAD_HEADER_MESSAGES: &[&str] = &[
    // node-fetch (client-node 1.x): "Bearer <token> is not a legal HTTP header value"
    "is not a legal http header value",
    // undici's Headers (2.x): a NUL or a newline inside the value
    "is an invalid header value",
    // undici's WebIDL (2.x): a character above U+00FF
    "cannot convert argument to a bytestring",
    // node:http (`ERR_INVALID_CHAR`)
    "invalid character in header content",
];

/// Node's codes for the same refusal.
const BAD_HEADER_CODES: &[&str] = &["ERR_INVALID_CHAR", "ERR_HTTP_INVALID_HEADER_VALUE"];

/// The error as messages quote it (the check's and the calls' alike): the
/// class's reason, with the client's message when it says more.
pub fn describe(class: &Class, facts: &ErrorFacts) -> String {
    let why = class.why();
    let detail = facts.message.trim().trim_end_matches('.');
    // An abort's message ("The user aborted a request.", "This operation was
    // aborted") depends on the client and says nothing more than the flag.
    if facts.timed_out || detail.is_empty() || detail.len() > 160 {
        why.to_string()
    } else if contains(detail, why) {
        detail.to_string()
    } else {
        format!("{why}: {detail}")
    }
}

/// [`describe`], with the apiserver's own explanation (the reason and
/// message of the `Status` in the answer's body) when there is one: it
/// says more than any client's wrapping of it (`HTTP-Code: 403 Message:
/// Unknown API Status Code! Body: ...`).
pub fn describe_answer(class: &Class, facts: &ErrorFacts) -> String {
    match facts.api_status().and_then(|s| s.describe()) {
        Some(said) => format!("{} ({})", class.why(), shorten(&said)),
        None => describe(class, facts),
    }
}

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
    let message = facts.message.to_ascii_lowercase();
    if is_bad_header(facts, &message) {
        return Class::Fatal {
            why: bad_credential_reason(facts.credential_source.as_deref()),
        };
    }
    if let Some(code) = transient_code(facts) {
        return Class::Transient { why: code };
    }
    if facts.proxy_could_not_connect() {
        return Class::Transient {
            why: "the proxy could not reach the apiserver".into(),
        };
    }
    if let Some(why) = body_cut(facts, &message) {
        return Class::Transient { why };
    }
    if let Some(sign) = TRANSIENT_MESSAGES.iter().find(|m| contains(&message, m)) {
        return Class::Transient {
            why: (*sign).to_string(),
        };
    }
    if let Some(code) = error_codes::transient().find(|c| contains(&facts.message, c)) {
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
        200..=299 if body_cut(facts, &facts.message.to_ascii_lowercase()).is_some() => {
            Class::Transient {
                why: format!("{why} with its body cut off"),
            }
        }
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
        .find(|c| error_codes::is_transient(c) || c.starts_with(UNDICI_PREFIX))
        .cloned()
}

/// The response body was cut off mid-way (see [`BODY_CUT_CODES`]); the
/// reason, if so. Undici's own codes count too (a 2xx reported with one).
fn body_cut(facts: &ErrorFacts, lower_message: &str) -> Option<String> {
    let code = facts
        .codes
        .iter()
        .find(|c| BODY_CUT_CODES.contains(&c.as_str()) || c.starts_with(UNDICI_PREFIX));
    if let Some(code) = code {
        return Some(format!("response body cut off ({code})"));
    }
    let terminated = lower_message == UNDICI_TERMINATED
        || lower_message
            .strip_prefix(UNDICI_TERMINATED)
            .is_some_and(|rest| rest.starts_with(':'));
    if terminated || BODY_CUT_MESSAGES.iter().any(|m| contains(lower_message, m)) {
        return Some("response body cut off".into());
    }
    None
}

/// True when the HTTP client refused to send the request at all (a
/// credential that is not a legal header value): every other request of
/// the check carries the same header and fails the same way.
pub fn request_cannot_be_sent(facts: &ErrorFacts) -> bool {
    facts.status.is_none() && is_bad_header(facts, &facts.message.to_ascii_lowercase())
}

/// The HTTP client refused a header value: nothing was sent.
fn is_bad_header(facts: &ErrorFacts, lower_message: &str) -> bool {
    facts
        .codes
        .iter()
        .any(|c| BAD_HEADER_CODES.contains(&c.as_str()))
        || BAD_HEADER_MESSAGES
            .iter()
            .any(|m| contains(lower_message, m))
}

/// What to tell the user when the credential cannot be sent as a header.
fn bad_credential_reason(source: Option<&str>) -> String {
    const WHAT: &str =
        "contains a character that is not allowed in an HTTP header, such as a trailing newline";
    match source.map(str::trim).filter(|s| !s.is_empty()) {
        Some(source) => format!(
            "the service-account token {WHAT} (the token comes from {}); remove that character",
            shorten(source)
        ),
        None => format!("the credential (or another header value) {WHAT}"),
    }
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
        for c in crate::error_codes::transient() {
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
        // A 2xx body cut off mid-way, as each client reports it (provoked
        // against tests/support/apiserver.js's `cutBody` phase).
        rows.push((
            "node-fetch: a cut chunked body",
            ErrorFacts {
                codes: vec!["ERR_STREAM_PREMATURE_CLOSE".into()],
                name: Some("FetchError".into()),
                message: "Invalid response body while trying to fetch https://127.0.0.1:1/apis/authorization.k8s.io/v1/selfsubjectaccessreviews: Premature close".into(),
                ..Default::default()
            },
            K::T,
        ));
        rows.push((
            "node-fetch: the message alone",
            message("Invalid response body while trying to fetch https://x/: Premature close"),
            K::T,
        ));
        rows.push((
            "undici: terminated, UND_ERR_SOCKET cause",
            ErrorFacts {
                codes: vec!["UND_ERR_SOCKET".into()],
                name: Some("TypeError".into()),
                message: "terminated: other side closed".into(),
                ..Default::default()
            },
            K::T,
        ));
        rows.push(("undici: a bare terminated", message("terminated"), K::T));
        rows.push((
            "a 200 reported with its cut",
            ErrorFacts {
                status: Some(200),
                codes: vec!["ERR_STREAM_PREMATURE_CLOSE".into()],
                message: "Premature close".into(),
                ..Default::default()
            },
            K::T,
        ));
        rows.push((
            "'terminated' inside another message",
            message("process terminated abnormally"),
            K::F,
        ));
        rows.push(("unknown error", message("something odd"), K::F));
        rows.push(("nothing at all", ErrorFacts::default(), K::F));

        for (name, facts, want) in rows {
            let got = classify(&facts, NOW, LIMIT);
            assert_eq!(kind(&got), want, "{name}: {facts:?} -> {got:?}");
        }
    }

    /// Every shape of an HTTP client refusing the credential's header, as
    /// seen from client-node 1.x (node-fetch) and 2.x (undici), after the
    /// shim's redaction: fatal, and the reason says what is wrong and where
    /// the token came from.
    #[test]
    fn a_credential_that_is_not_a_legal_header_value_is_fatal_and_named() {
        let shapes = [
            ("", "Bearer <redacted> is not a legal HTTP header value"),
            ("", "Headers.append: \"Bearer <redacted>\" is an invalid header value."),
            ("", "Cannot convert argument to a ByteString because the character at index 48 has a value of 8203 which is greater than 255."),
            ("ERR_INVALID_CHAR", "Invalid character in header content [\"Authorization\"]"),
            ("ERR_HTTP_INVALID_HEADER_VALUE", "Invalid value \"<redacted>\" for header \"Authorization\""),
        ];
        for (code, msg) in shapes {
            let facts = ErrorFacts {
                codes: if code.is_empty() {
                    vec![]
                } else {
                    vec![code.into()]
                },
                name: Some("TypeError".into()),
                message: msg.into(),
                credential_source: Some("the token file /run/secrets/token".into()),
                ..Default::default()
            };
            let class = classify(&facts, NOW, LIMIT);
            assert_eq!(kind(&class), K::F, "{msg}");
            let why = class.why();
            assert!(
                why.contains("not allowed in an HTTP header, such as a trailing newline")
                    && why.contains("the token file /run/secrets/token"),
                "{why}"
            );
        }
        let unknown_source = ErrorFacts {
            message: "Bearer <redacted> is not a legal HTTP header value".into(),
            ..Default::default()
        };
        assert!(classify(&unknown_source, NOW, LIMIT)
            .why()
            .contains("not allowed in an HTTP header"));
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

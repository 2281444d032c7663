//! How far a failed request got ([`FailureStage`]), read from the facts
//! the shim reports ([`ErrorFacts`]): whether it provably never reached
//! the apiserver, whether a write it carried may have been applied, and,
//! for a streaming connection, whether the command provably never started.
//!
//! The reading is conservative: a failure is "never reached" only on
//! evidence (every code is one of the connection phase's), never by
//! default. An unknown error, a reset or a timeout may have come after the
//! request went out.
//!
//! Read by the wrapped calls ([`crate::call`], which re-exports it) and by
//! the durable execs ([`crate::durable`]) alike: a module of its own, so
//! that neither of them takes it from the other.

use crate::classify::{request_cannot_be_sent, ErrorFacts};
use crate::error_codes::{self, Reached};
use crate::text::{self, contains};

/// Where a failed request stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FailureStage {
    /// No connection was made: refused, host or network unreachable, or
    /// a proxy on the way reported that it could not reach the apiserver.
    NotConnected,
    /// The apiserver's name did not resolve.
    Dns,
    /// The TLS handshake failed (a certificate, the protocol), or the
    /// connection closed before it completed.
    Tls,
    /// The HTTP client refused to send the request (a header value it
    /// cannot write, see [`request_cannot_be_sent`]).
    NotSent,
    /// An HTTP status came back: for a connection, instead of switching
    /// protocols.
    Answered {
        /// The status.
        status: u16,
    },
    /// Our own timeout fired: the request may have been sent and acted on.
    TimedOut,
    /// Anything else (a reset, a body cut off, an unknown error): the
    /// request may have been sent and acted on.
    Unknown,
}

/// What the `ws` client (client-node's exec, attach and port-forward) says
/// when the apiserver answered an upgrade with a status: the status is only
/// in this message (`Unexpected server response: 503`).
const UPGRADE_REFUSED: &str = "Unexpected server response: ";

/// The status an upgrade was answered with, read from the `ws` client's
/// message when the facts carry none.
pub fn with_upgrade_status(mut facts: ErrorFacts) -> ErrorFacts {
    if facts.status.is_none() {
        if let Some(at) = text::find(&facts.message, UPGRADE_REFUSED) {
            // `get`, not an index: no panic path in the `.wasm`.
            let rest = facts.message.get(at + UPGRADE_REFUSED.len()..);
            let digits = rest.unwrap_or("").bytes().take_while(u8::is_ascii_digit);
            let digits = rest.unwrap_or("").get(..digits.count()).unwrap_or("");
            facts.status = text::whole_number(digits)
                .filter(|s| (100..=599).contains(s))
                .map(|s| s as u16);
        }
    }
    facts
}

/// Node's TLS failures: `ERR_TLS_*`, OpenSSL's `ERR_SSL_*`, and the
/// certificate checks (`CERT_HAS_EXPIRED`, `UNABLE_TO_VERIFY_LEAF_SIGNATURE`,
/// `DEPTH_ZERO_SELF_SIGNED_CERT`, ...).
fn is_tls_code(code: &str) -> bool {
    code == "EPROTO"
        || ["ERR_TLS_", "ERR_SSL_", "CERT_", "UNABLE_TO_"]
            .iter()
            .any(|p| code.starts_with(p))
        || contains(code, "SELF_SIGNED_CERT")
}

/// Node's message for a connection closed during the TLS handshake (its
/// code, `ECONNRESET`, alone would not say that nothing was sent).
const TLS_NOT_ESTABLISHED: &str = "before secure TLS connection was established";

impl FailureStage {
    /// Reads the stage from the facts of one failure.
    ///
    /// In order: a status is [`FailureStage::Answered`]; a request the
    /// client would not send is [`FailureStage::NotSent`]; our timeout is
    /// [`FailureStage::TimedOut`]; a connection closed during the TLS
    /// handshake is [`FailureStage::Tls`]; codes that are all of the
    /// connection phase (an `ETIMEDOUT` among them counts only beside
    /// another: alone it may be a read timeout) are `Tls`, `Dns` or
    /// `NotConnected`, the first that any code shows; with no code, the
    /// client-node 1.x message (`connect ECONNREFUSED ...`, `getaddrinfo
    /// ENOTFOUND ...`) is read the same way. Everything else is
    /// [`FailureStage::Unknown`].
    pub fn of(facts: &ErrorFacts) -> FailureStage {
        if let Some(status) = facts.status {
            return FailureStage::Answered { status };
        }
        if request_cannot_be_sent(facts) {
            return FailureStage::NotSent;
        }
        if facts.timed_out {
            return FailureStage::TimedOut;
        }
        if contains(&facts.message, TLS_NOT_ESTABLISHED) {
            return FailureStage::Tls;
        }
        if facts.proxy_could_not_connect() {
            return FailureStage::NotConnected;
        }
        if facts.codes.is_empty() {
            return FailureStage::of_message(&facts.message);
        }
        let phase = |c: &String| error_codes::reached(c).is_some() || is_tls_code(c);
        let all_in_phase = facts.codes.iter().all(|c| phase(c) || c == "ETIMEDOUT");
        if !all_in_phase || !facts.codes.iter().any(phase) {
            return FailureStage::Unknown;
        }
        if facts.codes.iter().any(|c| is_tls_code(c)) {
            FailureStage::Tls
        } else if facts
            .codes
            .iter()
            .any(|c| error_codes::reached(c) == Some(Reached::Dns))
        {
            FailureStage::Dns
        } else {
            FailureStage::NotConnected
        }
    }

    /// client-node 1.x spells the system call out when no code survived:
    /// `request to https://... failed, reason: connect ECONNREFUSED ...`.
    fn of_message(message: &str) -> FailureStage {
        if error_codes::reaching(Reached::NotConnected)
            .any(|c| contains(message, &format!("connect {c}")))
        {
            FailureStage::NotConnected
        } else if error_codes::reaching(Reached::Dns)
            .any(|c| contains(message, &format!("getaddrinfo {c}")))
        {
            FailureStage::Dns
        } else {
            FailureStage::Unknown
        }
    }

    /// True when the request provably never reached the apiserver: nothing
    /// it asked for can have happened.
    pub fn never_reached(&self) -> bool {
        matches!(
            self,
            FailureStage::NotConnected
                | FailureStage::Dns
                | FailureStage::Tls
                | FailureStage::NotSent
        )
    }

    /// Whether a write this request carried (a create, a delete) may have
    /// been applied. No when it never reached the apiserver, or when the
    /// apiserver answered 4xx other than 408: authentication (401),
    /// authorization (403), priority and fairness (429) and validation all
    /// refuse a request before it is written. Yes for anything else: a 2xx
    /// whose body was lost, a 5xx or 408 (a storage timeout may still
    /// commit), our timeout, a reset.
    pub fn may_have_applied(&self) -> bool {
        match self {
            FailureStage::Answered { status } => !((400..500).contains(status) && *status != 408),
            other => !other.never_reached(),
        }
    }

    /// For a streaming connection (exec, attach, port-forward): true when
    /// the command provably never started, so the set-up may be sent
    /// again: the connection that would have carried it was never made
    /// (refused, unreachable, a proxy that could not reach the apiserver,
    /// DNS, TLS), or the client would not send it. Never for an HTTP
    /// answer instead of the protocol switch: a gateway in front of the
    /// apiserver may answer any status (a 503 "reset before headers", a
    /// 401 of its own) after it forwarded the upgrade and the command
    /// started, and the `ws` client shows the status, not who sent it.
    /// Never after our timeout or an unknown failure either: the upgrade
    /// may have been accepted and the command started.
    pub fn setup_may_be_retried(&self) -> bool {
        self.never_reached()
    }

    /// A short description for debug lines.
    pub fn describe(&self) -> String {
        match self {
            FailureStage::NotConnected => "no connection made".into(),
            FailureStage::Dns => "the name did not resolve".into(),
            FailureStage::Tls => "the TLS handshake failed".into(),
            FailureStage::NotSent => "the request could not be sent".into(),
            FailureStage::Answered { status } => format!("answered HTTP {status}"),
            FailureStage::TimedOut => "timed out after the request may have been sent".into(),
            FailureStage::Unknown => "failed after the request may have been sent".into(),
        }
    }
}

#[cfg(test)]
mod upgrade_tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    fn said(message: &str) -> Option<u16> {
        with_upgrade_status(ErrorFacts {
            message: message.into(),
            ..ErrorFacts::default()
        })
        .status
    }

    #[test]
    fn the_ws_clients_refused_upgrade_gives_its_status() {
        assert_eq!(said("Unexpected server response: 503"), Some(503));
        assert_eq!(said("x: Unexpected server response: 401: y"), Some(401));
        assert_eq!(said("Unexpected server response: "), None);
        assert_eq!(said("Unexpected server response: 99999"), None);
        assert_eq!(said("Unexpected server response: 42"), None);
        assert_eq!(said("connect ECONNREFUSED 127.0.0.1:1"), None);
        let given = with_upgrade_status(ErrorFacts {
            status: Some(429),
            message: "Unexpected server response: 503".into(),
            ..ErrorFacts::default()
        });
        assert_eq!(given.status, Some(429));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    fn codes(list: &[&str]) -> ErrorFacts {
        ErrorFacts {
            codes: list.iter().map(|c| c.to_string()).collect(),
            message: "fetch failed".into(),
            ..ErrorFacts::default()
        }
    }

    fn status(s: u16) -> ErrorFacts {
        ErrorFacts {
            status: Some(s),
            ..ErrorFacts::default()
        }
    }

    #[test]
    fn stages_are_read_from_the_facts() {
        let rows: Vec<(&str, ErrorFacts, FailureStage)> = vec![
            ("refused", codes(&["ECONNREFUSED"]), FailureStage::NotConnected),
            (
                "undici: refused twice (IPv4 and IPv6)",
                codes(&["ECONNREFUSED", "ECONNREFUSED"]),
                FailureStage::NotConnected,
            ),
            (
                "happy eyeballs: a timeout beside a refusal",
                codes(&["ETIMEDOUT", "ECONNREFUSED"]),
                FailureStage::NotConnected,
            ),
            ("ETIMEDOUT alone", codes(&["ETIMEDOUT"]), FailureStage::Unknown),
            (
                "undici connect timeout",
                codes(&["UND_ERR_CONNECT_TIMEOUT"]),
                FailureStage::NotConnected,
            ),
            ("unreachable", codes(&["EHOSTUNREACH"]), FailureStage::NotConnected),
            ("dns", codes(&["ENOTFOUND"]), FailureStage::Dns),
            ("dns again", codes(&["EAI_AGAIN"]), FailureStage::Dns),
            ("expired", codes(&["CERT_HAS_EXPIRED"]), FailureStage::Tls),
            (
                "self-signed",
                codes(&["DEPTH_ZERO_SELF_SIGNED_CERT"]),
                FailureStage::Tls,
            ),
            (
                "altname",
                codes(&["ERR_TLS_CERT_ALTNAME_INVALID"]),
                FailureStage::Tls,
            ),
            (
                "reset during the handshake",
                ErrorFacts {
                    codes: vec!["ECONNRESET".into()],
                    message: "Client network socket disconnected before secure TLS connection was established".into(),
                    ..ErrorFacts::default()
                },
                FailureStage::Tls,
            ),
            ("reset", codes(&["ECONNRESET"]), FailureStage::Unknown),
            (
                "a refusal beside a reset is not proof",
                codes(&["ECONNREFUSED", "ECONNRESET"]),
                FailureStage::Unknown,
            ),
            ("undici socket", codes(&["UND_ERR_SOCKET"]), FailureStage::Unknown),
            (
                "client-node 1.x message",
                ErrorFacts {
                    message: "request to https://10.0.0.1/api/v1/namespaces/x/pods failed, reason: connect ECONNREFUSED 10.0.0.1:443".into(),
                    ..ErrorFacts::default()
                },
                FailureStage::NotConnected,
            ),
            (
                "client-node 1.x dns message",
                ErrorFacts {
                    message: "request to https://k8s/ failed, reason: getaddrinfo ENOTFOUND k8s".into(),
                    ..ErrorFacts::default()
                },
                FailureStage::Dns,
            ),
            (
                "a code inside another message is not proof",
                ErrorFacts {
                    message: "upstream said ECONNREFUSED".into(),
                    ..ErrorFacts::default()
                },
                FailureStage::Unknown,
            ),
            (
                "our timeout",
                ErrorFacts {
                    timed_out: true,
                    codes: vec!["ECONNREFUSED".into()],
                    ..ErrorFacts::default()
                },
                FailureStage::TimedOut,
            ),
            (
                "a header that cannot be sent",
                ErrorFacts {
                    message: "Bearer <redacted> is not a legal HTTP header value".into(),
                    ..ErrorFacts::default()
                },
                FailureStage::NotSent,
            ),
            ("a status", status(503), FailureStage::Answered { status: 503 }),
            (
                "a status wins over a timeout flag",
                ErrorFacts {
                    status: Some(409),
                    timed_out: true,
                    ..ErrorFacts::default()
                },
                FailureStage::Answered { status: 409 },
            ),
            ("nothing at all", ErrorFacts::default(), FailureStage::Unknown),
        ];
        for (name, facts, want) in rows {
            assert_eq!(FailureStage::of(&facts), want, "{name}");
        }
    }

    #[test]
    fn a_write_may_have_been_applied_unless_proven_otherwise() {
        for stage in [
            FailureStage::NotConnected,
            FailureStage::Dns,
            FailureStage::Tls,
            FailureStage::NotSent,
        ] {
            assert!(stage.never_reached());
            assert!(!stage.may_have_applied(), "{stage:?}");
        }
        for s in [400, 401, 403, 404, 409, 422, 429] {
            assert!(
                !FailureStage::Answered { status: s }.may_have_applied(),
                "{s}"
            );
        }
        for s in [200, 201, 408, 500, 502, 503, 504] {
            assert!(
                FailureStage::Answered { status: s }.may_have_applied(),
                "{s}"
            );
        }
        assert!(FailureStage::TimedOut.may_have_applied());
        assert!(FailureStage::Unknown.may_have_applied());
    }

    #[test]
    fn a_setup_is_retried_only_when_the_command_provably_never_started() {
        let retried = [
            FailureStage::NotConnected,
            FailureStage::Dns,
            FailureStage::Tls,
            FailureStage::NotSent,
        ];
        for stage in retried {
            assert!(stage.setup_may_be_retried(), "{stage:?}");
        }
        let not_retried = [
            FailureStage::TimedOut,
            FailureStage::Unknown,
            FailureStage::Answered { status: 503 },
            FailureStage::Answered { status: 429 },
            FailureStage::Answered { status: 401 },
            FailureStage::Answered { status: 403 },
            FailureStage::Answered { status: 400 },
            FailureStage::Answered { status: 404 },
            FailureStage::Answered { status: 500 },
            FailureStage::Answered { status: 502 },
            FailureStage::Answered { status: 504 },
            FailureStage::Answered { status: 101 },
            FailureStage::Answered { status: 200 },
        ];
        for stage in not_retried {
            assert!(!stage.setup_may_be_retried(), "{stage:?}");
        }
    }
}

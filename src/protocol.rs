//! What every machine's protocol shares: what it did with a report
//! ([`Accepted`]) and the level of a line it asks the host to print
//! ([`Level`]), and the readers of the fields its facts share
//! ([`Bytes`]).

use serde::de::{Deserialize, Deserializer, Visitor};

/// What a machine did with a report of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accepted {
    /// It changed the machine.
    Applied,
    /// It was for a request that is no longer current (abandoned at its
    /// timeout, answered by another copy, or the machine is over) and was
    /// ignored. The host closes what it holds from it (a stream opened
    /// late is closed, never used).
    Stale,
}

impl Accepted {
    /// The word the boundary reports it with.
    pub fn name(self) -> &'static str {
        match self {
            Accepted::Applied => "applied",
            Accepted::Stale => "stale",
        }
    }
}

/// A report a machine cannot take: the host's mistake, never the API's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadReport {
    /// No such probe (a review of the check).
    #[error("no probe {0} in this check")]
    UnknownProbe(usize),
    /// A result of the wrong kind for the probe (e.g. a rules review's
    /// body for an access review).
    #[error("probe {0} got a result of the wrong kind for its request")]
    WrongResultKind(usize),
    /// No request with that number was sent (a call's).
    #[error("no request {0} was sent for this call")]
    UnknownRequest(u32),
    /// A report of the wrong kind for the request (a body for a `Send`,
    /// a stream for a read-back, ...).
    #[error("request {0} got a report of the wrong kind for what it asked")]
    WrongReport(u32),
}

/// The level of a line a machine asks the host to print.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Shown when step debug logging is on.
    Debug,
    /// A plain line.
    Info,
    /// A warning annotation.
    Warning,
    /// An error annotation.
    Error,
}

impl Level {
    /// The name the host's logger has for it.
    pub fn name(self) -> &'static str {
        match self {
            Level::Debug => "debug",
            Level::Info => "info",
            Level::Warning => "warning",
            Level::Error => "error",
        }
    }
}

/// Bytes read as bytes (a `Uint8Array` at the boundary), where serde's own
/// `Vec<u8>` would read a list of numbers.
pub struct Bytes(pub Vec<u8>);

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Bytes, D::Error> {
        struct Expect;
        impl Visitor<'_> for Expect {
            type Value = Bytes;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a Uint8Array")
            }
            fn visit_byte_buf<E>(self, bytes: Vec<u8>) -> Result<Bytes, E> {
                Ok(Bytes(bytes))
            }
        }
        d.deserialize_byte_buf(Expect)
    }
}

/// Every field a request's result may have (the check's and the calls'),
/// read in one go by the result types' readers: one reader for every `type`
/// `K`, where an enum's derive writes one per variant.
#[derive(serde::Deserialize)]
pub(crate) struct ResultFields<K> {
    #[serde(rename = "type")]
    pub kind: K,
    #[serde(default)]
    pub body: Option<String>,
    #[serde(default)]
    pub facts: Option<crate::classify::ErrorFacts>,
    #[cfg(feature = "test-exports")]
    #[serde(default)]
    pub allowed: Option<bool>,
    #[cfg(feature = "test-exports")]
    #[serde(default)]
    pub reason: Option<String>,
    #[cfg(feature = "test-exports")]
    #[serde(default)]
    pub status: Option<crate::rules::RulesStatus>,
}

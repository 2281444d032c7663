//! What Node's error codes say of a failed request, listed once: whether
//! the path to the apiserver blinked (worth a retry, [`crate::classify`])
//! and how far the request got ([`crate::call::FailureStage`]).

/// How far a request whose error carries a code got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reached {
    /// The connection was never made: nothing was sent.
    NotConnected,
    /// The name did not resolve: nothing was sent.
    Dns,
    /// The code does not say (a reset or a timeout may come at any time).
    Unknown,
}

/// One code and what it says.
#[derive(Debug, Clone, Copy)]
pub struct ErrorCode {
    /// The code, as Node spells it.
    pub name: &'static str,
    /// The path blinked: a retry may well succeed.
    pub transient: bool,
    /// How far the request got.
    pub reached: Reached,
}

const fn code(name: &'static str, transient: bool, reached: Reached) -> ErrorCode {
    ErrorCode {
        name,
        transient,
        reached,
    }
}

/// The codes, transient ones first, in the order a message is searched
/// for them when no code survived.
pub const ERROR_CODES: &[ErrorCode] = &[
    code("ECONNREFUSED", true, Reached::NotConnected),
    code("ECONNRESET", true, Reached::Unknown),
    code("ETIMEDOUT", true, Reached::Unknown),
    code("EPIPE", true, Reached::Unknown),
    code("EHOSTUNREACH", true, Reached::NotConnected),
    code("ENETUNREACH", true, Reached::NotConnected),
    code("ENETDOWN", true, Reached::NotConnected),
    code("EAI_AGAIN", true, Reached::Dns),
    code("ECONNABORTED", true, Reached::Unknown),
    // undici: the TCP (or TLS) connection was not made in time.
    code("UND_ERR_CONNECT_TIMEOUT", true, Reached::NotConnected),
    code("EADDRNOTAVAIL", false, Reached::NotConnected),
    code("ENOTFOUND", false, Reached::Dns),
    code("EAI_FAIL", false, Reached::Dns),
    code("EAI_NONAME", false, Reached::Dns),
];

/// The transient codes, in search order.
pub fn transient() -> impl Iterator<Item = &'static str> {
    ERROR_CODES.iter().filter(|c| c.transient).map(|c| c.name)
}

/// The codes that say how far a request got (`reached`), in order.
pub fn reaching(reached: Reached) -> impl Iterator<Item = &'static str> {
    ERROR_CODES
        .iter()
        .filter(move |c| c.reached == reached)
        .map(|c| c.name)
}

/// What `name` says, if it is listed.
pub fn lookup(name: &str) -> Option<&'static ErrorCode> {
    ERROR_CODES.iter().find(|c| c.name == name)
}

/// Whether `name` is a listed transient code.
pub fn is_transient(name: &str) -> bool {
    lookup(name).is_some_and(|c| c.transient)
}

/// How far a request with code `name` got, if the code says.
pub fn reached(name: &str) -> Option<Reached> {
    lookup(name)
        .map(|c| c.reached)
        .filter(|r| *r != Reached::Unknown)
}

#[cfg(test)]
mod tests {
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    use super::*;

    #[test]
    fn each_code_is_listed_once() {
        for (i, c) in ERROR_CODES.iter().enumerate() {
            assert!(
                ERROR_CODES[i + 1..].iter().all(|d| d.name != c.name),
                "{} twice",
                c.name
            );
        }
    }

    #[test]
    fn the_connection_codes_say_nothing_was_sent_and_a_reset_does_not() {
        assert_eq!(reached("ECONNREFUSED"), Some(Reached::NotConnected));
        assert_eq!(reached("EAI_AGAIN"), Some(Reached::Dns));
        assert_eq!(reached("ECONNRESET"), None);
        assert_eq!(reached("ETIMEDOUT"), None);
        assert_eq!(reached("EWHATEVER"), None);
        assert!(is_transient("ECONNRESET") && !is_transient("ENOTFOUND"));
    }
}

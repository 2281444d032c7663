//! Who the check is for, and the key that signs its cache record, both
//! derived from the service-account credential without keeping it.
//!
//! - The identity fingerprint names the subject. For a Kubernetes
//!   service-account token (a JWT) it is derived from the token's `iss` and
//!   `sub` claims (`system:serviceaccount:<ns>:<name>`), so it survives the
//!   kubelet's hourly token rotation; for any other credential (an opaque
//!   token, a client key) it is derived from the credential itself.
//! - The MAC key is derived from the runner key ([`crate::runner_key`], a
//!   secret in the runner container's home that job containers cannot
//!   read) and the identity fingerprint ([`Identity::with_runner_secret`]),
//!   so a rotated token (same `iss`/`sub`) keeps the key: a record written
//!   before a rotation still verifies, fresh and in grace.
//! - Without a usable runner key it falls back to a key derived from the
//!   whole credential ([`Identity::from_credential`]): a job container that
//!   does not hold the runner's token still cannot forge a record, but a
//!   rotated token changes the key.
//!
//! The claims are read, not verified: the apiserver verifies the token on
//! every real call; here they only pick a stable name.

use hmac::{Hmac, Mac};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::permission::hex;
use crate::runner_key::RunnerSecret;

/// The identity fingerprint and MAC key for one credential.
#[derive(Clone, PartialEq, Eq)]
pub struct Identity {
    /// Hex SHA-256 naming the subject (never the credential itself).
    pub fingerprint: String,
    /// HMAC-SHA256 key for cache records.
    pub mac_key: [u8; 32],
}

impl std::fmt::Debug for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print key material.
        f.debug_struct("Identity")
            .field("fingerprint", &self.fingerprint)
            .finish_non_exhaustive()
    }
}

impl Identity {
    /// Derives the identity from a credential (token or client key bytes).
    /// Returns `None` for an empty credential: there is nothing to bind a
    /// cache record to, so caching is off.
    pub fn from_credential(credential: &[u8]) -> Option<Identity> {
        let credential = trim_ascii(credential);
        if credential.is_empty() {
            return None;
        }
        let subject = jwt_subject(credential);
        let mut id = Sha256::new();
        match &subject {
            Some((iss, sub)) => {
                id.update(b"k8s-auth-preflight/identity/jwt/v1\n");
                id.update((iss.len() as u32).to_le_bytes());
                id.update(iss.as_bytes());
                id.update(sub.as_bytes());
            }
            None => {
                id.update(b"k8s-auth-preflight/identity/opaque/v1\n");
                id.update(credential);
            }
        }
        let mut key = Sha256::new();
        key.update(b"k8s-auth-preflight/mac-key/v1\n");
        key.update(credential);
        Some(Identity {
            fingerprint: hex(&id.finalize()),
            mac_key: key.finalize().into(),
        })
    }
}

impl Identity {
    /// The identity for `credential`, its MAC key derived from the runner
    /// secret and the identity fingerprint (HMAC-SHA256, domain-separated):
    /// the same for every token of one account, so it survives rotation,
    /// and different per account and per runner.
    pub fn with_runner_secret(credential: &[u8], secret: &RunnerSecret) -> Option<Identity> {
        let mut identity = Identity::from_credential(credential)?;
        // HMAC takes keys of any length; a 32-byte key cannot be refused.
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&secret.0).ok()?;
        mac.update(b"k8s-auth-preflight/record-key/v2\n");
        mac.update(identity.fingerprint.as_bytes());
        identity.mac_key = mac.finalize().into_bytes().into();
        Some(identity)
    }
}

fn trim_ascii(bytes: &[u8]) -> &[u8] {
    let start = bytes
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(start, |i| i + 1);
    &bytes[start..end]
}

/// `(iss, sub)` of a JWT, or `None` if this is not one we can read.
fn jwt_subject(token: &[u8]) -> Option<(String, String)> {
    if token.len() > 16 * 1024 {
        return None;
    }
    let mut parts = token.split(|b| *b == b'.');
    let _header = parts.next()?;
    let payload = parts.next()?;
    let _signature = parts.next()?;
    if parts.next().is_some() {
        return None;
    }
    let json = base64url_decode(payload)?;
    let claims: Claims = crate::json_tree::from_str(std::str::from_utf8(&json).ok()?).ok()?;
    let sub = claims.sub.filter(|s| !s.is_empty())?;
    Some((claims.iss.unwrap_or_default(), sub))
}

/// The two claims the identity is named by; every other claim is skipped
/// (serde_json checks that it is valid JSON, nested at most 128 deep). A
/// claims document that is not one JSON object, or repeats `iss` or
/// `sub`, is no JWT for this purpose: the credential is opaque.
#[derive(Deserialize)]
struct Claims {
    #[serde(default)]
    iss: Option<String>,
    #[serde(default)]
    sub: Option<String>,
}

/// Unpadded base64url (RFC 4648 §5), as JWTs use; padding is tolerated.
fn base64url_decode(input: &[u8]) -> Option<Vec<u8>> {
    let input = match input.iter().position(|b| *b == b'=') {
        Some(i) => &input[..i],
        None => input,
    };
    if input.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(input.len() * 3 / 4);
    let mut acc: u32 = 0;
    let mut bits = 0;
    for &c in input {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'-' => 62,
            b'_' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    /// A JWT-shaped token with the given claims JSON (signature is junk:
    /// nothing here verifies it).
    pub(crate) fn jwt(claims: &str) -> String {
        format!(
            "eyJhbGciOiJSUzI1NiJ9.{}.c2lnbmF0dXJl",
            base64url(claims.as_bytes())
        )
    }

    fn base64url(bytes: &[u8]) -> String {
        const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        let mut s = String::new();
        for chunk in bytes.chunks(3) {
            let n =
                chunk.iter().fold(0u32, |a, b| (a << 8) | u32::from(*b)) << (8 * (3 - chunk.len()));
            for i in 0..=chunk.len() {
                s.push(A[((n >> (18 - 6 * i)) & 63) as usize] as char);
            }
        }
        s
    }

    #[test]
    fn base64url_round_trips() {
        for text in [
            "",
            "a",
            "ab",
            "abc",
            "abcd",
            "{\"sub\":\"x\"}",
            "\u{00ff}\u{00fe}?>",
        ] {
            assert_eq!(
                base64url_decode(base64url(text.as_bytes()).as_bytes()).unwrap(),
                text.as_bytes()
            );
        }
        assert_eq!(base64url_decode(b"a"), None);
        assert_eq!(base64url_decode(b"ab+c"), None);
    }

    #[test]
    fn rotated_tokens_of_one_account_share_an_identity_but_not_a_key() {
        let claims = r#"{"iss":"https://kubernetes.default.svc","sub":"system:serviceaccount:ci:runner","exp":1}"#;
        let rotated = r#"{"iss":"https://kubernetes.default.svc","sub":"system:serviceaccount:ci:runner","exp":2}"#;
        let a = Identity::from_credential(jwt(claims).as_bytes()).unwrap();
        let b = Identity::from_credential(jwt(rotated).as_bytes()).unwrap();
        assert_eq!(a.fingerprint, b.fingerprint);
        assert_ne!(a.mac_key, b.mac_key);
        let other = Identity::from_credential(
            jwt(r#"{"iss":"https://kubernetes.default.svc","sub":"system:serviceaccount:ci:other"}"#).as_bytes(),
        )
        .unwrap();
        assert_ne!(a.fingerprint, other.fingerprint);
    }

    #[test]
    fn with_a_runner_secret_a_rotated_token_keeps_its_key() {
        let secret = RunnerSecret([9; 32]);
        // A rotation: same iss/sub, other claims, another signature.
        let a = jwt(
            r#"{"iss":"https://kubernetes.default.svc","sub":"system:serviceaccount:ci:runner","exp":1,"iat":0}"#,
        );
        let b = jwt(r#"{"iss":"https://kubernetes.default.svc","sub":"system:serviceaccount:ci:runner","exp":4000,"iat":2880,"jti":"x"}"#)
            .replace("c2lnbmF0dXJl", "b3RoZXItc2lnbmF0dXJl");
        assert_ne!(a, b);
        let ka = Identity::with_runner_secret(a.as_bytes(), &secret).unwrap();
        let kb = Identity::with_runner_secret(b.as_bytes(), &secret).unwrap();
        assert_eq!(ka, kb, "same fingerprint and MAC key after a rotation");
        // Another runner's secret, another account, the fallback: other keys.
        let other_runner =
            Identity::with_runner_secret(a.as_bytes(), &RunnerSecret([8; 32])).unwrap();
        assert_eq!(other_runner.fingerprint, ka.fingerprint);
        assert_ne!(other_runner.mac_key, ka.mac_key);
        let other_account = Identity::with_runner_secret(
            jwt(r#"{"iss":"https://kubernetes.default.svc","sub":"system:serviceaccount:ci:other"}"#).as_bytes(),
            &secret,
        )
        .unwrap();
        assert_ne!(other_account.mac_key, ka.mac_key);
        let fallback = Identity::from_credential(a.as_bytes()).unwrap();
        assert_ne!(fallback.mac_key, ka.mac_key);
        assert!(Identity::with_runner_secret(b" \n", &secret).is_none());
    }

    /// Claims that are not one JSON object of the expected shape (`sub`
    /// twice or not a string) leave the token opaque: its own identity;
    /// deep nesting in a claim that is skipped is no panic.
    #[test]
    fn unreadable_claims_make_the_token_opaque() {
        let named = |claims: &str| {
            let token = jwt(claims);
            let id = Identity::from_credential(token.as_bytes()).unwrap();
            let opaque = {
                let mut id = Sha256::new();
                id.update(b"k8s-auth-preflight/identity/opaque/v1\n");
                id.update(token.as_bytes());
                hex(&id.finalize())
            };
            id.fingerprint != opaque
        };
        assert!(named(
            r#"{"iss":"k8s","sub":"system:serviceaccount:ci:runner"}"#
        ));
        assert!(named(
            r#"{"sub":"system:serviceaccount:ci:runner","kubernetes.io":{"pod":{"name":"p"}},"aud":["a"]}"#
        ));
        let deep = format!(
            "{{\"sub\":\"s\",\"x\":{}{}}}",
            "[".repeat(4000),
            "]".repeat(4000)
        );
        // Skipped without recursion past 64 levels (serde_json's skipping
        // is a loop; src/json_tree.rs):
        // no stack to exhaust, whatever the depth a 16 KiB token holds.
        assert!(named(&deep));
        assert!(!named(r#"{"sub":"a","sub":"b"}"#));
        assert!(!named(r#"{"sub":7}"#));
        assert!(!named(r#"{"sub":""}"#));
        assert!(!named(r#"["sub"]"#));
    }

    #[test]
    fn opaque_credentials_are_their_own_identity() {
        let a = Identity::from_credential(b"opaque-token-1").unwrap();
        let b = Identity::from_credential(b"  opaque-token-1\n").unwrap();
        let c = Identity::from_credential(b"opaque-token-2").unwrap();
        assert_eq!(
            a, b,
            "surrounding whitespace (a token file's newline) is ignored"
        );
        assert_ne!(a.fingerprint, c.fingerprint);
        assert!(Identity::from_credential(b"  \n").is_none());
    }

    #[test]
    fn nothing_derived_contains_the_credential() {
        let token = jwt(r#"{"sub":"system:serviceaccount:ci:runner"}"#);
        let id = Identity::from_credential(token.as_bytes()).unwrap();
        assert!(!id.fingerprint.contains(&token));
        assert!(!format!("{id:?}").contains(&token));
        assert!(!format!("{id:?}").contains("mac_key: ["));
    }
}

//! The cache record: one small JSON file per job that vouches for an
//! `allowed` verdict, and the decision whether a record found on disk may be
//! used.
//!
//! A record is bound to what it vouches for (namespace, identity fingerprint,
//! permission-set fingerprint) and carries an HMAC-SHA256 over those fields
//! and its write time, keyed from the runner key and the identity (or, as a
//! fallback, from the service-account credential; see [`crate::identity`]
//! and [`crate::runner_key`]). The credential itself never appears in it.
//!
//! The record also names its MAC key by a public key id
//! ([`crate::runner_key::key_id`]): a record whose key id is not ours was
//! written with another key (another runner, a lost runner key, the
//! token-derived fallback) and is a plain miss with a warning; a record
//! with our key id and a MAC that does not verify was edited or forged.
//!
//! [`judge`] never panics and never trusts: anything it cannot verify is
//! [`CacheState::Unusable`] with the reason, and the check asks the API.

use std::time::Duration;

use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::identity::Identity;
use crate::permission::hex;
use crate::runner_key::key_id;

/// The record format written today (2: with `keyId`, signed with the
/// runner key).
pub const RECORD_VERSION: u32 = 2;
/// Records larger than this are not read (a hostile or broken file).
pub const MAX_RECORD_BYTES: usize = 64 * 1024;

type HmacSha256 = Hmac<Sha256>;

/// What a record must match to be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheKey {
    /// The namespace checked.
    pub namespace: String,
    /// The subject (identity fingerprint) and MAC key.
    pub identity: Identity,
    /// The permission-set fingerprint.
    pub permissions: String,
}

/// How long records stay good.
///
/// # Default
/// TTL 1 h, grace 24 h, clock skew 2 min.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CachePolicy {
    /// Age below which a record answers the check with no API call.
    pub ttl: Duration,
    /// Age below which a record may still answer when the API is unreachable.
    pub grace: Duration,
    /// How far in the future a record's time may lie (clock differences
    /// between containers) before it is refused.
    pub max_skew: Duration,
}

impl Default for CachePolicy {
    fn default() -> Self {
        CachePolicy::new()
    }
}

impl CachePolicy {
    /// The defaults (see `# Default`).
    pub const fn new() -> Self {
        CachePolicy {
            ttl: Duration::from_secs(3600),
            grace: Duration::from_secs(24 * 3600),
            max_skew: Duration::from_secs(120),
        }
    }
}

/// The record as stored: one JSON object with these fields, camelCase,
/// written by serde_json in this order. The texts are borrowed (from the
/// parsed file, or from the key when a record is written).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
struct Record<'a> {
    version: u32,
    verdict: &'a str,
    namespace: &'a str,
    identity: &'a str,
    permissions: &'a str,
    written_at_ms: u64,
    key_id: &'a str,
    mac: &'a str,
}

/// A record as read from a file (serde_json's parser, then
/// [`crate::json_tree`]): every field of [`Record`] and nothing else. An
/// unknown field or a repeated one makes the file unparsable
/// (`deny_unknown_fields`; a derived struct refuses a repeated field); so does a nested value, since every field is a
/// string or a whole number. `keyId` may be missing (format version 1),
/// for the version check to name it.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct StoredRecord {
    version: u64,
    verdict: String,
    namespace: String,
    identity: String,
    permissions: String,
    written_at_ms: u64,
    #[serde(default)]
    key_id: String,
    mac: String,
}

impl StoredRecord {
    fn record(&self) -> Record<'_> {
        Record {
            // A version beyond u32 is just another version.
            version: u32::try_from(self.version).unwrap_or(u32::MAX),
            verdict: &self.verdict,
            namespace: &self.namespace,
            identity: &self.identity,
            permissions: &self.permissions,
            written_at_ms: self.written_at_ms,
            key_id: &self.key_id,
            mac: &self.mac,
        }
    }
}

/// What a record found on disk is good for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CacheState {
    /// Younger than the TTL: answer `allowed` with no API call.
    Fresh {
        /// The record's age.
        age: Duration,
    },
    /// Past the TTL, within grace: answer `allowed` only if the API cannot
    /// be reached.
    Grace {
        /// The record's age.
        age: Duration,
    },
    /// Not usable.
    Unusable(Unusable),
}

/// Why a record is not usable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unusable {
    /// No record (or caching is off).
    Missing,
    /// Larger than [`MAX_RECORD_BYTES`].
    TooLarge,
    /// Not a record at all (not JSON, missing fields, wrong types).
    Unparsable,
    /// Written by another format version.
    WrongVersion(u32),
    /// The MAC does not verify: edited or forged.
    BadMac,
    /// Signed with another MAC key (its key id is not ours): another
    /// runner's, a runner key since lost or replaced, or the token-derived
    /// fallback key.
    OtherKey,
    /// A valid record for another namespace.
    OtherNamespace,
    /// A valid record for another service account.
    OtherIdentity,
    /// A valid record for another permission set.
    OtherPermissions,
    /// Only `allowed` verdicts are ever cached.
    NotAllowed,
    /// Dated further in the future than the allowed skew.
    FromTheFuture(Duration),
    /// Older than the grace limit.
    Expired(Duration),
}

impl Unusable {
    /// True when the file is suspicious enough that the user should be told
    /// (a warning), rather than simply absent or old.
    pub fn deserves_warning(&self) -> bool {
        !matches!(self, Unusable::Missing | Unusable::Expired(_))
    }

    /// A short reason for logs.
    pub fn reason(&self) -> String {
        match self {
            Unusable::Missing => "no cached verdict".into(),
            Unusable::TooLarge => format!("file larger than {} KiB", MAX_RECORD_BYTES / 1024),
            Unusable::Unparsable => "file is not a verdict record".into(),
            Unusable::WrongVersion(v) => format!("record version {v}, expected {RECORD_VERSION}"),
            Unusable::BadMac => "record signature does not verify (edited or forged)".into(),
            Unusable::OtherKey => "record was written with another key (by another runner, or with a runner key since lost or replaced)".into(),
            Unusable::OtherNamespace => "record is for another namespace".into(),
            Unusable::OtherIdentity => "record is for another service account".into(),
            Unusable::OtherPermissions => "record is for another permission set".into(),
            Unusable::NotAllowed => "record does not hold an allowed verdict".into(),
            Unusable::FromTheFuture(d) => {
                format!("record is dated {} s in the future", d.as_secs())
            }
            Unusable::Expired(d) => {
                format!("record is {} s old, past the grace limit", d.as_secs())
            }
        }
    }
}

/// Decides what a record is good for. `bytes` is the file's content (`None`
/// when there is no file); `now_ms` is Unix epoch milliseconds.
pub fn judge(
    bytes: Option<&[u8]>,
    key: &CacheKey,
    policy: &CachePolicy,
    now_ms: u64,
) -> CacheState {
    match verify(bytes, key, policy, now_ms) {
        Ok(state) => state,
        Err(why) => CacheState::Unusable(why),
    }
}

fn verify(
    bytes: Option<&[u8]>,
    key: &CacheKey,
    policy: &CachePolicy,
    now_ms: u64,
) -> Result<CacheState, Unusable> {
    let bytes = bytes.ok_or(Unusable::Missing)?;
    if bytes.len() > MAX_RECORD_BYTES {
        return Err(Unusable::TooLarge);
    }
    // The size is checked above, before any parsing.
    // From text, as the review answers are read: one copy of serde_json's
    // reader in the `.wasm` (a byte reader would be a second).
    let text = std::str::from_utf8(bytes).map_err(|_| Unusable::Unparsable)?;
    let stored: StoredRecord =
        crate::json_tree::from_str(text).map_err(|_| Unusable::Unparsable)?;
    let record = stored.record();
    if record.version != RECORD_VERSION {
        return Err(Unusable::WrongVersion(record.version));
    }
    if record.key_id.is_empty() {
        return Err(Unusable::Unparsable);
    }
    if record.key_id != key_id(&key.identity.mac_key) {
        return Err(Unusable::OtherKey);
    }
    let mac = unhex(record.mac).ok_or(Unusable::BadMac)?;
    signer(&key.identity.mac_key, &record)
        .verify_slice(&mac)
        .map_err(|_| Unusable::BadMac)?;
    if record.namespace != key.namespace {
        return Err(Unusable::OtherNamespace);
    }
    if record.identity != key.identity.fingerprint {
        return Err(Unusable::OtherIdentity);
    }
    if record.permissions != key.permissions {
        return Err(Unusable::OtherPermissions);
    }
    if record.verdict != "allowed" {
        return Err(Unusable::NotAllowed);
    }
    if record.written_at_ms > now_ms {
        let ahead = Duration::from_millis(record.written_at_ms - now_ms);
        if ahead > policy.max_skew {
            return Err(Unusable::FromTheFuture(ahead));
        }
    }
    let age = Duration::from_millis(now_ms.saturating_sub(record.written_at_ms));
    if age < policy.ttl {
        Ok(CacheState::Fresh { age })
    } else if age < policy.grace {
        Ok(CacheState::Grace { age })
    } else {
        Err(Unusable::Expired(age))
    }
}

/// The record to write for an `allowed` verdict reached at `now_ms`.
pub fn record_for(key: &CacheKey, now_ms: u64) -> String {
    let key_id = key_id(&key.identity.mac_key);
    let mut record = Record {
        version: RECORD_VERSION,
        verdict: "allowed",
        namespace: &key.namespace,
        identity: &key.identity.fingerprint,
        permissions: &key.permissions,
        written_at_ms: now_ms,
        key_id: &key_id,
        mac: "",
    };
    let mac = hex(&signer(&key.identity.mac_key, &record)
        .finalize()
        .into_bytes());
    record.mac = &mac;
    // A struct of strings and whole numbers always serializes.
    serde_json::to_string(&record).unwrap_or_default()
}

/// The file name for this key: the same job, namespace, subject and
/// permission set always map to the same name; nothing secret is in it.
pub fn file_name(key: &CacheKey) -> String {
    let mut hash = Sha256::new();
    for part in [&key.namespace, &key.identity.fingerprint, &key.permissions] {
        hash.update((part.len() as u32).to_le_bytes());
        hash.update(part.as_bytes());
    }
    let mut digest = hex(&hash.finalize());
    digest.truncate(24);
    format!("k8s-auth-preflight-{digest}.json")
}

/// The MAC over every field but the MAC, each length-prefixed.
fn signer(mac_key: &[u8; 32], record: &Record<'_>) -> HmacSha256 {
    // HMAC accepts keys of any length; 32 bytes cannot fail.
    let mut mac = match HmacSha256::new_from_slice(mac_key) {
        Ok(mac) => mac,
        Err(_) => unreachable_key(),
    };
    mac.update(b"k8s-auth-preflight/record\n");
    mac.update(&record.version.to_le_bytes());
    for field in [
        record.verdict,
        record.namespace,
        record.identity,
        record.permissions,
        record.key_id,
    ] {
        mac.update(&(field.len() as u64).to_le_bytes());
        mac.update(field.as_bytes());
    }
    mac.update(&record.written_at_ms.to_le_bytes());
    mac
}

#[cold]
fn unreachable_key() -> ! {
    // HMAC's `new_from_slice` only fails for fixed-size-key MACs; HMAC has none.
    panic!("HMAC rejected a 32-byte key")
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 || s.len() > 128 {
        return None;
    }
    let digit = |b: u8| match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        _ => None,
    };
    s.as_bytes()
        .chunks(2)
        .map(|pair| Some(digit(pair[0])? << 4 | digit(pair[1])?))
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::identity::tests::jwt;
    use crate::runner_key::RunnerSecret;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    pub(crate) const NOW: u64 = 1_792_548_926_000;

    /// Known answers (FIPS 180-2's "abc", RFC 4231 case 2), so that the
    /// SHA-256 the `.wasm` is built with (sha2's compact variant, see
    /// Cargo.toml) is checked under `wasm-pack test` too.
    #[test]
    fn sha256_and_hmac_give_the_published_answers() {
        assert_eq!(
            hex(&Sha256::digest(b"abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let mut mac = HmacSha256::new_from_slice(b"Jefe").unwrap();
        mac.update(b"what do ya want for nothing?");
        assert_eq!(
            hex(&mac.finalize().into_bytes()),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    pub(crate) fn key_for(token: &str, namespace: &str, permissions: &str) -> CacheKey {
        CacheKey {
            namespace: namespace.into(),
            identity: Identity::from_credential(token.as_bytes()).unwrap(),
            permissions: permissions.into(),
        }
    }

    fn token() -> String {
        jwt(r#"{"iss":"k8s","sub":"system:serviceaccount:ci:runner"}"#)
    }

    fn key() -> CacheKey {
        key_for(&token(), "ci", "perms-a")
    }

    fn judge_at(bytes: &str, key: &CacheKey, now: u64) -> CacheState {
        judge(Some(bytes.as_bytes()), key, &CachePolicy::default(), now)
    }

    #[test]
    fn default_policy_is_documented() {
        let p = CachePolicy::default();
        assert_eq!(p.ttl, Duration::from_secs(3600));
        assert_eq!(p.grace, Duration::from_secs(86_400));
        assert_eq!(p.max_skew, Duration::from_secs(120));
    }

    #[test]
    fn fresh_then_grace_then_expired() {
        let k = key();
        let rec = record_for(&k, NOW);
        let min = 60_000;
        assert_eq!(
            judge_at(&rec, &k, NOW),
            CacheState::Fresh {
                age: Duration::ZERO
            }
        );
        assert!(matches!(
            judge_at(&rec, &k, NOW + 59 * min),
            CacheState::Fresh { .. }
        ));
        assert!(matches!(
            judge_at(&rec, &k, NOW + 60 * min),
            CacheState::Grace { .. }
        ));
        assert!(matches!(
            judge_at(&rec, &k, NOW + 24 * 60 * min - 1),
            CacheState::Grace { .. }
        ));
        assert!(matches!(
            judge_at(&rec, &k, NOW + 24 * 60 * min),
            CacheState::Unusable(Unusable::Expired(_))
        ));
    }

    #[test]
    fn record_holds_no_token() {
        let rec = record_for(&key(), NOW);
        assert!(!rec.contains(&token()));
        assert!(!rec.contains("system:serviceaccount"));
    }

    #[test]
    fn bound_to_namespace_identity_and_permissions() {
        let k = key();
        let rec = record_for(&k, NOW);
        let unusable = |other: &CacheKey| match judge_at(&rec, other, NOW) {
            CacheState::Unusable(why) => why,
            s => panic!("used a record for another key: {s:?}"),
        };
        assert_eq!(
            unusable(&key_for(&token(), "prod", "perms-a")),
            Unusable::OtherNamespace
        );
        assert_eq!(
            unusable(&key_for(&token(), "ci", "perms-b")),
            Unusable::OtherPermissions
        );
        // Another account's token: another MAC key, so the key id differs
        // first (it was "edited or forged" before records had key ids).
        let other = jwt(r#"{"iss":"k8s","sub":"system:serviceaccount:ci:other"}"#);
        assert_eq!(
            unusable(&key_for(&other, "ci", "perms-a")),
            Unusable::OtherKey
        );
    }

    #[test]
    fn other_identity_with_the_same_key_material_is_refused() {
        // A record whose identity field names someone else but is signed with
        // our key (not forgeable without the token, but the binding must hold).
        let k = key();
        let mut other = k.clone();
        other.identity.fingerprint = "someone-else".into();
        let rec = record_for(&other, NOW);
        assert_eq!(
            judge_at(&rec, &k, NOW),
            CacheState::Unusable(Unusable::OtherIdentity)
        );
    }

    #[test]
    fn edited_or_forged_records_fail_the_mac() {
        let k = key();
        let rec = record_for(&k, NOW);
        let edited = rec.replace(
            &format!("\"writtenAtMs\":{NOW}"),
            &format!("\"writtenAtMs\":{}", NOW + 1),
        );
        assert_ne!(edited, rec);
        assert_eq!(
            judge_at(&edited, &k, NOW + 10),
            CacheState::Unusable(Unusable::BadMac)
        );
        // A forger without the key signs with some other key, and copies
        // our key id from a record it has seen.
        let guess = key_for("job-container-guess", "ci", "perms-a");
        let forged = record_for(&guess, NOW).replace(
            &Identity::from_credential(b"job-container-guess")
                .unwrap()
                .fingerprint,
            &k.identity.fingerprint,
        );
        let with_our_key_id = forged.replace(
            &key_id(&guess.identity.mac_key),
            &key_id(&k.identity.mac_key),
        );
        assert_eq!(
            judge_at(&with_our_key_id, &k, NOW),
            CacheState::Unusable(Unusable::BadMac)
        );
        // With its own key id it is a record of another key: refused too.
        assert_eq!(
            judge_at(&forged, &k, NOW),
            CacheState::Unusable(Unusable::OtherKey)
        );
        let garbage_mac = rec.replace("\"mac\":\"", "\"mac\":\"zz");
        assert_eq!(
            judge_at(&garbage_mac, &k, NOW),
            CacheState::Unusable(Unusable::BadMac)
        );
    }

    fn keyed(token: &str, secret: u8) -> CacheKey {
        CacheKey {
            namespace: "ci".into(),
            identity: Identity::with_runner_secret(token.as_bytes(), &RunnerSecret([secret; 32]))
                .unwrap(),
            permissions: "perms-a".into(),
        }
    }

    #[test]
    fn a_record_written_before_a_token_rotation_verifies_after_it() {
        let before = jwt(r#"{"iss":"k8s","sub":"system:serviceaccount:ci:runner","exp":100}"#);
        let after =
            jwt(r#"{"iss":"k8s","sub":"system:serviceaccount:ci:runner","exp":200,"jti":"b"}"#);
        let rec = record_for(&keyed(&before, 1), NOW);
        let min = 60_000;
        assert!(matches!(
            judge_at(&rec, &keyed(&after, 1), NOW + 48 * min),
            CacheState::Fresh { .. }
        ));
        assert!(matches!(
            judge_at(&rec, &keyed(&after, 1), NOW + 5 * 60 * min),
            CacheState::Grace { .. }
        ));
        // Without the runner key (token-derived fallback) it did not.
        let old = record_for(&key_for(&before, "ci", "perms-a"), NOW);
        assert_eq!(
            judge_at(&old, &key_for(&after, "ci", "perms-a"), NOW + 48 * min),
            CacheState::Unusable(Unusable::OtherKey)
        );
    }

    #[test]
    fn another_runner_key_is_named_as_such_not_as_a_forgery() {
        let rec = record_for(&keyed(&token(), 1), NOW);
        let why = match judge_at(&rec, &keyed(&token(), 2), NOW) {
            CacheState::Unusable(why) => why,
            s => panic!("used another runner's record: {s:?}"),
        };
        assert_eq!(why, Unusable::OtherKey);
        assert!(why.reason().contains("written with another key"));
        assert!(!why.reason().contains("forged"));
        assert!(why.deserves_warning());
        // Edited under the same key: forged.
        let edited = rec.replace("\"verdict\":\"allowed\"", "\"verdict\":\"allowed\" ");
        let edited = edited.replace(
            &format!("\"writtenAtMs\":{NOW}"),
            &format!("\"writtenAtMs\":{}", NOW + 5),
        );
        assert_eq!(
            judge_at(&edited, &keyed(&token(), 1), NOW + 10),
            CacheState::Unusable(Unusable::BadMac)
        );
    }

    #[test]
    fn future_dates_beyond_skew_are_refused() {
        let k = key();
        let rec = record_for(&k, NOW + 60_000);
        assert!(
            matches!(judge_at(&rec, &k, NOW), CacheState::Fresh { .. }),
            "within skew"
        );
        let rec = record_for(&k, NOW + 3_600_000);
        assert_eq!(
            judge_at(&rec, &k, NOW),
            CacheState::Unusable(Unusable::FromTheFuture(Duration::from_secs(3600)))
        );
    }

    #[test]
    fn broken_files_are_misses() {
        let k = key();
        let rec = record_for(&k, NOW);
        let p = CachePolicy::default();
        assert_eq!(
            judge(None, &k, &p, NOW),
            CacheState::Unusable(Unusable::Missing)
        );
        for bad in [
            "",
            "{",
            "null",
            "[]",
            "{\"version\":1}",
            &rec[..rec.len() / 2],
            "\u{feff}{}",
        ] {
            assert_eq!(
                judge_at(bad, &k, NOW),
                CacheState::Unusable(Unusable::Unparsable),
                "{bad:?}"
            );
        }
        let v3 = rec.replace("\"version\":2", "\"version\":3");
        assert_eq!(
            judge_at(&v3, &k, NOW),
            CacheState::Unusable(Unusable::WrongVersion(3))
        );
        // A record of the first format (no key id): named, not a crash.
        let v1 = rec.replace("\"version\":2", "\"version\":1").replace(
            &format!(",\"keyId\":\"{}\"", key_id(&k.identity.mac_key)),
            "",
        );
        assert_eq!(
            judge_at(&v1, &k, NOW),
            CacheState::Unusable(Unusable::WrongVersion(1))
        );
        let no_key_id = rec.replace("\"keyId\"", "\"keyID\"");
        assert_eq!(
            judge_at(&no_key_id, &k, NOW),
            CacheState::Unusable(Unusable::Unparsable)
        );
        let big = vec![b' '; MAX_RECORD_BYTES + 1];
        assert_eq!(
            judge(Some(&big), &k, &p, NOW),
            CacheState::Unusable(Unusable::TooLarge)
        );
        let binary: Vec<u8> = (0..=255u8).collect();
        assert_eq!(
            judge(Some(&binary), &k, &p, NOW),
            CacheState::Unusable(Unusable::Unparsable)
        );
    }

    /// The bounds of the parser (serde_json): a field we do not write, a
    /// field written twice, a nested value, or deep nesting make the file
    /// unparsable (a miss with a warning), never a panic.
    #[test]
    fn unknown_repeated_or_nested_fields_are_refused() {
        let k = key();
        let rec = record_for(&k, NOW);
        assert!(matches!(judge_at(&rec, &k, NOW), CacheState::Fresh { .. }));
        let unparsable = |bad: &str| {
            assert_eq!(
                judge_at(bad, &k, NOW),
                CacheState::Unusable(Unusable::Unparsable),
                "{bad}"
            );
        };
        // An unknown field, even one that changes nothing the MAC covers.
        unparsable(&rec.replacen('{', "{\"note\":\"x\",", 1));
        // A known field twice (the first or the last copy would verify).
        let verdict = "\"verdict\":\"allowed\",";
        unparsable(&rec.replacen(verdict, &format!("{verdict}{verdict}"), 1));
        unparsable(&rec.replacen('{', "{\"version\":2,", 1));
        // A nested value where a string or number belongs.
        unparsable(&rec.replace("\"verdict\":\"allowed\"", "\"verdict\":[\"allowed\"]"));
        unparsable(&rec.replace("\"version\":2", "\"version\":{\"v\":2}"));
        unparsable(&rec.replace("\"version\":2", "\"version\":2.0"));
        unparsable(&rec.replace("\"version\":2", "\"version\":-2"));
        // Deep nesting, within the size limit: refused at once.
        let deep = format!(
            "{{\"version\":{}{}}}",
            "[".repeat(MAX_RECORD_BYTES / 2 - 20),
            "]".repeat(MAX_RECORD_BYTES / 2 - 20)
        );
        assert!(deep.len() <= MAX_RECORD_BYTES);
        unparsable(&deep);
        // Whitespace and escapes are still JSON: the same record.
        let spaced = rec
            .replace(",\"", ",\n  \"")
            .replace("\"ci\"", "\"\\u0063i\"");
        assert_ne!(spaced, rec);
        assert!(matches!(
            judge_at(&spaced, &k, NOW),
            CacheState::Fresh { .. }
        ));
    }

    /// The record is written by serde_json in the documented shape.
    #[test]
    fn records_are_written_in_the_documented_shape() {
        let k = key();
        let rec = record_for(&k, NOW);
        let prefix = format!(
            "{{\"version\":2,\"verdict\":\"allowed\",\"namespace\":\"ci\",\"identity\":\"{}\",\"permissions\":\"perms-a\",\"writtenAtMs\":{NOW},\"keyId\":\"{}\",\"mac\":\"",
            k.identity.fingerprint,
            key_id(&k.identity.mac_key)
        );
        assert!(rec.starts_with(&prefix), "{rec}");
        assert!(rec.ends_with("\"}"), "{rec}");
    }

    #[test]
    fn file_names_are_stable_and_distinct() {
        assert_eq!(file_name(&key()), file_name(&key()));
        assert_ne!(
            file_name(&key()),
            file_name(&key_for(&token(), "prod", "perms-a"))
        );
        assert!(file_name(&key()).starts_with("k8s-auth-preflight-"));
        assert!(!file_name(&key()).contains(&token()));
    }
}

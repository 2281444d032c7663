//! Issue 10, bug 4: a token rotation must not look like a forgery. The
//! record is signed with the runner key (a per-runner secret, keyed per
//! identity), so a record written under one projected token verifies under
//! the next, fresh and in grace; another runner's key is "written with
//! another key", an edit is "edited or forged", and without a usable key
//! file the token-derived key signs, with a warning naming the file.

mod common;

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

use common::*;
use k8s_auth_preflight::runner_key::{
    file_text, FileKind, KeyFileFacts, KeyFileReport, RunnerSecret,
};
use k8s_auth_preflight::{Preflight, Source, Verdict};

const UID: u32 = 1001;
const MIN: u64 = 60_000;
const HOME: &str = "/home/runner";

/// A JWT-shaped projected token (nothing here verifies its signature).
fn token(claims: &str, signature: &str) -> String {
    fn b64(bytes: &[u8]) -> String {
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
    format!(
        "{}.{}.{}",
        b64(br#"{"alg":"RS256"}"#),
        b64(claims.as_bytes()),
        b64(signature.as_bytes())
    )
}

fn token_a() -> String {
    token(
        r#"{"iss":"https://kubernetes.default.svc","sub":"system:serviceaccount:ci:runner","iat":0,"exp":3600}"#,
        "signature-a",
    )
}

/// Token A rotated: same iss/sub, other claims, another signature.
fn token_b() -> String {
    token(
        r#"{"iss":"https://kubernetes.default.svc","sub":"system:serviceaccount:ci:runner","iat":2880,"exp":6480,"jti":"b"}"#,
        "signature-b",
    )
}

fn key_file(secret: u8) -> KeyFileReport {
    KeyFileReport {
        facts: KeyFileFacts::Found {
            kind: FileKind::File,
            mode: 0o600,
            owner: UID,
            bytes: file_text(&RunnerSecret([secret; 32])).into_bytes(),
        },
        process_uid: Some(UID),
        create_error: None,
    }
}

fn check(
    credential: &str,
    key: Option<&KeyFileReport>,
    cached: Option<&str>,
    now: u64,
    ttl_ms: &str,
) -> Preflight {
    Preflight::from_env_keyed(
        [
            ("HOME", HOME),
            ("ACTIONS_RUNNER_PREFLIGHT_RULES_REVIEW", "off"),
            ("ACTIONS_RUNNER_PREFLIGHT_SEED", "7"),
            ("ACTIONS_RUNNER_PREFLIGHT_CACHE_TTL_MS", ttl_ms),
        ],
        &hooks_permissions(),
        "ci",
        Some(credential.as_bytes()),
        key,
        cached.map(str::as_bytes),
        now,
    )
    .unwrap()
}

/// A healthy first step under `credential`: the record it writes.
fn first_record(credential: &str, key: Option<&KeyFileReport>) -> String {
    let mut c = check(credential, key, None, T0, "3600000");
    let run = drive(&mut c, T0, |_, _| healthy(true));
    assert_eq!(run.outcome.verdict, Verdict::Allowed);
    run.outcome.record.expect("a record to write")
}

#[test]
fn a_record_written_before_a_rotation_answers_fresh_after_it() {
    let record = first_record(&token_a(), Some(&key_file(1)));
    let mut c = check(
        &token_b(),
        Some(&key_file(1)),
        Some(&record),
        T0 + 48 * MIN,
        "3600000",
    );
    let run = drive(&mut c, T0 + 48 * MIN, |_, _| healthy(true));
    assert_eq!(
        run.outcome.source,
        Some(Source::Cache),
        "{:?}",
        run.outcome.warnings
    );
    assert!(run.sent.is_empty());
    assert!(
        run.outcome.warnings.is_empty(),
        "{:?}",
        run.outcome.warnings
    );
}

#[test]
fn a_record_written_before_a_rotation_is_a_grace_record_while_the_api_is_down() {
    let record = first_record(&token_a(), Some(&key_file(1)));
    let later = T0 + 3 * 60 * MIN;
    let mut c = check(
        &token_b(),
        Some(&key_file(1)),
        Some(&record),
        later,
        "3600000",
    );
    let run = drive(&mut c, later, |_, _| fail(refused()));
    assert_eq!(run.outcome.verdict, Verdict::Allowed);
    assert_eq!(run.outcome.source, Some(Source::GraceCache));
    assert!(
        !run.outcome.warnings.iter().any(|w| w.contains("forged")),
        "{:?}",
        run.outcome.warnings
    );
}

#[test]
fn another_runners_key_is_another_key_not_a_forgery_and_the_api_is_asked() {
    let record = first_record(&token_a(), Some(&key_file(1)));
    let mut c = check(
        &token_a(),
        Some(&key_file(2)),
        Some(&record),
        T0 + MIN,
        "3600000",
    );
    let run = drive(&mut c, T0 + MIN, |_, _| healthy(true));
    assert_eq!(run.outcome.source, Some(Source::Reviews));
    assert_eq!(run.sent.len(), 13);
    let warnings = run.outcome.warnings.join("\n");
    assert!(
        warnings.contains("record was written with another key"),
        "{warnings}"
    );
    assert!(!warnings.contains("forged"), "{warnings}");
}

#[test]
fn a_record_edited_under_the_same_key_is_forged() {
    let record = first_record(&token_a(), Some(&key_file(1)));
    // Moved 1000 s later, to look younger.
    let edited = record.replace("\"writtenAtMs\":1792548926", "\"writtenAtMs\":1792549926");
    assert_ne!(edited, record);
    let later = T0 + 3 * 60 * MIN;
    let mut c = check(
        &token_b(),
        Some(&key_file(1)),
        Some(&edited),
        later,
        "3600000",
    );
    let run = drive(&mut c, later, |_, _| fail(refused()));
    assert_eq!(
        run.outcome.verdict,
        Verdict::Inconclusive,
        "an edited record is no grace record"
    );
    assert!(
        run.outcome
            .warnings
            .iter()
            .any(|w| w.contains("edited or forged")),
        "{:?}",
        run.outcome.warnings
    );
}

#[test]
fn without_a_usable_key_file_the_token_derived_key_signs_with_a_warning() {
    let missing = KeyFileReport {
        facts: KeyFileFacts::Missing,
        process_uid: Some(UID),
        create_error: Some("EROFS".into()),
    };
    let mut c = check(&token_a(), Some(&missing), None, T0, "3600000");
    let run = drive(&mut c, T0, |_, _| healthy(true));
    assert_eq!(run.outcome.verdict, Verdict::Allowed);
    let warning = run
        .warnings
        .iter()
        .chain(&run.outcome.warnings)
        .find(|w| w.contains("cannot be used"))
        .unwrap_or_else(|| panic!("{:?} {:?}", run.warnings, run.outcome.warnings))
        .clone();
    assert!(
        warning.contains("\"/home/runner/.k8s-auth-preflight/runner-key\""),
        "{warning}"
    );
    assert!(warning.contains("cannot be created (EROFS)"), "{warning}");
    let record = run.outcome.record.unwrap();
    // The fallback record answers the same token (and a check made without
    // any key report, which signs with the token-derived key too) ...
    let mut same = check(
        &token_a(),
        Some(&missing),
        Some(&record),
        T0 + MIN,
        "3600000",
    );
    assert_eq!(
        drive(&mut same, T0 + MIN, |_, _| healthy(true))
            .outcome
            .source,
        Some(Source::Cache)
    );
    let mut unkeyed = check(&token_a(), None, Some(&record), T0 + MIN, "3600000");
    assert_eq!(
        drive(&mut unkeyed, T0 + MIN, |_, _| healthy(true))
            .outcome
            .source,
        Some(Source::Cache)
    );
    // ... but not a rotated one: that is the limit of the fallback.
    let mut rotated = check(
        &token_b(),
        Some(&missing),
        Some(&record),
        T0 + MIN,
        "3600000",
    );
    let run = drive(&mut rotated, T0 + MIN, |_, _| healthy(true));
    assert_eq!(run.outcome.source, Some(Source::Reviews));
    // A usable key file that appears later: the fallback record is "another key".
    assert!(run.outcome.warnings.iter().all(|w| !w.contains("forged")));
}

#[test]
fn an_unsafe_key_file_is_not_used() {
    let mut open = key_file(1);
    if let KeyFileFacts::Found { mode, .. } = &mut open.facts {
        *mode = 0o644;
    }
    // A record signed with the real key does not verify with the fallback.
    let record = first_record(&token_a(), Some(&key_file(1)));
    let mut c = check(&token_a(), Some(&open), Some(&record), T0 + MIN, "3600000");
    let run = drive(&mut c, T0 + MIN, |_, _| healthy(true));
    assert_eq!(run.outcome.source, Some(Source::Reviews));
    let all: Vec<&String> = run.warnings.iter().chain(&run.outcome.warnings).collect();
    assert!(
        all.iter().any(|w| w.contains("its mode is 0644")),
        "{all:?}"
    );
}

#[test]
fn caching_off_means_no_key_warning() {
    let missing = KeyFileReport {
        facts: KeyFileFacts::Missing,
        process_uid: Some(UID),
        create_error: Some("EACCES".into()),
    };
    let mut c = Preflight::from_env_keyed(
        [
            ("HOME", HOME),
            ("ACTIONS_RUNNER_PREFLIGHT_CACHE", "off"),
            ("ACTIONS_RUNNER_PREFLIGHT_RULES_REVIEW", "off"),
        ],
        &hooks_permissions(),
        "ci",
        Some(token_a().as_bytes()),
        Some(&missing),
        None,
        T0,
    )
    .unwrap();
    let run = drive(&mut c, T0, |_, _| healthy(true));
    assert!(run.outcome.record.is_none());
    assert!(
        run.warnings
            .iter()
            .chain(&run.outcome.warnings)
            .all(|w| !w.contains("runner key")),
        "{:?}",
        run.warnings
    );
}

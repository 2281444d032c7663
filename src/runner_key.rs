//! The runner key: a per-runner secret that keys the cache record's MAC, so
//! that a record survives the kubelet's token rotation and still cannot be
//! forged by a job container.
//!
//! The record lives in `$RUNNER_TEMP`, on the work volume that job pods
//! mount; the key file lives in the runner container's home
//! (`$HOME/.k8s-auth-preflight/runner-key`, folder 0700, file 0600), which
//! the job pod does not mount. The threat model is in `docs/RELIABILITY.md`.
//!
//! The core decides where the file is ([`location`]), what a new one holds
//! ([`file_text`]), and whether the file found may be trusted ([`judge`]):
//! a regular file, not a symlink, owned by this process's user, with no
//! group or other permission bits, of exactly [`KEY_FILE_LEN`] bytes in the
//! versioned format. The shim only reads it (`lstat`, then a bounded read
//! through `O_NOFOLLOW`) and creates it (a temp file hard-linked into place,
//! so it is never seen half-written and of two racing processes the loser
//! reads the winner's), and reports what it saw as [`KeyFileReport`].
//!
//! When there is no usable key file, the record is signed with the old key
//! derived from the service-account token ([`crate::identity`]), with a
//! warning that names the file and the reason: still unforgeable by a job
//! container that does not hold the runner's token, but not rotation-proof.

use sha2::{Digest, Sha256};

/// The setting that names the key file (an absolute path).
pub const KEY_FILE_VARIABLE: &str = "ACTIONS_RUNNER_PREFLIGHT_KEY_FILE";
/// The folder made in `$HOME` for the key file.
pub const KEY_FOLDER: &str = ".k8s-auth-preflight";
/// The key file's name in that folder.
pub const KEY_FILE_NAME: &str = "runner-key";
/// The first line's prefix: format name and version, then 64 hex digits.
const HEADER: &str = "k8s-auth-preflight runner-key v1 ";
/// The exact size of a key file: the header, 64 hex digits, a newline.
pub const KEY_FILE_LEN: usize = HEADER.len() + 64 + 1;

/// 32 secret bytes. Never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct RunnerSecret(pub [u8; 32]);

impl std::fmt::Debug for RunnerSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RunnerSecret(..)")
    }
}

/// Where the key file is, and the folder to make for it (only for the
/// default location; a file named by the setting must have its folder).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyLocation {
    /// The key file's absolute path.
    pub file: String,
    /// The folder to create (mode 0700) before the file, if any.
    pub folder: Option<String>,
}

/// What kind of thing `lstat` found at the path (`'file'`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(variant_identifier, rename_all = "camelCase")]
pub enum FileKind {
    /// A regular file.
    File,
    /// A symbolic link (never followed).
    Symlink,
    /// A directory.
    Directory,
    /// Anything else (FIFO, socket, device).
    Other,
}

/// What the shim saw at the key file's path: `{type: 'missing' | 'none'}`
/// (`none`: nothing looked at, for want of a path), `{type: 'failed',
/// code}`, or `{type: 'found', kind, mode, uid, bytes}` (read at the
/// boundary, `src/wasm/wire/check.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyFileFacts {
    /// Nothing there (`ENOENT`).
    Missing,
    /// `lstat` or the read failed with this code.
    Failed {
        /// The errno code (`EACCES`, ...).
        code: String,
    },
    /// Something is there.
    Found {
        /// What it is.
        kind: FileKind,
        /// Its permission bits (`st_mode & 0o7777`).
        mode: u32,
        /// Its owner's uid.
        owner: u32,
        /// Its first bytes (at most [`KEY_FILE_LEN`] + 1; empty unless a
        /// regular file).
        bytes: Vec<u8>,
    },
}

impl KeyFileFacts {
    /// What a look at the path that failed with `code` says: nothing is
    /// there (`ENOENT`), or the look failed.
    pub fn failed(code: String) -> KeyFileFacts {
        if code == "ENOENT" {
            KeyFileFacts::Missing
        } else {
            KeyFileFacts::Failed { code }
        }
    }
}

/// What a key file report's `type` may be (`none`: nothing looked at, for
/// want of a path).
#[derive(serde::Deserialize)]
#[serde(variant_identifier, rename_all = "camelCase")]
enum KeyFileType {
    Missing,
    None,
    Failed,
    Found,
}

/// Every field a key file report may have, read in one go: one reader for
/// every `type`, where an enum's derive writes one per variant.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct KeyFileIn {
    #[serde(rename = "type")]
    kind: KeyFileType,
    #[serde(default)]
    code: String,
    #[serde(default, rename = "kind")]
    file_kind: Option<FileKind>,
    #[serde(default)]
    mode: u32,
    #[serde(default)]
    uid: Option<u32>,
    #[serde(default)]
    bytes: Option<crate::protocol::Bytes>,
    #[serde(default)]
    process_uid: Option<u32>,
    #[serde(default)]
    create_error: Option<String>,
}

/// On the wire: [`KeyFileFacts`] by its `type`, each with `processUid` (a
/// number or null) and `createError` (a code or null).
impl<'de> serde::Deserialize<'de> for KeyFileReport {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<KeyFileReport, D::Error> {
        use serde::de::Error;
        let r = KeyFileIn::deserialize(d)?;
        let facts = match r.kind {
            KeyFileType::Missing | KeyFileType::None => KeyFileFacts::Missing,
            KeyFileType::Failed => KeyFileFacts::failed(r.code),
            KeyFileType::Found => KeyFileFacts::Found {
                kind: r.file_kind.ok_or_else(|| D::Error::missing_field("kind"))?,
                mode: r.mode,
                owner: r.uid.ok_or_else(|| D::Error::missing_field("uid"))?,
                bytes: r.bytes.map(|b| b.0).unwrap_or_default(),
            },
        };
        Ok(KeyFileReport {
            facts,
            process_uid: r.process_uid,
            create_error: r.create_error,
        })
    }
}

/// The shim's report on the key file, after creating it if asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyFileReport {
    /// What is at the path now.
    pub facts: KeyFileFacts,
    /// This process's uid (`None` where the platform has none).
    pub process_uid: Option<u32>,
    /// The error code of a failed creation, if one was tried and failed.
    pub create_error: Option<String>,
}

/// Why there is no usable runner key (the record is then signed with the
/// token-derived key).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyProblem {
    /// Neither the setting nor an absolute `HOME`.
    NoLocation,
    /// The file is missing and could not be created.
    CannotCreate(String),
    /// The file is missing (nothing tried to create it).
    Missing,
    /// `lstat` or the read failed.
    Unreadable(String),
    /// A symbolic link.
    Symlink,
    /// A directory or some other non-file.
    NotAFile(FileKind),
    /// Owned by another user.
    OtherOwner {
        /// The file's owner.
        owner: u32,
        /// This process's uid.
        ours: u32,
    },
    /// This process's uid is unknown, so ownership cannot be checked.
    UnknownUser,
    /// Group or other permission bits are set.
    OpenPermissions(u32),
    /// Not [`KEY_FILE_LEN`] bytes.
    WrongSize(usize),
    /// The right size, not the format.
    BadFormat,
}

impl KeyProblem {
    /// Why, for the warning (which also names the file).
    pub fn reason(&self) -> String {
        match self {
            KeyProblem::NoLocation => {
                format!("HOME is not an absolute path and {KEY_FILE_VARIABLE} is not set")
            }
            KeyProblem::CannotCreate(code) => {
                format!("it is missing and cannot be created ({code})")
            }
            KeyProblem::Missing => "it is missing".into(),
            KeyProblem::Unreadable(code) => format!("it cannot be read ({code})"),
            KeyProblem::Symlink => "it is a symbolic link".into(),
            KeyProblem::NotAFile(FileKind::Directory) => "it is a directory".into(),
            KeyProblem::NotAFile(_) => "it is not a regular file".into(),
            KeyProblem::OtherOwner { owner, ours } => {
                format!("it is owned by uid {owner}, not by this process's uid {ours}")
            }
            KeyProblem::UnknownUser => "this process's uid is unknown".into(),
            KeyProblem::OpenPermissions(mode) => format!(
                "its mode is {mode:04o}: group or others may read or write it (expected 0600)"
            ),
            KeyProblem::WrongSize(n) => format!("it holds {n} bytes, expected {KEY_FILE_LEN}"),
            KeyProblem::BadFormat => "it is not a runner key file".into(),
        }
    }
}

/// The warning when no runner key can be used: names the file (if there
/// is one) and the reason, and says what follows.
pub fn fallback_warning(file: Option<&str>, problem: &KeyProblem) -> String {
    let what = match file {
        Some(file) => format!(
            "The runner key file {} cannot be used: ",
            crate::text::quoted(file)
        ),
        None => "No runner key file: ".to_string(),
    };
    format!(
        "{what}{}. This job's cached permission verdict is signed with a key derived from the service-account token instead, so it will not be used after the token is rotated.",
        problem.reason()
    )
}

/// Where the key file is: the `KEY_FILE` setting (`setting`, already
/// checked to be an absolute path) if given, else
/// `$HOME/.k8s-auth-preflight/runner-key` when `home` is absolute.
pub fn location(setting: Option<&str>, home: Option<&str>) -> Result<KeyLocation, KeyProblem> {
    if let Some(file) = setting {
        return Ok(KeyLocation {
            file: file.to_string(),
            folder: None,
        });
    }
    let home = home
        .filter(|h| is_absolute(h))
        .ok_or(KeyProblem::NoLocation)?
        .trim_end_matches('/');
    let folder = format!("{home}/{KEY_FOLDER}");
    Ok(KeyLocation {
        file: format!("{folder}/{KEY_FILE_NAME}"),
        folder: Some(folder),
    })
}

/// An absolute path with no NUL byte.
pub fn is_absolute(path: &str) -> bool {
    path.starts_with('/') && !path.contains('\0')
}

/// Whether the shim should create a key file after reporting `facts`
/// (only when nothing is there).
pub fn wants_create(facts: &KeyFileFacts) -> bool {
    matches!(facts, KeyFileFacts::Missing)
}

/// A new secret from the OS (`getrandom`; the JS `crypto` backend on
/// wasm32), never from the jitter seed. `None` if the OS has none to give:
/// then no key file is made.
pub fn new_secret() -> Option<RunnerSecret> {
    let mut secret = [0u8; 32];
    getrandom::fill(&mut secret).ok()?;
    Some(RunnerSecret(secret))
}

/// The text of a key file to create after the shim reported `facts`:
/// a fresh secret when nothing is there, else `None`.
pub fn to_create(facts: &KeyFileFacts) -> Option<String> {
    if wants_create(facts) {
        new_secret().map(|secret| file_text(&secret))
    } else {
        None
    }
}

/// The content of a new key file holding `secret`.
pub fn file_text(secret: &RunnerSecret) -> String {
    let mut text = String::with_capacity(KEY_FILE_LEN);
    text.push_str(HEADER);
    text.push_str(&crate::permission::hex(&secret.0));
    text.push('\n');
    text
}

/// The secret in the file the shim reported, or why it may not be used.
pub fn judge(report: &KeyFileReport) -> Result<RunnerSecret, KeyProblem> {
    let (kind, mode, owner, bytes) = match &report.facts {
        KeyFileFacts::Missing => {
            return Err(match &report.create_error {
                Some(code) => KeyProblem::CannotCreate(code.clone()),
                None => KeyProblem::Missing,
            })
        }
        KeyFileFacts::Failed { code } => return Err(KeyProblem::Unreadable(code.clone())),
        KeyFileFacts::Found {
            kind,
            mode,
            owner,
            bytes,
        } => (*kind, *mode, *owner, bytes),
    };
    match kind {
        FileKind::File => {}
        FileKind::Symlink => return Err(KeyProblem::Symlink),
        other => return Err(KeyProblem::NotAFile(other)),
    }
    let ours = report.process_uid.ok_or(KeyProblem::UnknownUser)?;
    if owner != ours {
        return Err(KeyProblem::OtherOwner { owner, ours });
    }
    if mode & 0o077 != 0 {
        return Err(KeyProblem::OpenPermissions(mode & 0o7777));
    }
    if bytes.len() != KEY_FILE_LEN {
        return Err(KeyProblem::WrongSize(bytes.len()));
    }
    parse(bytes).ok_or(KeyProblem::BadFormat)
}

fn parse(bytes: &[u8]) -> Option<RunnerSecret> {
    let rest = bytes.strip_prefix(HEADER.as_bytes())?;
    let hex = rest.strip_suffix(b"\n")?;
    let mut secret = [0u8; 32];
    for (i, pair) in hex.chunks(2).enumerate() {
        let digit = |b: u8| match b {
            b'0'..=b'9' => Some(b - b'0'),
            b'a'..=b'f' => Some(b - b'a' + 10),
            _ => None,
        };
        *secret.get_mut(i)? = digit(pair[0])? << 4 | digit(*pair.get(1)?)?;
    }
    Some(RunnerSecret(secret))
}

/// A short, public name for a MAC key, stored in the record: the first
/// 8 bytes (16 hex digits) of a domain-separated SHA-256 of the key. A
/// record whose key id differs was written with another key (another
/// runner, a lost key file, the token-derived fallback); one whose key id
/// matches but whose MAC does not was edited or forged.
pub fn key_id(mac_key: &[u8; 32]) -> String {
    let mut hash = Sha256::new();
    hash.update(b"k8s-auth-preflight/key-id/v1\n");
    hash.update(mac_key);
    crate::permission::hex(&hash.finalize()[..8])
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    const UID: u32 = 1000;

    fn secret() -> RunnerSecret {
        RunnerSecret([7; 32])
    }

    fn found(kind: FileKind, mode: u32, owner: u32, bytes: &[u8]) -> KeyFileReport {
        KeyFileReport {
            facts: KeyFileFacts::Found {
                kind,
                mode,
                owner,
                bytes: bytes.to_vec(),
            },
            process_uid: Some(UID),
            create_error: None,
        }
    }

    #[test]
    fn a_written_key_file_reads_back() {
        let text = file_text(&secret());
        assert_eq!(text.len(), KEY_FILE_LEN);
        assert!(text.starts_with("k8s-auth-preflight runner-key v1 "));
        assert_eq!(
            judge(&found(FileKind::File, 0o600, UID, text.as_bytes())),
            Ok(secret())
        );
        assert_eq!(
            judge(&found(FileKind::File, 0o400, UID, text.as_bytes())),
            Ok(secret())
        );
    }

    #[test]
    fn unsafe_key_files_are_named() {
        let text = file_text(&secret());
        let t = text.as_bytes();
        let cases = [
            (
                found(FileKind::File, 0o644, UID, t),
                KeyProblem::OpenPermissions(0o644),
            ),
            (
                found(FileKind::File, 0o620, UID, t),
                KeyProblem::OpenPermissions(0o620),
            ),
            (
                found(FileKind::File, 0o601, UID, t),
                KeyProblem::OpenPermissions(0o601),
            ),
            (
                found(FileKind::File, 0o600, 0, t),
                KeyProblem::OtherOwner {
                    owner: 0,
                    ours: UID,
                },
            ),
            (
                found(FileKind::Symlink, 0o777, UID, b""),
                KeyProblem::Symlink,
            ),
            (
                found(FileKind::Directory, 0o700, UID, b""),
                KeyProblem::NotAFile(FileKind::Directory),
            ),
            (
                found(FileKind::Other, 0o600, UID, b""),
                KeyProblem::NotAFile(FileKind::Other),
            ),
            (
                found(FileKind::File, 0o600, UID, &t[..40]),
                KeyProblem::WrongSize(40),
            ),
            (
                found(FileKind::File, 0o600, UID, &[t, b"x"].concat()),
                KeyProblem::WrongSize(KEY_FILE_LEN + 1),
            ),
            (
                found(
                    FileKind::File,
                    0o600,
                    UID,
                    text.replace("v1", "v9").as_bytes(),
                ),
                KeyProblem::BadFormat,
            ),
            (
                found(FileKind::File, 0o600, UID, text.to_uppercase().as_bytes()),
                KeyProblem::BadFormat,
            ),
            (
                found(
                    FileKind::File,
                    0o600,
                    UID,
                    text.replace('\n', " ").as_bytes(),
                ),
                KeyProblem::BadFormat,
            ),
        ];
        for (report, problem) in cases {
            assert_eq!(judge(&report), Err(problem.clone()), "{report:?}");
            assert!(!problem.reason().is_empty());
        }
        let mut unknown = found(FileKind::File, 0o600, UID, t);
        unknown.process_uid = None;
        assert_eq!(judge(&unknown), Err(KeyProblem::UnknownUser));
        let missing = KeyFileReport {
            facts: KeyFileFacts::Missing,
            process_uid: Some(UID),
            create_error: Some("EACCES".into()),
        };
        assert_eq!(
            judge(&missing),
            Err(KeyProblem::CannotCreate("EACCES".into()))
        );
        assert!(KeyProblem::OpenPermissions(0o644).reason().contains("0644"));
    }

    #[test]
    fn only_a_missing_file_is_created() {
        assert!(wants_create(&KeyFileFacts::Missing));
        assert!(!wants_create(&KeyFileFacts::Failed {
            code: "EACCES".into()
        }));
        assert!(!wants_create(
            &found(FileKind::Symlink, 0o777, UID, b"").facts
        ));
    }

    #[test]
    fn a_look_that_finds_nothing_is_a_missing_file_and_any_other_failure_is_not() {
        assert_eq!(KeyFileFacts::failed("ENOENT".into()), KeyFileFacts::Missing);
        assert_eq!(
            KeyFileFacts::failed("EACCES".into()),
            KeyFileFacts::Failed {
                code: "EACCES".into()
            }
        );
    }

    #[test]
    fn the_location_is_the_setting_else_home() {
        assert_eq!(
            location(None, Some("/home/runner")),
            Ok(KeyLocation {
                file: "/home/runner/.k8s-auth-preflight/runner-key".into(),
                folder: Some("/home/runner/.k8s-auth-preflight".into()),
            })
        );
        assert_eq!(
            location(None, Some("/home/runner/")).unwrap().file,
            "/home/runner/.k8s-auth-preflight/runner-key"
        );
        assert_eq!(
            location(None, Some("/")).unwrap().file,
            "/.k8s-auth-preflight/runner-key"
        );
        for bad in [None, Some(""), Some("relative/home"), Some("~")] {
            assert_eq!(location(None, bad), Err(KeyProblem::NoLocation), "{bad:?}");
        }
        assert_eq!(
            location(Some("/etc/runner/key"), None),
            Ok(KeyLocation {
                file: "/etc/runner/key".into(),
                folder: None,
            })
        );
    }

    #[test]
    fn new_key_files_hold_fresh_secrets_that_read_back() {
        let a = to_create(&KeyFileFacts::Missing).unwrap();
        let b = to_create(&KeyFileFacts::Missing).unwrap();
        assert_ne!(a, b, "two draws from the OS agreed");
        let report = found(FileKind::File, 0o600, UID, a.as_bytes());
        assert!(judge(&report).is_ok());
        assert_eq!(to_create(&report.facts), None);
    }

    #[test]
    fn the_fallback_warning_names_the_file_and_the_reason() {
        let w = fallback_warning(
            Some("/home/r/.k8s-auth-preflight/runner-key"),
            &KeyProblem::OpenPermissions(0o644),
        );
        assert!(
            w.contains("\"/home/r/.k8s-auth-preflight/runner-key\""),
            "{w}"
        );
        assert!(w.contains("0644"), "{w}");
        assert!(w.contains("token is rotated"), "{w}");
        assert!(fallback_warning(None, &KeyProblem::NoLocation).contains(KEY_FILE_VARIABLE));
    }

    #[test]
    fn key_ids_name_keys_without_revealing_them() {
        let a = key_id(&[1; 32]);
        assert_eq!(a, key_id(&[1; 32]));
        assert_ne!(a, key_id(&[2; 32]));
        assert_eq!(a.len(), 16);
        assert!(!format!("{:?}", secret()).contains('7'));
    }
}

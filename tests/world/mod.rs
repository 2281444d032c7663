//! An in-memory world for driving a [`Check`] as the shim does: files
//! with modification times, folders, processes that run or not, and what
//! each file action finds and leaves. `tests/check.rs` runs every file and
//! lock rule against it; the incident replay (`examples/replay/`) runs each
//! hook step of its jobs in one.
//!
//! [`Check`]: k8s_auth_preflight::check::Check

#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};

use k8s_auth_preflight::check::{CheckAction, Fact, LockCreated, LockSeen, RecordRead};
use k8s_auth_preflight::runner_key::{FileKind, KeyFileFacts, KeyFileReport};

/// The uid of the runner's processes and files.
pub const UID: u32 = 1001;

#[derive(Clone, Copy, PartialEq)]
pub enum Api {
    AllowAll,
    /// `allowed: false` for this verb.
    Deny(&'static str),
    /// Connection refused until this time.
    RefuseUntil(u64),
    /// Every request refused by the HTTP client: the credential holds a
    /// character a header cannot carry.
    BadHeader,
}

/// Files and processes, as the shim would see them.
pub struct World {
    pub files: BTreeMap<String, (Vec<u8>, u64)>,
    pub folders: BTreeSet<String>,
    pub running: BTreeSet<u32>,
    pub api: Api,
    /// Paths at which a link fails and the look finds nothing, this many times.
    pub vanishing_lock: u32,
    /// Replace our lock with another's just before the release looks at it.
    pub steal_lock_at_release: bool,
    /// How far the checking process's clock runs ahead of the clock that
    /// stamps file times; `None`: the shim cannot tell (no temp file time).
    pub fs_clock_offset: Option<u64>,
    /// The error every hard link fails with (a file system without them).
    pub link_error: Option<&'static str>,
}

impl World {
    pub fn new() -> World {
        World {
            files: BTreeMap::new(),
            folders: BTreeSet::from(["/home/runner".to_string(), "/rt".to_string()]),
            running: BTreeSet::new(),
            api: Api::AllowAll,
            vanishing_lock: 0,
            steal_lock_at_release: false,
            fs_clock_offset: Some(0),
            link_error: None,
        }
    }
}

pub fn read_file(world: &World, file: &str, limit: u32) -> RecordRead {
    match world.files.get(file) {
        None => RecordRead::OpenFailed {
            code: "ENOENT".into(),
        },
        Some((bytes, _)) => {
            RecordRead::Bytes(bytes.iter().copied().take(limit as usize + 1).collect())
        }
    }
}

pub fn key_report(world: &World, file: &str, create_error: Option<String>) -> KeyFileReport {
    let facts = match world.files.get(file) {
        None => KeyFileFacts::Missing,
        Some((bytes, _)) => KeyFileFacts::Found {
            kind: FileKind::File,
            mode: 0o600,
            owner: UID,
            bytes: bytes.clone(),
        },
    };
    KeyFileReport {
        facts,
        process_uid: Some(UID),
        create_error,
    }
}

pub fn folder_of(file: &str) -> String {
    file.rsplit_once('/')
        .map(|(f, _)| f.to_string())
        .unwrap_or_default()
}

/// Performs one file action as the shim does; `None` for actions with no fact.
pub fn perform(world: &mut World, action: &CheckAction, now: u64) -> Option<Fact> {
    Some(match action {
        CheckAction::ReadKeyFile { file, .. } => Fact::KeyFile(key_report(world, file, None)),
        CheckAction::CreateKeyFile {
            file, folder, text, ..
        } => {
            if let Some(folder) = folder {
                world.folders.insert(folder.clone());
            }
            let error = if world.files.contains_key(file) {
                Some("EEXIST".to_string())
            } else {
                world
                    .files
                    .insert(file.clone(), (text.as_bytes().to_vec(), now));
                None
            };
            Fact::KeyFile(key_report(world, file, error))
        }
        CheckAction::ReadRecord { file, limit } => Fact::Record(read_file(world, file, *limit)),
        CheckAction::CreateLock { file, content } => {
            if !world.folders.contains(&folder_of(file)) {
                return Some(Fact::LockCreated(LockCreated::TempFailed {
                    code: "ENOENT".into(),
                }));
            }
            if let Some(code) = world.link_error {
                return Some(Fact::LockCreated(LockCreated::LinkFailed {
                    code: code.into(),
                    fs_now_ms: Some(now),
                }));
            }
            // The temp file's time: the file system's clock.
            let fs_now_ms = world.fs_clock_offset.map(|offset| now - offset);
            if world.vanishing_lock > 0 {
                world.vanishing_lock -= 1;
                return Some(Fact::LockCreated(LockCreated::LinkFailed {
                    code: "EEXIST".into(),
                    fs_now_ms,
                }));
            }
            if world.files.contains_key(file) {
                Fact::LockCreated(LockCreated::LinkFailed {
                    code: "EEXIST".into(),
                    fs_now_ms,
                })
            } else {
                world
                    .files
                    .insert(file.clone(), (content.as_bytes().to_vec(), now));
                Fact::LockCreated(LockCreated::Linked)
            }
        }
        CheckAction::InspectLock { file, limit } => {
            if world.steal_lock_at_release && world.files.contains_key(file) {
                world.files.insert(
                    file.clone(),
                    (b"9 runner-1 00000000000000aa\n".to_vec(), now),
                );
            }
            match world.files.get(file) {
                None => Fact::LockSeen(LockSeen::StatFailed {
                    code: "ENOENT".into(),
                }),
                Some((bytes, mtime)) => Fact::LockSeen(LockSeen::Found {
                    is_file: true,
                    mtime_ms: *mtime,
                    content: Some(bytes.iter().copied().take(*limit as usize + 1).collect()),
                }),
            }
        }
        CheckAction::ProbeProcess { pid } => Fact::Process {
            code: (!world.running.contains(pid)).then(|| "ESRCH".to_string()),
        },
        CheckAction::RemoveFile { file } => Fact::Removed {
            code: world
                .files
                .remove(file)
                .is_none()
                .then(|| "ENOENT".to_string()),
        },
        CheckAction::WriteRecord { file, text } => {
            if world.folders.contains(&folder_of(file)) {
                world
                    .files
                    .insert(file.clone(), (text.as_bytes().to_vec(), now));
                Fact::Written { code: None }
            } else {
                Fact::Written {
                    code: Some("ENOENT".into()),
                }
            }
        }
        CheckAction::DeleteRecord { file } => Fact::Deleted {
            code: world
                .files
                .remove(file)
                .is_none()
                .then(|| "ENOENT".to_string()),
        },
        _ => return None,
    })
}

//! The lock file's content and what a look at it means.
//!
//! A lock holds one line, `<pid> <host> <nonce>\n`: the holder's process
//! id, its host name and 16 hex digits drawn for this lock, so that a
//! process releases only a lock it made. What the shim saw at the path
//! ([`LockSeen`]) becomes a [`Holder`] for [`crate::check::single_flight`], or a
//! process to ask about first.

use super::action::LockSeen;
use crate::check::single_flight::Holder;
use crate::random::RandomSource;

/// The most bytes a lock may hold.
pub const MAX_LOCK_BYTES: u32 = 256;
/// How far in the future of the file system's clock a lock's time may be
/// before it cannot be a lock this package made (a `touch -d`); the
/// record allows the same skew.
pub const MAX_FUTURE_MS: u64 = 120_000;
/// Attempts to create the lock when it vanishes between the failed link
/// and the look (its holder just released it): after these, it counts as
/// held by an unknown process (the machine waits a look).
pub const CREATE_TRIES: u32 = 3;

/// This process, as a lock names it (`{pid, host}`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub struct ProcessFacts {
    /// The process id.
    pub pid: u32,
    /// The host name.
    pub host: String,
}

/// A lock this process made: released only while it still holds `content`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldLock {
    /// The lock's path.
    pub file: String,
    /// What this process wrote into it.
    pub content: String,
}

/// A lock's content for `process`, with a fresh nonce.
pub fn content(process: &ProcessFacts, random: &mut RandomSource) -> String {
    // The nonce in hex by hand: `{:016x}` brings the formatter's padding.
    let nonce = crate::permission::hex(&random.next_u64().to_be_bytes());
    format!("{} {} {nonce}\n", process.pid, process.host)
}

/// What a look at the lock says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Look {
    /// Nothing there any more.
    Gone,
    /// Held, and who holds it is known.
    Held {
        /// Its age, in ms.
        age_ms: u64,
        /// Who holds it.
        holder: Holder,
    },
    /// Held by process `pid` of this host: ask whether it runs.
    AskProcess {
        /// Its age, in ms.
        age_ms: u64,
        /// The holder's process id.
        pid: u32,
    },
}

/// Judges what the shim saw at the lock's path, at `now_ms` on the file
/// system's clock (the clock that stamped the lock's time).
pub fn look(seen: &LockSeen, me: &ProcessFacts, now_ms: u64) -> Look {
    let (is_file, mtime_ms, content) = match seen {
        LockSeen::StatFailed { code } if code == "ENOENT" => return Look::Gone,
        // Cannot even look at it: not a lock of ours to trust.
        LockSeen::StatFailed { .. } => {
            return Look::Held {
                age_ms: 0,
                holder: Holder::Invalid,
            }
        }
        LockSeen::Found {
            is_file,
            mtime_ms,
            content,
        } => (*is_file, *mtime_ms, content),
    };
    let age_ms = now_ms.saturating_sub(mtime_ms);
    let invalid = Look::Held {
        age_ms,
        holder: Holder::Invalid,
    };
    // Dated ahead of the clock that stamped it: made by hand, not by a
    // process taking its turn (its age would stay 0 for ever).
    if mtime_ms > now_ms.saturating_add(MAX_FUTURE_MS) {
        return invalid;
    }
    let Some(bytes) = content.as_deref().filter(|_| is_file) else {
        return invalid;
    };
    let Some((pid, host)) = parse(bytes) else {
        return invalid;
    };
    if host != me.host {
        return Look::Held {
            age_ms,
            holder: Holder::Unknown,
        };
    }
    // Our own pid is a live holder too: another check of this process may
    // hold it (hosts may run checks side by side). A dead step's pid reused
    // by this process is waited for like any live holder (a known limit).
    if pid == 0 || pid > i32::MAX as u64 {
        return Look::Held {
            age_ms,
            holder: Holder::Dead,
        };
    }
    Look::AskProcess {
        age_ms,
        pid: pid as u32,
    }
}

/// Whether `kill(pid, 0)` failing with `code` (or succeeding) means the
/// process runs: `EPERM` means it exists and is not ours to signal.
pub fn is_running(code: Option<&str>) -> bool {
    matches!(code, None | Some("EPERM"))
}

/// `<pid> <host> <16 hex>\n`: the pid (1 to 10 digits) and the host (1 to
/// 128 non-space bytes).
fn parse(bytes: &[u8]) -> Option<(u64, &str)> {
    if bytes.len() > MAX_LOCK_BYTES as usize {
        return None;
    }
    let text = std::str::from_utf8(bytes).ok()?.strip_suffix('\n')?;
    let mut parts = text.split(' ');
    let (pid, host, nonce) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let pid_ok = (1..=10).contains(&pid.len()) && pid.bytes().all(|b| b.is_ascii_digit());
    let host_ok = (1..=128).contains(&host.len()) && !host.chars().any(char::is_whitespace);
    let nonce_ok = nonce.len() == 16
        && nonce
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    if !(pid_ok && host_ok && nonce_ok) {
        return None;
    }
    Some((pid.parse().ok()?, host))
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    const NOW: u64 = 1_792_548_926_000;

    fn me(host: &str) -> ProcessFacts {
        ProcessFacts {
            pid: 1,
            host: host.into(),
        }
    }

    fn file(text: &str, mtime_ms: u64) -> LockSeen {
        LockSeen::Found {
            is_file: true,
            mtime_ms,
            content: Some(text.as_bytes().to_vec()),
        }
    }

    #[test]
    fn content_names_this_process_and_parses_back() {
        let this = ProcessFacts {
            pid: 4242,
            host: "runner-7".into(),
        };
        let mut random = RandomSource::seeded(1);
        let a = content(&this, &mut random);
        let b = content(&this, &mut random);
        assert_ne!(a, b, "each lock has its own nonce");
        assert!(a.starts_with("4242 runner-7 ") && a.ends_with('\n') && a.len() == 31);
        assert_eq!(
            look(&file(&a, NOW - 10), &me("runner-7"), NOW),
            Look::AskProcess {
                age_ms: 10,
                pid: 4242
            }
        );
    }

    #[test]
    fn another_hosts_lock_is_judged_by_age_only() {
        assert_eq!(
            look(&file("7 other 0123456789abcdef\n", NOW - 5), &me("me"), NOW),
            Look::Held {
                age_ms: 5,
                holder: Holder::Unknown
            }
        );
    }

    #[test]
    fn anything_that_is_not_our_lock_is_invalid() {
        let invalid = |age_ms| Look::Held {
            age_ms,
            holder: Holder::Invalid,
        };
        for text in [
            "",
            "garbage",
            "7 me 0123456789abcdef",             // no newline
            "7 me 0123456789ABCDEF\n",           // upper-case nonce
            "7 me 0123456789abcde\n",            // short nonce
            "x7 me 0123456789abcdef\n",          // pid not digits
            "12345678901 me 0123456789abcdef\n", // 11 digits
            "7  me 0123456789abcdef\n",          // two spaces
            "7 me 0123456789abcdef extra\n",
        ] {
            assert_eq!(
                look(&file(text, NOW - 3), &me("me"), NOW),
                invalid(3),
                "{text:?}"
            );
        }
        let not_file = LockSeen::Found {
            is_file: false,
            mtime_ms: NOW - 9,
            content: None,
        };
        assert_eq!(look(&not_file, &me("me"), NOW), invalid(9));
        let unreadable = LockSeen::Found {
            is_file: true,
            mtime_ms: NOW,
            content: None,
        };
        assert_eq!(look(&unreadable, &me("me"), NOW), invalid(0));
        let huge = "7 me 0123456789abcdef\n".repeat(20);
        assert_eq!(look(&file(&huge, NOW), &me("me"), NOW), invalid(0));
        let denied = LockSeen::StatFailed {
            code: "EACCES".into(),
        };
        assert_eq!(look(&denied, &me("me"), NOW), invalid(0));
    }

    #[test]
    fn gone_pid_zero_and_future_times() {
        let gone = LockSeen::StatFailed {
            code: "ENOENT".into(),
        };
        assert_eq!(look(&gone, &me("me"), NOW), Look::Gone);
        assert_eq!(
            look(&file("0 me 0123456789abcdef\n", NOW), &me("me"), NOW),
            Look::Held {
                age_ms: 0,
                holder: Holder::Dead
            }
        );
        assert_eq!(
            look(
                &file("9999999999 me 0123456789abcdef\n", NOW),
                &me("me"),
                NOW
            ),
            Look::Held {
                age_ms: 0,
                holder: Holder::Dead
            }
        );
        // A modification time in the future is age 0, not an overflow.
        assert_eq!(
            look(
                &file("7 me 0123456789abcdef\n", NOW + 60_000),
                &me("me"),
                NOW
            ),
            Look::AskProcess { age_ms: 0, pid: 7 }
        );
    }

    #[test]
    fn eperm_means_running() {
        assert!(is_running(None));
        assert!(is_running(Some("EPERM")));
        assert!(!is_running(Some("ESRCH")));
    }

    #[test]
    fn far_future_times_are_not_locks_and_our_own_pid_is_asked_about() {
        let text = "7 me 0123456789abcdef\n";
        assert_eq!(
            look(&file(text, NOW + MAX_FUTURE_MS), &me("me"), NOW),
            Look::AskProcess { age_ms: 0, pid: 7 }
        );
        assert_eq!(
            look(&file(text, NOW + MAX_FUTURE_MS + 1), &me("me"), NOW),
            Look::Held {
                age_ms: 0,
                holder: Holder::Invalid
            }
        );
        // This process's own pid (1 in `me`): asked about like any other,
        // as another check of this process may hold the lock.
        assert_eq!(
            look(&file("1 me 0123456789abcdef\n", NOW - 4), &me("me"), NOW),
            Look::AskProcess { age_ms: 4, pid: 1 }
        );
    }
}

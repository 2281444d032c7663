//! The line the pod-side copy scripts (`pod/copy-in.sh`, `pod/copy-out.sh`)
//! print last: what the pod's `tar` did, and the bytes that went through it
//! counted and checked. Everything before it on its stream is tar's own.
//!
//! The check is POSIX `cksum` (a CRC-32 over the bytes and their count) when
//! the container has it, and SHA-256 otherwise. `cksum` is the cheaper in
//! the pod: coreutils' runs at several GB/s where its `sha256sum` (without
//! OpenSSL, as Debian builds it) runs at about 275 MB/s, which made the pod
//! the slowest part of a large copy. For what a copy guards against, bytes
//! lost, repeated or cut off on their way (TLS already rules out bytes
//! changed in flight), a CRC with the count is enough; the runner computes
//! both, so either can be checked.

/// The first word of the report line.
pub const REPORT_MARK: &str = "k8s-auth-preflight-copy";

/// How the pod checked the bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    /// POSIX `cksum`'s CRC, as it printed it.
    Cksum(u32),
    /// Their SHA-256, as lowercase hex.
    Sha256(String),
}

/// What the pod reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// Its `tar`'s exit status.
    pub tar: i64,
    /// How many bytes of the archive went through it.
    pub bytes: u64,
    /// Their check.
    pub check: Check,
}

impl Report {
    /// The report in `text`'s last line, and the text before it; `None`
    /// when the last line is not a whole report (the script did not get to
    /// print it, or something else came after it).
    pub fn find(text: &str) -> Option<(Report, &str)> {
        // (`get` and `split_at_checked` rather than indexing: a slice
        // that can panic brings the panic's Unicode tables into the .wasm.)
        let body = text.strip_suffix('\n')?;
        let (before, line) = match body.rfind('\n') {
            Some(i) => {
                let (before, line) = body.split_at_checked(i + 1)?;
                (before, line)
            }
            None => ("", body),
        };
        let mut words = line.split(' ');
        if words.next() != Some(REPORT_MARK) {
            return None;
        }
        let tar = whole(words.next()?)?;
        let bytes = whole(words.next()?)?;
        let check = match (words.next()?, words.next()?) {
            ("cksum", crc) => Check::Cksum(u32::try_from(whole(crc)?).ok()?),
            ("sha256", hash) => {
                let hex = |c: u8| c.is_ascii_digit() || (b'a'..=b'f').contains(&c);
                if hash.len() != 64 || !hash.bytes().all(hex) {
                    return None;
                }
                Check::Sha256(hash.to_string())
            }
            _ => return None,
        };
        if words.next().is_some() {
            return None;
        }
        let tar = i64::try_from(tar).ok()?;
        Some((Report { tar, bytes, check }, before))
    }
}

/// Decimal digits, at most 19 of them.
fn whole(word: &str) -> Option<u64> {
    if word.is_empty() || word.len() > 19 || !word.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    word.parse().ok()
}

//! The line the pod-side copy scripts (`pod/copy-in.sh`, `pod/copy-out.sh`)
//! print last: what the pod's `tar` did, and the bytes that went through it
//! counted and hashed. Everything before it on its stream is tar's own.

/// The first word of the report line.
pub const REPORT_MARK: &str = "k8s-auth-preflight-copy";

/// What the pod reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// Its `tar`'s exit status.
    pub tar: i64,
    /// How many bytes of the archive went through it.
    pub bytes: u64,
    /// Their SHA-256, as lowercase hex.
    pub sha256: String,
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
        let sha256 = words.next()?;
        let hex = |c: u8| c.is_ascii_digit() || (b'a'..=b'f').contains(&c);
        if words.next().is_some() || sha256.len() != 64 || !sha256.bytes().all(hex) {
            return None;
        }
        let tar = i64::try_from(tar).ok()?;
        Some((
            Report {
                tar,
                bytes,
                sha256: sha256.to_string(),
            },
            before,
        ))
    }
}

/// Decimal digits, at most 19 of them.
fn whole(word: &str) -> Option<u64> {
    if word.is_empty() || word.len() > 19 || !word.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    word.parse().ok()
}

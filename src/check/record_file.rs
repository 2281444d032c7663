//! The cache record's file: where it is, what a read of it means, and what
//! a failed write or delete says. The check decides; the shim only opens,
//! reads, writes and unlinks.

use super::action::RecordRead;
use crate::cache_folder::{self, CacheFolder};

/// `name` in `folder` (a trailing `/` of the folder is not doubled).
pub fn join(folder: &str, name: &str) -> String {
    let folder = match folder.trim_end_matches('/') {
        "" if folder.starts_with('/') => "/",
        trimmed => trimmed,
    };
    if folder == "/" {
        format!("/{name}")
    } else {
        format!("{folder}/{name}")
    }
}

/// The record's path from the host's `cache_dir`, `$RUNNER_TEMP` and the
/// file name; or `None` and the warning that says why there is none.
pub fn place(
    runner_temp: Option<&str>,
    cache_dir: Option<&str>,
    name: &str,
) -> Result<String, &'static str> {
    match cache_folder::cache_folder(runner_temp, cache_dir) {
        CacheFolder::Folder(folder) => Ok(join(&folder, name)),
        CacheFolder::None { warning } => Err(warning),
    }
}

/// The folder part of a path, for messages.
pub fn folder_of(file: &str) -> &str {
    match file.rfind('/') {
        Some(0) => "/",
        // `get`, not indexing: a slice that cannot panic brings no panic
        // message code (`at` is a char boundary, '/' being ASCII).
        Some(at) => file.get(..at).unwrap_or("."),
        None => ".",
    }
}

/// What a read of the record at `file` gives: its bytes (`None`: no record
/// to judge) and a warning about the file, if it deserves one. A file that
/// is not there is a plain miss; a link, a FIFO or a folder in its place is
/// ignored with a warning (job containers can write to the folder).
pub fn read_outcome(file: &str, read: RecordRead) -> (Option<Vec<u8>>, Option<String>) {
    match read {
        RecordRead::Bytes(bytes) => (Some(bytes), None),
        RecordRead::OpenFailed { code } => match code.as_str() {
            "ENOENT" | "ENOTDIR" => (None, None),
            "ELOOP" | "EMLINK" => (
                None,
                Some(format!("cache path {file} is a symbolic link; ignoring it")),
            ),
            _ => (None, Some(format!("cannot open cache file {file}: {code}"))),
        },
        RecordRead::NotAFile => (
            None,
            Some(format!(
                "cache path {file} is not a regular file; ignoring it"
            )),
        ),
        RecordRead::ReadFailed { code } => {
            (None, Some(format!("cannot read cache file {file}: {code}")))
        }
    }
}

/// The warning for a record that could not be written.
pub fn write_failed(file: &str, code: &str) -> String {
    format!(
        "could not cache the permission verdict in {} ({code}); later steps will check again",
        folder_of(file)
    )
}

/// The warning for a record that could not be deleted, if it deserves one
/// (one that is not there is deleted).
pub fn delete_failed(file: &str, code: &str) -> Option<String> {
    match code {
        "ENOENT" | "ENOTDIR" => None,
        _ => Some(format!(
            "could not delete the stale cached verdict {file}: {code}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn joins_without_doubling_slashes() {
        assert_eq!(join("/tmp/rt", "r.json"), "/tmp/rt/r.json");
        assert_eq!(join("/tmp/rt/", "r.json"), "/tmp/rt/r.json");
        assert_eq!(join("/tmp/rt//", "r.json"), "/tmp/rt/r.json");
        assert_eq!(join("/", "r.json"), "/r.json");
        assert_eq!(join("rel", "r.json"), "rel/r.json");
        assert_eq!(folder_of("/tmp/rt/r.json"), "/tmp/rt");
        assert_eq!(folder_of("/r.json"), "/");
        assert_eq!(folder_of("r.json"), ".");
    }

    #[test]
    fn the_hosts_folder_wins_and_none_says_why() {
        assert_eq!(
            place(Some("/rt"), Some("/mine"), "n"),
            Ok("/mine/n".to_string())
        );
        assert_eq!(place(Some("/rt"), None, "n"), Ok("/rt/n".to_string()));
        assert_eq!(
            place(None, Some(" "), "n"),
            Err(cache_folder::NO_FOLDER_WARNING)
        );
    }

    #[test]
    fn a_missing_record_is_a_plain_miss_and_odd_ones_are_named() {
        let f = "/rt/r.json";
        let open = |code: &str| {
            read_outcome(
                f,
                RecordRead::OpenFailed {
                    code: code.to_string(),
                },
            )
        };
        assert_eq!(open("ENOENT"), (None, None));
        assert_eq!(open("ENOTDIR"), (None, None));
        assert_eq!(
            open("ELOOP").1.as_deref(),
            Some("cache path /rt/r.json is a symbolic link; ignoring it")
        );
        assert_eq!(
            open("EACCES").1.as_deref(),
            Some("cannot open cache file /rt/r.json: EACCES")
        );
        assert_eq!(
            read_outcome(f, RecordRead::NotAFile).1.as_deref(),
            Some("cache path /rt/r.json is not a regular file; ignoring it")
        );
        assert_eq!(
            read_outcome(f, RecordRead::ReadFailed { code: "EIO".into() })
                .1
                .as_deref(),
            Some("cannot read cache file /rt/r.json: EIO")
        );
        assert_eq!(
            read_outcome(f, RecordRead::Bytes(b"x".to_vec())),
            (Some(b"x".to_vec()), None)
        );
    }

    #[test]
    fn write_and_delete_failures_are_worded_for_the_job_log() {
        assert_eq!(
            write_failed("/rt/r.json", "EROFS"),
            "could not cache the permission verdict in /rt (EROFS); later steps will check again"
        );
        assert_eq!(delete_failed("/rt/r.json", "ENOENT"), None);
        assert_eq!(
            delete_failed("/rt/r.json", "EACCES").as_deref(),
            Some("could not delete the stale cached verdict /rt/r.json: EACCES")
        );
    }
}

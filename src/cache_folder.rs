//! Which folder the cache record lives in, or that there is none.
//!
//! The record must outlive the hook process (later steps of the job read
//! it) and belong to the job. `$RUNNER_TEMP` is exactly that: the runner
//! makes it per job and empties it after. The host may name another folder
//! (`options.cacheDir`). Without either there is no cache: the shared
//! system temp folder outlives the job and is shared with every other user
//! of the machine, so a record there would serve the next job too.

/// The runner's per-job temp folder variable.
pub const RUNNER_TEMP: &str = "RUNNER_TEMP";

/// The warning when there is no folder for the record.
pub const NO_FOLDER_WARNING: &str =
    "RUNNER_TEMP is not set: the verdict will not be cached for later steps";

/// Where the record goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CacheFolder {
    /// This folder.
    Folder(String),
    /// Nowhere: do not read or write a record; print the warning.
    None {
        /// Why, for the log.
        warning: &'static str,
    },
}

/// The folder for the record: the host's `cache_dir` if it named one, else
/// `$RUNNER_TEMP`, else none. Blank values count as unset.
pub fn cache_folder(runner_temp: Option<&str>, cache_dir: Option<&str>) -> CacheFolder {
    let given = |v: Option<&str>| v.filter(|s| !s.trim().is_empty()).map(str::to_string);
    match given(cache_dir).or_else(|| given(runner_temp)) {
        Some(folder) => CacheFolder::Folder(folder),
        None => CacheFolder::None {
            warning: NO_FOLDER_WARNING,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn the_hosts_folder_then_runner_temp_then_none() {
        let folder = |s: &str| CacheFolder::Folder(s.into());
        assert_eq!(cache_folder(Some("/rt"), Some("/mine")), folder("/mine"));
        assert_eq!(cache_folder(Some("/rt"), None), folder("/rt"));
        assert_eq!(cache_folder(Some("/rt"), Some("  ")), folder("/rt"));
        let none = CacheFolder::None {
            warning: NO_FOLDER_WARNING,
        };
        assert_eq!(cache_folder(None, None), none);
        assert_eq!(cache_folder(Some(""), None), none);
        assert_eq!(cache_folder(Some(" "), Some("")), none);
    }
}

//! The `reason` of every `V1Status` this package gives an exec's caller in
//! place of the command's own: the command did not run to its end as the
//! caller saw it, or what it wrote or its exit code did not all reach the
//! caller. A caller that must know its command finished whole (a copy, a
//! check of a file's contents) tells these apart from the command's own
//! `Success` and `NonZeroExitCode` with [`is_incomplete`].

/// Each reason, with what it says.
pub const INCOMPLETE: &[&str] = &[
    // A plain exec's stream ended with no status.
    "StreamCut",
    // A durable exec could not reconnect within its limit.
    "StreamLost",
    // The bytes a reattach needed were no longer kept in the pod.
    "OutputLost",
    // The command ended but its exit code could not be read.
    "ExitCodeLost",
    "ExitCodeUnknown",
    // The run's files in the pod went away (a restarted container).
    "RunRecordMissing",
    // The pod was deleted, or is no longer running.
    "PodGone",
    "PodNotRunning",
    // This process was stopping (SIGTERM, SIGINT) and stopped the command.
    "Cancelled",
];

/// Whether a status `reason` is one of [`INCOMPLETE`].
pub fn is_incomplete(reason: &str) -> bool {
    INCOMPLETE.contains(&reason)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn the_commands_own_statuses_are_not_incomplete() {
        for own in [
            "",
            "NonZeroExitCode",
            "Success",
            "streamcut",
            "InternalError",
        ] {
            assert!(!is_incomplete(own), "{own}");
        }
        for ours in INCOMPLETE {
            assert!(is_incomplete(ours), "{ours}");
        }
    }

    /// Every reason the machine and the wire give is in the list: a new
    /// one that is not would pass a copy that never finished.
    #[test]
    fn every_reason_given_is_listed() {
        let sources = [
            include_str!("machine/mod.rs"),
            include_str!("machine/step_ends.rs"),
            include_str!("machine/outcome.rs"),
            include_str!("machine/cancel.rs"),
            include_str!("machine/tests/mod.rs"),
            include_str!("machine/tests/start.rs"),
            include_str!("machine/tests/cuts.rs"),
            include_str!("machine/tests/ends.rs"),
            include_str!("machine/tests/cancel.rs"),
            include_str!("machine/tests/ledger.rs"),
            include_str!("machine/tests/plain.rs"),
            include_str!("../wasm/wire/durable.rs"),
        ];
        let mut found = Vec::new();
        for source in sources {
            for line in source.lines() {
                let line = line.trim();
                let quoted = if let Some(rest) = line.strip_prefix("reason: \"") {
                    rest
                } else if let Some(at) = line
                    .find("self.fail(\"")
                    .or(line.find("fail_ended(now_ms, \""))
                {
                    &line[at + line[at..].find('"').unwrap_or(0) + 1..]
                } else if let Some(at) = line.find("failure(&message, \"") {
                    &line[at + "failure(&message, \"".len()..]
                } else {
                    continue;
                };
                if let Some(end) = quoted.find('"') {
                    found.push(quoted[..end].to_string());
                }
            }
        }
        assert!(
            found.len() >= 5,
            "the scan found too few reasons: {found:?}"
        );
        for reason in &found {
            if reason == "NonZeroExitCode" {
                continue;
            }
            assert!(is_incomplete(reason), "{reason} is given but not listed");
        }
    }
}

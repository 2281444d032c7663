use super::*;
use crate::durable::{StepEnd, UTILITIES};

/// Whether `text` matches a `case` pattern made of `|` alternatives of
/// digits and `[a-b]` ranges, as `sh` matches it.
fn matches(pattern: &str, text: &str) -> bool {
    pattern.split('|').any(|alternative| {
        let mut chars = text.chars();
        let mut rest = alternative;
        while !rest.is_empty() {
            let Some(c) = chars.next() else { return false };
            if let Some(range) = rest.strip_prefix('[') {
                let (a, b) = (range.as_bytes()[0] as char, range.as_bytes()[2] as char);
                if !(a..=b).contains(&c) {
                    return false;
                }
                rest = &range[4..];
            } else {
                if !rest.starts_with(c) {
                    return false;
                }
                rest = &rest[1..];
            }
        }
        chars.next().is_none()
    })
}

#[test]
fn a_decimal_pattern_matches_its_range_and_nothing_else() {
    let bounds = [
        0, 1, 5, 9, 10, 11, 19, 20, 93, 98, 99, 100, 101, 126, 127, 128, 199, 200, 209, 250, 255,
        256, 999,
    ];
    for &lo in &bounds {
        for &hi in &bounds {
            let pattern = decimal_pattern(lo, hi);
            for n in 0..1100 {
                assert_eq!(
                    matches(&pattern, &n.to_string()),
                    lo <= n && n <= hi,
                    "{lo}..={hi} as {pattern:?}, at {n}"
                );
            }
        }
    }
    assert_eq!(
        decimal_pattern(126, 255),
        "12[6-9]|1[3-9][0-9]|2[0-4][0-9]|25[0-5]"
    );
}

#[test]
fn the_shell_tests_for_a_status_of_ours_exactly_where_the_core_reads_one() {
    let table = shell_table(UTILITIES);
    let pattern = table
        .lines()
        .find_map(|l| l.trim().strip_suffix(") return 0 ;;"))
        .expect("the table's case pattern");
    for code in 0..=255 {
        let ours = !matches!(StepEnd::of(code), StepEnd::Code(_));
        assert_eq!(matches(pattern, &code.to_string()), ours, "status {code}");
    }
    // A leading zero or a sign is never a status the shell writes.
    assert!(!matches(pattern, "097") && !matches(pattern, "-97"));
}

#[test]
fn each_status_of_the_table_is_read_as_its_own_meaning_and_named_in_the_shell() {
    let table = shell_table(UTILITIES);
    let read = [
        (NAME_TAKEN, StepEnd::NameTaken),
        (OUTPUT_NOT_KEPT, StepEnd::OutputNotKept),
        (WATCHER_GONE, StepEnd::WatcherGone),
        (NOT_A_PROGRAM, StepEnd::NotAProgram),
        (NO_FOLDER, StepEnd::NoFolder),
        (BROKE, StepEnd::Broke),
        (NO_RECORD, StepEnd::NoRecord),
    ];
    assert_eq!(read.len(), POD_STATUSES.len());
    for (status, meaning) in read {
        assert_eq!(StepEnd::of(status.code), meaning);
        assert!(
            table.contains(&format!("\nPOD_{}={}\n", status.name, status.code)),
            "{}",
            status.name
        );
    }
    for (i, name) in UTILITIES.iter().enumerate() {
        assert_eq!(
            StepEnd::of(MISSING_UTILITY_FIRST + i as i64),
            StepEnd::Missing(name)
        );
    }
    assert!(table.contains(&format!("POD_UTILITIES='{}'", UTILITIES.join(" "))));
}

#[test]
fn a_steps_v1status_reads_as_its_exit_status_and_a_garbled_one_never_as_a_code() {
    assert_eq!(exit_status_of(Some("Success"), None, None), 0);
    assert_eq!(exit_status_of(Some("Success"), Some("3"), None), 0);
    assert_eq!(exit_status_of(Some("Failure"), Some("3"), None), 3);
    assert_eq!(exit_status_of(Some("Failure"), Some("255"), None), 255);
    assert_eq!(exit_status_of(Some("Failure"), None, None), 127);
    assert_eq!(exit_status_of(None, None, None), 127);
    for garbled in ["0", "000", "abc", "", "1000", "-1", " 3", "+3", "3.0"] {
        assert_eq!(
            exit_status_of(Some("Failure"), Some(garbled), None),
            -1,
            "{garbled:?}"
        );
    }
    assert_eq!(
        StepEnd::of(exit_status_of(Some("Failure"), Some("300"), None)),
        StepEnd::Garbled
    );
}

#[test]
fn a_step_whose_runtime_found_no_shell_reads_as_never_run_and_no_other_error_does() {
    let containerd = "Internal error occurred: error executing command in container: failed to exec in container: failed to start exec \"x\": OCI runtime exec failed: exec failed: unable to start container process: exec: \"sh\": executable file not found in $PATH: unknown";
    let crun = "command error: executable file `sh` not found in $PATH: No such file or directory";
    for message in [containerd, crun] {
        assert_eq!(
            exit_status_of(Some("Failure"), None, Some(message)),
            SHELL_NOT_FOUND
        );
        assert_eq!(StepEnd::of(SHELL_NOT_FOUND), StepEnd::ShellNotFound);
        // An exit code said beside it is the code.
        assert_eq!(
            exit_status_of(Some("Failure"), Some("127"), Some(message)),
            127
        );
    }
    for other in [
        "exec: \"printf\": executable file not found in $PATH",
        "container not found",
        "",
    ] {
        assert_eq!(
            exit_status_of(Some("Failure"), None, Some(other)),
            127,
            "{other}"
        );
    }
}

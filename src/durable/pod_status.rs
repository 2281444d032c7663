//! The exit statuses the pod program gives of its own, written once: the
//! core reads a step's status with [`StepEnd::of`](super::StepEnd::of), and
//! the pod program gets the same numbers from [`shell_table`], which the
//! build writes into `pod/lib/table.sh` (a test fails when that file and
//! this table differ).

use crate::text::contains;

/// One status of the pod program's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PodStatus {
    /// Its name in the pod program (`$POD_<name>`).
    pub name: &'static str,
    /// The exit status.
    pub code: i64,
    /// What it means, as the table's comment says it.
    pub meaning: &'static str,
}

/// The container's environment sets a variable the program cannot keep
/// from the command.
pub const NAME_TAKEN: PodStatus = PodStatus {
    name: "NAME_TAKEN",
    code: 92,
    meaning: "the container's environment sets a variable named as one of the program's own (_K...), or, with bash as sh, SHELLOPTS, BASHOPTS or an exported function: nothing was claimed",
};
/// A relay could not write the command's output into its file.
pub const OUTPUT_NOT_KEPT: PodStatus = PodStatus {
    name: "OUTPUT_NOT_KEPT",
    code: 93,
    meaning: "a relay could not write the command's output into its file (a full disk, a file size limit): the output is incomplete",
};
/// What waits for the command ended without writing its code.
pub const WATCHER_GONE: PodStatus = PodStatus {
    name: "WATCHER_GONE",
    code: 94,
    meaning: "the process that waits for the command ended without writing its code: the code will never come",
};
/// The command is not a program.
pub const NOT_A_PROGRAM: PodStatus = PodStatus {
    name: "NOT_A_PROGRAM",
    code: 95,
    meaning: "the command is not a program on the container's PATH: nothing was claimed",
};
/// No folder for the run's files can be made.
pub const NO_FOLDER: PodStatus = PodStatus {
    name: "NO_FOLDER",
    code: 96,
    meaning:
        "the run's files cannot be made (no temp folder that takes writes): nothing was started",
};
/// The step broke, or what it sent does not add up.
pub const BROKE: PodStatus = PodStatus {
    name: "BROKE",
    code: 97,
    meaning: "the step broke (its stream was cut), the run is not done, or what was sent does not add up to the run's sizes",
};
/// The run has no record.
pub const NO_RECORD: PodStatus = PodStatus {
    name: "NO_RECORD",
    code: 98,
    meaning: "the run has no record (never claimed, or its files were removed before its end)",
};

/// Every status above, in order.
pub const POD_STATUSES: &[PodStatus] = &[
    NAME_TAKEN,
    OUTPUT_NOT_KEPT,
    WATCHER_GONE,
    NOT_A_PROGRAM,
    NO_FOLDER,
    BROKE,
    NO_RECORD,
];

/// The status of a missing utility: this plus its index in
/// [`UTILITIES`](super::UTILITIES).
pub const MISSING_UTILITY_FIRST: i64 = 200;

/// The statuses `sh` gives when it cannot run the script (126, 127), and
/// every status from a signal (128 and up, the missing utilities among
/// them): none can be taken for the command's code without asking.
pub const SHELL_AND_SIGNALS: (i64, i64) = (126, 255);

/// The status read from a step whose `V1Status` says the container's
/// runtime found no `sh` to run (an `InternalError` with no exit code): the
/// step never ran. No shell gives it (it is above 255).
pub const SHELL_NOT_FOUND: i64 = 1127;

/// The exit status a step's `V1Status` says: `status` is its `status`
/// field, `exit_code` the message of its `ExitCode` cause and `message` its
/// message, each as the host found it. A `Success` is 0; a `Failure` with
/// no such cause is [`SHELL_NOT_FOUND`] when its message says the runtime
/// found no `sh` (the step never ran), else a shell that could not run
/// (127); a cause that is not a number of up to three digits, or says 0 in
/// a `Failure`, is garbled on its way (-1, which
/// [`StepEnd::of`](super::StepEnd::of) reads so).
pub fn exit_status_of(status: Option<&str>, exit_code: Option<&str>, message: Option<&str>) -> i64 {
    if status == Some("Success") {
        return 0;
    }
    let Some(said) = exit_code else {
        return match message {
            Some(m) if says_no_shell(m) => SHELL_NOT_FOUND,
            _ => 127,
        };
    };
    let digits = !said.is_empty() && said.len() <= 3 && said.bytes().all(|b| b.is_ascii_digit());
    match said.parse::<i64>() {
        Ok(code) if digits && code != 0 => code,
        _ => -1,
    }
}

/// Whether a runtime's error says it found no `sh` to run, as containerd,
/// CRI-O and Docker put it (`exec: "sh": executable file not found in
/// $PATH`) or crun (``executable file `sh` not found in $PATH``). Every step
/// runs `sh`, so only that name counts.
fn says_no_shell(message: &str) -> bool {
    // (crate::text::contains: str::contains brings its searcher into the
    // .wasm.)
    contains(message, "exec: \"sh\": executable file not found")
        || contains(message, "executable file `sh` not found")
}

/// The ranges of statuses that may be ours rather than the command's, so
/// that a start's or an attach's is confirmed by a finish step.
pub fn not_surely_the_commands() -> Vec<(i64, i64)> {
    let first = POD_STATUSES.iter().map(|s| s.code).min().unwrap_or(0);
    let last = POD_STATUSES.iter().map(|s| s.code).max().unwrap_or(0);
    vec![(first, last), SHELL_AND_SIGNALS]
}

/// A `case` pattern of `sh` that matches the decimal numbers from `lo` to
/// `hi` (both at least 0), and no other: alternatives of digits and
/// bracket ranges (`12[6-9]|1[3-9][0-9]`).
pub fn decimal_pattern(lo: i64, hi: i64) -> String {
    let mut parts = Vec::new();
    pattern_parts(lo, hi, &mut parts);
    parts.join("|")
}

fn pattern_parts(lo: i64, hi: i64, parts: &mut Vec<String>) {
    if lo > hi {
        return;
    }
    let digits = |n: i64| n.to_string().len() as u32;
    if digits(lo) < digits(hi) {
        // Apart by length: up to the last number of `lo`'s length, and on.
        let next = 10_i64.pow(digits(lo));
        pattern_parts(lo, next - 1, parts);
        pattern_parts(next, hi, parts);
    } else if lo / 10 == hi / 10 {
        // Only the last digit differs.
        let head = if lo >= 10 {
            (lo / 10).to_string()
        } else {
            String::new()
        };
        let (a, b) = (lo % 10, hi % 10);
        parts.push(if a == b {
            format!("{head}{a}")
        } else {
            format!("{head}[{a}-{b}]")
        });
    } else if lo % 10 != 0 {
        // `lo` up to its ten's end, then whole tens.
        pattern_parts(lo, lo / 10 * 10 + 9, parts);
        pattern_parts(lo / 10 * 10 + 10, hi, parts);
    } else if hi % 10 != 9 {
        pattern_parts(lo, hi / 10 * 10 - 1, parts);
        pattern_parts(hi / 10 * 10, hi, parts);
    } else {
        // Whole tens: the tens' pattern, each with any last digit.
        let mut tens = Vec::new();
        pattern_parts(lo / 10, hi / 10, &mut tens);
        parts.extend(tens.into_iter().map(|t| format!("{t}[0-9]")));
    }
}

/// The pod program's `lib/table.sh`: each status as a constant the build
/// puts in place of its name, the utilities the start looks for, and the
/// test for a status that may be ours.
pub fn shell_table(utilities: &[&str]) -> String {
    let mut out = String::from(
        "# Generated from src/durable/pod_status.rs: the exit statuses of the pod\n\
         # program's own, and the utilities it needs. Do not edit: the build\n\
         # fails when this file and the core disagree (node scripts/build-pod.js\n\
         # --write makes it again).\n\
         # shellcheck shell=sh disable=SC2034\n",
    );
    for status in POD_STATUSES {
        out.push_str(&format!(
            "# {}\nPOD_{}={}\n",
            status.meaning, status.name, status.code
        ));
    }
    out.push_str(&format!(
        "# The utilities the steps use besides sh's builtins; a missing one is\n\
         # the start's status {MISSING_UTILITY_FIRST} + its place in this list.\n\
         POD_UTILITIES='{}'\nPOD_MISSING_UTILITY_FIRST={MISSING_UTILITY_FIRST}\n",
        utilities.join(" ")
    ));
    let pattern = not_surely_the_commands()
        .into_iter()
        .map(|(lo, hi)| decimal_pattern(lo, hi))
        .collect::<Vec<_>>()
        .join("|");
    out.push_str(&format!(
        "# Whether status $1 may be one of ours, or a shell's or a signal's, rather\n\
         # than the command's own code: the core confirms such a status with a\n\
         # finish step.\n\
         status_may_be_ours() {{\n\tcase \"$1\" in\n\t{pattern}) return 0 ;;\n\tesac\n\treturn 1\n}}\n"
    ));
    out
}

#[cfg(test)]
#[path = "pod_status_tests.rs"]
mod tests;

use super::*;
use crate::classify::ErrorFacts;
use crate::protocol::Level;
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

const SUM: &str = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
const OTHER: &str = "0000000000000000000000000000000000000000000000000000000000000000";

fn names(pod: &str) -> [String; 3] {
    ["ns".into(), pod.into(), "job".into()]
}

fn spec(direction: Direction) -> CopySpec {
    CopySpec::new(direction, names("job"), "/src/dir".into(), "/__w".into()).unwrap()
}

fn report(tar: i64, bytes: u64, sum: &str) -> String {
    format!("{REPORT_MARK} {tar} {bytes} sha256 {sum}\n")
}

/// A report checked with POSIX `cksum`.
fn cksum_report(tar: i64, bytes: u64, crc: u32) -> String {
    format!("{REPORT_MARK} {tar} {bytes} cksum {crc}\n")
}

const CRC: u32 = 3_015_617_425;

fn success() -> Option<ExecStatus> {
    Some(ExecStatus {
        status: "Success".into(),
        ..Default::default()
    })
}

/// An attempt into the pod where both sides agree and both tars ended well.
fn whole_in() -> Attempt {
    Attempt {
        runner_bytes: 10240,
        runner_sha256: SUM.into(),
        runner_cksum: CRC,
        runner_tar: Some(0),
        listing_whole: true,
        pod_out: report(0, 10240, SUM),
        status: success(),
        ..Default::default()
    }
}

/// The same out of the pod: the report on stderr after tar's own words.
fn whole_out() -> Attempt {
    Attempt {
        pod_out: String::new(),
        pod_err: format!("tar: removing leading /\n{}", report(0, 10240, SUM)),
        ..whole_in()
    }
}

#[test]
fn both_ways_the_same_bytes_with_both_tars_well_are_accepted() {
    let want = Verdict::Accept {
        bytes: 10240,
        sha256: SUM.into(),
    };
    assert_eq!(verdict(Direction::ToPod, &whole_in()), want);
    assert_eq!(verdict(Direction::FromPod, &whole_out()), want);
}

#[test]
fn a_report_on_the_other_stream_is_not_taken() {
    // Out of the pod, stdout is the archive: a report there is data.
    let mut a = whole_out();
    std::mem::swap(&mut a.pod_out, &mut a.pod_err);
    assert!(matches!(verdict(Direction::FromPod, &a), Verdict::Fail(_)));
    let mut a = whole_in();
    std::mem::swap(&mut a.pod_out, &mut a.pod_err);
    assert!(matches!(verdict(Direction::ToPod, &a), Verdict::Fail(_)));
}

#[test]
fn bytes_that_differ_in_count_or_in_hash_are_copied_again_whatever_the_tars_said() {
    for (bytes, sum) in [(10239, SUM), (10240, OTHER), (0, OTHER)] {
        for direction in [Direction::ToPod, Direction::FromPod] {
            let mut a = if direction == Direction::ToPod {
                whole_in()
            } else {
                whole_out()
            };
            a.runner_bytes = bytes;
            a.runner_sha256 = sum.into();
            // A tar that failed on a short archive changes nothing: the
            // bytes did not arrive, so another copy may.
            a.runner_tar = Some(2);
            match verdict(direction, &a) {
                Verdict::Again(why) => assert!(why.contains("were sent"), "{why}"),
                other => panic!("{direction:?} {bytes} {sum}: {other:?}"),
            }
        }
    }
}

#[test]
fn a_cut_stream_or_no_status_is_copied_again_never_accepted() {
    for reason in crate::durable::INCOMPLETE {
        let mut a = whole_in();
        a.status = Some(ExecStatus {
            status: "Failure".into(),
            reason: reason.to_string(),
            message: "cut".into(),
            exit_code: None,
        });
        assert!(
            matches!(verdict(Direction::ToPod, &a), Verdict::Again(_)),
            "{reason}"
        );
    }
    let mut a = whole_in();
    a.status = None;
    assert!(matches!(verdict(Direction::ToPod, &a), Verdict::Again(_)));
}

/// An open error's facts: an HTTP status, or a code.
fn open_error(status: Option<u16>, code: &str, message: &str) -> Option<ErrorFacts> {
    Some(ErrorFacts {
        status,
        codes: if code.is_empty() {
            vec![]
        } else {
            vec![code.into()]
        },
        message: message.into(),
        ..Default::default()
    })
}

#[test]
fn an_exec_that_could_not_be_opened_is_copied_again_when_it_may_pass_and_fails_when_it_will_not() {
    // A copy may run twice: a set-up that may have reached the pod (a
    // reset, a gateway's 502, a 403 while a token rotates) is copied again.
    for (status, code, message) in [
        (None, "ECONNRESET", "the set-up failed"),
        (None, "ECONNREFUSED", "the set-up failed"),
        (Some(502), "", "the set-up failed"),
        (Some(403), "", "the set-up failed"),
        // The `ws` client's words for an upgrade answered with a status.
        (
            None,
            "",
            "the set-up failed: Unexpected server response: 403",
        ),
    ] {
        let mut a = whole_in();
        a.open_error = open_error(status, code, message);
        match verdict(Direction::ToPod, &a) {
            Verdict::Again(why) => assert!(
                why.starts_with("its exec could not be opened (")
                    && why.contains("): the set-up failed"),
                "{why}"
            ),
            other => panic!("{status:?} {code}: {other:?}"),
        }
    }
    // No such pod: the same copy meets the same answer.
    let mut a = whole_in();
    a.open_error = open_error(None, "", "Unexpected server response: 404");
    assert!(matches!(verdict(Direction::ToPod, &a), Verdict::Fail(_)));
    let mut a = whole_in();
    a.open_error = open_error(Some(404), "", "pods \"job\" not found");
    assert_eq!(
        verdict(Direction::ToPod, &a),
        Verdict::Fail("its exec could not be opened: pods \"job\" not found".into())
    );
}

#[test]
fn a_packing_tar_that_saw_files_change_copies_again_any_other_failure_is_final() {
    let mut a = whole_in();
    a.runner_tar = Some(1);
    a.runner_tar_error = "tar: ./log: file changed as we read it".into();
    match verdict(Direction::ToPod, &a) {
        Verdict::Again(why) => assert!(
            why.contains("file changed as we read it") && why.contains("runner"),
            "{why}"
        ),
        other => panic!("{other:?}"),
    }
    a.runner_tar = Some(2);
    match verdict(Direction::ToPod, &a) {
        Verdict::Fail(why) => assert!(
            why.contains("tar could not pack in the runner (exited with 2)"),
            "{why}"
        ),
        other => panic!("{other:?}"),
    }
    a.runner_tar = None;
    assert!(matches!(verdict(Direction::ToPod, &a), Verdict::Fail(_)));
    // Out of the pod the packing tar is the pod's, its words before the report.
    let mut a = whole_out();
    a.pod_err = format!(
        "tar: x: file changed as we read it\n{}",
        report(1, 10240, SUM)
    );
    match verdict(Direction::FromPod, &a) {
        Verdict::Again(why) => assert!(
            why.contains("in the pod") && why.contains("x: file changed"),
            "{why}"
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_unpacking_tar_that_failed_on_whole_bytes_is_final_with_its_words() {
    let mut a = whole_in();
    a.pod_out = report(2, 10240, SUM);
    a.pod_err = "tar: /__w/x: Cannot open: No space left on device\n".into();
    match verdict(Direction::ToPod, &a) {
        Verdict::Fail(why) => assert!(
            why.contains("unpack in the pod (exited with 2)") && why.contains("No space left"),
            "{why}"
        ),
        other => panic!("{other:?}"),
    }
    let mut a = whole_out();
    a.runner_tar = Some(2);
    a.runner_tar_error = "tar: Cannot mkdir: Permission denied".into();
    match verdict(Direction::FromPod, &a) {
        Verdict::Fail(why) => assert!(
            why.contains("unpack in the runner") && why.contains("Permission denied"),
            "{why}"
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn no_report_fails_with_the_status_and_what_the_pod_said() {
    let mut a = whole_in();
    a.pod_out = String::new();
    a.pod_err = "sh: sha256sum: not found\n".into();
    a.status = Some(ExecStatus {
        status: "Failure".into(),
        reason: "NonZeroExitCode".into(),
        message: "command terminated: error executing command [sh -c <the whole script>]".into(),
        exit_code: Some("127".into()),
    });
    let Verdict::Fail(why) = verdict(Direction::ToPod, &a) else {
        panic!()
    };
    assert_eq!(
        why,
        "the pod did not report the bytes it got (its script exited with 127): sh: sha256sum: not found"
    );
    // A status with no exit code (a Failure of another kind) says its status.
    a.status = Some(ExecStatus {
        status: "Failure".into(),
        ..Default::default()
    });
    let Verdict::Fail(why) = verdict(Direction::ToPod, &a) else {
        panic!()
    };
    assert!(why.contains("(its status was Failure)"), "{why}");
}

#[test]
fn a_report_line_is_read_whole_or_not_at_all() {
    let good = report(0, 5, SUM);
    assert_eq!(
        Report::find(&good),
        Some((
            Report {
                tar: 0,
                bytes: 5,
                check: Check::Sha256(SUM.into())
            },
            ""
        ))
    );
    assert_eq!(
        Report::find(&format!("a\nb\n{good}")).map(|r| r.1),
        Some("a\nb\n")
    );
    for bad in [
        good.trim_end().to_string(),            // no newline: cut before the end
        format!("{good}more\n"),                // something after it
        good.replace(SUM, &SUM[..63]),          // a short hash
        good.replace(SUM, &SUM.to_uppercase()), // not ours
        good.replace(" 5 ", " -5 "),
        good.replace(" 5 ", "  5 "),
        good.replace(" 5 ", " 99999999999999999999 "),
        format!("{} extra\n", good.trim_end()),
        good.replace(REPORT_MARK, "other"),
        good.replace(" sha256 ", " md5 "),
        good.replace(" sha256 ", " "),
        cksum_report(0, 5, 1).replace(" 1\n", " 4294967296\n"), // not a CRC-32
        cksum_report(0, 5, 1).replace(" 1\n", " -1\n"),
        cksum_report(0, 5, 1).replace(" 1\n", " 1 2\n"),
        String::new(),
    ] {
        assert_eq!(Report::find(&bad), None, "{bad:?}");
    }
}

#[test]
fn a_long_tar_message_is_cut_at_a_character_not_in_one() {
    let mut a = whole_in();
    a.runner_tar = Some(2);
    a.runner_tar_error = "é".repeat(1000);
    let Verdict::Fail(why) = verdict(Direction::ToPod, &a) else {
        panic!()
    };
    assert!(why.len() < 700 && why.contains("...é"), "{}", why.len());
}

fn run_to_end(direction: Direction, attempts: &[Attempt]) -> (Vec<CopyAction>, u64) {
    run_removing(direction, attempts, &[])
}

fn run_removing(
    direction: Direction,
    attempts: &[Attempt],
    removals: &[Removal],
) -> (Vec<CopyAction>, u64) {
    let mut run = CopyRun::new(spec(direction));
    let mut now = 1_000;
    let mut actions = Vec::new();
    let mut given = 0;
    let mut removed = 0;
    for _ in 0..100 {
        let action = run.poll(now);
        actions.push(action.clone());
        match action {
            CopyAction::Copy { .. } => {
                run.on_attempt(now, &attempts[given]);
                given += 1;
            }
            CopyAction::Remove { .. } => {
                run.on_removed(now, &removals[removed]);
                removed += 1;
            }
            CopyAction::Wait { until_ms } => now = until_ms.expect("a copy waits for a time"),
            CopyAction::Done { .. } => return (actions, now),
            CopyAction::Log { .. } => {}
        }
    }
    panic!("no end: {actions:?}");
}

fn logs(actions: &[CopyAction]) -> Vec<(Level, String)> {
    actions
        .iter()
        .filter_map(|a| match a {
            CopyAction::Log { level, message } => Some((*level, message.clone())),
            _ => None,
        })
        .collect()
}

/// How many attempts the run asked for.
fn copies(actions: &[CopyAction]) -> usize {
    actions
        .iter()
        .filter(|a| matches!(a, CopyAction::Copy { .. }))
        .count()
}

fn removes(actions: &[CopyAction]) -> Vec<&CopyAction> {
    actions
        .iter()
        .filter(|a| matches!(a, CopyAction::Remove { .. }))
        .collect()
}

/// An attempt that was cut after the runner's tar listed `listing`.
fn cut_listing(listing: &str) -> Attempt {
    Attempt {
        status: None,
        listing: listing.as_bytes().to_vec(),
        listing_whole: true,
        ..whole_in()
    }
}

fn listed(attempt: Attempt, listing: &str) -> Attempt {
    Attempt {
        listing: listing.as_bytes().to_vec(),
        listing_whole: true,
        ..attempt
    }
}

fn removed_in_pod() -> Removal {
    Removal {
        out: format!("{REMOVED_MARK}\n"),
        status: success(),
        ..Default::default()
    }
}

#[test]
fn what_a_cut_attempt_may_have_written_is_removed_before_the_next_attempt_deepest_first() {
    let mut cut = cut_listing(
        "block 0: ./\nblock 1: ./gone/\nblock 2: ./gone/half\nblock 3: ./new\\nline\nblock 4: ./back\\\\slash\nblock 900: ./never-sent\nblock 5: ./partly",
    );
    cut.runner_bytes = 900 * 512;
    let (actions, now) = run_removing(
        Direction::ToPod,
        &[cut, listed(whole_in(), "block 0: ./\nblock 1: ./a\n")],
        &[removed_in_pod()],
    );
    let order: Vec<&str> = actions
        .iter()
        .filter_map(|a| match a {
            CopyAction::Copy { .. } => Some("copy"),
            CopyAction::Remove { .. } => Some("remove"),
            _ => None,
        })
        .collect();
    assert_eq!(order, ["copy", "remove", "copy"]);
    assert_eq!(
        removes(&actions),
        vec![&CopyAction::Remove {
            place: Place::Pod,
            args: vec!["/__w".into()],
            input: b"new\\nline\ngone/half\ngone\nback\\\\slash\n/\n".to_vec(),
        }]
    );
    assert_eq!(
        now,
        1_000 + WAITS_MS[0],
        "the removal is made after the wait, the attempt at once after it"
    );
    let o = outcome(&actions);
    assert!(o.ok && o.attempts == 2, "{o:?}");
    let said = logs(&actions);
    assert!(
        said.iter().any(|(level, m)| *level == Level::Info
            && m.contains(
                "removed the 4 name(s) attempt 1 may have written in /__w, before attempt 2"
            )),
        "{said:?}"
    );
}

#[test]
fn nothing_is_removed_for_a_healthy_copy_or_when_nothing_was_written() {
    let (actions, _) = run_to_end(
        Direction::ToPod,
        &[listed(whole_in(), "block 0: a\nblock 1: b\n")],
    );
    assert!(removes(&actions).is_empty());
    // Refused before anything was sent: its tar's listing reached nothing.
    let mut refused = cut_listing("block 0: ./\nblock 1: ./a\n");
    refused.runner_bytes = 0;
    let (actions, _) = run_to_end(
        Direction::ToPod,
        &[refused, listed(whole_in(), "block 1: a\n")],
    );
    assert!(removes(&actions).is_empty());
    assert!(outcome(&actions).ok);
    // An exec that could not be opened: its tar packed for nothing.
    let mut refused = cut_listing("block 0: ./\nblock 1: ./a\n");
    refused.open_error = open_error(Some(503), "", "Unexpected server response: 503");
    let (actions, _) = run_to_end(
        Direction::ToPod,
        &[refused, listed(whole_in(), "block 1: a\n")],
    );
    assert!(removes(&actions).is_empty());
    assert!(outcome(&actions).ok);
}

#[test]
fn out_of_the_pod_what_a_cut_attempt_unpacked_is_removed_on_the_runner() {
    let removed = Removal {
        out: format!("{REMOVED_MARK}\n"),
        exit_code: Some(0),
        ..Default::default()
    };
    // Out of the pod the runner's tar unpacked it: every name it listed
    // counts, whatever the count.
    let mut cut = cut_listing("block 1: dir/\nblock 3000: dir/half\n");
    cut.runner_bytes = 10;
    let (actions, _) = run_removing(
        Direction::FromPod,
        &[cut, listed(whole_out(), "dir/\n")],
        &[removed],
    );
    match removes(&actions)[..] {
        [CopyAction::Remove {
            place: Place::Runner,
            input,
            ..
        }] => assert_eq!(input, b"dir/half\ndir\n/\n"),
        ref other => panic!("{other:?}"),
    }
    assert!(outcome(&actions).ok);
}

#[test]
fn a_removal_whose_stream_is_cut_is_made_again_after_a_wait() {
    let cut = Removal::default();
    let (actions, now) = run_removing(
        Direction::ToPod,
        &[cut_listing("block 0: gone\n"), listed(whole_in(), "")],
        &[cut, removed_in_pod()],
    );
    assert_eq!(removes(&actions).len(), 2);
    assert_eq!(now, 1_000 + WAITS_MS[0] + WAITS_MS[0]);
    assert!(outcome(&actions).ok);
    assert!(logs(&actions)
        .iter()
        .any(|(l, m)| *l == Level::Warning && m.contains("were not removed (try 1 of 5)")));
}

#[test]
fn a_removal_that_fails_or_does_not_read_every_name_fails_the_copy_saying_so_with_no_more_attempts()
{
    let failed = Removal {
        out: format!("{REMOVED_MARK}\n"),
        err: "rm: cannot remove 'gone': Permission denied".into(),
        status: Some(ExecStatus {
            status: "Failure".into(),
            reason: "NonZeroExitCode".into(),
            exit_code: Some("1".into()),
            ..Default::default()
        }),
        ..Default::default()
    };
    let short = Removal {
        status: success(),
        ..Default::default()
    };
    for (removal, why) in [
        (
            failed,
            "some could not be removed: rm: cannot remove 'gone': Permission denied",
        ),
        (
            short,
            "the script did not read them all: (nothing on stderr)",
        ),
    ] {
        let (actions, _) = run_removing(
            Direction::ToPod,
            &[cut_listing("block 0: gone\n")],
            &[removal],
        );
        assert_eq!(copies(&actions), 1);
        let o = outcome(&actions);
        assert!(!o.ok);
        assert_eq!(o.attempts, 1);
        assert!(
            o.message.contains("failed: it did not arrive whole (its stream ended with no status), and the 1 name(s) attempt 1 may have written in /__w could not be removed: ")
                && o.message.contains(why),
            "{}",
            o.message
        );
    }
}

#[test]
fn a_listing_that_is_not_whole_is_said_with_a_warning() {
    let mut cut = cut_listing("block 0: a\n");
    cut.listing_whole = false;
    let (actions, _) = run_removing(
        Direction::ToPod,
        &[cut, listed(whole_in(), "block 0: a\n")],
        &[removed_in_pod()],
    );
    assert!(outcome(&actions).ok);
    assert!(logs(&actions).iter().any(|(l, m)| *l == Level::Warning
        && m.contains("so its list of what attempt 1 may have written in /__w is not whole")));
}

fn outcome(actions: &[CopyAction]) -> &CopyOutcome {
    match actions.last() {
        Some(CopyAction::Done { outcome }) => outcome,
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_healthy_copy_is_one_attempt_with_nothing_said() {
    let (actions, now) = run_to_end(Direction::ToPod, &[whole_in()]);
    assert_eq!(
        actions[0],
        CopyAction::Copy {
            attempt: 1,
            args: vec!["/__w".into()]
        }
    );
    assert_eq!(actions.len(), 2, "{actions:?}");
    assert_eq!(now, 1_000);
    assert_eq!(
        outcome(&actions),
        &CopyOutcome {
            ok: true,
            attempts: 1,
            bytes: 10240,
            sha256: SUM.into(),
            message: String::new()
        }
    );
}

#[test]
fn a_cut_then_a_whole_copy_waits_then_succeeds_with_a_warning_and_a_line() {
    let mut cut = whole_in();
    cut.status = None;
    let (actions, now) = run_to_end(Direction::ToPod, &[cut, whole_in()]);
    assert_eq!(now, 1_000 + WAITS_MS[0]);
    let logs: Vec<_> = actions
        .iter()
        .filter_map(|a| match a {
            CopyAction::Log { level, message } => Some((*level, message.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(logs.len(), 2, "{logs:?}");
    assert_eq!(logs[0].0, Level::Warning);
    assert!(
        logs[0].1.contains(
            "copy of /src/dir into pod job at /__w did not arrive whole (attempt 1 of 5)"
        ),
        "{}",
        logs[0].1
    );
    assert_eq!(logs[1].0, Level::Info);
    assert!(outcome(&actions).ok);
    assert_eq!(outcome(&actions).attempts, 2);
}

#[test]
fn copies_that_never_arrive_whole_end_after_every_attempt_as_a_failure_never_accepted() {
    let mut bad = whole_in();
    bad.runner_sha256 = OTHER.into();
    let (actions, now) = run_to_end(Direction::ToPod, &vec![bad; ATTEMPTS as usize]);
    let o = outcome(&actions);
    assert!(!o.ok);
    assert_eq!(o.attempts, ATTEMPTS);
    assert!(
        o.message.contains("did not arrive whole in 5 attempts")
            && o.message.contains("other bytes in their place"),
        "{}",
        o.message
    );
    assert_eq!(now, 1_000 + WAITS_MS.iter().sum::<u64>());
    assert_eq!(copies(&actions), ATTEMPTS as usize);
}

#[test]
fn a_final_failure_makes_no_second_attempt() {
    let mut a = whole_in();
    a.open_error = open_error(Some(404), "", "not found");
    let (actions, _) = run_to_end(Direction::FromPod, &[a]);
    assert_eq!(copies(&actions), 1);
    let o = outcome(&actions);
    assert!(!o.ok);
    assert_eq!(o.message, "k8s-auth-preflight: the copy of /src/dir out of pod job into /__w failed: its exec could not be opened: not found");
}

#[test]
fn a_report_out_of_turn_is_ignored() {
    let mut run = CopyRun::new(spec(Direction::ToPod));
    run.on_attempt(0, &whole_in());
    assert!(matches!(run.poll(0), CopyAction::Copy { attempt: 1, .. }));
}

#[test]
fn pod_folders_copied_out_are_split_as_tar_needs_them() {
    let parts = |from: &str| {
        CopySpec::new(Direction::FromPod, names("p"), from.into(), "/r".into())
            .map(|s| s.pod_args())
    };
    assert_eq!(
        parts("/__w/_temp/_runner_file_commands"),
        Ok(vec!["/__w/_temp".into(), "_runner_file_commands".into()])
    );
    assert_eq!(parts("/__w/"), Ok(vec!["/".into(), "__w".into()]));
    assert_eq!(parts("x"), Ok(vec![".".into(), "x".into()]));
    assert_eq!(parts("a b/c\nd"), Ok(vec!["a b".into(), "c\nd".into()]));
    for bad in ["/", "//", "/x/..", ".", "/x/."] {
        assert_eq!(
            parts(bad),
            Err(BadSpec {
                field: "from",
                problem: "names no folder (it is / or ends in . or ..)"
            }),
            "{bad}"
        );
    }
}

#[test]
fn empty_or_nul_paths_are_refused_by_name() {
    let new = |pod: &str, from: &str, to: &str| {
        CopySpec::new(Direction::ToPod, names(pod), from.into(), to.into())
            .map_err(|e| e.to_string())
    };
    assert_eq!(new("", "/a", "/b"), Err("pod is empty".into()));
    assert_eq!(new("p", "", "/b"), Err("from is empty".into()));
    assert_eq!(new("p", "/a", "/b\0c"), Err("to holds a NUL byte".into()));
    assert!(new("p", "/a", "/b").is_ok());
    let no_container = CopySpec::new(
        Direction::ToPod,
        ["ns".into(), "p".into(), String::new()],
        "/a".into(),
        "/b".into(),
    );
    assert_eq!(
        no_container.map_err(|e| e.to_string()),
        Err("container is empty".into())
    );
}

#[test]
fn a_pod_that_checked_with_cksum_is_compared_with_the_runners_crc_both_ways() {
    let mut a = whole_in();
    a.pod_out = cksum_report(0, 10240, CRC);
    let want = Verdict::Accept {
        bytes: 10240,
        sha256: SUM.into(),
    };
    assert_eq!(verdict(Direction::ToPod, &a), want);
    assert_eq!(
        Report::find(&cksum_report(0, 10240, CRC)).map(|r| r.0.check),
        Some(Check::Cksum(CRC))
    );
    // The runner's SHA-256 does not matter to a pod that sent a CRC.
    a.runner_sha256 = OTHER.into();
    assert!(matches!(
        verdict(Direction::ToPod, &a),
        Verdict::Accept { .. }
    ));
    a.runner_cksum = CRC + 1;
    match verdict(Direction::ToPod, &a) {
        Verdict::Again(why) => assert!(why.contains("other bytes in their place"), "{why}"),
        other => panic!("{other:?}"),
    }
    let mut a = whole_out();
    a.pod_err = format!("tar: removing leading /\n{}", cksum_report(0, 10240, CRC));
    assert_eq!(verdict(Direction::FromPod, &a), want);
    a.runner_bytes = 10239;
    match verdict(Direction::FromPod, &a) {
        Verdict::Again(why) => assert!(
            why.contains("10240 bytes were sent and 10239 arrived, a different count"),
            "{why}"
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_copy_into_the_pod_cut_on_a_stream_before_v5_fails_at_once_naming_the_protocol() {
    let mut a = whole_in();
    a.status = None;
    a.pod_out = String::new();
    a.protocol = Some("v4.channel.k8s.io".into());
    match verdict(Direction::ToPod, &a) {
        Verdict::Fail(why) => assert_eq!(why, "the apiserver chose v4.channel.k8s.io for its exec, where the end of the archive closes the stream, so no report can come back; a copy into a pod needs v5.channel.k8s.io (Kubernetes 1.30 and later)"),
        other => panic!("{other:?}"),
    }
    // On v5, or when the client did not say, a cut is copied again; out of
    // the pod no stdin is sent, and v4 does.
    for (direction, protocol) in [
        (Direction::ToPod, Some("v5.channel.k8s.io")),
        (Direction::ToPod, None),
        (Direction::FromPod, Some("v4.channel.k8s.io")),
    ] {
        a.protocol = protocol.map(String::from);
        assert!(
            matches!(verdict(direction, &a), Verdict::Again(_)),
            "{direction:?} {protocol:?}"
        );
    }
    // A whole copy on v4 (a client that sent no end) is not refused.
    let mut whole = whole_in();
    whole.protocol = Some("v4.channel.k8s.io".into());
    assert!(matches!(
        verdict(Direction::ToPod, &whole),
        Verdict::Accept { .. }
    ));
}

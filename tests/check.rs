//! The one machine per check (`Check`): every file action, lock step and
//! request of a hook step, driven against an in-memory world (files with
//! modification times, processes that run or not, an apiserver that
//! answers at once). The world does what the shim does, and nothing more:
//! each test reads the actions the machine asked for.

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

use k8s_auth_preflight::check::{
    Check, CheckAction, CheckInput, Fact, FactError, Level, ProcessFacts, RecordRead,
};
use k8s_auth_preflight::config::EnvValue;
use k8s_auth_preflight::credential::{CredentialFile, FileRead, UserFacts};
use k8s_auth_preflight::environment::Environment;
use k8s_auth_preflight::preflight::Request;
use k8s_auth_preflight::{ErrorFacts, Outcome, ProbeResult, Source, Verdict};

mod world;

use world::*;

const T0: u64 = 1_792_548_926_000;
const TOKEN: &[u8] = b"check-machine-test-token";
const HOST: &str = "runner-1";

struct Trace {
    actions: Vec<CheckAction>,
    outcome: Outcome,
    logs: Vec<(Level, String)>,
    requests: usize,
    done_at: u64,
}

impl Trace {
    fn count(&self, f: impl Fn(&CheckAction) -> bool) -> usize {
        self.actions.iter().filter(|a| f(a)).count()
    }
    /// The warnings that say the verdict will not be cached.
    fn uncached_warnings(&self) -> Vec<&str> {
        let uncached = |w: &&str| w.contains("will not be cached");
        self.warnings().into_iter().filter(uncached).collect()
    }

    fn warnings(&self) -> Vec<&str> {
        self.logs
            .iter()
            .filter(|(l, _)| *l == Level::Warning)
            .map(|(_, m)| m.as_str())
            .collect()
    }
}

fn env(extra: &[(&'static str, &'static str)]) -> Vec<(&'static str, EnvValue<'static>)> {
    let mut env = vec![
        ("HOME", EnvValue::Text("/home/runner")),
        ("RUNNER_TEMP", EnvValue::Text("/rt")),
        ("ACTIONS_RUNNER_PREFLIGHT_SEED", EnvValue::Text("5")),
        (
            "ACTIONS_RUNNER_PREFLIGHT_RULES_REVIEW",
            EnvValue::Text("off"),
        ),
    ];
    for (k, v) in extra {
        env.retain(|(name, _)| name != k);
        env.push((k, EnvValue::Text(v)));
    }
    env
}

fn new_check(env: &[(&str, EnvValue<'_>)], pid: u32, now: u64) -> Check {
    let user = UserFacts::token(std::str::from_utf8(TOKEN).unwrap());
    new_check_of(env, &user, pid, now)
}

fn new_check_of(env: &[(&str, EnvValue<'_>)], user: &UserFacts, pid: u32, now: u64) -> Check {
    let permissions = k8s_auth_preflight::permission::runner_hooks_permissions();
    Check::new(
        CheckInput {
            environment: &Environment::read(env),
            permissions: &permissions,
            namespace: "ci",
            user,
            cache_dir: None,
            process: ProcessFacts {
                pid,
                host: HOST.into(),
            },
        },
        now,
    )
    .unwrap()
}

fn answer(world: &World, request: &Request, now: u64) -> ProbeResult {
    if let Api::RefuseUntil(t) = world.api {
        if now < t {
            return ProbeResult::Failed {
                facts: ErrorFacts {
                    codes: vec!["ECONNREFUSED".into()],
                    message: "connect ECONNREFUSED".into(),
                    ..Default::default()
                },
            };
        }
    }
    if let Api::BadHeader = world.api {
        return ProbeResult::Failed {
            facts: ErrorFacts {
                codes: vec!["ERR_INVALID_CHAR".into()],
                message: "Invalid character in header content [\"authorization\"]".into(),
                ..Default::default()
            },
        };
    }
    let allowed = match (world.api, request) {
        (Api::Deny(verb), Request::AccessReview(r)) => r.spec.resource_attributes.verb != verb,
        _ => true,
    };
    ProbeResult::Reviewed {
        allowed,
        reason: None,
    }
}

/// Runs `check` to its end: file actions at once, requests answered 10 ms
/// later, waits slept. `between` runs at each wait (another process's move).
fn run(
    world: &mut World,
    check: &mut Check,
    start: u64,
    mut between: impl FnMut(&mut World, u64),
) -> Trace {
    let mut now = start;
    let mut actions = Vec::new();
    let mut logs = Vec::new();
    let mut answers: Vec<(u64, usize, u32, ProbeResult)> = Vec::new();
    let mut requests = 0;
    for _ in 0..100_000 {
        let action = check.poll(now);
        actions.push(action.clone());
        match &action {
            CheckAction::Done { outcome } => {
                return Trace {
                    actions,
                    outcome: outcome.clone(),
                    logs,
                    requests,
                    done_at: now,
                }
            }
            CheckAction::Log { level, message } => logs.push((*level, message.clone())),
            CheckAction::Send {
                probe,
                attempt,
                request,
                ..
            } => {
                requests += 1;
                answers.push((now + 10, *probe, *attempt, answer(world, request, now)));
            }
            CheckAction::Wait { until_ms } => {
                answers.sort_by_key(|a| a.0);
                let next = answers
                    .first()
                    .map(|a| a.0)
                    .unwrap_or(u64::MAX)
                    .min(*until_ms);
                now = now.max(next);
                between(world, now);
                while answers.first().is_some_and(|a| a.0 <= now) {
                    let (_, probe, attempt, result) = answers.remove(0);
                    check
                        .on_fact(
                            now,
                            Fact::Response {
                                probe,
                                attempt,
                                result,
                            },
                        )
                        .unwrap();
                }
            }
            file_action => {
                let fact = perform(world, file_action, now).expect("a file action owes a fact");
                check.on_fact(now, fact).unwrap();
            }
        }
    }
    panic!("the check never ended");
}

fn is_lock_action(a: &CheckAction) -> bool {
    matches!(
        a,
        CheckAction::CreateLock { .. }
            | CheckAction::InspectLock { .. }
            | CheckAction::ProbeProcess { .. }
    ) || matches!(a, CheckAction::RemoveFile { file } if file.ends_with(".lock"))
}

#[test]
fn a_cold_step_creates_the_key_takes_the_lock_asks_writes_and_releases() {
    let mut world = World::new();
    let env = env(&[]);
    let mut check = new_check(&env, 100, T0);
    let trace = run(&mut world, &mut check, T0, |_, _| {});
    assert_eq!(trace.outcome.verdict, Verdict::Allowed);
    assert_eq!(trace.outcome.source, Some(Source::Reviews));
    assert_eq!(trace.requests, 13);
    // The first two actions are the two reads, asked together.
    assert!(matches!(trace.actions[0], CheckAction::ReadKeyFile { .. }));
    assert!(matches!(trace.actions[1], CheckAction::ReadRecord { .. }));
    assert_eq!(
        trace.count(|a| matches!(a, CheckAction::CreateKeyFile { .. })),
        1
    );
    assert_eq!(
        trace.count(|a| matches!(a, CheckAction::CreateLock { .. })),
        1
    );
    // Read once before the turn and once after the lock is ours.
    assert_eq!(
        trace.count(|a| matches!(a, CheckAction::ReadRecord { .. })),
        2
    );
    let order: Vec<usize> = [
        |a: &CheckAction| matches!(a, CheckAction::CreateLock { .. }),
        |a: &CheckAction| matches!(a, CheckAction::Send { .. }),
        |a: &CheckAction| matches!(a, CheckAction::WriteRecord { .. }),
        |a: &CheckAction| matches!(a, CheckAction::RemoveFile { .. }),
    ]
    .iter()
    .map(|f| trace.actions.iter().position(f).unwrap())
    .collect();
    assert!(
        order.windows(2).all(|w| w[0] < w[1]),
        "lock, send, write, release: {order:?}"
    );
    assert!(
        trace.uncached_warnings().is_empty(),
        "{:?}",
        trace.warnings()
    );
    // The lock is gone, the record and the key are there.
    let names: Vec<&String> = world.files.keys().collect();
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(names
        .iter()
        .any(|n| n.starts_with("/rt/k8s-auth-preflight-")));
    assert!(names
        .iter()
        .any(|n| *n == "/home/runner/.k8s-auth-preflight/runner-key"));
}

#[test]
fn a_warm_step_reads_two_files_and_is_done() {
    let mut world = World::new();
    let env = env(&[]);
    let first = run(&mut world, &mut new_check(&env, 100, T0), T0, |_, _| {});
    let later = first.done_at + 1_000;
    let trace = run(
        &mut world,
        &mut new_check(&env, 101, later),
        later,
        |_, _| {},
    );
    assert_eq!(trace.outcome.source, Some(Source::Cache));
    assert_eq!(trace.requests, 0);
    let file_actions: Vec<&CheckAction> = trace
        .actions
        .iter()
        .filter(|a| {
            !matches!(
                a,
                CheckAction::Log { .. } | CheckAction::Wait { .. } | CheckAction::Done { .. }
            )
        })
        .collect();
    assert_eq!(file_actions.len(), 2, "{file_actions:?}");
    assert_eq!(trace.count(is_lock_action), 0);
}

#[test]
fn a_denial_deletes_the_record_and_prints_one_error_naming_the_verb() {
    let mut world = World::new();
    let env = env(&[]);
    run(&mut world, &mut new_check(&env, 100, T0), T0, |_, _| {});
    // Stale now (past the TTL), so the API is asked again, and denies.
    world.api = Api::Deny("create");
    let later = T0 + 10 * 3_600_000;
    let trace = run(
        &mut world,
        &mut new_check(&env, 101, later),
        later,
        |_, _| {},
    );
    assert_eq!(trace.outcome.verdict, Verdict::Denied);
    assert_eq!(
        trace.count(|a| matches!(a, CheckAction::DeleteRecord { .. })),
        1
    );
    assert_eq!(
        trace.count(|a| matches!(a, CheckAction::WriteRecord { .. })),
        0
    );
    let errors: Vec<&String> = trace
        .logs
        .iter()
        .filter(|(l, _)| *l == Level::Error)
        .map(|(_, m)| m)
        .collect();
    assert_eq!(errors.len(), 1);
    assert!(errors[0].contains("create"), "{}", errors[0]);
    assert!(
        !world
            .files
            .keys()
            .any(|f| f.contains("k8s-auth-preflight-")),
        "record deleted"
    );
}

#[test]
fn a_step_waiting_on_a_live_holder_uses_the_record_it_writes_and_asks_nothing() {
    let mut world = World::new();
    let env = env(&[]);
    // Another process of this host takes the lock first and is running.
    let mut leader = new_check(&env, 200, T0);
    // Run the leader up to its first request: it holds the lock then.
    let mut now = T0;
    loop {
        let action = leader.poll(now);
        if matches!(action, CheckAction::Send { .. }) {
            break;
        }
        if let Some(fact) = perform(&mut world, &action, now) {
            leader.on_fact(now, fact).unwrap();
        }
        if let CheckAction::Wait { until_ms } = action {
            now = until_ms;
        }
    }
    world.running.insert(200);
    assert!(world.files.keys().any(|f| f.ends_with(".lock")));
    // The leader's record, made by a whole run in a copy of the world.
    let mut other = World::new();
    let record_run = run(&mut other, &mut new_check(&env, 300, T0), T0, |_, _| {});
    let record = other
        .files
        .iter()
        .find(|(f, _)| f.starts_with("/rt/k8s"))
        .map(|(f, v)| (f.clone(), v.clone()))
        .unwrap();
    let key = other
        .files
        .iter()
        .find(|(f, _)| f.contains("runner-key"))
        .map(|(f, v)| (f.clone(), v.clone()))
        .unwrap();
    world.files.insert(key.0, key.1);
    let written_at = record_run.done_at + 400;
    let mut follower = new_check(&env, 201, T0 + 5);
    let trace = run(&mut world, &mut follower, T0 + 5, |w, at| {
        if at >= written_at && !w.files.contains_key(&record.0) {
            w.files.insert(record.0.clone(), (record.1 .0.clone(), at));
        }
    });
    assert_eq!(trace.outcome.verdict, Verdict::Allowed);
    assert_eq!(trace.requests, 0, "the follower asked nothing");
    assert!(trace.count(|a| matches!(a, CheckAction::ProbeProcess { pid: 200 })) >= 1);
    assert_eq!(
        trace.count(|a| matches!(a, CheckAction::RemoveFile { .. })),
        0,
        "a live holder's lock is left alone"
    );
}

#[test]
fn a_dead_holders_lock_is_removed_and_taken_over() {
    let mut world = World::new();
    world.files.insert("/rt/x".into(), (vec![], T0)); // the folder exists
    let env = env(&[]);
    let mut probe = new_check(&env, 1, T0);
    let lock = format!("{}.lock", probe.record_file().unwrap());
    let _ = probe.poll(T0);
    world.files.insert(
        lock.clone(),
        (b"77 runner-1 0123456789abcdef\n".to_vec(), T0 - 1_000),
    );
    let trace = run(&mut world, &mut new_check(&env, 100, T0), T0, |_, _| {});
    assert_eq!(trace.outcome.verdict, Verdict::Allowed);
    assert!(trace
        .actions
        .contains(&CheckAction::ProbeProcess { pid: 77 }));
    assert!(trace
        .actions
        .contains(&CheckAction::RemoveFile { file: lock.clone() }));
    assert_eq!(
        trace.count(|a| matches!(a, CheckAction::CreateLock { .. })),
        2
    );
    assert!(!world.files.contains_key(&lock), "released at the end");
}

#[test]
fn a_lock_that_keeps_vanishing_counts_as_held_after_three_tries() {
    let mut world = World::new();
    world.vanishing_lock = 3;
    let env = env(&[]);
    let trace = run(&mut world, &mut new_check(&env, 100, T0), T0, |_, _| {});
    assert_eq!(trace.outcome.verdict, Verdict::Allowed);
    // Three failed links, a look after each, then a wait, then the lock.
    assert_eq!(
        trace.count(|a| matches!(a, CheckAction::InspectLock { .. })),
        3 + 1
    );
    assert_eq!(
        trace.count(|a| matches!(a, CheckAction::CreateLock { .. })),
        4
    );
    let first_wait = trace
        .actions
        .iter()
        .position(|a| matches!(a, CheckAction::Wait { until_ms } if *until_ms > T0));
    let third_look = trace
        .actions
        .iter()
        .enumerate()
        .filter(|(_, a)| matches!(a, CheckAction::InspectLock { .. }))
        .nth(2)
        .unwrap()
        .0;
    assert!(
        first_wait.unwrap() > third_look,
        "waited a look only after the third try"
    );
}

#[test]
fn a_lock_that_is_no_longer_ours_is_not_removed() {
    let mut world = World::new();
    world.steal_lock_at_release = true;
    let env = env(&[]);
    let trace = run(&mut world, &mut new_check(&env, 100, T0), T0, |_, _| {});
    assert_eq!(trace.outcome.verdict, Verdict::Allowed);
    assert_eq!(
        trace.count(|a| matches!(a, CheckAction::RemoveFile { .. })),
        0
    );
    assert!(
        world.files.keys().any(|f| f.ends_with(".lock")),
        "the other process's lock stays"
    );
}

#[test]
fn single_flight_off_means_no_lock_and_one_read() {
    let mut world = World::new();
    let env = env(&[("ACTIONS_RUNNER_PREFLIGHT_SINGLE_FLIGHT", "off")]);
    let trace = run(&mut world, &mut new_check(&env, 100, T0), T0, |_, _| {});
    assert_eq!(trace.outcome.verdict, Verdict::Allowed);
    assert_eq!(trace.count(is_lock_action), 0);
    assert_eq!(
        trace.count(|a| matches!(a, CheckAction::ReadRecord { .. })),
        1
    );
    assert_eq!(
        trace.count(|a| matches!(a, CheckAction::WriteRecord { .. })),
        1
    );
}

#[test]
fn without_a_folder_no_file_is_touched_and_one_warning_says_why() {
    let mut world = World::new();
    let mut env = env(&[]);
    env.retain(|(k, _)| *k != "RUNNER_TEMP");
    let trace = run(&mut world, &mut new_check(&env, 100, T0), T0, |_, _| {});
    assert_eq!(trace.outcome.verdict, Verdict::Allowed);
    assert!(world.files.is_empty());
    assert_eq!(
        trace.warnings(),
        vec!["RUNNER_TEMP is not set: the verdict will not be cached for later steps"]
    );
    assert_eq!(
        trace.count(|a| !matches!(
            a,
            CheckAction::Send { .. }
                | CheckAction::Log { .. }
                | CheckAction::Wait { .. }
                | CheckAction::Done { .. }
        )),
        0
    );
}

#[test]
fn warnings_come_in_the_order_a_person_reads_them() {
    let mut world = World::new();
    // A folder where the record should be, and a bad setting.
    let env = env(&[("ACTIONS_RUNNER_PREFLIGHT_MAX_ATTEMPTS", "lots")]);
    let mut check = new_check(&env, 100, T0);
    let file = check.record_file().unwrap().to_string();
    // Reads as a folder: the shim reports what it opened is not a file.
    let mut now = T0;
    let mut logs = Vec::new();
    for _ in 0..10_000 {
        let action = check.poll(now);
        match &action {
            CheckAction::Done { .. } => break,
            CheckAction::Log { level, message } => logs.push((*level, message.clone())),
            CheckAction::ReadRecord { file: f, .. } if *f == file => {
                check
                    .on_fact(now, Fact::Record(RecordRead::NotAFile))
                    .unwrap();
            }
            CheckAction::Send {
                probe,
                attempt,
                request,
                ..
            } => {
                let result = answer(&world, request, now);
                check
                    .on_fact(
                        now,
                        Fact::Response {
                            probe: *probe,
                            attempt: *attempt,
                            result,
                        },
                    )
                    .unwrap();
            }
            CheckAction::Wait { until_ms } => now = now.max(*until_ms),
            other => {
                let fact = perform(&mut world, other, now).unwrap();
                check.on_fact(now, fact).unwrap();
            }
        }
    }
    let warnings: Vec<&str> = logs
        .iter()
        .filter(|(l, _)| *l == Level::Warning)
        .map(|(_, m)| m.as_str())
        .collect();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert_eq!(
        warnings[0],
        format!("cache path {file} is not a regular file; ignoring it")
    );
    assert!(
        warnings[1].contains("ACTIONS_RUNNER_PREFLIGHT_MAX_ATTEMPTS"),
        "{}",
        warnings[1]
    );
}

#[test]
fn an_unwritable_folder_is_a_warning_not_a_failure() {
    let mut world = World::new();
    world.folders.remove("/rt");
    let env = env(&[]);
    let trace = run(&mut world, &mut new_check(&env, 100, T0), T0, |_, _| {});
    assert_eq!(trace.outcome.verdict, Verdict::Allowed);
    assert_eq!(
        trace.warnings(),
        vec![
            "could not cache the permission verdict in /rt (ENOENT); later steps will check again"
        ]
    );
}

#[test]
fn a_token_file_that_cannot_be_read_is_named_in_the_one_warning_and_in_a_bad_header_error() {
    let mut world = World::new();
    world.api = Api::BadHeader;
    let user = UserFacts {
        token_file: Some(CredentialFile {
            path: Some("/var/run/secrets/token".into()),
            read: FileRead::Failed("EACCES".into()),
        }),
        ..UserFacts::default()
    };
    let env = env(&[]);
    let trace = run(
        &mut world,
        &mut new_check_of(&env, &user, 100, T0),
        T0,
        |_, _| {},
    );
    assert_eq!(
        trace.uncached_warnings(),
        vec!["the service-account token at /var/run/secrets/token cannot be read (EACCES); the verdict will not be cached"]
    );
    assert!(
        world.files.keys().all(|f| !f.ends_with(".json")),
        "no record"
    );
    assert!(
        trace
            .outcome
            .message
            .contains("the token file /var/run/secrets/token"),
        "{}",
        trace.outcome.message
    );
}

#[test]
fn an_inline_token_beside_a_token_file_is_the_one_a_bad_header_error_names() {
    let mut world = World::new();
    world.api = Api::BadHeader;
    let user = UserFacts {
        token: Some("inline-token-0123".into()),
        token_file: Some(CredentialFile {
            path: Some("/var/run/secrets/token".into()),
            read: FileRead::Bytes(b"file-token".to_vec()),
        }),
        ..UserFacts::default()
    };
    let trace = run(
        &mut world,
        &mut new_check_of(&env(&[]), &user, 100, T0),
        T0,
        |_, _| {},
    );
    assert!(
        trace.uncached_warnings().is_empty(),
        "{:?}",
        trace.warnings()
    );
    assert!(
        trace
            .outcome
            .message
            .contains("the kubeconfig's inline token"),
        "{}",
        trace.outcome.message
    );
}

#[test]
fn an_outage_ends_inconclusive_through_the_same_machine() {
    let mut world = World::new();
    world.api = Api::RefuseUntil(u64::MAX);
    let env = env(&[("ACTIONS_RUNNER_PREFLIGHT_DEADLINE_MS", "3000")]);
    let trace = run(&mut world, &mut new_check(&env, 100, T0), T0, |_, _| {});
    assert_eq!(trace.outcome.verdict, Verdict::Inconclusive);
    assert!(
        trace.outcome.message.contains("NOT"),
        "{}",
        trace.outcome.message
    );
    assert_eq!(
        trace.count(|a| matches!(a, CheckAction::WriteRecord { .. })),
        0
    );
    assert!(
        !world.files.keys().any(|f| f.ends_with(".lock")),
        "lock released"
    );
}

#[test]
fn a_fact_nobody_asked_for_is_refused_by_name() {
    let env = env(&[]);
    let mut check = new_check(&env, 100, T0);
    assert_eq!(
        check.on_fact(T0, Fact::Written { code: None }),
        Err(FactError::Unexpected("written"))
    );
    // Still usable: the reads come next.
    assert!(matches!(check.poll(T0), CheckAction::ReadKeyFile { .. }));
}

#[test]
fn a_warm_step_ends_in_the_poll_that_takes_its_reads() {
    // One round trip for the reads, then done: no wait in between (each
    // wait is one more crossing of the boundary).
    let mut world = World::new();
    let env = env(&[]);
    let first = run(&mut world, &mut new_check(&env, 100, T0), T0, |_, _| {});
    let now = first.done_at + 1_000;
    let mut check = new_check(&env, 101, now);
    let mut facts = Vec::new();
    loop {
        match check.poll(now) {
            CheckAction::Wait { .. } => break,
            CheckAction::Log { .. } => {}
            action => facts.push(perform(&mut world, &action, now).unwrap()),
        }
    }
    assert_eq!(facts.len(), 2);
    for fact in facts {
        check.on_fact(now, fact).unwrap();
    }
    loop {
        match check.poll(now) {
            CheckAction::Log { .. } => {}
            CheckAction::Done { outcome } => {
                assert_eq!(outcome.source, Some(Source::Cache));
                break;
            }
            other => panic!("expected done, got {other:?}"),
        }
    }
}

/// Runs a cold check with a lock already at the path, and returns the trace.
fn with_planted_lock(content: &[u8], mtime: u64, world: &mut World, check_clock: u64) -> Trace {
    let env = env(&[("ACTIONS_RUNNER_PREFLIGHT_DEADLINE_MS", "20000")]);
    let mut check = new_check(&env, 100, check_clock);
    let lock = format!("{}.lock", check.record_file().unwrap());
    world.files.insert(lock, (content.to_vec(), mtime));
    run(world, &mut check, check_clock, |_, _| {})
}

#[test]
fn a_lock_naming_this_very_process_is_a_live_holder() {
    // Two checks of one process side by side: the second must wait for the
    // first's record, not take its lock over.
    let mut world = World::new();
    world.running.insert(100);
    let trace = with_planted_lock(
        b"100 runner-1 0123456789abcdef\n",
        T0 - 1_000,
        &mut world,
        T0,
    );
    assert_eq!(trace.outcome.verdict, Verdict::Allowed);
    assert!(trace
        .actions
        .contains(&CheckAction::ProbeProcess { pid: 100 }));
    assert!(
        trace.done_at > T0 + 10_000,
        "waited for the holder ({} ms)",
        trace.done_at - T0
    );
}

#[test]
fn a_lock_dated_in_the_future_is_not_a_lock_it_is_taken_over() {
    // `touch -d 2027` from a job container: its age would stay 0 forever.
    let mut world = World::new();
    world.running.insert(7);
    let year = 365 * 24 * 3_600_000;
    for (content, who) in [
        (&b"7 runner-1 0123456789abcdef\n"[..], "a live holder"),
        (&b"7 other-host 0123456789abcdef\n"[..], "another host"),
    ] {
        let trace = with_planted_lock(content, T0 + year, &mut world, T0);
        assert_eq!(trace.outcome.verdict, Verdict::Allowed, "{who}");
        assert!(
            trace.done_at < T0 + 1_000,
            "{who}: took over at once ({} ms)",
            trace.done_at - T0
        );
    }
}

#[test]
fn lock_ages_are_measured_on_the_file_systems_clock() {
    // The process clock runs 200 s ahead of the clock that stamps file
    // times (an NFS server, a host's `now`): a live holder's fresh lock must
    // still be waited for, not judged older than the longest check.
    let mut world = World::new();
    world.running.insert(7);
    let skew = 200_000;
    let env = env(&[("ACTIONS_RUNNER_PREFLIGHT_DEADLINE_MS", "20000")]);
    let mut check = new_check(&env, 100, T0 + skew);
    let lock = format!("{}.lock", check.record_file().unwrap());
    // The file system's "now" is T0: the lock was made a moment ago.
    world.fs_clock_offset = Some(skew);
    world.files.insert(
        lock.clone(),
        (b"7 runner-1 0123456789abcdef\n".to_vec(), T0 - 50),
    );
    let trace = run(&mut world, &mut check, T0 + skew, |_, _| {});
    assert_eq!(
        trace.count(|a| matches!(a, CheckAction::RemoveFile { file } if *file == lock)),
        0,
        "a live holder's fresh lock is not removed"
    );
    assert!(
        trace.done_at - (T0 + skew) > 10_000,
        "waited for the holder"
    );
}

#[test]
fn a_file_system_without_hard_links_means_no_lock_and_says_so() {
    // SMB, some FUSE file systems: link() fails with EPERM. The step checks
    // on its own (it never blocks), and one warning says single flight
    // cannot work in that folder.
    let mut world = World::new();
    world.link_error = Some("EPERM");
    let env = env(&[]);
    let trace = run(&mut world, &mut new_check(&env, 100, T0), T0, |_, _| {});
    assert_eq!(trace.outcome.verdict, Verdict::Allowed);
    assert_eq!(trace.requests, 13);
    let warnings = trace.warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].starts_with("Cannot create the lock file /rt/k8s-auth-preflight-")
            && warnings[0].contains("(EPERM)")
            && warnings[0].contains("without waiting"),
        "{}",
        warnings[0]
    );
    // A lock that is simply there (EEXIST) is not worth a warning.
    let mut quiet = World::new();
    let trace = run(&mut quiet, &mut new_check(&env, 100, T0), T0, |_, _| {});
    assert!(trace.warnings().is_empty());
}

//! A fleet of runner jobs against a simulated apiserver, on a simulated
//! clock, driving the machine that ships (`Check`: its runner key, record,
//! lock and reviews) for every step of every job, fed what the shim feeds
//! it (file facts, response bodies), so each policy is measured by the
//! code that ships.
//!
//! Model:
//! - each job runs `prepare`, `script_steps` script steps and `cleanup`;
//!   every step is a fresh hook process: a new `Check` over the job's own
//!   files (its runner's key file, its record and lock), done at once;
//! - a step whose check fails ends the job's script steps (cleanup still
//!   runs, as in GitHub Actions);
//! - the apiserver answers in 5-20 ms while healthy, refuses connections (or
//!   hangs) during the stall, then answers 403 to a share of requests for a
//!   short window, then is healthy again;
//! - during the stall a share of the requests may hang while the rest are
//!   refused or answered (`stall_hang_share`, `stall_rest_answered`): the
//!   service's endpoint rules still send every n-th connection to a stale
//!   backend. The share is dealt round-robin over the requests as they come,
//!   like the 403 share (IPVS), or drawn at random per request (iptables,
//!   `stall_hang_random`);
//! - a hung request ends when the step's own timeout fires, as the shim's
//!   AbortSignal would end it; a hedge's loser is not aborted (the shim has
//!   no way to hear of it before the check is done) and runs to its answer
//!   or its timeout;
//! - job start times and the work between steps are drawn from the seed, or
//!   given by a [`Plan`] (the schedule a real run used, with the start-up
//!   and exit time of its hook processes).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::time::Duration;

use k8s_auth_preflight::check::{Check, CheckAction, CheckInput, Fact, ProcessFacts};
use k8s_auth_preflight::credential::UserFacts;
use k8s_auth_preflight::environment::Environment;
use k8s_auth_preflight::preflight::{ProbeResult, Request};
use k8s_auth_preflight::{ErrorFacts, Jitter, PermissionSpec, RandomSource, Settings, Verdict};

#[path = "../../tests/world/mod.rs"]
mod world;
use world::World;

/// Epoch ms at which a simulation starts; only its offset matters.
pub const EPOCH: u64 = 1_792_548_000_000;

/// A policy under test: settings for our machine, and how a failure is
/// reported to the user.
#[derive(Debug, Clone)]
pub struct Policy {
    pub name: String,
    pub settings: Settings,
    /// True when a failed check tells the user the service account lacks
    /// permissions (upstream and seed #64 have no three-way outcome).
    pub blames_rbac_on_failure: bool,
}

impl Policy {
    /// The hooks as shipped: 13 reviews per step, one attempt, no timeout.
    pub fn upstream() -> Policy {
        let mut s = Settings::new();
        s.rules_review = false;
        s.cache_enabled = false;
        s.backoff.max_attempts = 1;
        s.backoff.deadline = Duration::from_secs(3600);
        s.request_timeout = Duration::from_secs(300);
        Policy {
            name: "upstream".into(),
            settings: s,
            blames_rbac_on_failure: true,
        }
    }

    /// Seed PR #64: 13 reviews per step, 4 attempts 3/6/12 s, no jitter,
    /// 15 s per request, no cache.
    pub fn pr64() -> Policy {
        let mut s = Settings::new();
        s.rules_review = false;
        s.cache_enabled = false;
        s.backoff.base = Duration::from_secs(3);
        s.backoff.factor = 2.0;
        s.backoff.max_delay = Duration::from_secs(60);
        s.backoff.max_attempts = 4;
        s.backoff.deadline = Duration::from_secs(3600);
        s.backoff.jitter = Jitter::None;
        // Its attempt limit ends the retries; it had no deadline to cover.
        s.backoff.last_attempt_at_deadline = false;
        s.request_timeout = Duration::from_secs(15);
        s.max_retry_after = Duration::ZERO;
        Policy {
            name: "pr64".into(),
            settings: s,
            blames_rbac_on_failure: true,
        }
    }

    /// Seed PR #68: 13 reviews, 6 attempts 1.5-8 s capped, equal jitter,
    /// 15 s per request, cache 1 h / 24 h, three-way outcome.
    pub fn pr68() -> Policy {
        let mut s = Settings::new();
        s.rules_review = false;
        s.backoff.base = Duration::from_millis(1500);
        s.backoff.factor = 2.0;
        s.backoff.max_delay = Duration::from_secs(8);
        s.backoff.max_attempts = 6;
        s.backoff.deadline = Duration::from_secs(3600);
        s.backoff.jitter = Jitter::Equal;
        // Its attempt limit ends the retries; it had no deadline to cover.
        s.backoff.last_attempt_at_deadline = false;
        s.request_timeout = Duration::from_secs(15);
        s.max_retry_after = Duration::ZERO;
        Policy {
            name: "pr68".into(),
            settings: s,
            blames_rbac_on_failure: false,
        }
    }

    /// This package's defaults.
    pub fn ours() -> Policy {
        Policy {
            name: "ours".into(),
            settings: Settings::new(),
            blames_rbac_on_failure: false,
        }
    }

    /// Ours with another jitter kind.
    pub fn ours_with_jitter(jitter: Jitter) -> Policy {
        let mut p = Policy::ours();
        p.settings.backoff.jitter = jitter;
        p.name = format!("ours, {} jitter", jitter.name());
        p
    }

    /// Ours without the rules-review fast path.
    pub fn ours_without_rules_review() -> Policy {
        let mut p = Policy::ours();
        p.settings.rules_review = false;
        p.name = "ours, no rules review".into();
        p
    }

    /// Ours with hedged requests after `after` (`name` says which delay).
    pub fn ours_with_hedge(after: Duration, name: &str) -> Policy {
        let mut p = Policy::ours();
        p.settings.hedge_after = Some(after);
        p.name = name.into();
        p
    }

    /// Ours with a retry quota of `tokens` per check.
    pub fn ours_with_quota(tokens: u32) -> Policy {
        let mut p = Policy::ours();
        p.settings.retry_quota = Some(tokens);
        p.name = "ours+quota".into();
        p
    }

    /// Ours with a retry quota of `tokens` per check and no rules review
    /// (13 access reviews share each check's bucket).
    pub fn ours_with_quota_without_rules_review(tokens: u32) -> Policy {
        let mut p = Policy::ours_with_quota(tokens);
        p.settings.rules_review = false;
        p.name = "ours+quota, no rules review".into();
        p
    }
}

/// The healthy p95 of a latency drawn uniformly from whole ms in `lo..=hi`,
/// as a hedge delay: the largest whole `t` with at least 5 % of the draws
/// above it (so about 5 % of healthy requests get a hedge). 5-20 ms: 19 ms
/// (1 draw in 16 is above it).
pub fn healthy_p95(latency: (Duration, Duration)) -> Duration {
    let (lo, hi) = (ms(latency.0), ms(latency.1));
    let values = hi - lo + 1;
    let above = (values * 5).div_ceil(100).max(1);
    Duration::from_millis(hi.saturating_sub(above).max(lo))
}

/// The fleet and the incident.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub jobs: u32,
    /// Jobs start uniformly over this span.
    pub start_spread: Duration,
    pub script_steps: u32,
    /// Work done by each script step after its check.
    pub step_work: (Duration, Duration),
    /// When the stall begins, from the start.
    pub stall_at: Duration,
    pub stall: Duration,
    /// During the stall: the share of requests that reach a stale backend
    /// and hang (0: none, 1: every one, `--hang`).
    pub stall_hang_share: f64,
    /// During the stall: the requests that do not hang are answered (live
    /// backends) instead of refused (no backend).
    pub stall_rest_answered: bool,
    /// During the stall: each request hangs with probability
    /// `stall_hang_share` (kube-proxy's iptables mode picks a backend at
    /// random) instead of every n-th one (round-robin, as IPVS's default
    /// scheduler deals them).
    pub stall_hang_random: bool,
    /// After the stall, this long of transient 403s...
    pub forbidden_window: Duration,
    /// ...to this share of requests.
    pub forbidden_share: f64,
    pub latency: (Duration, Duration),
    /// For this long after the stall (the 403 window included), answers
    /// take `slow_latency` instead: a cold apiserver, or APF queueing.
    pub slow_window: Duration,
    pub slow_latency: (Duration, Duration),
    pub seed: u64,
}

impl Scenario {
    /// The 2026-10-21 nightly: 300 jobs, a 25 s refused stall, then 3 s of
    /// transient 403 for half the requests.
    pub fn incident() -> Scenario {
        Scenario {
            jobs: 300,
            start_spread: Duration::from_secs(180),
            script_steps: 10,
            step_work: (Duration::from_secs(5), Duration::from_secs(40)),
            stall_at: Duration::from_secs(120),
            stall: Duration::from_secs(25),
            stall_hang_share: 0.0,
            stall_rest_answered: false,
            stall_hang_random: false,
            forbidden_window: Duration::from_secs(3),
            forbidden_share: 0.5,
            latency: (Duration::from_millis(5), Duration::from_millis(20)),
            slow_window: Duration::ZERO,
            slow_latency: (Duration::from_millis(5), Duration::from_millis(20)),
            seed: 1,
        }
    }

    fn recovery_ms(&self) -> u64 {
        ms(self.stall_at + self.stall)
    }
}

/// A fleet given job by job instead of drawn from the seed, so that a real
/// run (bench/chaos.js) and the simulator replay the very same schedule.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    pub jobs: Vec<JobPlan>,
    /// A hook process starts this long before its check begins...
    pub startup: Duration,
    /// ...and ends this long after its verdict (unless its job says otherwise).
    pub exit: Duration,
}

/// One job of a [`Plan`].
#[derive(Debug, Clone, Default)]
pub struct JobPlan {
    /// When the job's first process starts, from the start.
    pub start: Duration,
    /// Work after each step but the last (from one process's end to the next
    /// one's start): `script_steps + 1` entries.
    pub gaps: Vec<Duration>,
    /// Per step, from the process's start to its check (as measured in a real
    /// run); a step without an entry takes the plan's `startup`.
    pub startups: Vec<Duration>,
    /// Per step, from the verdict to the process's end; else the plan's `exit`.
    pub exits: Vec<Duration>,
}

impl Plan {
    fn startup_ms(&self, job: usize, step: usize) -> u64 {
        ms(*self.jobs[job].startups.get(step).unwrap_or(&self.startup))
    }

    fn exit_ms(&self, job: usize, step: usize) -> u64 {
        ms(*self.jobs[job].exits.get(step).unwrap_or(&self.exit))
    }
}

/// What one policy did in one scenario.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub policy: String,
    pub steps: u32,
    pub steps_failed: u32,
    pub false_rbac_reports: u32,
    /// Requests the clients sent (including ones refused at connect).
    pub requests_sent: u64,
    /// Requests that reached the apiserver (refused ones do not).
    pub requests_served: u64,
    pub jobs: u32,
    /// Most requests reaching the apiserver in any one second from recovery on.
    pub peak_per_second_after_recovery: u64,
    /// That peak, per run pooled into this report ([`Report::pool`]).
    pub peaks: Vec<u64>,
    /// Time from recovery to verdict, for checks in progress at recovery.
    pub recovery_to_verdict_ms: Vec<u64>,
    /// Time each check added to its step.
    pub check_ms: Vec<u64>,
    /// The same, for the checks that sent at least one request.
    pub asking_check_ms: Vec<u64>,
    /// Hedged requests (counted in `requests_sent` too).
    pub hedges: u64,
    /// Requests that reached the apiserver in each second from the start
    /// (index: whole seconds), for the chart.
    pub served_by_second: Vec<u64>,
    /// When each failed step got its verdict, in ms from the start.
    pub failed_at_ms: Vec<u64>,
}

impl Report {
    pub fn requests_per_job(&self) -> f64 {
        self.requests_sent as f64 / f64::from(self.jobs.max(1))
    }

    /// Adds another run (another seed) to this one: counts add up, times
    /// are pooled, the peak is the highest of the runs (`peaks` keeps each),
    /// the per-second series add up.
    pub fn pool(&mut self, other: Report) {
        self.steps += other.steps;
        self.steps_failed += other.steps_failed;
        self.false_rbac_reports += other.false_rbac_reports;
        self.requests_sent += other.requests_sent;
        self.requests_served += other.requests_served;
        self.jobs += other.jobs;
        self.peak_per_second_after_recovery = self
            .peak_per_second_after_recovery
            .max(other.peak_per_second_after_recovery);
        self.peaks.extend(other.peaks);
        self.recovery_to_verdict_ms
            .extend(other.recovery_to_verdict_ms);
        self.check_ms.extend(other.check_ms);
        self.asking_check_ms.extend(other.asking_check_ms);
        self.hedges += other.hedges;
        if self.served_by_second.len() < other.served_by_second.len() {
            self.served_by_second
                .resize(other.served_by_second.len(), 0);
        }
        for (sum, n) in self.served_by_second.iter_mut().zip(other.served_by_second) {
            *sum += n;
        }
        self.failed_at_ms.extend(other.failed_at_ms);
    }
}

/// The percentile `p` (0-100) of `values`, nearest-rank; 0 when empty.
pub fn percentile(values: &[u64], p: f64) -> u64 {
    if values.is_empty() {
        return 0;
    }
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[derive(Debug)]
enum Event {
    StepStart {
        job: usize,
    },
    Poll {
        step: usize,
    },
    Answer {
        step: usize,
        probe: usize,
        attempt: u32,
        result: ProbeResult,
    },
}

struct Job {
    /// Steps done so far (0 = prepare next).
    next_step: u32,
    failed: bool,
    /// The job's runner: its files.
    world: World,
}

struct Step {
    job: usize,
    machine: Check,
    started_ms: u64,
    next_poll_ms: Option<u64>,
    finished: bool,
}

/// The hooks' permission table: 13 reviews.
pub fn hooks_permissions() -> Vec<PermissionSpec> {
    k8s_auth_preflight::permission::runner_hooks_permissions()
}

/// The body of a rules review of a Role that grants exactly the hooks'
/// table, as the apiserver sends it.
fn full_role_body() -> String {
    let quoted = |items: &[String]| {
        let items: Vec<String> = items.iter().map(|s| format!("{s:?}")).collect();
        format!("[{}]", items.join(","))
    };
    let rules: Vec<String> = hooks_permissions()
        .into_iter()
        .map(|spec| {
            let resource = if spec.subresource.is_empty() {
                spec.resource
            } else {
                format!("{}/{}", spec.resource, spec.subresource)
            };
            format!(
                r#"{{"verbs":{},"apiGroups":{},"resources":{}}}"#,
                quoted(&spec.verbs),
                quoted(&[spec.group]),
                quoted(&[resource])
            )
        })
        .collect();
    format!(
        r#"{{"kind":"SelfSubjectRulesReview","status":{{"resourceRules":[{}],"nonResourceRules":[],"incomplete":false}}}}"#,
        rules.join(",")
    )
}

/// The body of an access review the apiserver allowed.
const ALLOWED_BODY: &str = r#"{"kind":"SelfSubjectAccessReview","status":{"allowed":true}}"#;

fn ms(d: Duration) -> u64 {
    d.as_millis() as u64
}

/// Runs one policy through one scenario. Bounded: gives up (panics) after
/// a fixed number of events, so a livelock cannot hang a run.
#[allow(dead_code)] // the example calls run_planned; tests/replay.rs calls this
pub fn run(policy: &Policy, scenario: &Scenario) -> Report {
    run_planned(policy, scenario, None)
}

/// [`run`], with the fleet's start times and step gaps taken from `plan`
/// (which must have `scenario.jobs` jobs of `script_steps + 1` gaps each)
/// instead of drawn, and each check starting its process's start-up time
/// after the process is due. The seed still draws latencies and jitter.
pub fn run_planned(policy: &Policy, scenario: &Scenario, plan: Option<&Plan>) -> Report {
    if let Some(plan) = plan {
        assert_eq!(
            plan.jobs.len(),
            scenario.jobs as usize,
            "plan and scenario disagree on jobs"
        );
        assert!(
            plan.jobs
                .iter()
                .all(|j| j.gaps.len() == scenario.script_steps as usize + 1),
            "every planned job needs script_steps + 1 gaps"
        );
    }
    let mut random = RandomSource::seeded(scenario.seed);
    let permissions = hooks_permissions();
    let rules_body = full_role_body();
    let steps_per_job = scenario.script_steps + 2;
    let stall_from = EPOCH + ms(scenario.stall_at);
    let stall_to = stall_from + ms(scenario.stall);
    let forbidden_to = stall_to + ms(scenario.forbidden_window);
    let recovery = EPOCH + scenario.recovery_ms();

    let mut queue: BinaryHeap<Reverse<(u64, u64)>> = BinaryHeap::new();
    let mut events: BTreeMap<u64, Event> = BTreeMap::new();
    let mut seq = 0u64;
    let mut push = |queue: &mut BinaryHeap<Reverse<(u64, u64)>>,
                    events: &mut BTreeMap<u64, Event>,
                    at: u64,
                    e: Event| {
        seq += 1;
        queue.push(Reverse((at, seq)));
        events.insert(seq, e);
    };

    let mut jobs: Vec<Job> = Vec::new();
    for j in 0..scenario.jobs {
        jobs.push(Job {
            next_step: 0,
            failed: false,
            world: World::new(),
        });
        let start = match plan {
            Some(plan) => EPOCH + ms(plan.jobs[j as usize].start) + plan.startup_ms(j as usize, 0),
            None => EPOCH + random.between(0, ms(scenario.start_spread)),
        };
        push(
            &mut queue,
            &mut events,
            start,
            Event::StepStart { job: j as usize },
        );
    }
    let mut steps: Vec<Step> = Vec::new();
    let mut report = Report {
        policy: policy.name.clone(),
        jobs: scenario.jobs,
        ..Report::default()
    };
    let mut served_per_second: BTreeMap<u64, u64> = BTreeMap::new();
    let mut forbidden_counter = 0u64;
    let mut stall_counter = 0u64;

    let mut processed = 0u64;
    while let Some(Reverse((now, id))) = queue.pop() {
        processed += 1;
        assert!(processed < 50_000_000, "simulation did not end");
        let Some(event) = events.remove(&id) else {
            continue;
        };
        let step_index = match event {
            Event::StepStart { job } => {
                let mut settings = policy.settings.clone();
                settings.seed = Some(scenario.seed ^ ((steps.len() as u64 + 1) * 0x9E37_79B9));
                let environment = Environment::of(settings, Some("/home/runner"), Some("/rt"));
                let machine = Check::new(
                    CheckInput {
                        environment: &environment,
                        permissions: &permissions,
                        namespace: "ci",
                        user: &UserFacts::token("replay-service-account-token"),
                        cache_dir: None,
                        process: ProcessFacts {
                            pid: 1000 + steps.len() as u32,
                            host: format!("runner-{job}"),
                        },
                    },
                    now,
                )
                .expect("valid fixture");
                steps.push(Step {
                    job,
                    machine,
                    started_ms: now,
                    next_poll_ms: None,
                    finished: false,
                });
                report.steps += 1;
                steps.len() - 1
            }
            Event::Poll { step } => {
                if steps[step].finished || steps[step].next_poll_ms != Some(now) {
                    continue;
                }
                steps[step].next_poll_ms = None;
                step
            }
            Event::Answer {
                step,
                probe,
                attempt,
                result,
            } => {
                if steps[step].finished {
                    continue;
                }
                let fact = Fact::Response {
                    probe,
                    attempt,
                    result,
                };
                let _ = steps[step].machine.on_fact(now, fact);
                step
            }
        };

        // Poll the step until it waits or is done.
        loop {
            let action = steps[step_index].machine.poll(now);
            match action {
                CheckAction::Send {
                    probe,
                    attempt,
                    request,
                    timeout_ms,
                } => {
                    report.requests_sent += 1;
                    let in_stall = now >= stall_from && now < stall_to;
                    let hangs = in_stall
                        && if scenario.stall_hang_random {
                            let share = scenario.stall_hang_share;
                            (random.between(0, 999_999) as f64) < share * 1_000_000.0
                        } else {
                            stall_counter += 1;
                            dealt(stall_counter, scenario.stall_hang_share)
                        };
                    let refused = in_stall && !hangs && !scenario.stall_rest_answered;
                    let (at, result) = if hangs || refused {
                        if hangs {
                            (
                                now + timeout_ms,
                                failed(ErrorFacts {
                                    timed_out: true,
                                    message: "aborted".into(),
                                    ..ErrorFacts::default()
                                }),
                            )
                        } else {
                            (
                                now + 1,
                                failed(ErrorFacts {
                                    codes: vec!["ECONNREFUSED".into()],
                                    message: "connect ECONNREFUSED".into(),
                                    ..ErrorFacts::default()
                                }),
                            )
                        }
                    } else {
                        report.requests_served += 1;
                        *served_per_second.entry((now - EPOCH) / 1000).or_insert(0) += 1;
                        let slow = now >= stall_to && now < stall_to + ms(scenario.slow_window);
                        let (lo, hi) = if slow {
                            scenario.slow_latency
                        } else {
                            scenario.latency
                        };
                        let latency = random.between(ms(lo), ms(hi));
                        let in_window = now >= stall_to && now < forbidden_to;
                        let forbidden = in_window && {
                            forbidden_counter += 1;
                            dealt(forbidden_counter, scenario.forbidden_share)
                        };
                        let result = if forbidden {
                            failed(ErrorFacts {
                                status: Some(403),
                                message: "selfsubjectaccessreviews is forbidden".into(),
                                ..ErrorFacts::default()
                            })
                        } else {
                            match request {
                                Request::RulesReview(_) => ProbeResult::RulesBody {
                                    body: rules_body.clone(),
                                },
                                _ => ProbeResult::AccessBody {
                                    body: ALLOWED_BODY.into(),
                                },
                            }
                        };
                        (now + latency, result)
                    };
                    push(
                        &mut queue,
                        &mut events,
                        at,
                        Event::Answer {
                            step: step_index,
                            probe,
                            attempt,
                            result,
                        },
                    );
                }
                CheckAction::Log { .. } => {}
                CheckAction::Wait { until_ms } => {
                    let step = &mut steps[step_index];
                    if step.next_poll_ms.is_none_or(|t| until_ms < t) {
                        step.next_poll_ms = Some(until_ms);
                        push(
                            &mut queue,
                            &mut events,
                            until_ms,
                            Event::Poll { step: step_index },
                        );
                    }
                    break;
                }
                CheckAction::Done { outcome } => {
                    let step = &mut steps[step_index];
                    step.finished = true;
                    let job = &mut jobs[step.job];
                    let took = now - step.started_ms;
                    report.check_ms.push(took);
                    if outcome.requests > 0 {
                        report.asking_check_ms.push(took);
                    }
                    report.hedges += u64::from(outcome.hedges);
                    if step.started_ms < recovery && now >= recovery && outcome.requests > 0 {
                        report.recovery_to_verdict_ms.push(now - recovery);
                    }
                    let ok = outcome.verdict == Verdict::Allowed;
                    if !ok {
                        report.steps_failed += 1;
                        report.failed_at_ms.push(now - EPOCH);
                        if policy.blames_rbac_on_failure || outcome.verdict == Verdict::Denied {
                            report.false_rbac_reports += 1;
                        }
                        job.failed = true;
                    }
                    // Next step: script steps only while the job has not
                    // failed; cleanup always.
                    let finished_step = job.next_step as usize;
                    job.next_step += 1;
                    if job.failed && job.next_step < steps_per_job - 1 {
                        job.next_step = steps_per_job - 1;
                    }
                    if job.next_step < steps_per_job {
                        let j = step.job;
                        let work = match plan {
                            Some(plan) => {
                                plan.exit_ms(j, finished_step)
                                    + ms(plan.jobs[j].gaps[finished_step])
                                    + plan.startup_ms(j, job.next_step as usize)
                            }
                            None => {
                                random.between(ms(scenario.step_work.0), ms(scenario.step_work.1))
                            }
                        };
                        push(
                            &mut queue,
                            &mut events,
                            now + work,
                            Event::StepStart { job: j },
                        );
                    }
                    break;
                }
                file_action => {
                    // Files take no time here: the shim's file work is
                    // microseconds beside a request's milliseconds.
                    let step = &mut steps[step_index];
                    let world = &mut jobs[step.job].world;
                    let fact = world::perform(world, &file_action, now)
                        .expect("a file action owes a fact");
                    step.machine
                        .on_fact(now, fact)
                        .expect("the world's facts are well formed");
                }
            }
        }
    }
    let from = (recovery - EPOCH) / 1000;
    report.peak_per_second_after_recovery = served_per_second
        .range(from..)
        .map(|(_, n)| *n)
        .max()
        .unwrap_or(0);
    report.peaks = vec![report.peak_per_second_after_recovery];
    let seconds = served_per_second
        .keys()
        .next_back()
        .map_or(0, |last| last + 1);
    report.served_by_second = (0..seconds)
        .map(|s| served_per_second.get(&s).copied().unwrap_or(0))
        .collect();
    report
}

/// Whether the `n`-th request (from 1) is one of a `share` dealt evenly:
/// share 0.5 picks the 2nd, 4th, ...; share 1/3 the 3rd, 6th, ...
fn dealt(n: u64, share: f64) -> bool {
    ((n as f64) * share).floor() > (((n - 1) as f64) * share).floor()
}

fn failed(facts: ErrorFacts) -> ProbeResult {
    ProbeResult::Failed { facts }
}

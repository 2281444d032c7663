//! The machine of one durable exec ([`DurableRun`]).

use std::collections::VecDeque;
use std::time::Duration;

use super::action::{Delivery, DurableAction, DurableFact, PodStep, StepEnd};
use super::messages;
use crate::call::{with_upgrade_status, FailureStage};
use crate::classify::{classify, describe_answer, Class, ErrorFacts};
use crate::config::Settings;
use crate::millis;
use crate::protocol::Level;
use crate::random::RandomSource;
use crate::retry::{Line, RequestNumbers};
use crate::schedule::Backoff;

/// What a durable exec is of: the pod, and the command (for the messages
/// of its statuses).
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(default)]
pub struct DurableSpec {
    /// The pod's namespace.
    pub namespace: String,
    /// The pod's name.
    pub pod: String,
    /// The command, as the caller passed it.
    pub command: Vec<String>,
}

/// How often an open stream is pinged.
pub const PING_EVERY_MS: u64 = 5_000;
// A clean-up or a kill gets one attempt of this long: the caller waits on it.
const CLEANUP_TIMEOUT_MS: u64 = 5_000;
const KILL_TIMEOUT_MS: u64 = 4_000;
// Attempts are bounded by the time without a connection; this only bounds
// a line whose steps keep failing at once.
const MAX_ATTEMPTS: u32 = 10_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Starting or attached: the command's output is being read.
    Running,
    /// The command ended: its exit code is being read.
    Finishing,
    /// Its code is known: the run's folder is being removed.
    Cleaning,
    /// The hook process is being stopped: so is the command.
    Killing,
    /// Nothing more to do.
    Over,
}

/// Time without a connection, from when it was lost.
#[derive(Debug, Clone)]
struct Disconnection {
    since_ms: u64,
    line: Line,
    warned: bool,
}

/// One durable exec. Feed it facts with [`DurableRun::on_fact`] and take
/// actions from [`DurableRun::poll`] until `Done`.
#[derive(Debug, Clone)]
pub struct DurableRun {
    pod: String,
    command: Vec<String>,
    run: String,
    setup_timeout_ms: u64,
    pong_deadline_ms: u64,
    limit_ms: u64,
    backoff: Backoff,
    retry_after_limit: Duration,
    random: RandomSource,
    numbers: RequestNumbers,
    phase: Phase,
    /// The step whose exec is out, and its request.
    in_flight: Option<(u32, PodStep)>,
    pod_read: Option<u32>,
    /// The step to make next, and when.
    next: Option<(PodStep, u64)>,
    /// A start step's stream opened: the run was claimed (its script ran).
    start_opened: bool,
    /// A start may have reached the pod: the next try attaches first.
    may_have_started: bool,
    /// The caller's promise was resolved.
    resolved: bool,
    /// A start answered with a final 4xx: the caller's error, unless an
    /// attach finds the run.
    final_start_error: Option<u32>,
    last_failed: Option<u32>,
    last_error: String,
    code: Option<Delivery>,
    disconnected: Option<Disconnection>,
    queue: VecDeque<DurableAction>,
}

impl DurableRun {
    /// The run of `spec` under `settings`, at `now_ms`; `random` draws the
    /// backoff's jitter. Its id comes from the operating system's
    /// randomness whatever the seed: two runs must never share a folder.
    pub fn new(
        settings: &Settings,
        spec: DurableSpec,
        random: RandomSource,
        now_ms: u64,
    ) -> DurableRun {
        let mut os = RandomSource::from_os();
        let run = format!("{:016x}{:016x}", os.next_u64(), os.next_u64());
        let calls = &settings.calls;
        let backoff = Backoff {
            deadline: calls.disconnect_limit,
            max_attempts: MAX_ATTEMPTS,
            last_attempt_at_deadline: false,
            ..settings.backoff
        };
        DurableRun {
            pod: format!("{}/{}", spec.namespace, spec.pod),
            command: spec.command,
            run,
            setup_timeout_ms: millis(settings.request_timeout),
            pong_deadline_ms: millis(calls.pong_deadline),
            limit_ms: millis(calls.disconnect_limit),
            backoff,
            retry_after_limit: settings.max_retry_after,
            random,
            numbers: RequestNumbers::default(),
            phase: Phase::Running,
            in_flight: None,
            pod_read: None,
            next: Some((PodStep::Start, now_ms)),
            start_opened: false,
            may_have_started: false,
            resolved: false,
            final_start_error: None,
            last_failed: None,
            last_error: String::new(),
            code: None,
            // Until the first stream opens, the run has no connection.
            disconnected: Some(Disconnection {
                since_ms: now_ms,
                line: Line::new(backoff, now_ms),
                warned: true,
            }),
            queue: VecDeque::new(),
        }
    }

    /// The run's id.
    pub fn run_id(&self) -> &str {
        &self.run
    }

    /// The command, as the caller passed it.
    pub fn command(&self) -> &[String] {
        &self.command
    }

    /// Takes in one fact. A fact about a request that is not out (a late
    /// report, a stream replaced) is ignored.
    pub fn on_fact(&mut self, now_ms: u64, fact: DurableFact) {
        if self.phase == Phase::Over {
            return;
        }
        match fact {
            DurableFact::Opened { request } => {
                if let Some(step) = self.step_of(request) {
                    self.opened(now_ms, step);
                }
            }
            DurableFact::Ended {
                request,
                exit_code,
                stdout,
                why,
            } => {
                if let Some(step) = self.step_of(request) {
                    self.in_flight = None;
                    self.ended(now_ms, step, exit_code, &stdout, &why);
                }
            }
            DurableFact::Failed { request, facts } => {
                if self.pod_read == Some(request) {
                    // The pod could not be read: nothing learnt; the
                    // attempts go on.
                    self.pod_read = None;
                } else if let Some(step) = self.step_of(request) {
                    self.in_flight = None;
                    self.failed(now_ms, request, step, facts);
                }
            }
            DurableFact::Pod {
                request,
                found,
                phase,
                deleting,
            } => {
                if self.pod_read == Some(request) {
                    self.pod_read = None;
                    self.pod(found, phase.as_deref(), deleting);
                }
            }
            DurableFact::Cancel { signal } => self.cancel(&signal),
            DurableFact::Closed => self.finish_with(None),
        }
    }

    /// The next action.
    pub fn poll(&mut self, now_ms: u64) -> DurableAction {
        if let Some(action) = self.queue.pop_front() {
            return action;
        }
        if self.phase == Phase::Over {
            return DurableAction::Done;
        }
        let limit_at = self.limit_at();
        if limit_at.is_some_and(|at| now_ms >= at) && self.phase != Phase::Killing {
            self.give_up();
            return self.poll(now_ms);
        }
        if self.in_flight.is_some() {
            return DurableAction::Wait { until_ms: limit_at };
        }
        match self.next {
            Some((step, at)) if at <= now_ms => {
                self.next = None;
                self.send(step)
            }
            Some((_, at)) => DurableAction::Wait {
                until_ms: Some(limit_at.map_or(at, |l| l.min(at))),
            },
            None => DurableAction::Wait { until_ms: limit_at },
        }
    }

    fn limit_at(&self) -> Option<u64> {
        let d = self.disconnected.as_ref()?;
        Some(d.since_ms.saturating_add(self.limit_ms))
    }

    fn step_of(&self, request: u32) -> Option<PodStep> {
        match self.in_flight {
            Some((r, step)) if r == request => Some(step),
            _ => None,
        }
    }

    fn send(&mut self, step: PodStep) -> DurableAction {
        let request = self.numbers.give_out();
        self.in_flight = Some((request, step));
        let setup_timeout_ms = match step {
            PodStep::Cleanup => CLEANUP_TIMEOUT_MS,
            PodStep::Kill => KILL_TIMEOUT_MS,
            _ => self.setup_timeout_ms,
        };
        DurableAction::Exec {
            request,
            step,
            run: self.run.clone(),
            setup_timeout_ms,
            ping_every_ms: PING_EVERY_MS,
            pong_deadline_ms: self.pong_deadline_ms,
        }
    }

    fn opened(&mut self, now_ms: u64, step: PodStep) {
        if matches!(step, PodStep::Start | PodStep::Attach | PodStep::Finish) {
            if step == PodStep::Start {
                self.start_opened = true;
                self.may_have_started = true;
            }
            if let Some(d) = self.disconnected.take() {
                if !d.warned {
                    let after = now_ms.saturating_sub(d.since_ms);
                    self.log(Level::Info, messages::reattached(&self.pod, after));
                }
            }
        }
        // An attach that opens found nothing yet: the run's record is
        // known only when it ends well or with NoRecord.
        if !self.resolved && step != PodStep::Kill && step != PodStep::Cleanup {
            self.resolved = true;
            self.queue.push_back(DurableAction::Resolve);
        }
    }

    fn ended(
        &mut self,
        now_ms: u64,
        step: PodStep,
        exit_code: Option<i64>,
        stdout: &str,
        why: &str,
    ) {
        let end = exit_code.map(StepEnd::of);
        match (step, end) {
            (PodStep::Cleanup, _) => {
                let delivery = self.code.clone();
                self.finish_with(delivery);
            }
            (PodStep::Kill, _) => self.finish_with(None),
            (PodStep::Start | PodStep::Attach, Some(StepEnd::Done)) => {
                self.may_have_started = true;
                self.phase = Phase::Finishing;
                self.next = Some((PodStep::Finish, now_ms));
            }
            (PodStep::Start, Some(StepEnd::NoFolder)) => self.fall_back(
                "cannot make a folder for the run in its temp folder ($TMPDIR, else /tmp)",
            ),
            // Our own script never ran: the container could not run `sh`.
            (PodStep::Start, Some(StepEnd::Other(126 | 127))) => self.fall_back("cannot run `sh`"),
            (PodStep::Start, Some(StepEnd::Missing(name))) => {
                self.fall_back(&format!("has no `{name}`"))
            }
            (PodStep::Attach, Some(StepEnd::NoRecord)) if !self.start_opened => {
                // Never claimed: no start reached the pod, so one may be made.
                self.may_have_started = false;
                match self.final_start_error {
                    Some(request) => self.reject(request),
                    None => self.lost(
                        now_ms,
                        why,
                        Class::Transient {
                            why: "no run".into(),
                        },
                    ),
                }
            }
            (PodStep::Attach | PodStep::Finish, Some(StepEnd::NoRecord)) => {
                self.fail("RunRecordMissing", messages::record_missing(&self.pod))
            }
            (PodStep::Finish, Some(StepEnd::Done)) => match exit_status(stdout) {
                Some(0) => self.cleanup(Delivery::Success),
                Some(code) => self.cleanup(Delivery::ExitCode(code)),
                None => self.fail("RunRecordMissing", messages::record_missing(&self.pod)),
            },
            (_, Some(StepEnd::Other(code))) => {
                let said = messages::step_broke(&self.pod, code);
                self.lost(now_ms, &said, Class::Transient { why: said.clone() })
            }
            (_, _) => self.lost(now_ms, why, Class::Transient { why: why.into() }),
        }
    }

    fn failed(&mut self, now_ms: u64, request: u32, step: PodStep, facts: ErrorFacts) {
        let facts = with_upgrade_status(facts);
        let class = classify(&facts, now_ms, self.retry_after_limit);
        self.last_error = describe_answer(&class, &facts);
        self.last_failed = Some(request);
        let stage = FailureStage::of(&facts);
        match step {
            PodStep::Cleanup => {
                let delivery = self.code.clone();
                self.finish_with(delivery);
                return;
            }
            PodStep::Kill => {
                self.finish_with(None);
                return;
            }
            PodStep::Start => {
                if !stage.never_reached() {
                    self.may_have_started = true;
                    if let FailureStage::Answered { status } = stage {
                        if (400..500).contains(&status) && status != 408 && status != 429 {
                            self.final_start_error = Some(request);
                        }
                    }
                }
            }
            PodStep::Attach | PodStep::Finish => {
                if let FailureStage::Answered { status } = stage {
                    let final_answer =
                        (400..500).contains(&status) && status != 408 && status != 429;
                    if final_answer && !self.start_opened {
                        if let Some(first) = self.final_start_error {
                            return self.reject(first);
                        }
                    }
                    // The apiserver answers: is the pod still there?
                    if self.pod_read.is_none() {
                        let request = self.numbers.give_out();
                        self.pod_read = Some(request);
                        self.queue.push_back(DurableAction::ReadPod {
                            request,
                            timeout_ms: self.setup_timeout_ms,
                        });
                    }
                }
            }
        }
        let why = self.last_error.clone();
        self.lost(now_ms, &why, class);
    }

    fn pod(&mut self, found: bool, phase: Option<&str>, deleting: bool) {
        if !found {
            self.fail("PodGone", messages::pod_gone(&self.pod));
        } else if deleting || phase.is_some_and(|p| p != "Running") {
            let phase = phase.unwrap_or("unknown");
            self.fail("PodNotRunning", messages::pod_not_running(&self.pod, phase));
        }
    }

    /// The connection is lost (or a step broke): try again, at once the
    /// first time, then on the line's backoff, until the time without a
    /// connection reaches its limit.
    fn lost(&mut self, now_ms: u64, why: &str, class: Class) {
        if self.phase == Phase::Over {
            return;
        }
        let step = match self.phase {
            Phase::Finishing => PodStep::Finish,
            _ if self.may_have_started => PodStep::Attach,
            _ => PodStep::Start,
        };
        if self.last_error.is_empty() || !why.is_empty() {
            self.last_error = why.to_string();
        }
        match &mut self.disconnected {
            None => {
                self.disconnected = Some(Disconnection {
                    since_ms: now_ms,
                    line: Line::new(self.backoff, now_ms),
                    warned: false,
                });
                self.log(Level::Warning, messages::cut(&self.pod, why));
                self.next = Some((step, now_ms));
            }
            Some(d) => match d.line.next_delay(&class, now_ms, &mut self.random) {
                Some(delay) => self.next = Some((step, now_ms.saturating_add(millis(delay)))),
                None => self.give_up(),
            },
        }
    }

    fn give_up(&mut self) {
        let message = messages::gave_up(
            &self.pod,
            self.limit_ms,
            &self.last_error,
            self.may_have_started,
        );
        self.fail("StreamLost", message);
    }

    fn cleanup(&mut self, delivery: Delivery) {
        self.code = Some(delivery);
        self.phase = Phase::Cleaning;
        self.disconnected = None;
        self.next = Some((PodStep::Cleanup, 0));
    }

    fn fall_back(&mut self, what: &str) {
        self.log(Level::Warning, messages::fallback(&self.pod, what));
        self.phase = Phase::Over;
        self.queue.push_back(DurableAction::Plain);
        self.queue.push_back(DurableAction::Done);
    }

    fn cancel(&mut self, signal: &str) {
        if matches!(self.phase, Phase::Killing | Phase::Over) {
            return;
        }
        if !self.may_have_started {
            return self.finish_with(None);
        }
        self.log(Level::Warning, messages::cancelled(&self.pod, signal));
        self.phase = Phase::Killing;
        self.disconnected = None;
        // The stream that is open stays open; the kill goes beside it.
        self.in_flight = None;
        self.next = Some((PodStep::Kill, 0));
    }

    fn reject(&mut self, request: u32) {
        self.phase = Phase::Over;
        self.queue.push_back(DurableAction::Reject { request });
        self.queue.push_back(DurableAction::Done);
    }

    /// Ends with a failure: delivered when the caller's promise has
    /// resolved, else the caller gets the last set-up's error.
    fn fail(&mut self, reason: &'static str, message: String) {
        if !self.resolved {
            if let Some(request) = self.last_failed {
                return self.reject(request);
            }
            self.resolved = true;
            self.queue.push_back(DurableAction::Resolve);
        }
        self.finish_with(Some(Delivery::Failed { reason, message }));
    }

    fn finish_with(&mut self, delivery: Option<Delivery>) {
        self.phase = Phase::Over;
        if let Some(delivery) = delivery {
            self.queue.push_back(DurableAction::Deliver { delivery });
        }
        self.queue.push_back(DurableAction::Done);
    }

    fn log(&mut self, level: Level, message: String) {
        self.queue.push_back(DurableAction::Log { level, message });
    }
}

/// The exit code a finish step printed: a whole number 0..=255.
fn exit_status(stdout: &str) -> Option<i64> {
    let text = stdout.trim();
    if text.is_empty() || text.len() > 3 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse::<i64>().ok().filter(|c| (0..=255).contains(c))
}

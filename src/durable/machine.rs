//! The machine of one durable exec ([`DurableRun`]).

use std::collections::VecDeque;
use std::time::Duration;

use super::action::{Delivery, DurableAction, DurableFact, PodStep, StepEnd};
use super::delivered::{Delivered, LEDGER_LIMIT};
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
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DurableSpec {
    /// The pod's namespace.
    pub namespace: String,
    /// The pod's name.
    pub pod: String,
    /// The command, as the caller passed it.
    pub command: Vec<String>,
}

// At most this many delivered runs are cleaned up by one start.
const CLEANUPS_PER_START: usize = 8;

/// How often an open stream is pinged.
pub const PING_EVERY_MS: u64 = 5_000;
// A clean-up gets one attempt of this long: the caller waits on it.
const CLEANUP_TIMEOUT_MS: u64 = 5_000;
// A delivered run's own clean-up waits this long, idle (the process need
// not stay for it): a start in the same pod made meanwhile (a host's next
// exec, most often within milliseconds) removes its files in passing, with
// no exec of its own.
const CLEANUP_AFTER_MS: u64 = 2_000;
// A stopping process has this long to stop the command (its host waits
// 8 s in all): each kill attempt gets 2 s, and a failed one is made again
// after a short pause.
const KILL_WINDOW_MS: u64 = 6_000;
const KILL_ATTEMPT_MS: u64 = 2_000;
const KILL_PAUSE_MS: u64 = 250;
/// A command longer than this in the exec URL ([`url_bytes`]) runs as a
/// plain exec: the start step's URL carries the command and a script of
/// about 11.5 KB (percent-encoded), and an apiserver (16 KB of headers for
/// Node's, 8 KB a line for a default nginx in front) may refuse a URL that
/// the plain exec's fits in.
pub const MAX_COMMAND_BYTES: usize = 5_120;
// Starts that failed and were looked for in vain this many times, while
// the apiserver answered the looks: the start itself is refused (its URL,
// a proxy's limit), and the command runs as a plain exec.
const STARTS_REFUSED: u32 = 3;
// Attempts are bounded by the time without a connection; this only bounds
// a line whose steps keep failing at once.
const MAX_ATTEMPTS: u32 = 10_000;
// Finish steps whose status is none a finish gives (garbled on its way):
// after this many, the code is unknown.
const FINISHES_UNREAD: u32 = 3;

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
    /// Whether nothing more is to be said of it (the run's first
    /// connection is no reattach; a reattach is said once).
    warned: bool,
    /// Whether the cut was told (the run's first connection is no cut).
    told: bool,
    /// When a stream opened again, and the bytes received by then. A stream
    /// that holds (for [`HELD_MS`], or brings output) ends the
    /// disconnection; one cut again at once does not: its line, its backoff
    /// and its time go on, and nothing is said again.
    reattached: Option<(u64, (u64, u64))>,
}

/// How long a stream that opened again must hold, with no output, to count
/// as a connection: a round of pings.
const HELD_MS: u64 = PING_EVERY_MS;

/// One durable exec. Feed it facts with [`DurableRun::on_fact`] and take
/// actions from [`DurableRun::poll`] until `Done`.
#[derive(Debug, Clone)]
pub struct DurableRun {
    pod: String,
    run: String,
    connect_timeout_ms: u64,
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
    /// The run is known to be claimed: a start step's stream opened (its
    /// script claims at once), or a look found the run.
    claimed: bool,
    /// A start may have reached the pod: the next try attaches first.
    may_have_started: bool,
    /// The caller's promise was resolved.
    resolved: bool,
    /// A start answered with a final 4xx: the caller's error, unless an
    /// attach finds the run.
    final_start_error: Option<u32>,
    last_failed: Option<u32>,
    last_error: String,
    /// The status of a start or an attach that a finish step confirms.
    confirm: Option<i64>,
    /// Until when a kill is tried, once the process is being stopped.
    kill_until_ms: Option<u64>,
    /// The signal that stops the run.
    cancelled_by: Option<String>,
    /// Set-ups of looks, attaches and finishes that timed out in a row:
    /// each next one waits twice as long (a blip that swallowed one upgrade
    /// answer costs one short wait; a slow but healthy apiserver still gets
    /// the whole time).
    setup_timeouts: u32,
    disconnected: Option<Disconnection>,
    /// The bytes of stdout and stderr the host has passed on, as its last
    /// report said.
    received: (u64, u64),
    queue: VecDeque<DurableAction>,
    delivered: Delivered,
    /// The delivered runs the start out now cleans up.
    cleaning: Vec<String>,
    /// The ledger of delivered runs is being read: no start before it is.
    reading_ledger: bool,
    /// Starts that failed and that a look then found never claimed.
    starts_refused: u32,
    /// Finish steps whose status was none a finish gives.
    finishes_unread: u32,
}

impl DurableRun {
    /// The run of `spec` under `settings`, at `now_ms`; `random` draws the
    /// backoff's jitter. Its id comes from the operating system's
    /// randomness whatever the seed: two runs must never share a folder.
    pub fn new(
        settings: &Settings,
        spec: DurableSpec,
        random: RandomSource,
        delivered: Delivered,
        now_ms: u64,
    ) -> DurableRun {
        let length = url_bytes(&spec.command);
        let too_long = length > MAX_COMMAND_BYTES;
        let nothing = spec.command.is_empty();
        let mut run = DurableRun::with(settings, spec, random, delivered, now_ms);
        if too_long {
            let what = format!("got a command of {length} bytes in its URL, too long to run durably (at most {MAX_COMMAND_BYTES})");
            run.fall_back(&what);
        } else if nothing {
            // The runtime's own answer to an empty command is the caller's.
            run.plain();
        }
        run
    }

    fn with(
        settings: &Settings,
        spec: DurableSpec,
        random: RandomSource,
        delivered: Delivered,
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
            run,
            connect_timeout_ms: millis(settings.request_timeout),
            setup_timeout_ms: millis(calls.request_timeout),
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
            claimed: false,
            may_have_started: false,
            resolved: false,
            final_start_error: None,
            last_failed: None,
            last_error: String::new(),
            confirm: None,
            kill_until_ms: None,
            cancelled_by: None,
            setup_timeouts: 0,
            // Until the first stream opens, the run has no connection.
            disconnected: Some(Disconnection {
                since_ms: now_ms,
                line: Line::new(backoff, now_ms),
                warned: true,
                told: false,
                reattached: None,
            }),
            received: (0, 0),
            queue: VecDeque::new(),
            delivered,
            cleaning: Vec::new(),
            reading_ledger: false,
            starts_refused: 0,
            finishes_unread: 0,
        }
        .reading_the_ledger()
    }

    fn reading_the_ledger(mut self) -> DurableRun {
        let file = self.delivered.borrow_mut().ledger_to_read();
        if let Some(file) = file {
            self.reading_ledger = true;
            self.queue.push_back(DurableAction::ReadLedger {
                file,
                limit: LEDGER_LIMIT,
            });
        }
        self
    }

    /// The run's id.
    pub fn run_id(&self) -> &str {
        &self.run
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
                received,
                exit_code,
                stdout,
                why,
            } => {
                if let Some(step) = self.step_of(request) {
                    self.in_flight = None;
                    self.received = received;
                    self.ended(now_ms, step, exit_code, (&stdout, received), &why);
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
            DurableFact::Ledger { text } => {
                if self.reading_ledger {
                    self.reading_ledger = false;
                    self.delivered.borrow_mut().take_ledger(text.as_deref());
                }
            }
            DurableFact::Cancel { signal } => self.cancel(now_ms, &signal),
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
        if self.reading_ledger {
            return DurableAction::Wait { until_ms: None };
        }
        let limit_at = self.limit_at();
        if limit_at.is_some_and(|at| now_ms >= at) && self.phase != Phase::Killing {
            self.give_up();
            return self.poll(now_ms);
        }
        if self.in_flight.is_some() {
            return DurableAction::Wait { until_ms: limit_at };
        }
        if let (Phase::Cleaning, Some((PodStep::Cleanup, at))) = (self.phase, self.next) {
            if !self.delivered.borrow().holds(&self.run) {
                // Another start removed its files.
                self.next = None;
                self.finish_with(None);
                return self.poll(now_ms);
            }
            if at > now_ms {
                return DurableAction::Idle { until_ms: at };
            }
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
        if d.reattached.is_some() {
            return None;
        }
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
        let (connect_timeout_ms, setup_timeout_ms) = match step {
            PodStep::Cleanup => (CLEANUP_TIMEOUT_MS, CLEANUP_TIMEOUT_MS),
            PodStep::Kill => (KILL_ATTEMPT_MS, KILL_ATTEMPT_MS),
            // A start that may still reach the pod is awaited whole: none
            // other may be made before a look.
            PodStep::Start => (self.connect_timeout_ms, self.setup_timeout_ms),
            // These may be made again at once.
            PodStep::Look | PodStep::Attach | PodStep::Finish => {
                let doubled = self
                    .connect_timeout_ms
                    .saturating_mul(1u64 << self.setup_timeouts.min(16));
                (
                    self.connect_timeout_ms,
                    doubled.min(self.setup_timeout_ms.max(self.connect_timeout_ms)),
                )
            }
        };
        self.cleaning = if step == PodStep::Start {
            self.delivered
                .borrow()
                .of_pod(&self.pod, CLEANUPS_PER_START)
        } else {
            Vec::new()
        };
        DurableAction::Exec {
            request,
            step,
            run: self.run.clone(),
            cleanup: self.cleaning.clone(),
            connect_timeout_ms,
            setup_timeout_ms,
            ping_every_ms: PING_EVERY_MS,
            pong_deadline_ms: self.pong_deadline_ms,
        }
    }

    fn opened(&mut self, now_ms: u64, step: PodStep) {
        self.setup_timeouts = 0;
        if matches!(step, PodStep::Start | PodStep::Attach | PodStep::Finish) {
            // (A look's stream says nothing yet: it is over in a moment.)
            if step == PodStep::Start {
                self.claimed = true;
                self.may_have_started = true;
                // Its script cleans them up first thing.
                let cleaning = std::mem::take(&mut self.cleaning);
                let line = self.delivered.borrow_mut().cleaned(&cleaning);
                self.append(line);
            }
            let received = self.received;
            if let Some(d) = &mut self.disconnected {
                d.reattached = Some((now_ms, received));
                if !d.warned {
                    d.warned = true;
                    let after = now_ms.saturating_sub(d.since_ms);
                    let line = messages::reattached(&self.pod, after);
                    self.log(Level::Info, line);
                }
            }
        }
        // An attach that opens found nothing yet: the run's record is
        // known only when it ends well or with NoRecord.
        if !self.resolved && matches!(step, PodStep::Start | PodStep::Attach) {
            self.resolved = true;
            self.queue.push_back(DurableAction::Resolve);
        }
    }

    fn ended(
        &mut self,
        now_ms: u64,
        step: PodStep,
        exit_code: Option<i64>,
        (stdout, received): (&str, (u64, u64)),
        why: &str,
    ) {
        let end = exit_code.map(StepEnd::of);
        match (step, end) {
            (PodStep::Cleanup, end) => {
                if end == Some(StepEnd::Code(0)) {
                    let line = self
                        .delivered
                        .borrow_mut()
                        .cleaned(std::slice::from_ref(&self.run));
                    self.append(line);
                }
                self.finish_with(None);
            }
            // Claimed by the kill itself: nothing was started, nor will be.
            (PodStep::Kill, Some(StepEnd::NoRecord)) => {
                self.may_have_started = false;
                self.cancelled(true, "")
            }
            (PodStep::Kill, Some(_)) => self.cancelled(true, ""),
            (PodStep::Kill, None) => self.kill_again(now_ms, why),
            // All the output is sent, and the status is the command's.
            (PodStep::Start | PodStep::Attach, Some(StepEnd::Code(code))) => {
                self.cleanup(now_ms, delivery_of(code))
            }
            // One of our statuses, or the command's: the finish step says.
            (PodStep::Start | PodStep::Attach, Some(_)) => {
                self.confirm = exit_code;
                self.phase = Phase::Finishing;
                self.next = Some((PodStep::Finish, now_ms));
            }
            (PodStep::Look, Some(StepEnd::Code(0))) => {
                self.claimed = true;
                self.disconnected = None;
                self.next = Some((PodStep::Attach, now_ms));
            }
            (PodStep::Look, Some(StepEnd::NoRecord)) => {
                // Never claimed: no start reached the pod, so one may be made.
                self.may_have_started = false;
                self.starts_refused += 1;
                match self.final_start_error {
                    Some(request) => self.reject(request),
                    None if self.starts_refused >= STARTS_REFUSED => {
                        let what = format!(
                            "refused {STARTS_REFUSED} starts while it answered (last error: {})",
                            self.last_error
                        );
                        self.fall_back(&what)
                    }
                    None => self.lost(
                        now_ms,
                        why,
                        Class::Transient {
                            why: "no run".into(),
                        },
                    ),
                }
            }
            (PodStep::Finish, Some(StepEnd::Code(0))) => match done(stdout) {
                Some((code, sizes)) if sizes == received => self.cleanup(now_ms, delivery_of(code)),
                Some((_, (out, err))) => {
                    let (got_out, got_err) = received;
                    let message = messages::output_lost(
                        &self.pod,
                        out.saturating_sub(got_out),
                        err.saturating_sub(got_err),
                    );
                    self.fail_ended(now_ms, "OutputLost", message)
                }
                None => self.fail("RunRecordMissing", messages::record_missing(&self.pod)),
            },
            (PodStep::Finish, Some(StepEnd::NoRecord)) => self.no_record_after(self.confirm),
            // Not done: what the start or the attach ended with says why.
            (PodStep::Finish, Some(StepEnd::Broke)) => match self.confirm.map(StepEnd::of) {
                // Never will be.
                Some(StepEnd::WatcherGone) => {
                    self.fail("ExitCodeLost", messages::watcher_gone(&self.pod))
                }
                // The command ended, its output incomplete.
                Some(StepEnd::OutputNotKept) => {
                    self.fail_ended(now_ms, "OutputLost", messages::output_not_kept(&self.pod))
                }
                // The step that ended was ours, broken: attach again.
                _ => {
                    self.phase = Phase::Running;
                    let said = messages::step_broke(&self.pod, self.confirm.unwrap_or(97));
                    self.lost(now_ms, &said, Class::Transient { why: said.clone() })
                }
            },
            // No status a finish gives (garbled on its way, or a signal):
            // it says nothing of the run.
            (PodStep::Finish, Some(_)) => self.finish_unread(now_ms, exit_code),
            (_, Some(StepEnd::Code(code))) => {
                let said = messages::step_broke(&self.pod, code);
                self.lost(now_ms, &said, Class::Transient { why: said.clone() })
            }
            (_, Some(_)) => {
                let said = messages::step_broke(&self.pod, exit_code.unwrap_or(-1));
                self.lost(now_ms, &said, Class::Transient { why: said.clone() })
            }
            (_, None) => self.lost(now_ms, why, Class::Transient { why: why.into() }),
        }
    }

    /// A finish step's answer said nothing: made again, a few times, then
    /// the code is unknown (a proxy that garbles every answer).
    fn finish_unread(&mut self, now_ms: u64, status: Option<i64>) {
        self.finishes_unread = self.finishes_unread.saturating_add(1);
        if self.finishes_unread >= FINISHES_UNREAD {
            let message = messages::code_unread(&self.pod, self.finishes_unread);
            return self.fail("ExitCodeUnknown", message);
        }
        let said = messages::step_broke(&self.pod, status.unwrap_or(-1));
        self.lost(now_ms, &said, Class::Transient { why: said.clone() })
    }

    /// The run has no folder, after a start or an attach ended with
    /// `status`: a start's own refusal before it claimed anything, or a
    /// record that went away.
    fn no_record_after(&mut self, status: Option<i64>) {
        match status.map(StepEnd::of) {
            // Not a program: the runtime's own answer is the caller's.
            Some(StepEnd::NotAProgram) => self.plain(),
            Some(StepEnd::NoFolder) => self.fall_back(
                "cannot make or write the run's files in its temp folder ($TMPDIR, else /tmp)",
            ),
            Some(StepEnd::NoShell) => self.fall_back("cannot run `sh`"),
            Some(StepEnd::Missing(name)) => self.fall_back(&format!("has no `{name}`")),
            _ => self.fail("RunRecordMissing", messages::record_missing(&self.pod)),
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
                self.finish_with(None);
                return;
            }
            PodStep::Kill => {
                let why = self.last_error.clone();
                self.kill_again(now_ms, &why);
                return;
            }
            PodStep::Start => {
                // A URL too long for the apiserver or a proxy in front: the
                // plain exec's is shorter, and nothing was started.
                if let FailureStage::Answered { status: 414 | 431 } = stage {
                    let what = format!("refused the start as too long ({})", self.last_error);
                    return self.fall_back(&what);
                }
                if stage == FailureStage::Unknown && matches!(class, Class::Fatal { .. }) {
                    // No transport failure we know of (a client's own bug,
                    // a mocked client): nothing to look for or retry, and
                    // the plain exec's error is the answer.
                    return self.reject(request);
                }
                if !stage.never_reached() {
                    self.may_have_started = true;
                    if let FailureStage::Answered { status } = stage {
                        if (400..500).contains(&status) && status != 408 && status != 429 {
                            self.final_start_error = Some(request);
                        }
                    }
                }
            }
            PodStep::Look | PodStep::Attach | PodStep::Finish => {
                if facts.timed_out {
                    self.setup_timeouts = self.setup_timeouts.saturating_add(1);
                }
                if let FailureStage::Answered { status } = stage {
                    let final_answer =
                        (400..500).contains(&status) && status != 408 && status != 429;
                    if final_answer && !self.claimed {
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
                            timeout_ms: self.connect_timeout_ms,
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
            _ if self.claimed => PodStep::Attach,
            // A start may have run: look for it before another is made.
            _ if self.may_have_started => PodStep::Look,
            _ => PodStep::Start,
        };
        if self.last_error.is_empty() || !why.is_empty() {
            self.last_error = why.to_string();
        }
        let received = self.received;
        let held = self
            .disconnected
            .as_ref()
            .and_then(|d| d.reattached)
            .is_some_and(|(at, bytes)| now_ms.saturating_sub(at) >= HELD_MS || bytes != received);
        if held {
            self.disconnected = None;
        }
        match &mut self.disconnected {
            None => {
                self.disconnected = Some(Disconnection {
                    since_ms: now_ms,
                    line: Line::new(self.backoff, now_ms),
                    warned: false,
                    told: true,
                    reattached: None,
                });
                self.log(Level::Warning, messages::cut(&self.pod, why));
                self.next = Some((step, now_ms));
            }
            Some(d) => {
                d.reattached = None;
                let tell = !d.told;
                d.told = true;
                match d.line.next_delay(&class, now_ms, &mut self.random) {
                    Some(delay) => self.next = Some((step, now_ms.saturating_add(millis(delay)))),
                    None => self.give_up(),
                }
                if tell {
                    self.log(Level::Warning, messages::cut(&self.pod, why));
                }
            }
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

    /// The code is known: the caller gets it at once, and the run's files
    /// are removed after, by the next start in the pod or, when none comes
    /// soon, by a clean-up of its own (a host that ends first leaves it to
    /// the job's next start in the pod).
    fn cleanup(&mut self, now_ms: u64, delivery: Delivery) {
        // Written down before the caller hears: it may end the process at once.
        let line = self.delivered.borrow_mut().delivered(&self.pod, &self.run);
        self.append(line);
        self.queue.push_back(DurableAction::Deliver { delivery });
        self.phase = Phase::Cleaning;
        self.disconnected = None;
        self.next = Some((PodStep::Cleanup, now_ms.saturating_add(CLEANUP_AFTER_MS)));
    }

    fn fall_back(&mut self, what: &str) {
        self.log(Level::Warning, messages::fallback(&self.pod, what));
        self.plain();
    }

    /// The command runs as a plain exec: it was not started.
    fn plain(&mut self) {
        self.phase = Phase::Over;
        self.queue.push_back(DurableAction::Plain);
        self.queue.push_back(DurableAction::Done);
    }

    fn cancel(&mut self, now_ms: u64, signal: &str) {
        // After the delivery there is nothing to stop.
        if matches!(self.phase, Phase::Killing | Phase::Cleaning | Phase::Over) {
            return;
        }
        self.cancelled_by = Some(signal.to_string());
        // A start still out may yet reach the pod: the kill claims the run
        // first, so a start that arrives after it starts nothing.
        let start_out = matches!(self.in_flight, Some((_, PodStep::Start)));
        if !self.may_have_started && !start_out {
            return self.cancelled(true, "");
        }
        self.may_have_started = true;
        self.log(Level::Warning, messages::stopping(&self.pod, signal));
        self.phase = Phase::Killing;
        self.disconnected = None;
        self.kill_until_ms = Some(now_ms.saturating_add(KILL_WINDOW_MS));
        // The stream that is open stays open; the kill goes beside it.
        self.in_flight = None;
        self.next = Some((PodStep::Kill, 0));
    }

    /// A kill that did not get through: again after a pause, while the
    /// window lasts; then the run ends saying the command may be running.
    fn kill_again(&mut self, now_ms: u64, why: &str) {
        let at = now_ms.saturating_add(KILL_PAUSE_MS);
        if self.kill_until_ms.is_some_and(|until| at < until) {
            self.next = Some((PodStep::Kill, at));
        } else {
            self.log(Level::Warning, messages::not_stopped(&self.pod, why));
            self.cancelled(false, why);
        }
    }

    /// The run ends stopped by a signal: a host that lives on gets a
    /// status that says so (most end with the signal first).
    fn cancelled(&mut self, stopped: bool, why: &str) {
        let signal = self.cancelled_by.clone().unwrap_or_default();
        let message = if !self.may_have_started {
            messages::cancelled_before_start(&self.pod, &signal)
        } else if stopped {
            messages::cancelled(&self.pod, &signal)
        } else {
            messages::not_stopped(&self.pod, why)
        };
        if !self.resolved {
            self.resolved = true;
            self.queue.push_back(DurableAction::Resolve);
        }
        self.finish_with(Some(Delivery::Failed {
            reason: "Cancelled",
            message,
        }));
    }

    fn reject(&mut self, request: u32) {
        self.phase = Phase::Over;
        self.queue.push_back(DurableAction::Reject { request });
        self.queue.push_back(DurableAction::Done);
    }

    /// Ends with a failure of a run whose command has ended: its files are
    /// removed after, as a delivered run's are.
    fn fail_ended(&mut self, now_ms: u64, reason: &'static str, message: String) {
        if !self.resolved {
            return self.fail(reason, message);
        }
        self.cleanup(now_ms, Delivery::Failed { reason, message });
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

    fn append(&mut self, line: Option<(String, String)>) {
        if let Some((file, text)) = line {
            self.queue
                .push_back(DurableAction::AppendLedger { file, text });
        }
    }
}

/// What a run's `done` says (a finish step printed it): the command's code
/// (0..=255) and the sizes of its stdout and stderr.
fn done(stdout: &str) -> Option<(i64, (u64, u64))> {
    let mut fields = stdout.split_ascii_whitespace();
    let number = |text: Option<&str>| {
        let text = text?;
        (!text.is_empty() && text.len() <= 19 && text.bytes().all(|b| b.is_ascii_digit()))
            .then(|| text.parse::<u64>().ok())
            .flatten()
    };
    let code = number(fields.next()).filter(|c| *c <= 255)?;
    let sizes = (number(fields.next())?, number(fields.next())?);
    fields.next().is_none().then_some((code as i64, sizes))
}

/// How many bytes `command` takes in an exec URL: `command=<value>&` for
/// each part, percent-encoded as client-node's query string encodes it.
pub fn url_bytes(command: &[String]) -> usize {
    let encoded = |b: &u8| {
        if b.is_ascii_alphanumeric() || b"-_.!~*'()".contains(b) {
            1
        } else {
            3
        }
    };
    command
        .iter()
        .map(|part| "command=&".len() + part.bytes().map(|b| encoded(&b)).sum::<usize>())
        .sum()
}

fn delivery_of(code: i64) -> Delivery {
    if code == 0 {
        Delivery::Success
    } else {
        Delivery::ExitCode(code)
    }
}

#[cfg(test)]
mod tests {
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    use std::rc::Rc;

    use super::*;
    use crate::durable::UTILITIES;

    const T0: u64 = 1_000_000;

    fn settings() -> Settings {
        let mut s = Settings::new();
        s.calls.disconnect_limit = Duration::from_secs(60);
        s.calls.pong_deadline = Duration::from_secs(15);
        s
    }

    fn run() -> DurableRun {
        let spec = DurableSpec {
            namespace: "ci".into(),
            pod: "job-pod".into(),
            command: vec!["sh".into(), "-e".into(), "script.sh".into()],
        };
        DurableRun::new(
            &settings(),
            spec,
            RandomSource::seeded(7),
            Delivered::default(),
            T0,
        )
    }

    /// Every action up to a wait or the end.
    fn drain(r: &mut DurableRun, now: u64) -> Vec<DurableAction> {
        let mut out = Vec::new();
        for _ in 0..100 {
            let a = r.poll(now);
            let stop = a.ends_turn();
            out.push(a);
            if stop {
                return out;
            }
        }
        panic!("no wait or end in 100 actions: {out:?}");
    }

    /// The exec asked for among `actions`: its request and step.
    fn exec(actions: &[DurableAction]) -> Option<(u32, PodStep)> {
        actions.iter().find_map(|a| match a {
            DurableAction::Exec { request, step, .. } => Some((*request, *step)),
            _ => None,
        })
    }

    fn refused() -> ErrorFacts {
        ErrorFacts {
            codes: vec!["ECONNREFUSED".into()],
            message: "connect ECONNREFUSED 127.0.0.1:6443".into(),
            ..ErrorFacts::default()
        }
    }

    fn answered(status: u16) -> ErrorFacts {
        ErrorFacts {
            status: Some(status),
            message: format!("Unexpected server response: {status}"),
            ..ErrorFacts::default()
        }
    }

    fn timed_out() -> ErrorFacts {
        ErrorFacts::own_timeout()
    }

    fn ended(request: u32, code: Option<i64>, stdout: &str) -> DurableFact {
        DurableFact::Ended {
            request,
            received: (10, 5),
            exit_code: code,
            stdout: stdout.into(),
            why: if code.is_none() {
                "the connection was lost".into()
            } else {
                String::new()
            },
        }
    }

    fn sigterm() -> DurableFact {
        DurableFact::Cancel {
            signal: "SIGTERM".into(),
        }
    }

    /// Request `request` failed with `facts` at `now`: when the next try is.
    fn fail_then_wait(r: &mut DurableRun, now: u64, request: u32, facts: ErrorFacts) -> u64 {
        r.on_fact(now, DurableFact::Failed { request, facts });
        match *drain(r, now).last().unwrap() {
            DurableAction::Wait {
                until_ms: Some(until),
            } => until,
            ref other => panic!("{other:?}"),
        }
    }

    fn delivered(actions: &[DurableAction]) -> Option<Delivery> {
        actions.iter().find_map(|a| match a {
            DurableAction::Deliver { delivery } => Some(delivery.clone()),
            _ => None,
        })
    }

    fn logs(actions: &[DurableAction], level: Level) -> Vec<String> {
        actions
            .iter()
            .filter_map(|a| match a {
                DurableAction::Log { level: l, message } if *l == level => Some(message.clone()),
                _ => None,
            })
            .collect()
    }

    /// The exec asked for among `actions`: its request and the runs it
    /// cleans up.
    fn start_and_cleanup(actions: &[DurableAction]) -> (u32, Vec<String>) {
        actions
            .iter()
            .find_map(|a| match a {
                DurableAction::Exec {
                    request, cleanup, ..
                } => Some((*request, cleanup.clone())),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no exec: {actions:?}"))
    }

    /// A run of `true` in pod `ci/<pod>` sharing `list`, made at `now`.
    fn run_in(pod: &str, seed: u64, list: &Delivered, now: u64) -> DurableRun {
        let spec = DurableSpec {
            namespace: "ci".into(),
            pod: pod.into(),
            command: vec!["true".into()],
        };
        DurableRun::new(
            &settings(),
            spec,
            RandomSource::seeded(seed),
            Rc::clone(list),
            now,
        )
    }

    /// A run started and attached at T0: the request of its start.
    fn started(r: &mut DurableRun) -> u32 {
        let (start, step) = exec(&drain(r, T0)).unwrap();
        assert_eq!(step, PodStep::Start);
        r.on_fact(T0, DurableFact::Opened { request: start });
        assert!(drain(r, T0).contains(&DurableAction::Resolve));
        start
    }

    /// After `actions` ended idle, waiting for a delivered run's own
    /// clean-up: the actions when that wait is over.
    fn idle_then(r: &mut DurableRun, actions: &[DurableAction]) -> Vec<DurableAction> {
        let Some(DurableAction::Idle { until_ms }) = actions.last() else {
            panic!("not idle: {actions:?}")
        };
        drain(r, *until_ms)
    }

    /// From the end of the output to the delivery: the attach exits with
    /// the command's `code`, the code is given, then, after an idle wait,
    /// the run is cleaned up.
    fn finish(r: &mut DurableRun, attach: u32, at: u64, code: i64) -> Vec<DurableAction> {
        r.on_fact(at, ended(attach, Some(code), ""));
        let mut actions = drain(r, at);
        assert!(
            actions
                .iter()
                .any(|a| matches!(a, DurableAction::Deliver { .. })),
            "the code is given before the clean-up: {actions:?}"
        );
        actions.extend(idle_then(r, &actions));
        let (clean, step) = exec(&actions).unwrap();
        assert_eq!(step, PodStep::Cleanup);
        r.on_fact(at, DurableFact::Opened { request: clean });
        r.on_fact(at, ended(clean, Some(0), ""));
        actions.extend(drain(r, at));
        actions
    }

    #[test]
    fn a_healthy_run_starts_once_delivers_the_code_then_cleans_up() {
        let mut r = run();
        assert!(matches!(
            r.clone().poll(T0),
            DurableAction::Exec {
                step: PodStep::Start,
                connect_timeout_ms: 10_000,
                setup_timeout_ms: 65_000,
                ping_every_ms: 5_000,
                pong_deadline_ms: 15_000,
                ..
            }
        ));
        let start = started(&mut r);
        let end = finish(&mut r, start, T0 + 5, 3);
        assert_eq!(delivered(&end), Some(Delivery::ExitCode(3)));
        assert_eq!(end.last(), Some(&DurableAction::Done));
        assert!(logs(&end, Level::Warning).is_empty());

        let mut r = run();
        let start = started(&mut r);
        assert_eq!(
            delivered(&finish(&mut r, start, T0, 0)),
            Some(Delivery::Success)
        );
    }

    #[test]
    fn a_cut_reattaches_at_once_with_one_warning_and_one_line_and_never_starts_again() {
        let mut r = run();
        let start = started(&mut r);
        r.on_fact(T0 + 100, ended(start, None, ""));
        let after_cut = drain(&mut r, T0 + 100);
        let warnings = logs(&after_cut, Level::Warning);
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0].starts_with("the exec stream of pod \"ci/job-pod\" was cut"),
            "{}",
            warnings[0]
        );
        assert!(warnings[0].contains(
            "reattaching; the script is still running in the pod and will not be started again"
        ));
        let (attach, step) = exec(&after_cut).expect("reattached at once");
        assert_eq!(step, PodStep::Attach);
        // Refused for a while: attaches again and again, never a start.
        let mut now = T0 + 100;
        let mut request = attach;
        for _ in 0..5 {
            r.on_fact(
                now,
                DurableFact::Failed {
                    request,
                    facts: refused(),
                },
            );
            let actions = drain(&mut r, now);
            assert!(
                logs(&actions, Level::Warning).is_empty(),
                "one warning per cut"
            );
            let DurableAction::Wait {
                until_ms: Some(until),
            } = actions.last().unwrap()
            else {
                panic!("{actions:?}")
            };
            now = *until;
            let (next, step) = exec(&drain(&mut r, now)).unwrap();
            assert_eq!(step, PodStep::Attach);
            request = next;
        }
        r.on_fact(now, DurableFact::Opened { request });
        let back = drain(&mut r, now);
        let lines = logs(&back, Level::Info);
        assert_eq!(lines.len(), 1);
        assert!(
            lines[0].starts_with("reattached to the script in pod \"ci/job-pod\" after "),
            "{}",
            lines[0]
        );
        assert!(!back.contains(&DurableAction::Resolve), "resolved once");
        let end = finish(&mut r, request, now, 0);
        assert_eq!(delivered(&end), Some(Delivery::Success));
    }

    #[test]
    fn the_disconnection_limit_counts_time_without_a_connection_not_the_scripts_run_time() {
        let mut r = run();
        let start = started(&mut r);
        // Attached for two hours, then cut: the whole minute is still there.
        let cut_at = T0 + 2 * 3_600_000;
        r.on_fact(cut_at, ended(start, None, ""));
        let (mut request, _) = exec(&drain(&mut r, cut_at)).unwrap();
        let mut now = cut_at;
        let mut gave_up = None;
        for _ in 0..200 {
            r.on_fact(
                now,
                DurableFact::Failed {
                    request,
                    facts: refused(),
                },
            );
            let actions = drain(&mut r, now);
            if let Some(d) = delivered(&actions) {
                gave_up = Some((now, d));
                break;
            }
            let DurableAction::Wait {
                until_ms: Some(until),
            } = actions.last().unwrap()
            else {
                panic!("{actions:?}")
            };
            now = *until;
            let actions = drain(&mut r, now);
            if let Some(d) = delivered(&actions) {
                gave_up = Some((now, d));
                break;
            }
            request = exec(&actions).unwrap().0;
        }
        let (at, delivery) = gave_up.expect("gave up");
        assert!(
            at >= cut_at + 60_000 - 8_000 && at <= cut_at + 60_000,
            "gave up {} ms after the cut",
            at - cut_at
        );
        let Delivery::Failed { reason, message } = delivery else {
            panic!()
        };
        assert_eq!(reason, "StreamLost");
        assert!(
            message.contains("ci/job-pod") && message.contains("may still be running"),
            "{message}"
        );
        assert!(message.contains("ECONNREFUSED"), "{message}");
    }

    #[test]
    fn a_set_up_that_hangs_past_the_limit_gives_up_at_the_limit() {
        let mut r = run();
        let start = started(&mut r);
        r.on_fact(T0, ended(start, None, ""));
        let actions = drain(&mut r, T0);
        assert!(exec(&actions).is_some());
        assert_eq!(
            actions.last(),
            Some(&DurableAction::Wait {
                until_ms: Some(T0 + 60_000)
            })
        );
        let end = drain(&mut r, T0 + 60_000);
        assert!(
            matches!(
                delivered(&end),
                Some(Delivery::Failed {
                    reason: "StreamLost",
                    ..
                })
            ),
            "{end:?}"
        );
    }

    #[test]
    fn a_start_that_provably_never_reached_the_pod_is_made_again() {
        let mut r = run();
        let (start, _) = exec(&drain(&mut r, T0)).unwrap();
        let until = fail_then_wait(&mut r, T0, start, refused());
        assert_eq!(exec(&drain(&mut r, until)).unwrap().1, PodStep::Start);
    }

    #[test]
    fn a_start_that_may_have_reached_the_pod_is_looked_for_before_another_is_made() {
        let mut r = run();
        let (start, _) = exec(&drain(&mut r, T0)).unwrap();
        let until = fail_then_wait(&mut r, T0, start, timed_out());
        let (attach, step) = exec(&drain(&mut r, until)).unwrap();
        assert_eq!(step, PodStep::Look, "a look first: the start may have run");
        // No run: nothing was claimed, a start may be made.
        r.on_fact(until, DurableFact::Opened { request: attach });
        r.on_fact(until, ended(attach, Some(98), ""));
        let actions = drain(&mut r, until);
        assert!(delivered(&actions).is_none(), "{actions:?}");
        let DurableAction::Wait {
            until_ms: Some(next),
        } = *actions.last().unwrap()
        else {
            panic!("{actions:?}")
        };
        assert_eq!(exec(&drain(&mut r, next)).unwrap().1, PodStep::Start);
    }

    #[test]
    fn an_attach_that_finds_the_run_after_a_start_answered_with_a_status_follows_it() {
        // A gateway answered 503 after forwarding the upgrade: the start ran.
        let mut r = run();
        let (start, _) = exec(&drain(&mut r, T0)).unwrap();
        let until = fail_then_wait(&mut r, T0, start, answered(503));
        let (look, step) = exec(&drain(&mut r, until)).unwrap();
        assert_eq!(step, PodStep::Look);
        r.on_fact(until, DurableFact::Opened { request: look });
        r.on_fact(until, ended(look, Some(0), ""));
        let (attach, step) = exec(&drain(&mut r, until)).unwrap();
        assert_eq!(step, PodStep::Attach);
        r.on_fact(until, DurableFact::Opened { request: attach });
        assert!(drain(&mut r, until).contains(&DurableAction::Resolve));
        assert_eq!(
            delivered(&finish(&mut r, attach, until, 0)),
            Some(Delivery::Success)
        );
    }

    #[test]
    fn a_start_refused_with_a_final_answer_is_the_callers_error_when_no_run_is_found() {
        let mut r = run();
        let (start, _) = exec(&drain(&mut r, T0)).unwrap();
        let until = fail_then_wait(&mut r, T0, start, answered(403));
        let (look, step) = exec(&drain(&mut r, until)).unwrap();
        assert_eq!(step, PodStep::Look);
        r.on_fact(
            until,
            DurableFact::Failed {
                request: look,
                facts: answered(403),
            },
        );
        let end = drain(&mut r, until);
        assert_eq!(
            end,
            vec![
                DurableAction::Reject { request: start },
                DurableAction::Done
            ]
        );
    }

    #[test]
    fn a_start_that_fails_with_no_transport_failure_is_the_plain_clients_error_at_once() {
        // What a mocked client-node or a bug in the client throws: no code,
        // no status, no message we know. The plain exec throws it; so do we.
        let mut r = run();
        let (start, _) = exec(&drain(&mut r, T0)).unwrap();
        r.on_fact(
            T0,
            DurableFact::Failed {
                request: start,
                facts: ErrorFacts {
                    message: "container not found".into(),
                    ..ErrorFacts::default()
                },
            },
        );
        let end = drain(&mut r, T0);
        assert_eq!(
            end[end.len() - 2..],
            [
                DurableAction::Reject { request: start },
                DurableAction::Done
            ],
            "{end:?}"
        );
    }

    #[test]
    fn a_missing_record_after_the_start_ran_fails_and_never_starts_again() {
        let mut r = run();
        let start = started(&mut r);
        r.on_fact(T0, ended(start, None, ""));
        let (attach, _) = exec(&drain(&mut r, T0)).unwrap();
        r.on_fact(T0, DurableFact::Opened { request: attach });
        r.on_fact(T0, ended(attach, Some(98), ""));
        // 98 could be the command's own: the finish step finds no folder.
        let (fin, step) = exec(&drain(&mut r, T0)).unwrap();
        assert_eq!(step, PodStep::Finish);
        r.on_fact(T0, ended(fin, Some(98), ""));
        let end = drain(&mut r, T0);
        let Some(Delivery::Failed { reason, message }) = delivered(&end) else {
            panic!("{end:?}")
        };
        assert_eq!(reason, "RunRecordMissing");
        assert!(
            message.contains("is not started again") && message.contains("ci/job-pod"),
            "{message}"
        );
        assert_eq!(end.last(), Some(&DurableAction::Done));
        assert!(exec(&end).is_none());
    }

    #[test]
    fn an_attach_answered_404_reads_the_pod_and_a_pod_gone_fails_at_once_naming_it() {
        let mut r = run();
        let start = started(&mut r);
        r.on_fact(T0, ended(start, Some(137), ""));
        let (attach, _) = exec(&drain(&mut r, T0)).unwrap();
        r.on_fact(
            T0 + 10,
            DurableFact::Failed {
                request: attach,
                facts: answered(404),
            },
        );
        let actions = drain(&mut r, T0 + 10);
        let read = actions
            .iter()
            .find_map(|a| match a {
                DurableAction::ReadPod { request, .. } => Some(*request),
                _ => None,
            })
            .expect("the pod is read");
        r.on_fact(
            T0 + 20,
            DurableFact::Pod {
                request: read,
                found: false,
                phase: None,
                deleting: false,
            },
        );
        let end = drain(&mut r, T0 + 20);
        let Some(Delivery::Failed { reason, message }) = delivered(&end) else {
            panic!("{end:?}")
        };
        assert_eq!(reason, "PodGone");
        assert!(message.contains("\"ci/job-pod\" is gone"), "{message}");
    }

    #[test]
    fn a_pod_that_is_not_running_or_is_being_deleted_fails_and_a_running_one_is_attached_again() {
        for (phase, deleting, fails) in [
            ("Succeeded", false, true),
            ("Running", true, true),
            ("Running", false, false),
        ] {
            let mut r = run();
            let start = started(&mut r);
            r.on_fact(T0, ended(start, None, ""));
            let (attach, _) = exec(&drain(&mut r, T0)).unwrap();
            r.on_fact(
                T0,
                DurableFact::Failed {
                    request: attach,
                    facts: answered(400),
                },
            );
            let actions = drain(&mut r, T0);
            let read = actions
                .iter()
                .find_map(|a| match a {
                    DurableAction::ReadPod { request, .. } => Some(*request),
                    _ => None,
                })
                .unwrap();
            r.on_fact(
                T0,
                DurableFact::Pod {
                    request: read,
                    found: true,
                    phase: Some(phase.into()),
                    deleting,
                },
            );
            let after = drain(&mut r, T0);
            match delivered(&after) {
                Some(Delivery::Failed { reason, message }) => {
                    assert!(fails, "{phase} {deleting}: {message}");
                    assert_eq!(reason, "PodNotRunning");
                    assert!(message.contains(phase), "{message}");
                }
                other => assert!(!fails && other.is_none(), "{phase} {deleting}: {after:?}"),
            }
        }
    }

    #[test]
    fn a_container_without_a_utility_runs_the_exec_plainly_with_one_warning_naming_it() {
        let index = UTILITIES.iter().position(|u| *u == "setsid").unwrap() as i64;
        let mut r = run();
        let start = started(&mut r);
        r.on_fact(T0, ended(start, Some(200 + index), ""));
        let (fin, step) = exec(&drain(&mut r, T0)).unwrap();
        assert_eq!(step, PodStep::Finish, "200 + i could be the command's own");
        r.on_fact(T0, ended(fin, Some(98), ""));
        let end = drain(&mut r, T0);
        let warnings = logs(&end, Level::Warning);
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0].contains("has no `setsid`") && warnings[0].contains("plain exec"),
            "{}",
            warnings[0]
        );
        assert_eq!(
            end[end.len() - 2..],
            [DurableAction::Plain, DurableAction::Done]
        );
        assert_eq!(StepEnd::of(96), StepEnd::NoFolder);
        assert_eq!(
            StepEnd::of(200 + UTILITIES.len() as i64),
            StepEnd::Signalled(200 + UTILITIES.len() as i64)
        );
    }

    #[test]
    fn a_status_of_ours_is_confirmed_by_a_finish_step_which_a_cut_makes_again() {
        // The command exited 98, or 97, as it may: the finish step says so.
        for code in [
            93, 94, 95, 96, 97, 98, 126, 127, 128, 130, 137, 143, 199, 202, 255,
        ] {
            let mut r = run();
            let start = started(&mut r);
            r.on_fact(T0, ended(start, Some(code), ""));
            let (fin, step) = exec(&drain(&mut r, T0)).unwrap();
            assert_eq!(step, PodStep::Finish, "{code}");
            r.on_fact(T0, ended(fin, None, ""));
            let actions = drain(&mut r, T0);
            let (again, step) = exec(&actions).unwrap();
            assert_eq!(step, PodStep::Finish, "{code}: a cut finish is made again");
            r.on_fact(T0, ended(again, Some(0), &format!("{code} 10 5")));
            let actions = drain(&mut r, T0);
            assert_eq!(delivered(&actions), Some(Delivery::ExitCode(code)));
            assert_eq!(
                exec(&idle_then(&mut r, &actions)).unwrap().1,
                PodStep::Cleanup
            );
        }
        // A status not ours needs no finish step.
        for code in [0, 1, 2, 3, 92, 99, 125] {
            let mut r = run();
            let start = started(&mut r);
            r.on_fact(T0, ended(start, Some(code), ""));
            let actions = drain(&mut r, T0);
            assert_eq!(delivered(&actions), Some(delivery_of(code)), "{code}");
            assert_eq!(
                exec(&idle_then(&mut r, &actions)).unwrap().1,
                PodStep::Cleanup,
                "{code}"
            );
        }
    }

    #[test]
    fn a_done_whose_sizes_are_not_what_arrived_fails_saying_output_was_lost_and_a_bad_one_is_unknown(
    ) {
        let mut r = run();
        let start = started(&mut r);
        r.on_fact(T0, ended(start, Some(97), ""));
        let (fin, _) = exec(&drain(&mut r, T0)).unwrap();
        r.on_fact(T0, ended(fin, Some(0), "0 4096 5"));
        let end = drain(&mut r, T0);
        let Some(Delivery::Failed { reason, message }) = delivered(&end) else {
            panic!("{end:?}")
        };
        assert_eq!(reason, "OutputLost");
        assert!(message.contains("4086 bytes of its stdout"), "{message}");

        for garbage in ["garbage", "", "0 10", "256 10 5", "0 10 5 extra", "-1 10 5"] {
            let mut r = run();
            let start = started(&mut r);
            r.on_fact(T0, ended(start, Some(97), ""));
            let (fin, _) = exec(&drain(&mut r, T0)).unwrap();
            r.on_fact(T0, ended(fin, Some(0), garbage));
            let end = drain(&mut r, T0);
            assert!(
                matches!(
                    delivered(&end),
                    Some(Delivery::Failed {
                        reason: "RunRecordMissing",
                        ..
                    })
                ),
                "{garbage:?}: {end:?}"
            );
        }
        // Not done yet (97): the run goes on, attached again.
        let mut r = run();
        let start = started(&mut r);
        r.on_fact(T0, ended(start, Some(97), ""));
        let (fin, _) = exec(&drain(&mut r, T0)).unwrap();
        r.on_fact(T0, ended(fin, Some(97), ""));
        assert_eq!(exec(&drain(&mut r, T0)).unwrap().1, PodStep::Attach);

        // Not done, and never will be: what waits for the command is gone
        // (94), or a relay could not keep the output (93). The run fails at
        // once, saying what is unknown.
        for (status, reason, says) in [
            (
                94,
                "ExitCodeLost",
                "exit code is unknown; it may still be running",
            ),
            (93, "OutputLost", "could not be kept in the pod"),
        ] {
            let mut r = run();
            let start = started(&mut r);
            r.on_fact(T0, ended(start, Some(status), ""));
            let (fin, step) = exec(&drain(&mut r, T0)).unwrap();
            assert_eq!(step, PodStep::Finish);
            r.on_fact(T0, ended(fin, Some(97), ""));
            let end = drain(&mut r, T0);
            assert!(exec(&end).is_none(), "{end:?}");
            let Some(Delivery::Failed {
                reason: got,
                message,
            }) = delivered(&end)
            else {
                panic!("{end:?}")
            };
            assert_eq!(got, reason);
            assert!(message.contains(says), "{message}");
        }

        // The command's own 93 (its run done) is its code.
        let mut r = run();
        let start = started(&mut r);
        r.on_fact(T0, ended(start, Some(93), ""));
        let (fin, _) = exec(&drain(&mut r, T0)).unwrap();
        r.on_fact(T0, ended(fin, Some(0), "93 10 5"));
        assert_eq!(delivered(&drain(&mut r, T0)), Some(Delivery::ExitCode(93)));
    }

    #[test]
    fn a_status_no_shell_could_give_is_confirmed_by_a_finish_step_never_taken_as_the_code() {
        for said in [-1, 256, 300, 999, i64::MAX, i64::MIN] {
            assert_eq!(StepEnd::of(said), StepEnd::Garbled, "{said}");
            let mut r = run();
            let start = started(&mut r);
            r.on_fact(T0, ended(start, Some(said), ""));
            let (fin, step) = exec(&drain(&mut r, T0)).unwrap();
            assert_eq!(step, PodStep::Finish, "{said}");
            r.on_fact(T0, ended(fin, Some(0), "3 10 5"));
            assert_eq!(
                delivered(&drain(&mut r, T0)),
                Some(Delivery::ExitCode(3)),
                "{said}"
            );
        }
        assert_eq!(StepEnd::of(255), StepEnd::Signalled(255));
        assert_eq!(StepEnd::of(93), StepEnd::OutputNotKept);
    }

    #[test]
    fn a_finish_whose_status_is_not_one_a_finish_gives_is_made_again_a_few_times_then_unknown() {
        // A proxy garbled the finish's status (no shell gives -1 or 300; a
        // finish exits 0, 97 or 98): its answer says nothing, and must not be
        // read as "not done" (for a command's own 93 or 94, a false
        // OutputLost or ExitCodeLost).
        for confirmed in [93, 94, 3] {
            for answer in [-1, 300, 3, 1] {
                let mut r = run();
                let start = started(&mut r);
                let status = if confirmed == 3 { 300 } else { confirmed };
                r.on_fact(T0, ended(start, Some(status), ""));
                let (fin, step) = exec(&drain(&mut r, T0)).unwrap();
                assert_eq!(step, PodStep::Finish);
                r.on_fact(T0, DurableFact::Opened { request: fin });
                r.on_fact(T0, ended(fin, Some(answer), ""));
                let actions = drain(&mut r, T0);
                assert!(delivered(&actions).is_none(), "{answer}: {actions:?}");
                let mut at = T0;
                let (again, step) = loop {
                    match exec(&drain(&mut r, at)) {
                        Some(found) => break found,
                        None => at += 100,
                    }
                    assert!(at < T0 + 10_000, "{answer}: no finish again");
                };
                assert_eq!(step, PodStep::Finish, "{answer}");
                r.on_fact(at, DurableFact::Opened { request: again });
                r.on_fact(at, ended(again, Some(0), &format!("{confirmed} 10 5")));
                assert_eq!(
                    delivered(&drain(&mut r, at)),
                    Some(Delivery::ExitCode(confirmed)),
                    "{confirmed} after {answer}"
                );
            }
        }
        // Garbled every time: a few finishes, then the outcome is unknown,
        // well within the disconnection limit.
        let mut r = run();
        let start = started(&mut r);
        r.on_fact(T0, ended(start, Some(93), ""));
        let mut at = T0;
        let mut finishes = 0;
        let end = loop {
            let actions = drain(&mut r, at);
            if let Some(delivery) = delivered(&actions) {
                break delivery;
            }
            match exec(&actions) {
                Some((fin, PodStep::Finish)) => {
                    finishes += 1;
                    r.on_fact(at, DurableFact::Opened { request: fin });
                    r.on_fact(at, ended(fin, Some(3), ""));
                }
                Some(other) => panic!("{other:?}"),
                None => at += 50,
            }
            assert!(at < T0 + 20_000, "still finishing after 20 s");
        };
        assert_eq!(finishes, FINISHES_UNREAD);
        let Delivery::Failed { reason, message } = end else {
            panic!("{end:?}")
        };
        assert_eq!(reason, "ExitCodeUnknown");
        assert!(message.contains("could not be read"), "{message}");
    }

    #[test]
    fn a_run_failed_for_output_it_could_not_keep_or_lost_is_written_down_and_cleaned_up() {
        // 93 confirmed (a relay failed), and a done whose sizes are not what
        // arrived: the command has ended, so its files are removed as a
        // delivered run's are (a full temp folder stays full otherwise).
        for (status, finish_status, finish_out) in [(93, 97, ""), (97, 0, "0 4096 5")] {
            let list = Delivered::default();
            let mut r = run_in("job-pod", 1, &list, T0);
            let start = started(&mut r);
            r.on_fact(T0, ended(start, Some(status), ""));
            let (fin, _) = exec(&drain(&mut r, T0)).unwrap();
            r.on_fact(T0, ended(fin, Some(finish_status), finish_out));
            let actions = drain(&mut r, T0);
            assert!(
                matches!(
                    delivered(&actions),
                    Some(Delivery::Failed {
                        reason: "OutputLost",
                        ..
                    })
                ),
                "{actions:?}"
            );
            assert!(list.borrow().holds(r.run_id()), "{status}: written down");
            let (clean, step) = exec(&idle_then(&mut r, &actions)).unwrap();
            assert_eq!(step, PodStep::Cleanup);
            r.on_fact(T0, ended(clean, Some(0), ""));
            assert_eq!(drain(&mut r, T0).last(), Some(&DurableAction::Done));
            assert!(list.borrow().is_empty());
        }
        // 94: the command may still be running; its files stay.
        let list = Delivered::default();
        let mut r = run_in("job-pod", 1, &list, T0);
        let start = started(&mut r);
        r.on_fact(T0, ended(start, Some(94), ""));
        let (fin, _) = exec(&drain(&mut r, T0)).unwrap();
        r.on_fact(T0, ended(fin, Some(97), ""));
        let actions = drain(&mut r, T0);
        assert_eq!(actions.last(), Some(&DurableAction::Done), "{actions:?}");
        assert!(list.borrow().is_empty());
    }

    #[test]
    fn a_signal_kills_the_command_once_started_and_ends_at_once_before() {
        let mut r = run();
        let start = started(&mut r);
        r.on_fact(T0, sigterm());
        let actions = drain(&mut r, T0);
        let (kill, step) = exec(&actions).unwrap();
        assert_eq!(step, PodStep::Kill);
        // The attach that is still open ending changes nothing.
        r.on_fact(T0, ended(start, None, ""));
        assert!(exec(&drain(&mut r, T0)).is_none());
        r.on_fact(T0, ended(kill, Some(0), ""));
        let actions = drain(&mut r, T0);
        assert_eq!(actions.last(), Some(&DurableAction::Done));
        // A host that lives on through the signal hears how the run ended.
        match delivered(&actions) {
            Some(Delivery::Failed { reason, message }) => {
                assert_eq!(reason, "Cancelled");
                assert!(
                    message.starts_with("SIGTERM: the script in pod \"ci/job-pod\" was stopped"),
                    "{message}"
                );
            }
            other => panic!("{other:?}"),
        }

        // A start still out: the kill goes, and claims the run if the start
        // did not (98): then nothing was started.
        for (kill_status, said) in [(98, "was not started"), (0, "was stopped")] {
            let mut r = run();
            let (start, _) = exec(&drain(&mut r, T0)).unwrap();
            r.on_fact(T0, sigterm());
            let (kill, step) = exec(&drain(&mut r, T0)).unwrap();
            assert_eq!(step, PodStep::Kill);
            r.on_fact(T0, DurableFact::Opened { request: start });
            r.on_fact(T0, ended(kill, Some(kill_status), ""));
            let actions = drain(&mut r, T0);
            match delivered(&actions) {
                Some(Delivery::Failed { reason, message }) => {
                    assert_eq!(reason, "Cancelled");
                    assert!(message.contains(said), "{message}");
                }
                other => panic!("{other:?}"),
            }
        }

        // No start out yet (the ledger is being read, say): nothing to stop.
        let mut r = run();
        r.in_flight = None;
        r.next = Some((PodStep::Start, T0 + 1_000));
        r.on_fact(
            T0,
            DurableFact::Cancel {
                signal: "SIGINT".into(),
            },
        );
        let actions = drain(&mut r, T0);
        assert!(exec(&actions).is_none(), "{actions:?}");
        assert_eq!(
            actions.first(),
            Some(&DurableAction::Resolve),
            "the caller's promise settles"
        );
        match delivered(&actions) {
            Some(Delivery::Failed { reason, message }) => {
                assert_eq!(reason, "Cancelled");
                assert!(message.contains("was not started"), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_reattach_whose_answer_does_not_come_is_made_again_soon_waiting_longer_each_time() {
        let setup_of = |actions: &[DurableAction]| {
            actions.iter().find_map(|a| match a {
                DurableAction::Exec {
                    request,
                    step,
                    setup_timeout_ms,
                    ..
                } => Some((*request, *step, *setup_timeout_ms)),
                _ => None,
            })
        };
        let mut long = settings();
        long.calls.disconnect_limit = Duration::from_secs(600);
        let spec = DurableSpec {
            namespace: "ci".into(),
            pod: "job-pod".into(),
            command: vec!["true".into()],
        };
        let mut r = DurableRun::new(
            &long,
            spec,
            RandomSource::seeded(7),
            Delivered::default(),
            T0,
        );
        let (start, step, start_setup) = setup_of(&drain(&mut r, T0)).unwrap();
        assert_eq!(step, PodStep::Start);
        assert_eq!(start_setup, 65_000, "a start is awaited whole");
        r.on_fact(T0, DurableFact::Opened { request: start });
        // (A stream that held: the attach goes at once.)
        r.on_fact(T0 + HELD_MS, ended(start, None, ""));
        let mut now = T0 + HELD_MS;
        let mut waits = Vec::new();
        let (mut attach, step, mut setup) = setup_of(&drain(&mut r, now)).unwrap();
        assert_eq!(step, PodStep::Attach);
        for _ in 0..5 {
            waits.push(setup);
            now += setup;
            let until = fail_then_wait(&mut r, now, attach, timed_out());
            now = until;
            let next = setup_of(&drain(&mut r, now)).unwrap();
            assert_eq!(next.1, PodStep::Attach);
            (attach, setup) = (next.0, next.2);
        }
        assert_eq!(waits, vec![10_000, 20_000, 40_000, 65_000, 65_000]);
        // Once one opens, the next cut starts short again.
        r.on_fact(now, DurableFact::Opened { request: attach });
        r.on_fact(now + HELD_MS, ended(attach, None, ""));
        let (_, step, setup) = setup_of(&drain(&mut r, now + HELD_MS)).unwrap();
        assert_eq!((step, setup), (PodStep::Attach, 10_000));
    }

    #[test]
    fn streams_cut_again_at_once_are_one_disconnection_backed_off_and_told_once() {
        // A proxy that ends every stream with no status: each reattach opens
        // and is cut at once, with no output.
        let mut r = run();
        let mut request = started(&mut r);
        let mut now = T0;
        let mut sent_at = Vec::new();
        let mut warnings = 0;
        let mut gave_up = None;
        for _ in 0..200 {
            r.on_fact(now, DurableFact::Opened { request });
            r.on_fact(now, ended(request, None, "closed with no status"));
            let mut next = None;
            for _ in 0..50 {
                let actions = drain(&mut r, now);
                warnings += logs(&actions, Level::Warning).len();
                if let Some(d) = delivered(&actions) {
                    gave_up = Some(d);
                    break;
                }
                if let Some((req, _)) = exec(&actions) {
                    next = Some(req);
                    break;
                }
                match actions.last() {
                    Some(DurableAction::Wait { until_ms: Some(at) }) => now = *at,
                    _ => break,
                }
            }
            match next {
                Some(req) => {
                    sent_at.push(now);
                    request = req;
                }
                None => break,
            }
        }
        assert!(
            matches!(
                gave_up,
                Some(Delivery::Failed {
                    reason: "StreamLost",
                    ..
                })
            ),
            "gave up: {gave_up:?}"
        );
        assert_eq!(warnings, 1, "one warning for the whole disconnection");
        assert!(
            now - T0 >= 60_000 - 8_000,
            "not before the limit: {} ms",
            now - T0
        );
        assert!(
            sent_at.len() < 40,
            "backed off, not a storm: {} reattaches",
            sent_at.len()
        );
        let gaps: Vec<u64> = sent_at.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(gaps.iter().skip(3).all(|g| *g >= 1000), "gaps: {gaps:?}");
    }

    #[test]
    fn closing_the_stream_stops_following_the_run_without_killing_it() {
        let mut r = run();
        let _ = started(&mut r);
        r.on_fact(T0, DurableFact::Closed);
        assert_eq!(drain(&mut r, T0), vec![DurableAction::Done]);
    }

    #[test]
    fn late_reports_of_requests_no_longer_out_are_ignored() {
        let mut r = run();
        let start = started(&mut r);
        r.on_fact(T0, ended(start, None, ""));
        let (attach, _) = exec(&drain(&mut r, T0)).unwrap();
        r.on_fact(T0, ended(start, Some(0), ""));
        r.on_fact(T0, DurableFact::Opened { request: 999 });
        assert_eq!(
            drain(&mut r, T0),
            vec![DurableAction::Wait {
                until_ms: Some(T0 + 60_000)
            }]
        );
        r.on_fact(T0, DurableFact::Opened { request: attach });
        assert!(exec(&drain(&mut r, T0)).is_none());
    }

    #[test]
    fn two_runs_never_share_an_id_whatever_the_seed() {
        let (a, b) = (run(), run());
        assert_ne!(a.run_id(), b.run_id());
        assert_eq!(a.run_id().len(), 32);
        assert!(a.run_id().bytes().all(|c| c.is_ascii_hexdigit()));
    }

    /// Whatever the host reports, in any order: once a start's stream has
    /// opened (its script claims the run), no start is asked for again, a
    /// and a delivery comes at most once.
    #[test]
    fn no_sequence_of_reports_starts_a_claimed_run_again() {
        let mut dice = RandomSource::seeded(11);
        for round in 0..300 {
            let mut r = run();
            let mut now = T0;
            let mut out: Option<(u32, PodStep)> = None;
            let mut pod_read = None;
            let mut start_opened = false;
            let mut deliveries = 0;
            for _ in 0..400 {
                let actions = drain(&mut r, now);
                for a in &actions {
                    match a {
                        DurableAction::Exec { request, step, .. } => {
                            assert!(
                                !(start_opened && *step == PodStep::Start),
                                "round {round}: a claimed run was started again"
                            );
                            out = Some((*request, *step));
                        }
                        DurableAction::ReadPod { request, .. } => pod_read = Some(*request),
                        DurableAction::Deliver { .. } => deliveries += 1,
                        _ => {}
                    }
                }
                if actions.last() == Some(&DurableAction::Done) {
                    break;
                }
                now += dice.between(0, 3_000);
                let fact = match (out, dice.between(0, 9)) {
                    (_, 0) if pod_read.is_some() => DurableFact::Pod {
                        request: pod_read.take().unwrap(),
                        found: dice.between(0, 4) > 0,
                        phase: Some("Running".into()),
                        deleting: false,
                    },
                    (Some((request, step)), 1..=3) => {
                        if step == PodStep::Start {
                            start_opened = true;
                        }
                        DurableFact::Opened { request }
                    }
                    (Some((request, _)), 4..=5) => {
                        let codes = [0, 1, 98, 137, 202];
                        let code = codes[dice.between(0, codes.len() as u64 - 1) as usize];
                        out = None;
                        ended(
                            request,
                            if dice.between(0, 1) == 0 {
                                None
                            } else {
                                Some(code)
                            },
                            "0",
                        )
                    }
                    (Some((request, _)), 6..=8) => {
                        let facts = [
                            refused(),
                            timed_out(),
                            answered(503),
                            answered(404),
                            answered(403),
                        ];
                        out = None;
                        DurableFact::Failed {
                            request,
                            facts: facts[dice.between(0, 4) as usize].clone(),
                        }
                    }
                    _ => continue,
                };
                // A start whose stream opens claims the run (its script ran).
                r.on_fact(now, fact);
            }
            assert!(deliveries <= 1, "round {round}: {deliveries} deliveries");
        }
    }

    fn run_of(command: Vec<String>) -> DurableRun {
        let spec = DurableSpec {
            namespace: "ci".into(),
            pod: "job-pod".into(),
            command,
        };
        DurableRun::new(
            &settings(),
            spec,
            RandomSource::seeded(7),
            Delivered::default(),
            T0,
        )
    }

    #[test]
    fn an_empty_command_a_non_program_and_a_command_too_long_run_plainly() {
        let mut empty = run_of(vec![]);
        assert_eq!(
            drain(&mut empty, T0),
            vec![DurableAction::Plain, DurableAction::Done]
        );

        // Counted as in the URL: a multi-byte letter is 6 bytes there.
        assert_eq!(url_bytes(&["é x".into()]), 9 + 6 + 3 + 1);
        let mut long = run_of(vec![
            "sh".into(),
            "-c".into(),
            "é".repeat(MAX_COMMAND_BYTES / 6),
        ]);
        let actions = drain(&mut long, T0);
        let warnings = logs(&actions, Level::Warning);
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0].contains("too long to run durably"),
            "{}",
            warnings[0]
        );
        assert_eq!(
            actions[actions.len() - 2..],
            [DurableAction::Plain, DurableAction::Done]
        );
        let mut fits = run_of(vec!["x".repeat(MAX_COMMAND_BYTES - 9)]);
        assert!(exec(&drain(&mut fits, T0)).is_some());
        let mut over = run_of(vec!["x".repeat(MAX_COMMAND_BYTES - 8)]);
        assert!(exec(&drain(&mut over, T0)).is_none());

        // The start found the command is no program: the runtime says so.
        let mut r = run();
        let start = started(&mut r);
        r.on_fact(T0, ended(start, Some(95), ""));
        let (fin, _) = exec(&drain(&mut r, T0)).unwrap();
        r.on_fact(T0, ended(fin, Some(98), ""));
        assert_eq!(
            drain(&mut r, T0),
            vec![DurableAction::Plain, DurableAction::Done]
        );
    }

    #[test]
    fn a_kill_that_does_not_get_through_is_made_again_within_its_window_then_said() {
        let mut r = run();
        let _ = started(&mut r);
        r.on_fact(T0, sigterm());
        let actions = drain(&mut r, T0);
        assert!(
            logs(&actions, Level::Warning)[0].contains("stopping the script in pod \"ci/job-pod\"")
        );
        let (mut kill, _) = exec(&actions).unwrap();
        let mut now = T0;
        let mut kills = 1;
        loop {
            r.on_fact(
                now,
                DurableFact::Failed {
                    request: kill,
                    facts: refused(),
                },
            );
            let actions = drain(&mut r, now);
            if actions.last() == Some(&DurableAction::Done) {
                let warnings = logs(&actions, Level::Warning);
                assert!(
                    warnings[0].contains("could not stop the script")
                        && warnings[0].contains("may still be running"),
                    "{warnings:?}"
                );
                break;
            }
            let DurableAction::Wait {
                until_ms: Some(until),
            } = *actions.last().unwrap()
            else {
                panic!("{actions:?}")
            };
            now = until;
            let (next, step) = exec(&drain(&mut r, now)).unwrap();
            assert_eq!(step, PodStep::Kill);
            kill = next;
            kills += 1;
            assert!(kills < 100);
        }
        assert!(kills >= 10, "{kills} kills in the window");
        assert!(now - T0 <= KILL_WINDOW_MS, "tried for {} ms", now - T0);
    }

    #[test]
    fn a_clean_up_not_made_is_left_to_the_next_start_in_the_pod_and_a_signal_after_the_delivery_kills_nothing(
    ) {
        let list = Delivered::default();
        let mut first = run_in("job-pod", 1, &list, T0);
        let start = started(&mut first);
        first.on_fact(T0, ended(start, Some(0), ""));
        let actions = drain(&mut first, T0);
        assert_eq!(delivered(&actions), Some(Delivery::Success));
        assert!(matches!(actions.last(), Some(DurableAction::Idle { .. })));
        // The host stops: SIGTERM now kills nothing, the clean-up is not made.
        first.on_fact(
            T0,
            DurableFact::Cancel {
                signal: "SIGTERM".into(),
            },
        );
        assert!(exec(&drain(&mut first, T0)).is_none());
        assert_eq!(list.borrow().len(), 1);

        // Another pod's start leaves it; the same pod's start cleans it up.
        let mut other = run_in("other-pod", 2, &list, T0);
        let cleanup_of = |actions: &[DurableAction]| {
            actions.iter().find_map(|a| match a {
                DurableAction::Exec { cleanup, .. } => Some(cleanup.clone()),
                _ => None,
            })
        };
        assert_eq!(cleanup_of(&drain(&mut other, T0)), Some(vec![]));
        let mut next = run_in("job-pod", 3, &list, T0);
        let actions = drain(&mut next, T0);
        assert_eq!(cleanup_of(&actions), Some(vec![first.run_id().to_string()]));
        let (start, _) = exec(&actions).unwrap();
        next.on_fact(T0, DurableFact::Opened { request: start });
        assert!(list.borrow().is_empty(), "cleaned up by the start");
    }

    #[test]
    fn the_ledger_is_read_before_the_first_start_and_each_delivery_is_written_down_before_the_caller_hears(
    ) {
        let list: Delivered = Rc::new(std::cell::RefCell::new(
            crate::durable::DeliveredRuns::with_ledger(Some("/rt/ledger".into())),
        ));
        let left = "0123456789abcdef0123456789abcdef";
        let mut first = run_in("job-pod", 1, &list, T0);
        let actions = drain(&mut first, T0);
        assert_eq!(
            actions,
            vec![
                DurableAction::ReadLedger {
                    file: "/rt/ledger".into(),
                    limit: LEDGER_LIMIT
                },
                DurableAction::Wait { until_ms: None }
            ]
        );
        // Another run of the same process does not read it again.
        let mut second = run_in("job-pod", 2, &list, T0);
        assert!(!drain(&mut second, T0)
            .iter()
            .any(|a| matches!(a, DurableAction::ReadLedger { .. })));
        first.on_fact(
            T0,
            DurableFact::Ledger {
                text: Some(format!("d {left} ci/job-pod\n")),
            },
        );
        let actions = drain(&mut first, T0);
        let (request, cleanup) = start_and_cleanup(&actions);
        assert_eq!(cleanup, vec![left.to_string()]);
        first.on_fact(T0, DurableFact::Opened { request });
        let actions = drain(&mut first, T0);
        assert!(
            actions.contains(&DurableAction::AppendLedger {
                file: "/rt/ledger".into(),
                text: format!("c {left}\n")
            }),
            "{actions:?}"
        );
        first.on_fact(T0, ended(request, Some(0), ""));
        let actions = drain(&mut first, T0);
        let written = actions.iter().position(|a| {
            *a == DurableAction::AppendLedger {
                file: "/rt/ledger".into(),
                text: format!("d {} ci/job-pod\n", first.run_id()),
            }
        });
        let given = actions
            .iter()
            .position(|a| matches!(a, DurableAction::Deliver { .. }));
        assert!(
            written.is_some() && written < given,
            "written down before the caller hears: {actions:?}"
        );
        let (clean, step) = exec(&idle_then(&mut first, &actions)).unwrap();
        assert_eq!(step, PodStep::Cleanup);
        first.on_fact(T0, DurableFact::Opened { request: clean });
        first.on_fact(T0, ended(clean, Some(0), ""));
        let actions = drain(&mut first, T0);
        assert!(actions.contains(&DurableAction::AppendLedger {
            file: "/rt/ledger".into(),
            text: format!("c {}\n", first.run_id())
        }));
        assert!(list.borrow().is_empty());
    }

    #[test]
    fn a_start_in_the_pod_within_the_idle_wait_removes_the_runs_files_and_no_clean_up_of_its_own_is_made(
    ) {
        let list = Delivered::default();
        let mut first = run_in("job-pod", 1, &list, T0);
        let start = started(&mut first);
        first.on_fact(T0, ended(start, Some(0), ""));
        let actions = drain(&mut first, T0);
        assert_eq!(
            actions.last(),
            Some(&DurableAction::Idle {
                until_ms: T0 + CLEANUP_AFTER_MS
            })
        );
        let mut next = run_in("job-pod", 2, &list, T0 + 5);
        let actions = drain(&mut next, T0 + 5);
        let (request, cleanup) = start_and_cleanup(&actions);
        assert_eq!(cleanup, vec![first.run_id().to_string()]);
        next.on_fact(T0 + 5, DurableFact::Opened { request });
        // The first run's wait ends with nothing left to do.
        assert_eq!(
            drain(&mut first, T0 + CLEANUP_AFTER_MS),
            vec![DurableAction::Done]
        );
    }

    #[test]
    fn a_start_refused_as_too_long_or_refused_again_and_again_while_looks_answer_runs_plainly_with_a_warning(
    ) {
        for status in [414, 431] {
            let mut r = run();
            let (start, _) = exec(&drain(&mut r, T0)).unwrap();
            r.on_fact(
                T0,
                DurableFact::Failed {
                    request: start,
                    facts: answered(status),
                },
            );
            let actions = drain(&mut r, T0);
            assert_eq!(
                actions[actions.len() - 2..],
                [DurableAction::Plain, DurableAction::Done],
                "{status}"
            );
            let warnings = logs(&actions, Level::Warning);
            assert!(
                warnings[0].contains("refused the start as too long"),
                "{warnings:?}"
            );
        }
        // A start hung up on, and a look that finds nothing, three times.
        let mut r = run();
        let mut now = T0;
        let hung_up = || ErrorFacts {
            codes: vec!["ECONNRESET".into()],
            message: "socket hang up".into(),
            ..ErrorFacts::default()
        };
        let mut starts = 0;
        let end = loop {
            let actions = drain(&mut r, now);
            if actions.last() == Some(&DurableAction::Done) {
                break actions;
            }
            match exec(&actions) {
                Some((start, PodStep::Start)) => {
                    starts += 1;
                    r.on_fact(
                        now,
                        DurableFact::Failed {
                            request: start,
                            facts: hung_up(),
                        },
                    );
                }
                Some((look, PodStep::Look)) => {
                    r.on_fact(now, DurableFact::Opened { request: look });
                    r.on_fact(now, ended(look, Some(98), ""));
                }
                None => match actions.last() {
                    Some(DurableAction::Wait {
                        until_ms: Some(until),
                    }) => now = *until,
                    other => panic!("{other:?}"),
                },
                other => panic!("{other:?}"),
            }
            assert!(starts <= 3, "started {starts} times");
        };
        assert_eq!(starts, 3);
        assert_eq!(
            end[end.len() - 2..],
            [DurableAction::Plain, DurableAction::Done]
        );
        let warnings = logs(&end, Level::Warning);
        assert!(
            warnings[0].contains("refused 3 starts while it answered (last error: "),
            "{warnings:?}"
        );
    }
}

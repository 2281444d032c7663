//! The machine of one durable exec ([`DurableRun`]).
//!
//! Files, one concept each: the run, the facts it takes in, its next
//! action and the steps it sends (this file); where the run is and what
//! is known of its record in the pod (`state.rs`); what each end of a step
//! means (`step_ends.rs`); time without a connection, and its limit
//! (`disconnection.rs`); how the run ends: delivered, failed, rejected or
//! run plainly (`outcome.rs`); stopping the command when the hook process
//! is stopped (`cancel.rs`). The tests are in `tests/`, by topic.

use std::collections::VecDeque;
use std::time::Duration;

use super::action::{DurableAction, DurableFact, PodStep};
use super::delivered::{Delivered, LEDGER_LIMIT};
use crate::config::Settings;
use crate::millis;
use crate::protocol::Level;
use crate::random::RandomSource;
use crate::retry::RequestNumbers;
use crate::schedule::Backoff;
use cancel::KILL_ATTEMPT_MS;
use disconnection::Disconnection;
#[cfg(test)]
use disconnection::HELD_MS;
use state::{Claim, State};

mod cancel;
mod disconnection;
mod outcome;
mod state;
mod step_ends;
#[cfg(test)]
mod tests;

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
/// A command longer than this in the exec URL ([`url_bytes`]) runs as a
/// plain exec: the start step's URL carries the command and a script of
/// about 11.5 KB (percent-encoded), and an apiserver (16 KB of headers for
/// Node's, 8 KB a line for a default nginx in front) may refuse a URL that
/// the plain exec's fits in.
pub const MAX_COMMAND_BYTES: usize = 5_120;
// Attempts are bounded by the time without a connection; this only bounds
// a line whose steps keep failing at once.
const MAX_ATTEMPTS: u32 = 10_000;

/// One durable exec. Feed it facts with [`DurableRun::on_fact`] and take
/// actions from [`DurableRun::poll`] until `Done`.
#[derive(Debug, Clone)]
pub struct DurableRun {
    pod: String,
    run: String,
    connect_timeout_ms: u64,
    setup_timeout_ms: u64,
    pong_deadline_ms: u64,
    backoff: Backoff,
    retry_after_limit: Duration,
    random: RandomSource,
    numbers: RequestNumbers,
    state: State,
    claim: Claim,
    /// The step whose exec is out, and its request.
    in_flight: Option<(u32, PodStep)>,
    pod_read: Option<u32>,
    /// The step to make next, and when.
    next: Option<(PodStep, u64)>,
    /// The caller's promise was resolved.
    resolved: bool,
    last_failed: Option<u32>,
    last_error: String,
    /// Set-ups of looks, attaches and finishes that timed out in a row:
    /// each next one waits twice as long (a blip that swallowed one upgrade
    /// answer costs one short wait; a slow but healthy apiserver still gets
    /// the whole time).
    setup_timeouts: u32,
    /// Time without a connection, in any state that makes attempts: it
    /// goes on from finishing back to running.
    disconnected: Option<Disconnection>,
    /// The bytes of stdout and stderr the host has passed on, as its last
    /// report said.
    received: (u64, u64),
    queue: VecDeque<DurableAction>,
    delivered: Delivered,
    /// Starts that failed and that a look then found never claimed, over
    /// the whole run.
    starts_refused: u32,
    /// Finish steps whose status was none a finish gives, over the whole
    /// run: a reattach between them does not start the count again.
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
            backoff,
            retry_after_limit: settings.max_retry_after,
            random,
            numbers: RequestNumbers::default(),
            state: State::Running {
                start_cleans: Vec::new(),
            },
            claim: Claim::NotStarted,
            in_flight: None,
            pod_read: None,
            next: Some((PodStep::Start, now_ms)),
            resolved: false,
            last_failed: None,
            last_error: String::new(),
            setup_timeouts: 0,
            // Until the first stream opens, the run has no connection.
            disconnected: Some(Disconnection::before_first(backoff, now_ms)),
            received: (0, 0),
            queue: VecDeque::new(),
            delivered,
            starts_refused: 0,
            finishes_unread: 0,
        }
        .reading_the_ledger()
    }

    fn reading_the_ledger(mut self) -> DurableRun {
        let file = self.delivered.borrow_mut().ledger_to_read();
        if let Some(file) = file {
            self.state = State::ReadingLedger;
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
        if self.state == State::Over {
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
                    self.pod_read = None;
                    // A 404 says the pod is gone; any other failure to
                    // read it says nothing, and the attempts go on.
                    if facts.status == Some(404) {
                        self.pod(false, None, false);
                    }
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
                if self.state == State::ReadingLedger {
                    self.state = State::Running {
                        start_cleans: Vec::new(),
                    };
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
        match self.state {
            State::Over => return DurableAction::Done,
            State::ReadingLedger => return DurableAction::Wait { until_ms: None },
            _ => {}
        }
        // (Stopping the command ends the disconnection: a kill has its own
        // window.)
        let limit_at = self.limit_at();
        if limit_at.is_some_and(|at| now_ms >= at) {
            self.give_up();
            return self.poll(now_ms);
        }
        if self.in_flight.is_some() {
            return DurableAction::Wait { until_ms: limit_at };
        }
        if let (State::Cleaning, Some((PodStep::Cleanup, at))) = (&self.state, self.next) {
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
        let cleanup = if step == PodStep::Start {
            self.delivered
                .borrow()
                .of_pod(&self.pod, CLEANUPS_PER_START)
        } else {
            Vec::new()
        };
        if let State::Running { start_cleans } = &mut self.state {
            start_cleans.clone_from(&cleanup);
        }
        DurableAction::Exec {
            request,
            step,
            run: self.run.clone(),
            cleanup,
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
                self.claim = Claim::Claimed;
                let cleaned = match &mut self.state {
                    State::Running { start_cleans } => std::mem::take(start_cleans),
                    _ => Vec::new(),
                };
                let line = self.delivered.borrow_mut().cleaned(&cleaned);
                self.append(line);
            }
            self.reopened(now_ms);
        }
        // An attach that opens found nothing yet: the run's record is
        // known only when it ends well or with NoRecord.
        if !self.resolved && matches!(step, PodStep::Start | PodStep::Attach) {
            self.resolved = true;
            self.queue.push_back(DurableAction::Resolve);
        }
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

//! The machine of one call ([`Call`]): its state, `poll`, and the `on_*`
//! reports.

use crate::retry::{self, InFlight, Line, RequestNumbers, SteadyClock, Trouble};
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use super::breaker::Breaker;

use super::action::{Accepted, BadReport, CallAction, CallOutcome, CallResult};
use super::messages;
use super::operation::Operation;
use super::ownership::{Judgement, Ownership};
use super::policy::{self, Decision, Refusal};
use super::spec::CallSpec;
use crate::api_status::Forbidden;
use crate::classify::{classify, describe_answer, Class, ErrorFacts};
use crate::config::Settings;
use crate::failure_stage::{with_upgrade_status, FailureStage};
use crate::millis;
use crate::protocol::Level;
use crate::random::RandomSource;
use crate::text;

/// One Kubernetes API call, retried by the rules of its [`Operation`].
/// See the module docs of [`crate::call`].
#[derive(Debug, Clone)]
pub struct Call {
    operation: Operation,
    spec: CallSpec,
    /// For a create: what its body says about its owner.
    sent: Option<Ownership>,
    /// How messages name the call.
    what: String,
    /// The call's attempts: their schedule, start and deadline (no
    /// attempt starts at or after it).
    line: Line,
    random: RandomSource,
    request_timeout_ms: u64,
    /// How long an attempt is awaited before it is abandoned.
    abandon_after_ms: u64,
    /// How long 401s and authorization 403s are retried, from the first.
    auth_retry_ms: u64,
    /// When this call first got a 401 or an authorization 403.
    auth_refused_since: Option<u64>,
    /// A read that had no answer for one request timeout, still awaited
    /// while a second copy is out: the first answer wins.
    straggler: Option<Straggler>,
    /// Whose fault the last failure was, for the give-up.
    fault: messages::Fault,
    max_retry_after: Duration,
    deadline: Duration,
    /// Nothing is in flight after this time: the deadline plus one
    /// request timeout.
    end_ms: u64,
    clock: SteadyClock,
    state: State,
    /// The numbers of the requests sent (attempts and read-backs).
    requests: RequestNumbers,
    /// Attempts of the call sent.
    attempts: u32,
    /// An attempt of this call may have been applied (its write landed).
    may_have_applied: bool,
    /// The failures met: the warning given once, the last error, how
    /// many were retried.
    trouble: Trouble,
    /// The last request that reported an error of the API's (not our
    /// timeout, whether this machine's clock or the host's timer noticed
    /// it, nor cleared by one).
    last_reported: Option<u32>,
    /// Warn, Info and Debug actions not yet returned, oldest first.
    pending: Vec<CallAction>,
    /// A call of this process gave up this long ago (ms) with none
    /// answered since ([`super::Breaker`]): one attempt, no retry.
    known_outage_ms: Option<u64>,
    /// Told once how the call ended, when the call was made by a
    /// [`super::CallPolicy`].
    breaker: Option<Rc<RefCell<Breaker>>>,
    /// The call gave up on the API: out of time or attempts, or a failure
    /// it would have retried in a known outage (not a failure that may
    /// not be retried, such as a set-up that may have started).
    gave_up_on_the_api: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    /// The next attempt may start at this time.
    AttemptDue { at_ms: u64 },
    /// A read-back may start at this time; `conflict` got the 409.
    ReadBackDue { at_ms: u64, conflict: u32 },
    /// A request is out, with its timeout and the time the host abandons
    /// it (a read's timeout comes first: it is still awaited as a
    /// [`Straggler`] while a second copy goes out).
    InFlight { flight: InFlight, sent: Sent },
    /// The call is over: how it ends.
    Over(CallOutcome),
}

/// A read attempt that timed out: no longer waited for, but its answer,
/// until the host abandons it, is the call's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Straggler {
    flight: InFlight,
    number: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sent {
    Attempt { number: u32 },
    ReadBack { conflict: u32 },
}

impl Call {
    /// A call described by `spec`, under `settings` (its backoff, jitter,
    /// request timeout, `Retry-After` limit and seed; the deadline is
    /// `calls.deadline`), starting at `now_ms` (Unix epoch ms). With
    /// `calls.resilient` off, every call passes through.
    pub fn new(settings: &Settings, spec: CallSpec, now_ms: u64) -> Call {
        let operation = Operation::of_call(settings, &spec);
        let mut pending = Vec::new();
        let sent = match (&spec.body, operation) {
            (Some(body), Operation::Create) => match Ownership::of_body(body) {
                Ok(sent) => Some(sent),
                Err(why) => {
                    pending.push(CallAction::Log {
                        level: Level::Debug,
                        message: format!(
                            "k8s-auth-preflight: {}: the body sent is not an object of the API's shape ({}); a 409 on a retry will be the caller's",
                            spec.describe(None),
                            text::clip(&why, 200)
                        ),
                    });
                    None
                }
            },
            _ => None,
        };
        let what = spec.describe(sent.as_ref());
        let mut backoff = settings.backoff.with_deadline(settings.calls.deadline);
        // A call's own limit, not the check's 20 per review: with 4-8 s
        // between attempts, 20 would end a 120 s deadline early.
        backoff.max_attempts = settings.calls.max_attempts;
        let request_timeout_ms = millis(settings.request_timeout);
        // A write is never cut before the apiserver's own request timeout
        // (and a read's first copy is awaited as long): what the plain
        // client gets from a slow but healthy apiserver, the call gets too.
        let abandon_after_ms = millis(settings.calls.request_timeout).max(request_timeout_ms);
        let line = Line::new(backoff, now_ms);
        let deadline_ms = line.deadline_ms();
        // A set-up that timed out is never sent again, so its wait ends
        // with the call's deadline plus one request timeout.
        let last_wait_ms = match operation {
            Operation::Connect => request_timeout_ms,
            _ => abandon_after_ms,
        };
        Call {
            operation,
            spec,
            sent,
            what,
            line,
            random: RandomSource::for_seed(settings.seed, 0),
            request_timeout_ms,
            abandon_after_ms,
            auth_retry_ms: millis(settings.calls.auth_retry),
            auth_refused_since: None,
            straggler: None,
            fault: messages::Fault::Unreachable,
            max_retry_after: settings.max_retry_after,
            deadline: settings.calls.deadline,
            end_ms: deadline_ms.saturating_add(last_wait_ms),
            clock: SteadyClock::starting_at(now_ms),
            state: State::AttemptDue { at_ms: now_ms },
            requests: RequestNumbers::default(),
            attempts: 0,
            may_have_applied: false,
            trouble: Trouble::default(),
            last_reported: None,
            pending,
            known_outage_ms: None,
            breaker: None,
            gave_up_on_the_api: false,
        }
    }

    /// Whether the call ended by giving up on the API: out of time or
    /// attempts while the API kept failing, or a failure it would have
    /// retried but for a known outage. What [`super::Breaker`] learns from.
    pub fn gave_up_on_the_api(&self) -> bool {
        self.gave_up_on_the_api
    }

    /// This call starting `ago_ms` after another call of the process gave
    /// up on the API, with none answered since ([`super::Breaker`]): it
    /// makes one attempt, and a failure that would be retried gives up.
    pub fn in_known_outage(mut self, ago_ms: u64) -> Call {
        self.known_outage_ms = Some(ago_ms);
        self
    }

    /// This call telling `breaker` how it ended, once it is over.
    pub fn reporting_to(mut self, breaker: Rc<RefCell<Breaker>>) -> Call {
        self.breaker = Some(breaker);
        self
    }

    /// The cluster the call goes to, if the host said.
    pub fn cluster(&self) -> Option<&str> {
        self.spec.cluster.as_deref()
    }

    /// Whether the call ran under the policy (not passed through).
    pub fn is_wrapped(&self) -> bool {
        self.wrapped()
    }

    /// The kind of operation this call is treated as.
    pub fn operation(&self) -> Operation {
        self.operation
    }

    /// Requests sent so far (attempts and read-backs).
    pub fn requests(&self) -> u32 {
        self.requests.last()
    }

    /// The outcome, once decided.
    pub fn outcome(&self) -> Option<&CallOutcome> {
        match &self.state {
            State::Over(outcome) => Some(outcome),
            _ => None,
        }
    }

    /// The time by which the call is over, whatever happens: the deadline
    /// plus one request timeout. `None` for a call that passes through (no
    /// timeout of ours).
    pub fn ends_by_ms(&self) -> Option<u64> {
        (self.operation != Operation::PassThrough).then_some(self.end_ms)
    }

    fn wrapped(&self) -> bool {
        self.operation != Operation::PassThrough
    }

    /// The next thing to do. See [`CallAction`]. Call it until it returns
    /// `Wait` or `Done`.
    pub fn poll(&mut self, now_ms: u64) -> CallAction {
        let now = self.clock.observe(now_ms);
        if self.straggler.is_some_and(|s| s.flight.abandoned(now)) {
            self.straggler = None;
        }
        if let State::InFlight { flight, sent } = self.state {
            if flight.timed_out(now) {
                if let Sent::Attempt { number } = sent {
                    if !flight.abandoned(now) {
                        self.straggler = Some(Straggler {
                            flight: flight.no_longer_awaited(),
                            number,
                        });
                    }
                }
                // Our own timeout: the host holds no error for it, and the
                // API's last answer (if any) stays the call's last error.
                self.failed(flight.request(), ErrorFacts::own_timeout(), now);
            }
        }
        if !self.pending.is_empty() {
            return self.pending.remove(0);
        }
        match self.state.clone() {
            State::Over(outcome) => {
                if let Some(breaker) = self.breaker.take() {
                    breaker.borrow_mut().learn(self, now);
                }
                CallAction::Done { outcome }
            }
            State::AttemptDue { at_ms } if at_ms <= now => {
                if self.attempts > 0 && now >= self.line.deadline_ms() {
                    self.give_up(now, None);
                    return self.poll(now);
                }
                let request = self.requests.give_out();
                self.attempts += 1;
                let soon = now.saturating_add(self.request_timeout_ms);
                let abandon_at = match self.operation {
                    Operation::PassThrough => None,
                    // A set-up that timed out is never sent again (the
                    // command may have started), so a slow upgrade is
                    // awaited until the call's end, never cut at the
                    // request timeout.
                    Operation::Connect => Some(self.end_ms.max(soon)),
                    // While a read's first copy is still awaited, later
                    // copies are cut at the request timeout, as a stale
                    // endpoint's would be: two copies out at most.
                    Operation::Read if self.straggler.is_some() => Some(soon),
                    _ => Some(now.saturating_add(self.abandon_after_ms)),
                };
                let mut flight = InFlight::new(request, now, abandon_at);
                if self.operation == Operation::Read {
                    // A read with no answer within the request timeout sends
                    // another copy and keeps awaiting this one (a stale
                    // endpoint hangs; a slow apiserver answers the first).
                    flight = flight.timing_out_by(soon);
                }
                let timeout_ms = flight.abandon_after_ms().map(|ms| {
                    match self.operation {
                        // The host aborts a set-up a little before the
                        // machine would, so that its report, which knows
                        // whether the request was written, comes first.
                        Operation::Connect => ms - setup_report_margin(self.request_timeout_ms),
                        _ => ms,
                    }
                });
                self.state = State::InFlight {
                    flight,
                    sent: Sent::Attempt {
                        number: self.attempts,
                    },
                };
                CallAction::Send {
                    request,
                    attempt: self.attempts,
                    timeout_ms,
                    // A TLS handshake as slow as an answer may be is not cut
                    // short: only one that outlasts it is a stale endpoint.
                    connect_timeout_ms: (self.operation == Operation::Connect)
                        .then_some(self.abandon_after_ms),
                }
            }
            State::ReadBackDue { at_ms, conflict } if at_ms <= now => {
                let timeout_ms = self.abandon_after_ms.min(self.end_ms.saturating_sub(now));
                let (Some(method), Some(name)) = (
                    self.spec.read_method(),
                    self.sent.as_ref().and_then(|s| s.name.clone()),
                ) else {
                    self.finish(CallOutcome::Throw { request: conflict });
                    return self.poll(now);
                };
                if timeout_ms == 0 {
                    self.give_up(now, None);
                    return self.poll(now);
                }
                let request = self.requests.give_out();
                self.state = State::InFlight {
                    flight: InFlight::new(request, now, Some(now + timeout_ms)),
                    sent: Sent::ReadBack { conflict },
                };
                CallAction::ReadBack {
                    request,
                    method,
                    name,
                    namespace: self.spec.namespace.clone(),
                    timeout_ms,
                }
            }
            State::AttemptDue { at_ms } | State::ReadBackDue { at_ms, .. } => CallAction::Wait {
                until_ms: Some(at_ms),
            },
            State::InFlight { flight, .. } => CallAction::Wait {
                until_ms: flight.next_timeout(),
            },
        }
    }

    /// What request `request` got, as one report: [`Call::on_success`],
    /// [`Call::on_read_back`] or [`Call::on_failure`] by its kind.
    pub fn on_result(
        &mut self,
        request: u32,
        now_ms: u64,
        result: CallResult,
    ) -> Result<Accepted, BadReport> {
        match result {
            CallResult::Succeeded => self.on_success(request, now_ms),
            CallResult::ReadBack { body } => self.on_read_back(request, now_ms, &body),
            CallResult::Failed { facts } => self.on_failure(request, now_ms, facts),
            CallResult::FailedBeforeSending { facts } => {
                self.on_failure_before_sending(request, now_ms, facts)
            }
        }
    }

    /// Request `request` succeeded (a connection: its stream opened). The
    /// outcome will say to return what it returned.
    pub fn on_success(&mut self, request: u32, now_ms: u64) -> Result<Accepted, BadReport> {
        let now = self.clock.observe(now_ms);
        let Some(sent) = self.current(request)? else {
            return Ok(Accepted::Stale);
        };
        let Sent::Attempt { number } = sent else {
            return Err(BadReport::WrongReport(request));
        };
        if self.trouble.retried() > 0 {
            let last = self.trouble.last_error().unwrap_or_default();
            // Every attempt sent counts, a read's first copy answering last
            // included.
            let attempts = self.attempts.max(number);
            let line = messages::recovered(&self.what, attempts, self.line.elapsed_ms(now), last);
            self.pending.push(CallAction::Log {
                level: Level::Info,
                message: line,
            });
        }
        self.debug(request, Some(number), "answered", "done", now);
        self.finish(CallOutcome::Return { request });
        Ok(Accepted::Applied)
    }

    /// The stream of connection request `request` opened: the command may
    /// be running. Nothing is sent again, whatever happens to the stream.
    /// The same as [`Call::on_success`], named for what a connection does.
    pub fn on_stream_opened(&mut self, request: u32, now_ms: u64) -> Result<Accepted, BadReport> {
        self.on_success(request, now_ms)
    }

    /// Read-back `request` answered with `body`, the object as JSON text.
    /// The outcome returns it if it is the create's own, else throws the
    /// 409.
    pub fn on_read_back(
        &mut self,
        request: u32,
        now_ms: u64,
        body: &str,
    ) -> Result<Accepted, BadReport> {
        let now = self.clock.observe(now_ms);
        let Some(sent) = self.current(request)? else {
            return Ok(Accepted::Stale);
        };
        let Sent::ReadBack { conflict } = sent else {
            return Err(BadReport::WrongReport(request));
        };
        let judgement = match &self.sent {
            Some(sent) => sent.judge(body, Some(self.line.started_ms())),
            None => Judgement::NotOurs("the create's body was not readable".into()),
        };
        match judgement {
            Judgement::Ours => {
                let line = messages::found_own_object(
                    &self.what,
                    self.attempts,
                    self.line.elapsed_ms(now),
                );
                self.pending.push(CallAction::Log {
                    level: Level::Info,
                    message: line,
                });
                self.debug(request, None, "the object is this call's own", "done", now);
                self.finish(CallOutcome::Return { request });
            }
            Judgement::NotOurs(why) => {
                let result = format!("the object is not this call's own: {why}");
                self.debug(request, None, &result, "the 409 is the caller's", now);
                self.finish(CallOutcome::Throw { request: conflict });
            }
        }
        Ok(Accepted::Applied)
    }

    /// Request `request` failed; `facts` are what the host saw: the error
    /// codes, the HTTP status (for a connection: the status the apiserver
    /// answered the upgrade with), `Retry-After`, whether our timeout fired,
    /// the message. For a connection, the stage it failed at is read from
    /// them ([`FailureStage::of`]): refused (`ECONNREFUSED`), DNS
    /// (`ENOTFOUND`), TLS (a certificate code), an HTTP status, our timeout.
    pub fn on_failure(
        &mut self,
        request: u32,
        now_ms: u64,
        facts: ErrorFacts,
    ) -> Result<Accepted, BadReport> {
        self.report_failure(request, now_ms, with_upgrade_status(facts), None)
    }

    /// Request `request` failed before it was written: the host saw that
    /// the connection (TCP, or the TLS handshake) was never made, for
    /// example when its timeout fired during the connect. Nothing reached
    /// the apiserver, so a connection's set-up may be sent again and a
    /// write was not applied. When unsure, report with
    /// [`Call::on_failure`].
    pub fn on_failure_before_sending(
        &mut self,
        request: u32,
        now_ms: u64,
        facts: ErrorFacts,
    ) -> Result<Accepted, BadReport> {
        self.report_failure(request, now_ms, facts, Some(FailureStage::NotConnected))
    }

    /// A failure the host reported for `request`, at `stage` when it knows.
    fn report_failure(
        &mut self,
        request: u32,
        now_ms: u64,
        facts: ErrorFacts,
        stage: Option<FailureStage>,
    ) -> Result<Accepted, BadReport> {
        let now = self.clock.observe(now_ms);
        if self.current(request)?.is_none() {
            return Ok(Accepted::Stale);
        }
        if self
            .straggler
            .is_some_and(|s| s.flight.request() == request)
        {
            // The first copy of a read failed after another went out:
            // the other decides.
            self.straggler = None;
            return Ok(Accepted::Stale);
        }
        // A request the host's timer ended (the timeout this machine set)
        // holds our own abort, not the API's answer: never the call's last.
        if !facts.timed_out {
            self.last_reported = Some(request);
        }
        self.failed_at(request, facts, stage, now);
        Ok(Accepted::Applied)
    }

    /// The current request's kind, `None` when `request` is not the one in
    /// flight (stale), an error when it was never sent.
    fn current(&self, request: u32) -> Result<Option<Sent>, BadReport> {
        if !self.requests.gave_out(request) {
            return Err(BadReport::UnknownRequest(request));
        }
        Ok(match (self.state.clone(), self.straggler) {
            (State::Over(_), _) => None,
            (State::InFlight { flight, sent }, _) if flight.request() == request => Some(sent),
            (_, Some(s)) if s.flight.request() == request => {
                Some(Sent::Attempt { number: s.number })
            }
            _ => None,
        })
    }

    /// The request in flight failed with `facts`.
    fn failed(&mut self, request: u32, facts: ErrorFacts, now: u64) {
        self.failed_at(request, facts, None, now);
    }

    /// The request in flight failed with `facts`, at `stage` when the host
    /// said (else the stage is read from the facts).
    fn failed_at(
        &mut self,
        request: u32,
        facts: ErrorFacts,
        stage: Option<FailureStage>,
        now: u64,
    ) {
        let State::InFlight { sent, .. } = self.state.clone() else {
            return;
        };
        let stage = stage.unwrap_or_else(|| FailureStage::of(&facts));
        let class = classify(&facts, now, self.max_retry_after);
        let evidence = describe_answer(&class, &facts);
        let refusal = self.refusal(&stage, &facts, now);
        self.fault = messages::Fault::of(&stage, refusal != Refusal::None);
        let attempt = match sent {
            Sent::Attempt { number } => Some(number),
            Sent::ReadBack { .. } => None,
        };
        let decision = match sent {
            Sent::Attempt { number } => policy::after_failure(
                self.operation,
                self.sent.as_ref(),
                policy::Attempt {
                    number,
                    stage: &stage,
                    class: &class,
                    earlier_may_have_applied: self.may_have_applied,
                    refusal,
                },
            ),
            Sent::ReadBack { .. } => policy::after_read_back_failure(&class),
        };
        if attempt.is_some() {
            self.may_have_applied |= stage.may_have_applied();
        }
        let result = format!(
            "failed: {}, {evidence} ({})",
            class.kind_name(),
            stage.describe()
        );
        if let (Decision::Retry, Some(ago)) = (&decision, self.known_outage_ms) {
            self.trouble.last(evidence);
            self.debug(
                request,
                attempt,
                &result,
                "not retried: an outage is known",
                now,
            );
            let note = messages::known_outage(ago);
            self.give_up(now, Some(&note));
            self.gave_up_on_the_api = true;
            return;
        }
        match decision {
            Decision::Retry => {
                if let Some(evidence) = self.trouble.retrying(evidence) {
                    let line = retry::messages::starts_failing(
                        &self.what,
                        evidence,
                        millis(self.deadline),
                        "The job has not failed.",
                    );
                    self.pending.push(CallAction::Log {
                        level: Level::Warning,
                        message: line,
                    });
                }
                match self.next_delay(&class, now) {
                    Some(delay) => {
                        let at_ms = now + millis(delay);
                        self.state = match sent {
                            Sent::Attempt { .. } => State::AttemptDue { at_ms },
                            Sent::ReadBack { conflict } => State::ReadBackDue { at_ms, conflict },
                        };
                        let next = format!("next attempt in {}", text::seconds(millis(delay)));
                        self.debug(request, attempt, &result, &next, now);
                    }
                    None => {
                        self.debug(request, attempt, &result, "no more attempts", now);
                        self.give_up(now, None);
                    }
                }
            }
            Decision::ReadBack => {
                self.trouble.last(evidence);
                self.state = State::ReadBackDue {
                    at_ms: now,
                    conflict: request,
                };
                self.debug(
                    request,
                    attempt,
                    &result,
                    "an earlier attempt may have made it: reading it back",
                    now,
                );
            }
            Decision::Deleted => {
                if self.trouble.warned() {
                    let line = messages::found_deleted(
                        &self.what,
                        attempt.unwrap_or(self.attempts),
                        self.line.elapsed_ms(now),
                    );
                    self.pending.push(CallAction::Log {
                        level: Level::Info,
                        message: line,
                    });
                }
                self.debug(
                    request,
                    attempt,
                    &result,
                    "an earlier attempt may have deleted it: done",
                    now,
                );
                self.finish(CallOutcome::Deleted { request });
            }
            Decision::Throw => {
                let (thrown, next) = match sent {
                    Sent::ReadBack { conflict } => (conflict, "the 409 is the caller's"),
                    Sent::Attempt { .. } => {
                        (request, "not retried: the API's answer is the caller's")
                    }
                };
                self.debug(request, attempt, &result, next, now);
                if facts.timed_out {
                    // Our own timeout has no error for the host to throw.
                    self.trouble.last(evidence);
                    self.give_up(now, None);
                } else {
                    self.finish(CallOutcome::Throw { request: thrown });
                }
            }
            Decision::Stop(note) => {
                self.trouble.last(evidence);
                self.debug(request, attempt, &result, "not retried", now);
                self.give_up(now, Some(note));
            }
        }
    }

    /// The wait before the next request after a retryable failure, or
    /// `None` when the schedule (attempts, deadline) says no more.
    fn next_delay(&mut self, class: &Class, now: u64) -> Option<Duration> {
        self.line.next_delay(class, now, &mut self.random)
    }

    /// Whether the answer in `facts` refused the request on purpose, and
    /// whose refusal it was; the first 401 or authorization 403 opens the
    /// call's window for them.
    fn refusal(&mut self, stage: &FailureStage, facts: &ErrorFacts, now: u64) -> Refusal {
        let FailureStage::Answered { status } = *stage else {
            return Refusal::None;
        };
        let authorization = match status {
            401 => true,
            403 => Forbidden::of(facts.api_status().as_ref()) == Forbidden::Authorization,
            _ => return Refusal::None,
        };
        if !authorization {
            return Refusal::Admission;
        }
        let since = *self.auth_refused_since.get_or_insert(now);
        Refusal::Authorization {
            window_over: now.saturating_sub(since) >= self.auth_retry_ms,
        }
    }

    fn give_up(&mut self, now: u64, note: Option<&str>) {
        // A read's first copy is still out: its answer may yet come.
        if let Some(s) = self.straggler.take() {
            if !s.flight.abandoned(now) {
                self.state = State::InFlight {
                    flight: s.flight.awaited_until_abandoned(),
                    sent: Sent::Attempt { number: s.number },
                };
                return;
            }
        }
        // Stopped early for a reason of its own (`note`): not the API's
        // failing for a whole deadline.
        self.gave_up_on_the_api = note.is_none();
        let last = self.trouble.last_error().unwrap_or("none");
        let message = messages::gave_up(
            &self.what,
            self.line.elapsed_ms(now),
            self.attempts,
            last,
            note,
            self.fault,
        );
        self.finish(CallOutcome::GiveUp {
            message,
            last_request: self.last_reported,
        });
    }

    fn finish(&mut self, outcome: CallOutcome) {
        self.state = State::Over(outcome);
    }

    /// One debug line for `request` (a wrapped call only).
    fn debug(&mut self, request: u32, attempt: Option<u32>, result: &str, next: &str, now: u64) {
        if !self.wrapped() {
            return;
        }
        let which = match attempt {
            Some(n) => format!("attempt {n} (request {request})"),
            None => format!("read-back (request {request})"),
        };
        let left = self.line.left_ms(now);
        let line = messages::attempt_line(&self.what, &which, result, next, left);
        self.pending.push(CallAction::Log {
            level: Level::Debug,
            message: line,
        });
    }
}

/// How much sooner than the machine the host aborts a connection's
/// set-up: a tenth of the request timeout, at most 1 s.
fn setup_report_margin(request_timeout_ms: u64) -> u64 {
    (request_timeout_ms / 10).min(1_000)
}

//! What each end of a step means: a step's stream that ended (with the
//! status its reader exited with, and what a finish printed), a set-up
//! that failed, and the pod read after an answer.

use super::{Claim, DurableRun, State};
use crate::classify::{classify, describe_answer, Class, ErrorFacts};
use crate::durable::action::{Delivery, DurableAction, PodStep, StepEnd};
use crate::durable::messages;
use crate::failure_stage::{with_upgrade_status, FailureStage};

// Starts that failed and were looked for in vain this many times, while
// the apiserver answered the looks: the start itself is refused (its URL,
// a proxy's limit), and the command runs as a plain exec.
const STARTS_REFUSED: u32 = 3;
// Finish steps whose status is none a finish gives (garbled on its way):
// after this many, the code is unknown.
pub(super) const FINISHES_UNREAD: u32 = 3;

impl DurableRun {
    pub(super) fn ended(
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
                self.claim = Claim::NotStarted;
                self.killed(true, "")
            }
            (PodStep::Kill, Some(_)) => self.killed(true, ""),
            (PodStep::Kill, None) => self.kill_again(now_ms, why),
            // Every step stops at its first line in a container whose
            // environment sets one of the pod program's names, so nothing
            // was ever claimed there: the exec runs plainly.
            (PodStep::Look | PodStep::Finish, Some(StepEnd::NameTaken)) => {
                self.no_record_after(exit_code)
            }
            // All the output is sent, and the status is the command's.
            (PodStep::Start | PodStep::Attach, Some(StepEnd::Code(code))) => {
                self.cleanup(now_ms, delivery_of(code))
            }
            // The runtime found no `sh`: the start never ran, so nothing
            // was claimed (its stream opening said nothing).
            (PodStep::Start, Some(StepEnd::ShellNotFound)) => {
                self.claim = Claim::NotStarted;
                self.fall_back("has no `sh` its runtime can find")
            }
            // One of our statuses, or the command's: the finish step says.
            (PodStep::Start | PodStep::Attach, Some(_)) => {
                self.state = State::Finishing { confirm: exit_code };
                self.next = Some((PodStep::Finish, now_ms));
            }
            (PodStep::Look, Some(StepEnd::Code(0))) => {
                self.claim = Claim::Claimed;
                self.disconnected = None;
                self.next = Some((PodStep::Attach, now_ms));
            }
            (PodStep::Look, Some(StepEnd::NoRecord)) => {
                // Never claimed: no start reached the pod, so one may be made.
                let final_error = self.claim.final_error();
                self.claim = Claim::NotStarted;
                self.starts_refused += 1;
                match final_error {
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
            (PodStep::Finish, Some(StepEnd::NoRecord)) => self.no_record_after(self.confirmed()),
            // Not done: what the start or the attach ended with says why.
            (PodStep::Finish, Some(StepEnd::Broke)) => match self.confirmed().map(StepEnd::of) {
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
                    let said = messages::step_broke(&self.pod, self.confirmed().unwrap_or(97));
                    self.state = State::Running {
                        start_cleans: Vec::new(),
                    };
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

    /// The status a finish step confirms: the start's or the attach's.
    fn confirmed(&self) -> Option<i64> {
        match self.state {
            State::Finishing { confirm } => confirm,
            _ => None,
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
            Some(StepEnd::NameTaken) => self.fall_back(
                "sets in its environment a variable named as one of the durable exec's own (_K...), or, with bash as `sh`, SHELLOPTS, BASHOPTS or an exported function (BASH_FUNC_...), which bash would apply to the exec's own lines or rewrite for the command",
            ),
            Some(StepEnd::Missing(name)) => self.fall_back(&format!("has no `{name}`")),
            _ => self.fail("RunRecordMissing", messages::record_missing(&self.pod)),
        }
    }

    pub(super) fn failed(&mut self, now_ms: u64, request: u32, step: PodStep, facts: ErrorFacts) {
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
                    let final_error = match stage {
                        FailureStage::Answered { status } if is_final(status) => Some(request),
                        _ => None,
                    };
                    self.claim.start_may_have_reached(final_error);
                }
            }
            PodStep::Look | PodStep::Attach | PodStep::Finish => {
                if facts.timed_out {
                    self.setup_timeouts = self.setup_timeouts.saturating_add(1);
                }
                if let FailureStage::Answered { status } = stage {
                    match self.claim.final_error() {
                        Some(first) if is_final(status) => return self.reject(first),
                        _ => {}
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

    pub(super) fn pod(&mut self, found: bool, phase: Option<&str>, deleting: bool) {
        if !found {
            self.fail("PodGone", messages::pod_gone(&self.pod));
        } else if deleting || phase.is_some_and(|p| p != "Running") {
            let phase = phase.unwrap_or("unknown");
            self.fail("PodNotRunning", messages::pod_not_running(&self.pod, phase));
        }
    }
}

/// Whether an answer of `status` is final: a 4xx other than a timeout
/// (408) or a push-back (429).
fn is_final(status: u16) -> bool {
    (400..500).contains(&status) && status != 408 && status != 429
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

pub(super) fn delivery_of(code: i64) -> Delivery {
    if code == 0 {
        Delivery::Success
    } else {
        Delivery::ExitCode(code)
    }
}

//! The end of a check, once the request machine is done: its warnings
//! printed, the record written (or deleted, after a denial), the lock
//! released if it is still ours (after the write: a waiting process looks
//! at the record before it tries for the lock again), and the verdict's
//! line printed.

use std::collections::VecDeque;

use super::action::{CheckAction, Fact, Level, LockSeen};
use super::lock_file::{HeldLock, MAX_LOCK_BYTES};
use super::record_file;
use super::FactError;
use crate::preflight::{Outcome, Source, Verdict};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Write,
    Delete,
    Release,
    VerdictLine,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Await {
    Nothing,
    Written,
    Deleted,
    LockSeen,
    Removed,
}

/// The end of one check.
#[derive(Debug, Clone)]
pub(super) struct Finishing {
    outcome: Outcome,
    record_file: Option<String>,
    lock: Option<HeldLock>,
    steps: VecDeque<Step>,
    awaiting: Await,
    queued: Option<CheckAction>,
}

impl Finishing {
    /// Queues the outcome's warnings onto `out` and plans the rest.
    pub(super) fn new(
        outcome: Outcome,
        record_file: Option<String>,
        lock: Option<HeldLock>,
        out: &mut VecDeque<CheckAction>,
    ) -> Finishing {
        out.extend(outcome.warnings.iter().map(|message| CheckAction::Log {
            level: Level::Warning,
            message: message.clone(),
        }));
        let mut steps = VecDeque::new();
        if record_file.is_some() {
            if outcome.record.is_some() {
                steps.push_back(Step::Write);
            }
            if outcome.delete_record {
                steps.push_back(Step::Delete);
            }
        }
        if lock.is_some() {
            steps.push_back(Step::Release);
        }
        steps.push_back(Step::VerdictLine);
        Finishing {
            outcome,
            record_file,
            lock,
            steps,
            awaiting: Await::Nothing,
            queued: None,
        }
    }

    /// Puts the next action onto `out`; the outcome once all is done.
    /// Neither (and nothing put) while a fact is owed.
    pub(super) fn poll(&mut self, out: &mut VecDeque<CheckAction>) -> Option<Outcome> {
        if let Some(action) = self.queued.take() {
            out.push_back(action);
            return None;
        }
        if self.awaiting != Await::Nothing {
            return None;
        }
        let file = self.record_file.clone().unwrap_or_default();
        loop {
            match self.steps.pop_front() {
                Some(Step::Write) => {
                    self.awaiting = Await::Written;
                    out.push_back(CheckAction::WriteRecord {
                        file,
                        text: self.outcome.record.clone().unwrap_or_default(),
                    });
                }
                Some(Step::Delete) => {
                    self.awaiting = Await::Deleted;
                    out.push_back(CheckAction::DeleteRecord { file });
                }
                Some(Step::Release) => {
                    self.awaiting = Await::LockSeen;
                    out.push_back(CheckAction::InspectLock {
                        file: self
                            .lock
                            .as_ref()
                            .map(|l| l.file.clone())
                            .unwrap_or_default(),
                        limit: MAX_LOCK_BYTES,
                    });
                }
                Some(Step::VerdictLine) => {
                    if let Some(level) = verdict_level(&self.outcome) {
                        out.push_back(CheckAction::Log {
                            level,
                            message: self.outcome.message.clone(),
                        });
                    }
                    continue;
                }
                None => return Some(self.outcome.clone()),
            }
            return None;
        }
    }

    /// Takes the fact the last action owed; returns a line to print, if any.
    pub(super) fn on_fact(&mut self, fact: Fact) -> Result<Option<(Level, String)>, FactError> {
        let file = self.record_file.as_deref().unwrap_or_default();
        let line = match (self.awaiting, fact) {
            (Await::Written, Fact::Written { code }) => {
                code.map(|code| (Level::Warning, record_file::write_failed(file, &code)))
            }
            (Await::Deleted, Fact::Deleted { code }) => code
                .and_then(|code| record_file::delete_failed(file, &code))
                .map(|warning| (Level::Warning, warning)),
            (Await::LockSeen, Fact::LockSeen(seen)) => {
                // Still ours: remove it. Gone, or another process's (it
                // judged ours stale): leave it.
                let ours = self.lock.take().filter(|lock| {
                    matches!(&seen, LockSeen::Found { is_file: true, content: Some(bytes), .. }
                        if bytes.as_slice() == lock.content.as_bytes())
                });
                if let Some(lock) = ours {
                    self.queued = Some(CheckAction::RemoveFile { file: lock.file });
                    self.awaiting = Await::Removed;
                    return Ok(None);
                }
                None
            }
            (Await::Removed, Fact::Removed { .. }) => None,
            (_, fact) => return Err(FactError::Unexpected(fact.name())),
        };
        self.awaiting = Await::Nothing;
        Ok(line)
    }
}

/// The level the verdict's message is printed at, if it is printed: a
/// denial is an error; an `allowed` that needed retries says so once.
fn verdict_level(outcome: &Outcome) -> Option<Level> {
    match outcome.verdict {
        Verdict::Denied => Some(Level::Error),
        Verdict::Allowed
            if outcome.source == Some(Source::Reviews) && outcome.last_error.is_some() =>
        {
            Some(Level::Info)
        }
        _ => None,
    }
}

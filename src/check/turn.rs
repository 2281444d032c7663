//! This process's turn at the job's lock, as file actions: the
//! [`SingleFlight`] sub-machine decides (try for the lock, wait, look at
//! the record again, remove a stale lock, give up), this file asks for the
//! file work each decision needs and turns the facts into its inputs.
//!
//! The turn ends in one of two ways: a record another process wrote
//! answers the check ([`End::Use`]), or the check asks the API itself,
//! with the lock or without, within the budget the turn left, from the
//! record as it is after the turn ([`End::Check`]).

use super::action::{CheckAction, Fact, Level, LockCreated, RecordRead};
use super::lock_file::{self, HeldLock, Look, ProcessFacts, CREATE_TRIES, MAX_LOCK_BYTES};
use super::FactError;
use crate::cache::MAX_RECORD_BYTES;
use crate::check::single_flight::{FlightAction, Holder, LockAttempt, SingleFlight};
use crate::config::Settings;
use crate::preflight::Preflight;
use crate::random::RandomSource;

/// What the turn wants next.
#[allow(clippy::large_enum_variant)] // one per poll, moved at once
pub(super) enum Polled {
    /// Do this.
    Action(CheckAction),
    /// A fact is owed for the last action.
    Awaiting,
    /// Nothing until then.
    Wait(u64),
    /// The turn is over.
    Over(End),
}

/// How the turn ended.
#[derive(Debug, Clone)]
pub(super) enum End {
    /// This machine, built from a record another process wrote, answers.
    Use(Box<Preflight>),
    /// Ask the API, within `budget_ms`, judging `record` (read after the
    /// turn) first.
    Check {
        budget_ms: u64,
        warning: Option<String>,
        lock: Option<HeldLock>,
        record: RecordRead,
    },
}

/// What a fact asks of the check.
pub(super) enum Reread {
    /// Nothing.
    No,
    /// Judge this record and report with [`Turn::on_candidate`].
    Record(RecordRead),
}

#[derive(Debug, Clone)]
enum Await {
    Nothing,
    Created {
        content: String,
        tries: u32,
    },
    Seen {
        tries: u32,
        fs_now: Option<u64>,
    },
    Process {
        age_ms: u64,
    },
    Removed,
    Reread,
    FinalRead {
        budget_ms: u64,
        warning: Option<String>,
    },
}

/// One turn. See the module docs.
#[derive(Debug, Clone)]
pub(super) struct Turn {
    flight: SingleFlight,
    lock_file: String,
    record_file: String,
    awaiting: Await,
    /// An action a fact called for, and what it awaits.
    queued: Option<(CheckAction, Await)>,
    /// Try to create the lock again (it vanished after the link failed).
    create_again: Option<u32>,
    held: Option<HeldLock>,
    /// A warning to print before anything else.
    note: Option<String>,
    candidate: Option<Box<Preflight>>,
    over: Option<End>,
}

impl Turn {
    /// A turn for the record at `record_file`, or `first` back when there
    /// is no turn to take (single flight off, or no record could answer).
    pub(super) fn new(
        settings: &Settings,
        record_file: &str,
        first: Box<Preflight>,
        now: u64,
    ) -> Result<Turn, Box<Preflight>> {
        let mut flight = SingleFlight::new(settings, now);
        // Off: the first poll is already `Alone`; on: it is `Acquire`, and
        // asked again it says the same.
        if !matches!(flight.poll(now), FlightAction::Acquire) {
            return Err(first);
        }
        Ok(Turn {
            flight,
            lock_file: format!("{record_file}.lock"),
            record_file: record_file.to_string(),
            awaiting: Await::Nothing,
            queued: None,
            create_again: None,
            held: None,
            note: None,
            candidate: None,
            over: None,
        })
    }

    pub(super) fn poll(
        &mut self,
        now: u64,
        process: &ProcessFacts,
        random: &mut RandomSource,
    ) -> Polled {
        if let Some(message) = self.note.take() {
            return Polled::Action(CheckAction::Log {
                level: Level::Warning,
                message,
            });
        }
        if let Some((action, awaiting)) = self.queued.take() {
            self.awaiting = awaiting;
            return Polled::Action(action);
        }
        if !matches!(self.awaiting, Await::Nothing) {
            return Polled::Awaiting;
        }
        if let Some(end) = self.over.take() {
            return Polled::Over(end);
        }
        if let Some(tries) = self.create_again.take() {
            return self.create(process, random, tries);
        }
        match self.flight.poll(now) {
            FlightAction::Acquire => self.create(process, random, 1),
            FlightAction::RemoveStale => {
                self.awaiting = Await::Removed;
                Polled::Action(CheckAction::RemoveFile {
                    file: self.lock_file.clone(),
                })
            }
            FlightAction::Reread => {
                self.awaiting = Await::Reread;
                Polled::Action(self.read_record())
            }
            FlightAction::Wait { until_ms } => Polled::Wait(until_ms),
            FlightAction::Lead { budget_ms } => self.final_read(budget_ms, None),
            FlightAction::Alone { budget_ms, warning } => self.final_read(budget_ms, warning),
            FlightAction::UseRecord => match self.candidate.take() {
                Some(machine) => Polled::Over(End::Use(machine)),
                // Cannot happen (`UseRecord` follows a decided candidate);
                // if it did, the check would ask with its whole budget.
                None => self.final_read(u64::MAX, None),
            },
        }
    }

    pub(super) fn on_fact(
        &mut self,
        now: u64,
        fact: Fact,
        me: &ProcessFacts,
    ) -> Result<Reread, FactError> {
        let awaiting = std::mem::replace(&mut self.awaiting, Await::Nothing);
        match (awaiting, fact) {
            (Await::Created { content, .. }, Fact::LockCreated(LockCreated::Linked)) => {
                self.held = Some(HeldLock {
                    file: self.lock_file.clone(),
                    content,
                });
                self.flight.on_lock(now, LockAttempt::Acquired);
            }
            (
                Await::Created { tries, .. },
                Fact::LockCreated(LockCreated::LinkFailed { code, fs_now_ms }),
            ) if code == "EEXIST" => {
                let inspect = CheckAction::InspectLock {
                    file: self.lock_file.clone(),
                    limit: MAX_LOCK_BYTES,
                };
                let awaiting = Await::Seen {
                    tries,
                    fs_now: fs_now_ms,
                };
                self.queued = Some((inspect, awaiting));
            }
            // A file system without hard links (EPERM, ENOTSUP): no lock
            // here, ever; worth saying, as single flight cannot work.
            (Await::Created { .. }, Fact::LockCreated(LockCreated::LinkFailed { code, .. })) => {
                self.note = Some(format!(
                    "Cannot create the lock file {} ({code}); this step asks the Kubernetes API without waiting for the other steps of its job.",
                    self.lock_file
                ));
                self.flight.on_lock(now, LockAttempt::Unavailable);
            }
            // A read-only or full disk: no lock here (the record cannot be
            // written either, and that write says so).
            (Await::Created { .. }, Fact::LockCreated(_)) => {
                self.flight.on_lock(now, LockAttempt::Unavailable);
            }
            (Await::Seen { tries, fs_now }, Fact::LockSeen(seen)) => {
                match lock_file::look(&seen, me, fs_now.unwrap_or(now)) {
                    // Its holder has just released it: try again; after a few
                    // tries, say it is held (a look later), rather than have
                    // anything removed that may be new.
                    Look::Gone if tries < CREATE_TRIES => self.create_again = Some(tries + 1),
                    Look::Gone => self.held_by(now, 0, Holder::Unknown),
                    Look::Held { age_ms, holder } => self.held_by(now, age_ms, holder),
                    Look::AskProcess { age_ms, pid } => {
                        self.queued =
                            Some((CheckAction::ProbeProcess { pid }, Await::Process { age_ms }));
                    }
                }
            }
            (Await::Process { age_ms }, Fact::Process { code }) => {
                let holder = if lock_file::is_running(code.as_deref()) {
                    Holder::Alive
                } else {
                    Holder::Dead
                };
                self.held_by(now, age_ms, holder);
            }
            (Await::Removed, Fact::Removed { code }) => {
                let removed = matches!(code.as_deref(), None | Some("ENOENT"));
                self.flight.on_removed(now, removed);
            }
            (Await::Reread, Fact::Record(read)) => return Ok(Reread::Record(read)),
            (Await::FinalRead { budget_ms, warning }, Fact::Record(record)) => {
                self.over = Some(End::Check {
                    budget_ms,
                    warning,
                    lock: self.held.take(),
                    record,
                });
            }
            (awaiting, fact) => {
                self.awaiting = awaiting;
                return Err(FactError::Unexpected(fact.name()));
            }
        }
        Ok(Reread::No)
    }

    /// A record read again, and the machine that answers the check with
    /// it if it does (a fresh record).
    pub(super) fn on_candidate(&mut self, now: u64, machine: Option<Box<Preflight>>) {
        let answers = machine.as_ref().is_some_and(|m| m.is_decided());
        if answers {
            self.candidate = machine;
        }
        self.flight.on_record(now, answers);
    }

    fn held_by(&mut self, now: u64, age_ms: u64, holder: Holder) {
        self.flight
            .on_lock(now, LockAttempt::Held { age_ms, holder });
    }

    fn create(&mut self, process: &ProcessFacts, random: &mut RandomSource, tries: u32) -> Polled {
        let content = lock_file::content(process, random);
        self.awaiting = Await::Created {
            content: content.clone(),
            tries,
        };
        Polled::Action(CheckAction::CreateLock {
            file: self.lock_file.clone(),
            content,
        })
    }

    fn final_read(&mut self, budget_ms: u64, warning: Option<String>) -> Polled {
        self.awaiting = Await::FinalRead { budget_ms, warning };
        Polled::Action(self.read_record())
    }

    fn read_record(&self) -> CheckAction {
        CheckAction::ReadRecord {
            file: self.record_file.clone(),
            limit: MAX_RECORD_BYTES as u32,
        }
    }
}

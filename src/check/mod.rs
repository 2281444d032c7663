//! One check of one hook step, from the first file read to the last line
//! printed: a sans-I/O machine that decides every I/O the check needs.
//!
//! ```text
//! let mut check = Check::new(input, now)?;
//! loop {
//!     match check.poll(now) {
//!         CheckAction::Send { .. } => start it; report its result with on_fact
//!         CheckAction::Wait { until_ms } => sleep until then or until a request settles
//!         CheckAction::Done { outcome } => stop
//!         file or log action => do it now; report its fact (if any) with on_fact
//!     }
//! }
//! ```
//!
//! Made once from the settings environment (parsed once, here), the
//! permission table, the namespace, the user's credentials (one chosen
//! here), the host's cache
//! folder, this process's id and host name, and the time. In order:
//!
//! 1. **Files** ([`record_file`]): where the record is, then the runner
//!    key file and the record, asked for together. A missing key file is
//!    created (and read back); the key and the credential make the
//!    identity that signs the record.
//! 2. **The record** ([`crate::cache`]): a fresh one answers the check at
//!    once, with no lock and no request.
//! 3. **A turn at the lock** ([`turn`]): [`SingleFlight`](crate::check::single_flight::SingleFlight), a sub-machine, decides
//!    when to try for the lock, how long to wait between looks at the
//!    record, when a lock is stale and when to stop waiting; this machine
//!    turns its wishes into file actions and the facts back into its
//!    inputs ([`lock_file`]). A record another process writes meanwhile
//!    answers the check.
//! 4. **The requests**: the [`Preflight`] sub-machine, built from the
//!    record as it is after the turn, with the budget the turn left.
//! 5. **The end** ([`finish`]): the record written or deleted, the lock
//!    released only if it is still ours, the verdict's line printed, then
//!    `Done`.
//!
//! Warnings come out in the order a person reads them: the folder, the
//! record file, the turn at the lock, the settings and the runner key,
//! then the check's own.

mod action;
mod finish;
pub mod lock_file;
pub mod record_file;
pub mod single_flight;
mod turn;

use crate::retry::SteadyClock;
use std::collections::VecDeque;

use thiserror::Error;

pub use action::{CheckAction, Fact, Level, LockCreated, LockSeen, RecordRead};
pub use lock_file::{HeldLock, ProcessFacts};

use crate::cache::{self, CacheKey};
use crate::config::Settings;
use crate::credential::{Credential, UserFacts};
use crate::environment::Environment;
use crate::identity::Identity;
use crate::permission::{self, Permission, PermissionSpec};
use crate::preflight::{
    check_namespace, identity_for, BadReport, Outcome, Preflight, ProbeResult, SetupError,
    NO_CREDENTIAL_WARNING,
};
use crate::random::RandomSource;
use crate::runner_key::{self, KeyFileReport, KeyLocation, KEY_FILE_LEN};
use finish::Finishing;
use turn::Turn;

/// What a check is made from.
#[derive(Debug, Clone)]
pub struct CheckInput<'a> {
    /// The process's settings environment, read once; its warnings are
    /// printed by the check if no one printed them before.
    pub environment: &'a Environment,
    /// The permission table.
    pub permissions: &'a [PermissionSpec],
    /// The namespace the permissions are needed in.
    pub namespace: &'a str,
    /// What the kubeconfig's current user holds that could be its
    /// credential; the check chooses ([`Credential::of`]).
    pub user: &'a UserFacts,
    /// The folder the host named for the record, if any.
    pub cache_dir: Option<&'a str>,
    /// This process, as its lock names it.
    pub process: ProcessFacts,
}

/// A fact the machine cannot take.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum FactError {
    /// A fact that answers no action the machine is waiting on.
    #[error("unexpected {0} fact: the check did not ask for it")]
    Unexpected(&'static str),
    /// A request's result the check cannot take.
    #[error(transparent)]
    Result(#[from] BadReport),
}

/// A fact not yet reported, or reported.
#[derive(Debug, Clone, PartialEq)]
enum Pending<T> {
    NotAsked,
    Asked,
    Got(T),
}

impl<T> Pending<T> {
    fn is_asked(&self) -> bool {
        matches!(self, Pending::Asked)
    }
}

#[derive(Debug, Clone)]
enum Stage {
    /// The key file and the record, asked for together.
    Reading {
        key: Pending<KeyFileReport>,
        record: Pending<RecordRead>,
        created_key: bool,
    },
    Turn(Box<Turn>),
    Checking {
        inner: Box<Preflight>,
        lock: Option<HeldLock>,
    },
    Finishing(Box<Finishing>),
    Over(Outcome),
}

/// One check. See the module docs.
#[derive(Debug, Clone)]
pub struct Check {
    settings: Settings,
    permissions: Vec<Permission>,
    namespace: String,
    credential: Credential,
    home: Option<String>,
    process: ProcessFacts,
    random: RandomSource,
    /// The record's path; `None`: no record is read or written.
    record_file: Option<String>,
    key_at: Option<KeyLocation>,
    identity: Option<Identity>,
    /// Settings, runner key and credential warnings, printed by the
    /// request machine before its own.
    startup_warnings: Vec<String>,
    out: VecDeque<CheckAction>,
    stage: Stage,
    clock: SteadyClock,
}

impl Check {
    /// A check of `input` starting at `now_ms` (Unix epoch ms). Fails only
    /// on an unusable permission table or namespace; bad settings and
    /// files are warnings.
    pub fn new(input: CheckInput<'_>, now_ms: u64) -> Result<Check, SetupError> {
        let settings = input.environment.settings().clone();
        let permissions = permission::flatten(input.permissions)?;
        check_namespace(input.namespace)?;
        let random = RandomSource::for_seed(settings.seed, 0x004c_4f43_4b46_494c);
        let credential = Credential::of(input.user);
        let mut check = Check {
            permissions,
            namespace: input.namespace.to_string(),
            credential,
            home: input.environment.home().map(str::to_string),
            process: input.process,
            random,
            record_file: None,
            key_at: None,
            identity: None,
            startup_warnings: input.environment.warnings_once(),
            out: VecDeque::new(),
            stage: Stage::Reading {
                key: Pending::NotAsked,
                record: Pending::NotAsked,
                created_key: false,
            },
            clock: SteadyClock::starting_at(now_ms),
            settings,
        };
        let runner_temp = input.environment.runner_temp();
        let name = (check.credential.bytes.as_deref())
            .filter(|_| check.settings.cache_enabled)
            .and_then(Identity::from_credential)
            .map(|identity| {
                cache::file_name(&CacheKey {
                    namespace: check.namespace.clone(),
                    identity,
                    permissions: permission::fingerprint(&check.permissions),
                })
            });
        if let Some(name) = name {
            match record_file::place(runner_temp, input.cache_dir, &name) {
                Ok(file) => check.record_file = Some(file),
                Err(warning) => check.log(Level::Warning, warning.to_string()),
            }
        }
        check.start_reading();
        Ok(check)
    }

    /// The record's path, if the check reads and writes one.
    pub fn record_file(&self) -> Option<&str> {
        self.record_file.as_deref()
    }

    /// The next thing to do. See [`CheckAction`].
    pub fn poll(&mut self, now_ms: u64) -> CheckAction {
        let now = self.clock.observe(now_ms);
        loop {
            if let Some(action) = self.out.pop_front() {
                return action;
            }
            let next = match &mut self.stage {
                Stage::Reading { key, record, .. } => {
                    if key.is_asked() || record.is_asked() {
                        return CheckAction::Wait { until_ms: now };
                    }
                    self.after_reading(now);
                    continue;
                }
                Stage::Turn(turn) => match turn.poll(now, &self.process, &mut self.random) {
                    turn::Polled::Action(action) => {
                        self.out.push_back(action);
                        continue;
                    }
                    turn::Polled::Awaiting => return CheckAction::Wait { until_ms: now },
                    turn::Polled::Wait(until_ms) => return CheckAction::Wait { until_ms },
                    turn::Polled::Over(end) => end,
                },
                Stage::Checking { inner, .. } => match CheckAction::from(inner.poll(now)) {
                    CheckAction::Done { outcome } => {
                        let lock = match &mut self.stage {
                            Stage::Checking { lock, .. } => lock.take(),
                            _ => None,
                        };
                        let finishing =
                            Finishing::new(outcome, self.record_file.clone(), lock, &mut self.out);
                        self.stage = Stage::Finishing(Box::new(finishing));
                        continue;
                    }
                    action => return action,
                },
                Stage::Finishing(finishing) => match finishing.poll(&mut self.out) {
                    Some(outcome) => {
                        self.stage = Stage::Over(outcome);
                        continue;
                    }
                    None if self.out.is_empty() => return CheckAction::Wait { until_ms: now },
                    None => continue,
                },
                Stage::Over(outcome) => {
                    return CheckAction::Done {
                        outcome: outcome.clone(),
                    }
                }
            };
            // The turn is over: the request machine takes it from here.
            self.start_checking(next, now);
        }
    }

    /// Reports a fact: the result of a file action, or of a request.
    pub fn on_fact(&mut self, now_ms: u64, fact: Fact) -> Result<(), FactError> {
        let now = self.clock.observe(now_ms);
        match (&mut self.stage, fact) {
            (
                Stage::Checking { inner, .. },
                Fact::Response {
                    probe,
                    attempt,
                    mut result,
                },
            ) => {
                // A message about a bad token says which token.
                if let ProbeResult::Failed { facts } = &mut result {
                    facts.credential_source = self.credential.source.clone();
                }
                inner.on_result(probe, attempt, now, result)?;
                Ok(())
            }
            // Late answers of requests aborted when the check ended.
            (Stage::Finishing(_) | Stage::Over(_), Fact::Response { .. }) => Ok(()),
            (Stage::Reading { key, .. }, Fact::KeyFile(report)) if key.is_asked() => {
                self.on_key_file(report);
                Ok(())
            }
            (Stage::Reading { record, .. }, Fact::Record(read)) if record.is_asked() => {
                *record = Pending::Got(read);
                Ok(())
            }
            (Stage::Turn(turn), fact) => {
                if let turn::Reread::Record(read) = turn.on_fact(now, fact, &self.process)? {
                    // Read again while waiting: no warnings about the file.
                    let file = self.record_file.as_deref().unwrap_or_default();
                    let (bytes, _) = record_file::read_outcome(file, read);
                    // Judged by the cache alone; a machine is made only for
                    // a record that answers (it holds the verdict).
                    let answers = Preflight::record_answers(
                        &self.settings,
                        self.identity.clone(),
                        &self.namespace,
                        &self.permissions,
                        bytes.as_deref(),
                        now,
                    );
                    let candidate = answers.then(|| self.request_machine(bytes.as_deref(), now));
                    if let Stage::Turn(turn) = &mut self.stage {
                        turn.on_candidate(now, candidate);
                    }
                }
                Ok(())
            }
            (Stage::Finishing(finishing), fact) => {
                if let Some((level, message)) = finishing.on_fact(fact)? {
                    self.log(level, message);
                }
                Ok(())
            }
            (_, fact) => Err(FactError::Unexpected(fact.name())),
        }
    }

    /// Asks for the key file and the record, as far as there are any.
    fn start_reading(&mut self) {
        let Some(file) = self.record_file.clone() else {
            return;
        };
        match runner_key::location(self.settings.key_file.as_deref(), self.home.as_deref()) {
            Ok(at) => {
                self.out.push_back(CheckAction::ReadKeyFile {
                    file: at.file.clone(),
                    limit: KEY_FILE_LEN as u32,
                });
                self.key_at = Some(at);
                if let Stage::Reading { key, .. } = &mut self.stage {
                    *key = Pending::Asked;
                }
            }
            // No place for a key: the identity says why (below).
            Err(_) => self.key_at = None,
        }
        self.out.push_back(CheckAction::ReadRecord {
            file,
            limit: cache::MAX_RECORD_BYTES as u32,
        });
        if let Stage::Reading { record, .. } = &mut self.stage {
            *record = Pending::Asked;
        }
    }

    /// The key file's report: create the file when nothing is there (once),
    /// else keep the report.
    fn on_key_file(&mut self, report: KeyFileReport) {
        let Stage::Reading {
            key, created_key, ..
        } = &mut self.stage
        else {
            return;
        };
        if !*created_key {
            if let (Some(text), Some(at)) = (runner_key::to_create(&report.facts), &self.key_at) {
                *created_key = true;
                self.out.push_back(CheckAction::CreateKeyFile {
                    file: at.file.clone(),
                    folder: at.folder.clone(),
                    text,
                    limit: KEY_FILE_LEN as u32,
                });
                return;
            }
        }
        *key = Pending::Got(report);
    }

    /// Both files are in: the identity, the first request machine, and
    /// whether a turn at the lock is needed.
    fn after_reading(&mut self, now: u64) {
        let Stage::Reading { key, record, .. } =
            std::mem::replace(&mut self.stage, Stage::Over(placeholder()))
        else {
            return;
        };
        // A report is needed for the runner key to be used; without a
        // place for the file, the identity says so with a warning.
        let none_report = KeyFileReport {
            facts: runner_key::KeyFileFacts::Missing,
            process_uid: None,
            create_error: None,
        };
        let report = match key {
            Pending::Got(report) => Some(report),
            _ if self.record_file.is_some() => Some(none_report),
            _ => None,
        };
        let (identity, key_warning) = identity_for(
            &self.settings,
            self.home.as_deref(),
            self.credential.bytes.as_deref(),
            report.as_ref(),
        );
        let no_credential = identity.is_none() && self.settings.cache_enabled;
        self.identity = identity;
        self.startup_warnings.extend(key_warning);
        if no_credential {
            let why = self.credential.warning.as_deref();
            self.startup_warnings
                .push(why.unwrap_or(NO_CREDENTIAL_WARNING).to_string());
        }
        let bytes = match (record, &self.record_file) {
            (Pending::Got(read), Some(file)) => {
                let (bytes, warning) = record_file::read_outcome(file, read);
                if let Some(warning) = warning {
                    self.log(Level::Warning, warning);
                }
                bytes
            }
            _ => None,
        };
        let first = self.request_machine(bytes.as_deref(), now);
        match &self.record_file {
            Some(file) if !first.is_decided() => {
                match Turn::new(&self.settings, file, first, now) {
                    Ok(turn) => self.stage = Stage::Turn(Box::new(turn)),
                    // Single flight is off (or no record could answer):
                    // no lock, and no second read.
                    Err(first) => self.activate(first, None),
                }
            }
            _ => self.activate(first, None),
        }
    }

    /// The turn at the lock ended: check with what it left.
    fn start_checking(&mut self, end: turn::End, now: u64) {
        match end {
            turn::End::Use(machine) => self.activate(machine, None),
            turn::End::Check {
                budget_ms,
                warning,
                lock,
                record,
            } => {
                if let Some(warning) = warning {
                    self.log(Level::Warning, warning);
                }
                let file = self.record_file.clone().unwrap_or_default();
                let (bytes, _) = record_file::read_outcome(&file, record);
                let mut machine = self.request_machine(bytes.as_deref(), now);
                machine.limit_budget(std::time::Duration::from_millis(budget_ms));
                self.activate(machine, lock);
            }
        }
    }

    /// A request machine judging `record` with this check's identity.
    fn request_machine(&self, record: Option<&[u8]>, now: u64) -> Box<Preflight> {
        // The table was flattened and the namespace checked in `new`.
        Box::new(Preflight::checked(
            self.settings.clone(),
            self.permissions.clone(),
            &self.namespace,
            self.identity.clone(),
            record,
            now,
        ))
    }

    fn activate(&mut self, mut machine: Box<Preflight>, lock: Option<HeldLock>) {
        machine.queue_warnings(std::mem::take(&mut self.startup_warnings));
        self.stage = Stage::Checking {
            inner: machine,
            lock,
        };
    }

    fn log(&mut self, level: Level, message: String) {
        self.out.push_back(CheckAction::Log { level, message });
    }
}

/// Stands in for a stage while it is being replaced.
fn placeholder() -> Outcome {
    Outcome {
        verdict: crate::preflight::Verdict::Error,
        source: None,
        missing: Vec::new(),
        message: String::new(),
        warnings: Vec::new(),
        record: None,
        delete_record: false,
        proceed: false,
        last_error: None,
        requests: 0,
        hedges: 0,
        proven_by_rules: 0,
        elapsed_ms: 0,
    }
}

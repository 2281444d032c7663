//! The calls of one set of settings in one process ([`CallPolicy`]): the
//! settings read and warned about once, and the breaker every call of
//! theirs reports to. A process's settings environment has one (the
//! boundary's `Settings` makes it with the first call), so every wrapper
//! the host makes over the same environment shares what its calls learn
//! of an outage.

use std::cell::RefCell;
use std::rc::Rc;

use super::breaker::Breaker;
use super::machine::Call;
use super::operation::Operation;
use super::spec::CallSpec;
use crate::config::Settings;
use crate::durable::{
    Delivered, DeliveredRuns, DurableRun, DurableSpec, LEDGER_NAME, PING_EVERY_MS,
};
use crate::environment::Environment;
use crate::millis;
use crate::random::RandomSource;

/// The policy one host's calls run under. Each [`Call`] it makes tells
/// its [`Breaker`] once how it ended, so the calls after it know of an
/// outage.
#[derive(Debug)]
pub struct CallPolicy {
    settings: Settings,
    warnings: Vec<String>,
    breaker: Rc<RefCell<Breaker>>,
    delivered: Delivered,
}

impl CallPolicy {
    /// The policy of the settings of `environment`, with their warnings
    /// if no one took them before.
    pub fn new(environment: &Environment) -> CallPolicy {
        CallPolicy {
            settings: environment.settings().clone(),
            warnings: environment.warnings_once(),
            breaker: Rc::new(RefCell::new(Breaker::new())),
            delivered: Rc::new(RefCell::new(DeliveredRuns::with_ledger(ledger(
                environment,
            )))),
        }
    }

    /// The settings' warnings (a value that is not accepted, and what is
    /// used instead), the first time they are asked for: printed once.
    pub fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }

    /// Whether a call of client method `method` is made as it is, with no
    /// machine (see [`Operation::of_call`]).
    pub fn passes_through(&self, method: &str) -> bool {
        Operation::of_call(&self.settings, &CallSpec::method(method)) == Operation::PassThrough
    }

    /// The machine of one call of `spec`, starting at `now_ms`: one
    /// attempt and no retry while its cluster is known to be out.
    pub fn call(&self, spec: CallSpec, now_ms: u64) -> Call {
        let call = self.breaker.borrow().start(&self.settings, spec, now_ms);
        call.reporting_to(Rc::clone(&self.breaker))
    }

    /// The durable run of an exec of `spec` at `now_ms`, or `None` when
    /// the exec runs plainly: it has stdin (a copy: what was sent cannot be
    /// read again) or a tty, or durable execs (or the wrapped calls) are
    /// off.
    pub fn durable(
        &self,
        spec: DurableSpec,
        stdin: bool,
        tty: bool,
        now_ms: u64,
    ) -> Option<DurableRun> {
        let s = &self.settings;
        let durable = s.calls.resilient && s.calls.durable && !stdin && !tty;
        let delivered = Rc::clone(&self.delivered);
        durable.then(|| {
            DurableRun::new(
                s,
                spec,
                RandomSource::for_seed(s.seed, 0),
                delivered,
                now_ms,
            )
        })
    }

    /// How an open plain exec stream is watched: a ping every this many ms,
    /// and no pong for that many is a cut; `None` when the calls pass
    /// through.
    pub fn stream_watch(&self) -> Option<(u64, u64)> {
        let calls = &self.settings.calls;
        calls
            .resilient
            .then(|| (PING_EVERY_MS, millis(calls.pong_deadline)))
    }
}

/// The ledger of delivered runs: in the job's temp folder, or none (the
/// runs are then remembered by this process only).
fn ledger(environment: &Environment) -> Option<String> {
    let folder = environment.runner_temp()?.trim_end_matches('/');
    (!folder.trim().is_empty()).then(|| format!("{folder}/{LEDGER_NAME}"))
}

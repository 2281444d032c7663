//! One copy from its first attempt to its end: each attempt's verdict
//! decides the next step.

use super::{
    leftovers, removal_input, removed, verdict, Attempt, CopySpec, Direction, Place, Removal,
    Verdict,
};
use crate::protocol::Level;

/// How many attempts a copy makes at most.
pub const ATTEMPTS: u32 = 5;

/// The wait before each attempt after the first: a cut stream is most often
/// an apiserver that is back within a second or two, and the longest wait
/// stays well inside a step.
pub const WAITS_MS: [u64; 4] = [250, 1_000, 2_000, 4_000];

/// What the host does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CopyAction {
    /// Make attempt `attempt` (from 1): the whole copy, with the pod-side
    /// script given `args`; report an [`Attempt`].
    Copy {
        /// Which.
        attempt: u32,
        /// The pod-side script's arguments ([`CopySpec::pod_args`]).
        args: Vec<String>,
    },
    /// Remove what earlier attempts left that the accepted one did not
    /// bring: run the removal script in `place`, given `args` (the
    /// folder), with `input` on its stdin; report a [`Removal`].
    Remove {
        /// Where.
        place: Place,
        /// The script's arguments.
        args: Vec<String>,
        /// The names ([`super::removal_input`]).
        input: Vec<u8>,
    },
    /// Print a line.
    Log {
        /// How.
        level: Level,
        /// What.
        message: String,
    },
    /// Nothing to do until then; `None`: until a fact arrives.
    Wait {
        /// When.
        until_ms: Option<u64>,
    },
    /// The copy is over.
    Done {
        /// How it ended.
        outcome: CopyOutcome,
    },
}

impl CopyAction {
    /// Whether the host has nothing more to do now after this one.
    pub fn ends_turn(&self) -> bool {
        !matches!(self, CopyAction::Log { .. })
    }
}

/// How a copy ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyOutcome {
    /// Whether it arrived whole and was unpacked.
    pub ok: bool,
    /// How many attempts it took.
    pub attempts: u32,
    /// The archive's size and hash (when it arrived whole).
    pub bytes: u64,
    /// See `bytes`.
    pub sha256: String,
    /// When it failed, why, in one line that names the copy.
    pub message: String,
}

/// What the run waits for.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Next {
    /// To ask for attempt `n` (at `at_ms` or later).
    Attempt { n: u32, at_ms: u64 },
    /// Attempt `n`'s report.
    Report { n: u32 },
    /// To ask for removal `n` (at `at_ms` or later) of `names`, ending in
    /// `done` when it is removed.
    Remove {
        n: u32,
        at_ms: u64,
        names: Vec<Vec<u8>>,
        done: CopyOutcome,
    },
    /// Removal `n`'s report.
    Removed {
        n: u32,
        names: Vec<Vec<u8>>,
        done: CopyOutcome,
    },
    /// To say how it ended.
    End(CopyOutcome),
    /// Nothing: it is over.
    Over,
}

/// One copy.
#[derive(Debug)]
pub struct CopyRun {
    spec: CopySpec,
    next: Next,
    said: Vec<(Level, String)>,
    /// The listings of the attempts that were not accepted.
    earlier: Vec<Vec<u8>>,
    /// Whether each of them is whole.
    earlier_whole: bool,
}

impl CopyRun {
    /// A copy of `spec`, its first attempt at once.
    pub fn new(spec: CopySpec) -> CopyRun {
        CopyRun {
            spec,
            next: Next::Attempt { n: 1, at_ms: 0 },
            said: Vec::new(),
            earlier: Vec::new(),
            earlier_whole: true,
        }
    }

    /// Takes what the host saw of the attempt it was asked for; anything
    /// else is ignored (a report out of turn has no attempt to be of).
    pub fn on_attempt(&mut self, now_ms: u64, attempt: &Attempt) {
        let Next::Report { n } = self.next else {
            return;
        };
        let what = self.spec.what();
        self.next = match verdict(self.spec.direction, attempt) {
            Verdict::Accept { bytes, sha256 } => {
                if n > 1 {
                    self.said.push((
                        Level::Info,
                        format!("k8s-auth-preflight: the {what} arrived whole at attempt {n}"),
                    ));
                }
                let done = CopyOutcome {
                    ok: true,
                    attempts: n,
                    bytes,
                    sha256,
                    message: String::new(),
                };
                self.after_accepted(attempt, done)
            }
            Verdict::Again(why) if n < ATTEMPTS => {
                self.earlier.push(attempt.listing.clone());
                self.earlier_whole &= attempt.listing_whole;
                let wait = WAITS_MS[(n - 1) as usize];
                self.said.push((
                    Level::Warning,
                    format!(
                        "k8s-auth-preflight: the {what} did not arrive whole (attempt {n} of {ATTEMPTS}): {why}; copying it again in {} ms",
                        wait
                    ),
                ));
                Next::Attempt {
                    n: n + 1,
                    at_ms: now_ms.saturating_add(wait),
                }
            }
            Verdict::Again(why) => Next::End(self.failed(
                n,
                format!("it did not arrive whole in {ATTEMPTS} attempts; the last: {why}"),
            )),
            Verdict::Fail(why) => Next::End(self.failed(n, why)),
        };
    }

    /// After the accepted attempt: the end, or first the removal of what
    /// earlier attempts left that it did not bring.
    fn after_accepted(&mut self, accepted: &Attempt, done: CopyOutcome) -> Next {
        if self.earlier.is_empty() {
            return Next::End(done);
        }
        if !self.earlier_whole {
            self.said.push((
                Level::Warning,
                format!(
                    "k8s-auth-preflight: the {}: an earlier attempt's list of names is not whole (the runner's tar was stopped), so a name it wrote that is no longer in {} may be left in {}",
                    self.spec.what(),
                    self.spec.from,
                    self.spec.to
                ),
            ));
        }
        let names = leftovers(&self.earlier, &accepted.listing);
        if names.is_empty() {
            return Next::End(done);
        }
        Next::Remove {
            n: 1,
            at_ms: 0,
            names,
            done,
        }
    }

    /// Takes what the host saw of the removal it was asked for; anything
    /// else is ignored.
    pub fn on_removed(&mut self, now_ms: u64, run: &Removal) {
        let Next::Removed { n, .. } = &self.next else {
            return;
        };
        let n = *n;
        let Next::Removed { names, done, .. } = std::mem::replace(&mut self.next, Next::Over)
        else {
            return;
        };
        let what = self.spec.what();
        let count = names.len();
        let left = format!(
            "{count} name(s) an earlier attempt wrote in {}, which {} no longer holds",
            self.spec.to, self.spec.from
        );
        self.next = match removed(self.place(), run) {
            Verdict::Accept { .. } => {
                self.said.push((
                    Level::Info,
                    format!("k8s-auth-preflight: the {what}: removed {left}"),
                ));
                Next::End(done)
            }
            Verdict::Again(why) if n < ATTEMPTS => {
                let wait = WAITS_MS[(n - 1) as usize];
                self.said.push((
                    Level::Warning,
                    format!(
                        "k8s-auth-preflight: the {what}: {left} were not removed (try {n} of {ATTEMPTS}): {why}; trying again in {wait} ms"
                    ),
                ));
                Next::Remove {
                    n: n + 1,
                    at_ms: now_ms.saturating_add(wait),
                    names,
                    done,
                }
            }
            Verdict::Again(why) | Verdict::Fail(why) => Next::End(self.failed(
                done.attempts,
                format!(
                    "it arrived whole at attempt {}, but {left}, could not be removed: {why}",
                    done.attempts
                ),
            )),
        };
    }

    /// Where the copy's destination is.
    fn place(&self) -> Place {
        match self.spec.direction {
            Direction::ToPod => Place::Pod,
            Direction::FromPod => Place::Runner,
        }
    }

    fn failed(&self, attempts: u32, why: String) -> CopyOutcome {
        CopyOutcome {
            ok: false,
            attempts,
            bytes: 0,
            sha256: String::new(),
            message: format!("k8s-auth-preflight: the {} failed: {why}", self.spec.what()),
        }
    }

    /// The next action at `now_ms`.
    pub fn poll(&mut self, now_ms: u64) -> CopyAction {
        if !self.said.is_empty() {
            let (level, message) = self.said.remove(0);
            return CopyAction::Log { level, message };
        }
        match std::mem::replace(&mut self.next, Next::Over) {
            Next::Attempt { n, at_ms } if now_ms >= at_ms => {
                self.next = Next::Report { n };
                CopyAction::Copy {
                    attempt: n,
                    args: self.spec.pod_args(),
                }
            }
            Next::Attempt { n, at_ms } => {
                self.next = Next::Attempt { n, at_ms };
                CopyAction::Wait {
                    until_ms: Some(at_ms),
                }
            }
            Next::Report { n } => {
                self.next = Next::Report { n };
                CopyAction::Wait { until_ms: None }
            }
            Next::Remove {
                n,
                at_ms,
                names,
                done,
            } if now_ms >= at_ms => {
                let action = CopyAction::Remove {
                    place: self.place(),
                    args: vec![self.spec.to.clone()],
                    input: removal_input(&names),
                };
                self.next = Next::Removed { n, names, done };
                action
            }
            Next::Remove {
                n,
                at_ms,
                names,
                done,
            } => {
                self.next = Next::Remove {
                    n,
                    at_ms,
                    names,
                    done,
                };
                CopyAction::Wait {
                    until_ms: Some(at_ms),
                }
            }
            Next::Removed { n, names, done } => {
                self.next = Next::Removed { n, names, done };
                CopyAction::Wait { until_ms: None }
            }
            Next::End(outcome) => CopyAction::Done { outcome },
            Next::Over => CopyAction::Done {
                outcome: CopyOutcome {
                    ok: false,
                    attempts: 0,
                    bytes: 0,
                    sha256: String::new(),
                    message: "k8s-auth-preflight: the copy was already over".into(),
                },
            },
        }
    }
}

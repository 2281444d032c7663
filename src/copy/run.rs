//! One copy from its first attempt to its end: each attempt's verdict
//! decides the next step.

use super::{
    removal_input, removed, verdict, written, Attempt, CopySpec, Direction, Place, Removal, Verdict,
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
    /// To ask for try `n` (at `at_ms` or later) of the removal of
    /// `names`, which attempt `then - 1` may have written (it did not
    /// arrive whole: `why`), before attempt `then`.
    Remove {
        n: u32,
        at_ms: u64,
        names: Vec<Vec<u8>>,
        then: u32,
        why: String,
    },
    /// Try `n`'s report.
    Removed {
        n: u32,
        names: Vec<Vec<u8>>,
        then: u32,
        why: String,
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
}

impl CopyRun {
    /// A copy of `spec`, its first attempt at once.
    pub fn new(spec: CopySpec) -> CopyRun {
        CopyRun {
            spec,
            next: Next::Attempt { n: 1, at_ms: 0 },
            said: Vec::new(),
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
                Next::End(CopyOutcome {
                    ok: true,
                    attempts: n,
                    bytes,
                    sha256,
                    message: String::new(),
                })
            }
            Verdict::Again(why) if n < ATTEMPTS => {
                let wait = WAITS_MS[(n - 1) as usize];
                self.said.push((
                    Level::Warning,
                    format!(
                        "k8s-auth-preflight: the {what} did not arrive whole (attempt {n} of {ATTEMPTS}): {why}; copying it again in {} ms",
                        wait
                    ),
                ));
                self.before_next(n, attempt, now_ms.saturating_add(wait), why)
            }
            Verdict::Again(why) => Next::End(self.failed(
                n,
                format!("it did not arrive whole in {ATTEMPTS} attempts; the last: {why}"),
            )),
            Verdict::Fail(why) => Next::End(self.failed(n, why)),
        };
    }

    /// After attempt `n`, which did not arrive whole (`why`): attempt
    /// `n + 1` at `at_ms`, or first the removal of what attempt `n` may
    /// have written (see [`super::listing`]).
    fn before_next(&mut self, n: u32, attempt: &Attempt, at_ms: u64, why: String) -> Next {
        if !attempt.listing_whole {
            self.said.push((
                Level::Warning,
                format!(
                    "k8s-auth-preflight: the {}: the runner's tar was stopped, so its list of what attempt {n} may have written in {} is not whole, and some of it may stay",
                    self.spec.what(),
                    self.spec.to
                ),
            ));
        }
        // An exec that never opened wrote nothing; into the pod, a member
        // whose header was not sent never reached it.
        let sent = (self.spec.direction == Direction::ToPod).then_some(attempt.runner_bytes);
        let names = match attempt.open_error {
            Some(_) => Vec::new(),
            None => written(&attempt.listing, sent),
        };
        if names.is_empty() {
            return Next::Attempt { n: n + 1, at_ms };
        }
        Next::Remove {
            n: 1,
            at_ms,
            names,
            then: n + 1,
            why,
        }
    }

    /// Takes what the host saw of the removal it was asked for; anything
    /// else is ignored.
    pub fn on_removed(&mut self, now_ms: u64, run: &Removal) {
        let Next::Removed {
            n,
            names,
            then,
            why,
        } = std::mem::replace(&mut self.next, Next::Over)
        else {
            return;
        };
        let what = self.spec.what();
        let left = format!(
            "the {} name(s) attempt {} may have written in {}",
            names.len(),
            then - 1,
            self.spec.to
        );
        self.next = match removed(self.place(), run) {
            Verdict::Accept { .. } => {
                self.said.push((
                    Level::Info,
                    format!(
                        "k8s-auth-preflight: the {what}: removed {left}, before attempt {then}"
                    ),
                ));
                Next::Attempt {
                    n: then,
                    at_ms: now_ms,
                }
            }
            Verdict::Again(again) if n < ATTEMPTS => {
                let wait = WAITS_MS[(n - 1) as usize];
                self.said.push((
                    Level::Warning,
                    format!(
                        "k8s-auth-preflight: the {what}: {left} were not removed (try {n} of {ATTEMPTS}): {again}; trying again in {wait} ms"
                    ),
                ));
                Next::Remove {
                    n: n + 1,
                    at_ms: now_ms.saturating_add(wait),
                    names,
                    then,
                    why,
                }
            }
            Verdict::Again(again) | Verdict::Fail(again) => Next::End(self.failed(
                then - 1,
                format!(
                    "it did not arrive whole ({why}), and {left} could not be removed: {again}"
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
                then,
                why,
            } if now_ms >= at_ms => {
                let action = CopyAction::Remove {
                    place: self.place(),
                    args: vec![self.spec.to.clone()],
                    input: removal_input(&names),
                };
                self.next = Next::Removed {
                    n,
                    names,
                    then,
                    why,
                };
                action
            }
            next @ Next::Remove { at_ms, .. } => {
                self.next = next;
                CopyAction::Wait {
                    until_ms: Some(at_ms),
                }
            }
            next @ Next::Removed { .. } => {
                self.next = next;
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

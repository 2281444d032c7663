//! Where a run is ([`State`]), each state with what matters only there,
//! and what is known of the run's record in the pod whatever the state
//! ([`Claim`]).

/// Where the run is, and what matters only there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum State {
    /// The ledger of delivered runs is being read: no start before it is.
    ReadingLedger,
    /// Starting or attached: the command's output is being read.
    Running {
        /// The delivered runs of the pod that the start out removes: its
        /// script does so first thing, so they are cleaned once its stream
        /// opens.
        start_cleans: Vec<String>,
    },
    /// The command ended: its exit code is being read by finish steps.
    Finishing {
        /// The status the start or the attach ended with: ours or the
        /// command's, which a finish step confirms.
        confirm: Option<i64>,
    },
    /// Its outcome is delivered (its command has ended): the run's files
    /// are being removed.
    Cleaning,
    /// The hook process is being stopped: so is the command.
    Killing {
        /// Until when a kill is tried.
        until_ms: u64,
        /// The signal that stops the run.
        signal: String,
    },
    /// Nothing more to do.
    Over,
}

/// What is known of the run's record in the pod, whatever the state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Claim {
    /// No start can have reached the pod: the next try starts it.
    NotStarted,
    /// A start may have reached the pod: a look comes before another start.
    Maybe {
        /// A start answered with a final 4xx (its request): the caller's
        /// error, unless a look finds the run.
        final_error: Option<u32>,
    },
    /// The run is claimed: a start step's stream opened (its script claims
    /// at once), or a look found the run. The next try attaches.
    Claimed,
}

impl Claim {
    /// Whether a start may have reached the pod (and so a command run).
    pub(super) fn may_have_started(self) -> bool {
        self != Claim::NotStarted
    }

    /// A start answered with a final 4xx, while no look found the run
    /// either way: its request, whose error the caller gets.
    pub(super) fn final_error(self) -> Option<u32> {
        match self {
            Claim::Maybe { final_error } => final_error,
            _ => None,
        }
    }

    /// A start may have reached the pod; `final_error` is its request when
    /// it was answered with a final 4xx.
    pub(super) fn start_may_have_reached(&mut self, final_error: Option<u32>) {
        if *self != Claim::Claimed {
            *self = Claim::Maybe {
                final_error: final_error.or(self.final_error()),
            };
        }
    }
}

//! What a machine did with a report ([`Accepted`]).

/// What a machine did with a report of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accepted {
    /// It changed the machine.
    Applied,
    /// It was for a request that is no longer current (abandoned at its
    /// timeout, answered by another copy, or the machine is over) and was
    /// ignored. The host closes what it holds from it (a stream opened
    /// late is closed, never used).
    Stale,
}

impl Accepted {
    /// The word the boundary reports it with.
    pub fn name(self) -> &'static str {
        match self {
            Accepted::Applied => "applied",
            Accepted::Stale => "stale",
        }
    }
}

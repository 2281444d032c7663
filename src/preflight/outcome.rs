//! The outcome of a check: the verdict ([`Verdict`]), where an `allowed`
//! came from ([`Source`]), and the [`Outcome`] with every message a person
//! reads at the end of a check.

use super::probe::{Probe, State};
use super::Preflight;
use crate::cache::{self, CacheState};
use crate::config::OnInconclusive;
use crate::permission::Permission;
use crate::text::{quoted, seconds};
use serde::Serialize;

/// The verdict of a check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Every permission is granted (or a usable record says so).
    Allowed,
    /// At least one permission was definitively denied.
    Denied,
    /// The API gave no definitive answer in time. NOT a denial.
    Inconclusive,
    /// A fatal, non-retryable error.
    Error,
}

/// Where an `allowed` verdict came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Source {
    /// This check's reviews.
    Reviews,
    /// A record younger than the TTL: no API call was made.
    Cache,
    /// A record past the TTL but within grace, used because the API could
    /// not be reached.
    GraceCache,
}

/// The result of a check; on the wire every key is present (`null` for
/// none), `hedges` left out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Outcome {
    /// The verdict.
    pub verdict: Verdict,
    /// For `allowed`: where it came from.
    pub source: Option<Source>,
    /// For `denied`: exactly the permissions the API denied.
    pub missing: Vec<Permission>,
    /// One line a person can act on (printed for every verdict but a plain
    /// `allowed`).
    pub message: String,
    /// Warnings to print (cache problems, grace use).
    pub warnings: Vec<String>,
    /// The record to write to the cache file, if any.
    pub record: Option<String>,
    /// True when the cache file for this key must be deleted (a denial).
    pub delete_record: bool,
    /// For `inconclusive`: the step goes on anyway
    /// (`ACTIONS_RUNNER_PREFLIGHT_ON_INCONCLUSIVE=proceed`); the warnings
    /// say so. Never set for any other verdict.
    pub proceed: bool,
    /// The last transient error seen, if any.
    pub last_error: Option<String>,
    /// Requests started by this check.
    pub requests: u32,
    /// Of those, hedged copies ([`crate::preflight::hedge`]).
    #[serde(skip)]
    pub hedges: u32,
    /// Permissions the rules review proved (no access review needed).
    pub proven_by_rules: u32,
    /// Time from the start of the check to the verdict, in ms.
    pub elapsed_ms: u64,
}

impl Preflight {
    /// Once nothing is in flight or due: the outcome (see the module docs
    /// for the order of the verdicts).
    pub(super) fn try_conclude(&mut self, now: u64) -> Option<Outcome> {
        if self.stopping {
            for run in &mut self.probes {
                if matches!(run.state, State::Due { .. } | State::Blocked) {
                    run.state = State::Exhausted;
                }
            }
        }
        let busy = self.probes.iter().any(|run| {
            matches!(
                run.state,
                State::Due { .. } | State::InFlight(_) | State::Blocked
            )
        });
        if busy {
            return None;
        }
        let any = |f: fn(&State) -> bool| self.probes.iter().any(|run| f(&run.state));
        let outcome = if any(|s| matches!(s, State::Denied)) {
            self.finish(Verdict::Denied, None, now)
        } else if any(|s| matches!(s, State::Fatal(_))) {
            self.finish(Verdict::Error, None, now)
        } else if any(|s| matches!(s, State::Exhausted)) {
            match self.cache {
                CacheState::Grace { .. } => {
                    self.finish(Verdict::Allowed, Some(Source::GraceCache), now)
                }
                _ => self.finish(Verdict::Inconclusive, None, now),
            }
        } else {
            self.finish(Verdict::Allowed, Some(Source::Reviews), now)
        };
        Some(outcome)
    }

    /// Why the retries stopped early, for the inconclusive message; empty
    /// unless the retry quota stopped them.
    fn quota_note(&self) -> String {
        match &self.quota {
            Some(quota) if self.quota_spent => format!(
                "; retries stopped before the deadline: this check's retry quota of {} tokens was spent",
                quota.capacity()
            ),
            _ => String::new(),
        }
    }

    pub(super) fn finish(&mut self, verdict: Verdict, source: Option<Source>, now: u64) -> Outcome {
        let elapsed_ms = now.saturating_sub(self.started_ms);
        let tried = seconds(elapsed_ms);
        let last_error = self.trouble.last_error().map(str::to_string);
        let last = last_error.as_deref().unwrap_or("none");
        let mut warnings = std::mem::take(&mut self.warnings);
        let mut missing = Vec::new();
        let mut record = None;
        let proceed = verdict == Verdict::Inconclusive
            && self.settings.on_inconclusive == OnInconclusive::Proceed;
        let message = match (verdict, source) {
            (Verdict::Allowed, Some(Source::Cache)) => {
                "Permissions verified earlier in this job (cached verdict); no API call made.".to_string()
            }
            (Verdict::Allowed, Some(Source::GraceCache)) => {
                let age = match self.cache {
                    CacheState::Grace { age } if age.as_secs() >= 120 => format!("{} min", age.as_secs() / 60),
                    CacheState::Grace { age } => format!("{} s", age.as_secs()),
                    _ => "an unknown time".to_string(),
                };
                let text = format!(
                    "The Kubernetes API could not be reached for {tried} (last error: {last}); using this job's earlier successful permission check from {age} ago. This is not a permissions problem."
                );
                warnings.push(text.clone());
                text
            }
            (Verdict::Allowed, _) => {
                record = self.key.as_ref().map(|key| cache::record_for(key, now));
                if self.trouble.last_error().is_some() {
                    format!(
                        "Permissions verified after {} requests in {tried} (the API failed transiently: {last}).",
                        self.requests
                    )
                } else {
                    "Permissions verified.".to_string()
                }
            }
            (Verdict::Denied, _) => {
                missing = self
                    .probes
                    .iter()
                    .filter(|run| matches!(run.state, State::Denied))
                    .filter_map(|run| match &run.probe {
                        Probe::Access(p) => Some(p.clone()),
                        _ => None,
                    })
                    .collect();
                // Joined by hand: `[String]::join` brings a kilobyte of its own.
                let mut names = String::new();
                for (i, p) in missing.iter().enumerate() {
                    if i > 0 {
                        names.push_str(", ");
                    }
                    names.push_str(&p.to_string());
                }
                let unchecked = self
                    .probes
                    .iter()
                    .filter(|run| matches!(run.probe, Probe::Access(_)))
                    .filter(|run| !matches!(run.state, State::Denied | State::Allowed | State::Proven))
                    .count();
                let mut text = format!("denied: {names} in namespace {}", quoted(&self.namespace));
                if unchecked > 0 {
                    text.push_str(&format!(" ({unchecked} other permission(s) could not be checked)"));
                }
                let evaluation_error = self
                    .probes
                    .iter()
                    .filter(|run| matches!(run.state, State::Denied))
                    .find_map(|run| run.evaluation_error.as_deref());
                if let Some(error) = evaluation_error {
                    text.push_str(&format!(
                        "; the API also reported an evaluation error, {}: an authorizer failed, and the denial may be that failure's rather than RBAC's",
                        quoted(error)
                    ));
                }
                text
            }
            (Verdict::Error, _) => {
                let why = self
                    .probes
                    .iter()
                    .find_map(|run| match &run.state {
                        State::Fatal(why) => Some(why.clone()),
                        _ => None,
                    })
                    .unwrap_or_default();
                format!("The permission check failed with a non-retryable error: {why}. It was not retried.")
            }
            (Verdict::Inconclusive, _) if proceed => {
                let text = format!(
                    "Could not verify the service account's permissions in namespace {}: the Kubernetes API gave no definitive answer within {tried} ({} requests; last error: {last}{}); proceeding because ACTIONS_RUNNER_PREFLIGHT_ON_INCONCLUSIVE=proceed. The API will still refuse anything the service account may not do.",
                    quoted(&self.namespace), self.requests, self.quota_note()
                );
                warnings.push(text.clone());
                text
            }
            (Verdict::Inconclusive, _) => format!(
                "Could not verify the service account's permissions in namespace {}: the Kubernetes API gave no definitive answer within {tried} ({} requests; last error: {last}{}). This is NOT a permissions denial: the control plane was unreachable or unstable. Re-run the job; if this persists, check the apiserver's health, not RBAC.",
                quoted(&self.namespace), self.requests, self.quota_note()
            ),
        };
        self.debug_finished(verdict, source, &tried);
        Outcome {
            verdict,
            source,
            delete_record: verdict == Verdict::Denied && self.key.is_some(),
            proceed,
            missing,
            message,
            warnings,
            record,
            last_error,
            requests: self.requests,
            hedges: self.hedges,
            proven_by_rules: self
                .probes
                .iter()
                .filter(|run| matches!(run.state, State::Proven))
                .count() as u32,
            elapsed_ms,
        }
    }
}

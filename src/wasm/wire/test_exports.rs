//! Wire types and readers that only the test exports use.

use super::*;
use crate::cache_folder::CacheFolder;
use crate::check::single_flight::{FlightAction, Holder, LockAttempt};
use crate::classify::Class;
use crate::permission::Permission;
use crate::preflight::ProbeResult;
use crate::preflight::{Action, Outcome, Request};
use crate::protocol::Level;
use crate::runner_key::KeyLocation;
use crate::text::quoted;

/// One flattened permission: `{verb, group, resource, subresource}`, all required.
#[derive(Deserialize)]
struct PermissionIn {
    verb: String,
    group: String,
    resource: String,
    subresource: String,
}

/// Flattened permissions: an array of them.
pub fn permissions(v: &JsValue) -> Result<Vec<Permission>, Bad> {
    let list: Vec<PermissionIn> = read(v)?;
    Ok(list
        .into_iter()
        .map(|p| Permission {
            verb: p.verb,
            group: p.group,
            resource: p.resource,
            subresource: p.subresource,
        })
        .collect())
}

/// A failure's facts, alone (`classify`).
pub fn error_facts(v: &JsValue) -> Result<ErrorFacts, Bad> {
    read::<ErrorFactsIn>(v).map(ErrorFacts::from)
}

/// A rules review's status, alone (`rulesProve`).
pub fn rules_status(v: &JsValue) -> Result<RulesStatus, Bad> {
    read::<RulesStatusIn>(v).map(RulesStatus::from)
}

/// A request's result (see [`ResultIn`]).
pub fn probe_result(v: &JsValue) -> Result<ProbeResult, Bad> {
    Ok(probe_result_from(read::<ResultIn>(v)?))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct HeldIn {
    age_ms: f64,
    holder: HolderIn,
}

#[derive(Deserialize)]
#[serde(variant_identifier, rename_all = "camelCase")]
enum HolderIn {
    Alive,
    Dead,
    Unknown,
    Invalid,
}

/// `{type: 'acquired'}`, `{type: 'unavailable'}`, or `{type: 'held', ageMs,
/// holder}` with holder `alive`, `dead`, `unknown` or `invalid`. A negative
/// age (a clock stepped back) reads as 0.
pub fn lock_attempt(v: &JsValue) -> Result<LockAttempt, Bad> {
    let tag: TagIn = read(v)?;
    match tag.kind.as_str() {
        "acquired" => Ok(LockAttempt::Acquired),
        "unavailable" => Ok(LockAttempt::Unavailable),
        "held" => {
            let held: HeldIn = read(v)?;
            Ok(LockAttempt::Held {
                // `as` saturates: a huge age is just very old.
                age_ms: held.age_ms.max(0.0) as u64,
                holder: match held.holder {
                    HolderIn::Alive => Holder::Alive,
                    HolderIn::Dead => Holder::Dead,
                    HolderIn::Unknown => Holder::Unknown,
                    HolderIn::Invalid => Holder::Invalid,
                },
            })
        }
        other => Err(Bad::new(format!(
            "expected acquired, unavailable or held, got {}",
            quoted(other)
        ))
        .at("type")),
    }
}

/// `{type: 'send', probe, attempt, request, timeoutMs}`, `{type: 'warn',
/// message}`, `{type: 'debug', message}`, `{type: 'wait', untilMs}` or
/// `{type: 'done', outcome}`.
#[derive(Serialize)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum ActionOut<'a> {
    Send {
        probe: usize,
        attempt: u32,
        request: &'a Request,
        timeout_ms: u64,
    },
    Warn {
        message: &'a str,
    },
    Debug {
        message: &'a str,
    },
    Wait {
        until_ms: u64,
    },
    Done {
        outcome: &'a Outcome,
    },
}

impl<'a> From<&'a Action> for ActionOut<'a> {
    fn from(a: &'a Action) -> Self {
        match a {
            Action::Send {
                probe,
                attempt,
                request,
                timeout_ms,
            } => ActionOut::Send {
                probe: *probe,
                attempt: *attempt,
                request,
                timeout_ms: *timeout_ms,
            },
            Action::Log {
                level: Level::Debug,
                message,
            } => ActionOut::Debug { message },
            Action::Log { message, .. } => ActionOut::Warn { message },
            Action::Wait { until_ms } => ActionOut::Wait {
                until_ms: *until_ms,
            },
            Action::Done { outcome } => ActionOut::Done { outcome },
        }
    }
}

/// `{file, folder}` (folder null when none is to be made), or both null.
#[derive(Serialize)]
pub struct KeyLocationOut<'a> {
    file: Option<&'a str>,
    folder: Option<&'a str>,
}

impl<'a> From<Option<&'a KeyLocation>> for KeyLocationOut<'a> {
    fn from(at: Option<&'a KeyLocation>) -> Self {
        KeyLocationOut {
            file: at.map(|a| a.file.as_str()),
            folder: at.and_then(|a| a.folder.as_deref()),
        }
    }
}

/// `{folder, warning}`, one of them null.
#[derive(Serialize)]
pub struct CacheFolderOut<'a> {
    folder: Option<&'a str>,
    warning: Option<&'a str>,
}

impl<'a> From<&'a CacheFolder> for CacheFolderOut<'a> {
    fn from(answer: &'a CacheFolder) -> Self {
        match answer {
            CacheFolder::Folder(folder) => CacheFolderOut {
                folder: Some(folder),
                warning: None,
            },
            CacheFolder::None { warning } => CacheFolderOut {
                folder: None,
                warning: Some(warning),
            },
        }
    }
}

/// `{kind: 'transient' | 'fatal', why}` or
/// `{kind: 'throttled', retryAfterMs (null: use the backoff), why}`.
#[derive(Serialize)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum ClassOut<'a> {
    Transient {
        why: &'a str,
    },
    Throttled {
        retry_after_ms: Option<f64>,
        why: &'a str,
    },
    Fatal {
        why: &'a str,
    },
}

impl<'a> From<&'a Class> for ClassOut<'a> {
    fn from(c: &'a Class) -> Self {
        match c {
            Class::Transient { why } => ClassOut::Transient { why },
            Class::Throttled {
                retry_after_ms,
                why,
            } => ClassOut::Throttled {
                retry_after_ms: retry_after_ms.map(|ms| ms as f64),
                why,
            },
            Class::Fatal { why } => ClassOut::Fatal { why },
        }
    }
}

/// `{type: 'acquire' | 'removeStale' | 'reread' | 'useRecord'}`,
/// `{type: 'wait', untilMs}`, `{type: 'lead', budgetMs}` or
/// `{type: 'alone', budgetMs, warning (null: none)}`.
#[derive(Serialize)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum FlightActionOut<'a> {
    Acquire,
    RemoveStale,
    Reread,
    UseRecord,
    Wait {
        until_ms: f64,
    },
    Lead {
        budget_ms: f64,
    },
    Alone {
        budget_ms: f64,
        warning: Option<&'a str>,
    },
}

impl<'a> From<&'a FlightAction> for FlightActionOut<'a> {
    fn from(a: &'a FlightAction) -> Self {
        match a {
            FlightAction::Acquire => FlightActionOut::Acquire,
            FlightAction::RemoveStale => FlightActionOut::RemoveStale,
            FlightAction::Reread => FlightActionOut::Reread,
            FlightAction::UseRecord => FlightActionOut::UseRecord,
            FlightAction::Wait { until_ms } => FlightActionOut::Wait {
                until_ms: *until_ms as f64,
            },
            FlightAction::Lead { budget_ms } => FlightActionOut::Lead {
                budget_ms: *budget_ms as f64,
            },
            FlightAction::Alone { budget_ms, warning } => FlightActionOut::Alone {
                budget_ms: *budget_ms as f64,
                warning: warning.as_deref(),
            },
        }
    }
}

/// The `status` of a SelfSubjectRulesReview.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RulesStatusIn {
    #[serde(default)]
    resource_rules: Vec<ResourceRuleIn>,
    #[serde(default)]
    incomplete: bool,
    #[serde(default)]
    evaluation_error: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResourceRuleIn {
    #[serde(default)]
    verbs: Vec<String>,
    #[serde(default)]
    api_groups: Vec<String>,
    #[serde(default)]
    resources: Vec<String>,
    #[serde(default)]
    resource_names: Vec<String>,
}

impl From<RulesStatusIn> for RulesStatus {
    fn from(s: RulesStatusIn) -> RulesStatus {
        RulesStatus {
            resource_rules: s
                .resource_rules
                .into_iter()
                .map(|r| ResourceRule {
                    verbs: r.verbs,
                    api_groups: r.api_groups,
                    resources: r.resources,
                    resource_names: r.resource_names,
                })
                .collect(),
            incomplete: s.incomplete,
            evaluation_error: s.evaluation_error,
        }
    }
}

//! Wire types and readers that only the test exports use.

use super::*;
use crate::cache_folder::CacheFolder;
use crate::check::single_flight::{FlightAction, Holder, LockAttempt};
use crate::classify::Class;
use crate::preflight::{Action, Outcome, Request};
use crate::protocol::Level;
use crate::runner_key::KeyLocation;
use crate::text::quoted;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct HeldIn {
    age_ms: f64,
    holder: Holder,
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
                holder: held.holder,
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

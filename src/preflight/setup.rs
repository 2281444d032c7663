//! How a check is built: from settings ([`Preflight::new`]) or from the
//! environment, with the credential and the runner key
//! ([`Preflight::from_env`], [`Preflight::from_env_keyed`]); the cache
//! file name a check would use ([`cache_file_name`]); and what makes a
//! check unable to start ([`SetupError`]).

use crate::retry::{Line, SteadyClock, Trouble};
use std::time::Duration;

use thiserror::Error;

use super::outcome::{Source, Verdict};
use super::probe::{Probe, ProbeRun, State};
use super::Preflight;
use crate::cache::{self, CacheKey, CacheState};
use crate::config::{EnvValue, SettingError, Settings};
use crate::identity::Identity;
use crate::millis;
use crate::permission::{self, Permission, PermissionError, PermissionSpec};
use crate::preflight::retry_quota::RetryQuota;
use crate::random::RandomSource;
use crate::runner_key;
use crate::text::quoted;

/// A check that cannot start.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SetupError {
    /// The permission table is unusable.
    #[error(transparent)]
    Permissions(#[from] PermissionError),
    /// The namespace is empty or not a Kubernetes name.
    #[error("invalid namespace {}", quoted(.0))]
    Namespace(String),
}

impl Preflight {
    /// A permission check of `permissions` in `namespace`.
    ///
    /// `identity` binds the cache record (`None`: caching off); `cached` is
    /// the cache file's content, if there is one; `now_ms` is Unix epoch ms.
    pub fn new(
        settings: Settings,
        permissions: &[PermissionSpec],
        namespace: &str,
        identity: Option<Identity>,
        cached: Option<&[u8]>,
        now_ms: u64,
    ) -> Result<Preflight, SetupError> {
        let permissions = permission::flatten(permissions)?;
        check_namespace(namespace)?;
        Ok(Preflight::checked(
            settings,
            permissions,
            namespace,
            identity,
            cached,
            now_ms,
        ))
    }

    /// [`Preflight::new`] with a table already flattened and a namespace
    /// already checked.
    pub(crate) fn checked(
        settings: Settings,
        permissions: Vec<Permission>,
        namespace: &str,
        identity: Option<Identity>,
        cached: Option<&[u8]>,
        now_ms: u64,
    ) -> Preflight {
        let key = cache_key(&settings, identity, namespace, &permissions);
        let cache = match &key {
            Some(key) => cache::judge(cached, key, &settings.cache, now_ms),
            None => CacheState::Unusable(cache::Unusable::Missing),
        };
        let rules_first = settings.rules_review;
        let mut probes: Vec<Probe> = permissions.into_iter().map(Probe::Access).collect();
        if rules_first {
            probes.push(Probe::Rules);
        }
        let mut check = Preflight::start(settings, namespace, key, cache, probes, now_ms);
        if rules_first {
            for run in &mut check.probes {
                if let Probe::Access(_) = run.probe {
                    run.state = State::Blocked;
                }
            }
        }
        if let CacheState::Unusable(why) = &check.cache {
            if why.deserves_warning() {
                check.warnings.push(format!(
                    "Ignoring this job's cached permission verdict: {}. Asking the Kubernetes API instead.",
                    why.reason()
                ));
            }
        }
        if let CacheState::Fresh { .. } = check.cache {
            let outcome = check.finish(Verdict::Allowed, Some(Source::Cache), now_ms);
            check.outcome = Some(outcome);
        }
        check
    }

    /// Whether `record` answers a check of these inputs at `now_ms` (a
    /// fresh record of this key), judged by the cache alone.
    pub(crate) fn record_answers(
        settings: &Settings,
        identity: Option<Identity>,
        namespace: &str,
        permissions: &[Permission],
        record: Option<&[u8]>,
        now_ms: u64,
    ) -> bool {
        cache_key(settings, identity, namespace, permissions).is_some_and(|key| {
            matches!(
                cache::judge(record, &key, &settings.cache, now_ms),
                CacheState::Fresh { .. }
            )
        })
    }

    /// A check configured from `ACTIONS_RUNNER_PREFLIGHT_*` variables in
    /// `env`, for the service account whose credential (bearer token, or
    /// client key) is given. Bad settings and a missing credential become
    /// warnings (`Warn` actions), never errors.
    ///
    /// The record is signed with the token-derived key
    /// ([`Identity::from_credential`]); [`Preflight::from_env_keyed`] signs
    /// it with the runner key.
    pub fn from_env<'a, V: Into<EnvValue<'a>>>(
        env: impl IntoIterator<Item = (&'a str, V)>,
        permissions: &[PermissionSpec],
        namespace: &str,
        credential: Option<&[u8]>,
        cached: Option<&[u8]>,
        now_ms: u64,
    ) -> Result<Preflight, SetupError> {
        Preflight::from_env_keyed(
            env,
            permissions,
            namespace,
            credential,
            None,
            cached,
            now_ms,
        )
    }

    /// Like [`Preflight::from_env`], with the shim's report on the runner
    /// key file ([`crate::runner_key`]), found where `HOME` or the
    /// `KEY_FILE` setting in `env` puts it. A usable key signs the record
    /// (it then survives token rotation); otherwise a warning names the
    /// file and the reason, and the token-derived key signs it.
    pub fn from_env_keyed<'a, V: Into<EnvValue<'a>>>(
        env: impl IntoIterator<Item = (&'a str, V)>,
        permissions: &[PermissionSpec],
        namespace: &str,
        credential: Option<&[u8]>,
        runner_key: Option<&runner_key::KeyFileReport>,
        cached: Option<&[u8]>,
        now_ms: u64,
    ) -> Result<Preflight, SetupError> {
        let env: Vec<(&str, EnvValue<'a>)> = env.into_iter().map(|(k, v)| (k, v.into())).collect();
        Preflight::keyed(
            &env,
            permissions,
            namespace,
            credential,
            runner_key,
            cached,
            now_ms,
        )
    }

    fn keyed(
        env: &[(&str, EnvValue<'_>)],
        permissions: &[PermissionSpec],
        namespace: &str,
        credential: Option<&[u8]>,
        runner_key: Option<&runner_key::KeyFileReport>,
        cached: Option<&[u8]>,
        now_ms: u64,
    ) -> Result<Preflight, SetupError> {
        let (settings, errors) = Settings::from_env_values(env);
        let home = home_of(env);
        let (identity, key_warning) = identity_for(&settings, home, credential, runner_key);
        let no_credential = identity.is_none() && settings.cache_enabled;
        let mut check = Preflight::new(settings, permissions, namespace, identity, cached, now_ms)?;
        check.queue_setting_warnings(errors);
        check.pending_warnings.extend(key_warning);
        if no_credential {
            check.pending_warnings.push(NO_CREDENTIAL_WARNING.into());
        }
        Ok(check)
    }

    /// Queues warnings to print before anything else this check says.
    pub(crate) fn queue_warnings(&mut self, warnings: impl IntoIterator<Item = String>) {
        self.pending_warnings.extend(warnings);
    }

    fn queue_setting_warnings(&mut self, errors: Vec<SettingError>) {
        self.pending_warnings
            .extend(errors.iter().map(|e| e.to_string()));
    }

    fn start(
        settings: Settings,
        namespace: &str,
        key: Option<CacheKey>,
        cache: CacheState,
        probes: Vec<Probe>,
        now_ms: u64,
    ) -> Preflight {
        let random = RandomSource::for_seed(settings.seed, 0);
        let deadline_ms = now_ms.saturating_add(millis(settings.backoff.deadline));
        let probes = probes
            .into_iter()
            .map(|probe| ProbeRun::new(probe, settings.backoff, now_ms))
            .collect();
        let quota = settings.retry_quota.map(RetryQuota::new);
        Preflight {
            settings,
            namespace: namespace.to_string(),
            key,
            cache,
            probes,
            random,
            started_ms: now_ms,
            deadline_ms,
            clock: SteadyClock::starting_at(now_ms),
            stopping: false,
            requests: 0,
            trouble: Trouble::default(),
            pending_warnings: Vec::new(),
            pending_debug: Vec::new(),
            warnings: Vec::new(),
            warned_evaluation_error: false,
            rules_refusals: 0,
            quota,
            quota_spent: false,
            hedges: 0,
            outcome: None,
        }
    }

    /// The cache file name for this check's key, if caching is on.
    pub fn cache_file_name(&self) -> Option<String> {
        self.key.as_ref().map(cache::file_name)
    }

    /// Shortens the check's deadline to `budget` from its start (a process
    /// that waited its turn at the lock has less time left). Takes effect
    /// only before the first poll; a longer budget changes nothing.
    pub fn limit_budget(&mut self, budget: Duration) {
        if self.requests > 0 || budget >= self.settings.backoff.deadline {
            return;
        }
        self.settings.backoff.deadline = budget;
        self.deadline_ms = self.started_ms.saturating_add(millis(budget));
        for run in &mut self.probes {
            run.line = Line::new(self.settings.backoff, self.started_ms);
        }
    }
}

/// The warning when caching is on and there is no credential to key it.
pub const NO_CREDENTIAL_WARNING: &str = "No service-account token or client key found in the kubeconfig: the permission verdict will not be cached for later steps.";

/// `HOME` from the settings environment, if it is text.
fn home_of<'a>(env: &[(&str, EnvValue<'a>)]) -> Option<&'a str> {
    env.iter().find_map(|(k, v)| match v {
        EnvValue::Text(home) if *k == "HOME" => Some(*home),
        _ => None,
    })
}

/// The identity that keys and signs the record: the credential with the
/// runner key when the shim's report on the key file (`runner_key`) shows
/// a usable one, else the credential alone, with the warning that says
/// why the runner key was not used. `None` without a credential.
pub(crate) fn identity_for(
    settings: &Settings,
    home: Option<&str>,
    credential: Option<&[u8]>,
    runner_key: Option<&runner_key::KeyFileReport>,
) -> (Option<Identity>, Option<String>) {
    let mut key_warning = None;
    let identity = credential.and_then(|credential| {
        let report = runner_key.filter(|_| settings.cache_enabled)?;
        let secret = runner_key::location(settings.key_file.as_deref(), home)
            .map_err(|problem| (None, problem))
            .and_then(|at| runner_key::judge(report).map_err(|p| (Some(at.file), p)));
        match secret {
            Ok(secret) => Identity::with_runner_secret(credential, &secret),
            Err((file, problem)) => {
                key_warning = Some(runner_key::fallback_warning(file.as_deref(), &problem));
                None
            }
        }
    });
    let identity = identity.or_else(|| credential.and_then(Identity::from_credential));
    (identity, key_warning)
}

/// The cache file name a check with these inputs would use, or `None` when
/// caching is off (by setting, or for want of a credential). Lets the caller
/// read the file before it builds the check.
pub fn cache_file_name<'a, V: Into<EnvValue<'a>>>(
    env: impl IntoIterator<Item = (&'a str, V)>,
    permissions: &[PermissionSpec],
    namespace: &str,
    credential: Option<&[u8]>,
) -> Result<Option<String>, SetupError> {
    let env: Vec<(&str, EnvValue<'a>)> = env.into_iter().map(|(k, v)| (k, v.into())).collect();
    let (settings, _) = Settings::from_env_values(&env);
    let permissions = permission::flatten(permissions)?;
    check_namespace(namespace)?;
    if !settings.cache_enabled {
        return Ok(None);
    }
    Ok(credential
        .and_then(Identity::from_credential)
        .map(|identity| {
            cache::file_name(&CacheKey {
                namespace: namespace.to_string(),
                identity,
                permissions: permission::fingerprint(&permissions),
            })
        }))
}

pub(crate) fn check_namespace(namespace: &str) -> Result<(), SetupError> {
    let ok = !namespace.is_empty()
        && namespace.len() <= 253
        && namespace
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.');
    if ok {
        Ok(())
    } else {
        Err(SetupError::Namespace(namespace.chars().take(80).collect()))
    }
}

/// The record's key for these inputs; `None` with the cache off or no
/// identity.
fn cache_key(
    settings: &Settings,
    identity: Option<Identity>,
    namespace: &str,
    permissions: &[Permission],
) -> Option<CacheKey> {
    identity
        .filter(|_| settings.cache_enabled)
        .map(|identity| CacheKey {
            namespace: namespace.to_string(),
            identity,
            permissions: permission::fingerprint(permissions),
        })
}

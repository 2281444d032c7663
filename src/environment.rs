//! A process's settings environment, read once ([`Environment`]): the
//! `ACTIONS_RUNNER_PREFLIGHT_*` settings, the warnings they give, and the
//! two paths the check needs (`HOME`, `RUNNER_TEMP`).
//!
//! The host reads one per environment object and hands it to the check
//! and to every call policy of the process, so a bad value is parsed once
//! and warned about once, however many of them read it.

use std::cell::Cell;

use crate::cache_folder::RUNNER_TEMP;
use crate::config::{EnvValue, Settings};

/// One settings environment, read.
#[derive(Debug, Clone)]
pub struct Environment {
    settings: Settings,
    home: Option<String>,
    runner_temp: Option<String>,
    warnings: Vec<String>,
    /// The warnings were handed out.
    given: Cell<bool>,
}

impl Environment {
    /// The settings and paths in `env`.
    pub fn read(env: &[(&str, EnvValue<'_>)]) -> Environment {
        let (settings, errors) = Settings::from_env_values(env);
        let text = |name: &str| {
            env.iter().find_map(|(k, v)| match v {
                EnvValue::Text(t) if *k == name => Some((*t).to_string()),
                _ => None,
            })
        };
        Environment {
            settings,
            home: text("HOME"),
            runner_temp: text(RUNNER_TEMP),
            warnings: errors.iter().map(ToString::to_string).collect(),
            given: Cell::new(false),
        }
    }

    /// An environment of `settings` made by a host that has them already
    /// (the incident replay), with the two paths; no warnings.
    pub fn of(settings: Settings, home: Option<&str>, runner_temp: Option<&str>) -> Environment {
        Environment {
            settings,
            home: home.map(str::to_string),
            runner_temp: runner_temp.map(str::to_string),
            warnings: Vec::new(),
            given: Cell::new(false),
        }
    }

    /// The settings.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// `HOME`, where the runner key file is by default.
    pub fn home(&self) -> Option<&str> {
        self.home.as_deref()
    }

    /// `RUNNER_TEMP`, where the record is by default.
    pub fn runner_temp(&self) -> Option<&str> {
        self.runner_temp.as_deref()
    }

    /// The settings' warnings (a value that is not accepted, and what is
    /// used instead) to its first reader; none to later ones.
    pub fn warnings_once(&self) -> Vec<String> {
        if self.given.replace(true) {
            Vec::new()
        } else {
            self.warnings.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    use super::*;

    #[test]
    fn a_bad_value_is_warned_about_to_the_first_reader_only() {
        let env = [
            (
                "ACTIONS_RUNNER_PREFLIGHT_DEADLINE_MS",
                EnvValue::Text("soon"),
            ),
            ("HOME", EnvValue::Text("/home/runner")),
            ("RUNNER_TEMP", EnvValue::NotText("object")),
        ];
        let e = Environment::read(&env);
        assert_eq!(e.home(), Some("/home/runner"));
        assert_eq!(e.runner_temp(), None);
        let first = e.warnings_once();
        assert_eq!(first.len(), 1, "{first:?}");
        assert!(
            first[0].contains("ACTIONS_RUNNER_PREFLIGHT_DEADLINE_MS"),
            "{first:?}"
        );
        assert!(e.warnings_once().is_empty());
    }
}

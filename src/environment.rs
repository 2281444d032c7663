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
use crate::text;

/// Why a host's settings environment could not be read at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unreadable {
    /// It is not an object of names and values: its type.
    NotAnObject(&'static str),
    /// Reading it threw (a getter, a Proxy): what was thrown.
    Threw(String),
}

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

    /// An environment that could not be read: the defaults, and one
    /// warning that says why.
    pub fn unreadable(why: Unreadable) -> Environment {
        let warning = match why {
            Unreadable::NotAnObject(kind) => format!(
                "The settings environment (options.env) is a value of type {kind}, not an object of ACTIONS_RUNNER_PREFLIGHT_* settings: the defaults are used."
            ),
            Unreadable::Threw(message) => format!(
                "The settings environment could not be read (reading it threw: {}): the defaults are used.",
                text::clip(&message, 200)
            ),
        };
        Environment {
            warnings: vec![warning],
            ..Environment::of(Settings::new(), None, None)
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

    #[test]
    fn an_environment_that_cannot_be_read_is_the_defaults_with_one_warning_saying_why() {
        let e = Environment::unreadable(Unreadable::Threw("getter boom".into()));
        assert_eq!(e.settings(), &Settings::new());
        assert_eq!(e.home(), None);
        let w = e.warnings_once();
        assert_eq!(w.len(), 1);
        assert!(
            w[0].contains("could not be read (reading it threw: getter boom)"),
            "{w:?}"
        );
        let e = Environment::unreadable(Unreadable::NotAnObject("number"));
        assert!(e.warnings_once()[0].contains("a value of type number, not an object"));
    }
}

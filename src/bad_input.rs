//! The error of the crate's two serde readers (JS values at the boundary,
//! `src/wasm/de.rs`; JSON text, `src/json_tree.rs`): what is wrong, and
//! where (`[0].verbs[1]: expected a string, got a number`).
//!
//! serde's default texts format the value found (`invalid type: floating
//! point `1.5``), and formatting a float brings Rust's float printing,
//! about 15 KB, into the `.wasm`. The readers say what they found
//! themselves, in words (`got a number`), so this error never formats
//! serde's `Unexpected`.

use std::fmt::{self, Display};

use serde::de::{self, Expected, Unexpected};

use crate::text::quoted;

/// An input that does not have the expected shape: where, and what is wrong.
pub struct Bad(Box<Where>);

/// Boxed: a `Result<T, Bad>` is returned through every field read, and a
/// pointer is cheaper to pass along than two strings.
struct Where {
    path: String,
    problem: String,
}

impl Bad {
    /// `problem`, at the top of the input.
    pub fn new(problem: String) -> Bad {
        Bad(Box::new(Where {
            path: String::new(),
            problem,
        }))
    }

    /// `expected <what>, got <got>`.
    pub fn expected(what: &str, got: &str) -> Bad {
        Bad::new(format!("expected {what}, got {got}"))
    }

    /// The same problem, one level further out (`key` or `[index]`).
    pub fn at(mut self, segment: &str) -> Bad {
        if !self.0.path.is_empty() && !self.0.path.starts_with('[') {
            self.0.path.insert(0, '.');
        }
        self.0.path.insert_str(0, segment);
        self
    }

    /// The same problem, in item `index` of an array.
    pub fn at_index(self, index: usize) -> Bad {
        self.at(&format!("[{index}]"))
    }

    /// `<path>: <problem>`, or the problem alone at the top.
    pub fn text(&self) -> String {
        if self.0.path.is_empty() {
            self.0.problem.clone()
        } else {
            format!("{}: {}", self.0.path, self.0.problem)
        }
    }

    /// `invalid <what>: <path>: <problem>`.
    pub fn message(&self, what: &str) -> String {
        format!("invalid {what}: {}", self.text())
    }
}

impl fmt::Debug for Bad {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text())
    }
}

impl Display for Bad {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text())
    }
}

impl std::error::Error for Bad {}

impl de::Error for Bad {
    fn custom<T: Display>(msg: T) -> Bad {
        Bad::new(msg.to_string())
    }

    // The readers never hand a visitor a value of a type it did not ask
    // for, so these are rare (a number out of a field's range); they leave
    // the value unformatted.
    fn invalid_type(_: Unexpected, expected: &dyn Expected) -> Bad {
        Bad::new(format!("expected {expected}"))
    }

    fn invalid_value(_: Unexpected, expected: &dyn Expected) -> Bad {
        Bad::new(format!("expected {expected}"))
    }

    fn missing_field(field: &'static str) -> Bad {
        Bad::new("missing".into()).at(field)
    }

    fn duplicate_field(field: &'static str) -> Bad {
        Bad::new("given twice".into()).at(field)
    }

    fn unknown_field(field: &str, _expected: &'static [&'static str]) -> Bad {
        Bad::new(format!("unknown field {}", quoted(field)))
    }

    /// A string naming no variant of a `variant_identifier` enum
    /// (`holder`, `kind`).
    fn unknown_variant(variant: &str, expected: &'static [&'static str]) -> Bad {
        Bad::new(format!(
            "expected {}, got {}",
            one_of(expected),
            quoted(variant)
        ))
    }
}

/// `a`, `a or b`, `a, b or c`.
pub fn one_of(names: &[&str]) -> String {
    let mut out = String::new();
    for (i, name) in names.iter().enumerate() {
        if i > 0 {
            out.push_str(if i + 1 == names.len() { " or " } else { ", " });
        }
        out.push_str(name);
    }
    out
}

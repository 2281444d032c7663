//! What a line of attempts has met so far ([`Trouble`]).

/// The failures a machine met: the first one that will be retried is
/// warned about (once), the last one is kept for the messages that end or
/// recover the line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Trouble {
    warned: bool,
    last_error: Option<String>,
    retried: u32,
}

impl Trouble {
    /// A failure described by `evidence` that will be retried. The first
    /// time, its evidence back: the caller warns now, and never again.
    pub fn retrying(&mut self, evidence: String) -> Option<&str> {
        self.retried += 1;
        let first = !std::mem::replace(&mut self.warned, true);
        let evidence = self.last_error.insert(evidence);
        first.then_some(evidence.as_str())
    }

    /// A failure described by `evidence` that ends the line, or that is
    /// not retried itself: it is the last error, nothing more.
    pub fn last(&mut self, evidence: String) {
        self.last_error = Some(evidence);
    }

    /// The last error, if any.
    pub fn last_error(&self) -> Option<&str> {
        self.last_error.as_deref()
    }

    /// Whether the warning was given.
    pub fn warned(&self) -> bool {
        self.warned
    }

    /// How many failures were retried.
    pub fn retried(&self) -> u32 {
        self.retried
    }
}

#[cfg(test)]
mod tests {
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    use super::Trouble;

    #[test]
    fn only_the_first_retried_failure_is_warned_about_and_the_last_is_kept() {
        let mut trouble = Trouble::default();
        assert!(!trouble.warned());
        assert_eq!(
            trouble.retrying("ECONNREFUSED".into()),
            Some("ECONNREFUSED")
        );
        assert_eq!(trouble.retrying("ECONNRESET".into()), None);
        trouble.last("HTTP 500".into());
        assert!(trouble.warned());
        assert_eq!(trouble.retried(), 2);
        assert_eq!(trouble.last_error(), Some("HTTP 500"));
    }
}

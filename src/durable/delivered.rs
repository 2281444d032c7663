//! The runs whose code was delivered and whose files may still be in their
//! pod ([`DeliveredRuns`]): a start in the same pod removes them.
//!
//! A host often ends right after its last status (the hooks exit at once),
//! before the clean-up made behind the delivery, so the list outlives the
//! process in a ledger file in the job's temp folder (`$RUNNER_TEMP`, which
//! the runner makes per job and empties after): the next process of the job
//! reads it, and its first start in the pod removes what the one before
//! left. The ledger only ever grows, a line per event:
//!
//! - `d <run id> <namespace>/<pod>`: the run's code was delivered;
//! - `c <run id>`: its files were removed.
//!
//! Appending keeps each write whole with no lock: a line is far below what
//! `O_APPEND` writes atomically. Job containers can write that folder, so
//! the ledger is read as untrusted: a line that is not one of these is
//! skipped, and the worst a forged one can do is name a run to clean up,
//! which a start does only when that run is done (its `done` file is there).

use std::cell::RefCell;
use std::rc::Rc;

/// The ledger's name in the job's temp folder.
pub const LEDGER_NAME: &str = "k8s-auth-preflight-delivered-runs";
/// At most this many bytes of a ledger are read; a longer one is left
/// unread (its runs stay in their pods until the pods are deleted).
pub const LEDGER_LIMIT: usize = 1 << 20;
// At most this many runs are remembered (the newest).
const REMEMBERED: usize = 256;

/// The delivered runs of one call policy: `(namespace/pod, run id)`.
pub type Delivered = Rc<RefCell<DeliveredRuns>>;

/// The delivered runs, and the ledger that carries them across processes.
#[derive(Debug, Clone, Default)]
pub struct DeliveredRuns {
    runs: Vec<(String, String)>,
    ledger: Option<String>,
    read: bool,
}

impl DeliveredRuns {
    /// With the ledger at `ledger` (none: kept in memory only).
    pub fn with_ledger(ledger: Option<String>) -> DeliveredRuns {
        DeliveredRuns {
            runs: Vec::new(),
            read: ledger.is_none(),
            ledger,
        }
    }

    /// The ledger to read before the first start, once per process: the
    /// first run to ask reads it.
    pub fn ledger_to_read(&mut self) -> Option<String> {
        if self.read {
            return None;
        }
        self.read = true;
        self.ledger.clone()
    }

    /// The ledger's text, read (`None`: it could not be, or there is
    /// none): its runs not yet cleaned up join the list.
    pub fn take_ledger(&mut self, text: Option<&str>) {
        let Some(text) = text else { return };
        let mut pending: Vec<(String, String)> = Vec::new();
        for line in text.lines() {
            match parse(line) {
                Some(Line::Delivered { pod, run }) => {
                    pending.retain(|(_, r)| *r != run);
                    pending.push((pod, run));
                }
                Some(Line::Cleaned { run }) => pending.retain(|(_, r)| *r != run),
                None => {}
            }
        }
        for (pod, run) in pending {
            if !self.runs.iter().any(|(_, r)| *r == run) {
                self.runs.push((pod, run));
            }
        }
        self.trim();
    }

    /// Run `run` of `pod` was delivered: remembered, and the ledger line
    /// to append.
    pub fn delivered(&mut self, pod: &str, run: &str) -> Option<(String, String)> {
        self.runs.push((pod.to_string(), run.to_string()));
        self.trim();
        self.line(format!("d {run} {pod}\n"))
    }

    /// Up to `n` runs of `pod` to clean up, oldest first.
    pub fn of_pod(&self, pod: &str, n: usize) -> Vec<String> {
        self.runs
            .iter()
            .filter(|(p, _)| p == pod)
            .map(|(_, run)| run.clone())
            .take(n)
            .collect()
    }

    /// `runs` were cleaned up: forgotten, and the ledger line to append.
    pub fn cleaned(&mut self, runs: &[String]) -> Option<(String, String)> {
        if runs.is_empty() {
            return None;
        }
        self.runs.retain(|(_, r)| !runs.contains(r));
        self.line(runs.iter().map(|r| format!("c {r}\n")).collect())
    }

    /// Whether run `run` is remembered (its files not yet removed).
    pub fn holds(&self, run: &str) -> bool {
        self.runs.iter().any(|(_, r)| r == run)
    }

    /// How many runs are remembered.
    pub fn len(&self) -> usize {
        self.runs.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    fn line(&self, text: String) -> Option<(String, String)> {
        self.ledger.as_ref().map(|file| (file.clone(), text))
    }

    fn trim(&mut self) {
        let over = self.runs.len().saturating_sub(REMEMBERED);
        self.runs.drain(..over);
    }
}

enum Line {
    Delivered { pod: String, run: String },
    Cleaned { run: String },
}

fn parse(line: &str) -> Option<Line> {
    let mut fields = line.split(' ');
    let kind = fields.next()?;
    let run = fields.next().filter(|r| is_run_id(r))?.to_string();
    let line = match kind {
        "d" => {
            let pod = fields.next()?;
            let (namespace, name) = pod.split_once('/')?;
            if namespace.is_empty() || name.is_empty() || name.contains('/') {
                return None;
            }
            Line::Delivered {
                pod: pod.to_string(),
                run,
            }
        }
        "c" => Line::Cleaned { run },
        _ => return None,
    };
    fields.next().is_none().then_some(line)
}

/// A run id as the machine makes them: 32 lowercase hex digits.
pub fn is_run_id(text: &str) -> bool {
    text.len() == 32 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

#[cfg(test)]
mod tests {
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    use super::*;

    const A: &str = "0123456789abcdef0123456789abcdef";
    const B: &str = "fedcba9876543210fedcba9876543210";
    const C: &str = "00000000000000000000000000000001";

    #[test]
    fn the_ledger_gives_the_runs_delivered_and_not_cleaned_up_skipping_anything_else() {
        let mut d = DeliveredRuns::with_ledger(Some("/rt/ledger".into()));
        assert_eq!(d.ledger_to_read().as_deref(), Some("/rt/ledger"));
        let text = format!(
            "d {A} ci/job-pod\nd {B} ci/job-pod\nc {A}\nd {C} ci/other\n\
             d {A}x ci/job-pod\nd {C} no-slash\nd {C} ci/a/b\nc ABCDEF\nx {C}\nd {C} ci/job-pod extra\n\
             \u{0}garbage\nd {C}"
        );
        d.take_ledger(Some(&text));
        assert_eq!(d.ledger_to_read(), None, "read once");
        assert_eq!(d.of_pod("ci/job-pod", 8), vec![B.to_string()]);
        assert_eq!(d.of_pod("ci/other", 8), vec![C.to_string()]);
        assert_eq!(d.len(), 2);
    }

    #[test]
    fn each_delivery_and_clean_up_is_a_line_to_append_and_without_a_ledger_none() {
        let mut d = DeliveredRuns::with_ledger(Some("/rt/ledger".into()));
        d.take_ledger(None);
        assert_eq!(
            d.delivered("ci/job-pod", A),
            Some(("/rt/ledger".into(), format!("d {A} ci/job-pod\n")))
        );
        let _ = d.delivered("ci/job-pod", B);
        assert_eq!(
            d.cleaned(&[A.to_string(), B.to_string()]),
            Some(("/rt/ledger".into(), format!("c {A}\nc {B}\n")))
        );
        assert!(d.is_empty());
        assert_eq!(d.cleaned(&[]), None);

        let mut memory = DeliveredRuns::with_ledger(None);
        assert_eq!(memory.ledger_to_read(), None);
        assert_eq!(memory.delivered("ci/job-pod", A), None);
        assert_eq!(memory.of_pod("ci/job-pod", 8), vec![A.to_string()]);
    }

    #[test]
    fn what_is_remembered_is_bounded_keeping_the_newest() {
        let mut d = DeliveredRuns::with_ledger(None);
        for i in 0..(REMEMBERED + 10) {
            let _ = d.delivered("ci/job-pod", &format!("{i:032x}"));
        }
        assert_eq!(d.len(), REMEMBERED);
        assert_eq!(d.of_pod("ci/job-pod", 1), vec![format!("{:032x}", 10)]);
    }
}

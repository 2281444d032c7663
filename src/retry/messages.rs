//! The words both machines print about a line of attempts.

/// The warning printed once, at the first failure that will be retried:
/// what did not answer, the evidence, how long it is retried for (whole
/// seconds, rounded up: a budget of 1,999 ms is "2 s", not "1 s"), and
/// `reassurance`, what it is not.
pub fn starts_failing(what: &str, evidence: &str, deadline_ms: u64, reassurance: &str) -> String {
    format!(
        "The Kubernetes API did not answer {what} ({evidence}); retrying for up to {} s. {reassurance}",
        deadline_ms.div_ceil(1000)
    )
}

#[cfg(test)]
mod tests {
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    use super::starts_failing;

    #[test]
    fn the_warning_rounds_the_deadline_up() {
        assert_eq!(
            starts_failing("listNamespacedPod", "ECONNREFUSED", 1_999, "The job has not failed."),
            "The Kubernetes API did not answer listNamespacedPod (ECONNREFUSED); retrying for up to 2 s. The job has not failed."
        );
        assert_eq!(
            starts_failing("a permission check", "HTTP 503", 2_000, "This is not a permissions problem."),
            "The Kubernetes API did not answer a permission check (HTTP 503); retrying for up to 2 s. This is not a permissions problem."
        );
    }
}

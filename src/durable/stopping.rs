//! What a hook process does when it is asked to stop (SIGINT, SIGTERM)
//! while durable runs are out: each run is told to stop its command (the
//! machine's `Cancel` fact); the process waits for them, within a bound,
//! and then lets the signal do what it would have done without us.

/// How long a stopping process waits for its runs' commands to be stopped:
/// a kill step takes up to 2 s in the pod (TERM, then KILL), and may need
/// its set-up retried once or twice.
pub const STOP_WAIT_MS: u64 = 8_000;

// A kill step's own wait in the pod (TERM, up to 2 s, KILL), with room for a
// second set-up.
const _: () = assert!(STOP_WAIT_MS >= 3 * 2_000);

/// Whether the process raises the signal again once its runs were stopped.
/// A host with handlers of its own (`host_handlers` > 0) decides what the
/// signal does, and it has already heard it; a host with none would have
/// been ended by it, and is.
pub fn raise_after_stop(host_handlers: u32) -> bool {
    host_handlers == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn a_host_without_handlers_is_ended_by_the_signal_and_one_with_them_is_not() {
        assert!(raise_after_stop(0));
        assert!(!raise_after_stop(1));
        assert!(!raise_after_stop(3));
    }
}

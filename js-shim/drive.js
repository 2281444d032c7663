'use strict';
// Runs the actions the core's state machine returns: starts requests (each
// with an AbortController that really aborts it at its timeout), sleeps until
// the machine's wake-up time or until a request settles, prints warnings, and
// aborts whatever is still in flight when the machine is done. Holds no
// policy: what to send, when, and what an error means are the core's calls.

const { errorFacts } = require('./facts');

// Without a credential to hide, facts are taken as they are.
const plainFacts = (error, timedOut) => errorFacts(error, { timedOut });

// setTimeout's own limit (a signed 32-bit count of ms); longer waits poll again.
const MAX_TIMER_MS = 0x7fffffff;

/**
 * @param machine   a wasm `Preflight`
 * @param perform   (action, signal) => Promise<result>, result as the core takes it
 * @param clock     () => epoch ms
 * @param logger    { warning }
 * @param observer  optional (event) => void, for tests and the demo timeline
 * @param describeError  optional (error, timedOut) => error facts; the
 *                  default is errorFacts with nothing redacted
 */
async function drive(machine, perform, { clock, logger, observer, describeError = plainFacts }) {
  const inFlight = new Set();
  let finished = false;
  let wake = null;
  // An observer is for tests and timelines: if it throws, the check goes on.
  // (Thrown inside a request's settle callback, it was an unhandled
  // rejection that ended the whole hook process.)
  const observe = (event) => {
    if (!observer) return;
    try {
      observer(event);
    } catch {
      // ignored on purpose
    }
  };
  const notify = () => {
    if (wake) {
      const w = wake;
      wake = null;
      w();
    }
  };

  const start = (action) => {
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, action.timeoutMs);
    const entry = { controller, timer };
    inFlight.add(entry);
    const settle = (result) => {
      clearTimeout(timer);
      inFlight.delete(entry);
      // After `done` the machine may already be freed; late results of
      // aborted requests have nowhere to go.
      if (finished) return;
      observe({ type: 'result', atMs: clock(), probe: action.probe, attempt: action.attempt, result });
      try {
        machine.onResult(action.probe, action.attempt, clock(), result);
      } catch (e) {
        // A result the core cannot read (a bug in `perform`) still counts
        // as a failed attempt; it must never become an unhandled rejection.
        machine.onResult(action.probe, action.attempt, clock(), { type: 'failed', facts: describeError(e, false) });
      }
      notify();
    };
    let promise;
    try {
      promise = Promise.resolve(perform(action, controller.signal));
    } catch (e) {
      promise = Promise.reject(e);
    }
    promise.then(
      (result) => settle(result),
      (error) => settle({ type: 'failed', facts: describeError(error, timedOut) }),
    );
  };

  try {
    for (;;) {
      const action = machine.poll(clock());
      observe({ ...action, atMs: clock() });
      if (action.type === 'send') {
        start(action);
      } else if (action.type === 'warn') {
        logger.warning(action.message);
      } else if (action.type === 'debug') {
        logger.debug(action.message);
      } else if (action.type === 'done') {
        return action.outcome;
      } else {
        const delay = Math.min(MAX_TIMER_MS, Math.max(0, action.untilMs - clock()));
        await new Promise((resolve) => {
          const timer = setTimeout(() => {
            wake = null;
            resolve();
          }, delay);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
    }
  } finally {
    finished = true;
    for (const entry of inFlight) {
      clearTimeout(entry.timer);
      entry.controller.abort();
    }
  }
}

/**
 * Runs the actions of the core's `SingleFlight` (one process's turn at the
 * job's lock file) until it says `lead`, `alone` or `useRecord`, and returns
 * that action. `io` does the file work: `acquire()` returns the lock attempt
 * as the core takes it, `removeStale()` and `reread()` return booleans.
 */
async function takeTurn(flight, io, { clock }) {
  for (;;) {
    const action = flight.poll(clock());
    if (action.type === 'acquire') {
      flight.onLock(clock(), io.acquire());
    } else if (action.type === 'removeStale') {
      flight.onRemoved(clock(), io.removeStale());
    } else if (action.type === 'reread') {
      flight.onRecord(clock(), io.reread());
    } else if (action.type === 'wait') {
      const delay = Math.min(MAX_TIMER_MS, Math.max(0, action.untilMs - clock()));
      await new Promise((resolve) => setTimeout(resolve, delay));
    } else {
      return action;
    }
  }
}

module.exports = { drive, takeTurn };

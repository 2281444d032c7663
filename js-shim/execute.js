'use strict';
// The executor: the one loop of the shim. It hands the core's machine the
// facts it owes, takes the actions the machine returns, and does them:
// file actions at once (their facts go into the next step), logs to the
// logger, requests started (each with an AbortController that really aborts
// it at its timeout; its result is a fact whenever it settles), waits slept
// until the machine's time or until a request settles. When the machine is
// done, whatever is still in flight is aborted. It decides nothing.

const { errorFacts } = require('./facts');

// Without a credential to hide, facts are taken as they are.
const plainFacts = (error, timedOut) => errorFacts(error, { timedOut });

// setTimeout's own limit (a signed 32-bit count of ms); longer waits poll again.
const MAX_TIMER_MS = 0x7fffffff;

/**
 * @param machine   a wasm `Check` or `Call`: `step(nowMs, facts) -> actions`
 * @param io.send   (action, signal) => Promise<result>, result as the core takes it
 * @param io.file   (action) => fact, for every action that is not send, log, wait or done
 * @param clock     () => epoch ms
 * @param logger    { debug, info, warning, error }
 * @param observer  optional (event) => void, for tests and the demo timeline
 * @param describeError  optional (error, timedOut) => error facts; the
 *                  default is errorFacts with nothing redacted
 * @param stop      optional AbortSignal: the host cancelled (its caller's
 *                  own signal fired); the loop ends at once with `null`
 * @param first     optional: the machine's first actions, already returned
 *                  with it (the first `step` is then not made)
 * @returns the outcome of the `done` action, or null when stopped
 */
async function execute(machine, io, { clock, logger, observer, describeError = plainFacts, stop, first }) {
  const inFlight = new Set();
  const settled = [];
  let finished = false;
  let wake = null;
  // An observer is for tests and timelines: if it throws, the check goes on.
  const observe = (event) => {
    if (!observer) return;
    try {
      observer(event);
    } catch {
      // ignored on purpose
    }
  };

  const start = (action) => {
    const controller = new AbortController();
    let timedOut = false;
    // A call that passes through has no timeout of ours (null).
    const timer =
      action.timeoutMs === null
        ? null
        : setTimeout(() => {
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
      settled.push({ type: 'response', probe: action.probe, attempt: action.attempt, result });
      if (wake) wake();
    };
    let promise;
    try {
      promise = Promise.resolve(io.send(action, controller.signal));
    } catch (e) {
      promise = Promise.reject(e);
    }
    promise.then(
      (result) => settle(result),
      (error) => settle({ type: 'failed', facts: describeError(error, timedOut) }),
    );
  };

  const onStop = () => {
    if (wake) wake();
  };
  if (stop) stop.addEventListener('abort', onStop, { once: true });
  try {
    let facts = [];
    let given = first || null;
    for (;;) {
      if (stop && stop.aborted) return null;
      const actions = given || machine.step(clock(), facts);
      given = null;
      facts = [];
      let untilMs = null;
      for (const action of actions) {
        observe({ ...action, atMs: clock() });
        switch (action.type) {
          case 'send':
            start(action);
            break;
          case 'log':
            logger[action.level](action.message);
            break;
          case 'wait':
            untilMs = action.untilMs;
            break;
          case 'done':
            return action.outcome;
          default:
            facts.push(io.file(action));
        }
      }
      if (facts.length === 0 && settled.length === 0) {
        if (stop && stop.aborted) return null;
        // `untilMs` null: until a request settles, however long.
        const delay = untilMs === null ? null : Math.min(MAX_TIMER_MS, Math.max(0, untilMs - clock()));
        await new Promise((resolve) => {
          const timer =
            delay === null
              ? null
              : setTimeout(() => {
                  wake = null;
                  resolve();
                }, delay);
          wake = () => {
            wake = null;
            clearTimeout(timer);
            resolve();
          };
        });
      }
      facts.push(...settled.splice(0));
    }
  } finally {
    if (stop) stop.removeEventListener('abort', onStop);
    finished = true;
    for (const entry of inFlight) {
      clearTimeout(entry.timer);
      entry.controller.abort();
    }
  }
}

module.exports = { execute };

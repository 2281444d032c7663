'use strict';
// The executor: the one loop of the shim, for every machine of the core
// (the check, a call, a durable exec). It hands the machine the facts it
// owes, takes the actions the machine returns, and does them: requests
// started (each with an AbortController that really aborts it at its
// timeout; its result is a fact whenever it settles), logs to the logger,
// waits slept until the machine's time or until a fact arrives, and every
// other action handed to the host's `act`, whose facts come back at once or
// later. When the machine is done, whatever request is still in flight is
// aborted. It decides nothing.

const { errorFacts } = require('./facts');

// Without a credential to hide, facts are taken as they are.
const plainFacts = (error, timedOut) => errorFacts(error, { timedOut });

// setTimeout's own limit (a signed 32-bit count of ms); longer waits poll again.
const MAX_TIMER_MS = 0x7fffffff;

/** Facts that arrive between steps (a request settled, a stream's event, the host's own news), and the wake of a sleeping loop. */
class Inbox {
  constructor() {
    this.facts = [];
    this.wake = null;
  }

  push(fact) {
    this.facts.push(fact);
    if (this.wake) this.wake();
  }

  take() {
    return this.facts.splice(0);
  }
}

/**
 * @param machine   a wasm `Check`, `Call` or `Durable`: `step(nowMs, facts) -> actions`
 * @param io.send   optional (action, signal) => Promise<result>, result as
 *                  the core takes it, for `send` actions
 * @param io.act    (action, report) => fact | undefined | Promise of either,
 *                  for every action that is not send, log, wait, idle or
 *                  done: does it; its fact goes into the next step, and a
 *                  promise is awaited before the next action; `report(fact)`
 *                  hands in a fact later (a stream's events)
 * @param clock     () => ms
 * @param logger    { debug, info, warning, error }
 * @param observer  optional (event) => void, for tests and the demo timeline
 * @param describeError  optional (error, timedOut) => error facts; the
 *                  default is errorFacts with nothing redacted
 * @param stop      optional AbortSignal: the host cancelled (its caller's
 *                  own signal fired); the loop ends at once with `null`
 * @param first     optional: the machine's first actions, already returned
 *                  with it (the first `step` is then not made)
 * @param inbox     optional Inbox: facts the host hands in of its own
 *                  accord (a signal, the caller closing a stream)
 * @returns the outcome of the `done` action, or null when stopped
 */
async function execute(machine, io, { clock, logger, observer, describeError = plainFacts, stop, first, inbox = new Inbox() }) {
  const inFlight = new Set();
  let finished = false;
  const report = (fact) => {
    if (!finished) inbox.push(fact);
  };
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
      inbox.push({ type: 'response', probe: action.probe, attempt: action.attempt, result });
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
    if (inbox.wake) inbox.wake();
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
      let idle = false;
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
          case 'idle':
            // A wait that does not keep the process alive.
            untilMs = action.untilMs;
            idle = true;
            break;
          case 'done':
            return action.outcome;
          default: {
            let fact = io.act(action, report);
            if (fact && typeof fact.then === 'function') fact = await fact;
            if (fact) facts.push(fact);
          }
        }
      }
      if (facts.length === 0 && inbox.facts.length === 0) {
        if (stop && stop.aborted) return null;
        // `untilMs` null: until a fact arrives, however long.
        const delay = untilMs === null ? null : Math.min(MAX_TIMER_MS, Math.max(0, untilMs - clock()));
        await new Promise((resolve) => {
          const timer =
            delay === null
              ? null
              : setTimeout(() => {
                  inbox.wake = null;
                  resolve();
                }, delay);
          if (idle && timer) timer.unref();
          inbox.wake = () => {
            inbox.wake = null;
            clearTimeout(timer);
            resolve();
          };
        });
      }
      facts.push(...inbox.take());
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

module.exports = { execute, Inbox };

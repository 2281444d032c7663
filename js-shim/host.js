'use strict';
// What the check and the call wrappers share of the host: its clock, its
// settings environment, the call options that make a client-node call
// abortable and keep the raw body of its answer.

const core = require('../pkg/k8s_auth_preflight.js');

/**
 * A clock that reads `wall` once and then runs on the monotonic clock: a wall
 * clock stepped back (NTP, a VM restore) or frozen must not stretch a
 * check's waits past its deadline.
 */
function steadyClock(wall) {
  const start = wall();
  // Refused here, for this caller alone: a clock that reads NaN would
  // otherwise be kept and refused by the core at every later step; a
  // numeric string would be concatenated, not added, below.
  if (typeof start !== 'number' || !Number.isFinite(start) || start < 0 || start > Number.MAX_SAFE_INTEGER) {
    const got = typeof start === 'number' ? String(start) : `a ${typeof start}`;
    throw new TypeError(`options.now() must return epoch milliseconds as a finite number from 0 to 2^53, got ${got}`);
  }
  const monotonicStart = performance.now();
  return () => start + (performance.now() - monotonicStart);
}

// The environment with a seed drawn from `random`, one per environment
// object and `random` function: the same object every time, so its
// settings are read (and warned about) once, and its calls share one
// policy.
const seeded = new WeakMap();

/** The settings environment, with `random` turned into a seed if given. */
function environment(options) {
  const env = options.env || process.env;
  if (typeof options.random !== 'function') return env;
  const key = env !== null && typeof env === 'object' ? env : null;
  const byRandom = key ? seeded.get(key) || new WeakMap() : null;
  if (byRandom && byRandom.has(options.random)) return byRandom.get(options.random);
  const draw = options.random();
  if (typeof draw !== 'number' || !(draw >= 0 && draw < 1)) {
    const got = typeof draw === 'number' ? String(draw) : `a ${typeof draw}`;
    throw new TypeError(`options.random() must return a number from 0 (included) to 1 (excluded), got ${got}`);
  }
  let withSeed;
  try {
    withSeed = { ...env, ACTIONS_RUNNER_PREFLIGHT_SEED: String(Math.floor(draw * Number.MAX_SAFE_INTEGER)) };
  } catch {
    // An environment that cannot be read: the core says so, once.
    withSeed = env;
  }
  if (byRandom) {
    byRandom.set(options.random, withSeed);
    seeded.set(key, byRandom);
  }
  return withSeed;
}

// The settings of each environment object, read by the core once per
// process and shared by the check and every call policy.
const settingsByEnvironment = new WeakMap();

/** The core's reading of settings environment `env` (one per object). */
function settingsOf(env) {
  if (env === null || typeof env !== 'object') return new core.Settings(env);
  let settings = settingsByEnvironment.get(env);
  if (!settings) {
    settings = new core.Settings(env);
    settingsByEnvironment.set(env, settings);
  }
  return settings;
}

/**
 * Options for a client-node call that abort it when `signal` fires. Pass as
 * the second argument of an object-parameter API call.
 */
function withAbortSignal(signal, onCallerSignal) {
  // client-node's generated API chains middleware through objects with a
  // `toPromise()`; a plain one is all it needs, in 1.x and 2.x alike.
  const resolved = (value) => ({ toPromise: () => Promise.resolve(value) });
  return {
    middleware: [
      {
        pre: (context) => {
          // A signal the caller's own middleware set still aborts the call.
          const theirs = typeof context.getSignal === 'function' ? context.getSignal() : undefined;
          if (theirs && onCallerSignal) onCallerSignal(theirs);
          context.setSignal(theirs && typeof AbortSignal.any === 'function' ? AbortSignal.any([theirs, signal]) : signal);
          return resolved(context);
        },
        post: (response) => resolved(response),
      },
    ],
    middlewareMergeStrategy: 'append',
  };
}

/**
 * Call options that abort the call when `signal` fires and keep the raw
 * text of the response body (read once, then handed back to the client
 * unchanged). client-node turns a body into its typed model, coercing what
 * does not fit (a string where a list belongs becomes a list of its
 * characters); the core must see what the server said.
 */
function capturingBody(signal) {
  const resolved = (value) => ({ toPromise: () => Promise.resolve(value) });
  let text = null;
  const options = withAbortSignal(signal);
  options.middleware.push({
    pre: (context) => resolved(context),
    post: (response) => ({
      toPromise: async () => {
        text = await response.body.text();
        const bytes = Buffer.from(text, 'utf8');
        response.body = { text: async () => text, binary: async () => bytes };
        return response;
      },
    }),
  });
  return { options, body: () => text };
}

module.exports = { steadyClock, environment, settingsOf, withAbortSignal, capturingBody };

'use strict';
// Every Kubernetes call of a job under the core's call policy: the API
// clients a KubeConfig makes, and the Exec and Log helpers. One call
// machine of the core (`Call`, src/call/) per call; the executor
// (execute.js) runs it. This file only makes the calls the machine asks
// for and reports how each ended; what is retried, when, and how a call
// ends is the machine's.

const { execute } = require('./execute');
const { completeLogger } = require('./log');
const { errorDescriber, textRedactor } = require('./facts');
const { CallGaveUpError } = require('./errors');
const { steadyClock, environment, settingsOf, withAbortSignal, capturingBody } = require('./host');
const { credentialFacts } = require('./credential');
const util = require('node:util');

/**
 * What errors of calls through `kc` must hide: its credentials, as they
 * were when the wrapper was made and as they are when an error is
 * described (the client reads a token file when it sends, and the kubelet
 * rotates a projected token under a long-lived wrapper), and whatever
 * follows `Bearer ` or `Basic `. `describeError` gives error facts,
 * `redact` a text.
 */
function secretsOf(kc) {
  const first = credentialFacts(kc).secrets;
  const current = () => first.concat(credentialFacts(kc).secrets);
  return {
    describeError: (error, timedOut) => errorDescriber(current())(error, timedOut),
    redact: (text) => textRedactor(current())(text),
  };
}

// One steady clock per settings environment (process.env, or a host's env
// object), read from the first wrapper's `now` (else Date.now) once: the
// calls of one environment share what they learn of an outage (the core's
// Settings keeps one call policy, src/call/call_policy.rs), and what it
// remembers of one call is compared with another's times; a wall clock
// that steps between them must move neither.
const clocks = new WeakMap();

function clockOf(env, now) {
  const shared = env !== null && typeof env === 'object';
  let clock = shared ? clocks.get(env) : undefined;
  // A bad `now` is refused for every wrapper, the env's first or not.
  if (clock && now) steadyClock(now);
  if (!clock) {
    clock = steadyClock(now || Date.now);
    if (shared) clocks.set(env, clock);
  }
  return clock;
}

/** The policy of one set of options, where its lines go, and what its errors hide. */
function callPolicy(kc, options = {}) {
  if (options === null || typeof options !== 'object') throw new TypeError('options must be an object');
  const logger = completeLogger(options.logger);
  const env = environment(options);
  // The clock first: a bad `now` is refused before the settings' warnings
  // are taken.
  const clock = clockOf(env, options.now);
  const settings = settingsOf(env);
  for (const warning of settings.callWarnings()) logger.warning(warning);
  // The Exec and Log helpers read the kubeconfig's current cluster at each
  // call: so does the outage memory.
  return { settings, logger, options, clock, cluster: () => clusterOf(kc), ...secretsOf(kc) };
}

/** The server URL of `kc`'s current cluster, or undefined. */
function clusterOf(kc) {
  try {
    const cluster = kc && typeof kc.getCurrentCluster === 'function' ? kc.getCurrentCluster() : null;
    return cluster && typeof cluster.server === 'string' ? cluster.server : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Runs one call: `spec` describes it to the core, `attempt(signal)` makes
 * it once, `readBack(request, signal)` reads back the object a create was
 * for (resolving `{ value, body }`). `onLate(value)` closes a stream that
 * opened after the machine had let its request go. With `rethrowLast`, a
 * call given up throws the last error it got, when it got one, instead of
 * a CallGaveUpError (retryK8sApiCall's contract).
 */
async function runCall(state, spec, attempt, readBack, onLate, rethrowLast = false) {
  const clock = state.clock;
  const cluster = state.cluster();
  const machine = state.settings.call(cluster === undefined ? spec : { ...spec, cluster }, clock());
  const values = new Map();
  const errors = new Map();
  // The caller's own abort signal (set by its call options' middleware):
  // when it fires, the call ends with the error it caused, at once.
  const stop = new AbortController();
  let callerSignal = null;
  let cancelled;
  const onCallerSignal = (signal) => {
    if (callerSignal) return;
    callerSignal = signal;
    if (signal.aborted) stop.abort();
    else signal.addEventListener('abort', () => stop.abort(), { once: true });
  };
  let outcome;
  // The attempt made last, as the client returned it.
  let latest = null;
  try {
    outcome = await execute(
      machine,
      {
        send: async (action, signal) => {
          try {
            if (action.request.kind === 'readBack') {
              const { value, body } = await settleOrAbort(readBack(action.request, signal), signal);
              values.set(action.probe, value);
              return { type: 'readBack', body };
            }
            const made = Promise.resolve(attempt(signal, onCallerSignal, action));
            latest = made;
            const value = await settleOrAbort(made, signal, onLate);
            values.set(action.probe, value);
            return { type: 'succeeded' };
          } catch (thrown) {
            // The host saw the connection never made: a fact of its own.
            if (thrown && thrown[NEVER_CONNECTED]) {
              errors.set(action.probe, thrown.error);
              return { type: 'failedBeforeSending', facts: state.describeError(thrown.error, false) };
            }
            const error = thrown;
            if (callerSignal && callerSignal.aborted && cancelled === undefined) cancelled = error;
            // Kept by request; the core says which one is the call's last
            // (never one its own timeout ended).
            else errors.set(action.probe, error);
            throw error;
          }
        },
        act: (action) => {
          throw new Error(`k8s-auth-preflight: a call asked for an action it has none of: ${JSON.stringify(action.type)}`);
        },
      },
      { clock, logger: state.logger, observer: state.options.observer, describeError: state.describeError, stop: stop.signal },
    );
  } finally {
    machine.free();
  }
  // Cancelled by the caller: the client's own answer to the abort, as the
  // plain call gives it (its request got the caller's signal too), else
  // the caller's reason; never an abort of ours.
  if (outcome === null) {
    const own = cancelled !== undefined && !isOurAbort(cancelled) ? cancelled : await ownError(latest);
    throw own !== undefined ? withoutSecrets(own, state.redact) : callerSignal.reason;
  }
  switch (outcome.type) {
    case 'return':
      return values.get(outcome.request);
    case 'deleted':
      return undefined;
    case 'throw':
      throw withoutSecrets(errors.get(outcome.request), state.redact);
    default: {
      const last = outcome.lastRequest === null ? undefined : errors.get(outcome.lastRequest);
      if (rethrowLast && last !== undefined) throw withoutSecrets(last, state.redact);
      // The raw error may carry the request (its headers, the token);
      // the give-up keeps only what its facts say, the credential hidden.
      throw new CallGaveUpError(outcome.message, last === undefined ? undefined : redactedCopy(state.describeError(last, false)));
    }
  }
}

/**
 * `promise`, or a rejection as soon as `signal` aborts (a client that does
 * not listen to the signal, such as an exec set-up, is not waited for). A
 * value that arrives after the abort goes to `onLate`.
 */
function settleOrAbort(promise, signal, onLate) {
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(abortError());
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    Promise.resolve(promise).then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        if (signal.aborted) {
          if (onLate) onLate(value);
        } else resolve(value);
      },
      (error) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/** An Error holding only `facts`' name, codes, status and message. */
function redactedCopy(facts) {
  const copy = new Error(facts.message || 'the call failed');
  if (facts.name) copy.name = facts.name;
  if (facts.status !== null) copy.code = facts.status;
  else if (facts.codes.length > 0) copy.code = facts.codes[0];
  if (facts.codes.length > 0) copy.codes = facts.codes.slice();
  // Its stack would only point into this file.
  copy.stack = `${copy.name}: ${copy.message}`;
  return copy;
}

const OUR_ABORT = Symbol('aborted by the call policy');

// How long a cancelled call waits for its client's own error.
const OWN_ERROR_WAIT_MS = 1_000;

/** What `made` rejects with within OWN_ERROR_WAIT_MS, or undefined. */
async function ownError(made) {
  if (!made) return undefined;
  let timer;
  const late = new Promise((resolve) => {
    timer = setTimeout(() => resolve(undefined), OWN_ERROR_WAIT_MS);
  });
  try {
    return await Promise.race([made.then(() => undefined, (error) => error), late]);
  } finally {
    clearTimeout(timer);
  }
}

function isOurAbort(error) {
  return error !== null && typeof error === 'object' && error[OUR_ABORT] === true;
}

function abortError() {
  const error = new Error('The operation was aborted');
  error.name = 'AbortError';
  error[OUR_ABORT] = true;
  return error;
}

/**
 * The client's own error, thrown as the plain client throws it, with the
 * credential hidden from its texts (a token the HTTP client would not send
 * is quoted in its message). The `ws` client's error event holds its
 * WebSocket, whose request holds the `Authorization` header: the event is
 * thrown as a copy of the same class without it.
 */
function withoutSecrets(error, redact) {
  if (typeof error === 'string') return redact(error);
  if (error === null || typeof error !== 'object') return error;
  let thrown = error;
  try {
    const target = 'target' in error ? error.target : undefined;
    thrown = target !== null && typeof target === 'object' ? eventWithoutTarget(error, target) : error;
    scrubChain(thrown, redact, 0, new Set());
  } catch {
    // a revoked Proxy, a throwing getter: looked at below
  }
  // What could not be hidden in place (a frozen error, a message behind a
  // getter, a string cause, a symbol key, a value deeper than the scrub
  // goes) is never thrown: a copy with the texts hidden is.
  return showsSecret(thrown, redact) ? copyWithoutSecrets(thrown, redact) : thrown;
}

/** Whether a form a host may print `error` in still shows a credential; true when one cannot be made. */
function showsSecret(error, redact) {
  try {
    const forms = [util.inspect(error, { depth: null, showHidden: true, getters: true, maxArrayLength: null, maxStringLength: null }), String(error.stack), String(error.message)];
    try {
      forms.push(JSON.stringify(error));
    } catch {
      // not JSON: the other forms
    }
    return forms.some((form) => typeof form === 'string' && redact(form) !== form);
  } catch {
    return true;
  }
}

/** A plain Error with what `error` says about itself (name, message, code, status), every text hidden. */
function copyWithoutSecrets(error, redact) {
  const read = (key) => {
    try {
      return error[key];
    } catch {
      return undefined;
    }
  };
  const message = read('message');
  const copy = new Error(redact(typeof message === 'string' ? message : 'an error that could not be read'));
  const name = read('name');
  if (typeof name === 'string') copy.name = redact(name);
  for (const key of ['code', 'status', 'statusCode', 'errno', 'syscall']) {
    const value = read(key);
    if (typeof value === 'string') copy[key] = redact(value);
    else if (typeof value === 'number') copy[key] = value;
  }
  copy.stack = redact(String(copy.stack));
  return copy;
}

// How deep a cause chain is scrubbed (as deep as its facts are read).
const MAX_CHAIN = 8;

/** The texts of `error` and of its causes (`cause`, `error`, `errors`), the credential hidden. */
function scrubChain(error, redact, depth, seen) {
  if (error === null || typeof error !== 'object' || depth > MAX_CHAIN || seen.has(error)) return;
  seen.add(error);
  for (const key of ['message', 'stack']) scrubText(error, key, redact);
  scrubOwn(error, redact, 0, seen);
  scrubChain(error.cause, redact, depth + 1, seen);
  scrubChain(error.error, redact, depth + 1, seen);
  if (Array.isArray(error.errors)) for (const inner of error.errors.slice(0, 16)) scrubChain(inner, redact, depth + 1, seen);
}

// How far into an error's own objects (its `headers`, a parsed `body`)
// texts are hidden, and how many keys of each are looked at.
const MAX_OWN_DEPTH = 3;
const MAX_OWN_KEYS = 256;
const CHAIN_KEYS = new Set(['cause', 'error', 'errors']);

/** Every text among the own properties of `object` and of its plain objects and arrays, the credential hidden. */
function scrubOwn(object, redact, depth, seen) {
  for (const key of Object.keys(object).slice(0, MAX_OWN_KEYS)) {
    if (depth === 0 && CHAIN_KEYS.has(key)) continue;
    const value = object[key];
    if (typeof value === 'string') scrubText(object, key, redact);
    else if (value !== null && typeof value === 'object' && depth < MAX_OWN_DEPTH && !seen.has(value)) {
      seen.add(value);
      scrubOwn(value, redact, depth + 1, seen);
    }
  }
}

function eventWithoutTarget(event, target) {
  const copy = Object.create(Object.getPrototypeOf(event));
  for (const key of Reflect.ownKeys(event)) {
    const value = event[key];
    Object.defineProperty(copy, key, { value: value === target ? null : value, writable: true, enumerable: true, configurable: true });
  }
  return copy;
}

function scrubText(object, key, redact) {
  const value = object[key];
  if (typeof value !== 'string') return;
  const hidden = redact(value);
  if (hidden === value) return;
  try {
    object[key] = hidden;
  } catch {
    // read-only: nothing to do
  }
}

// ---- API clients ---------------------------------------------------------

const text = (value) => (typeof value === 'string' ? value : undefined);

/** What a client-node object-parameter call says about itself. */
function apiSpec(method, param) {
  const spec = { method };
  if (param && typeof param === 'object') {
    spec.namespace = text(param.namespace);
    spec.name = text(param.name);
    if (param.body && typeof param.body === 'object') {
      try {
        spec.body = JSON.stringify(param.body);
      } catch {
        // A body that cannot be written as JSON names no object.
      }
    }
  }
  return spec;
}

/** The caller's call options with ours (the abort signal, the body kept) added. */
function mergeOptions(theirs, ours) {
  if (!theirs || typeof theirs !== 'object') return ours;
  return {
    ...theirs,
    middleware: [...(Array.isArray(theirs.middleware) ? theirs.middleware : []), ...ours.middleware],
    middlewareMergeStrategy: theirs.middlewareMergeStrategy || ours.middlewareMergeStrategy,
  };
}

/** `api` with every method the policy wraps running under it; the rest as they are. */
function wrapApi(api, state) {
  const wrapped = new Map();
  return new Proxy(api, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (typeof prop !== 'string' || typeof value !== 'function' || prop === 'constructor') return value;
      if (!wrapped.has(prop)) {
        const call = state.settings.passesThrough(prop)
          ? value.bind(target)
          : (param, options) =>
              runCall(
                state,
                apiSpec(prop, param),
                (signal, onCallerSignal) =>
                  value.call(target, param, mergeOptions(options, withAbortSignal(signal, onCallerSignal))),
                async (request, signal) => {
                  const capture = capturingBody(signal);
                  const read = Reflect.get(target, request.method, target);
                  if (typeof read !== 'function') throw new TypeError(`the client has no method ${request.method}`);
                  const params = { name: request.name };
                  if (request.namespace !== null) params.namespace = request.namespace;
                  const value = await read.call(target, params, capture.options);
                  let body = capture.body();
                  if (body === null) body = JSON.stringify(value === undefined ? null : value);
                  return { value, body };
                },
              );
        wrapped.set(prop, call);
      }
      return wrapped.get(prop);
    },
  });
}

/**
 * `kc` whose `makeApiClient(ApiClass)` makes clients whose calls run under
 * the call policy. Everything else is `kc`'s own.
 */
function resilientKubeConfig(kc, options) {
  if (!kc || typeof kc.makeApiClient !== 'function') {
    throw new TypeError('resilientKubeConfig(kc): kc must be a loaded KubeConfig');
  }
  const state = callPolicy(kc, options);
  // A client is bound to the cluster current when it is made.
  return replaceMethod(kc, 'makeApiClient', (apiClass) => {
    const cluster = clusterOf(kc);
    return wrapApi(kc.makeApiClient(apiClass), { ...state, cluster: () => cluster });
  });
}

/** `helper` with `method` replaced by `wrapped`; everything else its own. */
function replaceMethod(helper, method, wrapped) {
  return new Proxy(helper, {
    get(target, prop) {
      if (prop === method) return wrapped;
      const value = Reflect.get(target, prop, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

// ---- Exec and Log ----------------------------------------------------------

const noReadBack = () => Promise.reject(new Error('a connection has nothing to read back'));

/**
 * client-node's `exec` for `kc` under the call policy `state`: its set-up
 * retried by the rules of an exec, its open stream watched (a stream that
 * ends with no status gets the core's cut status). What a plain exec of
 * resilientExec is, and what a copy's attempt uses.
 */
function plainExecOf(kc, state) {
  // Loaded here: a step answered from the cache never makes an exec.
  const { watchStream } = require('./stream-watch');
  const k8s = require('@kubernetes/client-node');
  const core = require('../pkg/k8s_auth_preflight.js');
  return (namespace, podName, containerName, command, stdout, stderr, stdin, tty, statusCallback) => {
    let heard = false;
    const onStatus = (status) => {
      heard = true;
      if (typeof statusCallback === 'function') statusCallback(status);
    };
    const made = runCall(
      state,
      { method: 'exec', namespace: text(namespace), name: text(podName) },
      async (_signal, _onCallerSignal, action) => {
        // Each attempt on a connection of its own, watched: whether its TCP
        // and TLS connection was made is a fact the core asks for.
        const watched = watchedConnection(kc, action.connectTimeoutMs);
        try {
          return await new k8s.Exec(watched.kc).exec(namespace, podName, containerName, command, stdout, stderr, stdin, tty, onStatus);
        } catch (error) {
          throw watched.neverConnected() ? { [NEVER_CONNECTED]: true, error } : error;
        } finally {
          watched.stop();
        }
      },
      noReadBack,
      closeSocket,
    );
    const watch = state.settings.streamWatch();
    return made.then((socket) => {
      if (watch && socket && typeof socket.on === 'function') {
        watchStream(socket, {
          hasStatus: () => heard,
          clock: state.clock,
          pingEveryMs: watch[0],
          pongDeadlineMs: watch[1],
          onEnd: ({ status, why }) => {
            if (!status) onStatus(core.cutStatus(`${namespace}/${podName}`, why));
          },
        });
      }
      return socket;
    });
  };
}

/**
 * An `Exec` for `kc` whose `exec(...)` retries the connection's set-up
 * when, and only when, the command provably never started, and never
 * reports a stream that ended with no status as a success. A command with
 * no stdin and no tty runs durably (durable-exec.js: the core decides when)
 * and the caller gets a stand-in that outlives a cut stream; any other gets
 * client-node's own socket.
 */
function resilientExec(kc, options) {
  const { durableExec } = require('./durable-exec');
  const k8s = require('@kubernetes/client-node');
  const state = callPolicy(kc, options);
  const io = { k8s, kc, state: { ...state, withoutSecrets: (error) => withoutSecrets(error, state.redact) }, watchedConnection };
  const exec = new k8s.Exec(kc);
  const plain = plainExecOf(kc, state);
  const wrapped = (namespace, podName, containerName, command, stdout, stderr, stdin, tty, statusCallback) => {
    const commandList = typeof command === 'string' ? [command] : command;
    const durable =
      Array.isArray(commandList) && commandList.every((part) => typeof part === 'string') && typeof namespace === 'string' && typeof podName === 'string'
        ? state.settings.durableRun({ namespace, pod: podName, command: commandList }, stdin !== null && stdin !== undefined, Boolean(tty), state.clock())
        : undefined;
    if (!durable) return plain(namespace, podName, containerName, command, stdout, stderr, stdin, tty, statusCallback);
    const args = { namespace, podName, containerName, command: commandList, stdout, stderr, statusCallback };
    return durableExec(durable, { ...io, plain: (onStatus) => plain(namespace, podName, containerName, command, stdout, stderr, stdin, tty, onStatus) }, args);
  };
  return replaceMethod(exec, 'exec', wrapped);
}

// No reason of ours is longer.
const MAX_REASON_CHARS = 64;

/**
 * Whether `status` (what an exec's status callback got) is one this package
 * gave in place of the command's own, because the command did not run to
 * its end as the caller saw it: its stream was cut, its output or exit
 * code did not all arrive, its pod went away, or this process stopped it.
 * The core keeps the list; anything that is not such a status is false.
 */
function isExecIncomplete(status) {
  let reason;
  try {
    reason = status && typeof status === 'object' ? status.reason : undefined;
  } catch {
    return false; // a revoked Proxy, a throwing getter
  }
  // A huge text is never copied into the core.
  if (typeof reason !== 'string' || reason.length > MAX_REASON_CHARS) return false;
  return require('../pkg/k8s_auth_preflight.js').isIncompleteReason(reason);
}

const NEVER_CONNECTED = Symbol('never connected');

/**
 * `kc` for one exec attempt whose connection is watched: client-node hands
 * the `ws` client the options `applyToHTTPSOptions` fills in, with the agent
 * that makes the socket. When that agent is Node's own `https.Agent` (a
 * direct connection), the attempt gets an agent of its own with the same
 * options, whose `createConnection` is watched, so whether the TLS
 * connection that would carry the set-up was made can be told, and one not
 * made within `connectTimeoutMs` is destroyed. The host's agent is never
 * touched, and concurrent attempts never see each other's sockets.
 * `neverConnected()` is true only when that socket was made and its TLS
 * handshake never completed: nothing reached the apiserver. Any other
 * agent (a proxy's: its socket tells nothing of the apiserver) is used as
 * it is, and then nothing is known.
 */
function watchedConnection(kc, connectTimeoutMs) {
  let socket = null;
  let connected = false;
  let timer = null;
  const stop = () => {
    if (timer) clearTimeout(timer);
    timer = null;
  };
  const watch = (made) => {
    if (!made || typeof made.once !== 'function') return made;
    socket = made;
    made.once('secureConnect', () => {
      connected = true;
      stop();
    });
    if (typeof connectTimeoutMs === 'number') {
      timer = setTimeout(() => {
        timer = null;
        if (connected) return;
        const error = new Error(`the connection to the apiserver was not made within ${connectTimeoutMs} ms`);
        error.code = 'ETIMEDOUT';
        made.destroy(error);
      }, connectTimeoutMs);
    }
    return made;
  };
  const watched = replaceMethod(kc, 'applyToHTTPSOptions', async (opts) => {
    await kc.applyToHTTPSOptions(opts);
    const https = require('node:https');
    const agent = opts.agent;
    if (!agent || Object.getPrototypeOf(agent) !== https.Agent.prototype || socket) return;
    const own = new https.Agent(agent.options);
    const make = own.createConnection.bind(own);
    own.createConnection = (options, callback) => watch(make(options, callback));
    opts.agent = own;
  });
  // `destroy()`: the attempt is given up; its socket, if made, is closed,
  // so that a set-up still on its way is not answered to nobody.
  const destroy = () => {
    stop();
    if (socket && !socket.destroyed) socket.destroy();
  };
  return { kc: watched, neverConnected: () => socket !== null && !connected, stop, destroy };
}

/** A `Log` for `kc` whose `log(...)` retries the request's set-up as `exec` does. */
function resilientLog(kc, options) {
  const k8s = require('@kubernetes/client-node');
  const state = callPolicy(kc, options);
  const log = new k8s.Log(kc);
  const wrapped = (namespace, podName, containerName, stream, ...rest) =>
    runCall(
      state,
      { method: 'log', namespace: text(namespace), name: text(podName) },
      () => log.log(namespace, podName, containerName, stream, ...rest),
      noReadBack,
      (controller) => controller && typeof controller.abort === 'function' && controller.abort(),
    );
  return replaceMethod(log, 'log', wrapped);
}

/** A stream opened after its set-up was given up: closed, never used. */
function closeSocket(socket) {
  try {
    if (socket && typeof socket.terminate === 'function') socket.terminate();
    else if (socket && typeof socket.close === 'function') socket.close();
  } catch {
    // already closed
  }
}

/**
 * `retryK8sApiCall(fn, options)`: `fn(signal)` as one call under the call
 * policy, as a read (retried on a transient error) unless `options.method`
 * names the client method it makes, whose kind then applies. Returns what
 * `fn` returned; throws `fn`'s last error when the call is given up (a
 * CallGaveUpError when it has none: every attempt timed out).
 */
async function retryK8sApiCall(fn, options = {}) {
  if (typeof fn !== 'function') throw new TypeError('retryK8sApiCall(fn): fn must be a function');
  if (options === null || typeof options !== 'object') throw new TypeError('options must be an object');
  const kc = options.kubeConfig || defaultKubeConfig();
  const state = callPolicy(kc, options);
  if (typeof options.cluster === 'string') state.cluster = () => options.cluster;
  if (options.method !== undefined && (typeof options.method !== 'string' || options.method === '')) {
    throw new TypeError('retryK8sApiCall: options.method must be the name of the client-node method fn makes (a non-empty string), or left out');
  }
  const method = options.method;
  // With no method named, the core's kind for an unnamed call applies.
  const spec = { method: method || 'retryK8sApiCall' };
  return runCall(state, spec, (signal) => fn(signal), noReadBack, undefined, true);
}

// The kubeconfig `fn` most likely uses: the default one (KUBECONFIG, else
// ~/.kube/config, else in-cluster), read once per KUBECONFIG value. Its
// credential is what errors must hide, its server the outage's cluster.
const defaults = new Map();

function defaultKubeConfig() {
  const key = String(process.env.KUBECONFIG);
  if (!defaults.has(key)) {
    let kc = null;
    try {
      const k8s = require('@kubernetes/client-node');
      kc = new k8s.KubeConfig();
      kc.loadFromDefault();
    } catch {
      kc = null;
    }
    defaults.set(key, kc);
  }
  return defaults.get(key);
}

module.exports = { resilientKubeConfig, resilientExec, resilientLog, retryK8sApiCall, isExecIncomplete, callPolicy, plainExecOf };

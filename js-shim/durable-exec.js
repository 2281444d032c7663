'use strict';
// A durable exec: the core's `Durable` machine (src/durable/) for one
// `exec(...)` call, run by the shim's one executor (execute.js). What is
// here are its actions: each pod step run as an exec (its command built by
// pod-commands.js), with the bytes of stdout and stderr it passes on to the
// caller's streams counted and each open stream watched (stream-watch.js);
// the pod read; the ledger's file; and the caller's promise, status and
// stream. What the caller holds is a stand-in for the WebSocket
// (`DurableSocket`): it stays open across reattaches and closes after the
// status is delivered.

const { EventEmitter } = require('node:events');
const { Writable } = require('node:stream');

const { podCommand } = require('./pod-commands');
const { readLedger, appendLedger } = require('./ledger-file');
const { watchStream } = require('./stream-watch');
const { withAbortSignal } = require('./host');
const { execute, Inbox } = require('./execute');
const { statusFacts } = require('./facts');
const core = require('../pkg/k8s_auth_preflight.js');

// How often a status waiting for this process's own stdout and stderr to
// hand what they hold to the OS looks (how long it waits is the core's).
const OWN_STDIO_POLL_MS = 5;

/** What the caller holds instead of a WebSocket: open until the status has been delivered. */
class DurableSocket extends EventEmitter {
  constructor(onClose) {
    super();
    this.readyState = 1;
    this.protocol = 'v5.channel.k8s.io';
    this._onClose = onClose;
  }

  /** Alive while the run is: a ping is answered while it is followed. */
  ping() {
    if (this.readyState === 1) setImmediate(() => this.readyState === 1 && this.emit('pong'));
  }

  /** Stops following the run; the command goes on in the pod, as after closing a plain exec's stream. */
  close() {
    if (this.readyState === 1) this._onClose();
  }

  terminate() {
    this.close();
  }

  send() {
    throw new Error('a durable exec has no stdin');
  }

  _closed() {
    if (this.readyState === 3) return;
    this.readyState = 3;
    setImmediate(() => this.emit('close', 1000, Buffer.alloc(0)));
  }
}

// The runs of this process: SIGINT and SIGTERM stop their commands first.
const runs = new Set();
let signalHandlers = null;

function register(run) {
  runs.add(run);
  if (signalHandlers) return;
  signalHandlers = {};
  for (const signal of ['SIGINT', 'SIGTERM']) {
    const handler = () => cancelAll(signal);
    signalHandlers[signal] = handler;
    process.on(signal, handler);
  }
}

function unregister(run) {
  runs.delete(run);
  if (runs.size === 0 && signalHandlers && !cancelling) removeHandlers();
}

function removeHandlers() {
  if (!signalHandlers) return;
  for (const [signal, handler] of Object.entries(signalHandlers)) process.removeListener(signal, handler);
  signalHandlers = null;
}

let cancelling = null;

function cancelAll(signal) {
  if (cancelling) return;
  // (The host's own handlers: every listener but ours.)
  const raise = core.raiseAfterStop(process.listenerCount(signal) - 1);
  const ended = [...runs].map((run) => run.cancel(signal));
  let timer;
  const waited = new Promise((resolve) => {
    timer = setTimeout(resolve, core.stopWaitMs());
  });
  cancelling = Promise.race([Promise.all(ended), waited]).then(() => {
    clearTimeout(timer);
    cancelling = null;
    if (!raise) {
      if (runs.size === 0) removeHandlers();
      return;
    }
    removeHandlers();
    process.kill(process.pid, signal);
  });
}

/**
 * Runs `machine` for one exec. `io`: `{ k8s, kc, state, watchedConnection,
 * plain(statusCallback) }` (state: the call policy's clock, logger,
 * describeError and withoutSecrets); `args`: the caller's exec arguments.
 * Resolves with the DurableSocket when the run's stream first opens;
 * rejects with the client's own error when the exec could not be made, as
 * the plain client does.
 */
function durableExec(machine, io, args) {
  const { k8s, kc, state } = io;
  const clock = state.clock;
  return new Promise((resolvePromise, rejectPromise) => {
    const received = { out: 0, err: 0 };
    const counts = () => ({ receivedOut: received.out, receivedErr: received.err });
    const errors = new Map();
    const live = new Map();
    const inbox = new Inbox();
    let settled = false;
    let plainRunning = false;
    let onEnd = null;
    const ended = new Promise((resolve) => {
      onEnd = resolve;
    });
    const socket = new DurableSocket(() => inbox.push({ type: 'closed' }));
    const run = { cancel: (signal) => (inbox.push({ type: 'cancel', signal }), ended) };
    register(run);

    const settle = (fn, value) => {
      if (settled) return;
      settled = true;
      fn(value);
    };

    const deliver = (status) => {
      try {
        if (typeof args.statusCallback === 'function') args.statusCallback(status);
      } catch {
        // the caller's callback failed: its own affair
      }
    };

    const startStep = (action, push) => {
      const request = action.request;
      // What the step's output is for is the core's to say.
      const forward = action.output === 'caller';
      const keep = action.output === 'kept' ? action.keptBytes : 0;
      let dead = false;
      let status = null;
      let kept = '';
      let stopWatch = null;
      let ws = null;
      const passOn = (target, key) =>
        new Writable({
          write(chunk, _encoding, done) {
            if (!dead && forward) {
              received[key] += chunk.length;
              if (target) writeTo(target, chunk);
            } else if (!dead && key === 'out' && kept.length < keep) {
              kept += chunk.toString('latin1', 0, keep - kept.length);
            }
            done();
          },
        });
      const watched = io.watchedConnection(kc, action.connectTimeoutMs);
      const finish = (fact) => {
        if (dead) return;
        dead = true;
        clearTimeout(setupTimer);
        watched.stop();
        if (stopWatch) stopWatch();
        live.delete(request);
        push(fact);
      };
      const setupTimer = setTimeout(() => {
        const error = timeoutError(action.setupTimeoutMs);
        errors.set(request, error);
        finish({ type: 'failed', request, facts: state.describeError(error, true) });
        watched.destroy();
        closeQuietly(ws);
      }, action.setupTimeoutMs);
      let command;
      try {
        command = podCommand(action, received, args.command);
      } catch (error) {
        errors.set(request, error);
        finish({ type: 'failed', request, facts: state.describeError(error, false) });
        return;
      }
      Promise.resolve()
        .then(() =>
          new k8s.Exec(watched.kc).exec(
            args.namespace,
            args.podName,
            args.containerName,
            command,
            passOn(args.stdout, 'out'),
            passOn(args.stderr, 'err'),
            null,
            false,
            (s) => {
              status = s;
            },
          ),
        )
        .then(
          (opened) => {
            ws = opened;
            if (dead) return closeQuietly(opened);
            clearTimeout(setupTimer);
            push({ type: 'opened', request });
            stopWatch = watchStream(opened, {
              hasStatus: () => status !== null,
              endAtStatus: true,
              clock,
              pingEveryMs: action.pingEveryMs,
              pongDeadlineMs: action.pongDeadlineMs,
              onEnd: ({ status: got, why }) =>
                finish(
                  got
                    ? { type: 'ended', request, hasStatus: true, ...statusFacts(status), stdout: kept, ...counts() }
                    : { type: 'ended', request, hasStatus: false, why, ...counts() },
                ),
            });
          },
          (error) => {
            errors.set(request, error);
            finish({ type: 'failed', request, facts: state.describeError(error, false) });
          },
        );
      live.set(request, () => {
        dead = true;
        clearTimeout(setupTimer);
        watched.stop();
        if (stopWatch) stopWatch();
        closeQuietly(ws);
      });
    };

    const readPod = (action, push) => {
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(), action.timeoutMs);
      Promise.resolve()
        .then(() => {
          const api = kc.makeApiClient(k8s.CoreV1Api);
          return api.readNamespacedPod({ name: args.podName, namespace: args.namespace }, withAbortSignal(controller.signal, () => {}));
        })
        .then(
          (pod) => {
            const status = (pod && pod.status) || {};
            const meta = (pod && pod.metadata) || {};
            push({ type: 'pod', request: action.request, found: true, phase: typeof status.phase === 'string' ? status.phase : null, deleting: Boolean(meta.deletionTimestamp) });
          },
          (error) => push({ type: 'failed', request: action.request, facts: state.describeError(error, controller.signal.aborted) }),
        )
        .finally(() => clearTimeout(timer));
    };

    const runPlain = () => {
      plainRunning = true;
      const made = io.plain((status) => deliver(status));
      if (!settled) {
        // The caller's promise is the plain exec's own.
        settled = true;
        made.then(resolvePromise, rejectPromise);
      } else {
        made.then(
          (plainSocket) => {
            if (plainSocket && typeof plainSocket.once === 'function') plainSocket.once('close', () => socket._closed());
            else socket._closed();
          },
          (error) => {
            deliver({ metadata: {}, status: 'Failure', reason: 'InternalError', message: String((error && error.message) || error) });
            socket._closed();
          },
        );
      }
    };

    // The output before the status has been written to the caller's
    // streams, and the status goes, as from the plain client: never after
    // their write callbacks, which never come for a caller that ends its
    // stream on the status (tar-fs's extract() calls its last write back
    // only once ended). Only this process's own stdout and stderr, when they
    // are the caller's, are first let hand their queue to the OS: a
    // reattach delivers its backlog at once, more than a pipe holds, and a
    // caller that exits on the status (the hooks) would cut it.
    const deliverStatus = async (action) => {
      await ownStdioFlushed([args.stdout, args.stderr], action.ownStdioWaitMs);
      // As the plain client does at the status: the caller's streams ended
      // (but this process's own), then the status given.
      for (const target of [args.stdout, args.stderr]) {
        if (target && target !== process.stdout && target !== process.stderr) endQuietly(target);
      }
      deliver(action.status);
      // The caller has what it waited for; the clean-up goes on behind
      // it, and a signal now stops nothing.
      unregister(run);
      socket._closed();
    };

    // Each action done; only the ledger's read and a delivery give the
    // executor something back (a fact, and a delivery to await).
    const act = (action, report) => {
      switch (action.type) {
        case 'exec':
          startStep(action, report);
          break;
        case 'readPod':
          readPod(action, report);
          break;
        case 'readLedger':
          return { type: 'ledger', text: readLedger(action.file, action.limit) };
        case 'appendLedger':
          appendLedger(action.file, action.text);
          break;
        case 'resolve':
          settle(resolvePromise, socket);
          break;
        case 'reject':
          settle(rejectPromise, state.withoutSecrets(errors.get(action.request)));
          break;
        case 'plain':
          runPlain();
          break;
        case 'deliver':
          return deliverStatus(action);
        default:
          throw new Error(`k8s-auth-preflight: a durable exec asked for ${JSON.stringify(action.type)}`);
      }
      return undefined;
    };

    execute(machine, { act }, { clock, logger: state.logger, inbox })
      .finally(() => {
        for (const close of live.values()) close();
        live.clear();
        machine.free();
        unregister(run);
        if (!plainRunning) socket._closed();
        onEnd();
      })
      .catch((error) => {
        // A bug of ours, never a lost verdict: the caller hears of it.
        if (!settled) settle(rejectPromise, error);
        else deliver({ metadata: {}, status: 'Failure', reason: 'InternalError', message: `k8s-auth-preflight: ${error && error.message}` });
      });
  });
}

/** Resolves once those of `targets` that are process.stdout or process.stderr hold nothing unwritten; bounded. */
async function ownStdioFlushed(targets, waitMs) {
  const own = targets.filter((t) => t && (t === process.stdout || t === process.stderr));
  const until = performance.now() + waitMs;
  while (own.some((t) => !t.destroyed && t.writableLength > 0) && performance.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, OWN_STDIO_POLL_MS));
  }
}

/** `chunk` written to `target`, as the plain client writes it: a stream that throws is the caller's affair. */
function writeTo(target, chunk) {
  try {
    target.write(chunk);
  } catch {
    // the caller's stream failed: its own affair
  }
}

function timeoutError(ms) {
  const error = new Error(`the exec was not set up within ${ms} ms`);
  error.code = 'ETIMEDOUT';
  return error;
}

/** `target.end()`, as the plain client calls it: a stream that throws is the caller's affair. */
function endQuietly(target) {
  try {
    target.end();
  } catch {
    // the caller's stream failed: its own affair
  }
}

function closeQuietly(ws) {
  try {
    if (ws && typeof ws.terminate === 'function') ws.terminate();
  } catch {
    // already closed
  }
}

module.exports = { durableExec, DurableSocket };

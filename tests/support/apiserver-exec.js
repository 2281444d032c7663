'use strict';
/**
 * The exec subresource of the loopback apiserver (apiserver.js): a
 * WebSocket upgrade speaking the Kubernetes channel protocol, for tests only.
 *
 * What it speaks (facts of the protocol, as client-node 1.x and 2.x use it):
 * - the client offers subprotocols, newest first (v5.channel.k8s.io,
 *   v4.channel.k8s.io, ..., channel.k8s.io); the server picks the first one
 *   it allows (`execProtocols`, all of them by default);
 * - every binary frame starts with a channel byte: 0 stdin (client to
 *   server), 1 stdout, 2 stderr, 3 the status channel, 4 terminal resize;
 *   v5 adds 255 (close a channel: [255, 0] is the end of stdin);
 * - with stdin, the command's input ends at [255, 0] (v5) or when the client
 *   closes the socket (older protocols: then nothing can be answered);
 * - when the command ends, the status channel carries one JSON Status:
 *   `status: "Success"`, or `status: "Failure"` with reason NonZeroExitCode
 *   and the exit code in details.causes[{ reason: "ExitCode", message }];
 *   then the server closes the socket.
 *
 * The "container" runs nothing: the first of `execResults` whose `contains`
 * is a substring of the command (joined with spaces) says what it prints
 * and how it exits ({ contains?, stdout?, stderr?, exitCode?, delayMs? });
 * without a match it prints nothing and exits 0.
 *
 * Upgrade faults after the command started (an entry's fields, matched the
 * same way; each applies to the first `upgradeFaultTimes` upgrades of a
 * matching command, default 1, counted on the entry as configured, then the
 * entry's upgrades are healthy again). The command starts, and is logged in
 * `server.execs`, before either:
 * - `upgradeStatus` (an HTTP status 400..599, say 502): the upgrade is
 *   answered with that status and a Status body (Connection: close) instead
 *   of 101, as a gateway in front of the apiserver answers when its
 *   upstream's 101 got lost; the exec's outcome is 'answer-status' (with
 *   `upgradeStatus`), never 'running';
 * - `delayUpgradeMs` (ms >= 0): the 101 goes out this long after the command
 *   started; the exec is 'running' from the start, and 'stream-lost' if the
 *   client's socket closed before the 101 (the command ran; nobody heard).
 * These are for "did the command start?" tests: the apiserver.js `trickle`
 * phase, by contrast, delays the upgrade before the command starts.
 *
 * A stream closed with no status: an entry's `closeWithoutStatus: true`
 * makes the server, when the command ends, send what it printed and then a
 * normal WebSocket close (code 1000) with no status frame, as a proxy or an
 * apiserver that lost its kubelet connection may; the exec's outcome is
 * 'closed-without-status' (exitCode still says how the command ended).
 *
 * A status a broken proxy rewrote: an entry's `statusExitCode` (a string)
 * is sent as the exit code of a Failure status in place of the command's
 * own (details.causes[{ reason: "ExitCode", message: statusExitCode }]),
 * whatever the command's code was, 0 included.
 *
 * A stream held open after its status: an entry's `openAfterStatusMs` (ms
 * >= 0) makes the server stop reading the socket after the status frame (a
 * close the client sends goes unanswered) and close it that long after, as
 * a proxy that keeps a finished connection open may: the status has
 * arrived, the end of the stream has not.
 *
 * 'exited' means the status was written to the socket, not that it arrived:
 * after a reset the server only learns of the cut when it next writes. Once
 * the socket has closed, exec.closeCode is the WebSocket close code the
 * server saw: 1000 when the client answered the close, 1006 when the
 * connection ended without a close frame.
 *
 * A real container (the server's `podRoot` option, a directory; see
 * apiserver-container.js for the pod folders and the process environment):
 * the command runs as a local process in its pod's folder, in a process group
 * of its own. Stdin frames are written to its stdin, which ends at [255, 0]
 * (v5) or when the socket closes; stdout and stderr go out as frames as they
 * are produced (the process is slowed down, not the buffer grown, when the
 * client reads slowly); once it has ended and its pipes are closed, the
 * status channel carries the shapes above, a signal death being a Failure
 * with 128 + the signal's number (exec.signal names it). Then the socket
 * closes. When the client's socket closes first, the process is not killed:
 * the server closes its ends of the process's pipes, as kubelet and the
 * container runtime do, and the outcome is 'stream-cut' (exec.pid, and later
 * exec.exitCode and exec.exitedAtMs, still tell what the process did). The
 * upgrade faults above start the process too: with `upgradeStatus` or
 * apiserver.js's `applyThenCut` it runs with its pipes closed from the start;
 * with `delayUpgradeMs` what it prints before the 101 waits in its pipes. An
 * entry's stdout, stderr, exitCode and delayMs are not used (the command
 * says); its fault fields are. A command that cannot be started (no such
 * file) gets a Failure status with reason InternalError, code 500, and the
 * outcome 'start-failed'.
 */

const http = require('node:http');

const { WebSocketServer } = require('ws');

const PROTOCOLS = Object.freeze(['v5.channel.k8s.io', 'v4.channel.k8s.io', 'v3.channel.k8s.io', 'v2.channel.k8s.io', 'channel.k8s.io']);

const STDIN = 0;
const STDOUT = 1;
const STDERR = 2;
const STATUS = 3;
const CLOSE = 255;

// A tar copy of a workspace is small in these tests; this bounds a runaway client.
const MAX_STDIN_BYTES = 16 * 1024 * 1024;
// Output queued for a slow client beyond this pauses the process's pipe.
const OUTPUT_HIGH_WATER = 1024 * 1024;
// How long close() waits for the streams it ended to report their end.
const STREAM_END_WAIT_MS = 1000;

function checkExecProtocols(value) {
  if (value === undefined || value === null) return [...PROTOCOLS];
  if (!Array.isArray(value) || value.length === 0 || !value.every((p) => PROTOCOLS.includes(p))) {
    throw new RangeError(`execProtocols must be a non-empty array of ${PROTOCOLS.join(', ')}, got ${JSON.stringify(value)}`);
  }
  return [...value];
}

function checkExecResults(value) {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw new TypeError(`execResults must be an array, got ${JSON.stringify(value)}`);
  for (const r of value) {
    if (!r || typeof r !== 'object') throw new TypeError(`an execResults entry must be an object, got ${JSON.stringify(r)}`);
    if (r.exitCode !== undefined && !(Number.isInteger(r.exitCode) && r.exitCode >= 0 && r.exitCode <= 255)) {
      throw new RangeError(`exitCode must be an integer in 0..255, got ${JSON.stringify(r.exitCode)}`);
    }
    if (r.delayMs !== undefined && !(Number.isFinite(r.delayMs) && r.delayMs >= 0)) {
      throw new RangeError(`delayMs must be a non-negative number, got ${JSON.stringify(r.delayMs)}`);
    }
    if (r.upgradeStatus !== undefined && !(Number.isInteger(r.upgradeStatus) && r.upgradeStatus >= 400 && r.upgradeStatus <= 599)) {
      throw new RangeError(`upgradeStatus must be an HTTP status in 400..599, got ${JSON.stringify(r.upgradeStatus)}`);
    }
    if (r.delayUpgradeMs !== undefined && !(Number.isFinite(r.delayUpgradeMs) && r.delayUpgradeMs >= 0)) {
      throw new RangeError(`delayUpgradeMs must be a non-negative number, got ${JSON.stringify(r.delayUpgradeMs)}`);
    }
    if (r.upgradeStatus !== undefined && r.delayUpgradeMs !== undefined) {
      throw new TypeError('an execResults entry takes upgradeStatus or delayUpgradeMs, not both');
    }
    if (r.upgradeFaultTimes !== undefined && !(Number.isInteger(r.upgradeFaultTimes) && r.upgradeFaultTimes >= 0)) {
      throw new RangeError(`upgradeFaultTimes must be a non-negative integer, got ${JSON.stringify(r.upgradeFaultTimes)}`);
    }
    if (r.openAfterStatusMs !== undefined && !(Number.isFinite(r.openAfterStatusMs) && r.openAfterStatusMs >= 0)) {
      throw new RangeError(`openAfterStatusMs must be a non-negative number, got ${JSON.stringify(r.openAfterStatusMs)}`);
    }
    if (r.statusExitCode !== undefined && typeof r.statusExitCode !== 'string') {
      throw new TypeError(`statusExitCode must be a string, got ${JSON.stringify(r.statusExitCode)}`);
    }
    if (r.closeWithoutStatus !== undefined && typeof r.closeWithoutStatus !== 'boolean') {
      throw new TypeError(`closeWithoutStatus must be a boolean, got ${JSON.stringify(r.closeWithoutStatus)}`);
    }
  }
  return value.map((r) => {
    const copy = { ...r };
    // The upgrade faults still to give (counted down per matching upgrade).
    if (r.upgradeStatus !== undefined || r.delayUpgradeMs !== undefined) {
      Object.defineProperty(copy, 'upgradeFaultsLeft', {
        value: r.upgradeFaultTimes === undefined ? 1 : r.upgradeFaultTimes,
        writable: true,
        enumerable: false,
      });
    }
    return copy;
  });
}

/** The first execResults entry for `command` (an array), or {}. */
function resultFor(execResults, command) {
  const joined = command.join(' ');
  return execResults.find((r) => r.contains === undefined || joined.includes(String(r.contains))) || {};
}

/** The exec request's query: { command: string[], container, stdin, stdout, stderr, tty }. */
function parseExecQuery(search) {
  const params = new URLSearchParams(search || '');
  const flag = (name) => params.get(name) === 'true' || params.get(name) === '1';
  return {
    command: params.getAll('command'),
    container: params.get('container') || '',
    stdin: flag('stdin'),
    stdout: flag('stdout'),
    stderr: flag('stderr'),
    tty: flag('tty'),
  };
}

function exitStatus(command, exitCode, statusExitCode) {
  if (statusExitCode !== undefined) exitCode = statusExitCode;
  else if (exitCode === 0) return { metadata: {}, status: 'Success' };
  return {
    metadata: {},
    status: 'Failure',
    message: `command terminated with non-zero exit code: error executing command [${command.join(' ')}], exit code ${exitCode}`,
    reason: 'NonZeroExitCode',
    details: { causes: [{ reason: 'ExitCode', message: String(exitCode) }] },
  };
}

/** The Status of a command the container could not start, as a runtime's error comes back. */
function startFailedStatus(command, err) {
  const message =
    err && err.code === 'ENOENT'
      ? `exec: "${command[0]}": executable file not found in $PATH`
      : `exec: "${command[0]}": ${(err && err.message) || 'could not start'}`;
  return {
    metadata: {},
    status: 'Failure',
    message: `Internal error occurred: error executing command in container: ${message}`,
    reason: 'InternalError',
    details: { causes: [{ message }] },
    code: 500,
  };
}

function frame(channel, payload) {
  const body = Buffer.isBuffer(payload) ? payload : Buffer.from(String(payload), 'utf8');
  return Buffer.concat([Buffer.from([channel]), body]);
}

/**
 * Makes the upgrade handler of one server. `later(ms, fn)` is the server's
 * unref'd timer; `settings()` returns { execResults, execProtocols } now;
 * `container` (apiserver-container.js), when given, runs the commands for real.
 * upgrade(req, socket, head, exec, query, onOpen) completes the WebSocket
 * handshake and runs the exec; `exec` is the server's log entry for it ({ pod, container,
 * command, ... }): it gains protocol, stdin (utf8), stdinBytes, outcome
 * ('running', then 'exited' with exitCode, or 'stream-lost' when the socket
 * closed before the status went out) and endedAtMs.
 */
function createExecHandler({ later, settings, container = null }) {
  // The close after a status: at once, or held open as `result` says.
  const closeAfterStatus = (ws, result) => {
    if (!result.openAfterStatusMs) ws.close(1000);
    else {
      // (ws answers a close frame on its own; unread, it stays unanswered.)
      if (ws._socket) ws._socket.pause();
      later(result.openAfterStatusMs, () => {
        if (ws._socket) ws._socket.resume();
        if (ws.readyState === ws.OPEN) ws.close(1000);
      });
    }
  };
  // The started process of each exec log entry (real container only).
  const processes = new WeakMap();
  // Each open stream's end, so that close() can wait until the log says how they ended.
  const streamEnds = new Set();
  // The TCP sockets of the open exec streams, for a test that silences one.
  const openSockets = new Set();
  const track = (ws) => {
    const raw = ws._socket;
    if (raw) {
      openSockets.add(raw);
      ws.once('close', () => openSockets.delete(raw));
    }
    const ended = new Promise((resolve) => ws.once('close', resolve));
    streamEnds.add(ended);
    ended.then(() => streamEnds.delete(ended));
  };

  // The command starts: logged by `onOpen`, and with a real container, spawned.
  const begin = (exec, query, onOpen) => {
    onOpen();
    if (container) processes.set(exec, container.start(exec, query));
  };
  // Nobody will read or write this exec's pipes: close them, leave the process be.
  const cutProcess = (exec) => {
    const proc = processes.get(exec);
    if (proc) proc.cut();
  };

  const wss = new WebSocketServer({
    noServer: true,
    perMessageDeflate: false,
    maxPayload: MAX_STDIN_BYTES,
    handleProtocols: (offered) => {
      for (const p of settings().execProtocols) if (offered.has(p)) return p;
      return false;
    },
  });

  /** The subprotocol this server would choose from the request's offer, or null. */
  function chooseProtocol(req) {
    const offered = String(req.headers['sec-websocket-protocol'] || '')
      .split(',')
      .map((p) => p.trim())
      .filter(Boolean);
    return settings().execProtocols.find((p) => offered.includes(p)) || null;
  }

  /**
   * Completes the handshake, calls onOpen() (the command starts), then
   * serves the exec; with an upgrade fault of the command's execResults
   * entry, calls onOpen() first and then answers a status or a late 101.
   */
  function upgrade(req, socket, head, exec, query, onOpen) {
    const result = resultFor(settings().execResults, exec.command);
    if (result.upgradeFaultsLeft > 0) {
      result.upgradeFaultsLeft -= 1;
      if (result.upgradeStatus !== undefined) return startThenStatus(socket, exec, onOpen, result.upgradeStatus, query);
      return startThenLate101(req, socket, head, exec, query, onOpen, result.delayUpgradeMs);
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      begin(exec, query, onOpen);
      run(ws, exec, query);
    });
  }

  /** The command starts and no stream will ever carry it (apiserver.js's applyThenCut). */
  function startLost(exec, query, onOpen) {
    begin(exec, query, onOpen);
    cutProcess(exec);
  }

  // The command started; the upgrade is answered `code` instead of 101.
  function startThenStatus(socket, exec, onOpen, code, query) {
    begin(exec, query, onOpen);
    cutProcess(exec);
    exec.outcome = 'answer-status';
    exec.upgradeStatus = code;
    exec.endedAtMs = Date.now();
    const reason = http.STATUS_CODES[code] || 'Unknown';
    const body = JSON.stringify({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: `${reason} (the command started)`,
      reason,
      code,
    });
    if (socket.destroyed) return;
    socket.end(
      [
        `HTTP/1.1 ${code} ${reason}`,
        'Content-Type: application/json',
        `Content-Length: ${Buffer.byteLength(body)}`,
        'Connection: close',
        '',
        body,
      ].join('\r\n'),
    );
  }

  // The command started; the 101 goes out `delayMs` later (if the socket is still open).
  function startThenLate101(req, socket, head, exec, query, onOpen, delayMs) {
    begin(exec, query, onOpen);
    exec.outcome = 'running';
    exec.upgradeDelayedMs = delayMs;
    const lost = () => {
      if (exec.outcome !== 'running' || exec.protocol !== null) return;
      exec.outcome = container ? 'stream-cut' : 'stream-lost';
      exec.endedAtMs = Date.now();
      cutProcess(exec);
    };
    socket.once('close', lost);
    later(delayMs, () => {
      socket.off('close', lost);
      if (socket.destroyed || !socket.writable) {
        lost();
        return;
      }
      wss.handleUpgrade(req, socket, head, (ws) => run(ws, exec, query));
    });
  }

  function run(ws, exec, query) {
    track(ws);
    if (container) return runReal(ws, exec, query);
    exec.protocol = ws.protocol;
    exec.outcome = 'running';
    const stdinChunks = [];
    let stdinBytes = 0;
    let stdinDone = !query.stdin;
    let answered = false;

    const finishStdin = () => {
      exec.stdin = Buffer.concat(stdinChunks).toString('utf8');
      exec.stdinBytes = stdinBytes;
    };

    const answer = () => {
      if (answered) return;
      answered = true;
      finishStdin();
      const result = resultFor(settings().execResults, exec.command);
      const respond = () => {
        if (ws.readyState !== ws.OPEN) {
          exec.outcome = 'stream-lost';
          exec.endedAtMs = Date.now();
          return;
        }
        const exitCode = result.exitCode === undefined ? 0 : result.exitCode;
        if (query.stdout && result.stdout) ws.send(frame(STDOUT, result.stdout));
        if (query.stderr && result.stderr) ws.send(frame(STDERR, result.stderr));
        if (result.closeWithoutStatus) exec.outcome = 'closed-without-status';
        else {
          ws.send(frame(STATUS, JSON.stringify(exitStatus(exec.command, exitCode, result.statusExitCode))));
          exec.outcome = 'exited';
        }
        exec.exitCode = exitCode;
        exec.endedAtMs = Date.now();
        closeAfterStatus(ws, result);
      };
      if (result.delayMs) later(result.delayMs, respond);
      else respond();
    };

    ws.on('message', (data) => {
      const buf = Buffer.isBuffer(data) ? data : Buffer.from(data);
      if (buf.length === 0) return;
      const channel = buf[0];
      if (channel === STDIN && !stdinDone) {
        stdinBytes += buf.length - 1;
        if (stdinBytes <= MAX_STDIN_BYTES) stdinChunks.push(buf.subarray(1));
      } else if (channel === CLOSE && buf[1] === STDIN && !stdinDone) {
        stdinDone = true;
        answer();
      }
      // channel 4 (resize) and anything else: ignored
    });
    ws.on('close', (code) => {
      exec.closeCode = code;
      if (exec.outcome === 'running') {
        finishStdin();
        exec.outcome = 'stream-lost';
        exec.endedAtMs = Date.now();
      }
    });
    ws.on('error', () => {});
    if (stdinDone) answer();
  }

  // The exec served by a local process (the real container).
  function runReal(ws, exec, query) {
    exec.protocol = ws.protocol;
    exec.outcome = 'running';
    const proc = processes.get(exec);
    const { child } = proc;
    const stdinChunks = [];
    let stdinBytes = 0;
    let finished = false;

    const finishStdin = () => {
      exec.stdin = Buffer.concat(stdinChunks).toString('utf8');
      exec.stdinBytes = stdinBytes;
    };

    // Output frames as produced; the process waits while the client is behind.
    // Both streams share the socket's queue, so any send that completes may resume either.
    const outputs = [proc.stdout, proc.stderr].filter(Boolean);
    const resumeOutputs = () => {
      if (ws.bufferedAmount >= OUTPUT_HIGH_WATER) return;
      for (const stream of outputs) if (stream.isPaused()) stream.resume();
    };
    const forward = (stream, channel) => {
      if (!stream) return;
      stream.on('data', (chunk) => {
        if (ws.readyState !== ws.OPEN) return;
        ws.send(frame(channel, chunk), resumeOutputs);
        if (ws.bufferedAmount >= OUTPUT_HIGH_WATER) stream.pause();
      });
    };
    let waitingForStdin = false;
    const stdinReady = () => {
      if (!waitingForStdin) return;
      waitingForStdin = false;
      child.stdin.off('drain', stdinReady);
      child.stdin.off('close', stdinReady);
      ws.resume();
    };

    const end = (outcome) => {
      if (finished) return;
      finished = true;
      finishStdin();
      exec.outcome = outcome;
      exec.endedAtMs = Date.now();
    };

    ws.on('message', (data) => {
      const buf = Buffer.isBuffer(data) ? data : Buffer.from(data);
      if (buf.length === 0 || finished) return;
      const channel = buf[0];
      if (channel === STDIN && child.stdin && !child.stdin.writableEnded) {
        const payload = buf.subarray(1);
        stdinBytes += payload.length;
        if (stdinBytes <= MAX_STDIN_BYTES) stdinChunks.push(payload);
        if (!child.stdin.destroyed && !child.stdin.write(payload) && !waitingForStdin) {
          // The socket waits until the process has read what it has.
          waitingForStdin = true;
          ws.pause();
          child.stdin.on('drain', stdinReady);
          child.stdin.on('close', stdinReady);
        }
      } else if (channel === CLOSE && buf[1] === STDIN && child.stdin && !child.stdin.writableEnded) {
        child.stdin.end();
      }
      // channel 4 (resize) and anything else: ignored
    });
    ws.on('close', (code) => {
      exec.closeCode = code;
      if (finished) return;
      end('stream-cut');
      proc.cut();
    });
    ws.on('error', () => {});

    if (proc.failed) {
      end('start-failed');
      ws.send(frame(STATUS, JSON.stringify(startFailedStatus(exec.command, proc.failed))));
      ws.close(1000);
      return;
    }
    forward(proc.stdout, STDOUT);
    forward(proc.stderr, STDERR);
    proc.closed.then(() => {
      if (finished) return;
      if (proc.failed) {
        end('start-failed');
        if (ws.readyState !== ws.OPEN) return;
        ws.send(frame(STATUS, JSON.stringify(startFailedStatus(exec.command, proc.failed))));
        ws.close(1000);
        return;
      }
      const result = resultFor(settings().execResults, exec.command);
      if (ws.readyState !== ws.OPEN) {
        end('stream-cut');
        return;
      }
      if (result.closeWithoutStatus) end('closed-without-status');
      else {
        ws.send(frame(STATUS, JSON.stringify(exitStatus(exec.command, exec.exitCode, result.statusExitCode))));
        end('exited');
      }
      closeAfterStatus(ws, result);
    });
  }

  /** A pod was deleted: its processes are killed (real container); returns how many. */
  function podDeleted(namespace, pod) {
    return container ? container.killPod(namespace, pod) : 0;
  }

  /** Stops serving; with a real container, kills every process it started (bounded). */
  async function close() {
    wss.close();
    if (container) await container.closeAll();
    // Not the server's `later`: close() clears those timers.
    let timer;
    const bound = new Promise((resolve) => (timer = setTimeout(resolve, STREAM_END_WAIT_MS)));
    await Promise.race([Promise.all([...streamEnds]), bound]);
    clearTimeout(timer);
  }

  return { upgrade, startLost, chooseProtocol, podDeleted, close, openSockets: () => [...openSockets] };
}

module.exports = { createExecHandler, checkExecProtocols, checkExecResults, parseExecQuery, PROTOCOLS };

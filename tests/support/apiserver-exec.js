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
 */

const { WebSocketServer } = require('ws');

const PROTOCOLS = Object.freeze(['v5.channel.k8s.io', 'v4.channel.k8s.io', 'v3.channel.k8s.io', 'v2.channel.k8s.io', 'channel.k8s.io']);

const STDIN = 0;
const STDOUT = 1;
const STDERR = 2;
const STATUS = 3;
const CLOSE = 255;

// A tar copy of a workspace is small in these tests; this bounds a runaway client.
const MAX_STDIN_BYTES = 16 * 1024 * 1024;

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
  }
  return value.map((r) => ({ ...r }));
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

function exitStatus(command, exitCode) {
  if (exitCode === 0) return { metadata: {}, status: 'Success' };
  return {
    metadata: {},
    status: 'Failure',
    message: `command terminated with non-zero exit code: error executing command [${command.join(' ')}], exit code ${exitCode}`,
    reason: 'NonZeroExitCode',
    details: { causes: [{ reason: 'ExitCode', message: String(exitCode) }] },
  };
}

function frame(channel, payload) {
  const body = Buffer.isBuffer(payload) ? payload : Buffer.from(String(payload), 'utf8');
  return Buffer.concat([Buffer.from([channel]), body]);
}

/**
 * Makes the upgrade handler of one server. `later(ms, fn)` is the server's
 * unref'd timer; `settings()` returns { execResults, execProtocols } now.
 * upgrade(req, socket, head, exec, query, onOpen) completes the WebSocket
 * handshake and runs the exec; `exec` is the server's log entry for it ({ pod, container,
 * command, ... }): it gains protocol, stdin (utf8), stdinBytes, outcome
 * ('running', then 'exited' with exitCode, or 'stream-lost' when the socket
 * closed before the status went out) and endedAtMs.
 */
function createExecHandler({ later, settings }) {
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

  /** Completes the handshake, calls onOpen() (the command starts), then serves the exec. */
  function upgrade(req, socket, head, exec, query, onOpen) {
    wss.handleUpgrade(req, socket, head, (ws) => {
      onOpen();
      run(ws, exec, query);
    });
  }

  function run(ws, exec, query) {
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
      const joined = exec.command.join(' ');
      const result =
        settings().execResults.find((r) => r.contains === undefined || joined.includes(String(r.contains))) || {};
      const respond = () => {
        if (ws.readyState !== ws.OPEN) {
          exec.outcome = 'stream-lost';
          exec.endedAtMs = Date.now();
          return;
        }
        const exitCode = result.exitCode === undefined ? 0 : result.exitCode;
        if (query.stdout && result.stdout) ws.send(frame(STDOUT, result.stdout));
        if (query.stderr && result.stderr) ws.send(frame(STDERR, result.stderr));
        ws.send(frame(STATUS, JSON.stringify(exitStatus(exec.command, exitCode))));
        exec.outcome = 'exited';
        exec.exitCode = exitCode;
        exec.endedAtMs = Date.now();
        ws.close(1000);
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
    ws.on('close', () => {
      if (exec.outcome === 'running') {
        finishStdin();
        exec.outcome = 'stream-lost';
        exec.endedAtMs = Date.now();
      }
    });
    ws.on('error', () => {});
    if (stdinDone) answer();
  }

  return { upgrade, chooseProtocol, close: () => wss.close() };
}

module.exports = { createExecHandler, checkExecProtocols, checkExecResults, parseExecQuery, PROTOCOLS };

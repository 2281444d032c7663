'use strict';
// What the durable exec tests share: the settings they run with, a logger
// that keeps its lines, a loopback apiserver with one pod whose execs run as
// local processes, and a stream that keeps what it is given.

const { Writable } = require('node:stream');

const { NAMESPACE, fastEnv, setup, tempDir } = require('./harness');

const POD = 'job-pod';

/** Fast settings, durable execs on: a pong deadline of 2 s, 20 s without a connection at most. */
function durableEnv(overrides = {}) {
  return fastEnv({ DURABLE_EXEC: 'on', EXEC_PONG_DEADLINE_MS: 2000, DURABLE_DISCONNECT_MS: 20_000, CALL_DEADLINE_MS: 20_000, ...overrides });
}

/** A logger whose lines are kept by level: `lines.logger`, `lines.warning`, ... */
function capture() {
  const lines = { warning: [], info: [], debug: [], error: [] };
  const keep = (level) => (m) => lines[level].push(m);
  lines.logger = { warning: keep('warning'), info: keep('info'), debug: keep('debug'), error: keep('error') };
  return lines;
}

/** The apiserver with pod POD, each exec a local process in the pod's folder (`env.folder()`). */
async function podServer(t, options = {}) {
  const root = tempDir(t, 'durable-pods');
  const env = await setup(t, { podRunningAfterMs: 0, podRoot: root, ...options });
  env.server.seed('pods', NAMESPACE, { metadata: { name: POD, namespace: NAMESPACE }, spec: { containers: [{ name: 'job', image: 'debian' }] } });
  env.folder = () => env.server.podFolder(NAMESPACE, POD);
  return env;
}

/** A writable stream that keeps its bytes (`stream.bytes()`). */
function sink() {
  const chunks = [];
  const stream = new Writable({
    write(chunk, _e, done) {
      chunks.push(Buffer.from(chunk));
      done();
    },
  });
  stream.bytes = () => Buffer.concat(chunks);
  return stream;
}

module.exports = { POD, durableEnv, capture, podServer, sink };

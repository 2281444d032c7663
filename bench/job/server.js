'use strict';
// The loopback apiserver of a whole-job run (tests/support/apiserver.js, in
// this process: this process only waits on the jobs, and the stalls are
// armed on the server's own request stream). It grants the 13 default
// permissions; a job pod turns Running `podRunningAfterMs` after its create.
// Several may run at once (bench/job.js runs a few jobs side by side, each
// with its own server): a refusing server has released its port, so a
// server started meanwhile could take it and answer the other job's
// clients; a new server that lands on the port of a live one of this
// process is closed and started again.

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const { startApiServer } = require('../../tests/support/apiserver');
const { fullRole } = require('../../tests/js/support/roles');

const TOKEN = 'job-run-token';
const NAMESPACE = 'ci';

const START_ATTEMPTS = 10;

/** The ports of this process's job servers that are not closed yet. */
const livePorts = new Set();

/**
 * Resolves { server, kubeconfig, dir, podRoot, close() }. With `realPods`
 * every exec is a real process in its pod's folder under `podRoot`
 * (apiserver-container.js), as durable execs need; without it the execs run
 * nothing.
 */
async function startJobApiServer({ podRunningAfterMs = 2000, realPods = false } = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'preflight-job-server-'));
  const podRoot = realPods ? path.join(dir, 'pods') : null;
  let server = null;
  for (let i = 0; i < START_ATTEMPTS && !server; i++) {
    const candidate = await startApiServer({ token: TOKEN, namespace: NAMESPACE, role: fullRole(), podRunningAfterMs, ...(podRoot ? { podRoot } : {}) });
    if (livePorts.has(candidate.port)) await candidate.close();
    else server = candidate;
  }
  if (!server) {
    fs.rmSync(dir, { recursive: true, force: true });
    throw new Error(`no free port for a job apiserver after ${START_ATTEMPTS} attempts`);
  }
  const port = server.port;
  livePorts.add(port);
  const kubeconfig = server.writeKubeconfig(path.join(dir, 'kubeconfig'));
  const close = async () => {
    try {
      await server.close();
    } finally {
      livePorts.delete(port);
      fs.rmSync(dir, { recursive: true, force: true });
    }
  };
  return { server, kubeconfig, dir, podRoot, close };
}

module.exports = { startJobApiServer, NAMESPACE };

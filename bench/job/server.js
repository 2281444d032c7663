'use strict';
// The loopback apiserver of a whole-job run (tests/support/apiserver.js, in
// this process: jobs run one at a time and this process only waits on them,
// and the stalls are armed on the server's own request stream). It grants
// the 13 default permissions; a job pod turns Running `podRunningAfterMs`
// after its create.

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const { startApiServer } = require('../../tests/support/apiserver');
const { fullRole } = require('../../tests/js/support/roles');

const TOKEN = 'job-run-token';
const NAMESPACE = 'ci';

/** Resolves { server, kubeconfig, dir, close() }. */
async function startJobApiServer({ podRunningAfterMs = 2000 } = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'preflight-job-server-'));
  const server = await startApiServer({ token: TOKEN, namespace: NAMESPACE, role: fullRole(), podRunningAfterMs });
  const kubeconfig = server.writeKubeconfig(path.join(dir, 'kubeconfig'));
  const close = async () => {
    await server.close();
    fs.rmSync(dir, { recursive: true, force: true });
  };
  return { server, kubeconfig, dir, close };
}

module.exports = { startJobApiServer, NAMESPACE };

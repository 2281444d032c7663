'use strict';
// A cluster of a test's own for the hooks' real bundles: a network namespace
// (tests/support/netns.js: iptables rules on the apiserver's port are real
// kernel faults for every process in it) with the loopback apiserver in it
// (tests/js/support/netns-job-server.js), whose pods have the hooks' volumes
// (/__w, /__e, /github: each exec sees its own pod's folders there).

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const { POD_MOUNTS } = require('./job');
const { createNetns } = require('../support/netns');
const { startNsServer } = require('../js/support/durable-job');

/** Resolves { ns, server, podRoot }; all of it is removed in t.after. */
async function cluster(t) {
  const ns = await createNetns(t);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'real-hooks-server-'));
  const podRoot = path.join(dir, 'pods');
  const server = await startNsServer(ns, { podRoot, dir, podMounts: POD_MOUNTS });
  t.after(async () => {
    await server.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  return { ns, server, podRoot };
}

module.exports = { cluster };

'use strict';
// The chaos phase: a run folder with no node_modules above it holding the
// bundle, the loopback apiserver through the incident, and the jobs, under
// the wall-clock limit (--limit-s): when it is reached every hook process is
// killed, the apiserver stopped, and the run marked aborted (the apiserver
// also stops itself, by its maxRunMs).

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const { startIncidentApiServer } = require('./apiserver');
const { die, startWallClockLimit } = require('./control');
const { idleStartup } = require('./hook-process');
const { runJobs } = require('./jobs');

/**
 * Runs `plan` with the bundle in `bundleDir`. Resolves { work (the run
 * folder, also control.work), result (runJobs'), log (the apiserver's),
 * t0, aborted, phaseMs, idleMs, loadBefore }.
 */
async function runIncident(o, plan, bundleDir, control) {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'preflight-chaos-'));
  control.work = work;
  const runDir = path.join(work, 'hook');
  fs.cpSync(bundleDir, runDir, { recursive: true });
  const idleMs = await idleStartup(runDir, work, control, 3);
  const loadBefore = os.loadavg()[0];
  let aborted = false;
  const phaseStart = Date.now();
  const server = startIncidentApiServer(work, o, control.children);
  const cancelLimit = startWallClockLimit(control, o.limitS, server.child, () => {
    aborted = true;
  });

  let result;
  let log;
  let t0;
  try {
    const ready = await server.ready;
    t0 = ready.readyAtMs;
    process.stderr.write(`chaos: apiserver at ${ready.url}; ${o.jobs} jobs x ${o.scriptSteps + 2} steps starting ...\n`);
    result = await runJobs(o, plan, runDir, ready.kubeconfig, work, t0, control);
  } finally {
    cancelLimit();
    log = await server.stop().catch((e) => {
      process.stderr.write(`chaos: ${e.message}\n`);
      return null;
    });
  }
  const phaseMs = Date.now() - phaseStart;
  if (!log) die('the apiserver left no request log');
  return { work, result, log, t0, aborted, phaseMs, idleMs, loadBefore };
}

module.exports = { runIncident };

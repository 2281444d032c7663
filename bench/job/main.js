'use strict';
// bench/job.js, wired: the installed package and its job bundle; then for
// each client mode (JOB_CLIENTS of the hook processes) a job with no stall
// first, and one job per (stall length, stall place), each job with its own
// loopback apiserver in this process, up to --concurrency jobs of one
// (mode, stall length) at a time. A mode whose healthy job fails is not run
// through the stalls (its jobs are listed as not run, with the reason).
// Prints the tables, and with --write writes them to
// bench/results/job-stall.md.

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const { ROOT } = require('../../tests/js/support/prepare');
const { createRunControl } = require('../chaos/control');
const { installedPackage } = require('../chaos/install');
const { jobBundle, bundleRunDir } = require('./bundle');
const { runJob } = require('./job');
const { startJobApiServer } = require('./server');
const { PLACES } = require('./stalls');
const { tableLines, summaryLines, ruleBreaks } = require('./table');

const RESULTS = path.join(ROOT, 'bench', 'results', 'job-stall.md');
const MODES = ['plain', 'retry-proxy', 'resilient'];

const USAGE =
  'usage: node bench/job.js [--clients plain,retry-proxy,resilient] [--stalls 10,25,60,90] [--places all|<place>,...] [--no-healthy] [--concurrency 3] [--limit-s 7200] [--step-timeout-s 300] [--pod-running-after-ms 2000] [--prepare] [--env ACTIONS_RUNNER_PREFLIGHT_NAME=value]... [--write] [--out bench/results/<file>.md]';

function parseArgs(argv) {
  const o = {
    modes: [...MODES],
    stallsS: [10, 25, 60, 90],
    places: Object.keys(PLACES),
    healthy: true,
    concurrency: 3,
    limitS: 7200,
    stepTimeoutS: 300,
    podRunningAfterMs: 2000,
    prepare: false,
    write: false,
    env: {},
    out: RESULTS,
  };
  const value = (i) => {
    if (i + 1 >= argv.length) throw new Error(`${argv[i]} needs a value\n${USAGE}`);
    return argv[i + 1];
  };
  const number = (text, name, min) => {
    const n = Number(text);
    if (!Number.isFinite(n) || n < min) throw new Error(`${name} must be a number >= ${min}, got ${JSON.stringify(text)}`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--clients') {
      o.modes = value(i++).split(',').map((m) => m.trim());
      for (const m of o.modes) if (!MODES.includes(m)) throw new Error(`unknown client mode ${JSON.stringify(m)}; one of ${MODES.join(', ')}`);
      if (new Set(o.modes).size !== o.modes.length) throw new Error('--clients names a mode twice');
    } else if (a === '--stalls') o.stallsS = value(i++).split(',').map((s) => number(s, '--stalls', 0.1));
    else if (a === '--places') {
      const v = value(i++);
      o.places = v === 'all' ? Object.keys(PLACES) : v.split(',').map((p) => p.trim());
      for (const p of o.places) if (!PLACES[p]) throw new Error(`unknown place ${JSON.stringify(p)}; one of ${Object.keys(PLACES).join(', ')}`);
    } else if (a === '--no-healthy') o.healthy = false;
    else if (a === '--concurrency') {
      o.concurrency = number(value(i++), a, 1);
      if (!Number.isInteger(o.concurrency) || o.concurrency > 6) throw new Error(`--concurrency must be a whole number from 1 to 6, got ${o.concurrency}`);
    } else if (a === '--limit-s') o.limitS = number(value(i++), a, 10);
    else if (a === '--step-timeout-s') o.stepTimeoutS = number(value(i++), a, 5);
    else if (a === '--pod-running-after-ms') o.podRunningAfterMs = number(value(i++), a, 0);
    else if (a === '--prepare') o.prepare = true;
    else if (a === '--write') o.write = true;
    else if (a === '--env') {
      const v = value(i++);
      const m = /^(ACTIONS_RUNNER_PREFLIGHT_[A-Z_]+)=(.*)$/.exec(v);
      if (!m) throw new Error(`--env takes ACTIONS_RUNNER_PREFLIGHT_<NAME>=<value>, got ${JSON.stringify(v.slice(0, 80))}`);
      o.env[m[1]] = m[2];
    } else if (a === '--out') {
      const v = value(i++);
      if (!/^bench\/results\/[A-Za-z0-9._-]+\.md$/.test(v)) throw new Error(`--out must be bench/results/<name>.md, got ${JSON.stringify(v.slice(0, 80))}`);
      o.out = path.join(ROOT, v);
      o.write = true;
    } else throw new Error(`unknown argument ${a}\n${USAGE}`);
  }
  return o;
}

async function main() {
  const argv = process.argv.slice(2);
  let o;
  try {
    o = parseArgs(argv);
  } catch (e) {
    process.stderr.write(`job: ${e.message}\n`);
    process.exit(2);
  }
  const control = createRunControl();
  const wallStart = Date.now();
  const notes = [];
  const installed = await installedPackage(o.prepare, control);
  if (installed.stale) notes.push(installed.stale);
  const run = bundleRunDir(await jobBundle(installed.consumerDir, installed.flavour, notes));
  const bundleDir = run.dir;
  const stallsMs = o.stallsS.map((s) => Math.round(s * 1000));

  const jobs = [];
  const skipped = [];
  const overLimit = () => Date.now() - wallStart > o.limitS * 1000;

  // One job with its own apiserver, closed after it.
  const oneJob = async (item) => {
    const jobServer = await startJobApiServer({ podRunningAfterMs: o.podRunningAfterMs });
    try {
      return await runJob({ jobServer, bundleDir, ...item, env: { ...o.env, ...(item.env || {}) }, stepTimeoutMs: o.stepTimeoutS * 1000, track: control.children });
    } finally {
      await jobServer.close();
    }
  };
  // Runs `items` (of one mode and stall), at most o.concurrency at a time; results in plan order.
  const runGroup = async (items) => {
    const results = new Array(items.length);
    let next = 0;
    const worker = async () => {
      while (next < items.length) {
        const i = next++;
        const item = items[i];
        if (overLimit()) {
          results[i] = { skipped: { ...item, why: `the --limit-s ${o.limitS} wall-clock limit was reached` } };
          continue;
        }
        const job = await oneJob(item);
        process.stderr.write(`job: ${job.mode} ${job.place || 'no stall'} ${job.stallMs / 1000} s: ${job.ok ? 'ok' : `failed in ${job.failedStep}`} (${(job.ms / 1000).toFixed(1)} s)\n`);
        results[i] = { job };
      }
    };
    await Promise.all(Array.from({ length: Math.min(o.concurrency, items.length) }, worker));
    for (const r of results) {
      if (r.job) jobs.push(r.job);
      else skipped.push(r.skipped);
    }
    return results;
  };

  try {
    for (const mode of o.modes) {
      let broken = null;
      if (o.healthy) {
        const [r] = await runGroup([{ mode, place: null, stallMs: 0 }]);
        if (r.job && !r.job.ok) broken = `the healthy job failed in ${r.job.failedStep}: ${r.job.message}`;
      }
      for (const stallMs of stallsMs) {
        const items = o.places.map((place) => ({ mode, place, stallMs }));
        if (broken) for (const item of items) skipped.push({ ...item, why: broken });
        else await runGroup(items);
      }
      if (broken) notes.push(`${mode}: ${broken}; its ${stallsMs.length * o.places.length} stall jobs were not run`);
    }
  } finally {
    run.remove();
  }
  const cutShort = skipped.filter((s) => s.why.startsWith('the --limit-s')).length;
  if (cutShort) notes.push(`${cutShort} planned job(s) not run: the --limit-s ${o.limitS} wall-clock limit was reached`);
  const breaks = ruleBreaks(jobs);
  if (breaks.length) notes.push(`RULE BROKEN: ${breaks.length} job(s) succeeded with a script run other than once or something left behind`);

  const failed = jobs.filter((j) => !j.ok).length;
  const lines = [
    '# Whole jobs through a refused stall: the hooks\' clients plain, behind the pending retry proxy, and this package\'s',
    '',
    `Command: \`node bench/job.js ${argv.map((a) => (/[\s"']/.test(a) ? JSON.stringify(a) : a)).join(' ')}\`.`,
    `Date: ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC; Node ${process.version}, @kubernetes/client-node ${installed.clientVersion}; ${os.cpus().length} cores shared with other builds; up to ${o.concurrency} jobs at a time; the run took ${((Date.now() - wallStart) / 1000).toFixed(0)} s.`,
    '',
    'A job is prepare_job, 3 run_script_step and cleanup_job, each a fresh process of the ncc bundle of',
    '`tests/consumer/src/job.ts` (the hooks\' calls in the hooks\' order, with their own waits and retries;',
    'the permission check is this package\'s, and the later steps answer it from the job\'s cache), against',
    'its own loopback apiserver (pods, secrets, exec over WebSocket; a pod is Running',
    `${o.podRunningAfterMs} ms after its create). The clients column is how the job makes its Kubernetes clients`,
    '(`JOB_CLIENTS`, `tests/consumer/src/job/clients.ts`): `plain` is the hooks today; `retry-proxy` is the',
    'policy of the pending retry proxy for the hooks (actions/runner-container-hooks#338: 4 attempts, waits',
    'of 0.5-1.5, 1-3 and 2-6 s, Retry-After on 429 capped at 30 s, a 409 on create read back, a 404 on delete',
    'swallowed, exec not wrapped; written here, see the header of `tests/consumer/src/job/retry-proxy.ts`);',
    '`resilient` is this package\'s wrappers. One refused stall per job (the listener closed, every open',
    'connection destroyed) starts at the place named: before a hook process, or as the first request of a',
    'kind arrives (that request is cut). After a failed step the remaining script steps are skipped and',
    'cleanup_job still runs. API calls are the requests that reached the server (refused connections never',
    'do); script execs count the apiserver\'s exec log entries of each step\'s script command (- : the step',
    `never got to its script). A hook process is killed after ${o.stepTimeoutS} s. Jobs of one clients mode and stall length`,
    `run up to ${o.concurrency} at a time, each against its own apiserver (job times include that sharing).`,
    '',
    '## Summary',
    '',
    ...summaryLines(o.modes, stallsMs, jobs, skipped),
    '',
    '## Every job',
    '',
    ...tableLines(jobs, skipped),
    '',
    `${failed} of ${jobs.length} jobs run failed; ${skipped.length} planned job(s) not run.`,
    ...notes.map((n) => `- ${n}`),
    '',
  ];
  process.stdout.write(`${lines.join('\n')}`);
  if (o.write) {
    fs.writeFileSync(o.out, lines.join('\n'));
    process.stdout.write(`wrote ${path.relative(ROOT, o.out)}\n`);
  }
}

main().catch((e) => {
  process.stderr.write(`job: ${e && e.stack ? e.stack : e}\n`);
  process.exitCode = 1;
});

'use strict';
// bench/job.js, wired: the installed package, its job bundle, the loopback
// apiserver in this process, then one job per (stall place, stall length)
// and a job with no stall first; prints the table, and with --write writes
// it to bench/results/job-stall-baseline.md.

const fs = require('node:fs');
const path = require('node:path');

const { ROOT } = require('../../tests/js/support/prepare');
const { createRunControl } = require('../chaos/control');
const { installedPackage } = require('../chaos/install');
const { jobBundle, bundleRunDir } = require('./bundle');
const { runJob } = require('./job');
const { startJobApiServer } = require('./server');
const { PLACES } = require('./stalls');
const { tableLines, ruleBreaks } = require('./table');

const RESULTS = path.join(ROOT, 'bench', 'results', 'job-stall-baseline.md');

const USAGE = 'usage: node bench/job.js [--stalls 10,25] [--places all|<place>,...] [--no-healthy] [--limit-s 360] [--step-timeout-s 120] [--pod-running-after-ms 2000] [--prepare] [--write]';

function parseArgs(argv) {
  const o = { stallsS: [10, 25], places: Object.keys(PLACES), healthy: true, limitS: 360, stepTimeoutS: 120, podRunningAfterMs: 2000, prepare: false, write: false };
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
    if (a === '--stalls') o.stallsS = value(i++).split(',').map((s) => number(s, '--stalls', 0.1));
    else if (a === '--places') {
      const v = value(i++);
      o.places = v === 'all' ? Object.keys(PLACES) : v.split(',').map((p) => p.trim());
      for (const p of o.places) if (!PLACES[p]) throw new Error(`unknown place ${JSON.stringify(p)}; one of ${Object.keys(PLACES).join(', ')}`);
    } else if (a === '--no-healthy') o.healthy = false;
    else if (a === '--limit-s') o.limitS = number(value(i++), a, 10);
    else if (a === '--step-timeout-s') o.stepTimeoutS = number(value(i++), a, 5);
    else if (a === '--pod-running-after-ms') o.podRunningAfterMs = number(value(i++), a, 0);
    else if (a === '--prepare') o.prepare = true;
    else if (a === '--write') o.write = true;
    else throw new Error(`unknown argument ${a}\n${USAGE}`);
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
  const jobServer = await startJobApiServer({ podRunningAfterMs: o.podRunningAfterMs });

  const plan = [];
  if (o.healthy) plan.push({ place: null, stallMs: 0 });
  for (const s of o.stallsS) for (const place of o.places) plan.push({ place, stallMs: Math.round(s * 1000) });

  const jobs = [];
  let cutShort = 0;
  try {
    for (const item of plan) {
      if (Date.now() - wallStart > o.limitS * 1000) {
        cutShort += 1;
        continue;
      }
      const job = await runJob({ jobServer, bundleDir, ...item, stepTimeoutMs: o.stepTimeoutS * 1000, track: control.children });
      jobs.push(job);
      process.stderr.write(`job: ${job.place || 'no stall'} ${job.stallMs / 1000} s: ${job.ok ? 'ok' : `failed in ${job.failedStep}`} (${(job.ms / 1000).toFixed(1)} s)\n`);
    }
  } finally {
    await jobServer.close();
    run.remove();
  }
  if (cutShort) notes.push(`${cutShort} planned job(s) not run: the --limit-s ${o.limitS} wall-clock limit was reached`);
  const breaks = ruleBreaks(jobs);
  if (breaks.length) notes.push(`RULE BROKEN: ${breaks.length} job(s) succeeded with a script run other than once or something left behind`);

  const failed = jobs.filter((j) => !j.ok).length;
  const lines = [
    '# Whole jobs through a refused stall: the hooks\' calls, unmodified (baseline)',
    '',
    `Command: \`node bench/job.js ${argv.join(' ')}\`.`,
    `Date: ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC; Node ${process.version}, @kubernetes/client-node ${installed.clientVersion}; ${require('node:os').cpus().length} cores shared with other builds; the run took ${((Date.now() - wallStart) / 1000).toFixed(0)} s.`,
    '',
    'A job is prepare_job, 3 run_script_step and cleanup_job, each a fresh process of the ncc bundle of',
    '`tests/consumer/src/job.ts` (the hooks\' calls in the hooks\' order, with their own waits and retries and',
    'no others; the permission check is this package\'s, and the later steps answer it from the job\'s cache),',
    'against the loopback apiserver (pods, secrets, exec over WebSocket; a pod is Running',
    `${o.podRunningAfterMs} ms after its create). One refused stall per job (the listener closed, every open connection`,
    'destroyed) starts at the place named: before a hook process, or as the first request of a kind arrives',
    '(that request is cut). After a failed step the remaining script steps are skipped and cleanup_job still runs.',
    'API calls are the requests that reached the server (refused connections never do); script execs count the',
    'apiserver\'s exec log entries of each step\'s script command (- : the step never got to its script).',
    '',
    ...tableLines(jobs),
    '',
    `${failed} of ${jobs.length} jobs failed.`,
    ...notes.map((n) => `- ${n}`),
    '',
  ];
  process.stdout.write(`${lines.join('\n')}`);
  if (o.write) {
    fs.writeFileSync(RESULTS, lines.join('\n'));
    process.stdout.write(`wrote ${path.relative(ROOT, RESULTS)}\n`);
  }
}

main().catch((e) => {
  process.stderr.write(`job: ${e && e.stack ? e.stack : e}\n`);
  process.exitCode = 1;
});

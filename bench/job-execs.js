'use strict';
// Where a healthy run_script_step's time goes, exec by exec: whole jobs of
// the ncc bundle (prepare_job, run_script_step, cleanup_job) in a network
// namespace, durable execs on and off interleaved, and each exec of the
// script step as the loopback apiserver logged it (from its upgrade to its
// end) with the host's gap before it. Prints the medians per exec.
//
//   node bench/job-execs.js [--runs 6]
//
// Needs root (ip netns) and `node tests/js/support/prepare.js`.

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const { canUseNetns, createNetns } = require('../tests/support/netns');
const { startNsServer, runNsJob } = require('../tests/js/support/durable-job');
const { createRunControl } = require('./chaos/control');
const { installedPackage } = require('./chaos/install');
const { jobBundle, bundleRunDir } = require('./job/bundle');
const { median } = require('./job/table');

const args = process.argv.slice(2);
const at = args.indexOf('--runs');
const runs = at >= 0 ? Number(args[at + 1]) : 6;
if (!Number.isInteger(runs) || runs < 1 || runs > 100) throw new Error('--runs: 1 to 100');
const STEP_TIMEOUT_MS = 60_000;

// What an exec was, shortly: a durable step's command follows its script's
// arguments (the run id, two offsets, the clean-up count and list).
function label(command) {
  const durable = command[0] === 'sh' && command[1] === '-c' && command[3] === 'k8s-auth-preflight';
  const own = durable ? command.slice(8 + Number(command[7])) : command;
  const text = own.join(' ').replace(/\s+/g, ' ');
  const short = text.replace(/'?\/[^ ']*\/w\/?'?/g, '<work>/').slice(0, 36);
  return durable ? `${short} (durable)` : short;
}

(async () => {
  const can = await canUseNetns();
  if (!can.ok) {
    process.stderr.write(`job-execs: needs network namespaces: ${can.reason}\n`);
    process.exit(2);
  }
  const installed = await installedPackage(false, createRunControl());
  const bundle = bundleRunDir(await jobBundle(installed.consumerDir, installed.flavour, []));
  const ns = await createNetns(null);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'job-execs-'));
  const podRoot = path.join(dir, 'pods');
  const seen = { on: [], off: [] };
  let server = null;
  try {
    server = await startNsServer(ns, { podRoot, dir });
    for (let i = 0; i < runs; i++) {
      for (const durable of i % 2 ? ['off', 'on'] : ['on', 'off']) {
        const before = (await server.call('execs')).length;
        // The apiserver logs Date.now(); the job's steps are timed with performance.now().
        const clockOffset = Date.now() - performance.now();
        const job = await runNsJob({ ns, server, bundleDir: bundle.dir, podRoot, stepTimeoutMs: STEP_TIMEOUT_MS, script: { chunks: 1, pauseS: 0 }, env: { JOB_CLIENTS: 'resilient', ACTIONS_RUNNER_PREFLIGHT_DURABLE_EXEC: durable } });
        const step = job.steps.find((s) => s.label === 'script');
        if (!job.ok || !step) throw new Error(`a ${durable} job failed: ${job.message || job.failedStep}`);
        const execs = (await server.call('execs')).slice(before);
        // The script step's execs: those after the longest gap (the step's
        // process start, after prepare_job's last exec), minus cleanup_job's none.
        let split = 1;
        for (let k = 1; k < execs.length; k++) {
          if (execs[k].atMs - execs[k - 1].endedAtMs > execs[split].atMs - execs[split - 1].endedAtMs) split = k;
        }
        const script = execs.slice(split);
        const stepEnd = step.endedAtMs + clockOffset;
        const first = script[0].atMs - (stepEnd - step.ms);
        const last = stepEnd - script[script.length - 1].endedAtMs;
        seen[durable].push({ stepMs: step.ms, first, last, execs: script.map((e, k) => ({ label: label(e.command), ms: e.endedAtMs - e.atMs, gapMs: k ? e.atMs - script[k - 1].endedAtMs : null })) });
        fs.rmSync(job.podFolder, { recursive: true, force: true });
      }
    }
  } finally {
    if (server) await server.close();
    await ns.remove();
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const count = Math.min(...[...seen.on, ...seen.off].map((r) => r.execs.length));
  const at = (mode, k, key) => median(seen[mode].map((r) => r.execs[k][key]));
  console.log(`run_script_step exec by exec: ${runs} jobs each, durable on and off interleaved, ${installed.flavour}, Node ${process.version}, ${os.cpus().length} cores. Medians, ms (the apiserver's clock: upgrade to end; gap: the host's time since the exec before).`);
  console.log('');
  console.log('| exec | off | on | on - off | gap off | gap on |');
  console.log('| --- | ---: | ---: | ---: | ---: | ---: |');
  for (let k = 0; k < count; k++) {
    const off = at('off', k, 'ms');
    const on = at('on', k, 'ms');
    const gap = (mode) => (k ? at(mode, k, 'gapMs') : '-');
    console.log(`| ${seen.on[0].execs[k].label.replace(/\|/g, '\\|')} | ${off} | ${on} | ${on - off >= 0 ? '+' : ''}${on - off} | ${gap('off')} | ${gap('on')} |`);
  }
  const stepOff = median(seen.off.map((r) => r.stepMs));
  const stepOn = median(seen.on.map((r) => r.stepMs));
  console.log('');
  console.log(`Whole step (hook process): ${stepOff} ms off, ${stepOn} ms on, ${stepOn - stepOff >= 0 ? '+' : ''}${stepOn - stepOff} ms.`);
  const side = (key) => ['off', 'on'].map((mode) => median(seen[mode].map((r) => r[key])).toFixed(0));
  console.log(`From the hook process's start to the step's first exec: ${side('first').join(' ms off, ')} ms on; from its last exec's end to the process's exit: ${side('last').join(' ms off, ')} ms on.`);
  // The span from the first exec to the exit holds every durable exec and
  // what follows them; before it the step runs the same code either way
  // (start-up, the check), and that part's spread hides the difference.
  const span = (r) => r.stepMs - r.first;
  const spanOff = median(seen.off.map(span));
  const spanOn = median(seen.on.map(span));
  const paired = median(seen.on.map((r, k) => span(r) - span(seen.off[k])));
  console.log(`From the first exec to the exit: ${spanOff.toFixed(0)} ms off, ${spanOn.toFixed(0)} ms on, ${spanOn - spanOff >= 0 ? '+' : ''}${(spanOn - spanOff).toFixed(0)} ms (paired by run: ${paired >= 0 ? '+' : ''}${paired.toFixed(0)} ms).`);
})().catch((error) => {
  process.stderr.write(`job-execs: ${error && error.stack}\n`);
  process.exit(1);
});

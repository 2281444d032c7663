'use strict';
// The simulator (examples/replay) on the real run's fleet: the same job
// starts and step gaps (the plan) and, per step, how long the real process
// took from when it was due to its check and from its verdict to its end.
// It runs twice: with the request latency this run measured (the
// interquartile range of its one-request checks outside the fault windows)
// and with its own default (5-20 ms); it draws latencies and jitter itself.

const fs = require('node:fs');
const path = require('node:path');

const { ROOT } = require('../../tests/js/support/prepare');
const { runProcess } = require('../../tests/support/run-process');
const { die } = require('./control');
const { percentile } = require('./measurement');
const { calibratedPlan } = require('./plan');

const SIM_TIMEOUT_MS = 300_000;

/** Compiles the simulator (before the chaos phase, so cargo does not compete with it); dies when it fails. */
async function buildSimulator(control) {
  process.stderr.write('chaos: cargo build --release --example replay ...\n');
  const b = await runProcess('cargo', ['build', '--release', '--quiet', '--example', 'replay'], {
    cwd: ROOT,
    env: process.env,
    timeoutMs: SIM_TIMEOUT_MS,
    track: control.children,
  });
  if (b.code !== 0) {
    die(`cargo build --example replay failed (exit ${b.code}${b.timedOut ? ', timed out' : ''}; --no-sim runs without the simulator):\n${b.stderr}`);
  }
}

/** Parses the simulator's table row: "| name | a of b | f | sent | reached | rpj | peak | p50 / p99 | p99 / max |". */
function parseSimRow(line, jobs) {
  const cells = line.split('|').slice(1, -1).map((c) => c.trim());
  if (cells.length !== 9) return null;
  const failed = /^(\d+) of (\d+)$/.exec(cells[1]);
  if (!failed) return null;
  return {
    policy: `simulator: ${cells[0]}`,
    stepsFailed: Number(failed[1]),
    steps: Number(failed[2]),
    falseRbac: Number(cells[2]),
    sent: Number(cells[3]),
    reached: Number(cells[4]),
    // From the request count: the table rounds requests/job to 0.1.
    requestsPerJob: Number(cells[3]) / jobs,
    peak: Number(cells[6]),
    cells,
  };
}

/** The simulator's command line for this run, with `latency` ('LOW-HIGH' ms) or its default. */
function simulatorArgs(o, planFile, latency) {
  return [
    '--jobs', String(o.jobs),
    '--script-steps', String(o.scriptSteps),
    '--stall-at-ms', String(o.stallAtMs),
    '--stall-ms', String(o.stallMs),
    '--forbidden-ms', String(o.forbiddenMs),
    '--forbidden-share', String(o.forbiddenShare),
    '--scale', String(o.scale),
    '--seed', String(o.seed),
    '--plan', planFile,
    '--policies', 'ours',
    ...(latency ? ['--latency-ms', latency] : []),
  ];
}

/**
 * Runs the simulator on `plan`, told each process's measured start-up and
 * exit (`real`, from measure); writes the plan to `work`/plan.json. Resolves
 * [{ row, command, latency }], the measured latency's run first; a failed
 * run adds a line to `notes` instead.
 */
async function simulateSamePlan(o, plan, steps, real, work, control, notes) {
  const sims = [];
  const planFile = path.join(work, 'plan.json');
  const startupMs = Math.round(percentile(real.startupMs, 50));
  const exitMs = Math.round(percentile(real.exitMs, 50));
  fs.writeFileSync(planFile, JSON.stringify({ startupMs, exitMs, jobs: calibratedPlan(plan, steps, o, startupMs, exitMs) }));
  const measured = real.latencyMs.length >= 5 ? `${Math.max(1, percentile(real.latencyMs, 25))}-${Math.max(1, percentile(real.latencyMs, 75))}` : null;
  if (!measured) notes.push(`only ${real.latencyMs.length} one-request checks outside the fault windows: the simulator keeps its default latency`);
  for (const latency of measured ? [measured, null] : [null]) {
    const simArgs = simulatorArgs(o, planFile, latency);
    const command = `cargo run --release --example replay -- ${simArgs.join(' ').replace(planFile, '<plan.json>')}`;
    const r = await runProcess('cargo', ['run', '--release', '--quiet', '--example', 'replay', '--', ...simArgs], {
      cwd: ROOT,
      env: process.env,
      timeoutMs: SIM_TIMEOUT_MS,
      track: control.children,
    });
    const line = r.stdout.split('\n').find((l) => l.startsWith('| ours |'));
    const row = line ? parseSimRow(line, o.jobs) : null;
    if (r.code !== 0 || !row) {
      notes.push(`the simulator failed (exit ${r.code}${r.timedOut ? ', timed out' : ''}): ${r.stderr.trim().split('\n').slice(-3).join(' | ')}`);
      continue;
    }
    row.policy = latency ? `simulator, latency ${latency} ms as measured` : 'simulator, its default latency 5-20 ms';
    sims.push({ row, command, latency });
  }
  return sims;
}

module.exports = { buildSimulator, simulateSamePlan };

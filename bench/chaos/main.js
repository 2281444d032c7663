'use strict';
// bench/chaos.js, wired: the installed package and its bundle, the
// simulator compiled, the chaos phase (apiserver + jobs), the simulator on
// the same plan, the report. Each part is a file of this folder; the test
// fixtures it shares (the Role, the process runner, the apiserver process,
// the consumer project) are in tests/support/ and tests/js/support/.

const fs = require('node:fs');
const path = require('node:path');

const { parseArgs } = require('./arguments');
const { consumerBundle } = require('./bundle');
const { createRunControl } = require('./control');
const { checkMemoryFor } = require('./hook-process');
const { runIncident } = require('./incident');
const { installedPackage } = require('./install');
const { measure } = require('./measurement');
const { makePlan } = require('./plan');
const { reportLines, writeResults } = require('./report');
const { buildSimulator, simulateSamePlan } = require('./simulator');

async function main() {
  const args = process.argv.slice(2);
  const o = parseArgs(args);
  const wallStart = Date.now();
  checkMemoryFor(Math.min(o.processes, o.jobs));
  const notes = [];
  const control = createRunControl();

  // 1. The installed package, and the bundle.
  const installed = await installedPackage(o.prepare, control);
  const bundleDir = await consumerBundle(installed.consumerDir, installed.flavour, installed.stamp, notes);

  // 2. The simulator, compiled before the chaos phase so cargo does not compete with it.
  if (o.sim) await buildSimulator(control);

  // 3. The chaos phase.
  const plan = makePlan(o);
  const phase = await runIncident(o, plan, bundleDir, control);
  const real = measure(o, phase.result.steps, phase.log, phase.t0);

  // 4. The simulator on the same plan.
  let sims = [];
  if (o.sim && phase.aborted) notes.push('the simulator was not run: the real run is partial');
  if (o.sim && !phase.aborted) sims = await simulateSamePlan(o, plan, phase.result.steps, real, phase.work, control, notes);
  if (o.keep) {
    fs.writeFileSync(path.join(phase.work, 'steps.json'), JSON.stringify(phase.result.steps, null, 1));
    notes.push(`kept ${phase.work}: apiserver-log.json (every request), steps.json (every hook process), plan.json (what the simulator got)`);
  } else {
    fs.rmSync(phase.work, { recursive: true, force: true });
  }
  control.work = null;

  // 5. The report.
  const lines = reportLines({ o, ...installed, ...phase, real, sims, wallMs: Date.now() - wallStart, notes });
  for (const line of lines) process.stdout.write(`${line}\n`);
  if (o.write) writeResults(lines, args);
  process.exitCode = phase.aborted ? 3 : 0;
}

main().catch((e) => {
  process.stderr.write(`chaos: ${e && e.stack ? e.stack : e}\n`);
  process.exitCode = 1;
});

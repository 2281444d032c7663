'use strict';
// The report: what was run, the table (the real run next to the simulator
// runs), whether they agree within the stated tolerances, and the details of
// the real run; --write puts it in bench/results/chaos.md.

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const { ROOT } = require('../../tests/js/support/prepare');
const { percentile, secs } = require('./measurement');

// Agreement tolerances, stated in the output.
const TOLERANCE = {
  // A check that starts about one deadline before recovery fails or not by
  // its jitter draws: allow one such flip, or a quarter of the failures.
  stepsFailed: (real, sim) => Math.max(1, Math.ceil(0.25 * Math.max(real, sim))),
  requestsPerJob: (sim) => Math.max(0.25, 0.2 * sim),
  peak: { factor: 2, plus: 3 },
};

const TABLE_HEAD =
  '| run | steps failed | false "missing permission" | review requests sent | reached apiserver | requests/job | peak req/s after recovery | recovery->verdict p50 / p99 | check time p99 / max |\n' +
  '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |';

/** The table row of the real run (measure's columns). */
function tableRow(m) {
  const rtv = m.recoveryToVerdict.length === 0 ? '-' : `${secs(percentile(m.recoveryToVerdict, 50))} / ${secs(percentile(m.recoveryToVerdict, 99))}`;
  const sent = m.unreported > 0 ? `${m.sent} (+ ${m.unreported} steps without a report)` : `${m.sent}`;
  return `| ${m.policy} | ${m.stepsFailed} of ${m.steps} | ${m.falseRbac} | ${sent} | ${m.reached} | ${m.requestsPerJob.toFixed(1)} | ${m.peak} | ${rtv} | ${secs(percentile(m.checkMs, 99))} / ${secs(Math.max(0, ...m.checkMs))} |`;
}

/** The opening paragraph: the scenario and the machine. */
function scenarioLines({ o, clientVersion, tarball, loadBefore, stale }) {
  const settingsText = Object.entries(o.settings)
    .map(([k, v]) => `${k.replace('ACTIONS_RUNNER_PREFLIGHT_', '')}=${v}`)
    .join(' ');
  const lines = [
    `Real chaos run of incident-2026-10-21, compressed ${Math.round(1 / o.scale)}x: ${o.jobs} jobs (prepare + ${o.scriptSteps} script step${o.scriptSteps === 1 ? '' : 's'} + cleanup, ` +
      `every step a fresh \`node index.js\` of the ncc-bundled hooks-shaped consumer), at most ${o.processes} processes at a time, ` +
      `starts spread over ${o.startSpreadMs / 1000} s, ${o.stepWorkMs[0]}-${o.stepWorkMs[1]} ms of work between steps (seed ${o.seed}); ` +
      `at ${o.stallAtMs / 1000} s the loopback apiserver refuses every connection for ${o.stallMs / 1000} s, then answers 403 to ` +
      `${Math.round(o.forbiddenShare * 100)} % of requests for ${o.forbiddenMs / 1000} s, then is healthy. ` +
      `Policy: the defaults with ${settingsText} (x${o.scale}).`,
    '',
    `Node ${process.version}, @kubernetes/client-node ${clientVersion}, package tarball sha256 ${tarball.slice(0, 12)}; ` +
      `${os.cpus().length} CPUs (${os.cpus()[0] ? os.cpus()[0].model.trim() : 'unknown'}), load ${loadBefore.toFixed(2)} before the run; ${new Date().toISOString().slice(0, 10)}.`,
  ];
  if (stale) lines.push(stale);
  return lines;
}

/** Whether the first simulator run agrees with the real run, each column against its tolerance. */
function agreementLine(real, sim) {
  const failTol = TOLERANCE.stepsFailed(real.stepsFailed, sim.stepsFailed);
  const rpjTol = TOLERANCE.requestsPerJob(sim.requestsPerJob);
  const { factor, plus } = TOLERANCE.peak;
  const failOk = Math.abs(real.stepsFailed - sim.stepsFailed) <= failTol;
  const rpjOk = Math.abs(real.requestsPerJob - sim.requestsPerJob) <= rpjTol;
  const peakOk = real.peak <= sim.peak * factor + plus && sim.peak <= real.peak * factor + plus;
  const stepsOk = real.steps === sim.steps;
  const verdict = failOk && rpjOk && peakOk ? 'AGREE' : 'DISAGREE';
  return (
    `Simulator (${sim.policy.replace('simulator, ', '')}) vs real run: ${verdict}. Steps failed ${real.stepsFailed} vs ${sim.stepsFailed} (tolerance +-${failTol}, the larger of 1 and 25 %): ${failOk ? 'ok' : 'NO'}; ` +
    `requests/job ${real.requestsPerJob.toFixed(2)} vs ${sim.requestsPerJob.toFixed(2)} (tolerance +-${rpjTol.toFixed(2)}, the larger of 0.25 and 20 %): ${rpjOk ? 'ok' : 'NO'}; ` +
    `recovery peak ${real.peak} vs ${sim.peak} req/s (roughly: within x${factor} + ${plus}): ${peakOk ? 'ok' : 'NO'}; ` +
    `steps run ${real.steps} vs ${sim.steps}${stepsOk ? '' : ' (differ)'}.`
  );
}

/** The details of the real run, one bullet a line. */
function detailLines({ o, real, result, sims, idleMs, phaseMs, wallMs, aborted, notes }) {
  const p = real.phases;
  const lines = ['Details of the real run:'];
  lines.push(
    `- timeline as the apiserver logged it (from the plan's t = 0): refused from ${p.refuseAt === null ? '-' : `${p.refuseAt} ms`}, ` +
      `403 window from ${p.recoveryAt === null ? '-' : `${p.recoveryAt} ms`}, healthy from ${p.healthyAt === null ? '-' : `${p.healthyAt} ms`} ` +
      `(planned ${o.stallAtMs}, ${o.stallAtMs + o.stallMs}, ${o.stallAtMs + o.stallMs + o.forbiddenMs} ms)`,
  );
  lines.push(
    `- verdicts: ${Object.entries(real.bySource).map(([k, v]) => `${k} ${v}`).join(', ') || 'none'}; ` +
      `steps with a ::warning:: ${real.stepsWithWarnings} (first failed attempt: ${Object.entries(real.firstFailures).map(([k, v]) => `${k} ${v}`).join(', ') || 'none'}), ` +
      `inconclusive ${real.inconclusive}, killed by the per-process timeout (${result.processTimeoutMs} ms) ${real.timedOut}`,
  );
  lines.push(`- answers the apiserver logged: ${Object.entries(real.byStatus).map(([k, v]) => `${k} ${v}`).join(', ') || 'none'}${real.other ? `; ${real.other} requests to other paths` : ''}`);
  lines.push(
    `- hook process: from due (job schedule) to its check p50 ${percentile(real.startupMs, 50)} ms (p99 ${percentile(real.startupMs, 99)}), ` +
      `verdict to exit p50 ${percentile(real.exitMs, 50)} ms, whole process p50 ${percentile(real.processMs, 50)} ms / p99 ${percentile(real.processMs, 99)} ms; ` +
      `at most ${result.peakProcesses} at a time, ${result.delayedByCap} starts delayed by the --processes cap; ` +
      `a process that only loads the bundle took ${idleMs === null ? '-' : `${idleMs} ms`} just before the run`,
  );
  if (idleMs !== null && percentile(real.startupMs, 50) > 3 * idleMs) {
    lines.push(
      `- CPU-BOUND: hook processes took ${percentile(real.startupMs, 50)} ms (p50) to reach their check, over 3x the ${idleMs} ms of one process alone; ` +
        'the timing columns of the real run are stretched by CPU contention (fewer --jobs or --script-steps, or a larger --scale, lighten it)',
    );
  }
  lines.push(`- chaos phase ${secs(phaseMs)} (limit ${o.limitS} s)${aborted ? ': STOPPED BY THE WALL-CLOCK LIMIT, the report is partial' : ''}; whole command ${secs(wallMs)}`);
  for (const note of notes) lines.push(`- ${note}`);
  for (const { command } of sims) lines.push(`- simulator: \`${command}\``);
  if (sims.length > 0) {
    lines.push(
      `- the simulator got the same job starts and step gaps (the plan) and, per step, how long the real process took from when it was due ` +
        `to its check and from its verdict to its end (medians ${percentile(real.startupMs, 50)} ms and ${percentile(real.exitMs, 50)} ms)`,
    );
  }
  for (const s of result.steps.filter((step) => !step.ok).slice(0, 5)) {
    const errorLine = s.stdout.split('\n').find((l) => l.startsWith('::error::'));
    const last = (errorLine || s.stderr.trim().split('\n').pop() || '(no output)').slice(0, 300);
    lines.push(`- failed: job ${s.job} step ${s.step} (${s.command}), exit ${s.exitCode}${s.signal ? ` ${s.signal}` : ''}${s.timedOut ? ' timed out' : ''}: ${last}`);
  }
  return lines;
}

/** The whole report, one string a line (the table's head is one string of two lines). */
function reportLines(run) {
  const { real, sims } = run;
  const lines = [...scenarioLines(run), '', TABLE_HEAD, tableRow(real)];
  for (const { row: r } of sims) lines.push(`| ${r.policy} | ${r.cells.slice(1).join(' | ')} |`);
  lines.push('');
  if (sims.length > 0) lines.push(agreementLine(real, sims[0].row), '');
  return [...lines, ...detailLines(run)];
}

/** Writes the report to bench/results/chaos.md, under the command that made it. */
function writeResults(lines, args) {
  const file = path.join(ROOT, 'bench', 'results', 'chaos.md');
  const command = `node bench/chaos.js${args.length > 0 ? ` ${args.join(' ')}` : ''}`;
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, `# Real chaos run\n\nCommand: \`${command}\`\n\n${lines.join('\n')}\n`);
  process.stderr.write(`chaos: wrote ${path.relative(ROOT, file)}\n`);
}

module.exports = { reportLines, writeResults };

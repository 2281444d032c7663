'use strict';
// bench/job.js --mid-script: whole jobs (prepare_job, one run_script_step,
// cleanup_job) with a real network fault in the middle of a long script, and
// what a durable exec costs a healthy step.
//
//   node bench/job.js --mid-script [--faults reject,reset,drop]
//       [--durations 10,25,60,90] [--modes plain,retry-proxy,resilient-off,resilient-on]
//       [--jobs-per-cell 1] [--concurrency 6] [--healthy-runs 15]
//       [--script-s <longest + 25>] [--limit-s 3000] [--prepare] [--write]
//
// Each job runs in a network namespace of its own (tests/support/netns.js)
// with its own loopback apiserver and every hook process inside it
// (tests/js/support/durable-job.js: the execs are real processes in the pod's
// folder). The script writes the harness's 1 MiB patterns to stdout and
// stderr in 64 pieces over --script-s seconds; ~5 s after it starts, an
// iptables rule on the apiserver's port (REJECT, tcp-reset or DROP) is held
// for the duration. The modes: plain (JOB_CLIENTS=plain, the hooks
// unmodified), retry-proxy (the pending retry proxy's policy), resilient-off
// and resilient-on (this package, ACTIONS_RUNNER_PREFLIGHT_DURABLE_EXEC off
// and on). A job is ok, failed, or WRONGLY GREEN: the script step exited 0
// but the script's output as the hook printed it is not the whole pattern,
// or the script was still running (or never ended) when the hook exited, or
// its exit code was not the hook's. The healthy cost: run_script_step hook
// process time of a short script (the 1 MiB at once), durable on and off
// (JOB_CLIENTS=resilient both), interleaved, in one namespace, no faults.
// --write writes bench/results/job-mid-script.md.

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const { ROOT } = require('../../tests/js/support/prepare');
const { canUseNetns, createNetns } = require('../../tests/support/netns');
const { patterns, compareOutput, startNsServer, runNsJob, scriptExecs, sleep, PATTERN_BYTES } = require('../../tests/js/support/durable-job');
const { createRunControl } = require('../chaos/control');
const { installedPackage } = require('../chaos/install');
const { jobBundle, bundleRunDir } = require('./bundle');
const { shorten, median } = require('./table');

const RESULTS = path.join(ROOT, 'bench', 'results', 'job-mid-script.md');
const FAULTS = ['reject', 'reset', 'drop'];
const MODES = {
  plain: { JOB_CLIENTS: 'plain' },
  'retry-proxy': { JOB_CLIENTS: 'retry-proxy' },
  'resilient-off': { JOB_CLIENTS: 'resilient', ACTIONS_RUNNER_PREFLIGHT_DURABLE_EXEC: 'off' },
  'resilient-on': { JOB_CLIENTS: 'resilient', ACTIONS_RUNNER_PREFLIGHT_DURABLE_EXEC: 'on' },
};
const CHUNKS = 64;
const FAULT_AFTER_START_MS = 5000;
const SCRIPT_START_TIMEOUT_MS = 60_000;
// The script outlasts the longest fault by this much (default --script-s).
const SCRIPT_MARGIN_S = 25;
// A hook process is killed this long after the script's length.
const STEP_SLACK_S = 60;
const HEALTHY_STEP_TIMEOUT_MS = 60_000;

const USAGE =
  'usage: node bench/job.js --mid-script [--faults reject,reset,drop] [--durations 10,25,60,90] [--modes plain,retry-proxy,resilient-off,resilient-on] [--jobs-per-cell 1] [--concurrency 6] [--healthy-runs 15] [--script-s S] [--limit-s 3000] [--prepare] [--write]';

function parseArgs(argv) {
  const o = { faults: [...FAULTS], durationsS: [10, 25, 60, 90], modes: Object.keys(MODES), perCell: 1, concurrency: 6, healthyRuns: 15, scriptS: null, limitS: 3000, prepare: false, write: false };
  const value = (i) => {
    if (i + 1 >= argv.length) throw new Error(`${argv[i]} needs a value\n${USAGE}`);
    return argv[i + 1];
  };
  const number = (text, name, min, max = Infinity) => {
    const n = Number(text);
    if (!Number.isFinite(n) || n < min || n > max) throw new Error(`${name} must be a number from ${min} to ${max}, got ${JSON.stringify(text)}`);
    return n;
  };
  const list = (text, known, name) => {
    const items = text.split(',').map((s) => s.trim());
    for (const x of items) if (!known.includes(x)) throw new Error(`unknown ${name} ${JSON.stringify(x)}; one of ${known.join(', ')}`);
    if (new Set(items).size !== items.length) throw new Error(`${name}s: one named twice`);
    return items;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--mid-script') continue;
    if (a === '--faults') o.faults = list(value(i++), FAULTS, 'fault');
    else if (a === '--modes') o.modes = list(value(i++), Object.keys(MODES), 'mode');
    else if (a === '--durations') o.durationsS = value(i++).split(',').map((s) => number(s, a, 1, 600));
    else if (a === '--jobs-per-cell') o.perCell = Math.round(number(value(i++), a, 1, 10));
    else if (a === '--concurrency') o.concurrency = Math.round(number(value(i++), a, 1, 8));
    else if (a === '--healthy-runs') o.healthyRuns = Math.round(number(value(i++), a, 0, 100));
    else if (a === '--script-s') o.scriptS = number(value(i++), a, 5, 900);
    else if (a === '--limit-s') o.limitS = number(value(i++), a, 60);
    else if (a === '--prepare') o.prepare = true;
    else if (a === '--write') o.write = true;
    else throw new Error(`unknown argument ${a}\n${USAGE}`);
  }
  if (o.scriptS === null) o.scriptS = Math.max(0, ...o.durationsS) + FAULT_AFTER_START_MS / 1000 + SCRIPT_MARGIN_S;
  return o;
}

/** The live processes of the step script's shell in the job's pod. */
async function scriptProcesses(server, pod) {
  try {
    return (await server.call('pids', { pod })).filter((p) => /\/step\.sh$/.test(p.cmdline));
  } catch {
    return null;
  }
}

/**
 * The `during.script` of a fault job: ~5 s after the script started, the
 * fault for `ms`; beside it, what the pod had when the hook process exited
 * (the script's `ended` line, its shell alive or not).
 */
const faultDuring = (action, ms) => async (ctx) => {
  const atExit = ctx.proc.exited.then(async () => {
    const endedFile = path.join(ctx.podWork, 'ended');
    const ended = fs.existsSync(endedFile) ? fs.readFileSync(endedFile, 'utf8').trim() : null;
    const alive = await scriptProcesses(ctx.server, ctx.pod);
    return { ended, alive: alive === null ? null : alive.length };
  });
  let fault;
  try {
    const startedAt = await ctx.waitForScriptStart(SCRIPT_START_TIMEOUT_MS);
    await sleep(FAULT_AFTER_START_MS);
    const b = await ctx.ns.block({ port: ctx.server.port, action, ms });
    fault = { fromS: (b.addedAtMs - startedAt) / 1000, toS: (b.removedAtMs - startedAt) / 1000 };
  } catch (e) {
    fault = { error: e.message };
  }
  return { fault, atExit: await atExit };
};

/** ok | failed | wrongly green, and why, for a finished job. */
function judge(j) {
  const script = j.steps.find((s) => s.label === 'script');
  const { out, err } = patterns();
  const d = j.during.script && j.during.script.ok ? j.during.script.value : null;
  const atExit = d ? d.atExit : null;
  const outBytes = j.scriptStdout === null ? null : Buffer.byteLength(j.scriptStdout, 'latin1');
  const whole = !compareOutput('stdout', j.scriptStdout, out) && !compareOutput('stderr', j.scriptStderr, err);
  const endedCode = atExit && atExit.ended ? Number(/^end (\d+)/.exec(atExit.ended.split('\n').pop())?.[1]) : null;
  const wrong = [];
  if (script && !script.skipped && script.green) {
    if (!whole) wrong.push(`output not whole (stdout ${outBytes ?? 0} of ${PATTERN_BYTES} bytes)`);
    if (!atExit) wrong.push('no look at the pod when the hook exited');
    else if (atExit.alive) wrong.push('the script was still running when the hook exited');
    else if (endedCode === null) wrong.push('the script never ended (killed)');
    else if (endedCode !== script.code) wrong.push(`the script exited ${endedCode}, the hook ${script.code}`);
  }
  const verdict = wrong.length ? 'wrongly green' : j.ok ? 'ok' : 'failed';
  return { verdict, why: wrong.join('; '), whole, outBytes, atExit, endedCode, held: d ? d.fault : { error: j.during.script ? String(j.during.script.error) : 'the fault never ran' } };
}

async function main() {
  const argv = process.argv.slice(2);
  let o;
  try {
    o = parseArgs(argv);
  } catch (e) {
    process.stderr.write(`job --mid-script: ${e.message}\n`);
    process.exit(2);
  }
  const can = canUseNetns();
  if (!can.ok) {
    process.stderr.write(`job --mid-script: needs network namespaces: ${can.reason}\n`);
    process.exit(2);
  }
  const control = createRunControl();
  const wallStart = Date.now();
  const notes = [];
  const installed = await installedPackage(o.prepare, control);
  if (installed.stale) notes.push(installed.stale);
  const run = bundleRunDir(await jobBundle(installed.consumerDir, installed.flavour, notes));
  const live = new Set(); // namespaces and servers to remove on a signal
  const cleanupAll = () => Promise.all([...live].map((x) => x.remove().catch(() => {})));
  for (const signal of ['SIGINT', 'SIGTERM']) process.prependListener(signal, () => void cleanupAll());

  // A namespace with its apiserver and pod folder; removed by remove().
  const world = async () => {
    const ns = await createNetns(null);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mid-script-'));
    const podRoot = path.join(dir, 'pods');
    let server = null;
    const w = {
      ns,
      podRoot,
      remove: async () => {
        live.delete(w);
        try {
          if (server) await server.close();
        } finally {
          await ns.remove();
          fs.rmSync(dir, { recursive: true, force: true });
        }
      },
    };
    live.add(w);
    try {
      server = await startNsServer(ns, { podRoot, dir });
    } catch (e) {
      await w.remove();
      throw e;
    }
    w.server = server;
    return w;
  };

  const pauseS = Number((o.scriptS / (CHUNKS - 1)).toFixed(2));
  const stepTimeoutMs = (o.scriptS + STEP_SLACK_S) * 1000;
  const overLimit = () => Date.now() - wallStart > o.limitS * 1000;

  // ---- the healthy cost: durable on vs off, interleaved, one namespace ----
  const healthy = { on: [], off: [], failed: [] };
  if (o.healthyRuns > 0) {
    const w = await world();
    try {
      for (let i = 0; i < o.healthyRuns && !overLimit(); i++) {
        const order = i % 2 ? ['off', 'on'] : ['on', 'off'];
        for (const d of order) {
          const j = await runNsJob({ ns: w.ns, server: w.server, bundleDir: run.dir, podRoot: w.podRoot, stepTimeoutMs: HEALTHY_STEP_TIMEOUT_MS, script: { chunks: 1, pauseS: 0 }, env: { JOB_CLIENTS: 'resilient', ACTIONS_RUNNER_PREFLIGHT_DURABLE_EXEC: d } });
          const s = j.steps.find((x) => x.label === 'script');
          const whole = !compareOutput('stdout', j.scriptStdout, patterns().out) && !compareOutput('stderr', j.scriptStderr, patterns().err);
          if (j.ok && whole && s) healthy[d].push(s.ms);
          else healthy.failed.push(`${d} run ${i + 1}: ${j.ok ? 'output not whole' : `failed in ${j.failedStep}: ${j.message}`}`);
          process.stderr.write(`healthy ${d} ${i + 1}: ${s ? s.ms : '-'} ms${j.ok ? '' : ' FAILED'}\n`);
          fs.rmSync(j.podFolder, { recursive: true, force: true });
        }
      }
    } finally {
      await w.remove();
    }
  }

  // ---- the fault matrix ----
  const items = [];
  for (const fault of o.faults) for (const durationS of o.durationsS) for (const mode of o.modes) for (let k = 0; k < o.perCell; k++) items.push({ fault, durationS, mode });
  const results = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      const item = items[i];
      if (overLimit()) {
        results[i] = { ...item, notRun: `the --limit-s ${o.limitS} wall-clock limit was reached` };
        continue;
      }
      let w;
      try {
        w = await world();
        const j = await runNsJob({
          ns: w.ns,
          server: w.server,
          bundleDir: run.dir,
          podRoot: w.podRoot,
          stepTimeoutMs,
          script: { chunks: CHUNKS, pauseS },
          env: MODES[item.mode],
          during: { script: faultDuring(item.fault, item.durationS * 1000) },
        });
        const v = judge(j);
        results[i] = { ...item, j, ...v, runs: j.markerLines.length, execs: scriptExecs(j).length };
        process.stderr.write(`job ${item.fault} ${item.durationS} s ${item.mode}: ${v.verdict}${v.why ? ` (${v.why})` : ''}${j.ok ? '' : ` in ${j.failedStep}: ${shorten(j.message || '', 100)}`} (${(j.ms / 1000).toFixed(1)} s)\n`);
      } catch (e) {
        results[i] = { ...item, notRun: `the harness failed: ${e.message}` };
        process.stderr.write(`job ${item.fault} ${item.durationS} s ${item.mode}: harness error ${e.stack}\n`);
      } finally {
        if (w) await w.remove().catch((e) => notes.push(`clean-up: ${e.message}`));
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(o.concurrency, items.length) }, worker));
  } finally {
    run.remove();
  }

  // ---- the tables ----
  const done = results.filter((r) => r && !r.notRun);
  const notRun = results.filter((r) => r && r.notRun);
  const summary = [`| fault | held | ${o.modes.map((m) => `${m}: failed / wrongly green`).join(' | ')} |`, `| --- | ---: | ${o.modes.map(() => '---:').join(' | ')} |`];
  for (const fault of o.faults) {
    for (const durationS of o.durationsS) {
      const cells = o.modes.map((mode) => {
        const mine = done.filter((r) => r.fault === fault && r.durationS === durationS && r.mode === mode);
        if (!mine.length) return 'not run';
        const f = mine.filter((r) => r.verdict === 'failed').length;
        const g = mine.filter((r) => r.verdict === 'wrongly green').length;
        return `${f} / ${g ? `**${g}**` : 0} of ${mine.length}`;
      });
      summary.push(`| ${fault} | ${durationS} s | ${cells.join(' | ')} |`);
    }
  }
  const total = (mode, verdict) => done.filter((r) => r.mode === mode && r.verdict === verdict).length;
  summary.push(`| **all** | | ${o.modes.map((m) => `${total(m, 'failed')} / ${total(m, 'wrongly green')} of ${done.filter((r) => r.mode === m).length}`).join(' | ')} |`);

  const perJob = [
    '| fault | held | clients | job | failed step: message | script runs | script at the hook\'s exit | stdout the hook printed | fault held (s after the script start) | job took |',
    '| --- | ---: | --- | --- | --- | ---: | --- | ---: | --- | ---: |',
  ];
  const cell = (t) => String(t).replace(/\|/g, '\\|').replace(/\n/g, ' ');
  for (const r of results) {
    if (!r) continue;
    if (r.notRun) {
      perJob.push(`| ${r.fault} | ${r.durationS} s | ${r.mode} | not run | ${cell(shorten(r.notRun))} | | | | | |`);
      continue;
    }
    const j = r.j;
    const verdict = r.verdict === 'ok' ? 'ok' : r.verdict === 'failed' ? '**failed**' : `**WRONGLY GREEN**: ${cell(r.why)}`;
    const msg = j.ok ? '' : `${j.failedStep}: \`${cell(shorten(j.message || ''))}\``;
    const at = r.atExit ? (r.atExit.alive ? 'running' : r.atExit.ended ? `ended, exit ${r.endedCode}` : 'gone, never ended') : '?';
    const out = r.outBytes === null ? 'never started' : r.whole ? 'whole (both)' : `${r.outBytes} of ${PATTERN_BYTES} B`;
    const f = r.held.error ? `fault: ${cell(shorten(r.held.error, 60))}` : `${r.held.fromS.toFixed(1)}-${r.held.toS.toFixed(1)}`;
    perJob.push(`| ${r.fault} | ${r.durationS} s | ${r.mode} | ${verdict} | ${msg} | ${r.runs}${r.execs !== r.runs ? ` (${r.execs} execs)` : ''} | ${at} | ${out} | ${f} | ${(j.ms / 1000).toFixed(1)} s |`);
  }
  const badRuns = done.filter((r) => r.runs !== 1);
  if (badRuns.length) notes.push(`RULE BROKEN: ${badRuns.length} job(s) ran the script other than once`);
  if (notRun.length) notes.push(`${notRun.length} planned job(s) not run`);

  const hm = { on: median(healthy.on), off: median(healthy.off) };
  const healthyLines = o.healthyRuns
    ? [
        '| durable execs | runs | median ms per run_script_step | min | max |',
        '| --- | ---: | ---: | ---: | ---: |',
        ...['off', 'on'].map((d) => `| ${d} | ${healthy[d].length} | ${hm[d] ?? '-'} | ${healthy[d].length ? Math.min(...healthy[d]) : '-'} | ${healthy[d].length ? Math.max(...healthy[d]) : '-'} |`),
        '',
        hm.on !== null && hm.off !== null ? `Durable on minus off: **${hm.on - hm.off > 0 ? '+' : ''}${(hm.on - hm.off).toFixed(0)} ms** per step (median of each).` : 'No difference: a side has no runs.',
        ...healthy.failed.map((f) => `- healthy run failed: ${f}`),
      ]
    : ['Not run (--healthy-runs 0).'];

  const lines = [
    '# Whole jobs with a network fault mid-script: the hooks plain, the pending retry proxy, this package with durable execs off and on',
    '',
    `Command: \`node bench/job.js ${argv.join(' ')}\` (PREFLIGHT_CLIENT=${process.env.PREFLIGHT_CLIENT || '(default)'}).`,
    `Date: ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC; Node ${process.version}, @kubernetes/client-node ${installed.clientVersion}; ${os.cpus().length} cores shared with other builds; up to ${o.concurrency} jobs at a time; the run took ${((Date.now() - wallStart) / 1000).toFixed(0)} s.`,
    '',
    'A job is prepare_job, one run_script_step and cleanup_job (each a fresh `node index.js` of the ncc bundle of',
    '`tests/consumer/src/job.ts`) in a network namespace of its own, with its own loopback apiserver inside it',
    '(`tests/js/support/durable-job.js`, `netns-job-server.js`: every exec a real process in the pod\'s folder).',
    `The script writes a known 1 MiB to stdout and another to stderr in ${CHUNKS} pieces ${pauseS} s apart (about ${o.scriptS} s);`,
    `${FAULT_AFTER_START_MS / 1000} s after it starts, an iptables rule on the apiserver's port is held for the time in the "held" column:`,
    '`reject` (ICMP port unreachable), `reset` (tcp-reset) or `drop`. Clients: `plain` the hooks unmodified;',
    '`retry-proxy` the pending retry proxy\'s policy (exec not wrapped); `resilient-off` / `resilient-on` this package',
    'with `ACTIONS_RUNNER_PREFLIGHT_DURABLE_EXEC` off / on (other settings default: pong deadline 15 s, disconnect 300 s).',
    '**Wrongly green**: the script step exited 0 but the script\'s output as the hook printed it is not both patterns',
    'byte for byte, or the script was still running (or had not ended) when the hook exited, or its exit code was not',
    `the hook's. A hook process is killed after ${o.scriptS + STEP_SLACK_S} s. Script runs: the marker lines (each start of the script); must be 1.`,
    '',
    `## Summary (${o.perCell} job${o.perCell > 1 ? 's' : ''} per cell)`,
    '',
    ...summary,
    '',
    '## What a durable exec costs a healthy step',
    '',
    `run_script_step hook process time (a fresh process, the 1 MiB of each pattern at once), JOB_CLIENTS=resilient,`,
    `durable execs on and off interleaved, ${o.healthyRuns} runs each, one namespace, no faults, before the fault jobs.`,
    '',
    ...healthyLines,
    '',
    '## Every job',
    '',
    ...perJob,
    '',
    ...notes.map((n) => `- ${n}`),
    '',
  ];
  process.stdout.write(lines.join('\n'));
  if (o.write) {
    fs.writeFileSync(RESULTS, lines.join('\n'));
    process.stdout.write(`wrote ${path.relative(ROOT, RESULTS)}\n`);
  }
}

main().catch((e) => {
  process.stderr.write(`job --mid-script: ${e && e.stack ? e.stack : e}\n`);
  process.exitCode = 1;
});

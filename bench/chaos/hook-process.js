'use strict';
// One hook process: a fresh `node index.js` of the bundle with the hook's
// input on stdin, what its output says (the `preflight report:` line, the
// ::warning:: and ::error:: lines), and what a process that only loads the
// bundle costs on the machine as it is.

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const { runProcess } = require('../../tests/support/run-process');
const { die } = require('./control');
const { percentile } = require('./measurement');

// Resident memory of one hook process (measured: ~125 MB), for the memory check.
const PROCESS_RSS_BYTES = 140 * 1024 * 1024;

/** Dies when `processes` hook processes at once would not fit in 80 % of the free memory. */
function checkMemoryFor(processes) {
  const need = processes * PROCESS_RSS_BYTES;
  if (need > 0.8 * os.freemem()) {
    die(`--processes ${processes} needs about ${(need / 2 ** 30).toFixed(1)} GiB (${PROCESS_RSS_BYTES >> 20} MiB per hook process); only ${(os.freemem() / 2 ** 30).toFixed(1)} GiB free`);
  }
}

/** The hook's stdin for step `step` of job `job`, as the runner writes it. */
function hookInput(command, job, step) {
  const base = { command, responseFile: `/__w/_temp/_runner_file_commands/response-${job}-${step}.json`, state: { jobPod: `runner-${job}-workflow` } };
  if (command === 'run_script_step') {
    base.args = {
      entryPoint: 'bash',
      entryPointArgs: ['-e', `/__w/_temp/step-${step}.sh`],
      environmentVariables: {},
      workingDirectory: '/__w/repo/repo',
    };
  } else if (command === 'prepare_job') {
    base.args = { container: { image: 'node:20', workingDirectory: '/__w/repo/repo' } };
  } else {
    base.args = {};
  }
  return JSON.stringify(base);
}

/** Runs `node index.js` of the bundle in `runDir` once; resolves what runProcess does. */
function runHook(runDir, { env, input, timeoutMs, track }) {
  return runProcess(process.execPath, ['index.js'], { cwd: runDir, env, input, timeoutMs, track });
}

/** The first failed attempt of the check, as its one ::warning:: names it (an errno code, an HTTP status, a timeout). */
function firstFailure(stdout) {
  const m = /^::warning::The Kubernetes API did not answer a permission check \((.*)\); retrying/m.exec(stdout);
  if (!m) return null;
  const code = /\b(E[A-Z]{3,}|UND_ERR_[A-Z_]+)\b/.exec(m[1]);
  if (code) return code[1];
  const status = /HTTP (\d{3})/.exec(m[1]);
  if (status) return `HTTP ${status[1]}`;
  if (/timed out|timeout|abort/i.test(m[1])) return 'timed out';
  return m[1].slice(0, 60);
}

/** What one finished hook process did, from its exit and its output. */
function parseStep(r) {
  const m = /^preflight report: (\{.*\})$/m.exec(r.stdout);
  let report = null;
  if (m) {
    try {
      report = JSON.parse(m[1]);
    } catch {
      report = null;
    }
  }
  return {
    ok: r.code === 0 && !r.timedOut,
    exitCode: r.code,
    signal: r.signal,
    timedOut: r.timedOut,
    report,
    denialLine: /^::error::(denied:|missing permissions)/m.test(r.stdout),
    inconclusiveLine: /^::error::permission check inconclusive \(not a denial\)/m.test(r.stdout),
    warnings: (r.stdout.match(/^::warning::/gm) || []).length,
    // The first failed attempt of the check, as its one warning names it.
    firstFailure: firstFailure(r.stdout),
    spawnedAt: r.startedAt,
    endedAt: r.endedAt,
    stdout: r.stdout,
    stderr: r.stderr,
  };
}

/** Wall time of a hook process that loads the bundle and exits (bad input), on the machine as it is: median of `runs`. */
async function idleStartup(runDir, work, control, runs) {
  const kubeconfig = path.join(work, 'idle-kubeconfig');
  fs.writeFileSync(
    kubeconfig,
    'apiVersion: v1\nkind: Config\nclusters:\n- name: none\n  cluster:\n    server: "https://127.0.0.1:9"\nusers:\n- name: none\n  user:\n    token: "x"\ncontexts:\n- name: none\n  context:\n    cluster: none\n    user: none\n    namespace: ci\ncurrent-context: none\n',
  );
  const times = [];
  for (let i = 0; i < runs; i++) {
    const r = await runHook(runDir, {
      env: { PATH: process.env.PATH, KUBECONFIG: kubeconfig, RUNNER_TEMP: work },
      input: '{}',
      timeoutMs: 30_000,
      track: control.children,
    });
    if (/^::error::unknown hook command/m.test(r.stdout)) times.push(r.endedAt - r.startedAt);
  }
  return times.length ? percentile(times, 50) : null;
}

module.exports = { checkMemoryFor, hookInput, runHook, parseStep, idleStartup };

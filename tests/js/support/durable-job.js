'use strict';
// Whole jobs in a network namespace of the test's own, for the durable-exec
// proofs (tests/js/durable-job.test.js): the loopback apiserver
// (netns-job-server.js, with `podRoot`: every exec a real process in the pod's
// folder) and every hook process (prepare_job, run_script_step, cleanup_job:
// a fresh `node index.js` of the ncc job bundle each) run inside the
// namespace, so iptables rules on the apiserver's port (ns.block) cut their
// real connections.
//
// The step script (stepScript) writes a known 1 MiB pattern to stdout and a
// different one to stderr, 32 KiB of each every 0.6 s (about 20 s), from
// pattern files the job's workspace carries into the pod; it appends a line
// to <pod work>/marker each time it starts, and `end <code>` to <pod
// work>/ended as it exits STEP_EXIT (default 0). A longer script (the mid-script
// bench, bench/job/mid-script.js): runNsJob's `script: { chunks, pauseS }`
// writes the same 1 MiB in `chunks` pieces, `pauseS` apart.

const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const SERVER_SCRIPT = path.join(__dirname, 'netns-job-server.js');
const NAMESPACE = 'ci';
const CHUNK_BYTES = 32 * 1024;
const CHUNKS = 32;
const PATTERN_BYTES = CHUNK_BYTES * CHUNKS; // 1 MiB
const CHUNK_PAUSE = '0.6';
const LINE_BYTES = 64;
const RPC_TIMEOUT_MS = 10_000;
const READY_TIMEOUT_MS = 15_000;
const POLL_MS = 50;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// ---- the patterns and the step script -----------------------------------------

/** One 1 MiB pattern of 64-byte lines: `<tag> <line number> <hash hex ...>\n`, each line different. */
function makePattern(tag) {
  const lines = [];
  for (let i = 0; i < PATTERN_BYTES / LINE_BYTES; i++) {
    const head = `${tag} ${String(i).padStart(6, '0')} `;
    const fill = crypto.createHash('sha256').update(`${tag}:${i}`).digest('hex').repeat(2);
    lines.push(`${head}${fill.slice(0, LINE_BYTES - 1 - head.length)}\n`);
  }
  const buf = Buffer.from(lines.join(''), 'ascii');
  if (buf.length !== PATTERN_BYTES) throw new Error(`pattern is ${buf.length} bytes`);
  return buf;
}

let cachedPatterns = null;
/** { out, err }: the two patterns (Buffers of 1 MiB, never equal). */
function patterns() {
  if (!cachedPatterns) cachedPatterns = { out: makePattern('out'), err: makePattern('ERR') };
  return cachedPatterns;
}

const shQuote = (s) => `'${s.replace(/'/g, `'\\''`)}'`;

/**
 * The step script for the pod work folder `podWork` (absolute). sh and
 * coreutils only. `chunks` (a divisor of 1 MiB that leaves whole 64-byte
 * lines) and `pauseS` set its length: (chunks - 1) * pauseS seconds and a bit.
 */
function stepScript(podWork, { chunks = CHUNKS, pauseS = CHUNK_PAUSE } = {}) {
  const chunkBytes = PATTERN_BYTES / chunks;
  if (!Number.isInteger(chunks) || chunks < 1 || !Number.isInteger(chunkBytes) || chunkBytes % LINE_BYTES) throw new RangeError(`chunks must divide ${PATTERN_BYTES} into whole lines, got ${chunks}`);
  const pause = String(pauseS);
  if (!/^\d+(\.\d+)?$/.test(pause)) throw new RangeError(`pauseS must be a plain number of seconds, got ${JSON.stringify(pauseS)}`);
  const w = shQuote(podWork);
  return [
    `w=${w}`,
    'echo "start $$" >> "$w/marker"',
    'i=0',
    `while [ "$i" -lt ${chunks} ]; do`,
    `  dd if="$w/repo/repo/pattern.out" bs=${chunkBytes} skip="$i" count=1 status=none`,
    `  dd if="$w/repo/repo/pattern.err" bs=${chunkBytes} skip="$i" count=1 status=none >&2`,
    '  i=$((i + 1))',
    `  if [ "$i" -lt ${chunks} ]; then sleep ${pause}; fi`,
    'done',
    'echo "end ${STEP_EXIT:-0}" >> "$w/ended"',
    'exit "${STEP_EXIT:-0}"',
    '',
  ].join('\n');
}

// ---- what the hook printed ----------------------------------------------------------

/**
 * The package's own lines, stripped wherever they are (also mid-line: each is
 * written whole in one write, so it can land between two pieces of a line of
 * the script's output).
 */
const OUR_LINES = [/::warning::the exec stream of pod [^\n]*\n/g, /::debug::[^\n]*\n/g, /reattached to the script in pod [^\n]*\n/g];

function stripOurLines(text) {
  let out = text;
  for (const re of OUR_LINES) out = out.replace(re, '');
  return out;
}

/** The package's own lines in `text`, in order of the patterns. */
function ourLines(text) {
  return OUR_LINES.flatMap((re) => text.match(re) || []).map((l) => l.trimEnd());
}

// The consumer's lines after the script's output (job.ts, steps.ts), found at its end, also mid-line.
const TRAILER = /(?:job step ok: [^\n]*\n|::error::[^\n]*\n|::warning::Failed to copy _temp from pod\n)*$/;

/**
 * The script's stdout as the hook printed it: what follows the consumer's
 * `script exec: [...]` line, without the package's lines and without the
 * consumer's own last lines. null when the script exec never started.
 */
function scriptStdout(hookStdout) {
  const m = /(?:^|\n)script exec: \[[^\n]*\]\n/.exec(hookStdout);
  if (!m) return null;
  return stripOurLines(hookStdout.slice(m.index + m[0].length)).replace(TRAILER, '');
}

/** The script's stderr as the hook printed it (the hook prints nothing else there), without the package's lines. */
function scriptStderr(hookStderr) {
  return stripOurLines(hookStderr);
}

/** null when `got` (a string) is `want` (a Buffer) byte for byte, else a short account of the first difference. */
function compareOutput(what, got, want) {
  if (got === null) return `${what}: the script exec never started`;
  const g = Buffer.from(got, 'latin1');
  if (g.equals(want)) return null;
  let at = 0;
  while (at < g.length && at < want.length && g[at] === want[at]) at++;
  const show = (b) => JSON.stringify(b.subarray(Math.max(0, at - 80), at + 80).toString('latin1'));
  return `${what}: ${g.length} bytes, want ${want.length}; first difference at byte ${at}\n  got:  ${show(g)}\n  want: ${show(want)}`;
}

// ---- the apiserver in the namespace --------------------------------------------------

/**
 * Starts netns-job-server.js inside `ns` with its pods under `podRoot`.
 * Resolves { port, kubeconfig, call(op, args) -> result, close(), proc }.
 */
async function startNsServer(ns, { podRoot, dir, podRunningAfterMs = 500, podMounts = [], maxRunMs }) {
  const kubeconfig = path.join(dir, 'kubeconfig');
  const proc = ns.spawnNode([SERVER_SCRIPT, JSON.stringify({ podRoot, kubeconfig, podRunningAfterMs, podMounts, maxRunMs })]);
  const ready = JSON.parse(await proc.waitForLine((l) => l.startsWith('{"ev":"ready"'), READY_TIMEOUT_MS));
  let nextId = 0;
  const call = async (op, args = {}) => {
    const id = ++nextId;
    const from = proc.lines.length;
    proc.send(JSON.stringify({ id, op, ...args }));
    const line = await proc.waitForLine((l) => l.startsWith(`{"id":${id},`), RPC_TIMEOUT_MS, from);
    const reply = JSON.parse(line);
    if (!reply.ok) throw new Error(`server ${op}: ${reply.error}`);
    return reply.result;
  };
  const close = async () => {
    if (proc.child.exitCode !== null || proc.child.signalCode !== null) return;
    try {
      await call('close');
    } catch {
      // it may exit before it answers
    }
    await Promise.race([proc.exited, sleep(5000)]);
    proc.kill('SIGKILL');
  };
  return { port: ready.port, kubeconfig, call, close, proc };
}

// ---- one job ---------------------------------------------------------------------------

function newRunnerName() {
  return `runner-${crypto.randomBytes(3).toString('hex')}`;
}

/** Runs one hook process inside `ns`; resolves { code, signal, stdout, stderr (whole), ms, timedOut, proc }. */
function runHook(ns, { bundleDir, env, input, timeoutMs, onStart }) {
  const startedAt = performance.now();
  const proc = ns.spawn(process.execPath, ['index.js'], { cwd: bundleDir, env });
  let stdout = '';
  let stderr = '';
  // netns.js caps what it keeps; the whole output is kept here (setEncoding is already utf8 there).
  proc.child.stdout.on('data', (d) => (stdout += d));
  proc.child.stderr.on('data', (d) => (stderr += d));
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    proc.kill('SIGKILL');
  }, timeoutMs);
  proc.child.stdin.end(JSON.stringify(input));
  if (onStart) onStart(proc);
  return proc.exited.then(({ code, signal }) => {
    clearTimeout(timer);
    return { code, signal, stdout, stderr, timedOut, ms: Math.round(performance.now() - startedAt), proc };
  });
}

/**
 * What a hook's output says: ok (exit 0 and the consumer's `job step ok`
 * line), green (exit 0: all the runner looks at), and its ::error:: message
 * (found anywhere: it may follow a piece of a line). A hook that exits 0
 * without the line ended with its work unsettled (its event loop ran empty):
 * not ok here, but green to the runner.
 */
function readStep(r) {
  const ok = r.code === 0 && /^job step ok: \S+$/m.test(r.stdout);
  const green = r.code === 0;
  const errors = [...r.stdout.matchAll(/::error::([^\n]*)/g)];
  let message = errors.length ? errors.at(-1)[1] : null;
  if (!ok && !message) {
    if (green) message = "exit 0 WITHOUT the consumer's 'job step ok' line (the process ended with its work unsettled; the runner would count it green)";
    else message = r.timedOut ? 'timed out (killed)' : `exit ${r.code}${r.signal ? ` ${r.signal}` : ''}: ${r.stderr.trim().split('\n').pop() || ''}`;
  }
  return { ok, green, message };
}

/**
 * One whole job (prepare_job, one run_script_step, cleanup_job) in `ns`
 * against `server` (startNsServer). `during` ({ [label]: async (ctx) => any })
 * runs beside the hook process of that step ('prepare', 'script', 'cleanup');
 * ctx: { ns, server, proc (the hook process), podFolder, podWork, runner, pod,
 * startedAtMs, waitForScriptStart(timeoutMs), waitForExec(predicate,
 * timeoutMs) }. What it resolves (or the Error it threw) is in the result's
 * `during`. `exitCode` is the script's; `extraFiles(workspaceDir)` may add
 * files to the workspace (copied into the pod by prepare_job); `script`
 * ({ chunks, pauseS }, stepScript) makes the script longer or shorter.
 */
async function runNsJob({ ns, server, bundleDir, podRoot, env = {}, stepTimeoutMs, exitCode = 0, during = {}, extraFiles, script: scriptShape, runner = newRunnerName() }) {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'durable-job-'));
  const work = path.join(base, '_work');
  const home = path.join(base, 'home');
  const workspace = path.join(work, 'repo', 'repo');
  fs.mkdirSync(workspace, { recursive: true });
  fs.mkdirSync(path.join(work, '_temp', '_runner_file_commands'), { recursive: true });
  fs.mkdirSync(home, { recursive: true });
  const pod = `${runner}-workflow`;
  const podFolder = path.join(podRoot, encodeURIComponent(NAMESPACE), encodeURIComponent(pod));
  const podWork = path.join(podFolder, 'w');
  const { out, err } = patterns();
  fs.writeFileSync(path.join(workspace, 'README.md'), `the workspace of ${runner}\n`);
  fs.writeFileSync(path.join(workspace, 'pattern.out'), out);
  fs.writeFileSync(path.join(workspace, 'pattern.err'), err);
  fs.writeFileSync(path.join(workspace, 'step.sh'), stepScript(podWork, scriptShape));
  if (extraFiles) extraFiles(workspace);

  const stepEnv = {
    PATH: process.env.PATH,
    HOME: home,
    KUBECONFIG: server.kubeconfig,
    RUNNER_TEMP: path.join(work, '_temp'),
    RUNNER_WORKSPACE: path.join(work, 'repo'),
    ACTIONS_RUNNER_POD_NAME: runner,
    ACTIONS_RUNNER_KUBERNETES_NAMESPACE: NAMESPACE,
    JOB_CLIENTS: 'resilient',
    JOB_POD_WORK: podWork,
    ...env,
  };
  const labels = [
    { label: 'prepare', command: 'prepare_job' },
    { label: 'script', command: 'run_script_step' },
    { label: 'cleanup', command: 'cleanup_job' },
  ];
  const jobStartedAt = performance.now();
  const steps = [];
  const duringResults = {};
  let failed = null;
  let state = null;
  let podAfterPrepare = null;
  try {
    for (const step of labels) {
      if (failed && step.command !== 'cleanup_job') {
        steps.push({ label: step.label, skipped: true });
        continue;
      }
      const responseFile = path.join(work, '_temp', '_runner_hook_responses', `${step.command}.json`);
      const input = { command: step.command, responseFile, state: state || {}, args: {} };
      if (step.command === 'prepare_job') input.args = { container: { image: 'node:20' } };
      if (step.command === 'run_script_step') {
        input.args = {
          entryPoint: 'sh',
          entryPointArgs: ['-e', `${podWork}/repo/repo/step.sh`],
          environmentVariables: { STEP_EXIT: String(exitCode) },
          workingDirectory: `${podWork}/repo/repo`,
        };
      }
      let side = null;
      const stepStartedAt = performance.now();
      const r = await runHook(ns, {
        bundleDir,
        env: stepEnv,
        input,
        timeoutMs: stepTimeoutMs,
        onStart: (proc) => {
          const fn = during[step.label];
          if (!fn) return;
          const ctx = {
            ns,
            server,
            proc,
            runner,
            pod,
            podFolder,
            podWork,
            startedAtMs: stepStartedAt,
            waitForScriptStart: (timeoutMs) => waitForFile(path.join(podWork, 'marker'), timeoutMs, proc),
            waitForExec: (predicate, timeoutMs) => waitForExec(server, predicate, timeoutMs, proc),
          };
          side = Promise.resolve()
            .then(() => fn(ctx))
            .then(
              (value) => ({ ok: true, value }),
              (error) => ({ ok: false, error }),
            );
        },
      });
      if (side) duringResults[step.label] = await side;
      const read = readStep(r);
      steps.push({ label: step.label, ...read, code: r.code, signal: r.signal, timedOut: r.timedOut, ms: r.ms, stdout: r.stdout, stderr: r.stderr, endedAtMs: performance.now() });
      if (read.green && step.command === 'prepare_job') {
        if (fs.existsSync(responseFile)) state = JSON.parse(fs.readFileSync(responseFile, 'utf8')).state;
        podAfterPrepare = (await server.call('objects', { resource: 'pods' })).includes(`${NAMESPACE}/${pod}`);
      }
      if (!read.ok && !failed) failed = { step: step.label, message: read.message };
    }
  } finally {
    fs.rmSync(base, { recursive: true, force: true });
  }
  const execs = await server.call('execs');
  const markerFile = path.join(podWork, 'marker');
  const markerLines = fs.existsSync(markerFile) ? fs.readFileSync(markerFile, 'utf8').split('\n').filter(Boolean) : [];
  const script = steps.find((s) => s.label === 'script');
  return {
    runner,
    pod,
    podFolder,
    podWork,
    ok: !failed,
    failedStep: failed ? failed.step : null,
    message: failed ? failed.message : null,
    steps,
    during: duringResults,
    state,
    podAfterPrepare,
    execs,
    markerLines,
    scriptStdout: script && !script.skipped ? scriptStdout(script.stdout) : null,
    scriptStderr: script && !script.skipped ? scriptStderr(script.stderr) : null,
    leftPods: (await server.call('objects', { resource: 'pods' })).filter((n) => n === `${NAMESPACE}/${pod}`),
    ms: Math.round(performance.now() - jobStartedAt),
  };
}

/** Resolves performance.now() once `file` exists; rejects after `timeoutMs` or when `proc` ended first. */
async function waitForFile(file, timeoutMs, proc) {
  const until = performance.now() + timeoutMs;
  for (;;) {
    if (fs.existsSync(file)) return performance.now();
    if (proc.child.exitCode !== null || proc.child.signalCode !== null) throw new Error(`the hook process ended before ${file} appeared`);
    if (performance.now() > until) throw new Error(`${file} did not appear within ${timeoutMs} ms`);
    await sleep(POLL_MS);
  }
}

/** Resolves { exec, atMs } for the first exec in the server's log that matches; bounded like waitForFile. */
async function waitForExec(server, predicate, timeoutMs, proc) {
  const until = performance.now() + timeoutMs;
  for (;;) {
    const exec = (await server.call('execs')).find(predicate);
    if (exec) return { exec, atMs: performance.now() };
    if (proc.child.exitCode !== null || proc.child.signalCode !== null) throw new Error('the hook process ended before the exec came');
    if (performance.now() > until) throw new Error(`no such exec within ${timeoutMs} ms`);
    await sleep(POLL_MS * 2);
  }
}

// ---- telling what happened ----------------------------------------------------------------

/** The execs of the step script: those whose command names the step's wrapper script (…/_temp/<uuid>.sh). */
function scriptExecs(j) {
  return j.execs.filter((e) => /\/_temp\/[0-9a-f-]{36}\.sh\b/.test(e.command.join(' ')));
}

function tail(text, lines = 12) {
  return stripOurLines(text || '')
    .split('\n')
    .slice(-lines)
    .map((l) => (l.length > 160 ? `${l.slice(0, 160)}…` : l))
    .join('\n');
}

/** A job's account for a failure message: steps, their last lines and the package's lines, the marker, the exec log. */
function describeJob(j) {
  const lines = [`job ${j.runner} ${j.ok ? 'ok' : `failed in ${j.failedStep}: ${j.message}`} (${j.ms} ms)`];
  for (const s of j.steps) {
    if (s.skipped) {
      lines.push(`- ${s.label}: skipped`);
      continue;
    }
    lines.push(`- ${s.label}: ${s.ok ? 'ok' : `FAILED ${s.message}`} (exit ${s.code}${s.signal ? ` ${s.signal}` : ''}, ${s.ms} ms, stdout ${s.stdout.length} chars, stderr ${s.stderr.length} chars)`);
    const ours = ourLines(s.stdout).concat(ourLines(s.stderr));
    if (ours.length) lines.push(`  package lines:\n    ${ours.slice(0, 20).join('\n    ')}`);
    lines.push(`  last stdout lines:\n    ${tail(s.stdout).split('\n').join('\n    ')}`);
    if (s.stderr) lines.push(`  last stderr lines:\n    ${tail(s.stderr, 4).split('\n').join('\n    ')}`);
  }
  for (const [label, d] of Object.entries(j.during)) lines.push(`- during ${label}: ${d.ok ? JSON.stringify(d.value) : `threw ${d.error && d.error.message}`}`);
  lines.push(`- marker: ${JSON.stringify(j.markerLines)}`);
  lines.push('- exec log:');
  for (const e of j.execs) {
    const command = e.command.join(' ');
    lines.push(`    ${command.length > 120 ? `${command.slice(0, 120)}…` : command} -> ${e.outcome}, exit ${e.exitCode}${e.signal ? ` ${e.signal}` : ''}${e.killedBy ? ` killed by ${e.killedBy}` : ''}, close ${e.closeCode}, pid ${e.pid}${e.stdinRequested ? `, stdin ${e.stdinBytes} bytes` : ''}`);
  }
  return lines.join('\n');
}

module.exports = {
  CHUNK_BYTES,
  CHUNKS,
  PATTERN_BYTES,
  patterns,
  stepScript,
  stripOurLines,
  ourLines,
  scriptStdout,
  scriptStderr,
  compareOutput,
  startNsServer,
  runNsJob,
  scriptExecs,
  describeJob,
  newRunnerName,
  waitForFile,
  waitForExec,
  sleep,
};

'use strict';
// The real chaos run: real hook processes (the hooks-shaped TypeScript
// consumer of tests/consumer, bundled with @vercel/ncc into one index.js plus
// the .wasm) against the loopback apiserver (tests/support/apiserver.js, run
// as its own process), through a compressed replay of the 2026-10-21
// incident: healthy, connections refused, transient 403s for a share of
// requests, healthy again. Prints the simulator's columns, computed from the
// apiserver's own request log and what each process reported, next to the
// simulator (examples/replay) run on the very same fleet schedule, and says
// whether the two agree.
//
//   node bench/chaos.js [--processes 40] [--jobs N] [--script-steps 1]
//       [--scale 0.2] [--stall-ms 5000] [--forbidden-ms 600]
//       [--forbidden-share 0.5] [--start-spread-ms 36000] [--stall-at-ms 24000]
//       [--step-work-ms 1000-8000] [--seed 1] [--limit-s 120]
//       [--prepare] [--no-sim] [--keep] [--write]
//
// --keep leaves the run folder (the apiserver's request log, every hook
// process's output, the simulator's plan) and prints where it is.
//
// Model (as the simulator's): each job is prepare_job, --script-steps
// run_script_step steps and cleanup_job, every step a fresh `node index.js`
// sharing the job's RUNNER_TEMP (so later steps can use the job's cached
// verdict); a failed step skips the job's remaining script steps, cleanup
// still runs. Jobs start at seeded random offsets over --start-spread-ms;
// the work between two steps is a seeded random gap in --step-work-ms.
// One script step by default, not the incident's 10: after a job's first
// check its steps answer from the cached verdict with no request, so more
// script steps add only CPU load (each hook process spends ~0.35 s of CPU
// loading the 16 MB bundle, mostly @kubernetes/client-node), which on a
// 2-core machine stretches every process's start-up (see the CPU-BOUND line).
//
// The simulator gets the same fleet: the job starts and step gaps (the plan)
// and, per step, how long the real process took from when it was due to its
// check and from its verdict to its end. It runs twice: with the request
// latency this run measured (the interquartile range of its one-request
// checks outside the fault windows) and with its own default (5-20 ms); it
// draws latencies and jitter itself. The first has to agree with the real
// run on steps failed, requests per job and, roughly, the recovery peak
// (tolerances are printed with the verdict).
//
// --scale multiplies the policy's time settings (base delay 1000 ms, max
// delay 8000 ms, request timeout 10000 ms, deadline 90000 ms); the scenario
// times default to the incident's (start spread 180 s, stall at 120 s for
// 25 s, 403s for 3 s, step work 5-40 s) times the same scale. 0.2 by
// default (5x compressed, ~50 s): at 0.1 the 40 jobs' processes need more
// CPU than 2 cores have in the shorter window, start-up stretches 3-8x, a
// scaled 1 s request timeout starts to fire under contention, and the real
// run no longer measures the policy alone.
//
// Bounds: at most --processes hook processes at a time (hard cap 200), and
// --jobs <= 200; each process is killed after its deadline + request timeout
// + 15 s; the chaos phase (apiserver + processes) is stopped after --limit-s
// (default 120 s): children killed, apiserver stopped, a partial report
// printed and exit code 3; the apiserver also stops itself (maxRunMs). The
// bundle build (ncc), `tests/js/support/prepare.js` and the simulator run
// have their own timeouts.
//
// Needs: `bash scripts/build.sh` and `node tests/js/support/prepare.js`
// (done automatically when .tools/consumer-1x is missing; --prepare re-runs
// it when the installed package differs from the working tree), and cargo
// for the simulator. Only 127.0.0.1 is used.

const { spawn } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..');
const TOOLS = path.join(ROOT, '.tools');
const CACHE = path.join(TOOLS, 'chaos');
const APISERVER = path.join(ROOT, 'tests', 'support', 'apiserver.js');
const PREPARE = path.join(ROOT, 'tests', 'js', 'support', 'prepare.js');
const CONSUMER_SRC = path.join(ROOT, 'tests', 'consumer');
const NCC = path.join(ROOT, 'node_modules', '@vercel', 'ncc', 'dist', 'ncc', 'cli.js');
const WASM = 'k8s_auth_preflight_bg.wasm';
const CLIENTS = { '1x': '1.4.0', '2x': '2.0.1' };

const HARD_CAP_PROCESSES = 200;
const HARD_CAP_JOBS = 200;
const HARD_CAP_SCRIPT_STEPS = 20;
const BUILD_TIMEOUT_MS = 180_000;
const PREPARE_TIMEOUT_MS = 300_000;
const SIM_TIMEOUT_MS = 300_000;
const SERVER_READY_TIMEOUT_MS = 15_000;
const SERVER_STOP_TIMEOUT_MS = 10_000;
const PROCESS_GRACE_MS = 15_000;
// Resident memory of one hook process (measured: ~125 MB), for the memory check.
const PROCESS_RSS_BYTES = 140 * 1024 * 1024;

// The policy's defaults that --scale compresses (src/config.rs).
const DEFAULTS = {
  ACTIONS_RUNNER_PREFLIGHT_BASE_DELAY_MS: 1000,
  ACTIONS_RUNNER_PREFLIGHT_MAX_DELAY_MS: 8000,
  ACTIONS_RUNNER_PREFLIGHT_REQUEST_TIMEOUT_MS: 10000,
  ACTIONS_RUNNER_PREFLIGHT_DEADLINE_MS: 90000,
};
// The incident's fleet and timeline at full scale (examples/replay/sim.rs).
const INCIDENT = { startSpreadMs: 180_000, stallAtMs: 120_000, stallMs: 25_000, forbiddenMs: 3_000, stepWorkMs: [5_000, 40_000] };

// Agreement tolerances, stated in the output.
const TOLERANCE = {
  // A check that starts about one deadline before recovery fails or not by
  // its jitter draws: allow one such flip, or a quarter of the failures.
  stepsFailed: (real, sim) => Math.max(1, Math.ceil(0.25 * Math.max(real, sim))),
  requestsPerJob: (sim) => Math.max(0.25, 0.2 * sim),
  peak: { factor: 2, plus: 3 },
};

const TOKEN = 'chaos-run-token';
const NAMESPACE = 'ci';
const ROLE = {
  rules: [
    { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'create', 'delete'] },
    { apiGroups: [''], resources: ['pods/exec'], verbs: ['get', 'create'] },
    { apiGroups: [''], resources: ['pods/log'], verbs: ['get', 'list', 'watch'] },
    { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list', 'create', 'delete'] },
  ],
};

// ---------------------------------------------------------------------------
// Arguments

function die(message) {
  process.stderr.write(`chaos: ${message}\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const given = {};
  const flags = new Set(['--write', '--prepare', '--no-sim', '--keep']);
  const valued = new Set([
    '--processes',
    '--jobs',
    '--script-steps',
    '--stall-ms',
    '--forbidden-ms',
    '--forbidden-share',
    '--scale',
    '--start-spread-ms',
    '--stall-at-ms',
    '--step-work-ms',
    '--seed',
    '--limit-s',
  ]);
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (flags.has(a)) given[a] = true;
    else if (valued.has(a)) {
      if (i + 1 >= argv.length) die(`${a} needs a value`);
      given[a] = argv[++i];
    } else die(`unknown argument ${a} (see the header of bench/chaos.js)`);
  }
  const num = (name, fallback, { min, max, integer = true }) => {
    if (given[name] === undefined) return fallback;
    const n = Number(given[name]);
    if (!Number.isFinite(n) || (integer && !Number.isInteger(n)) || n < min || n > max) {
      die(`${name} takes ${integer ? 'a whole number' : 'a number'} from ${min} to ${max}, not ${given[name]}`);
    }
    return n;
  };
  const scale = num('--scale', 0.2, { min: 0.02, max: 1, integer: false });
  const processes = num('--processes', 40, { min: 1, max: HARD_CAP_PROCESSES });
  const o = {
    processes,
    jobs: num('--jobs', Math.min(processes, HARD_CAP_JOBS), { min: 1, max: HARD_CAP_JOBS }),
    scriptSteps: num('--script-steps', 1, { min: 0, max: HARD_CAP_SCRIPT_STEPS }),
    stallMs: num('--stall-ms', Math.round(INCIDENT.stallMs * scale), { min: 0, max: 600_000 }),
    forbiddenMs: num('--forbidden-ms', Math.round(INCIDENT.forbiddenMs * scale), { min: 0, max: 600_000 }),
    forbiddenShare: num('--forbidden-share', 0.5, { min: 0, max: 1, integer: false }),
    scale,
    startSpreadMs: num('--start-spread-ms', Math.round(INCIDENT.startSpreadMs * scale), { min: 0, max: 600_000 }),
    stallAtMs: num('--stall-at-ms', Math.round(INCIDENT.stallAtMs * scale), { min: 0, max: 600_000 }),
    seed: num('--seed', 1, { min: 0, max: Number.MAX_SAFE_INTEGER }),
    limitS: num('--limit-s', 120, { min: 10, max: 1800 }),
    write: Boolean(given['--write']),
    prepare: Boolean(given['--prepare']),
    sim: !given['--no-sim'],
    keep: Boolean(given['--keep']),
  };
  if (given['--step-work-ms'] === undefined) {
    o.stepWorkMs = INCIDENT.stepWorkMs.map((ms) => Math.round(ms * scale));
  } else {
    const m = /^(\d+)-(\d+)$/.exec(given['--step-work-ms']);
    if (!m || Number(m[1]) > Number(m[2]) || Number(m[2]) > 600_000) die('--step-work-ms takes LOW-HIGH in ms (HIGH <= 600000)');
    o.stepWorkMs = [Number(m[1]), Number(m[2])];
  }
  o.settings = {};
  for (const [name, ms] of Object.entries(DEFAULTS)) o.settings[name] = Math.round(ms * scale);
  return o;
}

// ---------------------------------------------------------------------------
// Small helpers

const sha256 = (data) => crypto.createHash('sha256').update(data).digest('hex');

/** Sleeps `ms`, or less when the run is stopped (the watchdog wakes every sleeper). */
function sleep(control, ms) {
  if (control.stopped) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      control.sleepers.delete(done);
      resolve();
    };
    const timer = setTimeout(done, Math.max(0, ms));
    control.sleepers.add(done);
  });
}

/** Nearest-rank percentile, as the simulator's (0 when empty). */
function percentile(values, p) {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(Math.max(rank, 1), sorted.length) - 1];
}

const secs = (ms) => `${(ms / 1000).toFixed(1)} s`;

/** SplitMix64, seeded: the fleet plan's randomness (reproducible per --seed). */
function seededRandom(seed) {
  const MASK = (1n << 64n) - 1n;
  let state = BigInt(seed) & MASK;
  const next = () => {
    state = (state + 0x9e3779b97f4a7c15n) & MASK;
    let z = state;
    z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & MASK;
    z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & MASK;
    return z ^ (z >> 31n);
  };
  /** A whole number in [low, high]. */
  return (low, high) => low + Number(next() % BigInt(high - low + 1));
}

/**
 * Runs a command to completion, killing it (SIGKILL) after `timeoutMs`.
 * Resolves { code, signal, stdout, stderr, timedOut, spawnedAt, endedAt }.
 */
function run(command, args, { cwd, env, input = '', timeoutMs, track }) {
  return new Promise((resolve) => {
    const spawnedAt = Date.now();
    let child;
    try {
      child = spawn(command, args, { cwd, env, stdio: ['pipe', 'pipe', 'pipe'] });
    } catch (e) {
      resolve({ code: null, signal: null, stdout: '', stderr: String(e), timedOut: false, spawnedAt, endedAt: Date.now() });
      return;
    }
    if (track) track.add(child);
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.stdout.setEncoding('utf8').on('data', (d) => {
      if (stdout.length < 1_000_000) stdout += d;
    });
    child.stderr.setEncoding('utf8').on('data', (d) => {
      if (stderr.length < 1_000_000) stderr += d;
    });
    let settled = false;
    const finish = (code, signal, extra = '') => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (track) track.delete(child);
      resolve({ code, signal, stdout, stderr: stderr + extra, timedOut, spawnedAt, endedAt: Date.now() });
    };
    child.on('error', (e) => finish(null, null, String(e)));
    child.on('close', (code, signal) => finish(code, signal));
    child.stdin.on('error', () => {}); // a child that dies early closes its stdin
    child.stdin.end(input);
  });
}

// ---------------------------------------------------------------------------
// The installed package and the bundle

function flavourOf() {
  const major = Number(process.versions.node.split('.')[0]);
  const flavour = process.env.PREFLIGHT_CLIENT || (major >= 22 ? '2x' : '1x');
  if (!CLIENTS[flavour]) die(`PREFLIGHT_CLIENT must be one of ${Object.keys(CLIENTS).join(', ')}`);
  return flavour;
}

/** Files of the working tree that the packed package ships, and whether the installed copy matches. */
function installState(consumerDir) {
  const installed = path.join(consumerDir, 'node_modules', 'k8s-auth-preflight');
  const stamp = path.join(consumerDir, '.installed');
  if (!fs.existsSync(stamp) || !fs.existsSync(path.join(installed, 'package.json'))) return { present: false, differing: [] };
  const files = [
    ...['k8s_auth_preflight.js', WASM].map((f) => path.join('pkg', f)),
    ...fs.readdirSync(path.join(ROOT, 'js-shim')).map((f) => path.join('js-shim', f)),
  ];
  const differing = files.filter((f) => {
    const here = path.join(ROOT, f);
    const there = path.join(installed, f);
    if (!fs.existsSync(here)) return false;
    return !fs.existsSync(there) || sha256(fs.readFileSync(here)) !== sha256(fs.readFileSync(there));
  });
  return { present: true, differing, stamp: fs.readFileSync(stamp, 'utf8').trim() };
}

/** The folder files of the consumer project: its sources and tsconfig. */
function consumerSources() {
  const out = [];
  const walk = (dir) => {
    for (const name of fs.readdirSync(dir).sort()) {
      const full = path.join(dir, name);
      if (fs.statSync(full).isDirectory()) walk(full);
      else out.push(full);
    }
  };
  walk(path.join(CONSUMER_SRC, 'src'));
  out.push(path.join(CONSUMER_SRC, 'tsconfig.json'));
  return out;
}

/**
 * The ncc bundle of tests/consumer for this installed package, built once
 * and cached under .tools/chaos/ by the packed tarball's hash (the
 * consumer's .installed stamp), the consumer's sources and ncc's version.
 */
async function bundle(consumerDir, flavour, stamp, notes) {
  const nccVersion = JSON.parse(fs.readFileSync(path.join(ROOT, 'node_modules', '@vercel', 'ncc', 'package.json'), 'utf8')).version;
  const hash = crypto.createHash('sha256');
  hash.update(`${stamp}\n${nccVersion}\n${process.version}\n`);
  for (const file of consumerSources()) hash.update(`${path.relative(ROOT, file)}\n`).update(fs.readFileSync(file));
  const key = hash.digest('hex').slice(0, 16);
  const dir = path.join(CACHE, `bundle-${flavour}-${key}`);
  if (fs.existsSync(path.join(dir, 'index.js')) && fs.existsSync(path.join(dir, WASM))) {
    notes.push(`bundle: cached ${path.relative(ROOT, dir)}`);
    return dir;
  }
  const project = fs.mkdtempSync(path.join(os.tmpdir(), 'preflight-chaos-build-'));
  try {
    fs.cpSync(path.join(CONSUMER_SRC, 'src'), path.join(project, 'src'), { recursive: true });
    fs.copyFileSync(path.join(CONSUMER_SRC, 'tsconfig.json'), path.join(project, 'tsconfig.json'));
    fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'hooks-consumer', private: true }));
    const modules = path.join(project, 'node_modules');
    const source = path.join(consumerDir, 'node_modules');
    fs.mkdirSync(path.join(modules, '@types'), { recursive: true });
    for (const name of fs.readdirSync(source)) {
      if (name === '@types' || name.startsWith('.')) continue;
      fs.symlinkSync(path.join(source, name), path.join(modules, name));
    }
    if (fs.existsSync(path.join(source, '@types'))) {
      for (const name of fs.readdirSync(path.join(source, '@types'))) {
        if (name !== 'node') fs.symlinkSync(path.join(source, '@types', name), path.join(modules, '@types', name));
      }
    }
    fs.symlinkSync(path.join(ROOT, 'node_modules', '@types', 'node'), path.join(modules, '@types', 'node'));
    fs.symlinkSync(path.join(ROOT, 'node_modules', 'typescript'), path.join(modules, 'typescript'));
    const started = Date.now();
    const build = await run(process.execPath, [NCC, 'build', 'src/index.ts', '-o', 'dist', '--no-cache'], {
      cwd: project,
      env: process.env,
      timeoutMs: BUILD_TIMEOUT_MS,
    });
    if (build.code !== 0 || !fs.existsSync(path.join(project, 'dist', WASM))) {
      throw new Error(`ncc build failed (exit ${build.code}${build.timedOut ? ', timed out' : ''}):\n${build.stdout}${build.stderr}`);
    }
    // Replace older bundles of this client flavour; write the new one under
    // a temporary name, then rename.
    fs.mkdirSync(CACHE, { recursive: true });
    for (const name of fs.readdirSync(CACHE)) {
      if (name.startsWith(`bundle-${flavour}-`)) fs.rmSync(path.join(CACHE, name), { recursive: true, force: true });
    }
    const staging = `${dir}.tmp-${process.pid}`;
    fs.cpSync(path.join(project, 'dist'), staging, { recursive: true });
    fs.renameSync(staging, dir);
    notes.push(`bundle: built ${path.relative(ROOT, dir)} with ncc ${nccVersion} in ${secs(Date.now() - started)}`);
    return dir;
  } finally {
    fs.rmSync(project, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------
// The fleet plan (shared with the simulator through --plan)

function makePlan(o) {
  const random = seededRandom(o.seed);
  const jobs = [];
  for (let j = 0; j < o.jobs; j++) {
    const startMs = random(0, o.startSpreadMs);
    const gapsMs = [];
    for (let k = 0; k < o.scriptSteps + 1; k++) gapsMs.push(random(o.stepWorkMs[0], o.stepWorkMs[1]));
    jobs.push({ startMs, gapsMs });
  }
  return jobs;
}

function stepCommands(scriptSteps) {
  return ['prepare_job', ...Array.from({ length: scriptSteps }, () => 'run_script_step'), 'cleanup_job'];
}

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

// ---------------------------------------------------------------------------
// The apiserver process

function startServer(work, o, track) {
  const config = {
    token: TOKEN,
    role: ROLE,
    namespace: NAMESPACE,
    kubeconfig: path.join(work, 'kubeconfig'),
    // It stops itself a little after chaos.js would have stopped it.
    maxRunMs: o.limitS * 1000 + 10_000,
    timeline: [
      { phase: 'healthy', ms: o.stallAtMs },
      { phase: 'refuse', ms: o.stallMs },
      { phase: 'forbidden403', ms: o.forbiddenMs, share: o.forbiddenShare },
      { phase: 'healthy' },
    ],
  };
  const configFile = path.join(work, 'apiserver.json');
  const logFile = path.join(work, 'apiserver-log.json');
  fs.writeFileSync(configFile, JSON.stringify(config));
  const child = spawn(process.execPath, [APISERVER, '--config', configFile, '--log', logFile], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  track.add(child);
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d) => {
    if (stderr.length < 100_000) stderr += d;
  });
  const exited = new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal })));
  exited.then(() => track.delete(child));
  const ready = new Promise((resolve, reject) => {
    let buffered = '';
    const timer = setTimeout(() => reject(new Error(`the apiserver did not start within ${SERVER_READY_TIMEOUT_MS} ms: ${stderr}`)), SERVER_READY_TIMEOUT_MS);
    child.stdout.setEncoding('utf8').on('data', (d) => {
      buffered += d;
      const nl = buffered.indexOf('\n');
      if (nl < 0) return;
      clearTimeout(timer);
      try {
        resolve({ ...JSON.parse(buffered.slice(0, nl)), readyAtMs: Date.now() });
      } catch (e) {
        reject(new Error(`the apiserver printed ${buffered.slice(0, nl)}: ${e.message}`));
      }
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      reject(new Error(`the apiserver exited (${code}) before listening: ${stderr}`));
    });
  });
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    const killer = setTimeout(() => child.kill('SIGKILL'), SERVER_STOP_TIMEOUT_MS);
    const end = await exited;
    clearTimeout(killer);
    let log = null;
    try {
      log = JSON.parse(fs.readFileSync(logFile, 'utf8'));
    } catch (e) {
      throw new Error(`no request log from the apiserver (${e.message}); exit ${JSON.stringify(end)}; stderr: ${stderr}`);
    }
    return log;
  };
  return { ready, stop };
}

// ---------------------------------------------------------------------------
// The jobs

/** A counting semaphore: at most `limit` holders. */
function semaphore(limit) {
  let held = 0;
  let peak = 0;
  const waiting = [];
  return {
    async acquire() {
      if (held < limit) {
        held += 1;
        peak = Math.max(peak, held);
        return false;
      }
      await new Promise((resolve) => waiting.push(resolve));
      peak = Math.max(peak, held);
      return true; // had to wait
    },
    release() {
      const next = waiting.shift();
      if (next) next();
      else held -= 1;
    },
    get peak() {
      return peak;
    },
  };
}

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
    spawnedAt: r.spawnedAt,
    endedAt: r.endedAt,
    stdout: r.stdout,
    stderr: r.stderr,
  };
}

async function runJobs(o, plan, runDir, kubeconfig, work, t0, control) {
  const commands = stepCommands(o.scriptSteps);
  const sem = semaphore(o.processes);
  const steps = [];
  let delayedByCap = 0;
  const processTimeoutMs = o.settings.ACTIONS_RUNNER_PREFLIGHT_DEADLINE_MS + o.settings.ACTIONS_RUNNER_PREFLIGHT_REQUEST_TIMEOUT_MS + PROCESS_GRACE_MS;
  const baseEnv = {
    PATH: process.env.PATH,
    KUBECONFIG: kubeconfig,
    ACTIONS_RUNNER_KUBERNETES_NAMESPACE: NAMESPACE,
  };
  for (const [name, ms] of Object.entries(o.settings)) baseEnv[name] = String(ms);

  const job = async (j) => {
    const runnerTemp = path.join(work, `job-${j}`, 'runner-temp');
    fs.mkdirSync(runnerTemp, { recursive: true });
    const env = { ...baseEnv, RUNNER_TEMP: runnerTemp };
    // When this job's next process is due: its start, then each previous
    // process's end plus the gap.
    let dueAt = t0 + plan[j].startMs;
    await sleep(control, dueAt - Date.now());
    let failed = false;
    for (let k = 0; k < commands.length; k++) {
      if (control.stopped) return;
      const isCleanup = k === commands.length - 1;
      if (failed && !isCleanup) continue;
      const waited = await sem.acquire();
      if (waited) delayedByCap += 1;
      if (control.stopped) {
        sem.release();
        return;
      }
      let r;
      try {
        r = await run(process.execPath, ['index.js'], {
          cwd: runDir,
          env,
          input: hookInput(commands[k], j, k),
          timeoutMs: processTimeoutMs,
          track: control.children,
        });
      } finally {
        sem.release();
      }
      const step = { job: j, step: k, command: commands[k], dueAt, ...parseStep(r) };
      steps.push(step);
      if (!step.ok) failed = true;
      if (!isCleanup) {
        dueAt = r.endedAt + plan[j].gapsMs[k];
        await sleep(control, dueAt - Date.now());
      }
    }
  };
  await Promise.all(plan.map((_, j) => job(j)));
  return { steps, delayedByCap, peakProcesses: sem.peak, processTimeoutMs };
}

// ---------------------------------------------------------------------------
// Measures

/** The simulator's columns from the real run. */
function measure(o, steps, log, t0) {
  const history = log.phaseHistory || [];
  const refuse = history.find((p) => p.phase === 'refuse');
  const recoveryEntry = refuse ? history.find((p) => p.atMs >= refuse.atMs && p.phase !== 'refuse') : null;
  const forbidden = history.find((p) => p.phase === 'forbidden403');
  const healthyAgain = forbidden ? history.find((p) => p.atMs >= forbidden.atMs && p.phase === 'healthy') : null;
  const recovery = recoveryEntry ? recoveryEntry.atMs : null;

  const reviews = log.requests.filter((r) => r.kind === 'ssar' || r.kind === 'ssrr');
  const fromBin = recovery === null ? Infinity : Math.floor((recovery - t0) / 1000);
  const perSecond = new Map();
  for (const r of reviews) {
    const bin = Math.floor((r.atMs - t0) / 1000);
    if (bin >= fromBin) perSecond.set(bin, (perSecond.get(bin) || 0) + 1);
  }
  const reports = steps.map((s) => s.report).filter(Boolean);
  const checkMs = reports.filter((r) => r.checkStartedAtMs !== null && r.checkEndedAtMs !== null).map((r) => r.checkEndedAtMs - r.checkStartedAtMs);
  const recoveryToVerdict =
    recovery === null
      ? []
      : reports
          .filter((r) => r.requests > 0 && r.checkStartedAtMs !== null && r.checkEndedAtMs !== null && r.checkStartedAtMs < recovery && r.checkEndedAtMs >= recovery)
          .map((r) => r.checkEndedAtMs - recovery);
  const sent = reports.reduce((n, r) => n + r.requests, 0);
  // Request latency as a hook process sees it (connection, TLS, answer): the
  // one-request checks that ran entirely outside the refused and 403 windows.
  const faultFrom = refuse ? refuse.atMs : Infinity;
  const faultTo = healthyAgain ? healthyAgain.atMs : Infinity;
  const latencyMs = reports
    .filter((r) => r.requests === 1 && r.verdict === 'allowed' && r.checkStartedAtMs !== null && r.checkEndedAtMs !== null)
    .filter((r) => r.checkEndedAtMs < faultFrom || r.checkStartedAtMs >= faultTo)
    .map((r) => r.checkEndedAtMs - r.checkStartedAtMs);
  const withStart = steps.filter((s) => s.report && s.report.checkStartedAtMs !== null);
  return {
    policy: `real: ${o.jobs} jobs of Node processes`,
    steps: steps.length,
    stepsFailed: steps.filter((s) => !s.ok).length,
    falseRbac: steps.filter((s) => s.denialLine).length,
    sent,
    unreported: steps.filter((s) => !s.report).length,
    reached: reviews.length,
    other: log.requests.length - reviews.length,
    requestsPerJob: sent / o.jobs,
    peak: Math.max(0, ...perSecond.values()),
    recoveryToVerdict,
    checkMs,
    latencyMs,
    // From when the process was due (its job's schedule) to its check: spawn
    // and Node start-up, plus any lateness of this script's own timers.
    startupMs: withStart.map((s) => s.report.checkStartedAtMs - s.dueAt),
    exitMs: steps.filter((s) => s.report && s.report.checkEndedAtMs !== null).map((s) => s.endedAt - s.report.checkEndedAtMs),
    processMs: steps.map((s) => s.endedAt - s.spawnedAt),
    warnings: steps.reduce((n, s) => n + s.warnings, 0),
    stepsWithWarnings: steps.filter((s) => s.warnings > 0).length,
    inconclusive: steps.filter((s) => s.inconclusiveLine).length,
    timedOut: steps.filter((s) => s.timedOut).length,
    firstFailures: steps.reduce((m, s) => (s.firstFailure ? { ...m, [s.firstFailure]: (m[s.firstFailure] || 0) + 1 } : m), {}),
    bySource: reports.reduce((m, r) => ({ ...m, [`${r.verdict}/${r.source}`]: (m[`${r.verdict}/${r.source}`] || 0) + 1 }), {}),
    byStatus: reviews.reduce((m, r) => ({ ...m, [r.status]: (m[r.status] || 0) + 1 }), {}),
    phases: {
      refuseAt: refuse ? refuse.atMs - t0 : null,
      recoveryAt: recovery === null ? null : recovery - t0,
      healthyAt: healthyAgain ? healthyAgain.atMs - t0 : null,
    },
  };
}

function row(m) {
  const rtv = m.recoveryToVerdict.length === 0 ? '-' : `${secs(percentile(m.recoveryToVerdict, 50))} / ${secs(percentile(m.recoveryToVerdict, 99))}`;
  const sent = m.unreported > 0 ? `${m.sent} (+ ${m.unreported} steps without a report)` : `${m.sent}`;
  return `| ${m.policy} | ${m.stepsFailed} of ${m.steps} | ${m.falseRbac} | ${sent} | ${m.reached} | ${m.requestsPerJob.toFixed(1)} | ${m.peak} | ${rtv} | ${secs(percentile(m.checkMs, 99))} / ${secs(Math.max(0, ...m.checkMs))} |`;
}

const TABLE_HEAD =
  '| run | steps failed | false "missing permission" | review requests sent | reached apiserver | requests/job | peak req/s after recovery | recovery->verdict p50 / p99 | check time p99 / max |\n' +
  '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |';

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

/**
 * The plan as the simulator takes it, with each step's measured start-up
 * (from when it was due to its check) and exit (verdict to process end);
 * steps the real run did not get to take the medians.
 */
function calibrated(plan, steps, o, startupMs, exitMs) {
  const jobs = plan.map((job) => ({
    ...job,
    startupsMs: Array(o.scriptSteps + 2).fill(startupMs),
    exitsMs: Array(o.scriptSteps + 2).fill(exitMs),
  }));
  for (const s of steps) {
    if (!s.report || s.report.checkStartedAtMs === null || s.report.checkEndedAtMs === null) continue;
    jobs[s.job].startupsMs[s.step] = Math.max(0, s.report.checkStartedAtMs - s.dueAt);
    jobs[s.job].exitsMs[s.step] = Math.max(0, s.endedAt - s.report.checkEndedAtMs);
  }
  return jobs;
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
    const r = await run(process.execPath, ['index.js'], {
      cwd: runDir,
      env: { PATH: process.env.PATH, KUBECONFIG: kubeconfig, RUNNER_TEMP: work },
      input: '{}',
      timeoutMs: 30_000,
      track: control.children,
    });
    if (/^::error::unknown hook command/m.test(r.stdout)) times.push(r.endedAt - r.spawnedAt);
  }
  return times.length ? percentile(times, 50) : null;
}

// ---------------------------------------------------------------------------
// Main

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const wallStart = Date.now();
  const need = Math.min(o.processes, o.jobs) * PROCESS_RSS_BYTES;
  if (need > 0.8 * os.freemem()) {
    die(`--processes ${o.processes} needs about ${(need / 2 ** 30).toFixed(1)} GiB (${PROCESS_RSS_BYTES >> 20} MiB per hook process); only ${(os.freemem() / 2 ** 30).toFixed(1)} GiB free`);
  }
  const notes = [];
  const out = [];
  const say = (line = '') => {
    out.push(line);
    process.stdout.write(`${line}\n`);
  };

  // Children of this process, killed on any exit.
  const control = { stopped: false, children: new Set(), sleepers: new Set(), work: null };
  process.on('exit', () => {
    for (const child of control.children) child.kill('SIGKILL');
    if (control.work) fs.rmSync(control.work, { recursive: true, force: true });
  });
  for (const signal of ['SIGINT', 'SIGTERM']) {
    process.on(signal, () => {
      for (const child of control.children) child.kill('SIGKILL');
      process.exit(130);
    });
  }

  // 1. The installed package, and the bundle.
  const flavour = flavourOf();
  const consumerDir = path.join(TOOLS, `consumer-${flavour}`);
  let state = installState(consumerDir);
  if (!state.present || (o.prepare && state.differing.length > 0)) {
    process.stderr.write(`chaos: running ${path.relative(ROOT, PREPARE)} (pack and install the package) ...\n`);
    const r = await run(process.execPath, [PREPARE], { cwd: ROOT, env: process.env, timeoutMs: PREPARE_TIMEOUT_MS, track: control.children });
    if (r.code !== 0) die(`prepare failed (exit ${r.code}${r.timedOut ? ', timed out' : ''}):\n${r.stdout}${r.stderr}`);
    state = installState(consumerDir);
    if (!state.present) die(`${consumerDir} still has no installed package`);
  }
  const tarball = state.stamp.split(' ')[0];
  const stale =
    state.differing.length > 0
      ? `NOTE: the installed package differs from the working tree (${state.differing.join(', ')}); run with --prepare to re-pack and re-install it`
      : null;
  const bundleDir = await bundle(consumerDir, flavour, state.stamp, notes);
  const clientVersion = JSON.parse(fs.readFileSync(path.join(consumerDir, 'node_modules', '@kubernetes', 'client-node', 'package.json'), 'utf8')).version;

  // 2. The simulator, compiled before the chaos phase so cargo does not compete with it.
  if (o.sim) {
    process.stderr.write('chaos: cargo build --release --example replay ...\n');
    const b = await run('cargo', ['build', '--release', '--quiet', '--example', 'replay'], {
      cwd: ROOT,
      env: process.env,
      timeoutMs: SIM_TIMEOUT_MS,
      track: control.children,
    });
    if (b.code !== 0) {
      die(`cargo build --example replay failed (exit ${b.code}${b.timedOut ? ', timed out' : ''}; --no-sim runs without the simulator):\n${b.stderr}`);
    }
  }

  // 3. The chaos phase: a run folder with no node_modules above it, the apiserver, the jobs.
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'preflight-chaos-'));
  control.work = work;
  const runDir = path.join(work, 'hook');
  fs.cpSync(bundleDir, runDir, { recursive: true });
  const plan = makePlan(o);
  const idleMs = await idleStartup(runDir, work, control, 3);
  const loadBefore = os.loadavg()[0];
  let aborted = false;
  const phaseStart = Date.now();
  const before = new Set(control.children);
  const server = startServer(work, o, control.children);
  const serverChild = [...control.children].find((c) => !before.has(c));
  const watchdog = setTimeout(() => {
    aborted = true;
    control.stopped = true;
    process.stderr.write(`chaos: the wall-clock limit of ${o.limitS} s was reached; stopping every hook process\n`);
    for (const child of control.children) if (child !== serverChild) child.kill('SIGKILL');
    for (const wake of [...control.sleepers]) wake();
  }, o.limitS * 1000);
  // Last resort: if stopping itself hangs, exit anyway.
  const hardStop = setTimeout(() => {
    process.stderr.write('chaos: could not stop cleanly; exiting\n');
    process.exit(3);
  }, o.limitS * 1000 + 30_000);
  hardStop.unref();

  let result;
  let log;
  let t0;
  try {
    const ready = await server.ready;
    t0 = ready.readyAtMs;
    process.stderr.write(`chaos: apiserver at ${ready.url}; ${o.jobs} jobs x ${o.scriptSteps + 2} steps starting ...\n`);
    result = await runJobs(o, plan, runDir, ready.kubeconfig, work, t0, control);
  } finally {
    clearTimeout(watchdog);
    log = await server.stop().catch((e) => {
      process.stderr.write(`chaos: ${e.message}\n`);
      return null;
    });
  }
  const phaseMs = Date.now() - phaseStart;
  if (!log) die('the apiserver left no request log');
  const real = measure(o, result.steps, log, t0);

  // 4. The simulator on the same plan, told each process's measured start-up
  // and exit time; twice: with the request latency measured in this run (the
  // interquartile range of the one-request checks outside the fault windows)
  // and with its own default (5-20 ms).
  const sims = [];
  if (o.sim && aborted) notes.push('the simulator was not run: the real run is partial');
  if (o.sim && !aborted) {
    const planFile = path.join(work, 'plan.json');
    const startupMs = Math.round(percentile(real.startupMs, 50));
    const exitMs = Math.round(percentile(real.exitMs, 50));
    fs.writeFileSync(planFile, JSON.stringify({ startupMs, exitMs, jobs: calibrated(plan, result.steps, o, startupMs, exitMs) }));
    const measured = real.latencyMs.length >= 5 ? `${Math.max(1, percentile(real.latencyMs, 25))}-${Math.max(1, percentile(real.latencyMs, 75))}` : null;
    if (!measured) notes.push(`only ${real.latencyMs.length} one-request checks outside the fault windows: the simulator keeps its default latency`);
    for (const latency of measured ? [measured, null] : [null]) {
      const simArgs = [
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
      const command = `cargo run --release --example replay -- ${simArgs.join(' ').replace(planFile, '<plan.json>')}`;
      const r = await run('cargo', ['run', '--release', '--quiet', '--example', 'replay', '--', ...simArgs], {
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
  }
  const sim = sims.length > 0 ? sims[0].row : null;
  if (o.keep) {
    fs.writeFileSync(path.join(work, 'steps.json'), JSON.stringify(result.steps, null, 1));
    notes.push(`kept ${work}: apiserver-log.json (every request), steps.json (every hook process), plan.json (what the simulator got)`);
  } else {
    fs.rmSync(work, { recursive: true, force: true });
  }
  control.work = null;
  const wallMs = Date.now() - wallStart;

  // 5. The report.
  const settingsText = Object.entries(o.settings)
    .map(([k, v]) => `${k.replace('ACTIONS_RUNNER_PREFLIGHT_', '')}=${v}`)
    .join(' ');
  say(
    `Real chaos run of incident-2026-10-21, compressed ${Math.round(1 / o.scale)}x: ${o.jobs} jobs (prepare + ${o.scriptSteps} script step${o.scriptSteps === 1 ? '' : 's'} + cleanup, ` +
      `every step a fresh \`node index.js\` of the ncc-bundled hooks-shaped consumer), at most ${o.processes} processes at a time, ` +
      `starts spread over ${o.startSpreadMs / 1000} s, ${o.stepWorkMs[0]}-${o.stepWorkMs[1]} ms of work between steps (seed ${o.seed}); ` +
      `at ${o.stallAtMs / 1000} s the loopback apiserver refuses every connection for ${o.stallMs / 1000} s, then answers 403 to ` +
      `${Math.round(o.forbiddenShare * 100)} % of requests for ${o.forbiddenMs / 1000} s, then is healthy. ` +
      `Policy: the defaults with ${settingsText} (x${o.scale}).`,
  );
  say();
  say(
    `Node ${process.version}, @kubernetes/client-node ${clientVersion}, package tarball sha256 ${tarball.slice(0, 12)}; ` +
      `${os.cpus().length} CPUs (${os.cpus()[0] ? os.cpus()[0].model.trim() : 'unknown'}), load ${loadBefore.toFixed(2)} before the run; ${new Date().toISOString().slice(0, 10)}.`,
  );
  if (stale) say(stale);
  say();
  say(TABLE_HEAD);
  say(row(real));
  for (const { row: r } of sims) say(`| ${r.policy} | ${r.cells.slice(1).join(' | ')} |`);
  say();

  if (sim) {
    const failTol = TOLERANCE.stepsFailed(real.stepsFailed, sim.stepsFailed);
    const rpjTol = TOLERANCE.requestsPerJob(sim.requestsPerJob);
    const { factor, plus } = TOLERANCE.peak;
    const failOk = Math.abs(real.stepsFailed - sim.stepsFailed) <= failTol;
    const rpjOk = Math.abs(real.requestsPerJob - sim.requestsPerJob) <= rpjTol;
    const peakOk = real.peak <= sim.peak * factor + plus && sim.peak <= real.peak * factor + plus;
    const stepsOk = real.steps === sim.steps;
    const verdict = failOk && rpjOk && peakOk ? 'AGREE' : 'DISAGREE';
    say(
      `Simulator (${sim.policy.replace('simulator, ', '')}) vs real run: ${verdict}. Steps failed ${real.stepsFailed} vs ${sim.stepsFailed} (tolerance +-${failTol}, the larger of 1 and 25 %): ${failOk ? 'ok' : 'NO'}; ` +
        `requests/job ${real.requestsPerJob.toFixed(2)} vs ${sim.requestsPerJob.toFixed(2)} (tolerance +-${rpjTol.toFixed(2)}, the larger of 0.25 and 20 %): ${rpjOk ? 'ok' : 'NO'}; ` +
        `recovery peak ${real.peak} vs ${sim.peak} req/s (roughly: within x${factor} + ${plus}): ${peakOk ? 'ok' : 'NO'}; ` +
        `steps run ${real.steps} vs ${sim.steps}${stepsOk ? '' : ' (differ)'}.`,
    );
    say();
  }

  const p = real.phases;
  say('Details of the real run:');
  say(
    `- timeline as the apiserver logged it (from the plan's t = 0): refused from ${p.refuseAt === null ? '-' : `${p.refuseAt} ms`}, ` +
      `403 window from ${p.recoveryAt === null ? '-' : `${p.recoveryAt} ms`}, healthy from ${p.healthyAt === null ? '-' : `${p.healthyAt} ms`} ` +
      `(planned ${o.stallAtMs}, ${o.stallAtMs + o.stallMs}, ${o.stallAtMs + o.stallMs + o.forbiddenMs} ms)`,
  );
  say(
    `- verdicts: ${Object.entries(real.bySource).map(([k, v]) => `${k} ${v}`).join(', ') || 'none'}; ` +
      `steps with a ::warning:: ${real.stepsWithWarnings} (first failed attempt: ${Object.entries(real.firstFailures).map(([k, v]) => `${k} ${v}`).join(', ') || 'none'}), ` +
      `inconclusive ${real.inconclusive}, killed by the per-process timeout (${result.processTimeoutMs} ms) ${real.timedOut}`,
  );
  say(`- answers the apiserver logged: ${Object.entries(real.byStatus).map(([k, v]) => `${k} ${v}`).join(', ') || 'none'}${real.other ? `; ${real.other} requests to other paths` : ''}`);
  say(
    `- hook process: from due (job schedule) to its check p50 ${percentile(real.startupMs, 50)} ms (p99 ${percentile(real.startupMs, 99)}), ` +
      `verdict to exit p50 ${percentile(real.exitMs, 50)} ms, whole process p50 ${percentile(real.processMs, 50)} ms / p99 ${percentile(real.processMs, 99)} ms; ` +
      `at most ${result.peakProcesses} at a time, ${result.delayedByCap} starts delayed by the --processes cap; ` +
      `a process that only loads the bundle took ${idleMs === null ? '-' : `${idleMs} ms`} just before the run`,
  );
  if (idleMs !== null && percentile(real.startupMs, 50) > 3 * idleMs) {
    say(
      `- CPU-BOUND: hook processes took ${percentile(real.startupMs, 50)} ms (p50) to reach their check, over 3x the ${idleMs} ms of one process alone; ` +
        'the timing columns of the real run are stretched by CPU contention (fewer --jobs or --script-steps, or a larger --scale, lighten it)',
    );
  }
  say(`- chaos phase ${secs(phaseMs)} (limit ${o.limitS} s)${aborted ? ': STOPPED BY THE WALL-CLOCK LIMIT, the report is partial' : ''}; whole command ${secs(wallMs)}`);
  for (const note of notes) say(`- ${note}`);
  for (const { command } of sims) say(`- simulator: \`${command}\``);
  if (sims.length > 0) {
    say(
      `- the simulator got the same job starts and step gaps (the plan) and, per step, how long the real process took from when it was due ` +
        `to its check and from its verdict to its end (medians ${percentile(real.startupMs, 50)} ms and ${percentile(real.exitMs, 50)} ms)`,
    );
  }
  const failedSteps = result.steps.filter((s) => !s.ok).slice(0, 5);
  for (const s of failedSteps) {
    const errorLine = s.stdout.split('\n').find((l) => l.startsWith('::error::'));
    const last = (errorLine || s.stderr.trim().split('\n').pop() || '(no output)').slice(0, 300);
    say(`- failed: job ${s.job} step ${s.step} (${s.command}), exit ${s.exitCode}${s.signal ? ` ${s.signal}` : ''}${s.timedOut ? ' timed out' : ''}: ${last}`);
  }

  if (o.write) {
    const file = path.join(ROOT, 'bench', 'results', 'chaos.md');
    const command = `node bench/chaos.js${process.argv.length > 2 ? ` ${process.argv.slice(2).join(' ')}` : ''}`;
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, `# Real chaos run\n\nCommand: \`${command}\`\n\n${out.join('\n')}\n`);
    process.stderr.write(`chaos: wrote ${path.relative(ROOT, file)}\n`);
  }
  process.exitCode = aborted ? 3 : 0;
}

main().catch((e) => {
  process.stderr.write(`chaos: ${e && e.stack ? e.stack : e}\n`);
  process.exitCode = 1;
});

'use strict';
// One whole job, as the runner drives it with container hooks: prepare_job,
// 3 run_script_step, cleanup_job, each a fresh `node index.js` of the job
// bundle with the hook input on stdin. After a failed step the remaining
// script steps are skipped and cleanup_job still runs (the runner cleans up
// a job whose steps failed). What the job did is read from the apiserver's
// own logs: the requests it got, the execs it ran, what is left.

const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const { runProcess } = require('../../tests/support/run-process');
const { armStall } = require('./stalls');

const SCRIPT_STEPS = 3;
const DEFAULT_STEP_TIMEOUT_MS = 120_000;

/** The job's hook processes in order: { label, command }. */
function jobSteps() {
  const steps = [{ label: 'prepare', command: 'prepare_job' }];
  for (let i = 1; i <= SCRIPT_STEPS; i++) steps.push({ label: `script ${i}`, command: 'run_script_step', index: i });
  steps.push({ label: 'cleanup', command: 'cleanup_job' });
  return steps;
}

// Each script step's script (real pods only): it counts its own runs.
const stepScript = (podWork) => `echo "step $STEP ran" >> "${podWork}/step-$STEP.runs"\necho "hello from step $STEP"\n`;

function hookInput(step, work, state, podWork = null) {
  const responseFile = path.join(work, '_temp', '_runner_hook_responses', `${step.command}-${step.index || 0}.json`);
  const input = { command: step.command, responseFile, state: state || {}, args: {} };
  if (step.command === 'prepare_job') {
    input.args = {
      container: { image: 'node:20', registry: { serverUrl: 'https://registry.example', username: 'ci', password: 'pull-token' } },
    };
  } else if (step.command === 'run_script_step') {
    const root = podWork || '/__w';
    input.args = {
      entryPoint: 'bash',
      entryPointArgs: ['-e', `${root}/_temp/step-${step.index}.sh`],
      environmentVariables: { STEP: String(step.index) },
      workingDirectory: `${root}/repo/repo`,
    };
  }
  return { input, responseFile };
}

/** What a hook process's output says: ok, its ::error:: message, its script command, its warnings. */
function readStepOutput(r) {
  const ok = r.code === 0 && /^job step ok: \S+$/m.test(r.stdout);
  const error = /^::error::(.*)$/m.exec(r.stdout);
  const script = /^script exec: (\[.*\])$/m.exec(r.stdout);
  let message = error ? error[1] : null;
  if (!ok && !message) message = r.timedOut ? 'timed out (killed)' : `exit ${r.code}${r.signal ? ` ${r.signal}` : ''}: ${r.stderr.trim().split('\n').pop() || ''}`;
  return {
    ok,
    message,
    scriptCommand: script ? JSON.parse(script[1]) : null,
    warnings: r.stdout.split('\n').filter((l) => l.startsWith('::warning::')),
  };
}

/** A runner's name, as the job's label and pod name carry it. */
function newRunnerName() {
  return `runner-${crypto.randomBytes(3).toString('hex')}`;
}

/**
 * Runs one job against `jobServer` ({ server, kubeconfig } from server.js)
 * with the bundle in `bundleDir`, a refused stall of `stallMs` at `place`
 * (null: none). `mode` (plain, retry-proxy, resilient; null: unset) is the
 * hook processes' JOB_CLIENTS (how the job makes its clients, see
 * tests/consumer/src/job/clients.ts); `env` adds to their environment.
 * Resolves { mode, runner, place, stallMs, ok, failedStep, message, steps,
 * apiCalls, reviewCalls, scriptExecs, stepRuns (with real pods: each
 * script's own count of its runs), leftPods, leftSecrets, ms, stall }.
 */
async function runJob({ jobServer, bundleDir, mode = null, place = null, stallMs = 0, env = {}, stepTimeoutMs = DEFAULT_STEP_TIMEOUT_MS, track, runner = newRunnerName() }) {
  const { server, kubeconfig } = jobServer;
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'preflight-job-'));
  const work = path.join(base, '_work');
  const home = path.join(base, 'home');
  fs.mkdirSync(path.join(work, 'repo', 'repo'), { recursive: true });
  fs.mkdirSync(path.join(work, '_temp', '_runner_file_commands'), { recursive: true });
  fs.mkdirSync(home, { recursive: true });
  fs.writeFileSync(path.join(work, 'repo', 'repo', 'README.md'), `the workspace of ${runner}\n`);
  // A real pod: its work folder is in the pod's folder (never the host's
  // /__w), and the step scripts the runner would have put in _temp are there.
  const podWork = jobServer.podRoot ? path.join(jobServer.podRoot, 'ci', `${runner}-workflow`, 'w') : null;
  if (podWork) {
    for (let i = 1; i <= SCRIPT_STEPS; i++) fs.writeFileSync(path.join(work, '_temp', `step-${i}.sh`), stepScript(podWork));
  }
  const stepEnv = {
    PATH: process.env.PATH,
    HOME: home,
    KUBECONFIG: kubeconfig,
    RUNNER_TEMP: path.join(work, '_temp'),
    RUNNER_WORKSPACE: path.join(work, 'repo'),
    ACTIONS_RUNNER_POD_NAME: runner,
    ACTIONS_RUNNER_KUBERNETES_NAMESPACE: 'ci',
    ...(mode ? { JOB_CLIENTS: mode } : {}),
    ...(podWork ? { JOB_POD_WORK: podWork } : {}),
    ...env,
  };

  const requestsFrom = server.requests.length;
  const execsFrom = server.execs.length;
  const startedAt = Date.now();
  const stall = armStall(server, place, stallMs);
  const steps = [];
  let failed = null;
  let state = null;
  try {
    for (const step of jobSteps()) {
      if (failed && step.command !== 'cleanup_job') {
        steps.push({ label: step.label, skipped: true });
        continue;
      }
      const { input, responseFile } = hookInput(step, work, state, podWork);
      stall.beforeStep(step.label);
      const r = await runProcess(process.execPath, ['index.js'], {
        cwd: bundleDir,
        env: stepEnv,
        input: JSON.stringify(input),
        timeoutMs: stepTimeoutMs,
        track,
      });
      const out = readStepOutput(r);
      steps.push({ label: step.label, ...out, ms: r.endedAt - r.startedAt, stdout: r.stdout, stderr: r.stderr });
      if (out.ok && step.command === 'prepare_job') state = JSON.parse(fs.readFileSync(responseFile, 'utf8')).state;
      if (!out.ok && !failed) failed = { step: step.label, message: out.message };
    }
  } finally {
    fs.rmSync(base, { recursive: true, force: true });
  }
  const stallResult = await stall.finish();
  const ms = Date.now() - startedAt;

  const requests = server.requests.slice(requestsFrom);
  const execs = server.execs.slice(execsFrom);
  const scriptExecs = steps
    .filter((s) => s.label.startsWith('script '))
    .map((s) => {
      if (s.skipped || !s.scriptCommand) return null; // never got as far as its script
      const key = JSON.stringify(s.scriptCommand);
      return execs.filter((e) => JSON.stringify(e.command) === key || JSON.stringify(durableCommand(e.command)) === key).length;
    });
  // What each script says of itself: how many times it ran (real pods only).
  const runsOf = (i) => {
    const file = path.join(podWork, `step-${i}.runs`);
    return fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).length : 0;
  };
  const stepRuns = podWork ? Array.from({ length: SCRIPT_STEPS }, (_, i) => runsOf(i + 1)) : null;
  const mine = (name) => name.startsWith(`ci/${runner}-`);
  return {
    mode: stepEnv.JOB_CLIENTS || 'plain',
    runner,
    place,
    stallMs,
    ok: !failed,
    failedStep: failed ? failed.step : null,
    message: failed ? failed.message : null,
    steps,
    apiCalls: requests.length,
    reviewCalls: requests.filter((r) => r.route === 'ssar' || r.route === 'ssrr').length,
    execCalls: requests.filter((r) => r.route === 'exec pods').length,
    execs,
    scriptExecs,
    stepRuns,
    leftPods: server.objects('pods').filter(mine),
    leftSecrets: server.objects('secrets').filter(mine),
    createdPods: server.objectLog.filter((e) => e.op === 'create' && e.resource === 'pods' && e.code === 201 && e.name.startsWith(`${runner}-`)).length,
    createdSecrets: server.objectLog.filter((e) => e.op === 'create' && e.resource === 'secrets' && e.code === 201 && e.name.startsWith(`${runner}-`)).length,
    ms,
    stall: stallResult,
  };
}

/**
 * The caller's command inside a durable exec's start step (`sh -c <script>
 * k8s-auth-preflight <run> <out> <err> <n> <n ids> <command...>`), or null
 * for any other exec: a start step is where a command starts.
 */
function durableCommand(command) {
  if (command.length < 8 || command[0] !== 'sh' || command[3] !== 'k8s-auth-preflight' || !command[2].includes('setsid sh -c')) return null;
  const n = Number(command[7]);
  return Number.isInteger(n) ? command.slice(8 + n) : null;
}

module.exports = { runJob, jobSteps, newRunnerName, durableCommand, SCRIPT_STEPS };

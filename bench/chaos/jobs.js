'use strict';
// The jobs of a chaos run. Model (as the simulator's): each job is
// prepare_job, --script-steps run_script_step steps and cleanup_job, every
// step a fresh `node index.js` sharing the job's RUNNER_TEMP (so later steps
// can use the job's cached verdict); a failed step skips the job's remaining
// script steps, cleanup still runs. Jobs start at seeded random offsets over
// --start-spread-ms; the work between two steps is a seeded random gap in
// --step-work-ms. One script step by default, not the incident's 10: after a
// job's first check its steps answer from the cached verdict with no
// request, so more script steps add only CPU load (each hook process spends
// ~0.35 s of CPU loading the 16 MB bundle, mostly @kubernetes/client-node),
// which on a 2-core machine stretches every process's start-up (see the
// CPU-BOUND line). At most --processes hook processes run at a time.

const fs = require('node:fs');
const path = require('node:path');

const { NAMESPACE } = require('./apiserver');
const { sleep } = require('./control');
const { hookInput, runHook, parseStep } = require('./hook-process');

// A hook process is killed after its deadline + request timeout + this.
const PROCESS_GRACE_MS = 15_000;

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

/** The hook commands of one job, in order. */
function stepCommands(scriptSteps) {
  return ['prepare_job', ...Array.from({ length: scriptSteps }, () => 'run_script_step'), 'cleanup_job'];
}

/**
 * Runs every job of `plan` from `t0` (Date.now() of the plan's t = 0) until
 * done or the run is stopped. Resolves { steps (one per hook process, with
 * when it was due), delayedByCap, peakProcesses, processTimeoutMs }.
 */
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
    // Each job runs on a runner of its own: its home holds the runner key.
    const runnerHome = path.join(work, `job-${j}`, 'runner-home');
    fs.mkdirSync(runnerHome, { recursive: true });
    const env = { ...baseEnv, RUNNER_TEMP: runnerTemp, HOME: runnerHome };
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
        r = await runHook(runDir, { env, input: hookInput(commands[k], j, k), timeoutMs: processTimeoutMs, track: control.children });
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

module.exports = { runJobs };

'use strict';
// The demo: one GitHub Actions job in Kubernetes mode (prepare, 6 script
// steps, cleanup; every step a fresh Node process, as the hooks run them)
// against a loopback apiserver that goes through a compressed version of the
// 2026-10-21 incident: connections refused, then transient 403s, then healthy.
// Prints the timeline of the job's steps and what a user sees in the log.

const { execFile } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { startApiServer } = require('../tests/support/apiserver');
const { fullRole } = require('../tests/js/support/roles');

const ROLE = fullRole();

// Compressed time: the schedule is 1/10 of the defaults, the stall 1/10 of 25 s.
const SETTINGS = {
  ACTIONS_RUNNER_PREFLIGHT_BASE_DELAY_MS: '100',
  ACTIONS_RUNNER_PREFLIGHT_MAX_DELAY_MS: '800',
  ACTIONS_RUNNER_PREFLIGHT_REQUEST_TIMEOUT_MS: '1000',
  ACTIONS_RUNNER_PREFLIGHT_DEADLINE_MS: '9000',
  // TTL 1.5 s (1 h at full scale) so the job shows fresh, expired and grace answers.
  ACTIONS_RUNNER_PREFLIGHT_CACHE_TTL_MS: '1500',
};

function runStep(env) {
  return new Promise((resolve) => {
    execFile(process.execPath, [path.join(__dirname, 'step.js')], { env, timeout: 30_000 }, (error, stdout) => {
      const line = stdout.trim().split('\n').pop();
      try {
        resolve(JSON.parse(line));
      } catch {
        resolve({ result: 'crashed', requests: 0, ms: 0, lines: [String(error && error.message)] });
      }
    });
  });
}

async function main() {
  const server = await startApiServer({ token: 'demo-token', role: ROLE, namespace: 'ci' });
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'preflight-demo-'));
  const kubeconfig = server.writeKubeconfig(path.join(work, 'kubeconfig'), { token: 'demo-token' });
  const runnerTemp = path.join(work, 'runner-temp');
  fs.mkdirSync(runnerTemp);
  // The runner container's home, which job containers do not mount: the
  // runner key that signs the job's cached verdict is made there.
  const runnerHome = path.join(work, 'runner-home');
  fs.mkdirSync(runnerHome);
  const env = {
    PATH: process.env.PATH,
    KUBECONFIG: kubeconfig,
    RUNNER_TEMP: runnerTemp,
    HOME: runnerHome,
    ACTIONS_RUNNER_KUBERNETES_NAMESPACE: 'ci',
    ...SETTINGS,
  };
  const t0 = Date.now();
  const at = () => ((Date.now() - t0) / 1000).toFixed(1).padStart(5);
  const steps = ['prepare_job', 'run_script_step 1', 'run_script_step 2', 'run_script_step 3', 'run_script_step 4', 'run_script_step 5', 'cleanup_job'];
  // The control plane blinks while step 3 runs: refused for 2.5 s, then 403
  // for half the reviews for 0.3 s, then healthy.
  // During step 5 the API stays unreachable for longer than the deadline:
  // the step goes on with the job's earlier verdict (grace), with a warning.
  const plan = { 'run_script_step 3': 'stall', 'run_script_step 5': 'outage' };

  console.log('k8s-auth-preflight demo: one job, every step a fresh hook process, real @kubernetes/client-node,');
  console.log(`loopback apiserver at ${server.url}; time compressed 10x (settings: ${Object.entries(SETTINGS).map(([k, v]) => `${k.replace('ACTIONS_RUNNER_PREFLIGHT_', '')}=${v}`).join(' ')})\n`);
  console.log('    t  step                 result        source       reqs  took');
  let failed = 0;
  for (const step of steps) {
    if (plan[step] === 'stall') {
      // Past the cache TTL, so this step must ask the API during the stall.
      await new Promise((r) => setTimeout(r, 1600));
      console.log(`${at()}  -- apiserver endpoint rotates: connections refused 2.5 s, then 403 for half the reviews 0.3 s --`);
      server.runTimeline([{ phase: 'refuse', ms: 2500 }, { phase: 'forbidden403', ms: 300, share: 0.5 }, { phase: 'healthy' }]);
    }
    if (plan[step] === 'outage') {
      await new Promise((r) => setTimeout(r, 1600));
      console.log(`${at()}  -- apiserver unreachable for 12 s, longer than the 9 s deadline --`);
      server.runTimeline([{ phase: 'refuse', ms: 12_000 }, { phase: 'healthy' }]);
    }
    const before = server.counts().total;
    const r = await runStep(env);
    if (r.result !== 'ok') failed += 1;
    const served = server.counts().total - before;
    console.log(
      `${at()}  ${step.padEnd(20)} ${r.result.padEnd(13)} ${String(r.source).padEnd(12)} ${String(served).padStart(4)}  ${(r.ms / 1000).toFixed(2)} s`,
    );
    for (const line of r.lines) console.log(`        | ${line}`);
  }
  const counts = server.counts();
  console.log(`\nsteps failed: ${failed} of ${steps.length}; review requests answered by the apiserver: ${counts.total} (upstream hooks: 13 per step = ${13 * steps.length}, none surviving the stall)`);
  await server.close();
  fs.rmSync(work, { recursive: true, force: true });
  process.exitCode = failed === 0 ? 0 : 1;
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});

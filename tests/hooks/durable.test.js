'use strict';
// Durable execs through the hooks' real bundles (tests/hooks/build.js), with
// real kernel faults: each test a job of its own (prepare_job, one
// run_script_step, cleanup_job, each a fresh `node index.js` of the bundle)
// in a network namespace with the loopback apiserver (tests/hooks/cluster.js),
// whose execs are real processes that a cut stream does not kill, as in a
// cluster. The step script prints a known 1 MiB to stdout and another to
// stderr over about 20 s and counts its starts in the pod's /__w/marker
// (tests/js/support/durable-job.js, stepScript). Faults are iptables rules on
// the apiserver's port (REJECT, tcp-reset, DROP), a stream closed with no
// status, a reset while prepare_job's copy is open, SIGTERM to the hook, the
// pod deleted.
//
//   node tests/hooks/build.js && node --test tests/hooks/durable.test.js
//
// Needs root, ip and iptables, and the hooks' source beside the clone
// (skipped with one line that says so; under CI=true its absence fails).

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { describe, test } = require('node:test');

const { RELEASES, skipWithoutUpstream } = require('./upstream');
const { bundleOf } = require('./build');
const { cluster } = require('./cluster');
const { makeRunner, inputs, runHook, withoutCommands, withoutNodeWarnings, podVolume, describeHook } = require('./job');
const { patterns, stepScript, stripOurLines, ourLines, compareOutput, waitForFile, waitForExec, sleep } = require('../js/support/durable-job');

const SKIP = skipWithoutUpstream();
// Jobs at once, each in its own namespace: the faults are mostly waiting.
const CONCURRENCY = 4;
const TEST_TIMEOUT_MS = 240_000;
const HOOK_TIMEOUT_MS = 150_000;
const BLOCK_MS = 25_000;
const BLOCK_AFTER_START_MS = 5000;
const COPY_BLOCK_MS = 10_000;
const SCRIPT_START_TIMEOUT_MS = 60_000;
const PROCESSES_GONE_MS = 5000;
const POD_GONE_FAILS_WITHIN_MS = 20_000;
const FAULTS = ['reject', 'reset', 'drop'];
const DURABLE_OFF = { ACTIONS_RUNNER_PREFLIGHT_DURABLE_EXEC: 'off' };

/**
 * One job through `release`'s bundle (`variant`, default integrated) in a
 * cluster of the test's own. `during` ({ prepare, script }: async (ctx) =>
 * any) runs beside that hook; ctx: { ns, server, proc, pod, podWork,
 * scriptPath, waitForScriptStart(timeoutMs), waitForExec(predicate,
 * timeoutMs) }; what it resolves or throws is in the result's `during`.
 * `files` are added to the checkout; `beforeJob(cluster)` runs first.
 */
async function scriptJob(t, release, { variant = 'integrated', env = {}, exitCode = 0, during = {}, files = {}, beforeJob } = {}) {
  const c = await cluster(t);
  const { out, err } = patterns();
  const runner = makeRunner({ files: { 'README.md': 'the checkout\n', 'pattern.out': out, 'pattern.err': err, ...files } });
  t.after(() => runner.remove());
  if (beforeJob) await beforeJob(c);
  const bundle = bundleOf(release, variant);
  const podWork = podVolume(c.podRoot, runner.jobPod, '/__w');
  // The step also writes a file command, which the hook copies back to the runner.
  const body = stepScript('/__w').replace('exit "${STEP_EXIT:-0}"', 'echo "DURABLE=yes" >> "$GITHUB_ENV"\nexit "${STEP_EXIT:-0}"');
  if (!body.includes('GITHUB_ENV')) throw new Error('the step script no longer ends as this test expects');
  const scriptPath = runner.writeStepScript(body);
  const sides = {};
  const hook = (label, command, args, state) =>
    runHook({
      spawn: c.ns.spawn,
      bundle,
      runner,
      kubeconfig: c.server.kubeconfig,
      command,
      args,
      state,
      env,
      timeoutMs: HOOK_TIMEOUT_MS,
      onStart: (proc) => {
        if (!during[label]) return;
        const ctx = {
          ns: c.ns,
          server: c.server,
          proc,
          pod: runner.jobPod,
          podWork,
          scriptPath,
          waitForScriptStart: (timeoutMs) => waitForFile(path.join(podWork, 'marker'), timeoutMs, proc),
          waitForExec: (predicate, timeoutMs) => waitForExec(c.server, predicate, timeoutMs, proc),
        };
        sides[label] = Promise.resolve()
          .then(() => during[label](ctx))
          .then(
            (value) => ({ ok: true, value }),
            (error) => ({ ok: false, error }),
          );
      },
    });
  const j = { release: release.name, pod: runner.jobPod, podWork, hooks: {}, during: {} };
  j.hooks.prepare = await hook('prepare', 'prepare_job', inputs.prepareJob({ services: false }), {});
  const state = j.hooks.prepare.response && j.hooks.prepare.response.state;
  if (j.hooks.prepare.code === 0 && state) {
    j.hooks.script = await hook('script', 'run_script_step', inputs.runScriptStep(scriptPath, { STEP_EXIT: String(exitCode), GITHUB_ENV: '/__w/_temp/_runner_file_commands/set_env_durable' }), state);
    j.scriptEndedAtMs = performance.now();
    const envFile = path.join(runner.temp, '_runner_file_commands', 'set_env_durable');
    j.fileCommands = fs.existsSync(envFile) ? fs.readFileSync(envFile, 'utf8') : null;
  }
  j.hooks.cleanup = await hook('cleanup', 'cleanup_job', {}, state || {});
  for (const [label, side] of Object.entries(sides)) j.during[label] = await side;
  const marker = path.join(podWork, 'marker');
  j.starts = fs.existsSync(marker) ? fs.readFileSync(marker, 'utf8').split('\n').filter(Boolean) : [];
  j.execs = await c.server.call('execs');
  j.pods = (await c.server.call('objects', { resource: 'pods' })).filter((p) => p.includes(runner.name));
  const s = j.hooks.script;
  if (s) {
    j.scriptStdout = stripOurLines(withoutCommands(s.stdout));
    j.scriptStderr = stripOurLines(withoutNodeWarnings(s.stderr));
    const errors = [...s.stdout.matchAll(/::error::([^\n]*)/g)];
    j.message = errors.length ? errors.at(-1)[1] : null;
  }
  j.describe = () =>
    [
      `job ${runner.name} through ${release.name} ${variant}`,
      ...Object.entries(j.hooks).map(([label, r]) => {
        const ours = ourLines(r.stdout).concat(ourLines(r.stderr));
        return `${describeHook(label, r)}${ours.length ? `\n  package lines:\n    ${ours.slice(0, 20).join('\n    ')}` : ''}`;
      }),
      ...Object.entries(j.during).map(([label, d]) => `during ${label}: ${d.ok ? JSON.stringify(d.value) : `threw ${d.error && d.error.stack}`}`),
      `starts: ${JSON.stringify(j.starts)}`,
      'exec log:',
      ...j.execs.map((e) => {
        const command = e.command.join(' ');
        return `  ${command.length > 120 ? `${command.slice(0, 120)}…` : command} -> ${e.outcome}, exit ${e.exitCode}${e.signal ? ` ${e.signal}` : ''}, close ${e.closeCode}${e.stdinRequested ? `, stdin ${e.stdinBytes} bytes` : ''}`;
      }),
    ].join('\n');
  return j;
}

/** A `during.script` that blocks the apiserver's port with `action` for `ms`, `afterMs` after the script started. */
const blockDuringScript = (action, ms = BLOCK_MS, afterMs = BLOCK_AFTER_START_MS) => ({
  script: async (ctx) => {
    const startedAt = await ctx.waitForScriptStart(SCRIPT_START_TIMEOUT_MS);
    await sleep(afterMs);
    const b = await ctx.ns.block({ port: ctx.server.port, action, ms });
    return { action, blockedFromMs: Math.round(b.addedAtMs - startedAt), blockedToMs: Math.round(b.removedAtMs - startedAt) };
  },
});

function faultRan(j, label = 'script') {
  const d = j.during[label];
  assert.ok(d && d.ok, `the fault never ran: ${d && d.error && d.error.stack}\n${j.describe()}`);
  return d.value;
}

/** The script's stdout and stderr, as the hook printed them, are the two patterns byte for byte. */
function assertWholeOutput(j, what = '') {
  const { out, err } = patterns();
  const problems = [compareOutput('stdout', j.scriptStdout ?? null, out), compareOutput('stderr', j.scriptStderr ?? null, err)].filter(Boolean);
  assert.equal(problems.length, 0, `${what}${problems.join('\n')}\n${j.describe()}`);
}

function assertStartedOnce(j) {
  assert.equal(j.starts.length, 1, `the script started ${j.starts.length} times\n${j.describe()}`);
}

function assertGreen(j) {
  assert.equal(j.hooks.prepare.code, 0, j.describe());
  assert.equal(j.hooks.script && j.hooks.script.code, 0, j.describe());
  assert.equal(j.hooks.cleanup.code, 0, j.describe());
  assert.equal(j.fileCommands, 'DURABLE=yes\n', `GITHUB_ENV copied back to the runner\n${j.describe()}`);
  assert.deepEqual(j.pods, [], `cleanup_job left pods\n${j.describe()}`);
}

describe("durable execs through the hooks' real bundles", { skip: SKIP, concurrency: CONCURRENCY }, () => {
  for (const release of RELEASES) {
    const name = release.name;
    const opts = { timeout: TEST_TIMEOUT_MS };

    test(`${name}: no fault: the job is green, the script started once, its stdout and stderr byte for byte`, opts, async (t) => {
      const j = await scriptJob(t, release);
      assertGreen(j);
      assertWholeOutput(j);
      assertStartedOnce(j);
    });

    for (const action of FAULTS) {
      test(`${name}: a 25 s ${action} block 5 s into the script: the step is green, the output whole, the script started once`, opts, async (t) => {
        const j = await scriptJob(t, release, { during: blockDuringScript(action) });
        t.diagnostic(`${action}: ${JSON.stringify(faultRan(j))}; the step took ${Math.round(j.hooks.script.ms)} ms`);
        assertGreen(j);
        assertWholeOutput(j);
        assertStartedOnce(j);
      });
    }

    test(`${name}: the exit-3 script through a 25 s reset block: the step fails with exit code 3, the output whole, started once`, opts, async (t) => {
      const j = await scriptJob(t, release, { exitCode: 3, during: blockDuringScript('reset') });
      faultRan(j);
      assert.notEqual(j.hooks.script.code, 0, j.describe());
      assert.match(j.message || '', /exit code 3\b/, j.describe());
      assertWholeOutput(j);
      assertStartedOnce(j);
    });

    for (const action of FAULTS) {
      test(`${name}: control, durable execs off: a 25 s ${action} block 5 s into the script fails the step (never green with output missing)`, opts, async (t) => {
        const j = await scriptJob(t, release, { env: DURABLE_OFF, during: blockDuringScript(action) });
        faultRan(j);
        // Green with output missing is the worst outcome there is.
        if (j.hooks.script.code === 0) assertWholeOutput(j, 'a GREEN step (exit 0) with the output not whole:\n');
        assert.notEqual(j.hooks.script.code, 0, `durable execs off: the ${action} block should fail the step\n${j.describe()}`);
      });
    }

    test(`${name}: the script's stream closed with no status (close 1000, no status frame): the step fails, or it reattaches and the output is whole; never green with output missing`, opts, async (t) => {
      // The first exec whose command names a .sh file: the step's (the hooks'
      // wrapper in _temp); no other command of the job does.
      const j = await scriptJob(t, release, { beforeJob: (c) => c.server.call('closeOnceWithoutStatus', { contains: '.sh' }) });
      assert.ok(
        j.execs.some((e) => e.outcome === 'closed-without-status'),
        `no exec closed without a status: the fault never applied\n${j.describe()}`,
      );
      t.diagnostic(`closed without status: exit ${j.hooks.script.code}`);
      if (j.hooks.script.code === 0) {
        assertWholeOutput(j, 'a green step (exit 0) after a stream closed with no status:\n');
        assertStartedOnce(j);
      } else {
        assert.ok(j.message, `the step failed without saying why\n${j.describe()}`);
      }
    });

    test(`${name}: a 10 s reset while prepare_job's copy into the pod is open: the copy is made again, the pod has every file whole, the job is green`, opts, async (t) => {
      // 2,000 files and 256 MB: the copy's stream stays open for seconds
      // (the plain hooks' copy ran `chmod` once per file; one exec of tar
      // carries 2,000 small files in well under a second).
      const COUNT = 2000;
      const body = (i) => `file ${i}\n`.repeat(600);
      const files = { 'big.bin': Buffer.alloc(256 * 1024 * 1024, 7) };
      for (let i = 0; i < COUNT; i++) files[`many/file-${i}`] = body(i);
      const j = await scriptJob(t, release, {
        files,
        during: {
          prepare: async (ctx) => {
            const { exec, atMs } = await ctx.waitForExec((e) => e.stdinRequested && e.outcome === 'running', 30_000);
            await sleep(300);
            const stillOpen = (await ctx.server.call('execs')).find((e) => e.pid === exec.pid);
            const b = await ctx.ns.block({ port: ctx.server.port, action: 'reset', ms: COPY_BLOCK_MS });
            return { outcomeAtBlock: stillOpen && stillOpen.outcome, blockedAfterMs: Math.round(b.addedAtMs - atMs) };
          },
        },
      });
      const d = faultRan(j, 'prepare');
      t.diagnostic(`copy cut: ${JSON.stringify(d)}`);
      assert.equal(d.outcomeAtBlock, 'running', `the copy had ended before the block\n${j.describe()}`);
      const copies = j.execs.filter((e) => e.stdinRequested);
      assert.ok(copies.length >= 2, `the copy into the pod was not made again\n${j.describe()}`);
      const many = path.join(j.podWork, 'repo', 'repo', 'many');
      const whole = fs.existsSync(many) ? fs.readdirSync(many).filter((n) => fs.readFileSync(path.join(many, n), 'utf8') === body(Number(n.slice('file-'.length)))).length : 0;
      assert.equal(whole, COUNT, `${whole} of ${COUNT} files whole in the pod\n${j.describe()}`);
      const big = path.join(j.podWork, 'repo', 'repo', 'big.bin');
      assert.equal(fs.existsSync(big) && fs.statSync(big).size, 256 * 1024 * 1024, `the big file whole in the pod\n${j.describe()}`);
      assertGreen(j);
      assertWholeOutput(j);
      assertStartedOnce(j);
    });

    test(`${name}: SIGTERM to the run_script_step hook while the script runs: the script's processes in the pod are gone within 5 s`, opts, async (t) => {
      let scriptSid = null;
      const j = await scriptJob(t, release, {
        during: {
          script: async (ctx) => {
            await ctx.waitForScriptStart(SCRIPT_START_TIMEOUT_MS);
            await sleep(3000);
            const before = await ctx.server.call('pids', { pod: ctx.pod });
            // The hooks' wrapper execs the entry point: `sh -e <the runner's script>`.
            const shell = before.find((p) => p.cmdline === `sh -e ${ctx.scriptPath}`);
            if (!shell) throw new Error(`no step script shell among the pod's processes: ${JSON.stringify(before)}`);
            scriptSid = shell.sid;
            const sentAt = performance.now();
            ctx.proc.child.kill('SIGTERM');
            let left = before;
            let goneAfterMs = null;
            // Bounded: the 5 s of the rule, then 10 s more to tell late from never.
            while (performance.now() - sentAt < PROCESSES_GONE_MS + 10_000) {
              left = (await ctx.server.call('pids', { pod: ctx.pod })).filter((p) => p.sid === scriptSid);
              if (left.length === 0) {
                goneAfterMs = Math.round(performance.now() - sentAt);
                break;
              }
              await sleep(100);
            }
            return { before: before.length, goneAfterMs, left: left.map((p) => `${p.pid} ${p.cmdline.slice(0, 100)}`) };
          },
        },
      });
      const d = faultRan(j);
      t.diagnostic(`SIGTERM: the script's processes gone after ${d.goneAfterMs} ms`);
      assert.ok(d.goneAfterMs !== null && d.goneAfterMs <= PROCESSES_GONE_MS, `the script's processes lived past ${PROCESSES_GONE_MS} ms after the SIGTERM: ${JSON.stringify(d)}\n${j.describe()}`);
      assert.notEqual(j.hooks.script.code, 0, `a hook stopped by SIGTERM never exits 0\n${j.describe()}`);
    });

    test(`${name}: the pod deleted while the script runs: the step fails within 20 s, with a message that names the pod`, opts, async (t) => {
      const j = await scriptJob(t, release, {
        during: {
          script: async (ctx) => {
            await ctx.waitForScriptStart(SCRIPT_START_TIMEOUT_MS);
            await sleep(3000);
            const status = await ctx.server.call('deletePod', { name: ctx.pod });
            return { status, deletedAtMs: performance.now() };
          },
        },
      });
      const d = faultRan(j);
      assert.equal(d.status, 200, j.describe());
      const failedAfterMs = Math.round(j.scriptEndedAtMs - d.deletedAtMs);
      t.diagnostic(`pod deleted: the step ended ${failedAfterMs} ms later: ${j.message}`);
      assert.notEqual(j.hooks.script.code, 0, j.describe());
      assert.ok(failedAfterMs < POD_GONE_FAILS_WITHIN_MS, `the step ended ${failedAfterMs} ms after the delete\n${j.describe()}`);
      // The pod's name, not only inside a path of the pod's folder (which the loopback's commands carry).
      const said = (j.message || '').split(path.dirname(path.dirname(j.podWork))).join('<pod folder>');
      assert.ok(said.includes(j.pod), `the message does not name the pod ${j.pod}: ${said}\n${j.describe()}`);
    });
  }
});

'use strict';
// The readers of a durable exec's run in the pod (pod/lib/follow.sh: a
// start's reader and each attach step's), when the stream is cut while the
// script prints nothing: a reader with nothing to write never meets
// SIGPIPE, so the readers of cut streams live on beside the live one, all
// reading the run's one wake FIFO. Whatever they take from it (ticks, the
// waiter's last word), the live reader must still end with the command's
// code, and none of them may outlive the delivered run.
//
// Every wait here is bounded (times from performance.now()): a reader left
// waiting for ever fails the test, it never hangs it.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const { consumer, preflight, NAMESPACE, waitFor } = require('./support/harness');
const { POD, durableEnv, capture, podServer, sink } = require('./support/durable-pod');

const F = `[${consumer.flavour}]`;
// The script takes 6 s; its status arrives well within this after its start.
const DELIVERY_BOUND_MS = 20_000;
// No process of a delivered run is left in the pod after this.
const READERS_GONE_MS = 2000;
const CUT_MS = 300;

/**
 * Fast settings, durable execs on (as durable-exec.test.js), but with the
 * pong deadline at its default, 15 s: an open stream is pinged every 5 s,
 * and one that answers is followed for as long as it stays open, as in a
 * cluster. (durable-exec.test.js's 2 s deadline, shorter than the pings'
 * interval, cuts any stream silent for 5 s to 10 s: a reader stuck in the
 * pod then only delays the status, by the reattach after that cut.)
 */
function readersEnv(overrides = {}) {
  return durableEnv({ EXEC_PONG_DEADLINE_MS: 15_000, ...overrides });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * One durable exec: `result` resolves with { status, stdout, stderr,
 * deliveries, atMs } at the first status (or null at a close without one);
 * `deliveries()` counts how many times the status callback ran; `stop()`
 * stops following the run (as a caller's close does).
 */
function startRun(execApi, command) {
  const out = sink();
  const err = sink();
  let socket = null;
  let deliveries = 0;
  let settle;
  const result = new Promise((resolve) => {
    settle = resolve;
  });
  const finish = (status) => {
    if (status !== null) deliveries += 1;
    settle({ status, stdout: out.bytes(), stderr: err.bytes(), atMs: performance.now() });
  };
  Promise.resolve(execApi.exec(NAMESPACE, POD, 'job', command, out, err, null, false, finish)).then(
    (s) => {
      socket = s;
      s.on('close', () => setTimeout(() => finish(null), 200));
    },
    (error) => settle({ error, atMs: performance.now() }),
  );
  return {
    result,
    deliveries: () => deliveries,
    stop: () => socket && socket.readyState === 1 && socket.close(),
  };
}

/** `promise`'s value, or `timedOut` if it has not settled within `ms`. */
function within(promise, ms, timedOut) {
  let timer;
  const bound = new Promise((resolve) => {
    timer = setTimeout(() => resolve(timedOut), ms);
  });
  return Promise.race([promise, bound]).finally(() => clearTimeout(timer));
}

/** The script of a run that prints one line, then nothing for 6 s, and exits 3; its starts counted in `<tag>.starts`. */
const silentScript = (tag) => ['sh', '-c', `echo x >> ${tag}.starts; echo started; sleep 6; exit 3`];

const starts = (folder, tag) => {
  const file = path.join(folder, `${tag}.starts`);
  return fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).length : 0;
};

/** The pod steps the server ran: { step, run, exec } (the step named by its script). */
function podSteps(server) {
  const pkg = path.join(consumer.consumerDir, 'node_modules', 'k8s-auth-preflight', 'pkg', 'pod-program.js');
  const scripts = require(pkg);
  const stepOf = new Map(Object.entries(scripts).map(([step, script]) => [script, step]));
  return server.execs
    .filter((e) => e.command[0] === 'sh' && e.command[1] === '-c' && e.command[3] === 'k8s-auth-preflight')
    .map((e) => ({ step: stepOf.get(e.command[2]) || '?', run: e.command[4], exec: e }));
}

/** The run ids of the execs whose command (the caller's, after the step's arguments) mentions `tag`. */
function runOfTag(server, tag) {
  const start = podSteps(server).find((s) => s.step === 'start' && s.exec.command.slice(5).join(' ').includes(`${tag}.starts`));
  return start ? start.run : null;
}

/**
 * The live (not zombie) processes whose command line holds `runId`: the
 * steps' shells of that run and what they forked (readers, waiter, ticks).
 * Each with its state, where it sleeps (wchan) and its parent.
 */
function processesOfRun(runId) {
  const found = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let cmdline;
    let stat;
    try {
      cmdline = fs.readFileSync(`/proc/${entry}/cmdline`);
      stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    if (!cmdline.includes(runId)) continue;
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (fields[0] === 'Z' || fields[0] === 'X') continue;
    let wchan = '?';
    try {
      wchan = fs.readFileSync(`/proc/${entry}/wchan`, 'utf8');
    } catch {
      // not readable here
    }
    found.push({ pid: Number(entry), state: fields[0], ppid: Number(fields[1]), wchan });
  }
  return found;
}

const listed = (procs) => procs.map((p) => `pid ${p.pid} (parent ${p.ppid}, ${p.state}, in ${p.wchan})`).join('; ') || 'none';

/** What the run left in the pod's temp folder (`<run id>.<name>`), with the contents of the small files. */
function runFilesOf(folder, runId) {
  const dir = path.join(folder, 'tmp', '.k8s-auth-preflight');
  if (!fs.existsSync(dir)) return 'no folder';
  return (
    fs
      .readdirSync(dir)
      .filter((n) => n.startsWith(runId))
      .map((n) => {
        const part = n.slice(runId.length + 1);
        if (['code', 'done', 'w', 'pid'].includes(part)) {
          try {
            return `${part}=${JSON.stringify(fs.readFileSync(path.join(dir, n), 'utf8'))}`;
          } catch {
            return part;
          }
        }
        return part;
      })
      .join(' ') || 'none'
  );
}

/** Every connection to the apiserver cut (refused for CUT_MS), each open exec stream with it. */
async function cut(server) {
  await server.setPhase('refuse');
  await sleep(CUT_MS);
  await server.setPhase('healthy');
}

/**
 * Resolves once each run of `tags` has had `count` attach steps (a reader
 * in the pod for each), or after `ms` (under load a reattach may be slow:
 * the cut that follows then finds fewer readers, which the runs' steps show).
 */
async function attachesStarted(server, tags, count, ms) {
  const started = performance.now();
  const enough = () =>
    tags.every((tag) => {
      const runId = runOfTag(server, tag);
      return runId && podSteps(server).filter((s) => s.run === runId && s.step === 'attach').length >= count;
    });
  while (!enough() && performance.now() - started < ms) await sleep(20);
}

/** What the pod shows of a run that got no status: for a failure's message. */
function podState(env, runId) {
  const steps = podSteps(env.server).filter((s) => s.run === runId);
  const t0 = steps.length ? steps[0].exec.atMs : 0;
  const at = (ms) => `${((ms - t0) / 1000).toFixed(2)} s`;
  return [
    `steps: ${steps.map((s) => `${s.step} pid ${s.exec.pid} at ${at(s.exec.atMs)}${s.exec.exitCode === null ? ' (still running)' : ` (exit ${s.exec.exitCode} at ${at(s.exec.exitedAtMs)})`}`).join(', ')}`,
    `files: ${runFilesOf(env.folder(), runId)}`,
    `processes: ${listed(processesOfRun(runId))}`,
  ].join('; ');
}

/**
 * The reported run: `echo started; sleep 6; exit 3`, its stream cut about
 * 1 s after its start and again 1.5 s later, once reattached (each cut
 * refuses connections for 0.3 s), so that three readers of the run are
 * alive in the pod at once, two of them on cut streams. Resolves with what
 * the caller got (or { timedOut }), the run's id, the run and its start.
 */
async function twoCutsRun(t, env, tag) {
  const durable = preflight.resilientExec(env.kc, { env: readersEnv(), logger: capture().logger });
  const startedAt = performance.now();
  const run = startRun(durable, silentScript(tag));
  t.after(() => run.stop());
  await waitFor(() => starts(env.folder(), tag) === 1, 5000, 'the script to start');
  await sleep(Math.max(0, 1000 - (performance.now() - startedAt)));
  const firstCutAt = performance.now();
  await cut(env.server);
  await attachesStarted(env.server, [tag], 1, 5000);
  await sleep(Math.max(0, 1500 - (performance.now() - firstCutAt)));
  await cut(env.server);
  const result = await within(run.result, DELIVERY_BOUND_MS - (performance.now() - startedAt), { timedOut: true });
  const runId = runOfTag(env.server, tag);
  return { result, runId, run, startedAt };
}

test(`${F} two stream cuts 1.5 s apart while the script prints nothing: the status (exit 3) and the output arrive once, within ${DELIVERY_BOUND_MS / 1000} s, and the script started once`, async (t) => {
  const env = await podServer(t);
  const { result, runId, run, startedAt } = await twoCutsRun(t, env, 'two-cuts');
  assert.ok(runId, 'the run is known');
  const steps = podSteps(env.server).filter((s) => s.run === runId);
  t.diagnostic(`steps: ${steps.map((s) => s.step).join(', ')}`);
  assert.ok(!result.timedOut, `no status within ${DELIVERY_BOUND_MS} ms of the start (${podState(env, runId)})`);
  assert.ok(!result.error, `the exec failed: ${result.error && result.error.message}`);
  assert.ok(result.status, `the stream closed with no status (${podState(env, runId)})`);
  t.diagnostic(`status ${Math.round(result.atMs - startedAt)} ms after the start`);
  assert.equal(result.status.status, 'Failure', JSON.stringify(result.status));
  assert.equal(result.status.reason, 'NonZeroExitCode', JSON.stringify(result.status));
  assert.deepEqual(result.status.details.causes, [{ reason: 'ExitCode', message: '3' }]);
  assert.equal(result.stdout.toString(), 'started\n');
  assert.equal(result.stderr.toString(), '');
  await sleep(300);
  assert.equal(run.deliveries(), 1, 'the status was delivered once');
  assert.equal(starts(env.folder(), 'two-cuts'), 1, 'the script started once');
  assert.equal(steps.filter((s) => s.step === 'start').length, 1, 'one start step');
  assert.ok(steps.filter((s) => s.step === 'attach').length >= 2, `reattached after each cut: ${steps.map((s) => s.step).join(', ')}`);
});

test(`${F} two stream cuts while the script prints nothing: once the run is delivered, none of its readers (nor any process of its steps) is left in the pod within ${READERS_GONE_MS / 1000} s`, async (t) => {
  const env = await podServer(t);
  const { result, runId } = await twoCutsRun(t, env, 'readers-gone');
  assert.ok(runId, 'the run is known');
  // Three readers were alive at once: the start's and two attaches'.
  assert.ok(!result.timedOut, `no status within ${DELIVERY_BOUND_MS} ms of the start, so the run was never delivered (${podState(env, runId)})`);
  assert.ok(result.status, `the stream closed with no status (${podState(env, runId)})`);
  assert.deepEqual(result.status.details && result.status.details.causes, [{ reason: 'ExitCode', message: '3' }], JSON.stringify(result.status));
  const deliveredAt = performance.now();
  let left = processesOfRun(runId);
  while (left.length > 0 && performance.now() - deliveredAt < READERS_GONE_MS) {
    await sleep(50);
    left = processesOfRun(runId);
  }
  assert.deepEqual(left, [], `${READERS_GONE_MS} ms after the delivery, processes of the run are still alive in the pod: ${listed(left)} (${podState(env, runId)})`);
});

// Twenty runs at once, their streams cut together: which reader of a run is
// left with no wake depends on where its readers' ticks are when the command
// ends, so some of the twenty meet it.
test(`${F} 20 durable execs at once, every stream cut twice 0.8 s apart while the scripts print nothing: each of the 20 gets its status (exit 3) and its output, once`, async (t) => {
  const N = 20;
  const env = await podServer(t);
  const durable = preflight.resilientExec(env.kc, { env: readersEnv(), logger: capture().logger });
  const startedAt = performance.now();
  const runs = Array.from({ length: N }, (_, i) => {
    const run = startRun(durable, silentScript(`many-${i}`));
    t.after(() => run.stop());
    return run;
  });
  await waitFor(() => runs.every((_, i) => starts(env.folder(), `many-${i}`) === 1), 10_000, `the ${N} scripts to start`);
  await sleep(Math.max(0, 1500 - (performance.now() - startedAt)));
  const firstCutAt = performance.now();
  await cut(env.server);
  await attachesStarted(env.server, runs.map((_, i) => `many-${i}`), 1, 5000);
  await sleep(Math.max(0, 800 - (performance.now() - firstCutAt)));
  await cut(env.server);
  const bound = 30_000;
  const results = await Promise.all(runs.map((run) => within(run.result, bound - (performance.now() - startedAt), { timedOut: true })));
  const missing = [];
  results.forEach((result, i) => {
    const ok = result.status && !result.timedOut && result.status.details && JSON.stringify(result.status.details.causes) === JSON.stringify([{ reason: 'ExitCode', message: '3' }]) && result.stdout.toString() === 'started\n';
    if (!ok) {
      const runId = runOfTag(env.server, `many-${i}`);
      const got = result.timedOut ? `no status within ${bound} ms` : result.error ? `error ${result.error.message}` : result.status ? `status ${JSON.stringify(result.status)}, stdout ${JSON.stringify(result.stdout.toString())}` : 'closed with no status';
      missing.push(`run ${i} (${runId}): ${got}; ${runId ? podState(env, runId) : ''}`);
    }
  });
  const attaches = runs.map((_, i) => {
    const runId = runOfTag(env.server, `many-${i}`);
    return podSteps(env.server).filter((s) => s.run === runId && s.step === 'attach').length;
  });
  const late = results.map((r) => (r.atMs && !r.timedOut ? ((r.atMs - startedAt) / 1000 - 6).toFixed(1) : '-'));
  t.diagnostic(`attach steps per run: ${attaches.join(' ')}; ${N - missing.length} of ${N} delivered; each status this many s after the script's end: ${late.join(' ')}`);
  assert.deepEqual(missing, [], `${missing.length} of ${N} runs did not get their status:\n${missing.join('\n')}`);
  await sleep(READERS_GONE_MS);
  const leftovers = runs.map((_, i) => processesOfRun(runOfTag(env.server, `many-${i}`) || 'no run').length);
  t.diagnostic(`processes of each run left ${READERS_GONE_MS} ms after the last status: ${leftovers.join(' ')}`);
  runs.forEach((run, i) => {
    assert.equal(run.deliveries(), 1, `run ${i}: delivered once`);
    assert.equal(starts(env.folder(), `many-${i}`), 1, `run ${i}: started once`);
  });
});

// The newest reader is the run's: a reader named out by a newer one ends at
// its next wake, while the command still runs (before, it lived on until the
// command ended, or for good if a tick never came).
test(`${F} a reader on a cut stream ends within a tick of a newer reader starting, while the command still runs`, async (t) => {
  const env = await podServer(t);
  const durable = preflight.resilientExec(env.kc, { env: readersEnv(), logger: capture().logger });
  const tag = 'named-out';
  const startedAt = performance.now();
  const run = startRun(durable, ['sh', '-c', `echo x >> ${tag}.starts; echo started; sleep 9; exit 3`]);
  t.after(() => run.stop());
  await waitFor(() => starts(env.folder(), tag) === 1, 5000, 'the script to start');
  await sleep(Math.max(0, 1000 - (performance.now() - startedAt)));
  await cut(env.server);
  await attachesStarted(env.server, [tag], 1, 5000);
  await sleep(500);
  await cut(env.server);
  await attachesStarted(env.server, [tag], 2, 5000);
  const runId = runOfTag(env.server, tag);
  const attaches = podSteps(env.server).filter((s) => s.run === runId && s.step === 'attach');
  assert.equal(attaches.length, 2, `two reattaches: ${podState(env, runId)}`);
  const [stale, newest] = attaches.map((s) => s.exec);
  // Each tick is 0.1 s for 2 s after a reader starts: 1.5 s is a tick and
  // more, and well before the command's end (9 s after its start).
  const namedOutAt = performance.now();
  while (stale.exitCode === null && performance.now() - namedOutAt < 1500) await sleep(20);
  assert.ok(performance.now() - startedAt < 8000, 'the command still runs');
  assert.notEqual(stale.exitCode, null, `the first reattach's reader still runs 1.5 s after a newer one started (${podState(env, runId)})`);
  assert.equal(stale.exitCode, 97, 'a reader named out ends as a broken step');
  assert.equal(newest.exitCode, null, 'the newest reader follows the run');
  const result = await within(run.result, DELIVERY_BOUND_MS, { timedOut: true });
  assert.ok(!result.timedOut && result.status, `no status (${podState(env, runId)})`);
  assert.deepEqual(result.status.details.causes, [{ reason: 'ExitCode', message: '3' }]);
  assert.equal(result.stdout.toString(), 'started\n');
  assert.equal(starts(env.folder(), tag), 1, 'the script started once');
});

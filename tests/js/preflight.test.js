'use strict';
// End-to-end tests of the packed package with the real
// @kubernetes/client-node (1.x on Node 20, 2.x on Node 22, see
// support/consumer.js) against the loopback fake apiserver.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawn } = require('node:child_process');

const {
  consumer,
  k8s,
  preflight,
  NAMESPACE,
  DEFAULT_PERMISSIONS,
  roleWithout,
  fastEnv,
  captureLogger,
  setup,
  newCheck,
  listDir,
  reviewKey,
  sentReview,
  permissionKey,
  expectedReview,
  waitFor,
} = require('./support/harness');

const EXPECTED_KEYS = new Set(DEFAULT_PERMISSIONS.map(permissionKey));

/** Server records grouped by the permission their body asks about, in arrival order. */
function groupByReview(requests) {
  const groups = new Map();
  for (const r of requests) {
    const key = reviewKey(r.body);
    if (!key) continue;
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(r);
  }
  for (const list of groups.values()) list.sort((a, b) => a.atMs - b.atMs);
  return groups;
}

test(`[${consumer.flavour}] all permissions granted: true from 13 reviews, then from the cache with zero requests`, { timeout: 20_000 }, async (t) => {
  const { server, kc, cacheDir } = await setup(t);
  const first = captureLogger();
  const check = newCheck({ kc, cacheDir, logger: first.logger });

  assert.equal(await check.isAuthPermissionsOK(), true);
  const outcome = check.lastOutcome();
  assert.equal(outcome.verdict, 'allowed');
  assert.equal(outcome.source, 'reviews');
  assert.equal(outcome.requests, 13);
  assert.deepEqual(outcome.missing, []);
  assert.equal(server.counts().total, 13);
  assert.equal(server.counts().byKind.ssar, 13);
  assert.deepEqual(first.warnings, []);
  assert.deepEqual(first.errors, []);
  assert.equal(listDir(cacheDir).length, 1, 'one record written');

  // The next hook step: a new process, a new check, the same folder.
  const second = captureLogger();
  const next = newCheck({ kc, cacheDir, logger: second.logger });
  assert.equal(await next.isAuthPermissionsOK(), true);
  assert.equal(server.counts().total, 13, 'no new request reached the server');
  assert.equal(next.lastOutcome().source, 'cache');
  assert.equal(next.lastOutcome().requests, 0);
  assert.deepEqual(second.warnings, []);
});

test(`[${consumer.flavour}] one verb missing: false, names exactly that permission, caches nothing, asks again next time`, { timeout: 20_000 }, async (t) => {
  const { server, kc, cacheDir } = await setup(t, { role: roleWithout('create', 'pods/exec') });
  const log = captureLogger();
  const check = newCheck({ kc, cacheDir, logger: log.logger });

  assert.equal(await check.isAuthPermissionsOK(), false);
  const outcome = check.lastOutcome();
  assert.equal(outcome.verdict, 'denied');
  assert.deepEqual(outcome.missing, [{ verb: 'create', group: '', resource: 'pods', subresource: 'exec' }]);
  assert.equal(log.errors.length, 1);
  const match = /^denied: (.+) in namespace "ci"$/.exec(log.errors[0]);
  assert.ok(match, `unexpected error line: ${log.errors[0]}`);
  assert.equal(match[1], 'create pods/exec');
  assert.deepEqual(log.warnings, []);
  assert.equal(server.counts().total, 13);
  assert.deepEqual(listDir(cacheDir), [], 'a denial is never cached');

  const again = newCheck({ kc, cacheDir, logger: captureLogger().logger });
  assert.equal(await again.isAuthPermissionsOK(), false);
  assert.equal(server.counts().total, 26, 'the later call asked the API again');
  assert.deepEqual(listDir(cacheDir), []);
});

test(`[${consumer.flavour}] a denial deletes this job's stale record`, { timeout: 20_000 }, async (t) => {
  const { server, kc, cacheDir } = await setup(t);
  const env = fastEnv({ CACHE_TTL_MS: 1000 });
  assert.equal(await newCheck({ kc, cacheDir, env }).isAuthPermissionsOK(), true);
  assert.equal(listDir(cacheDir).length, 1);

  // Past the TTL (so the API is asked), the Role has lost a verb.
  server.configure({ role: roleWithout('delete', 'secrets') });
  const log = captureLogger();
  const later = newCheck({ kc, cacheDir, env, logger: log.logger, now: () => Date.now() + 5000 });
  assert.equal(await later.isAuthPermissionsOK(), false);
  assert.equal(later.lastOutcome().deleteRecord, true);
  assert.deepEqual(later.lastOutcome().missing, [{ verb: 'delete', group: '', resource: 'secrets', subresource: '' }]);
  assert.deepEqual(listDir(cacheDir), [], 'the record was deleted');
  assert.equal(server.counts().total, 26);
});

test(`[${consumer.flavour}] compressed incident: refused 2.5 s, half 403 for 0.3 s, then healthy -> true`, { timeout: 30_000 }, async (t) => {
  const { server, kc, cacheDir } = await setup(t);
  const env = fastEnv({ BASE_DELAY_MS: 100, MAX_DELAY_MS: 800, DEADLINE_MS: 20000 });
  const log = captureLogger();
  const check = newCheck({ kc, cacheDir, env, logger: log.logger });

  const realExit = process.exit;
  const exitCodeBefore = process.exitCode;
  const exits = [];
  process.exit = (code) => {
    exits.push(code);
    throw new Error(`process.exit(${code}) called by the check`);
  };
  let ok;
  const started = performance.now();
  try {
    await server.setPhase('refuse'); // the listener is closed before the first request
    server.runTimeline([
      { phase: 'refuse', ms: 2500 },
      { phase: 'forbidden403', ms: 300, share: 0.5 },
      { phase: 'healthy' },
    ]);
    ok = await check.isAuthPermissionsOK();
  } finally {
    process.exit = realExit;
  }
  const elapsed = performance.now() - started;

  assert.equal(ok, true);
  assert.deepEqual(exits, [], 'the check never exits the process');
  assert.equal(process.exitCode, exitCodeBefore);
  assert.ok(elapsed >= 2500, `verdict only after the outage (${elapsed} ms)`);
  const outcome = check.lastOutcome();
  assert.equal(outcome.source, 'reviews');
  assert.ok(outcome.requests > 13, `retried: ${outcome.requests} requests`);
  assert.match(outcome.lastError, /ECONNREFUSED|HTTP 403/);
  const warning = log.warnings.find((w) => w.includes('ECONNREFUSED'));
  assert.ok(warning, `a warning names ECONNREFUSED: ${JSON.stringify(log.warnings)}`);
  assert.match(warning, /not a permissions problem/);
  assert.deepEqual(log.errors, []);
  assert.equal(listDir(cacheDir).length, 1, 'the allowed verdict is cached');
  assert.equal(log.infos.length, 1, 'the recovery is reported once');
  assert.match(log.infos[0], /Permissions verified after \d+ requests/);
});

test(`[${consumer.flavour}] [slow] real-time incident: refused 25 s, half 403 for 3 s, then healthy, default settings -> true`, { timeout: 120_000 }, async (t) => {
  const { server, kc, cacheDir } = await setup(t);
  const env = { ACTIONS_RUNNER_PREFLIGHT_SEED: '20240611' };
  const log = captureLogger();
  const check = newCheck({ kc, cacheDir, env, logger: log.logger });

  await server.setPhase('refuse');
  server.runTimeline([
    { phase: 'refuse', ms: 25000 },
    { phase: 'forbidden403', ms: 3000, share: 0.5 },
    { phase: 'healthy' },
  ]);
  const started = performance.now();
  assert.equal(await check.isAuthPermissionsOK(), true);
  const elapsed = performance.now() - started;

  const outcome = check.lastOutcome();
  assert.equal(outcome.source, 'reviews');
  assert.ok(elapsed >= 25000, `the verdict came after the stall (${elapsed} ms)`);
  assert.ok(elapsed < 90000, `within the default deadline (${elapsed} ms)`);
  // With default settings a newer core may ask one rules review first, so
  // the count is not tied to 13 access reviews; it did retry, though.
  assert.ok(outcome.requests > server.counts().total, `refused attempts were retried (${outcome.requests})`);
  assert.ok(log.warnings.some((w) => w.includes('ECONNREFUSED') && w.includes('not a permissions problem')));
  assert.deepEqual(log.errors, []);
  t.diagnostic(`${outcome.requests} requests, ${elapsed} ms, server saw ${JSON.stringify(server.counts().byPhase)}`);
});

test(`[${consumer.flavour}] hung requests are abandoned at the request timeout and retried`, { timeout: 20_000 }, async (t) => {
  const { server, kc, cacheDir } = await setup(t);
  const env = fastEnv({ REQUEST_TIMEOUT_MS: 500 });
  const log = captureLogger();
  const sends = [];
  const observer = (event) => {
    if (event.type === 'send') sends.push(event);
  };
  const check = newCheck({ kc, cacheDir, env, logger: log.logger, observer });

  // Hang until every probe's first attempt hung, then ~1 s more, then recover.
  await server.setPhase('hang');
  const started = performance.now();
  const verdict = check.isAuthPermissionsOK();
  await waitFor(() => server.requests.filter((r) => r.status === 'hang').length >= 13, 5000, '13 hung requests');
  server.runTimeline([{ phase: 'hang', ms: 1000 }, { phase: 'healthy' }]);
  assert.equal(await verdict, true);
  const elapsed = performance.now() - started;
  assert.ok(elapsed >= 1000 && elapsed < 5000, `bounded (${elapsed} ms)`);

  const hung = server.requests.filter((r) => r.status === 'hang');
  assert.ok(hung.length >= 13, `every probe's first attempt hung (${hung.length})`);
  const groups = groupByReview(server.requests);
  assert.equal(groups.size, 13);
  for (const [key, list] of groups) {
    assert.equal(list[0].status, 'hang', `${key}: first attempt hung`);
    assert.equal(list[list.length - 1].status, 201, `${key}: the retry succeeded`);
    assert.ok(list.slice(0, -1).every((r) => r.status === 'hang'), `${key}: only the last attempt was answered`);
    // Client side: each hung attempt was given up at its 500 ms timeout
    // before the next one started.
    const mine = sends.filter((s) => reviewKey(sentReview(s)) === key);
    assert.equal(mine.length, list.length, `${key}: every attempt reached the server`);
    for (let i = 0; i < mine.length - 1; i++) {
      assert.equal(mine[i].timeoutMs, 500);
      const gap = mine[i + 1].atMs - mine[i].atMs;
      assert.ok(gap >= 500, `${key}: attempt ${i + 2} sent ${gap} ms after attempt ${i + 1}`);
    }
  }
  assert.match(check.lastOutcome().lastError, /^request timed out/);
  assert.ok(log.warnings.some((w) => w.includes('request timed out')), JSON.stringify(log.warnings));
});

test(`[${consumer.flavour}] with HEDGE_MS, a second copy of each hung review answers; drive.js runs both copies of a probe`, { timeout: 30_000 }, async (t) => {
  // Hedging is off by default; on, the machine sends one more request for
  // the same probe under a new attempt number. The shim keys requests per
  // action, so two of one probe can be in flight: the hedge's answer is
  // applied, the hung one is aborted when the check is done.
  const { server, kc, cacheDir } = await setup(t);
  const env = fastEnv({ REQUEST_TIMEOUT_MS: 10_000, DEADLINE_MS: 20_000, HEDGE_MS: 3000 });
  const log = captureLogger();
  const sends = [];
  const results = [];
  const observer = (event) => {
    if (event.type === 'send') sends.push(event);
    if (event.type === 'result') results.push(event);
  };
  const check = newCheck({ kc, cacheDir, env, logger: log.logger, observer });

  await server.setPhase('hang');
  const started = performance.now();
  const verdict = check.isAuthPermissionsOK();
  // Every first request hung, then the server is healthy again before the
  // hedges go out (3 s after each first request).
  await waitFor(() => server.requests.filter((r) => r.status === 'hang').length >= 13, 2500, '13 hung requests');
  await server.setPhase('healthy');
  assert.equal(await verdict, true);
  const elapsed = performance.now() - started;
  assert.ok(elapsed >= 3000 && elapsed < 10_000, `answered by the hedges, before any 10 s timeout (${elapsed} ms)`);

  const outcome = check.lastOutcome();
  assert.equal(outcome.verdict, 'allowed');
  assert.equal(outcome.requests, 26, '13 requests and 13 hedges');
  const groups = groupByReview(server.requests);
  assert.equal(groups.size, 13);
  for (const [key, list] of groups) {
    assert.deepEqual(list.map((r) => r.status), ['hang', 201], `${key}: the request hung, its hedge was answered`);
    const mine = sends.filter((s) => reviewKey(sentReview(s)) === key);
    assert.deepEqual(mine.map((s) => s.attempt), [1, 2], `${key}: the hedge has a request number of its own`);
    // The observer stamps an event with a clock read just after the poll that
    // made it, so a send's stamp can be a ms or two late: allow 5 ms. (The
    // exact timing is pinned with a simulated clock in tests/hedging.rs.)
    const gap = mine[1].atMs - mine[0].atMs;
    assert.ok(gap >= 2995, `${key}: hedged ${gap} ms after its request`);
    // Only the hedge's answer came back; the hung request was aborted when
    // the check was done, and its abort was not reported to a finished machine.
    const got = results.filter((r) => r.probe === mine[0].probe);
    assert.deepEqual(got.map((r) => r.attempt), [mine[1].attempt], `${key}: results ${JSON.stringify(got)}`);
  }
  assert.deepEqual(log.warnings, [], 'no request failed, so no warning');
});

test(`[${consumer.flavour}] after hung requests the hook process ends by itself (sockets closed)`, { timeout: 30_000 }, async (t) => {
  const { server, kubeconfigPath, cacheDir } = await setup(t);
  const env = fastEnv({ REQUEST_TIMEOUT_MS: 500 });
  await server.setPhase('hang');

  const script = path.join(__dirname, 'support', 'check-child.js');
  const child = spawn(process.execPath, [script, JSON.stringify({ kubeconfig: kubeconfigPath, cacheDir, namespace: NAMESPACE, env })], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, PREFLIGHT_CLIENT: consumer.flavour },
  });
  const killer = setTimeout(() => child.kill('SIGKILL'), 25_000);
  t.after(() => {
    clearTimeout(killer);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  let stdout = '';
  let stderr = '';
  let printedAt = null;
  child.stdout.on('data', (d) => {
    stdout += d;
    if (printedAt === null && stdout.includes('\n')) printedAt = performance.now();
  });
  child.stderr.on('data', (d) => {
    stderr += d;
  });
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal, atMs: performance.now() })));

  // Every probe's first attempt hangs; keep hanging ~0.7 s more, then recover.
  await waitFor(() => server.requests.filter((r) => r.status === 'hang').length >= 13, 15_000, '13 hung requests');
  server.runTimeline([{ phase: 'hang', ms: 700 }, { phase: 'healthy' }]);

  const exit = await exited;
  clearTimeout(killer);
  assert.equal(stderr, '');
  assert.notEqual(printedAt, null, 'the child printed its result');
  const result = JSON.parse(stdout.trim().split('\n')[0]);
  assert.equal(result.ok, true);
  assert.equal(result.flavour, consumer.flavour);
  assert.ok(result.requests > 13);
  assert.equal(exit.signal, null, 'not killed');
  assert.equal(exit.code, 0);
  const lingering = exit.atMs - printedAt;
  assert.ok(lingering < 3000, `the process ended ${lingering} ms after the verdict`);
  assert.equal(server.listening, true, 'the server was still up: nothing but the client could have closed the hung sockets');
  assert.ok(server.requests.filter((r) => r.status === 'hang').length >= 13);
});

test(`[${consumer.flavour}] 429 with Retry-After: 1 -> each probe's retry waits at least 1000 ms`, { timeout: 20_000 }, async (t) => {
  const { server, kc, cacheDir } = await setup(t);
  const log = captureLogger();
  const check = newCheck({ kc, cacheDir, logger: log.logger });

  // Throttle until every probe's first attempt got its 429 (a few hundred
  // ms; the first TLS handshakes can be slow), then recover.
  await server.setPhase('throttle429', { retryAfterSeconds: 1 });
  const started = performance.now();
  const verdict = check.isAuthPermissionsOK();
  await waitFor(() => server.requests.filter((r) => r.status === 429).length >= 13, 5000, '13 throttled requests');
  await server.setPhase('healthy');
  assert.equal(await verdict, true);
  const elapsed = performance.now() - started;
  assert.ok(elapsed < 4000, `no more than the pushback (${elapsed} ms)`);

  const groups = groupByReview(server.requests);
  assert.equal(groups.size, 13);
  for (const [key, list] of groups) {
    assert.equal(list[0].status, 429, `${key}: first attempt throttled`);
    assert.equal(list.length, 2, `${key}: one retry`);
    assert.equal(list[1].status, 201);
    const gap = list[1].atMs - list[0].atMs;
    assert.ok(gap >= 1000, `${key}: retried ${gap} ms after its 429, Retry-After asked for 1000`);
    assert.ok(gap < 2000, `${key}: but not much later (${gap} ms)`);
  }
  assert.ok(log.warnings.some((w) => w.includes('HTTP 429')), JSON.stringify(log.warnings));
  const retries = [...groups.values()].map((list) => list[1].atMs);
  t.diagnostic(`the 13 retries after Retry-After arrived within ${Math.max(...retries) - Math.min(...retries)} ms of each other`);
});

test(`[${consumer.flavour}] a body trickling slower than the request timeout is abandoned and retried`, { timeout: 20_000 }, async (t) => {
  const { server, kc, cacheDir } = await setup(t);
  const log = captureLogger();
  const check = newCheck({ kc, cacheDir, env: fastEnv({ REQUEST_TIMEOUT_MS: 500 }), logger: log.logger });

  // Headers at once, then 8 bytes every 100 ms: a whole body takes seconds.
  await server.setPhase('trickle', { trickleMs: 100 });
  const started = performance.now();
  const verdict = check.isAuthPermissionsOK();
  await waitFor(() => server.requests.filter((r) => r.phase === 'trickle').length >= 13, 5000, '13 trickled answers');
  server.runTimeline([{ phase: 'trickle', ms: 1000, trickleMs: 100 }, { phase: 'healthy' }]);
  assert.equal(await verdict, true);
  const elapsed = performance.now() - started;
  assert.ok(elapsed >= 1000 && elapsed < 5000, `${elapsed} ms`);
  const counts = server.counts().byPhase;
  assert.ok(counts.trickle >= 13, JSON.stringify(counts));
  assert.equal(counts.healthy, 13);
  assert.match(check.lastOutcome().lastError, /^request timed out/);
  assert.ok(log.warnings.some((w) => w.includes('request timed out')), JSON.stringify(log.warnings));
});

test(`[${consumer.flavour}] API unreachable past the deadline, cold cache -> PreflightInconclusiveError, not a denial`, { timeout: 20_000 }, async (t) => {
  const { server, kc, cacheDir } = await setup(t);
  const env = fastEnv({ DEADLINE_MS: 1500 });
  const log = captureLogger();
  const check = newCheck({ kc, cacheDir, env, logger: log.logger });

  await server.setPhase('refuse');
  server.runTimeline([{ phase: 'refuse', ms: 5000 }, { phase: 'healthy' }]);
  const started = performance.now();
  let caught;
  await assert.rejects(check.isAuthPermissionsOK(), (e) => {
    caught = e;
    return true;
  });
  const elapsed = performance.now() - started;
  assert.equal(preflight.isPreflightInconclusiveError(caught), true);
  assert.equal(preflight.isPreflightError(caught), false);
  assert.equal(caught.code, 'PREFLIGHT_INCONCLUSIVE');
  assert.ok(caught instanceof preflight.PreflightInconclusiveError);
  assert.match(caught.message, /NOT a permissions denial/);
  assert.match(caught.message, /ECONNREFUSED/);
  assert.equal(caught.outcome.verdict, 'inconclusive');
  assert.equal(check.lastOutcome().verdict, 'inconclusive');
  // A probe whose next (jittered) delay would start at or after the deadline
  // ends the check, so it may end up to MAX_DELAY_MS (400) before it.
  assert.ok(elapsed >= 1100 && elapsed < 3500, `ended near the deadline (${elapsed} ms)`);
  assert.deepEqual(log.errors, [], 'nothing is logged as an error: it is not a denial');
  assert.deepEqual(listDir(cacheDir), []);
});

test(`[${consumer.flavour}] API unreachable, record past its TTL but within grace -> true from graceCache with a warning`, { timeout: 20_000 }, async (t) => {
  const { server, kc, cacheDir } = await setup(t);
  const env = fastEnv({ DEADLINE_MS: 1500, CACHE_TTL_MS: 1000 });
  assert.equal(await newCheck({ kc, cacheDir, env }).isAuthPermissionsOK(), true);
  const [name] = listDir(cacheDir);
  const recordBefore = fs.readFileSync(path.join(cacheDir, name), 'utf8');

  await server.setPhase('refuse');
  server.runTimeline([{ phase: 'refuse', ms: 5000 }, { phase: 'healthy' }]);
  const log = captureLogger();
  // 1.5 s later than now: past the 1 s TTL, far inside the 24 h grace.
  const later = newCheck({ kc, cacheDir, env, logger: log.logger, now: () => Date.now() + 1500 });
  assert.equal(await later.isAuthPermissionsOK(), true);
  const outcome = later.lastOutcome();
  assert.equal(outcome.verdict, 'allowed');
  assert.equal(outcome.source, 'graceCache');
  assert.ok(outcome.requests > 13, 'it asked the API first');
  assert.equal(outcome.record, null, 'a grace verdict is not re-cached');
  const graceLines = log.warnings.filter((w) => w.includes('earlier successful permission check'));
  assert.equal(graceLines.length, 1, JSON.stringify(log.warnings));
  const grace = graceLines[0];
  assert.match(grace, /not a permissions problem/);
  assert.equal(fs.readFileSync(path.join(cacheDir, name), 'utf8'), recordBefore, 'the record is left as it was');
});

test(`[${consumer.flavour}] malformed 2xx body -> PreflightError, fatal, exactly 13 requests`, { timeout: 20_000 }, async (t) => {
  const { server, kc, cacheDir } = await setup(t);
  const log = captureLogger();
  const check = newCheck({ kc, cacheDir, logger: log.logger });

  await server.setPhase('malformed');
  let caught;
  await assert.rejects(check.isAuthPermissionsOK(), (e) => {
    caught = e;
    return true;
  });
  assert.equal(preflight.isPreflightError(caught), true);
  assert.equal(preflight.isPreflightInconclusiveError(caught), false);
  assert.equal(caught.code, 'PREFLIGHT_ERROR');
  assert.match(caught.message, /malformed/);
  assert.match(caught.message, /not retried/);
  assert.equal(server.counts().total, 13, 'no retries');
  assert.equal(server.counts().byPhase.malformed, 13);
  assert.equal(check.lastOutcome().requests, 13);
  assert.deepEqual(listDir(cacheDir), []);
});

test(`[${consumer.flavour}] every retry carries its own probe's review body`, { timeout: 20_000 }, async (t) => {
  const { server, kc, cacheDir } = await setup(t);
  const sends = [];
  const observer = (event) => {
    if (event.type === 'send') sends.push(event);
  };
  const check = newCheck({ kc, cacheDir, observer });

  // First attempts get a 403 (the server records their bodies), then the
  // connection is refused, then reset mid-request, then all is well.
  await server.setPhase('forbidden403');
  const verdict = check.isAuthPermissionsOK();
  await waitFor(() => server.requests.filter((r) => r.status === 403).length >= 13, 5000, '13 forbidden requests');
  server.runTimeline([
    { phase: 'forbidden403', ms: 200 },
    { phase: 'refuse', ms: 600 },
    { phase: 'reset', ms: 600 },
    { phase: 'healthy' },
  ]);
  assert.equal(await verdict, true);

  const withBody = server.requests.filter((r) => r.body !== null);
  for (const r of withBody) {
    const key = reviewKey(r.body);
    assert.ok(EXPECTED_KEYS.has(key), `unexpected review ${JSON.stringify(r.body)}`);
    const permission = DEFAULT_PERMISSIONS.find((p) => permissionKey(p) === key);
    assert.deepEqual(r.body, expectedReview(permission), `the body of a ${r.status} request`);
  }
  const groups = groupByReview(withBody);
  assert.deepEqual(new Set(groups.keys()), EXPECTED_KEYS);
  for (const [key, list] of groups) {
    assert.ok(list.length > 1, `${key}: ${list.length} attempts reached the server with a body`);
    assert.equal(list[0].status, 403);
    assert.equal(list[list.length - 1].status, 201);
  }
  const distinct = new Set(withBody.map((r) => JSON.stringify(r.body)));
  assert.equal(distinct.size, 13, 'exactly 13 distinct bodies');

  // Seen from the client: each probe's attempts are 1..n, all with the same review.
  const byProbe = new Map();
  for (const s of sends) {
    if (!byProbe.has(s.probe)) byProbe.set(s.probe, []);
    byProbe.get(s.probe).push(s);
  }
  assert.equal(byProbe.size, 13);
  const probeKeys = new Set();
  for (const [probe, list] of byProbe) {
    assert.deepEqual(
      list.map((s) => s.attempt),
      list.map((_, i) => i + 1),
      `probe ${probe}`,
    );
    assert.ok(list.length > 1);
    for (const s of list) assert.deepEqual(sentReview(s), sentReview(list[0]));
    probeKeys.add(reviewKey(sentReview(list[0])));
  }
  assert.deepEqual(probeKeys, EXPECTED_KEYS);
  assert.ok(sends.length > withBody.length, 'some attempts were refused or reset before their body was read');
  assert.equal(check.lastOutcome().requests, sends.length);
});

test(`[${consumer.flavour}] retryK8sApiCall with the real client rides through a short refusal`, { timeout: 20_000 }, async (t) => {
  const { server, kc } = await setup(t);
  const api = kc.makeApiClient(k8s.AuthorizationV1Api);
  const log = captureLogger();
  let calls = 0;

  await server.setPhase('refuse');
  const pending = preflight.retryK8sApiCall(
    (signal) => {
      calls += 1;
      assert.ok(signal instanceof AbortSignal);
      return api.createSelfSubjectAccessReview({ body: expectedReview(['get', 'pods', '']) }, preflight.withAbortSignal(signal));
    },
    { env: fastEnv(), logger: log.logger },
  );
  // Refused until the call has been retried at least twice, then healthy.
  await waitFor(() => calls >= 3, 5000, 'two retries');
  await server.setPhase('healthy');
  const response = await pending;
  assert.equal(response.status.allowed, true);
  assert.equal(response.spec.resourceAttributes.verb, 'get');
  assert.ok(calls >= 3, `retried (${calls} calls)`);
  assert.equal(server.counts().total, 1, 'only the successful call reached the server');
  assert.ok(log.warnings.some((w) => w.includes('ECONNREFUSED')), JSON.stringify(log.warnings));
});

test(`[${consumer.flavour}] retryK8sApiCall does not retry a 404 and rethrows the very same error`, { timeout: 20_000 }, async (t) => {
  const { server, kc } = await setup(t);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  let calls = 0;
  let thrown;
  await assert.rejects(
    preflight.retryK8sApiCall(
      async (signal) => {
        calls += 1;
        try {
          return await core.readNamespacedPod({ name: 'runner-0', namespace: NAMESPACE }, preflight.withAbortSignal(signal));
        } catch (e) {
          thrown = e;
          throw e;
        }
      },
      { env: fastEnv(), logger: captureLogger().logger },
    ),
    (e) => {
      assert.equal(e, thrown, 'the same object');
      return true;
    },
  );
  assert.equal(calls, 1);
  assert.ok(thrown instanceof k8s.ApiException, 'a real ApiException');
  assert.equal(thrown.code, 404);
  assert.equal(server.counts().total, 1);
});

test(`[${consumer.flavour}] retryK8sApiCall gives up at the deadline and rethrows the last error`, { timeout: 20_000 }, async () => {
  const thrown = [];
  const started = performance.now();
  await assert.rejects(
    preflight.retryK8sApiCall(
      async () => {
        // A plain object, not an Error: whatever fn throws is passed through.
        const e = { code: 'ECONNREFUSED', attempt: thrown.length + 1 };
        thrown.push(e);
        throw e;
      },
      { env: fastEnv({ CALL_DEADLINE_MS: 1000 }), logger: captureLogger().logger },
    ),
    (e) => {
      assert.equal(e, thrown[thrown.length - 1], 'the last error, not the first');
      return true;
    },
  );
  const elapsed = performance.now() - started;
  assert.ok(thrown.length > 1, `retried (${thrown.length} calls)`);
  assert.ok(elapsed < 1500, `gave up at the deadline (${elapsed} ms)`);
});

test(`[${consumer.flavour}] an observer that throws neither crashes the process nor changes the verdict`, { timeout: 20_000 }, async (t) => {
  const { server, kc, cacheDir } = await setup(t);
  const unhandled = [];
  const onUnhandled = (reason) => unhandled.push(reason);
  process.on('unhandledRejection', onUnhandled);
  t.after(() => process.off('unhandledRejection', onUnhandled));
  let calls = 0;
  const observer = () => {
    calls += 1;
    throw new Error('observer bug');
  };
  const check = newCheck({ kc, cacheDir, observer });

  assert.equal(await check.isAuthPermissionsOK(), true);
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.deepEqual(unhandled, []);
  assert.ok(calls >= 26, `the observer saw sends and results (${calls})`);
  assert.equal(check.lastOutcome().requests, 13);
  assert.equal(server.counts().total, 13);
});

test(`[${consumer.flavour}] the suite runs the installed tarball and its client-node, not the working tree`, () => {
  const loaded = Object.keys(require.cache);
  const installed = path.join(consumer.consumerDir, 'node_modules', 'k8s-auth-preflight', 'js-shim', 'index.js');
  assert.ok(loaded.includes(installed), 'the installed js-shim is loaded');
  const repoShim = path.resolve(__dirname, '..', '..', 'js-shim', 'index.js');
  assert.equal(loaded.includes(repoShim), false, 'the working tree js-shim is not');
  const clients = loaded.filter((f) => f.endsWith(path.join('@kubernetes', 'client-node', 'package.json')) || /@kubernetes\/client-node\/dist\/index\.js$/.test(f));
  assert.ok(clients.length > 0);
  for (const f of clients) assert.ok(f.startsWith(consumer.consumerDir + path.sep), `client-node from the consumer: ${f}`);
  const version = JSON.parse(fs.readFileSync(path.join(consumer.consumerDir, 'node_modules', '@kubernetes', 'client-node', 'package.json'), 'utf8')).version;
  assert.equal(version, consumer.clientVersion);
});


test(`[${consumer.flavour}] rules review on (the default): one SelfSubjectRulesReview proves all 13, no access review`, { timeout: 20_000 }, async (t) => {
  const { server, kc, cacheDir } = await setup(t);
  const log = captureLogger();
  const check = newCheck({ kc, cacheDir, env: fastEnv({ RULES_REVIEW: undefined }), logger: log.logger });
  assert.equal(await check.isAuthPermissionsOK(), true);
  assert.deepEqual(server.counts().byKind, { ssar: 0, ssrr: 1, other: 0 });
  assert.deepEqual(server.requests[0].body, {
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SelfSubjectRulesReview',
    spec: { namespace: NAMESPACE },
  });
  assert.equal(check.lastOutcome().source, 'reviews');
  assert.equal(check.lastOutcome().requests, 1);
  assert.deepEqual(log.warnings, []);
  assert.equal(listDir(cacheDir).length, 1, 'cached like any allowed verdict');
});

test(`[${consumer.flavour}] rules review on, one verb missing: only the unproven permission is asked, and denied`, { timeout: 20_000 }, async (t) => {
  const { server, kc, cacheDir } = await setup(t, { role: roleWithout('create', 'pods/exec') });
  const log = captureLogger();
  const check = newCheck({ kc, cacheDir, env: fastEnv({ RULES_REVIEW: undefined }), logger: log.logger });
  assert.equal(await check.isAuthPermissionsOK(), false);
  assert.deepEqual(server.counts().byKind, { ssar: 1, ssrr: 1, other: 0 });
  const ssar = server.requests.find((r) => r.kind === 'ssar');
  assert.deepEqual(ssar.body, expectedReview(['create', 'pods', 'exec']));
  assert.deepEqual(check.lastOutcome().missing, [{ verb: 'create', group: '', resource: 'pods', subresource: 'exec' }]);
  assert.equal(log.errors.length, 1);
  assert.match(log.errors[0], /^denied: create pods\/exec in namespace "ci"$/);
  assert.deepEqual(listDir(cacheDir), []);
});

test(`[${consumer.flavour}] rules review on, refused then healthy: the rules review itself is retried`, { timeout: 20_000 }, async (t) => {
  const { server, kc, cacheDir } = await setup(t);
  const log = captureLogger();
  const check = newCheck({ kc, cacheDir, env: fastEnv({ RULES_REVIEW: undefined }), logger: log.logger });
  await server.setPhase('refuse');
  server.runTimeline([{ phase: 'refuse', ms: 800 }, { phase: 'healthy' }]);
  assert.equal(await check.isAuthPermissionsOK(), true);
  assert.ok(check.lastOutcome().requests > 1);
  assert.deepEqual(server.counts().byKind, { ssar: 0, ssrr: 1, other: 0 });
  assert.ok(log.warnings.some((w) => w.includes('ECONNREFUSED')), JSON.stringify(log.warnings));
});

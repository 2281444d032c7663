'use strict';
// The call wrappers (js-shim/calls.js) through the real, installed
// @kubernetes/client-node against the loopback apiserver: every rule of
// docs/CALLS.md, one test each. What the server logged (requests per
// route, the store's creates and deletes, the execs that started) is the
// evidence; the schedule is compressed through `env`.

const test = require('node:test');
const assert = require('node:assert/strict');

const { consumer, k8s, preflight, TOKEN, NAMESPACE, fastEnv, setup, waitFor, startExec, execsOf } = require('./support/harness');

const F = `[${consumer.flavour}]`;
const JOB_LABEL = 'runner-pod';
const RUNNER_UID = '6f1d2c3b-4a59-4e8f-9a7b-0c1d2e3f4a5b';

/** Compressed settings: 50 ms doubling to 200 ms, 1.5 s per request, 8 s per call. */
function callEnv(overrides = {}) {
  return fastEnv({
    BASE_DELAY_MS: 50,
    MAX_DELAY_MS: 200,
    REQUEST_TIMEOUT_MS: 1500,
    CALL_DEADLINE_MS: 8000,
    ...overrides,
  });
}

/** A logger that keeps every line, debug included, in order. */
function captureAll() {
  const lines = { debug: [], info: [], warning: [], error: [], all: [] };
  const keep = (level) => (message) => {
    lines[level].push(message);
    lines.all.push(`${level}: ${message}`);
  };
  lines.logger = { debug: keep('debug'), info: keep('info'), warning: keep('warning'), error: keep('error') };
  return lines;
}

/** Options for the wrappers: the compressed env, a capturing logger, and every action and result observed. */
function callOptions(env = callEnv()) {
  const log = captureAll();
  const events = [];
  return { log, events, options: { env, logger: log.logger, observer: (e) => events.push(e) } };
}

const sends = (events) => events.filter((e) => e.type === 'send');
const attempts = (events) => sends(events).filter((e) => e.request && e.request.kind === 'call');

/** The job pod as the hooks make it: a name, the runner's label, the runner pod as owner. */
function jobPod(name, labels = { [JOB_LABEL]: name }) {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      labels,
      ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: 'runner-1', uid: RUNNER_UID }],
    },
    spec: { containers: [{ name: 'job', image: 'node:20' }], restartPolicy: 'Never' },
  };
}

/** Requests the server logged on `route` ('get pods', ...), optionally for one name. */
function routed(server, route, name) {
  return server.requests.filter((r) => r.route === route && (name === undefined || r.name === name));
}

/** What a promise rejected with (fails the test if it resolved). */
async function rejection(promise) {
  try {
    await promise;
  } catch (e) {
    return e;
  }
  assert.fail('expected the call to fail');
}

/** The codes anywhere in an error's cause chain (a WebSocket error event's .error included). */
function codesOf(error) {
  const out = [];
  const seen = new Set();
  const visit = (e, depth) => {
    if (!e || typeof e !== 'object' || seen.has(e) || depth > 8) return;
    seen.add(e);
    if (e.code !== undefined) out.push(e.code);
    visit(e.cause, depth + 1);
    visit(e.error, depth + 1);
    if (Array.isArray(e.errors)) for (const x of e.errors) visit(x, depth + 1);
  };
  visit(error, 0);
  return out;
}

/** An error's shape as a caller sees it: its class, name, code and body. */
function shape(e) {
  return { constructor: e && e.constructor && e.constructor.name, name: e && e.name, code: e && e.code, body: e && e.body };
}

/** Refused until the call has made `n` attempts (its warning printed), then healthy. */
async function refuseForAttempts(server, events, n) {
  await waitFor(() => attempts(events).length >= n, 6000, `${n} attempts`);
  await server.setPhase('healthy');
}



// ---- 1. reads and lists -----------------------------------------------------

test(`${F} read: retried through a refused stall; one warning, one recovery line, one request reached the server`, { timeout: 30_000 }, async (t) => {
  const { server, kc } = await setup(t);
  await kc.makeApiClient(k8s.CoreV1Api).createNamespacedPod({ namespace: NAMESPACE, body: jobPod('read-me') });
  server.resetCounts();
  const { log, events, options } = callOptions();
  const core = preflight.resilientKubeConfig(kc, options).makeApiClient(k8s.CoreV1Api);

  await server.setPhase('refuse');
  const pending = core.readNamespacedPod({ name: 'read-me', namespace: NAMESPACE });
  await refuseForAttempts(server, events, 3);
  const pod = await pending;
  assert.equal(pod.metadata.name, 'read-me');
  assert.ok(pod instanceof k8s.V1Pod || typeof pod.metadata === 'object', 'the client-node model');
  assert.ok(attempts(events).length >= 3, `retried (${attempts(events).length} attempts)`);
  assert.equal(routed(server, 'get pods').length, 1, 'only the successful attempt reached the server');
  assert.equal(log.warning.length, 1, log.all.join('\n'));
  assert.match(log.warning[0], /readNamespacedPod.*ECONNREFUSED/);
  assert.equal(log.info.length, 1, log.all.join('\n'));
});

test(`${F} list: a 503 with Retry-After is waited out as the server asked, then retried`, { timeout: 30_000 }, async (t) => {
  const { server, kc } = await setup(t);
  const { events, options } = callOptions();
  const core = preflight.resilientKubeConfig(kc, options).makeApiClient(k8s.CoreV1Api);
  const fired = server.armTrigger({ route: 'list pods' }, [{ phase: 'unavailable503', retryAfterSeconds: 1, ms: 0 }, { phase: 'healthy' }]);

  const list = await core.listNamespacedPod({ namespace: NAMESPACE, labelSelector: `${JOB_LABEL}=x` });
  assert.equal(await fired, true);
  assert.deepEqual(list.items, []);
  assert.deepEqual(
    routed(server, 'list pods').map((r) => r.status),
    [503, 200],
  );
  // The machine's decision, not a measured time: the wait after the 503
  // reaches at least the second the server asked for.
  const failed = events.find((e) => e.type === 'result' && e.result.type === 'failed');
  const wait = events.find((e) => e.type === 'wait' && e.atMs >= failed.atMs && e.untilMs !== null);
  assert.ok(wait.untilMs - failed.atMs >= 1000 - 5, `waited ${wait.untilMs - failed.atMs} ms after a Retry-After: 1`);
});

test(`${F} read: a 404 is thrown unchanged (the shape plain client-node throws), after one request`, { timeout: 30_000 }, async (t) => {
  const { server, kc } = await setup(t);
  const plain = await rejection(kc.makeApiClient(k8s.CoreV1Api).readNamespacedPod({ name: 'missing', namespace: NAMESPACE }));
  server.resetCounts();
  const { log, events, options } = callOptions();
  const core = preflight.resilientKubeConfig(kc, options).makeApiClient(k8s.CoreV1Api);
  const e = await rejection(core.readNamespacedPod({ name: 'missing', namespace: NAMESPACE }));
  assert.ok(e instanceof k8s.ApiException, `a real ApiException, got ${e && e.constructor && e.constructor.name}`);
  assert.equal(e.code, 404);
  assert.deepEqual(shape(e), shape(plain));
  assert.equal(preflight.isCallGaveUpError(e), false);
  assert.equal(routed(server, 'get pods').length, 1);
  assert.equal(attempts(events).length, 1);
  assert.deepEqual([log.warning, log.info], [[], []]);
});

// ---- 2. create ----------------------------------------------------------------

test(`${F} create: a transient failure (503) is retried; one pod made`, { timeout: 30_000 }, async (t) => {
  const { server, kc } = await setup(t);
  const { log, options } = callOptions();
  const core = preflight.resilientKubeConfig(kc, options).makeApiClient(k8s.CoreV1Api);
  server.armTrigger({ route: 'create pods' }, [{ phase: 'unavailable503', ms: 0 }, { phase: 'healthy' }]);
  const pod = await core.createNamespacedPod({ namespace: NAMESPACE, body: jobPod('job-503') });
  assert.equal(pod.metadata.name, 'job-503');
  assert.deepEqual(routed(server, 'create pods').map((r) => r.status), [503, 201]);
  assert.deepEqual(server.objects('pods'), [`${NAMESPACE}/job-503`]);
  assert.equal(log.warning.length, 1, log.all.join('\n'));
  assert.equal(log.info.length, 1, log.all.join('\n'));
});

for (const framing of ['length', 'chunked']) {
  test(`${F} create: applied but its answer lost (cut, ${framing}) -> the retry's 409 -> read back: ours, resolved with the pod; one pod`, { timeout: 30_000 }, async (t) => {
    const { server, kc } = await setup(t);
    const { log, events, options } = callOptions();
    const core = preflight.resilientKubeConfig(kc, options).makeApiClient(k8s.CoreV1Api);
    server.armTrigger({ route: 'create pods' }, [{ phase: 'applyThenCut', framing, ms: 0 }, { phase: 'healthy' }]);

    const pod = await core.createNamespacedPod({ namespace: NAMESPACE, body: jobPod('job-lost') });
    assert.equal(pod.metadata.name, 'job-lost');
    assert.equal(pod.metadata.labels[JOB_LABEL], 'job-lost');
    assert.deepEqual(server.objects('pods'), [`${NAMESPACE}/job-lost`]);
    const creates = server.objectLog.filter((e) => e.op === 'create').map((e) => e.code);
    assert.deepEqual(creates, [201, 409], 'the first attempt made it, the retry met it');
    assert.equal(routed(server, 'get pods', 'job-lost').length, 1, 'read back once');
    const stored = await kc.makeApiClient(k8s.CoreV1Api).readNamespacedPod({ name: 'job-lost', namespace: NAMESPACE });
    assert.equal(pod.metadata.uid, stored.metadata.uid, 'resolved with the pod that exists');
    assert.equal(sends(events).filter((e) => e.request.kind === 'readBack').length, 1);
    assert.equal(log.info.length, 1, log.all.join('\n'));
    assert.match(log.info[0], /createNamespacedPod.*an earlier attempt had made the object and its answer was lost/);
  });
}

test(`${F} create: a 409 on the first attempt is the caller's, never read back (even with our labels and owner)`, { timeout: 30_000 }, async (t) => {
  const { server, kc } = await setup(t);
  const before = await kc.makeApiClient(k8s.CoreV1Api).createNamespacedPod({ namespace: NAMESPACE, body: jobPod('taken') });
  server.resetCounts();
  const { log, events, options } = callOptions();
  const core = preflight.resilientKubeConfig(kc, options).makeApiClient(k8s.CoreV1Api);
  const e = await rejection(core.createNamespacedPod({ namespace: NAMESPACE, body: jobPod('taken') }));
  assert.ok(e instanceof k8s.ApiException);
  assert.equal(e.code, 409);
  assert.equal(routed(server, 'create pods').length, 1);
  assert.equal(routed(server, 'get pods').length, 0, 'the pod was read back');
  assert.equal(sends(events).length, 1);
  const after = await kc.makeApiClient(k8s.CoreV1Api).readNamespacedPod({ name: 'taken', namespace: NAMESPACE });
  assert.equal(after.metadata.uid, before.metadata.uid);
  assert.deepEqual([log.warning, log.info], [[], []]);
});

test(`${F} create: a retry's 409 for a pod whose labels differ (someone else's) is thrown; the pod is not touched`, { timeout: 30_000 }, async (t) => {
  const { server, kc } = await setup(t);
  const theirs = await kc
    .makeApiClient(k8s.CoreV1Api)
    .createNamespacedPod({ namespace: NAMESPACE, body: jobPod('shared-name', { [JOB_LABEL]: 'another-runner' }) });
  const { log, options } = callOptions();
  const core = preflight.resilientKubeConfig(kc, options).makeApiClient(k8s.CoreV1Api);
  // The first attempt fails after it may have been applied (a 5xx), so the retry's 409 is read back.
  server.armTrigger({ route: 'create pods', name: undefined }, [{ phase: 'unavailable503', ms: 0 }, { phase: 'healthy' }]);
  const e = await rejection(core.createNamespacedPod({ namespace: NAMESPACE, body: jobPod('shared-name') }));
  assert.ok(e instanceof k8s.ApiException, String(e));
  assert.equal(e.code, 409);
  assert.equal(routed(server, 'get pods', 'shared-name').length, 1, 'read back once');
  const after = await kc.makeApiClient(k8s.CoreV1Api).readNamespacedPod({ name: 'shared-name', namespace: NAMESPACE });
  assert.equal(after.metadata.uid, theirs.metadata.uid);
  assert.deepEqual(after.metadata.labels, { [JOB_LABEL]: 'another-runner' });
  assert.deepEqual(
    server.objectLog.map((x) => `${x.op} ${x.code}`),
    ['create 201', 'create 409'],
    'only their create and our 409: nothing deleted or made',
  );
  assert.ok(!log.info.some((l) => /earlier attempt had made the object/.test(l)), log.all.join('\n'));
});

test(`${F} create: a read-back pod that is being deleted (deletionTimestamp) is not adopted, though its labels and owner match`, { timeout: 30_000 }, async (t) => {
  const { server, kc } = await setup(t);
  await kc.makeApiClient(k8s.CoreV1Api).createNamespacedPod({ namespace: NAMESPACE, body: jobPod('terminating') });
  assert.equal(server.markTerminating('pods', NAMESPACE, 'terminating'), true);
  const { options } = callOptions();
  const core = preflight.resilientKubeConfig(kc, options).makeApiClient(k8s.CoreV1Api);
  server.armTrigger({ route: 'create pods' }, [{ phase: 'unavailable503', ms: 0 }, { phase: 'healthy' }]);
  const e = await rejection(core.createNamespacedPod({ namespace: NAMESPACE, body: jobPod('terminating') }));
  assert.ok(e instanceof k8s.ApiException, String(e));
  assert.equal(e.code, 409);
  assert.equal(routed(server, 'get pods', 'terminating').length, 1, 'read back once');
});

test(`${F} create: a read-back pod made before the call started (a leftover of the same name and labels) is not adopted: the 409 is the caller's`, { timeout: 30_000 }, async (t) => {
  const { server, kc } = await setup(t);
  // An earlier job's pod whose deletion failed: our very name, labels and owner.
  await server.seed('pods', NAMESPACE, jobPod('leftover'), { creationTimestamp: '2020-01-01T00:00:00Z' });
  const { options } = callOptions();
  const core = preflight.resilientKubeConfig(kc, options).makeApiClient(k8s.CoreV1Api);
  // The first attempt's connection is reset before anything is stored: it may have been applied, as far as the client can tell.
  server.armTrigger({ route: 'create pods' }, [{ phase: 'reset', ms: 0 }, { phase: 'healthy' }]);
  const e = await rejection(core.createNamespacedPod({ namespace: NAMESPACE, body: jobPod('leftover') }));
  assert.ok(e instanceof k8s.ApiException, String(e && e.stack));
  assert.equal(e.code, 409);
  assert.equal(routed(server, 'get pods', 'leftover').length, 1, 'read back once');
  assert.deepEqual(server.objects('pods'), [`${NAMESPACE}/leftover`]);
});

test(`${F} create: a retry's 409 after refused attempts only is the caller's, never read back (the pod was never touched by this call)`, { timeout: 30_000 }, async (t) => {
  const { server, kc } = await setup(t);
  // A leftover pod with our very labels and owner: only "may have been applied" keeps it from adoption.
  await kc.makeApiClient(k8s.CoreV1Api).createNamespacedPod({ namespace: NAMESPACE, body: jobPod('leftover') });
  server.resetCounts();
  const { events, options } = callOptions();
  const core = preflight.resilientKubeConfig(kc, options).makeApiClient(k8s.CoreV1Api);
  await server.setPhase('refuse');
  const pending = rejection(core.createNamespacedPod({ namespace: NAMESPACE, body: jobPod('leftover') }));
  await refuseForAttempts(server, events, 2);
  const e = await pending;
  assert.ok(e instanceof k8s.ApiException, String(e && e.stack));
  assert.equal(e.code, 409);
  assert.equal(routed(server, 'get pods').length, 0, 'the pod was read back');
  assert.equal(sends(events).filter((x) => x.request.kind === 'readBack').length, 0);
});

// ---- 3. delete ----------------------------------------------------------------

test(`${F} delete: applied but its answer lost -> the retry's 404 means done (resolves undefined)`, { timeout: 30_000 }, async (t) => {
  const { server, kc } = await setup(t);
  await kc.makeApiClient(k8s.CoreV1Api).createNamespacedPod({ namespace: NAMESPACE, body: jobPod('to-delete') });
  const { log, options } = callOptions();
  const core = preflight.resilientKubeConfig(kc, options).makeApiClient(k8s.CoreV1Api);
  server.armTrigger({ route: 'delete pods' }, [{ phase: 'applyThenCut', ms: 0 }, { phase: 'healthy' }]);
  const result = await core.deleteNamespacedPod({ name: 'to-delete', namespace: NAMESPACE });
  assert.equal(result, undefined);
  assert.deepEqual(server.objects('pods'), []);
  assert.deepEqual(
    server.objectLog.filter((e) => e.op === 'delete').map((e) => e.code),
    [200, 404],
  );
  assert.equal(log.warning.length, 1, log.all.join('\n'));
});

test(`${F} delete: a 404 on the first attempt is thrown, after one request`, { timeout: 30_000 }, async (t) => {
  const { server, kc } = await setup(t);
  const { options } = callOptions();
  const core = preflight.resilientKubeConfig(kc, options).makeApiClient(k8s.CoreV1Api);
  const e = await rejection(core.deleteNamespacedPod({ name: 'never-made', namespace: NAMESPACE }));
  assert.ok(e instanceof k8s.ApiException);
  assert.equal(e.code, 404);
  assert.equal(routed(server, 'delete pods').length, 1);
});

test(`${F} delete: a 404 after refused attempts only is the caller's (nothing this call sent was applied)`, { timeout: 30_000 }, async (t) => {
  const { server, kc } = await setup(t);
  const { events, options } = callOptions();
  const core = preflight.resilientKubeConfig(kc, options).makeApiClient(k8s.CoreV1Api);
  await server.setPhase('refuse');
  const pending = rejection(core.deleteNamespacedPod({ name: 'never-made', namespace: NAMESPACE }));
  await refuseForAttempts(server, events, 2);
  const e = await pending;
  assert.ok(e instanceof k8s.ApiException, String(e && e.stack));
  assert.equal(e.code, 404);
  assert.equal(routed(server, 'delete pods').length, 1);
});

// ---- 4. exec --------------------------------------------------------------------

const execServer = { podRunningAfterMs: 0 };

async function withRunningPod(t, serverOptions = {}) {
  const ctx = await setup(t, { ...execServer, ...serverOptions });
  await ctx.kc.makeApiClient(k8s.CoreV1Api).createNamespacedPod({ namespace: NAMESPACE, body: jobPod('job-pod') });
  return ctx;
}

test(`${F} exec: a refused set-up is retried; the command runs exactly once`, { timeout: 30_000 }, async (t) => {
  const { server, kc } = await withRunningPod(t, { execResults: [{ contains: 'marker-refused', stdout: 'ran\n' }] });
  const { log, events, options } = callOptions();
  const exec = preflight.resilientExec(kc, options);
  await server.setPhase('refuse');
  const pending = startExec(exec, 'job-pod', ['sh', '-c', 'echo marker-refused']);
  await refuseForAttempts(server, events, 3);
  const run = await pending;
  assert.equal((await run.status).status, 'Success');
  assert.equal(run.stdout(), 'ran\n');
  assert.equal(execsOf(server, 'marker-refused').length, 1);
  assert.ok(attempts(events).length >= 3);
  assert.equal(log.warning.length, 1, log.all.join('\n'));
});

for (const phase of ['unavailable503', 'unauthorized401', 'forbidden403']) {
  // An answer instead of the switch proves nothing: a gateway may answer it
  // after it forwarded the upgrade and the command started.
  test(`${F} exec: an upgrade answered with an HTTP status (${phase}) instead of 101 is never sent again; one upgrade`, { timeout: 30_000 }, async (t) => {
    const { server, kc } = await withRunningPod(t);
    const { events, options } = callOptions();
    const exec = preflight.resilientExec(kc, options);
    server.armTrigger({ route: 'exec pods' }, [{ phase, ms: 300 }, { phase: 'healthy' }]);
    const e = await rejection(startExec(exec, 'job-pod', ['sh', '-c', `echo marker-${phase}`]));
    if (phase === 'unavailable503') {
      assert.ok(preflight.isCallGaveUpError(e), String(e && e.message));
      assert.match(e.message, /may have started/);
    } else {
      assert.equal(preflight.isCallGaveUpError(e), false, 'the client\'s own error');
      assert.match(String(e.message), /Unexpected server response: 40[13]/);
    }
    await new Promise((resolve) => setTimeout(resolve, 600));
    const upgrades = routed(server, 'exec pods');
    assert.equal(upgrades.length, 1, JSON.stringify(upgrades.map((r) => r.status)));
    assert.equal(attempts(events).length, 1);
  });
}

test(`${F} exec: an upgrade refused with 404 (no such pod) is the caller's error as client-node gives it, one upgrade`, { timeout: 30_000 }, async (t) => {
  const { server, kc } = await withRunningPod(t);
  const plain = await rejection(startExec(new k8s.Exec(kc), 'no-such-pod', ['true']));
  server.resetCounts();
  const { log, events, options } = callOptions();
  const e = await rejection(startExec(preflight.resilientExec(kc, options), 'no-such-pod', ['true']));
  assert.equal(preflight.isCallGaveUpError(e), false);
  assert.equal(e.constructor, plain.constructor);
  assert.equal(String(e.message || (e.error && e.error.message)), String(plain.message || (plain.error && plain.error.message)));
  assert.match(String(e.message || (e.error && e.error.message)), /404/);
  assert.equal(routed(server, 'exec pods').length, 1);
  assert.equal(attempts(events).length, 1);
  assert.deepEqual([log.warning, log.info], [[], []]);
});

test(`${F} exec: once the stream opened, a dropped socket is not retried (one exec, one upgrade)`, { timeout: 30_000 }, async (t) => {
  const { server, kc } = await withRunningPod(t, { execResults: [{ contains: 'marker-long', delayMs: 5000 }] });
  const { events, options } = callOptions();
  const exec = preflight.resilientExec(kc, options);
  const run = await startExec(exec, 'job-pod', ['sh', '-c', 'sleep 5; echo marker-long']);
  assert.equal(execsOf(server, 'marker-long').length, 1);
  // The server drops every socket mid-command, then is healthy again.
  await server.setPhase('refuse');
  await server.setPhase('healthy');
  await waitFor(() => run.socket.readyState === run.socket.CLOSED, 5000, 'the exec socket to close');
  // Long enough for several retries of the compressed schedule, had there been one.
  await new Promise((resolve) => setTimeout(resolve, 1000));
  assert.equal(execsOf(server, 'marker-long').length, 1);
  assert.equal(execsOf(server, 'marker-long')[0].outcome, 'stream-lost');
  assert.equal(routed(server, 'exec pods').length, 1);
  assert.equal(attempts(events).length, 1);
});

test(`${F} exec: an upgrade that hangs gives up after the set-up timeout with CallGaveUpError, not retried`, { timeout: 30_000 }, async (t) => {
  const { server, kc } = await withRunningPod(t);
  const { events, options } = callOptions(callEnv({ REQUEST_TIMEOUT_MS: 1000 }));
  const exec = preflight.resilientExec(kc, options);
  server.armTrigger({ route: 'exec pods' }, [{ phase: 'hang', ms: 0 }, { phase: 'healthy' }]);
  const e = await rejection(startExec(exec, 'job-pod', ['sh', '-c', 'echo marker-hang']));
  assert.ok(preflight.isCallGaveUpError(e), String(e && e.stack));
  assert.match(e.message, /exec/);
  assert.match(e.message, /not retried/);
  assert.ok(execsOf(server, 'marker-hang').length <= 1);
  assert.equal(routed(server, 'exec pods').length, 1);
  assert.equal(attempts(events).length, 1);
});

test(`${F} exec: the command started but the 101 was lost (reset) -> not sent again; CallGaveUpError; ran once`, { timeout: 30_000 }, async (t) => {
  const { server, kc } = await withRunningPod(t);
  const { events, options } = callOptions();
  const exec = preflight.resilientExec(kc, options);
  server.armTrigger({ route: 'exec pods' }, [{ phase: 'applyThenCut', ms: 0 }, { phase: 'healthy' }]);
  const e = await rejection(startExec(exec, 'job-pod', ['sh', '-c', 'echo marker-lost']));
  assert.ok(preflight.isCallGaveUpError(e), String(e && e.stack));
  assert.equal(execsOf(server, 'marker-lost').length, 1);
  assert.equal(routed(server, 'exec pods').length, 1);
  assert.equal(attempts(events).length, 1);
});

// ---- 5. give-up -------------------------------------------------------------------

test(`${F} give-up: a stall longer than the call deadline -> CallGaveUpError naming the call; cause is a copy of the last client error (its status, codes and message only); no body or response`, { timeout: 30_000 }, async (t) => {
  const { server, kc } = await setup(t);
  const { log, options } = callOptions(callEnv({ CALL_DEADLINE_MS: 2500 }));
  const core = preflight.resilientKubeConfig(kc, options).makeApiClient(k8s.CoreV1Api);
  // Refused first, then 503 to the end: the last error differs from the first.
  server.runTimeline([
    { phase: 'refuse', ms: 800 },
    { phase: 'unavailable503', ms: 10_000 },
    { phase: 'healthy' },
  ]);
  const e = await rejection(core.readNamespacedPod({ name: 'job-pod', namespace: NAMESPACE }));
  assert.ok(preflight.isCallGaveUpError(e), String(e && e.stack));
  assert.ok(e instanceof Error);
  assert.match(e.message, /readNamespacedPod/);
  assert.match(e.message, /The Kubernetes API failed, not the job/);
  assert.ok(e.cause instanceof Error, `cause: ${e.cause && e.cause.constructor.name}`);
  assert.equal(e.cause.code, 503, 'the last error, not the first (refused)');
  // A copy: the raw error may carry the request or the body.
  assert.equal(e.cause instanceof k8s.ApiException, false);
  assert.deepEqual(Object.keys(e.cause).filter((k) => ['body', 'headers', 'response', 'request'].includes(k)), []);
  assert.equal(Object.hasOwn(e, 'body'), false);
  assert.equal(Object.hasOwn(e, 'response'), false);
  assert.equal(log.warning.length, 1);
  assert.equal(log.info.length, 0);
});

// ---- 6. pass-through and off --------------------------------------------------------

test(`${F} pass-through: patchNamespacedPod through a stall fails at once, as unwrapped, one request`, { timeout: 30_000 }, async (t) => {
  const { server, kc } = await setup(t);
  const { log, events, options } = callOptions();
  const wrapped = preflight.resilientKubeConfig(kc, options).makeApiClient(k8s.CoreV1Api);
  const plain = kc.makeApiClient(k8s.CoreV1Api);
  const patch = (api) => api.patchNamespacedPod({ name: 'job-pod', namespace: NAMESPACE, body: [{ op: 'add', path: '/metadata/labels/x', value: 'y' }] });

  await server.setPhase('refuse');
  const plainRefused = await rejection(patch(plain));
  const wrappedRefused = await rejection(patch(wrapped));
  assert.deepEqual(codesOf(wrappedRefused), codesOf(plainRefused));
  assert.ok(codesOf(wrappedRefused).includes('ECONNREFUSED'), JSON.stringify(codesOf(wrappedRefused)));
  assert.equal(wrappedRefused.constructor, plainRefused.constructor);

  await server.setPhase('unavailable503');
  server.resetCounts();
  const e = await rejection(patch(wrapped));
  assert.ok(e instanceof k8s.ApiException);
  assert.equal(e.code, 503);
  assert.equal(server.requests.length, 1, 'one request');
  assert.deepEqual(events, [], 'no call machine ran');
  assert.deepEqual(log.all, [], 'a pass-through call prints nothing');
});

test(`${F} RESILIENT_CALLS=off: a create through a stall fails at once like plain client-node`, { timeout: 30_000 }, async (t) => {
  const { server, kc } = await setup(t);
  const { log, options } = callOptions(callEnv({ RESILIENT_CALLS: 'off' }));
  const wrapped = preflight.resilientKubeConfig(kc, options).makeApiClient(k8s.CoreV1Api);
  const plain = kc.makeApiClient(k8s.CoreV1Api);
  await server.setPhase('refuse');
  const plainRefused = await rejection(plain.createNamespacedPod({ namespace: NAMESPACE, body: jobPod('off-1') }));
  const wrappedRefused = await rejection(wrapped.createNamespacedPod({ namespace: NAMESPACE, body: jobPod('off-1') }));
  assert.equal(preflight.isCallGaveUpError(wrappedRefused), false);
  assert.equal(wrappedRefused.constructor, plainRefused.constructor);
  assert.deepEqual(codesOf(wrappedRefused), codesOf(plainRefused));

  await server.setPhase('unavailable503');
  server.resetCounts();
  const e = await rejection(wrapped.createNamespacedPod({ namespace: NAMESPACE, body: jobPod('off-2') }));
  assert.equal(e.code, 503);
  assert.equal(routed(server, 'create pods').length, 1, 'one request');
  assert.deepEqual(log.all, []);
});

// ---- 7. messages ------------------------------------------------------------------

test(`${F} messages: one warning when failing starts, one info on recovery, a debug line per attempt; the token in no line`, { timeout: 30_000 }, async (t) => {
  const { server, kc } = await setup(t);
  await kc.makeApiClient(k8s.CoreV1Api).createNamespacedPod({ namespace: NAMESPACE, body: jobPod('noisy') });
  const { log, events, options } = callOptions();
  const core = preflight.resilientKubeConfig(kc, options).makeApiClient(k8s.CoreV1Api);
  // Several failures of several kinds, every Status message quoting the bearer token.
  server.armTrigger({ route: 'get pods' }, [
    { phase: 'unavailable503', echoToken: true, ms: 400 },
    { phase: 'unauthorized401', echoToken: true, ms: 400 },
    { phase: 'error500', echoToken: true, ms: 400 },
    { phase: 'healthy' },
  ]);
  const pod = await core.readNamespacedPod({ name: 'noisy', namespace: NAMESPACE });
  assert.equal(pod.metadata.name, 'noisy');
  const tried = attempts(events).length;
  assert.ok(tried >= 3, `${tried} attempts`);
  assert.equal(log.warning.length, 1, log.all.join('\n'));
  assert.equal(log.info.length, 1, log.all.join('\n'));
  assert.match(log.info[0], new RegExp(`readNamespacedPod.*after ${tried} attempts`));
  const perAttempt = log.debug.filter((l) => /readNamespacedPod.*attempt \d+/.test(l));
  assert.ok(perAttempt.length >= tried, `${perAttempt.length} debug lines for ${tried} attempts:\n${log.debug.join('\n')}`);
  for (const line of log.all) assert.ok(!line.includes(TOKEN), `the token in: ${line}`);
  assert.ok(routed(server, 'get pods').some((r) => r.phase === 'unauthorized401'));

  // The give-up error too.
  const { log: log2, options: options2 } = callOptions(callEnv({ CALL_DEADLINE_MS: 1000 }));
  const core2 = preflight.resilientKubeConfig(kc, options2).makeApiClient(k8s.CoreV1Api);
  await server.setPhase('unauthorized401', { echoToken: true });
  const e = await rejection(core2.readNamespacedPod({ name: 'noisy', namespace: NAMESPACE }));
  await server.setPhase('healthy');
  assert.ok(preflight.isCallGaveUpError(e));
  assert.ok(!e.message.includes(TOKEN), e.message);
  for (const line of log2.all) assert.ok(!line.includes(TOKEN), `the token in: ${line}`);
});

test(`${F} messages: an exec upgrade refused with a token-quoting 401 logs no token, nor throws it`, { timeout: 30_000 }, async (t) => {
  const { server, kc } = await withRunningPod(t);
  const { log, options } = callOptions();
  const exec = preflight.resilientExec(kc, options);
  server.armTrigger({ route: 'exec pods' }, [{ phase: 'unauthorized401', echoToken: true, ms: 300 }, { phase: 'healthy' }]);
  const e = await rejection(startExec(exec, 'job-pod', ['sh', '-c', 'echo marker-token']));
  for (const line of log.all) assert.ok(!line.includes(TOKEN), `the token in: ${line}`);
  assert.ok(!require('node:util').inspect(e, { depth: null }).includes(TOKEN), 'the token in the error');
});

// ---- 8. a stream that opens late -------------------------------------------------

test(`${F} exec: a stream that opens after its set-up timed out is closed, not leaked`, { timeout: 30_000 }, async (t) => {
  const { server, kc } = await withRunningPod(t, { execResults: [{ contains: 'marker-late', delayMs: 20_000 }] });
  // A set-up is awaited until the call's end (its deadline plus one request
  // timeout, here about 2 s); the upgrade is answered 101 only after 4 s.
  const { events, options } = callOptions(callEnv({ REQUEST_TIMEOUT_MS: 1000, CALL_DEADLINE_MS: 1000 }));
  const exec = preflight.resilientExec(kc, options);
  server.armTrigger({ route: 'exec pods' }, [{ phase: 'trickle', trickleMs: 4000, ms: 0 }, { phase: 'healthy' }]);
  const e = await rejection(startExec(exec, 'job-pod', ['sh', '-c', 'echo marker-late']));
  assert.ok(preflight.isCallGaveUpError(e), String(e && e.stack));
  // The command starts when the late 101 goes out; the wrapper must close that stream.
  await waitFor(() => execsOf(server, 'marker-late').length === 1, 5000, 'the late upgrade');
  await waitFor(() => execsOf(server, 'marker-late')[0].outcome !== 'running', 5000, 'the late stream to be closed');
  assert.equal(execsOf(server, 'marker-late')[0].outcome, 'stream-lost');
  assert.equal(routed(server, 'exec pods').length, 1);
  assert.equal(attempts(events).length, 1);
});

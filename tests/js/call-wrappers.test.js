'use strict';
// The call wrappers (js-shim/calls.js) as a caller uses them, for what the
// attack on the first build broke: the caller's own abort signal, the error
// a call given up throws when every attempt timed out, the kubeconfig's
// token in messages, and the error guard. Real client-node and the loopback
// apiserver where a request is made.
//
//   PREFLIGHT_CLIENT=1x node --test tests/js/call-wrappers.test.js

const test = require('node:test');
const assert = require('node:assert/strict');

const { consumer, k8s, preflight, fastEnv, captureLogger, setup, newCheck, kubeConfigLike, TOKEN } = require('./support/harness');

const CALL_ENV = { ACTIONS_RUNNER_PREFLIGHT_CALL_DEADLINE_MS: '3000', ACTIONS_RUNNER_PREFLIGHT_REQUEST_TIMEOUT_MS: '500' };

test(`[${consumer.flavour}] the caller's own abort signal still ends a wrapped call, at once, with its own error`, { timeout: 20_000 }, async (t) => {
  const { server, kc } = await setup(t);
  const log = captureLogger();
  const api = preflight.resilientKubeConfig(kc, { env: fastEnv(CALL_ENV), logger: log.logger }).makeApiClient(k8s.CoreV1Api);
  await server.setPhase('hang');
  const caller = new AbortController();
  setTimeout(() => caller.abort(), 200);
  const from = server.requests.length;
  await assert.rejects(
    api.readNamespacedPod({ name: 'p', namespace: 'ci' }, preflight.withAbortSignal(caller.signal)),
    (e) => {
      assert.equal(preflight.isCallGaveUpError(e), false, `the call was not cancelled: ${e && e.message}`);
      assert.match(String(e && (e.name || e.message)), /Abort/);
      return true;
    },
  );
  // Cancelled during its first attempt: nothing was sent again.
  assert.equal(server.requests.length - from, 1);
  await server.setPhase('healthy');
});

test(`[${consumer.flavour}] retryK8sApiCall whose every attempt times out gives up with CallGaveUpError, never our own abort error`, { timeout: 30_000 }, async () => {
  for (let i = 0; i < 4; i++) {
    const log = captureLogger();
    await assert.rejects(
      preflight.retryK8sApiCall(
        (signal) =>
          new Promise((_, reject) => {
            signal.addEventListener('abort', () => {
              const e = new Error('The operation was aborted');
              e.name = 'AbortError';
              reject(e);
            });
          }),
        { env: fastEnv({ ACTIONS_RUNNER_PREFLIGHT_CALL_DEADLINE_MS: '1000', ACTIONS_RUNNER_PREFLIGHT_REQUEST_TIMEOUT_MS: '200' }), logger: log.logger },
      ),
      (e) => {
        assert.ok(preflight.isCallGaveUpError(e), `run ${i}: ${e && e.name}: ${e && e.message}`);
        return true;
      },
    );
  }
});

test(`[${consumer.flavour}] retryK8sApiCall that got an answer from the API and then only its own timeouts rethrows that answer`, { timeout: 30_000 }, async () => {
  for (const ignoresSignal of [false, true]) {
    // An env of its own: the first give-up is a known outage on its env.
    const env = fastEnv({ ACTIONS_RUNNER_PREFLIGHT_CALL_DEADLINE_MS: '1000', ACTIONS_RUNNER_PREFLIGHT_REQUEST_TIMEOUT_MS: '200' });
    let calls = 0;
    const unavailable = Object.assign(new Error('HTTP-Code: 503 Message: Service Unavailable'), { code: 503 });
    const fn = (signal) => {
      calls += 1;
      if (calls === 1) return Promise.reject(unavailable);
      // Then nothing answers: ended by the policy's own timeout.
      return new Promise((_, reject) => {
        if (ignoresSignal) return;
        signal.addEventListener('abort', () => reject(Object.assign(new Error('The operation was aborted'), { name: 'AbortError' })));
      });
    };
    await assert.rejects(preflight.retryK8sApiCall(fn, { env, logger: captureLogger().logger }), (e) => {
      assert.equal(e, unavailable, `${ignoresSignal ? 'an fn that ignores its signal' : 'an fn that aborts'}: ${e && e.name}: ${e && e.message}`);
      return true;
    });
    assert.ok(calls > 1, `retried after the 503: ${calls} calls`);
  }
});

test(`[${consumer.flavour}] the kubeconfig's token never appears in a wrapped call's lines or give-up`, { timeout: 20_000 }, async () => {
  const token = 'wrapped-call-secret-0123456789abcdef';
  let calls = 0;
  // A client whose error quotes the token in its own words (not after "Bearer").
  const kc = {
    getCurrentUser: () => ({ name: 'u', token }),
    makeApiClient: () => ({
      async readNamespacedPod() {
        calls += 1;
        const e = new Error(`connect failed for user with token ${token}`);
        e.code = 'ECONNRESET';
        throw e;
      },
    }),
  };
  const lines = [];
  const logger = { debug: (m) => lines.push(m), info: (m) => lines.push(m), warning: (m) => lines.push(m), error: (m) => lines.push(m) };
  const api = preflight.resilientKubeConfig(kc, { env: fastEnv({ ACTIONS_RUNNER_PREFLIGHT_CALL_DEADLINE_MS: '1000' }), logger }).makeApiClient(class {});
  let thrown;
  await api.readNamespacedPod({ name: 'p', namespace: 'ci' }).catch((e) => {
    thrown = e;
  });
  assert.ok(calls > 1, 'retried');
  assert.ok(preflight.isCallGaveUpError(thrown));
  const text = [...lines, thrown.message].join('\n');
  assert.ok(lines.length > 2, 'a warning and debug lines were printed');
  assert.ok(text.includes('<redacted>'), text);
  assert.ok(!text.includes(token.slice(0, 12)), text);
});

test(`[${consumer.flavour}] isCallGaveUpError is false for a revoked Proxy, never a throw`, () => {
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  assert.equal(preflight.isCallGaveUpError(proxy), false);
  assert.equal(preflight.isCallGaveUpError(null), false);
});

/**
 * A TCP proxy on 127.0.0.1 in front of `target` (host, port): the first
 * `silent` connections are accepted and never answered (no TLS handshake:
 * a stale endpoint), the rest are piped through.
 */
async function silentFirst(target, silent) {
  const net = require('node:net');
  const held = new Set();
  let seen = 0;
  const proxy = net.createServer((client) => {
    seen += 1;
    held.add(client);
    client.on('close', () => held.delete(client));
    client.on('error', () => {});
    if (seen <= silent) return;
    const upstream = net.connect(target.port, target.host);
    upstream.on('error', () => client.destroy());
    client.pipe(upstream).pipe(client);
  });
  await new Promise((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  return {
    port: proxy.address().port,
    connections: () => seen,
    close: () =>
      new Promise((resolve) => {
        for (const c of held) c.destroy();
        proxy.close(resolve);
      }),
  };
}

test(`[${consumer.flavour}] an exec whose connection is never made (a stale endpoint that accepts and stays silent) is set up again, and its command runs once`, { timeout: 30_000 }, async (t) => {
  const { server, kc } = await setup(t, { podRunningAfterMs: 0 });
  const seeded = server.seed('pods', 'ci', { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', labels: { a: 'b' } }, spec: { containers: [{ name: 'job', image: 'x' }] } });
  assert.equal(seeded.code, 201);
  const cluster = kc.getCurrentCluster();
  const target = new URL(cluster.server);
  const proxy = await silentFirst({ host: target.hostname, port: Number(target.port) }, 1);
  t.after(() => proxy.close());
  // The same kubeconfig, through the proxy.
  const viaProxy = kubeConfigLike(kc, { server: `https://127.0.0.1:${proxy.port}` });
  const log = captureLogger();
  const exec = preflight.resilientExec(viaProxy, { env: fastEnv({ ACTIONS_RUNNER_PREFLIGHT_CALL_DEADLINE_MS: '8000' }), logger: log.logger });
  const { Writable } = require('node:stream');
  const sink = () => new Writable({ write: (_c, _e, done) => done() });
  const status = await new Promise((resolve, reject) => {
    exec.exec('ci', 'p', 'job', ['echo', 'once'], sink(), sink(), null, false, resolve).catch(reject);
  });
  assert.equal(status.status, 'Success', JSON.stringify(status));
  assert.ok(proxy.connections() >= 2, `connections: ${proxy.connections()}`);
  assert.equal(server.execs.length, 1, 'the command ran exactly once');
  assert.equal(log.warnings.length, 1, JSON.stringify(log.warnings));
  assert.match(log.warnings[0], /did not answer exec for "p"/);
});

// ---- the second attack -------------------------------------------------------

const util = require('node:util');
const { Writable } = require('node:stream');

const sink = () => new Writable({ write: (_c, _e, done) => done() });
const POD = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', labels: { a: 'b' } }, spec: { containers: [{ name: 'job', image: 'x' }] } };

/** Every form a host may print an error in. */
function printed(e) {
  return [
    String(e && e.message),
    String(e && e.stack),
    util.inspect(e, { depth: null, showHidden: true }),
    (() => {
      try {
        return JSON.stringify(e);
      } catch {
        return '';
      }
    })(),
  ].join('\n');
}

test(`[${consumer.flavour}] no form of a give-up holds the token: not its cause, at any depth`, { timeout: 30_000 }, async (t) => {
  const { server, kc } = await setup(t, { podRunningAfterMs: 0 });
  assert.equal(server.seed('pods', 'ci', POD).code, 201);
  const log = captureLogger();
  const exec = preflight.resilientExec(kc, { env: fastEnv({ ACTIONS_RUNNER_PREFLIGHT_CALL_DEADLINE_MS: '3000' }), logger: log.logger });
  // A 500 to the upgrade may come after the command started: a give-up at
  // once, whose cause was the ws client's error event (the request in it).
  server.armTrigger({ route: 'exec pods' }, [{ phase: 'error500', echoToken: true, ms: 300 }, { phase: 'healthy' }]);
  const e = await exec.exec('ci', 'p', 'job', ['true'], sink(), sink(), null, false, () => {}).then(
    () => assert.fail('the exec resolved'),
    (error) => error,
  );
  assert.ok(preflight.isCallGaveUpError(e), String(e && e.stack));
  assert.ok(e.cause, 'the give-up keeps a cause');
  const text = printed(e);
  assert.ok(!text.includes(TOKEN.slice(0, 12)), text.slice(0, 4000));
  assert.ok(!/Bearer [^<\s]/.test(text), text.slice(0, 4000));
});

test(`[${consumer.flavour}] no form of the check's error holds the token`, { timeout: 30_000 }, async (t) => {
  const { server, kc, cacheDir } = await setup(t);
  await server.setPhase('unauthorized401', { echoToken: true });
  const check = newCheck({ kc, cacheDir, env: fastEnv({ DEADLINE_MS: '1500' }) });
  const e = await check.isAuthPermissionsOK().then(
    () => assert.fail('the check passed'),
    (error) => error,
  );
  const text = printed(e);
  assert.ok(!text.includes(TOKEN.slice(0, 12)), text.slice(0, 4000));
});

test(`[${consumer.flavour}] what is learned of one cluster's outage leaves a call to another cluster its retries`, { timeout: 30_000 }, async (t) => {
  const a = await setup(t);
  const b = await setup(t);
  const env = fastEnv({ ACTIONS_RUNNER_PREFLIGHT_CALL_DEADLINE_MS: '1000' });
  const dead = preflight.resilientKubeConfig(a.kc, { env, logger: captureLogger().logger }).makeApiClient(k8s.CoreV1Api);
  const healthy = preflight.resilientKubeConfig(b.kc, { env, logger: captureLogger().logger }).makeApiClient(k8s.CoreV1Api);
  await a.server.setPhase('refuse');
  const gaveUp = await dead.listNamespacedPod({ namespace: 'ci' }).then(
    () => assert.fail('a refused cluster answered'),
    (e) => e,
  );
  assert.ok(preflight.isCallGaveUpError(gaveUp), String(gaveUp));
  // Cluster B answers 503 once, then is healthy: its call retries.
  b.server.armTrigger({ route: 'list pods' }, [{ phase: 'unavailable503', ms: 0 }, { phase: 'healthy' }]);
  const list = await healthy.listNamespacedPod({ namespace: 'ci' });
  assert.ok(Array.isArray(list.items));
});

test(`[${consumer.flavour}] resilientLog retries a refused connection as a read, and never says a command may have started`, { timeout: 30_000 }, async (t) => {
  const { server, kc } = await setup(t, { podRunningAfterMs: 0 });
  assert.equal(server.seed('pods', 'ci', POD).code, 201);
  const log = captureLogger();
  const logs = preflight.resilientLog(kc, { env: fastEnv({ ACTIONS_RUNNER_PREFLIGHT_CALL_DEADLINE_MS: '6000' }), logger: log.logger });
  server.runTimeline([{ phase: 'refuse', ms: 700 }, { phase: 'healthy' }]);
  const from = server.requests.length;
  const outcome = await logs.log('ci', 'p', 'job', sink(), { follow: false }).then(
    (value) => ({ value }),
    (error) => ({ error }),
  );
  // The apiserver was reached after the refusals: its answer (whatever the
  // loopback server makes of a log read) is the call's, never a give-up.
  assert.ok(server.requests.length > from, 'no request reached the apiserver');
  if (outcome.error) {
    assert.equal(preflight.isCallGaveUpError(outcome.error), false, String(outcome.error && outcome.error.message));
  }
  const text = [...log.warnings, ...log.infos, outcome.error ? outcome.error.message : ''].join('\n');
  assert.doesNotMatch(text, /command may have started/);
});

test(`[${consumer.flavour}] the wrappers leave the host's agent as they found it: many execs, no listener warning, a plain Exec still works`, { timeout: 60_000 }, async (t) => {
  const { server, kc } = await setup(t, { podRunningAfterMs: 0 });
  assert.equal(server.seed('pods', 'ci', POD).code, 201);
  const warnings = [];
  const onWarning = (w) => warnings.push(w);
  process.on('warning', onWarning);
  t.after(() => process.off('warning', onWarning));
  const probe = {};
  await kc.applyToHTTPSOptions(probe);
  const agent = probe.agent;
  const own = Object.hasOwn(agent, 'createConnection');
  const exec = preflight.resilientExec(kc, { env: fastEnv(), logger: captureLogger().logger });
  const run = (api) =>
    new Promise((resolve, reject) => {
      api.exec('ci', 'p', 'job', ['true'], sink(), sink(), null, false, resolve).catch(reject);
    });
  for (let i = 0; i < 15; i++) assert.equal((await run(exec)).status, 'Success');
  assert.equal(Object.hasOwn(agent, 'createConnection'), own, "the host's agent got a createConnection of ours");
  assert.equal((await run(new k8s.Exec(kc))).status, 'Success');
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(warnings.filter((w) => w.name === 'MaxListenersExceededWarning').map(String), []);
  assert.equal(server.execs.length, 16);
});

test(`[${consumer.flavour}] two execs at once, the first meeting a stale endpoint: each is set up again on its own and runs once`, { timeout: 30_000 }, async (t) => {
  const { server, kc } = await setup(t, { podRunningAfterMs: 0 });
  assert.equal(server.seed('pods', 'ci', POD).code, 201);
  const cluster = kc.getCurrentCluster();
  const target = new URL(cluster.server);
  const proxy = await silentFirst({ host: target.hostname, port: Number(target.port) }, 1);
  t.after(() => proxy.close());
  const viaProxy = kubeConfigLike(kc, { server: `https://127.0.0.1:${proxy.port}` });
  const exec = preflight.resilientExec(viaProxy, { env: fastEnv({ ACTIONS_RUNNER_PREFLIGHT_CALL_DEADLINE_MS: '8000' }), logger: captureLogger().logger });
  const run = (word) =>
    new Promise((resolve, reject) => {
      exec.exec('ci', 'p', 'job', ['echo', word], sink(), sink(), null, false, resolve).catch(reject);
    });
  const [first, second] = await Promise.all([run('one'), run('two')]);
  assert.equal(first.status, 'Success', JSON.stringify(first));
  assert.equal(second.status, 'Success', JSON.stringify(second));
  assert.equal(server.execs.length, 2, 'each command ran exactly once');
});

'use strict';
// What the wrappers may only do on proof, and what they must never show:
// an exec set up again only when its connection was provably never made
// (an HTTP answer instead of the switch proves nothing), a slow TLS
// handshake awaited as long as an answer, the credential hidden from every
// error thrown (the client's own included), retryK8sApiCall's credential
// and cluster, the outage memory per cluster as the kubeconfig is now and
// on one clock, and the caller's own abort reason. Real client-node and
// the loopback apiserver.
//
//   PREFLIGHT_CLIENT=1x node --test tests/js/call-proofs.test.js

const test = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');
const util = require('node:util');
const { Readable, Writable } = require('node:stream');

const { consumer, k8s, preflight, fastEnv, captureLogger, setup, kubeConfigLike, TOKEN } = require('./support/harness');

const F = `[${consumer.flavour}]`;
const POD = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', labels: { a: 'b' } }, spec: { containers: [{ name: 'job', image: 'x' }] } };
const sink = () => new Writable({ write: (_c, _e, done) => done() });

function settle(promise) {
  return Promise.resolve(promise).then(
    (value) => ({ ok: true, value }),
    (error) => ({ ok: false, error }),
  );
}

/** exec(...) of `command` in pod p: its promise, the status callback's value kept in `.status`. */
function execOf(api, command) {
  const run = { status: null };
  run.promise = new Promise((resolve, reject) => {
    api.exec('ci', 'p', 'job', command, sink(), sink(), null, false, (status) => {
      run.status = status;
      resolve(status);
    }).catch(reject);
  });
  return run;
}

/** A piece of `secret` (`length` characters) found in `text`, or null. */
function pieceIn(text, secret, length) {
  for (let i = 0; i + length <= secret.length; i++) {
    const piece = secret.slice(i, i + length);
    if (text.includes(piece)) return piece;
  }
  return null;
}

/** Every form a host may print an error in. */
function printed(e) {
  let json = '';
  try {
    json = JSON.stringify(e);
  } catch {
    json = '';
  }
  return [String(e && e.message), String(e && e.stack), util.inspect(e, { depth: null, showHidden: true }), json].join('\n');
}

const startedWith = (server, marker) => server.execs.filter((x) => JSON.stringify(x.command).includes(marker));

for (const status of [503, 429, 401, 403]) {
  test(`${F} an exec whose command started and whose upgrade was then answered ${status} is never set up again`, { timeout: 30_000 }, async (t) => {
    const marker = `marker-${status}`;
    const { server, kc } = await setup(t, { podRunningAfterMs: 0, execResults: [{ contains: marker, upgradeStatus: status }] });
    assert.equal(server.seed('pods', 'ci', POD).code, 201);
    const exec = preflight.resilientExec(kc, { env: fastEnv({ ACTIONS_RUNNER_PREFLIGHT_CALL_DEADLINE_MS: '5000' }), logger: captureLogger().logger });
    const outcome = await settle(execOf(exec, ['sh', '-c', `echo ${marker}`]).promise);
    // A retry after the compressed backoff (at most 400 ms) would have started by now.
    await new Promise((resolve) => setTimeout(resolve, 800));
    assert.equal(startedWith(server, marker).length, 1, `the command started ${startedWith(server, marker).length} times`);
    assert.equal(outcome.ok, false, 'exec() resolved, though its upgrade was answered with an error');
  });
}

test(`${F} an exec refused 403 by an admission webhook is thrown at once, as the plain client throws it`, { timeout: 30_000 }, async (t) => {
  const { server, kc } = await setup(t, { podRunningAfterMs: 0 });
  assert.equal(server.seed('pods', 'ci', POD).code, 201);
  await server.setPhase('forbidden403');
  const plain = await settle(execOf(new k8s.Exec(kc), ['true']).promise);
  const before = server.requests.length;
  const exec = preflight.resilientExec(kc, { env: fastEnv({ ACTIONS_RUNNER_PREFLIGHT_CALL_DEADLINE_MS: '20000' }), logger: captureLogger().logger });
  const wrapped = await settle(execOf(exec, ['true']).promise);
  await server.setPhase('healthy');
  assert.equal(plain.ok, false);
  assert.equal(wrapped.ok, false);
  assert.equal(server.requests.length - before, 1, 'the upgrade was sent again');
  assert.equal(wrapped.error.message, plain.error.message);
  assert.equal(Object.getPrototypeOf(wrapped.error), Object.getPrototypeOf(plain.error));
});

test(`${F} the client's own error, thrown unchanged, holds no token: an exec to a missing pod`, { timeout: 30_000 }, async (t) => {
  const { kc } = await setup(t, { podRunningAfterMs: 0 });
  const plain = await settle(execOf(new k8s.Exec(kc), ['true']).promise);
  const exec = preflight.resilientExec(kc, { env: fastEnv(), logger: captureLogger().logger });
  const wrapped = await settle(execOf(exec, ['true']).promise);
  assert.equal(plain.ok, false);
  assert.equal(wrapped.ok, false);
  assert.equal(wrapped.error.message, plain.error.message, 'the same error');
  assert.equal(Object.getPrototypeOf(wrapped.error), Object.getPrototypeOf(plain.error));
  const text = printed(wrapped.error);
  assert.ok(!text.includes(TOKEN.slice(0, 12)), text.slice(0, 3000));
});

test(`${F} an exec set-up error thrown as the client's own holds no token in any form, even where it cannot be hidden in place`, { timeout: 60_000 }, async (t) => {
  const { kc } = await setup(t, { podRunningAfterMs: 0 });
  // client-node's own ws (its ErrorEvent keeps the message behind a getter).
  const wsMain = require.resolve('ws', { paths: [require.resolve('@kubernetes/client-node', { paths: [consumer.consumerDir] })] });
  const { ErrorEvent } = require(require('node:path').join(require('node:path').dirname(wsMain), 'lib', 'event-target.js'));
  // Errors with no sign of a transport failure: the wrapped exec throws them
  // as the plain client does, at once, so every form of them must be clean.
  const errors = {
    frozen: () => Object.freeze(new Error(`frozen ${TOKEN}`)),
    'a ws ErrorEvent (its message behind a getter)': () => new ErrorEvent('error', { error: new Error('inner'), message: `event ${TOKEN}` }),
    'a string cause': () => Object.assign(new Error('string cause'), { cause: `header Authorization=${TOKEN}` }),
    'strings in errors': () => Object.assign(new Error('string errors'), { errors: [`t=${TOKEN}`] }),
    'a symbol key': () => Object.assign(new Error('symbol key'), { [Symbol('request')]: { headers: { authorization: `Bearer ${TOKEN}` } } }),
    'a hidden property': () => Object.defineProperty(new Error('hidden'), 'config', { value: { token: TOKEN }, enumerable: false }),
    'a deep object': () => Object.assign(new Error('deep'), { a: { b: { c: { d: { e: TOKEN } } } } }),
    'a thrown string': () => `thrown ${TOKEN}`,
  };
  const original = k8s.Exec.prototype.exec;
  let make = null;
  k8s.Exec.prototype.exec = async function () {
    throw make();
  };
  t.after(() => {
    k8s.Exec.prototype.exec = original;
  });
  for (const [name, thrower] of Object.entries(errors)) {
    make = thrower;
    const exec = preflight.resilientExec(kc, { env: fastEnv(), logger: captureLogger().logger });
    for (const stdin of [null, Readable.from([])]) {
      const what = `${name}, ${stdin ? 'plain' : 'durable'}`;
      const wrapped = await settle(exec.exec('ci', 'p', 'job', ['true'], null, null, stdin, false, () => {}));
      assert.equal(wrapped.ok, false, what);
      const text = typeof wrapped.error === 'string' ? wrapped.error : printed(wrapped.error);
      assert.equal(pieceIn(text, TOKEN, 12), null, `${what}: ${text.slice(0, 2000)}`);
      assert.equal(preflight.isCallGaveUpError(wrapped.error), false, `${what}: thrown as the client's own, not a give-up`);
    }
  }
});

test(`${F} a token the HTTP client will not send is in no form of the wrapped call's error`, { timeout: 30_000 }, async (t) => {
  const { kc } = await setup(t);
  const bad = kubeConfigLike(kc, { token: `${TOKEN}\n` });
  const plain = await settle(bad.makeApiClient(k8s.CoreV1Api).listNamespacedPod({ namespace: 'ci' }));
  const lines = [];
  const logger = { debug: (m) => lines.push(m), info: (m) => lines.push(m), warning: (m) => lines.push(m), error: (m) => lines.push(m) };
  const api = preflight.resilientKubeConfig(bad, { env: fastEnv({ ACTIONS_RUNNER_PREFLIGHT_CALL_DEADLINE_MS: '2000' }), logger }).makeApiClient(k8s.CoreV1Api);
  const wrapped = await settle(api.listNamespacedPod({ namespace: 'ci' }));
  // 2.x's client sends the newline (its server takes the token): whatever
  // the plain client got, the wrapped one gets.
  assert.equal(wrapped.ok, plain.ok);
  if (!wrapped.ok) {
    const text = printed(wrapped.error) + lines.join('\n');
    assert.ok(!text.includes(TOKEN.slice(0, 12)), text.slice(0, 3000));
  }
});

test(`${F} retryK8sApiCall hides the credential of the kubeconfig it is given, and of the default one`, { timeout: 30_000 }, async (t) => {
  const { kc, kubeconfigPath } = await setup(t);
  const quoting = async () => {
    const e = new Error(`the replica did not accept ${TOKEN}`);
    e.code = 'ECONNRESET';
    throw e;
  };
  const env = fastEnv({ ACTIONS_RUNNER_PREFLIGHT_CALL_DEADLINE_MS: '1000' });
  const previous = process.env.KUBECONFIG;
  process.env.KUBECONFIG = kubeconfigPath;
  t.after(() => {
    if (previous === undefined) delete process.env.KUBECONFIG;
    else process.env.KUBECONFIG = previous;
  });
  for (const options of [{ kubeConfig: kc }, {}]) {
    const lines = [];
    const logger = { debug: (m) => lines.push(m), info: (m) => lines.push(m), warning: (m) => lines.push(m), error: (m) => lines.push(m) };
    const outcome = await settle(preflight.retryK8sApiCall(quoting, { ...options, env: { ...env }, logger }));
    assert.equal(outcome.ok, false);
    const text = printed(outcome.error) + lines.join('\n');
    assert.ok(lines.length > 1, 'retried, with lines');
    assert.ok(!text.includes(TOKEN.slice(0, 12)), `${Object.keys(options)}: ${text.slice(0, 3000)}`);
  }
});

/**
 * A TCP relay on 127.0.0.1 to `port` that holds the server's first bytes
 * (its TLS handshake) of every connection for `holdMs`: a slow but
 * healthy path.
 */
async function slowHandshake(port, holdMs) {
  const held = new Set();
  const relay = net.createServer((client) => {
    held.add(client);
    const upstream = net.connect(port, '127.0.0.1');
    held.add(upstream);
    const opened = performance.now();
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    client.pipe(upstream);
    upstream.on('data', (chunk) => {
      const wait = Math.max(0, holdMs - (performance.now() - opened));
      upstream.pause();
      setTimeout(() => {
        client.write(chunk);
        upstream.resume();
      }, wait);
    });
  });
  await new Promise((resolve) => relay.listen(0, '127.0.0.1', resolve));
  return {
    port: relay.address().port,
    close: () =>
      new Promise((resolve) => {
        for (const s of held) s.destroy();
        relay.close(resolve);
      }),
  };
}

test(`${F} an exec whose TLS handshake is slower than the request timeout is awaited, as the plain client awaits it`, { timeout: 30_000 }, async (t) => {
  const { server, kc } = await setup(t, { podRunningAfterMs: 0 });
  assert.equal(server.seed('pods', 'ci', POD).code, 201);
  const cluster = kc.getCurrentCluster();
  const relay = await slowHandshake(Number(new URL(cluster.server).port), 1_200);
  t.after(() => relay.close());
  const slow = kubeConfigLike(kc, { server: `https://127.0.0.1:${relay.port}` });
  // Request timeout 500 ms; an answer is awaited 2 s.
  const exec = preflight.resilientExec(slow, { env: fastEnv({ ACTIONS_RUNNER_PREFLIGHT_CALL_DEADLINE_MS: '8000' }), logger: captureLogger().logger });
  const status = await execOf(exec, ['echo', 'slow']).promise;
  assert.equal(status.status, 'Success', JSON.stringify(status));
  assert.equal(server.execs.length, 1);
});

/** A KubeConfig with two contexts, a and b, one per server. */
function twoClusters(a, b) {
  const kc = new k8s.KubeConfig();
  const user = a.kc.getCurrentUser();
  kc.loadFromOptions({
    clusters: [
      { ...a.kc.getCurrentCluster(), name: 'a' },
      { ...b.kc.getCurrentCluster(), name: 'b' },
    ],
    users: [{ ...user, name: 'u' }],
    contexts: [
      { name: 'a', cluster: 'a', user: 'u', namespace: 'ci' },
      { name: 'b', cluster: 'b', user: 'u', namespace: 'ci' },
    ],
    currentContext: 'a',
  });
  return kc;
}

test(`${F} the outage memory follows the kubeconfig's current cluster, not the one the wrapper was made with`, { timeout: 30_000 }, async (t) => {
  const a = await setup(t);
  const b = await setup(t);
  const kc = twoClusters(a, b);
  const wrapped = preflight.resilientKubeConfig(kc, { env: fastEnv({ ACTIONS_RUNNER_PREFLIGHT_CALL_DEADLINE_MS: '1000' }), logger: captureLogger().logger });
  const api = wrapped.makeApiClient(k8s.CoreV1Api);
  await a.server.setPhase('refuse');
  assert.equal((await settle(api.listNamespacedPod({ namespace: 'ci' }))).ok, false);
  kc.setCurrentContext('b');
  b.server.armTrigger({ route: 'list pods' }, [{ phase: 'unavailable503', ms: 0 }, { phase: 'healthy' }]);
  // The same wrapped kubeconfig, now pointing at b: a client made now
  // calls b, and so does an exec.
  const outcome = await settle(wrapped.makeApiClient(k8s.CoreV1Api).listNamespacedPod({ namespace: 'ci' }));
  assert.ok(outcome.ok, `a call to cluster b tried once: ${outcome.error && outcome.error.message}`);
  // The client made while a was current still calls a, and a is still down.
  assert.equal((await settle(api.listNamespacedPod({ namespace: 'ci' }))).ok, false);
  assert.equal(b.server.requests.filter((r) => r.route === 'list pods').length >= 2, true);
});

test(`${F} wrappers over one env object share what their calls learn of an outage; another env object knows nothing`, { timeout: 30_000 }, async (t) => {
  const { server, kc } = await setup(t);
  const env = fastEnv({ ACTIONS_RUNNER_PREFLIGHT_CALL_DEADLINE_MS: '1000' });
  const wrap = (e) => preflight.resilientKubeConfig(kc, { env: e, logger: captureLogger().logger }).makeApiClient(k8s.CoreV1Api);
  const lists = () => server.requests.filter((r) => r.route === 'list pods').length;
  await server.setPhase('unavailable503');
  assert.equal((await settle(wrap(env).listNamespacedPod({ namespace: 'ci' }))).ok, false);
  assert.ok(lists() > 1, `the first call retried: ${lists()} requests`);
  let before = lists();
  assert.equal((await settle(wrap(env).listNamespacedPod({ namespace: 'ci' }))).ok, false);
  assert.equal(lists() - before, 1, 'a second wrapper over the same env tries once');
  before = lists();
  assert.equal((await settle(wrap({ ...env }).listNamespacedPod({ namespace: 'ci' }))).ok, false);
  assert.ok(lists() - before > 1, `another env object retries: ${lists() - before} requests`);
});

test(`${F} retryK8sApiCall remembers an outage per cluster`, { timeout: 30_000 }, async () => {
  const env = fastEnv({ ACTIONS_RUNNER_PREFLIGHT_CALL_DEADLINE_MS: '1000' });
  const refused = async () => {
    const e = new Error('connect ECONNREFUSED 127.0.0.1:1');
    e.code = 'ECONNREFUSED';
    throw e;
  };
  const logger = captureLogger().logger;
  assert.equal((await settle(preflight.retryK8sApiCall(refused, { env, logger, cluster: 'https://a.example:6443' }))).ok, false);
  let calls = 0;
  const onceUnavailable = async () => {
    calls += 1;
    if (calls === 1) {
      const e = new Error('HTTP 503');
      e.code = 503;
      throw e;
    }
    return 'answered';
  };
  const outcome = await settle(preflight.retryK8sApiCall(onceUnavailable, { env, logger, cluster: 'https://b.example:6443' }));
  assert.ok(outcome.ok, `tried once: ${outcome.error && outcome.error.message}`);
  assert.equal(outcome.value, 'answered');
});

for (const [how, now] of [
  ['the wrappers\' own clock', undefined],
  ["a host's own now()", () => Date.now()],
]) {
  test(`${F} with ${how}, a wall clock stepped back between two calls does not stretch a known outage`, { timeout: 30_000 }, async (t) => {
    const { server, kc } = await setup(t);
    const env = fastEnv({ ACTIONS_RUNNER_PREFLIGHT_CALL_DEADLINE_MS: '1000' });
    const wrap = () => preflight.resilientKubeConfig(kc, { env, logger: captureLogger().logger, now }).makeApiClient(k8s.CoreV1Api);
    await server.setPhase('refuse');
    assert.equal((await settle(wrap().listNamespacedPod({ namespace: 'ci' }))).ok, false);
    await server.setPhase('healthy');
    const realNow = Date.now;
    Date.now = () => realNow() - 3_600_000;
    t.after(() => {
      Date.now = realNow;
    });
    // More than one call deadline later on the steady clock: no outage known.
    await new Promise((resolve) => setTimeout(resolve, 1_300));
    server.armTrigger({ route: 'list pods' }, [{ phase: 'unavailable503', ms: 0 }, { phase: 'healthy' }]);
    const outcome = await settle(wrap().listNamespacedPod({ namespace: 'ci' }));
    assert.ok(outcome.ok, `tried once: ${outcome.error && outcome.error.message}`);
  });
}

test(`${F} a call cancelled by the caller's signal rejects as the plain call does, never with an abort of ours`, { timeout: 30_000 }, async (t) => {
  const { server, kc } = await setup(t);
  await server.setPhase('hang');
  const reason = new Error('the caller cancelled');
  const abortedBefore = () => {
    const c = new AbortController();
    c.abort(reason);
    return c.signal;
  };
  const plain = await settle(kc.makeApiClient(k8s.CoreV1Api).listNamespacedPod({ namespace: 'ci' }, preflight.withAbortSignal(abortedBefore())));
  const api = preflight.resilientKubeConfig(kc, { env: fastEnv(), logger: captureLogger().logger }).makeApiClient(k8s.CoreV1Api);
  const wrapped = await settle(api.listNamespacedPod({ namespace: 'ci' }, preflight.withAbortSignal(abortedBefore())));
  await server.setPhase('healthy');
  assert.equal(plain.ok, false);
  assert.equal(wrapped.ok, false);
  assert.equal(String(wrapped.error && wrapped.error.message), String(plain.error && plain.error.message));
});

test(`${F} a bad setting is warned about once per settings environment, however many checks and calls read it`, { timeout: 60_000 }, async (t) => {
  const { server, kc, cacheDir } = await setup(t);
  assert.ok(server);
  // Generous timeouts: this is about warnings, not a loaded machine's speed.
  const env = fastEnv({ MAX_DELAY_MS: 'soon', CALL_DEADLINE_MS: 'later', CACHE: 'off', REQUEST_TIMEOUT_MS: 5000, DEADLINE_MS: 30000 });
  const log = captureLogger();
  const { newCheck } = require('./support/harness');
  for (let i = 0; i < 3; i++) assert.equal(await newCheck({ kc, cacheDir, env, logger: log.logger }).isAuthPermissionsOK(), true);
  await preflight.resilientKubeConfig(kc, { env, logger: log.logger }).makeApiClient(k8s.CoreV1Api).listNamespacedPod({ namespace: 'ci' });
  await preflight.retryK8sApiCall(async () => 'ok', { env, logger: log.logger, kubeConfig: kc });
  for (const name of ['ACTIONS_RUNNER_PREFLIGHT_MAX_DELAY_MS', 'ACTIONS_RUNNER_PREFLIGHT_CALL_DEADLINE_MS']) {
    const about = log.warnings.filter((w) => w.startsWith(`${name}=`));
    assert.equal(about.length, 1, `${name}: ${about.length} warnings\n${log.warnings.join('\n')}`);
  }
});

for (const [what, token] of [
  ['with quotes and a backslash (escaped in a JSON body)', 'Ab1"Cd2"Ef3"Gh4"Ij5\\Kl6-mn7'],
  ['shorter than a piece of eight', 'Sh0rt7x'],
]) {
  test(`${F} a token ${what} is hidden from a give-up quoting the apiserver's Status, and from every line`, { timeout: 30_000 }, async (t) => {
    const { server, kc } = await setup(t, { token });
    await server.setPhase('error500', { echoToken: true });
    const lines = [];
    const logger = { debug: (m) => lines.push(m), info: (m) => lines.push(m), warning: (m) => lines.push(m), error: (m) => lines.push(m) };
    const api = preflight.resilientKubeConfig(kc, { env: fastEnv({ ACTIONS_RUNNER_PREFLIGHT_CALL_DEADLINE_MS: '1000' }), logger }).makeApiClient(k8s.CoreV1Api);
    const outcome = await settle(api.listNamespacedPod({ namespace: 'ci' }));
    await server.setPhase('healthy');
    assert.equal(outcome.ok, false);
    const text = printed(outcome.error) + lines.join('\n');
    for (const form of [token, JSON.stringify(token).slice(1, -1)]) {
      const piece = pieceIn(text, form, 6);
      assert.equal(piece, null, `${JSON.stringify(piece)} of the token in:\n${text.slice(0, 3000)}`);
    }
  });
}

test(`${F} a final answer thrown as the client's own error hides the token in its headers too`, { timeout: 30_000 }, async (t) => {
  const { server, kc } = await setup(t);
  await server.setPhase('unauthorized401', { echoToken: true });
  const env = fastEnv({ ACTIONS_RUNNER_PREFLIGHT_CALL_AUTH_RETRY_MS: '0' });
  const api = preflight.resilientKubeConfig(kc, { env, logger: captureLogger().logger }).makeApiClient(k8s.CoreV1Api);
  const outcome = await settle(api.listNamespacedPod({ namespace: 'ci' }));
  await server.setPhase('healthy');
  assert.equal(outcome.ok, false);
  assert.ok(outcome.error instanceof k8s.ApiException, String(outcome.error));
  assert.equal(outcome.error.code, 401);
  const text = printed(outcome.error);
  const piece = pieceIn(text, TOKEN, 6);
  assert.equal(piece, null, `${JSON.stringify(piece)} of the token in:\n${text.slice(0, 3000)}`);
});

test(`${F} retryK8sApiCall hides the credential in its error's causes, at any depth`, { timeout: 30_000 }, async (t) => {
  const { kc } = await setup(t);
  const bad = kubeConfigLike(kc, { token: `${TOKEN}\n` });
  const api = bad.makeApiClient(k8s.CoreV1Api);
  const plain = await settle(api.listNamespacedPod({ namespace: 'ci' }));
  const outcome = await settle(
    preflight.retryK8sApiCall(
      async () => {
        try {
          return await api.listNamespacedPod({ namespace: 'ci' });
        } catch (e) {
          throw new Error('reading the job pod failed', { cause: new Error('the client failed', { cause: e }) });
        }
      },
      { kubeConfig: bad, env: fastEnv({ ACTIONS_RUNNER_PREFLIGHT_CALL_DEADLINE_MS: '1000' }), logger: captureLogger().logger },
    ),
  );
  assert.equal(outcome.ok, plain.ok);
  if (!outcome.ok) {
    const text = printed(outcome.error);
    assert.ok(!text.includes(TOKEN.slice(0, 12)), text.slice(0, 3000));
  }
});

'use strict';
// The call wrappers and the check through a proxy: a kubeconfig whose
// cluster has `proxy-url` set, to the loopback SOCKS5 proxy
// (tests/support/socks5-proxy.js) and to the HTTP CONNECT proxy
// (tests/support/connect-proxy.js), through the real, installed
// @kubernetes/client-node.
//
// How client-node honours proxy-url (read in its dist/config.js
// createAgent, and for 2.x REST createDispatcher): 1.x and 2.x both
// support socks5:// and http:// proxies for REST calls and for exec, so no
// combination is skipped here:
// - exec (ws) through socks5://: socks-proxy-agent's SocksProxyAgent (an
//   http.Agent, not an https.Agent, through agent-base), whose
//   createConnection() returns the TLSSocket it made once the SOCKS
//   handshake succeeded; that socket emits 'secureConnect', never
//   'connect'. A target refused: a SocksClientError "Socks5 proxy rejected
//   connection - ConnectionRefused", no code.
// - exec through http://: hpagent's HttpsProxyAgent (an https.Agent), whose
//   createConnection() returns undefined and hands a TLSSocket to its
//   callback after the CONNECT's 200; a target refused: Error "Bad
//   response: 503", no code.
// - REST, 1.x: node-fetch with the same agents (FetchError "request to ...
//   failed, reason: <message>", code undefined when the agent's error had
//   none); 2.x: undici fetch with an undici Agent whose connect() speaks
//   SOCKS (TypeError "fetch failed", cause the SocksClientError) or undici's
//   ProxyAgent (cause DOMException "Request was cancelled.", its cause
//   RequestAbortedError UND_ERR_ABORTED "Proxy response (503) !== 200 when
//   HTTP Tunneling").
//
// Rules (tests-first for fixes in js-shim/ and src/):
// a. a script never runs twice: an exec whose command started is never set
//    up again (its 101 lost, a 502 after it started), and a late 101 is
//    awaited, not cut;
// b. a refused apiserver behind a proxy is transient (a list, a create, the
//    permission check succeed once it listens again);
// c. an exec whose upgrade the proxy refused (the target refused) is set up
//    again and runs once.
//
//   PREFLIGHT_CLIENT=1x node --test --test-concurrency=1 tests/js/proxy.test.js

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const { consumer, k8s, preflight, NAMESPACE, fastEnv, captureLogger, setup, loadKubeConfig, waitFor, startExec, execsOf } = require('./support/harness');
const { startSocks5Proxy } = require('../support/socks5-proxy');
const { startConnectProxy } = require('../support/connect-proxy');

const F = `[${consumer.flavour}]`;

/**
 * The proxies, and what the installed client supports of them. Both client
 * lines honour socks5:// and http:// for REST and exec (see the header);
 * a `skip` here would say why a combination cannot run.
 */
const PROXIES = [
  { kind: 'socks5', start: () => startSocks5Proxy({}), skip: { rest: false, exec: false } },
  { kind: 'connect', start: () => startConnectProxy(), skip: { rest: false, exec: false } },
];

/** The settings of rule a: 8 s per call, 1 s per request. */
const EXEC_ENV = { CALL_DEADLINE_MS: '8000', REQUEST_TIMEOUT_MS: '1000' };
/** Rule b: long enough a call for a 3 s refusal. */
const REFUSAL_MS = 3000;
const REFUSED_ENV = { CALL_DEADLINE_MS: '12000', REQUEST_TIMEOUT_MS: '1000' };

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A server (setup's, with `serverOptions`), a proxy of `kind`, and a
 * kubeconfig file for the server whose cluster has `proxy-url: <proxy>`,
 * loaded as a user's would be. Everything closed in t.after.
 */
async function proxied(t, proxyDef, serverOptions = {}) {
  const ctx = await setup(t, serverOptions);
  const proxy = await proxyDef.start();
  t.after(() => proxy.close());
  const file = path.join(ctx.work, 'kubeconfig-proxied.yaml');
  const yaml = fs.readFileSync(ctx.kubeconfigPath, 'utf8');
  const withProxy = yaml.replace(/^( {4}server: .*)$/m, `$1\n    proxy-url: ${JSON.stringify(proxy.url)}`);
  assert.notEqual(withProxy, yaml, 'the kubeconfig has a server line to put proxy-url under');
  fs.writeFileSync(file, withProxy, { mode: 0o600 });
  const kc = loadKubeConfig(file);
  assert.equal(kc.getCurrentCluster().proxyUrl, proxy.url, 'client-node read proxy-url');
  return { ...ctx, kc, direct: ctx.kc, proxy };
}

/** The job pod, Running at once (setup with podRunningAfterMs: 0), put straight into the store. */
function seedPod(server, name = 'job-pod') {
  const made = server.seed('pods', NAMESPACE, {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: { containers: [{ name: 'job', image: 'node:20' }], restartPolicy: 'Never' },
  });
  assert.equal(made.code, 201);
}

/** A logger that keeps every line, debug included. */
function captureAll() {
  const lines = { all: [] };
  const keep = (level) => (message) => lines.all.push(`${level}: ${message}`);
  lines.logger = { debug: keep('debug'), info: keep('info'), warning: keep('warning'), error: keep('error') };
  return lines;
}

/** How a promise settled: { ok: true, value } or { ok: false, error }. Never rejects. */
function settle(promise) {
  return Promise.resolve(promise).then(
    (value) => ({ ok: true, value }),
    (error) => ({ ok: false, error }),
  );
}

/** An error in a line: its class, name, code, message, and its causes'. */
function describeError(e, depth = 0) {
  if (!e || typeof e !== 'object' || depth > 4) return String(e);
  const self = `${(e.constructor && e.constructor.name) || 'Object'}${e.code !== undefined ? `[${e.code}]` : ''}: ${e.message}`;
  const inner = e.cause || e.error;
  return inner ? `${self} <- ${describeError(inner, depth + 1)}` : self;
}

/** Waits for a Status, at most `ms`; null when none came. */
function statusWithin(run, ms) {
  return Promise.race([run.status, sleep(ms).then(() => null)]);
}

function closeRun(run) {
  try {
    if (run && run.socket && typeof run.socket.terminate === 'function') run.socket.terminate();
  } catch {
    // already closed
  }
}

const routed = (server, route) => server.requests.filter((r) => r.route === route);

/** The proxy's refusals of a refused target: SOCKS reply 0x05, or the CONNECT proxy's 503. */
const refusals = (proxy) => proxy.connections.filter((c) => c.reply === 0x05 || c.status === 503).length;

/**
 * Rule a: after an exec attempt whose command started, give a retry (had
 * there been one) time to happen, then check that the command started once.
 */
async function assertRanOnce(server, marker, outcome, log) {
  // A retry after the compressed back-off (at most 400 ms) would have started by now.
  await sleep(1000);
  const started = execsOf(server, marker);
  const upgrades = routed(server, 'exec pods');
  assert.equal(
    started.length,
    1,
    `the command started ${started.length} times (outcomes ${JSON.stringify(started.map((e) => e.outcome))}, ` +
      `${upgrades.length} upgrades ${JSON.stringify(upgrades.map((r) => r.status))}); exec() ` +
      `${outcome.ok ? 'resolved' : `rejected with ${describeError(outcome.error)}`}\n${log.all.join('\n')}`,
  );
}

for (const proxyDef of PROXIES) {
  const P = `${F} via ${proxyDef.kind} proxy`;
  const execSkip = proxyDef.skip.exec;
  const restSkip = proxyDef.skip.rest;

  // ---- a. a script never runs twice ------------------------------------------

  test(`${P}: exec whose command started and whose 101 was lost (applyThenCut) is not set up again; CallGaveUpError; ran once`, { timeout: 30_000, skip: execSkip }, async (t) => {
    const { server, kc, proxy } = await proxied(t, proxyDef, { podRunningAfterMs: 0 });
    seedPod(server);
    const log = captureAll();
    const exec = preflight.resilientExec(kc, { env: fastEnv(EXEC_ENV), logger: log.logger });
    server.armTrigger({ route: 'exec pods' }, [{ phase: 'applyThenCut', ms: 0 }, { phase: 'healthy' }]);
    const outcome = await settle(startExec(exec, 'job-pod', ['sh', '-c', 'echo marker-a1']));
    t.after(() => outcome.ok && closeRun(outcome.value));
    assert.ok(proxy.connections.length >= 1, 'the exec went through the proxy');
    await assertRanOnce(server, 'marker-a1', outcome, log);
    assert.equal(execsOf(server, 'marker-a1')[0].outcome, 'answer-lost');
    assert.equal(outcome.ok, false, 'exec() resolved, though its command had started and its answer was lost');
    assert.ok(preflight.isCallGaveUpError(outcome.error), describeError(outcome.error));
  });

  test(`${P}: exec whose command started and then got a 502 instead of 101 is not set up again; CallGaveUpError; ran once`, { timeout: 30_000, skip: execSkip }, async (t) => {
    const { server, kc, proxy } = await proxied(t, proxyDef, {
      podRunningAfterMs: 0,
      execResults: [{ contains: 'marker-a2', upgradeStatus: 502 }],
    });
    seedPod(server);
    const log = captureAll();
    const exec = preflight.resilientExec(kc, { env: fastEnv(EXEC_ENV), logger: log.logger });
    const outcome = await settle(startExec(exec, 'job-pod', ['sh', '-c', 'echo marker-a2']));
    t.after(() => outcome.ok && closeRun(outcome.value));
    assert.ok(proxy.connections.length >= 1, 'the exec went through the proxy');
    await assertRanOnce(server, 'marker-a2', outcome, log);
    assert.equal(execsOf(server, 'marker-a2')[0].outcome, 'answer-status');
    assert.equal(routed(server, 'exec pods')[0].status, 101, 'the server handed the upgrade to the exec handler');
    assert.equal(outcome.ok, false, 'exec() resolved, though its command had started and was answered 502');
    assert.ok(preflight.isCallGaveUpError(outcome.error), describeError(outcome.error));
  });

  test(`${P}: exec whose 101 comes 2.5 s after the command started (over the 1 s request timeout) is awaited: one run, Success`, { timeout: 30_000, skip: execSkip }, async (t) => {
    const { server, kc, proxy } = await proxied(t, proxyDef, {
      podRunningAfterMs: 0,
      execResults: [{ contains: 'marker-a3', delayUpgradeMs: 2500, stdout: 'ran\n' }],
    });
    seedPod(server);
    const log = captureAll();
    const exec = preflight.resilientExec(kc, { env: fastEnv(EXEC_ENV), logger: log.logger });
    const started = performance.now();
    const outcome = await settle(startExec(exec, 'job-pod', ['sh', '-c', 'echo marker-a3']));
    const elapsed = performance.now() - started;
    t.after(() => outcome.ok && closeRun(outcome.value));
    assert.ok(proxy.connections.length >= 1, 'the exec went through the proxy');
    await assertRanOnce(server, 'marker-a3', outcome, log);
    assert.equal(outcome.ok, true, `exec() rejected after ${Math.round(elapsed)} ms: ${describeError(outcome.error)}\n${log.all.join('\n')}`);
    const status = await statusWithin(outcome.value, 5000);
    assert.equal(status && status.status, 'Success', JSON.stringify(status));
    assert.equal(outcome.value.stdout(), 'ran\n');
    assert.equal(execsOf(server, 'marker-a3')[0].outcome, 'exited');
    assert.ok(elapsed >= 2400, `resolved after the late 101 (${Math.round(elapsed)} ms)`);
  });

  // ---- b. a refused apiserver behind a proxy is transient ----------------------

  /** Refuses for REFUSAL_MS from now, then listens again; resolves when healthy. */
  async function refuseFor(t, server) {
    await server.setPhase('refuse');
    let timer;
    const healthy = new Promise((resolve) => {
      timer = setTimeout(resolve, REFUSAL_MS);
    }).then(() => server.setPhase('healthy'));
    t.after(() => clearTimeout(timer));
    return healthy;
  }

  test(`${P}: a wrapped list through a 3 s refusal of the apiserver succeeds once it listens again`, { timeout: 30_000, skip: restSkip }, async (t) => {
    const { server, kc, proxy } = await proxied(t, proxyDef);
    const log = captureAll();
    const core = preflight.resilientKubeConfig(kc, { env: fastEnv(REFUSED_ENV), logger: log.logger }).makeApiClient(k8s.CoreV1Api);
    const started = performance.now();
    const healthy = refuseFor(t, server);
    const outcome = await settle(core.listNamespacedPod({ namespace: NAMESPACE }));
    const elapsed = performance.now() - started;
    await healthy;
    assert.ok(refusals(proxy) >= 1, `the proxy refused for the apiserver: ${JSON.stringify(proxy.connections)}`);
    assert.equal(outcome.ok, true, `failed after ${Math.round(elapsed)} ms: ${describeError(outcome.error)}\n${log.all.join('\n')}`);
    assert.deepEqual(outcome.value.items, []);
    assert.ok(elapsed >= REFUSAL_MS - 100, `succeeded after the refusal (${Math.round(elapsed)} ms)`);
    assert.equal(routed(server, 'list pods').length, 1, 'only the successful attempt reached the server');
  });

  test(`${P}: a wrapped create through a 3 s refusal of the apiserver makes the pod once it listens again`, { timeout: 30_000, skip: restSkip }, async (t) => {
    const { server, kc, proxy } = await proxied(t, proxyDef);
    const log = captureAll();
    const core = preflight.resilientKubeConfig(kc, { env: fastEnv(REFUSED_ENV), logger: log.logger }).makeApiClient(k8s.CoreV1Api);
    const body = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'job-b2' }, spec: { containers: [{ name: 'job', image: 'node:20' }] } };
    const started = performance.now();
    const healthy = refuseFor(t, server);
    const outcome = await settle(core.createNamespacedPod({ namespace: NAMESPACE, body }));
    const elapsed = performance.now() - started;
    await healthy;
    assert.ok(refusals(proxy) >= 1, `the proxy refused for the apiserver: ${JSON.stringify(proxy.connections)}`);
    assert.equal(outcome.ok, true, `failed after ${Math.round(elapsed)} ms: ${describeError(outcome.error)}\n${log.all.join('\n')}`);
    assert.equal(outcome.value.metadata.name, 'job-b2');
    assert.deepEqual(server.objects('pods'), [`${NAMESPACE}/job-b2`]);
    assert.deepEqual(
      server.objectLog.filter((e) => e.op === 'create').map((e) => e.code),
      [201],
      'one create reached the store',
    );
  });

  test(`${P}: the permission check through a 3 s refusal of the apiserver is true once it listens again`, { timeout: 30_000, skip: restSkip }, async (t) => {
    const { server, kc, cacheDir, proxy } = await proxied(t, proxyDef);
    const log = captureLogger();
    const check = preflight.createAuthPreflight({
      kubeConfig: kc,
      namespace: NAMESPACE,
      requiredPermissions: preflight.defaultRequiredPermissions,
      cacheDir,
      env: fastEnv(REFUSED_ENV),
      logger: log.logger,
    });
    const started = performance.now();
    const healthy = refuseFor(t, server);
    const outcome = await settle(check.isAuthPermissionsOK());
    const elapsed = performance.now() - started;
    await healthy;
    assert.ok(refusals(proxy) >= 1, `the proxy refused for the apiserver: ${JSON.stringify(proxy.connections)}`);
    const lines = log.all.map(([level, m]) => `${level}: ${m}`).join('\n');
    assert.equal(outcome.ok, true, `rejected after ${Math.round(elapsed)} ms: ${describeError(outcome.error)}\n${lines}`);
    assert.equal(outcome.value, true, `false after ${Math.round(elapsed)} ms: ${JSON.stringify(check.lastOutcome())}\n${lines}`);
    assert.ok(elapsed >= REFUSAL_MS - 100, `true after the refusal (${Math.round(elapsed)} ms)`);
    assert.equal(check.lastOutcome().verdict, 'allowed');
    assert.equal(server.counts().byKind.ssar, 13, 'each review reached the server once');
  });

  // ---- c. an exec refused by the proxy is set up again -------------------------

  test(`${P}: an exec whose upgrade the proxy refused (the apiserver refused it) is set up again and runs once`, { timeout: 30_000, skip: execSkip }, async (t) => {
    const { server, kc, proxy } = await proxied(t, proxyDef, { podRunningAfterMs: 0, execResults: [{ contains: 'marker-c', stdout: 'ran\n' }] });
    seedPod(server);
    const log = captureAll();
    const exec = preflight.resilientExec(kc, { env: fastEnv(EXEC_ENV), logger: log.logger });
    await server.setPhase('refuse');
    const pending = settle(startExec(exec, 'job-pod', ['sh', '-c', 'echo marker-c']));
    // Healthy again once the proxy refused twice (two attempts), or after 1.5 s.
    await settle(waitFor(() => refusals(proxy) >= 2, 1500, 'two refusals'));
    await server.setPhase('healthy');
    const outcome = await pending;
    t.after(() => outcome.ok && closeRun(outcome.value));
    assert.ok(refusals(proxy) >= 1, `the proxy refused for the apiserver: ${JSON.stringify(proxy.connections)}`);
    assert.equal(outcome.ok, true, `exec() rejected: ${describeError(outcome.error)}\n${log.all.join('\n')}`);
    const status = await statusWithin(outcome.value, 5000);
    assert.equal(status && status.status, 'Success', JSON.stringify(status));
    assert.equal(outcome.value.stdout(), 'ran\n');
    assert.equal(execsOf(server, 'marker-c').length, 1, 'the command ran exactly once');
  });
}

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

const { consumer, k8s, preflight, fastEnv, captureLogger, setup } = require('./support/harness');

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

'use strict';
// What a host hands the package that it should not: an `env` object that
// throws when read, or is not an object at all; an `options.now` or
// `options.random` whose numbers are not numbers; a method name that is
// not a string. Each gets a clear error or a named warning, and nothing
// it does outlives the call it was given to: later checks and calls with
// good options work as if it had never been. Real client-node and the
// loopback apiserver.
//
//   PREFLIGHT_CLIENT=1x node --test tests/js/hostile-host.test.js

const test = require('node:test');
const assert = require('node:assert/strict');

const { consumer, k8s, preflight, fastEnv, captureLogger, setup, newCheck } = require('./support/harness');

const F = `[${consumer.flavour}]`;

const throwingEnvs = {
  'a getter that throws': () => ({
    ...fastEnv(),
    get ACTIONS_RUNNER_PREFLIGHT_JITTER() {
      throw new Error('getter boom');
    },
  }),
  'a Proxy whose keys throw': () =>
    new Proxy(fastEnv(), {
      ownKeys() {
        throw new Error('ownKeys boom');
      },
    }),
  'a Proxy that throws a Proxy that throws': () =>
    new Proxy(fastEnv(), {
      ownKeys() {
        throw new Proxy(new Error('inner'), {
          get() {
            throw new Error('and again');
          },
          getPrototypeOf() {
            throw new Error('and again');
          },
        });
      },
    }),
  'a revoked Proxy': () => {
    const { proxy, revoke } = Proxy.revocable(fastEnv(), {});
    revoke();
    return proxy;
  },
};

for (const [what, make] of Object.entries(throwingEnvs)) {
  test(`${F} an env with ${what}: the check answers with the defaults and one warning that says the settings could not be read`, { timeout: 30_000 }, async (t) => {
    const { kc, cacheDir } = await setup(t);
    const log = captureLogger();
    assert.equal(await newCheck({ kc, cacheDir, env: make(), logger: log.logger }).isAuthPermissionsOK(), true);
    const about = log.warnings.filter((w) => w.includes('could not be read'));
    assert.equal(about.length, 1, log.warnings.join('\n'));
    assert.ok(about[0].includes('defaults'), about[0]);
  });
}

test(`${F} two thousand envs that throw leave the process whole: later checks and calls with good envs work`, { timeout: 60_000 }, async (t) => {
  const { kc, cacheDir } = await setup(t);
  const log = captureLogger();
  const makes = Object.values(throwingEnvs);
  for (let i = 0; i < 2000; i++) {
    // Making a wrapper reads its settings.
    preflight.resilientKubeConfig(kc, { env: makes[i % makes.length](), logger: log.logger });
  }
  assert.equal(await newCheck({ kc, cacheDir, env: fastEnv(), logger: captureLogger().logger }).isAuthPermissionsOK(), true);
  const api = preflight.resilientKubeConfig(kc, { env: fastEnv(), logger: captureLogger().logger }).makeApiClient(k8s.CoreV1Api);
  const pods = await api.listNamespacedPod({ namespace: 'ci' });
  assert.ok(Array.isArray(pods.items));
});

for (const [what, env] of [
  ['a number', 42],
  ['a string', 'ACTIONS_RUNNER_PREFLIGHT_DEADLINE_MS=1000'],
  ['an array', []],
  ['a function', () => ({})],
]) {
  test(`${F} env given as ${what}: named in a warning, and the defaults are used`, { timeout: 30_000 }, async (t) => {
    const { kc, cacheDir } = await setup(t);
    const log = captureLogger();
    assert.equal(await newCheck({ kc, cacheDir, env, logger: log.logger }).isAuthPermissionsOK(), true);
    const about = log.warnings.filter((w) => w.includes('settings environment'));
    assert.equal(about.length, 1, log.warnings.join('\n'));
    assert.ok(about[0].includes('not an object'), about[0]);
  });
}

for (const [what, now] of [
  ['NaN', () => NaN],
  ['Infinity', () => Infinity],
  ['a negative number', () => -1e300],
  ['a number past 2^53', () => 1e300],
]) {
  test(`${F} options.now() returning ${what}: that wrapper is refused with a TypeError, and later wrappers on the same env work`, { timeout: 30_000 }, async (t) => {
    const { kc } = await setup(t);
    const env = fastEnv();
    assert.throws(
      () => preflight.resilientKubeConfig(kc, { env, now, logger: captureLogger().logger }),
      (e) => e instanceof TypeError && /options\.now\(\)/.test(e.message),
    );
    const api = preflight.resilientKubeConfig(kc, { env, logger: captureLogger().logger }).makeApiClient(k8s.CoreV1Api);
    const pods = await api.listNamespacedPod({ namespace: 'ci' });
    assert.ok(Array.isArray(pods.items));
    assert.equal(await preflight.retryK8sApiCall(async () => 'ok', { env, kubeConfig: kc, logger: captureLogger().logger }), 'ok');
    // On an env already in use, it is refused as well.
    assert.throws(
      () => preflight.resilientKubeConfig(kc, { env, now, logger: captureLogger().logger }),
      (e) => e instanceof TypeError && /options\.now\(\)/.test(e.message),
    );
  });
}

test(`${F} options.random: a bad setting is still warned about once, however many checks and calls read it`, { timeout: 60_000 }, async (t) => {
  const { kc, cacheDir } = await setup(t);
  const env = fastEnv({ JITTER: 'sideways', CACHE: 'off' });
  const random = () => 0.25;
  const log = captureLogger();
  for (let i = 0; i < 3; i++) {
    assert.equal(await newCheck({ kc, cacheDir, env, random, logger: log.logger }).isAuthPermissionsOK(), true);
    await preflight.retryK8sApiCall(async () => 'ok', { env, random, kubeConfig: kc, logger: log.logger });
  }
  const about = log.warnings.filter((w) => w.startsWith('ACTIONS_RUNNER_PREFLIGHT_JITTER='));
  assert.equal(about.length, 1, log.warnings.join('\n'));
});

test(`${F} options.random() returning a number outside [0, 1) is refused with a TypeError, not a setting nobody set`, { timeout: 30_000 }, async (t) => {
  const { kc } = await setup(t);
  for (const value of [NaN, 1, -0.5, Infinity, '0.5']) {
    await assert.rejects(
      preflight.retryK8sApiCall(async () => 'ok', { env: fastEnv(), random: () => value, kubeConfig: kc, logger: captureLogger().logger }),
      (e) => e instanceof TypeError && /options\.random\(\)/.test(e.message),
      String(value),
    );
  }
});

test(`${F} retryK8sApiCall with a method that is not a non-empty string is refused with a TypeError, and fn is not called`, { timeout: 30_000 }, async (t) => {
  const { kc } = await setup(t);
  let calls = 0;
  for (const method of [42, '', ['createNamespacedPod'], new String('createNamespacedPod'), {}]) {
    await assert.rejects(
      preflight.retryK8sApiCall(
        async () => {
          calls += 1;
          return 'ok';
        },
        { method, kubeConfig: kc, env: fastEnv(), logger: captureLogger().logger },
      ),
      (e) => e instanceof TypeError && /method/.test(e.message),
      String(method),
    );
  }
  assert.equal(calls, 0);
});

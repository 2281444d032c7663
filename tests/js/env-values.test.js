'use strict';
// The `env` option holds what the host put there, not only strings (issue
// 10, bug 6): numbers and booleans are taken as written, null and undefined
// mean unset, and anything else gets a warning that names the variable.
// Before the fix, a number or a boolean was dropped without a word and the
// default used.

const test = require('node:test');
const assert = require('node:assert/strict');

const { consumer, fastEnv, captureLogger, setup, newCheck, listDir } = require('./support/harness');

test(`[${consumer.flavour}] a number in env is a setting: DEADLINE_MS: 2000 (a number) bounds the check`, { timeout: 30_000 }, async (t) => {
  const { server, kc, cacheDir } = await setup(t);
  await server.setPhase('refuse');
  const log = captureLogger();
  const env = { ...fastEnv(), ACTIONS_RUNNER_PREFLIGHT_DEADLINE_MS: 2000, ACTIONS_RUNNER_PREFLIGHT_REQUEST_TIMEOUT_MS: 300 };
  const check = newCheck({ kc, cacheDir, env, logger: log.logger });
  await assert.rejects(check.isAuthPermissionsOK(), (e) => e.name === 'PreflightInconclusiveError');
  assert.ok(
    log.warnings.some((w) => w.includes('retrying for up to 2 s')),
    `the deadline given as a number was used:\n${log.warnings.join('\n')}`,
  );
  assert.ok(!log.warnings.some((w) => w.includes('DEADLINE_MS')), log.warnings.join('\n'));
});

test(`[${consumer.flavour}] a boolean in env is a setting: CACHE: false turns the cache off, no warning`, { timeout: 20_000 }, async (t) => {
  const { kc, cacheDir } = await setup(t);
  const log = captureLogger();
  const check = newCheck({ kc, cacheDir, env: { ...fastEnv(), ACTIONS_RUNNER_PREFLIGHT_CACHE: false }, logger: log.logger });
  assert.equal(await check.isAuthPermissionsOK(), true);
  assert.deepEqual(listDir(cacheDir), [], 'nothing cached');
  assert.deepEqual(log.warnings, []);
});

test(`[${consumer.flavour}] null and undefined in env mean unset, silently`, { timeout: 20_000 }, async (t) => {
  const { kc, cacheDir } = await setup(t);
  const log = captureLogger();
  const env = { ...fastEnv(), ACTIONS_RUNNER_PREFLIGHT_CACHE: null, ACTIONS_RUNNER_PREFLIGHT_JITTER: undefined };
  const check = newCheck({ kc, cacheDir, env, logger: log.logger });
  assert.equal(await check.isAuthPermissionsOK(), true);
  assert.equal(listDir(cacheDir).length, 1, 'the default (cache on) applies');
  assert.deepEqual(log.warnings, []);
});

for (const [type, value] of [
  ['object', { ms: 3000 }],
  ['array', [3000]],
  ['function', () => 3000],
  ['symbol', Symbol('x')],
]) {
  test(`[${consumer.flavour}] a value of type ${type} in env is named in a warning, and the default is used`, { timeout: 20_000 }, async (t) => {
    const { kc, cacheDir } = await setup(t);
    const log = captureLogger();
    const env = { ...fastEnv(), ACTIONS_RUNNER_PREFLIGHT_MAX_ATTEMPTS: value };
    const check = newCheck({ kc, cacheDir, env, logger: log.logger });
    assert.equal(await check.isAuthPermissionsOK(), true);
    const warning = log.warnings.find((w) => w.includes('ACTIONS_RUNNER_PREFLIGHT_MAX_ATTEMPTS'));
    assert.ok(warning, `a warning names the variable:\n${log.warnings.join('\n')}`);
    assert.ok(warning.includes(`a value of type ${type}`), warning);
    assert.ok(warning.includes('using the default'), warning);
  });
}

'use strict';
// Issue 12: ACTIONS_RUNNER_PREFLIGHT_ON_INCONCLUSIVE. The default fails an
// inconclusive step; `proceed` returns true with a warning that says
// exactly that; a denial returns false whatever the setting.

const test = require('node:test');
const assert = require('node:assert/strict');

const { consumer, fastEnv, captureLogger, setup, newCheck, listDir } = require('./support/harness');

const down = (overrides) => fastEnv({ DEADLINE_MS: 1500, REQUEST_TIMEOUT_MS: 300, ...overrides });

test(`[${consumer.flavour}] default (fail): an inconclusive check throws PreflightInconclusiveError`, { timeout: 20_000 }, async (t) => {
  const { server, kc, cacheDir } = await setup(t);
  await server.setPhase('refuse');
  const check = newCheck({ kc, cacheDir, env: down() });
  await assert.rejects(check.isAuthPermissionsOK(), (e) => e.name === 'PreflightInconclusiveError');
  assert.equal(check.lastOutcome().proceed, false);
});

test(`[${consumer.flavour}] ON_INCONCLUSIVE=proceed: true, with a warning that says why, nothing cached`, { timeout: 20_000 }, async (t) => {
  const { server, kc, cacheDir } = await setup(t);
  await server.setPhase('refuse');
  const log = captureLogger();
  const check = newCheck({ kc, cacheDir, env: down({ ON_INCONCLUSIVE: 'proceed' }), logger: log.logger });
  assert.equal(await check.isAuthPermissionsOK(), true);
  const outcome = check.lastOutcome();
  assert.equal(outcome.verdict, 'inconclusive');
  assert.equal(outcome.proceed, true);
  const warning = log.warnings.find((w) => w.includes('proceeding because ACTIONS_RUNNER_PREFLIGHT_ON_INCONCLUSIVE=proceed'));
  assert.ok(warning, log.warnings.join('\n'));
  assert.match(warning, /^Could not verify the service account's permissions in namespace "ci"/);
  assert.match(warning, /The API will still refuse anything the service account may not do\.$/);
  assert.deepEqual(listDir(cacheDir).filter((f) => !f.endsWith('.lock')), []);
});

test(`[${consumer.flavour}] ON_INCONCLUSIVE=proceed never turns a denial into a pass`, { timeout: 20_000 }, async (t) => {
  const { kc, cacheDir } = await setup(t, { role: { rules: [] } });
  const log = captureLogger();
  const check = newCheck({ kc, cacheDir, env: down({ ON_INCONCLUSIVE: 'proceed' }), logger: log.logger });
  assert.equal(await check.isAuthPermissionsOK(), false);
  assert.equal(check.lastOutcome().verdict, 'denied');
  assert.equal(check.lastOutcome().proceed, false);
});

'use strict';
// The permission table a host passes: a huge table was
// sorted in quadratic time before the deadline started (10,000 rows took
// 9.9 s with a 3 s deadline). Now a table over the documented limit of 100
// permissions is refused at once with a clear error, and one at the limit
// is checked.

const test = require('node:test');
const assert = require('node:assert/strict');

const { consumer, fastEnv, captureLogger, setup, newCheck, fullRole } = require('./support/harness');

/** `count` distinct permissions, in reverse order of their names. */
function table(count) {
  const rows = [];
  for (let i = count - 1; i >= 0; i -= 1) {
    rows.push({ group: '', resource: `things${String(i).padStart(5, '0')}`, verbs: ['get'] });
  }
  return rows;
}

test(`[${consumer.flavour}] 10,000 permissions are refused with an error that names the limit, before any request`, { timeout: 20_000 }, async (t) => {
  const { server, kc, cacheDir } = await setup(t);
  const log = captureLogger();
  const check = newCheck({ kc, cacheDir, env: fastEnv(), logger: log.logger, requiredPermissions: table(10_000) });
  await assert.rejects(check.isAuthPermissionsOK(), (e) => {
    assert.match(e.message, /10000 permissions/);
    assert.match(e.message, /at most 100/);
    return true;
  });
  assert.equal(server.counts().total, 0);
});

test(`[${consumer.flavour}] 100 permissions (the limit) are checked`, { timeout: 30_000 }, async (t) => {
  const role = fullRole();
  role.rules.push({ apiGroups: [''], resources: ['*'], verbs: ['get'] });
  const { kc, cacheDir } = await setup(t, { role });
  // The rules review on (the default): one request proves all 100.
  const env = fastEnv({ RULES_REVIEW: undefined, REQUEST_TIMEOUT_MS: 5000 });
  const check = newCheck({ kc, cacheDir, env, requiredPermissions: table(100) });
  assert.equal(await check.isAuthPermissionsOK(), true);
  assert.equal(check.lastOutcome().provenByRules, 100);
});

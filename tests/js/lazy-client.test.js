'use strict';
// A step answered from the cache makes no API client at all (every step is
// a new process; a cached verdict should cost nothing more than reading a
// file).

const test = require('node:test');
const assert = require('node:assert/strict');

const { setup, newCheck } = require('./support/harness');

test('a fresh cached verdict never makes an API client; a miss makes one', { timeout: 20_000 }, async (t) => {
  const ctx = await setup(t);
  assert.equal(await newCheck({ kc: ctx.kc, cacheDir: ctx.cacheDir }).isAuthPermissionsOK(), true);
  let made = 0;
  const stub = {
    getCurrentUser: () => ctx.kc.getCurrentUser(),
    makeApiClient: (apiClass) => {
      made += 1;
      return ctx.kc.makeApiClient(apiClass);
    },
  };
  const cached = newCheck({ kc: stub, cacheDir: ctx.cacheDir });
  assert.equal(await cached.isAuthPermissionsOK(), true);
  assert.equal(cached.lastOutcome().source, 'cache');
  assert.equal(made, 0, 'no client for a cached verdict');
  // Control: with nothing cached the same stub is asked for a client once.
  const cold = newCheck({ kc: stub, cacheDir: require('node:fs').mkdtempSync(`${ctx.work}/cold-`) });
  assert.equal(await cold.isAuthPermissionsOK(), true);
  assert.equal(made, 1);
});

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

test('loading the package does not load node:crypto; writing a record does', { timeout: 20_000 }, () => {
  // node:crypto costs about 3 ms to load, on every step of a job; only the
  // step that writes a record needs it (for the temp file's random name).
  const { spawnSync } = require('node:child_process');
  const fs = require('node:fs');
  const os = require('node:os');
  const path = require('node:path');
  const { consumerDir } = require('./support/consumer');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'preflight-crypto-'));
  try {
    const child = `
      const { createRequire } = require('node:module');
      const path = require('node:path');
      const load = createRequire(${JSON.stringify(path.join(consumerDir, 'package.json'))});
      const loaded = () => process.moduleLoadList.includes('NativeModule crypto');
      load('k8s-auth-preflight');
      const afterLoad = loaded();
      const main = load.resolve('k8s-auth-preflight');
      const { writeRecord } = require(path.join(path.dirname(main), 'cache-file.js'));
      const fact = writeRecord(${JSON.stringify(path.join(dir, 'record.json'))}, '{}');
      process.stdout.write(JSON.stringify({ afterLoad, afterWrite: loaded(), fact }));
    `;
    // A script file, not -e: node -e loads node:crypto itself.
    const script = path.join(dir, 'child.js');
    fs.writeFileSync(script, child);
    const r = spawnSync(process.execPath, [script], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), {
      afterLoad: false,
      afterWrite: true,
      fact: { type: 'written', code: null },
    });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

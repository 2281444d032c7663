'use strict';
// The ESM entry of the packed package: `import` gets the same objects as
// `require`, by name and as the default export.

const test = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const { consumerDir } = require('./support/consumer');

test('import from the installed package gives every export of the CommonJS entry', { timeout: 30_000 }, () => {
  const script = `
    import * as esm from 'k8s-auth-preflight';
    import dflt from 'k8s-auth-preflight';
    import { createRequire } from 'node:module';
    const cjs = createRequire(process.cwd() + '/package.json')('k8s-auth-preflight');
    const names = Object.keys(cjs).sort();
    const same = names.every((n) => esm[n] === cjs[n]) && dflt === cjs;
    // Node 23 and later add 'module.exports' to the namespace of a CommonJS
    // module that ESM imports (and so to what 'export *' re-exports): Node's
    // own name, not one of ours.
    const ours = (n) => n !== 'default' && n !== 'module.exports';
    console.log(JSON.stringify({ names, esmNames: Object.keys(esm).filter(ours).sort(), same }));
  `;
  const out = JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: consumerDir, encoding: 'utf8' }));
  assert.ok(out.names.includes('createAuthPreflight') && out.names.includes('PreflightInconclusiveError'));
  assert.deepEqual(out.esmNames, out.names);
  assert.equal(out.same, true, 'import and require must give the very same objects');
});

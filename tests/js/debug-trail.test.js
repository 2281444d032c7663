'use strict';
// Issue 12: a debug trail for step debug logging. The core writes one line
// per attempt and one per check; the shim only prints them: through the
// logger's `debug` when it has one, as `::debug::` workflow commands
// (escaped) by default, and not at all when a host logger has no `debug`.

const test = require('node:test');
const assert = require('node:assert/strict');
const { execFile } = require('node:child_process');
const { promisify } = require('node:util');

const { consumer, TOKEN, fastEnv, captureLogger, setup, newCheck } = require('./support/harness');

test(`[${consumer.flavour}] one debug line per attempt and a summary, through the logger's debug; no token`, { timeout: 30_000 }, async (t) => {
  const { server, kc, cacheDir } = await setup(t);
  await server.setPhase('refuse');
  server.runTimeline([{ phase: 'refuse', ms: 400 }, { phase: 'healthy' }]);
  const log = captureLogger();
  const debug = [];
  const logger = { ...log.logger, debug: (m) => debug.push(m) };
  const check = newCheck({ kc, cacheDir, env: fastEnv(), logger });
  assert.equal(await check.isAuthPermissionsOK(), true);
  const outcome = check.lastOutcome();
  const attempts = debug.filter((l) => / request \d+: (answered|failed): /.test(l));
  assert.equal(attempts.length, outcome.requests, debug.join('\n'));
  assert.ok(debug.some((l) => /failed: transient, .*next attempt in \d+\.\d s; \d+\.\d s of the deadline left/.test(l)), debug.join('\n'));
  assert.match(debug[debug.length - 1], new RegExp(`check finished: allowed from the reviews; ${outcome.requests} requests; `));
  assert.ok(!debug.join('\n').includes(TOKEN), 'no token in the debug trail');
});

test(`[${consumer.flavour}] a host logger without debug prints nothing at debug level`, { timeout: 20_000 }, async (t) => {
  const { kc, cacheDir } = await setup(t);
  const log = captureLogger();
  const check = newCheck({ kc, cacheDir, env: fastEnv(), logger: log.logger });
  assert.equal(await check.isAuthPermissionsOK(), true);
  assert.ok(!log.all.some(([, m]) => m.includes('check finished')), 'no debug line reached another level');
});

test(`[${consumer.flavour}] by default debug lines are ::debug:: workflow commands, escaped`, { timeout: 30_000 }, async (t) => {
  const { kubeconfigPath, cacheDir } = await setup(t);
  // A fresh process with no @actions/core and no logger: the stdout logger.
  const script = `
    const k8s = require('@kubernetes/client-node');
    const p = require('k8s-auth-preflight');
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(${JSON.stringify(kubeconfigPath)});
    p.createAuthPreflight({ kubeConfig: kc, namespace: 'ci', cacheDir: ${JSON.stringify(cacheDir)}, env: ${JSON.stringify(fastEnv())} })
      .isAuthPermissionsOK().then((ok) => { process.exitCode = ok ? 0 : 3; });
  `;
  // Not execFileSync: this process serves the apiserver the child talks to.
  const { stdout: out } = await promisify(execFile)(process.execPath, ['-e', script], { cwd: consumer.consumerDir, encoding: 'utf8' });
  const lines = out.split('\n').filter((l) => l.startsWith('::debug::'));
  assert.ok(lines.length >= 2, out);
  assert.ok(lines.some((l) => l.includes('check finished: allowed')), out);
  for (const l of lines) assert.ok(!/[\r]/.test(l), 'escaped');
});

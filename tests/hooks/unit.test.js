'use strict';
// The hooks' own unit tests, with their own jest, in the tree that
// tests/hooks/build.js built with the documented integration applied: a
// peer's test suite, which nothing of ours may break. Every test file that
// needs no cluster runs; those that create pods in a real cluster (through
// their TestHelper, against `kind` in their CI) are named in NEEDS_CLUSTER
// and left out. Their kubeconfig points at a closed port on 127.0.0.1, so
// that nothing here can reach a cluster by accident.

const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { test } = require('node:test');

const { RELEASES, skipWithoutUpstream } = require('./upstream');
const { treeOf } = require('./build');

const SKIP = skipWithoutUpstream();
const JEST_TIMEOUT_MS = 400_000;

// Each of these creates and execs into pods of a real cluster.
const NEEDS_CLUSTER = ['cleanup-job-test.ts', 'e2e-test.ts', 'prepare-job-test.ts', 'run-container-step-test.ts', 'run-script-step-test.ts'];
// One test of main's error-serialization-test mocks readNamespacedPod to
// fail with 'socket hang up', a transient failure that the wrapped client
// retries for its call deadline before it gives up (with the error's text in
// its message, which is all the test asks). A shorter deadline than the
// default 120 s keeps the run short; the outcome is the same.
const SETTINGS = { ACTIONS_RUNNER_PREFLIGHT_CALL_DEADLINE_MS: '10000' };
// main's error-serialization-test checks the text of the copy loop that the
// integration no longer reaches (`cpToPod failed after 30 attempts: ...`,
// with its sleeps mocked away): the copies are copyToPod's and copyFromPod's
// now, whose messages tests/js/copy.test.js checks. These five tests, and
// no other, are left out by name; jest counts them as skipped.
const REPLACED = /^error serialization (execCpToPod|execCpFromPod) /;
const REPLACED_COUNT = { 'v0.8.1': 0, main: 5 };

const CLOSED_KUBECONFIG = [
  'apiVersion: v1',
  'kind: Config',
  'clusters: [{ name: none, cluster: { server: "https://127.0.0.1:1" } }]',
  'users: [{ name: none, user: { token: not-a-token } }]',
  'contexts: [{ name: none, context: { cluster: none, user: none, namespace: default } }]',
  'current-context: none',
  '',
].join('\n');

for (const release of RELEASES) {
  test(`${release.name}: the hooks' own unit tests that need no cluster pass with the integration applied (left out, needing a cluster: ${NEEDS_CLUSTER.join(', ')}; and the replaced copy loop's messages; with ${Object.entries(SETTINGS).map(([k, v]) => `${k}=${v}`).join(" ")})`, { skip: SKIP, timeout: JEST_TIMEOUT_MS + 10_000 }, (t) => {
    const k8s = path.join(treeOf(release, 'integrated'), 'packages', 'k8s');
    const index = fs.readFileSync(path.join(k8s, 'src', 'k8s', 'index.ts'), 'utf8');
    assert.match(index, /from 'k8s-auth-preflight'/, `${k8s} does not have the integration applied: run node tests/hooks/build.js`);
    const files = fs.readdirSync(path.join(k8s, 'tests')).filter((f) => f.endsWith('-test.ts'));
    const unknown = NEEDS_CLUSTER.filter((f) => !files.includes(f));
    assert.deepEqual(unknown, [], `files named as needing a cluster that ${release.name} does not have`);
    const run = files.filter((f) => !NEEDS_CLUSTER.includes(f));
    assert.ok(run.length >= 2, `${release.name}: only ${run.length} test files need no cluster`);
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'hooks-jest-'));
    try {
      const kubeconfig = path.join(home, 'kubeconfig');
      fs.writeFileSync(kubeconfig, CLOSED_KUBECONFIG);
      const skipReplaced = ['--testNamePattern', `^(?!${REPLACED.source.slice(1)})`];
      const r = spawnSync(path.join(k8s, 'node_modules', '.bin', 'jest'), ['--runInBand', '--ci', ...skipReplaced, ...run.map((f) => `tests/${f}`)], {
        cwd: k8s,
        env: { PATH: process.env.PATH, HOME: home, KUBECONFIG: kubeconfig, CI: 'true', ...SETTINGS },
        encoding: 'utf8',
        timeout: JEST_TIMEOUT_MS,
        maxBuffer: 64 * 1024 * 1024,
      });
      const out = `${r.stdout}\n${r.stderr}`;
      const summary = /^Tests:\s+(.*)$/m.exec(out);
      assert.equal(r.status, 0, `jest exited ${r.status}${r.signal ? ` (${r.signal})` : ''}:\n${out.slice(-6000)}`);
      assert.ok(summary && /\d+ passed/.test(summary[1]) && !/failed/.test(summary[1]), `jest's summary: ${summary ? summary[1] : 'none'}\n${out.slice(-3000)}`);
      for (const f of run) assert.match(out, new RegExp(`PASS tests/${f.replace('.', '\\.')}`), `${f} did not pass:\n${out.slice(-3000)}`);
      const skipped = /(\d+) skipped/.exec(summary[1]);
      assert.equal(skipped ? Number(skipped[1]) : 0, REPLACED_COUNT[release.name], `only the copy loop's tests are left out: ${summary[1]}`);
      t.diagnostic(`${release.name}: ${summary[1]}`);
    } finally {
      fs.rmSync(home, { recursive: true, force: true });
    }
  });
}

'use strict';
// The hooks' copies through their real bundles (tests/hooks/build.js), plain
// and with the documented integration (copyToPod, copyFromPod): the job pod
// gets the same files either way, the integrated hooks make one exec per
// copy and list no files, and a script step's file commands come back. The
// plain bundle is the reference for what a copy holds; the runner's own
// folder is the reference for names the plain copy cannot carry.
//
//   node tests/hooks/build.js && node --test tests/hooks/copies.test.js
//
// Needs root, ip and iptables, and the hooks' source beside the clone.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { describe, test } = require('node:test');

const { RELEASES, skipWithoutUpstream } = require('./upstream');
const { bundleOf } = require('./build');
const { cluster } = require('./cluster');
const { makeRunner, inputs, runHook, podVolume, describeHook } = require('./job');
const { tree, under, readable } = require('../js/support/tree');

const SKIP = skipWithoutUpstream();
const HOOK_TIMEOUT_MS = 120_000;
const TEST_TIMEOUT_MS = 300_000;
const MARK = 'k8s-auth-preflight-copy';
const FILES = 300;

/** A checkout with what one holds at its edges, names the plain copy carries. */
function checkout() {
  const files = { 'README.md': 'the checkout\n', 'src/a b.txt': 'a name with a space\n', 'new\nline': 'newline\n', 'ünïcode.txt': 'utf-8\n' };
  files[`deep/${'x'.repeat(90)}/${'y'.repeat(90)}/long`] = 'a path over 100 bytes\n';
  for (let i = 0; i < FILES; i++) files[`many/file-${i}`] = `file ${i}\n`.repeat(50);
  return files;
}

/** What the checkout gets beside `checkout()` that files cannot say. */
function edges(workspace, { notUtf8 }) {
  fs.mkdirSync(path.join(workspace, 'empty folder'));
  fs.symlinkSync('README.md', path.join(workspace, 'link'));
  fs.writeFileSync(path.join(workspace, 'read-only'), 'ro\n', { mode: 0o444 });
  if (notUtf8) fs.writeFileSync(Buffer.concat([Buffer.from(`${workspace}/`), Buffer.from([0x6e, 0xff, 0xfe])]), 'not utf-8\n');
}

/**
 * prepare_job, one script step that writes a file command, cleanup_job,
 * through `release`'s bundle `variant`. Resolves the job pod's checkout
 * (as `tree` lines), the execs each hook made, and the file command back.
 */
async function copyJob(t, release, variant, { notUtf8 = false } = {}) {
  const c = await cluster(t);
  const runner = makeRunner({ files: checkout() });
  t.after(() => runner.remove());
  edges(runner.workspace, { notUtf8 });
  const bundle = bundleOf(release, variant);
  const hook = (command, args, state) => runHook({ spawn: c.ns.spawn, bundle, runner, kubeconfig: c.server.kubeconfig, command, args, state, timeoutMs: HOOK_TIMEOUT_MS });
  const j = { hooks: {}, execs: {} };
  const execsSoFar = async () => (await c.server.call('execs')).length;
  let before = await execsSoFar();
  const since = async (label) => {
    const all = await c.server.call('execs');
    j.execs[label] = all.slice(before).map((e) => e.command.join(' '));
    before = all.length;
  };
  j.hooks.prepare = await hook('prepare_job', inputs.prepareJob({ services: false }), {});
  await since('prepare');
  const state = j.hooks.prepare.response && j.hooks.prepare.response.state;
  const podWork = podVolume(c.podRoot, runner.jobPod, '/__w');
  j.runnerTree = tree(runner.workspace);
  j.podTree = fs.existsSync(path.join(podWork, 'repo', 'repo')) ? tree(path.join(podWork, 'repo', 'repo')) : [];
  const script = runner.writeStepScript('echo "FROM_STEP=yes" >> "$GITHUB_ENV"\necho done\n');
  j.hooks.script = await hook('run_script_step', inputs.runScriptStep(script, { GITHUB_ENV: '/__w/_temp/_runner_file_commands/set_env_copy' }), state || {});
  await since('script');
  const envFile = path.join(runner.temp, '_runner_file_commands', 'set_env_copy');
  j.fileCommand = fs.existsSync(envFile) ? fs.readFileSync(envFile, 'utf8') : null;
  j.hooks.cleanup = await hook('cleanup_job', {}, state || {});
  j.describe = () =>
    [
      `${release.name} ${variant}`,
      ...Object.entries(j.hooks).map(([label, r]) => describeHook(label, r)),
      ...Object.entries(j.execs).map(([label, execs]) => `${label} execs:\n  ${execs.map((e) => (e.length > 100 ? `${e.slice(0, 100)}…` : e)).join('\n  ')}`),
    ].join('\n');
  return j;
}

const copies = (execs) => execs.filter((e) => e.includes(MARK));
const listings = (execs) => execs.filter((e) => e.includes('stat -c'));

for (const release of RELEASES) {
  describe(`the hooks' real bundle, ${release.name}: copies`, { skip: SKIP }, () => {
    test(`${release.name}: the job pod gets the same checkout through the integrated bundle as through the plain one (spaces, a newline, UTF-8, 100-byte paths, ${FILES} files, an empty folder, a link, modes), with one exec per copy and no listing; a step's file command comes back`, { timeout: TEST_TIMEOUT_MS }, async (t) => {
      const plain = await copyJob(t, release, 'plain');
      const ours = await copyJob(t, release, 'integrated');
      for (const j of [plain, ours]) {
        for (const [label, r] of Object.entries(j.hooks)) assert.equal(r.code, 0, `${label}\n${j.describe()}`);
        assert.equal(j.fileCommand, 'FROM_STEP=yes\n', `the file command came back\n${j.describe()}`);
      }
      // What the plain hooks' copy gives is the reference.
      assert.deepEqual(ours.podTree.map(readable), plain.podTree.map(readable));
      assert.equal(under(ours.podTree, 'many/').length, FILES);
      // One exec per copy: the checkout in; the step's _temp in and its
      // file commands out; nothing listed.
      assert.equal(copies(ours.execs.prepare).length, 1, ours.describe());
      assert.equal(copies(ours.execs.script).length, 2, ours.describe());
      assert.deepEqual(listings([...ours.execs.prepare, ...ours.execs.script]), [], ours.describe());
      // The step: its _temp in, the script, its file commands out.
      assert.equal(ours.execs.script.length, 3, ours.describe());
      t.diagnostic(`execs per script step: plain ${plain.execs.script.length}, integrated ${ours.execs.script.length}`);
    });

    test(`${release.name}: a name that is not UTF-8 arrives in the job pod byte for byte through the integrated bundle`, { timeout: TEST_TIMEOUT_MS }, async (t) => {
      const ours = await copyJob(t, release, 'integrated', { notUtf8: true });
      assert.equal(ours.hooks.prepare.code, 0, ours.describe());
      // The runner's checkout, with the hooks' modes (files u+rw).
      const expected = ours.runnerTree.map((line) => line.replace(/ file u4 /, ' file u6 '));
      assert.deepEqual(ours.podTree.map(readable), expected.map(readable));
      assert.ok(ours.podTree.some((line) => line.startsWith('6efffe ')), 'the name not UTF-8 is in the pod');
    });
  });
}

'use strict';
// The hostile cache catalog (docs/RELIABILITY.md), with the real file system
// and the real client: what a job container, a full disk or a vanishing
// folder can do to the cache, and that the verdict is never lost, never
// forged, and no token leaks anywhere.

const test = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const { TOKEN, NAMESPACE, setup, newCheck, fastEnv, captureLogger, listDir, loadKubeConfig } = require('./support/harness');

const RECORD = /^k8s-auth-preflight-[0-9a-f]+\.json$/;

/** A first, healthy check writes the record; returns its path. */
async function writeRecord(ctx, env = fastEnv()) {
  const check = newCheck({ kc: ctx.kc, cacheDir: ctx.cacheDir, env });
  assert.equal(await check.isAuthPermissionsOK(), true);
  const name = listDir(ctx.cacheDir).find((f) => RECORD.test(f));
  assert.ok(name, 'a record was written');
  return path.join(ctx.cacheDir, name);
}

/** Mounts a tmpfs with `options` at a fresh folder; null when mounting is not permitted. */
function mountTmpfs(t, options) {
  const dir = fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'preflight-tmpfs-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', options, 'tmpfs', dir], { stdio: 'ignore' });
  } catch {
    fs.rmdirSync(dir);
    return null;
  }
  t.after(() => {
    // Unmount first, then remove the mount point.
    execFileSync('umount', [dir], { stdio: 'ignore' });
    fs.rmdirSync(dir);
  });
  return dir;
}

test('a record planted by another user (the job container) with a forged MAC is refused and replaced', { timeout: 20_000 }, async (t) => {
  const ctx = await setup(t);
  const file = await writeRecord(ctx);
  const record = JSON.parse(fs.readFileSync(file, 'utf8'));
  // The job container cannot compute the MAC: it signs with what it has.
  record.writtenAtMs = Date.now();
  record.mac = 'ab'.repeat(32);
  fs.writeFileSync(file, JSON.stringify(record));
  fs.chownSync(file, 1001, 1001);
  const before = ctx.server.counts().total;
  const log = captureLogger();
  assert.equal(await newCheck({ kc: ctx.kc, cacheDir: ctx.cacheDir, logger: log.logger }).isAuthPermissionsOK(), true);
  assert.equal(ctx.server.counts().total - before, 13, 'the API was asked');
  assert.ok(log.warnings.some((w) => /edited or forged/.test(w)), log.warnings.join('\n'));
  assert.equal(fs.statSync(file).uid, process.getuid(), 'replaced by a record of our own');
});

test('a record replayed from another service account (another token) is refused', { timeout: 20_000 }, async (t) => {
  const ctx = await setup(t);
  // The same server, reached with a second account's token.
  const otherToken = 'other-account-token-0123456789';
  ctx.server.configure({ token: otherToken });
  const otherKubeconfig = path.join(ctx.work, 'other.yaml');
  ctx.server.writeKubeconfig(otherKubeconfig, { token: otherToken });
  const otherCheck = newCheck({ kc: loadKubeConfig(otherKubeconfig), cacheDir: ctx.cacheDir });
  assert.equal(await otherCheck.isAuthPermissionsOK(), true);
  const [otherName] = listDir(ctx.cacheDir).filter((f) => RECORD.test(f));
  ctx.server.configure({ token: TOKEN });
  // Put the other account's record where ours would be.
  const ours = newCheck({ kc: ctx.kc, cacheDir: ctx.cacheDir });
  assert.equal(await ours.isAuthPermissionsOK(), true);
  const oursName = listDir(ctx.cacheDir).find((f) => RECORD.test(f) && f !== otherName);
  assert.ok(oursName, 'the two accounts have different cache files');
  fs.copyFileSync(path.join(ctx.cacheDir, otherName), path.join(ctx.cacheDir, oursName));
  const before = ctx.server.counts().total;
  const log = captureLogger();
  assert.equal(await newCheck({ kc: ctx.kc, cacheDir: ctx.cacheDir, logger: log.logger }).isAuthPermissionsOK(), true);
  assert.equal(ctx.server.counts().total - before, 13, 'not served from the other account\'s record');
  assert.ok(log.warnings.some((w) => /Ignoring this job's cached permission verdict/.test(w)), log.warnings.join('\n'));
});

test('a 100 MB file at the cache path: the read is bounded and the check goes on', { timeout: 30_000 }, async (t) => {
  const ctx = await setup(t);
  const file = await writeRecord(ctx);
  const fd = fs.openSync(file, 'w');
  fs.ftruncateSync(fd, 100 * 1024 * 1024);
  fs.closeSync(fd);
  const log = captureLogger();
  const check = newCheck({ kc: ctx.kc, cacheDir: ctx.cacheDir, logger: log.logger });
  assert.equal(await check.isAuthPermissionsOK(), true);
  assert.ok(log.warnings.some((w) => /larger than 64 KiB/.test(w)), log.warnings.join('\n'));
  assert.ok(fs.statSync(file).size < 4096, 'replaced by a small record');
});

test('the cache folder disappears mid-check: the verdict stands, one warning, nothing recreated', { timeout: 20_000 }, async (t) => {
  const ctx = await setup(t);
  const cacheDir = path.join(ctx.work, 'vanishing');
  fs.mkdirSync(cacheDir);
  await ctx.server.setPhase('refuse');
  ctx.server.runTimeline([{ phase: 'refuse', ms: 600 }, { phase: 'healthy' }]);
  const log = captureLogger();
  const check = newCheck({ kc: ctx.kc, cacheDir, logger: log.logger });
  const verdict = check.isAuthPermissionsOK();
  setTimeout(() => fs.rmSync(cacheDir, { recursive: true, force: true }), 200);
  assert.equal(await verdict, true);
  const cacheWarnings = log.warnings.filter((w) => /could not cache/.test(w));
  assert.equal(cacheWarnings.length, 1, log.warnings.join('\n'));
  assert.match(cacheWarnings[0], /ENOENT/);
  assert.equal(fs.existsSync(cacheDir), false, 'the shim does not recreate a folder it was not given');
});

test('disk full (ENOSPC) on write: the verdict stands, one warning, no temp file left', { timeout: 20_000 }, async (t) => {
  const ctx = await setup(t);
  const dir = mountTmpfs(t, 'size=4k');
  if (!dir) return t.skip('mounting a tmpfs is not permitted here');
  // Fill the little file system.
  try {
    fs.writeFileSync(path.join(dir, 'filler'), Buffer.alloc(64 * 1024));
  } catch (e) {
    assert.equal(e.code, 'ENOSPC');
  }
  const log = captureLogger();
  assert.equal(await newCheck({ kc: ctx.kc, cacheDir: dir, logger: log.logger }).isAuthPermissionsOK(), true);
  const cacheWarnings = log.warnings.filter((w) => /could not cache/.test(w));
  assert.equal(cacheWarnings.length, 1, log.warnings.join('\n'));
  assert.match(cacheWarnings[0], /ENOSPC/);
  assert.deepEqual(listDir(dir), ['filler'], 'no temp file or torn record left behind');
});

test('a read-only cache folder: the verdict stands, one warning', { timeout: 20_000 }, async (t) => {
  const ctx = await setup(t);
  const dir = mountTmpfs(t, 'ro,size=64k');
  if (!dir) return t.skip('mounting a tmpfs is not permitted here');
  const log = captureLogger();
  assert.equal(await newCheck({ kc: ctx.kc, cacheDir: dir, logger: log.logger }).isAuthPermissionsOK(), true);
  const cacheWarnings = log.warnings.filter((w) => /could not cache/.test(w));
  assert.equal(cacheWarnings.length, 1, log.warnings.join('\n'));
  assert.match(cacheWarnings[0], /EROFS/);
});

test('no log line, error, outcome or cache file ever contains the token', { timeout: 60_000 }, async (t) => {
  const ctx = await setup(t, { role: { rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get'] }] } });
  const seen = [];
  const keep = (log) => seen.push(...log.all.map(([, m]) => m));
  const run = async (env, { cacheDir = ctx.cacheDir, logger } = {}) => {
    const log = logger || captureLogger();
    const check = newCheck({ kc: ctx.kc, cacheDir, env, logger: log.logger });
    try {
      await check.isAuthPermissionsOK();
    } catch (e) {
      seen.push(String(e.message), String(e.stack), JSON.stringify(e));
    }
    seen.push(JSON.stringify(check.lastOutcome()));
    keep(log);
  };
  // denied, with the token in every request's headers
  await run(fastEnv());
  // allowed (a full Role), then served from the cache
  ctx.server.configure({
    role: { rules: [{ apiGroups: [''], resources: ['pods', 'pods/exec', 'pods/log', 'secrets'], verbs: ['*'] }] },
  });
  await run(fastEnv());
  await run(fastEnv());
  // inconclusive through a stall, a forged file, bad settings, malformed answer
  await ctx.server.setPhase('refuse');
  await run(fastEnv({ DEADLINE_MS: 1000, CACHE: 'off' }));
  await ctx.server.setPhase('healthy');
  for (const f of listDir(ctx.cacheDir)) fs.writeFileSync(path.join(ctx.cacheDir, f), `{"version":1,"token":"${'x'.repeat(8)}"}`);
  await run(fastEnv({ JITTER: 'wobbly' }));
  await ctx.server.setPhase('malformed');
  await run(fastEnv({ CACHE: 'off' }));
  await ctx.server.setPhase('healthy');
  // The default logger writes workflow commands to stdout: capture that too.
  // The child is a later step of this runner (its HOME, so its runner key):
  // the record answers it, and it never needs this (blocked) process's
  // apiserver.
  const out = execFileSync(
    process.execPath,
    [
      '-e',
      `const { createRequire } = require('node:module');
       const r = createRequire(process.argv[1] + '/package.json');
       const k8s = r('@kubernetes/client-node');
       const kc = new k8s.KubeConfig(); kc.loadFromFile(process.argv[2]);
       r('k8s-auth-preflight').createAuthPreflight({ kubeConfig: kc, namespace: '${NAMESPACE}', cacheDir: process.argv[3],
         env: { HOME: ${JSON.stringify(fastEnv().HOME)}, ACTIONS_RUNNER_PREFLIGHT_DEADLINE_MS: 'bad', ACTIONS_RUNNER_PREFLIGHT_RULES_REVIEW: 'off' } })
         .isAuthPermissionsOK().then((ok) => console.log('ok', ok), (e) => console.log('error', e.message));`,
      require('./support/consumer').consumerDir,
      ctx.kubeconfigPath,
      ctx.cacheDir,
    ],
    { encoding: 'utf8', timeout: 30_000 },
  );
  seen.push(out);
  for (const f of listDir(ctx.cacheDir)) seen.push(fs.readFileSync(path.join(ctx.cacheDir, f), 'utf8'));
  assert.ok(seen.length > 10, `collected ${seen.length} texts`);
  assert.ok(seen.some((s) => s.includes('denied:')), 'the texts include a denial');
  assert.ok(seen.some((s) => s.includes('NOT a permissions denial')), 'the texts include an inconclusive error');
  assert.ok(seen.some((s) => s.includes('ACTIONS_RUNNER_PREFLIGHT_JITTER')), 'the texts include a settings warning');
  const leaks = seen.filter((s) => s.includes(TOKEN));
  assert.deepEqual(leaks, [], `the token appears in:\n${leaks.join('\n---\n')}`);
});

'use strict';
// Issue 10, bug 4: the kubelet rotates the projected service-account token
// (about every 48 min), and a record signed with a key derived from the
// token then looked forged, so the grace period never applied. The record
// is now signed with a per-runner secret in the runner container's home
// (src/runner_key.rs), keyed per identity: these tests rotate a real token
// file under the real client, take the real apiserver down, give the
// runner another home, break the key file in each named way, and race real
// processes to create it.

const test = require('node:test');
const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const { consumer, k8s, NAMESPACE, fastEnv, captureLogger, setup, tempDir, newCheck, listDir } = require('./support/harness');

const RECORD = /^k8s-auth-preflight-[0-9a-f]+\.json$/;
const SUB = 'system:serviceaccount:ci:runner';

const b64url = (text) => Buffer.from(text).toString('base64url');

/** A JWT-shaped projected token; the loopback apiserver only compares it. */
function projectedToken(claims, signature) {
  const header = b64url(JSON.stringify({ alg: 'RS256', kid: 'k1' }));
  const payload = b64url(JSON.stringify({ iss: 'https://kubernetes.default.svc', sub: SUB, ...claims }));
  return `${header}.${payload}.${b64url(signature)}`;
}

const TOKEN_A = projectedToken({ iat: 1000, exp: 4600, jti: 'a' }, 'signature-of-token-a');
const TOKEN_B = projectedToken({ iat: 3880, exp: 7480, jti: 'b' }, 'signature-of-token-b');

/**
 * A runner: a loopback apiserver that accepts token A, a kubeconfig that
 * reads the token from a file (as in-cluster config does), a cache folder
 * and a home of its own.
 */
async function runner(t) {
  const ctx = await setup(t, { token: TOKEN_A });
  ctx.tokenFile = path.join(ctx.work, 'token');
  fs.writeFileSync(ctx.tokenFile, TOKEN_A);
  const yaml = fs
    .readFileSync(ctx.kubeconfigPath, 'utf8')
    .replace(/^ {4}token: .*$/m, ['    auth-provider:', '      name: tokenFile', '      config:', `        tokenFile: ${JSON.stringify(ctx.tokenFile)}`].join('\n'));
  fs.writeFileSync(ctx.kubeconfigPath, yaml);
  ctx.home = tempDir(t, 'preflight-runner-home');
  return ctx;
}

/** A fresh KubeConfig, as a new hook process loads it. */
function kubeConfig(ctx) {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(ctx.kubeconfigPath);
  return kc;
}

/** fastEnv with this runner's HOME, and a request timeout roomy enough for a loaded machine. */
function envFor(ctx, overrides = {}, home = ctx.home) {
  return { ...fastEnv({ REQUEST_TIMEOUT_MS: 5000, ...overrides }), HOME: home };
}

/** The warnings about the cache or the runner key (not the API's transient trouble). */
const KEY_TROUBLE = /runner key|another key|forged|cannot be used|cached permission verdict/;
const keyWarnings = (log) => log.warnings.filter((w) => KEY_TROUBLE.test(w));

/** One hook step: returns { ok, outcome, log, error }. */
async function step(ctx, { env = envFor(ctx) } = {}) {
  const log = captureLogger();
  const check = newCheck({ kc: kubeConfig(ctx), cacheDir: ctx.cacheDir, env, logger: log.logger });
  let ok;
  let error;
  try {
    ok = await check.isAuthPermissionsOK();
  } catch (e) {
    error = e;
  }
  return { ok, error, outcome: check.lastOutcome(), log };
}

function theRecord(ctx) {
  const names = listDir(ctx.cacheDir).filter((f) => RECORD.test(f));
  assert.equal(names.length, 1, `one record: ${listDir(ctx.cacheDir)}`);
  return JSON.parse(fs.readFileSync(path.join(ctx.cacheDir, names[0]), 'utf8'));
}

const keyFileOf = (home) => path.join(home, '.k8s-auth-preflight', 'runner-key');

test(`[${consumer.flavour}] a token rotation: the record written before it answers after it, in grace while the API is down, with no "forged" warning`, { timeout: 30_000 }, async (t) => {
  const ctx = await runner(t);
  // TTL 0: the record never answers fresh, so step 2 asks the API and needs grace.
  const first = await step(ctx, { env: envFor(ctx, { CACHE_TTL_MS: 0 }) });
  assert.equal(first.ok, true, String(first.error));
  assert.equal(first.outcome.source, 'reviews');
  assert.deepEqual(keyWarnings(first.log), []);
  const written = theRecord(ctx);

  // The kubelet rotates the token: same iss/sub, other claims and signature.
  fs.writeFileSync(`${ctx.tokenFile}.new`, TOKEN_B);
  fs.renameSync(`${ctx.tokenFile}.new`, ctx.tokenFile);
  await ctx.server.setPhase('refuse');
  const second = await step(ctx, { env: envFor(ctx, { CACHE_TTL_MS: 0, DEADLINE_MS: 1500 }) });

  assert.equal(second.error, undefined, second.error && second.error.message);
  assert.equal(second.ok, true);
  assert.equal(second.outcome.source, 'graceCache');
  const all = second.log.warnings.join('\n');
  assert.doesNotMatch(all, /forged|another key|cannot be used/, all);
  assert.match(all, /earlier successful permission check/, all);
  assert.deepEqual(theRecord(ctx), written, 'the grace record is kept as it was');
});

test(`[${consumer.flavour}] a token rotation: the record still answers fresh, with no request`, { timeout: 30_000 }, async (t) => {
  const ctx = await runner(t);
  assert.equal((await step(ctx)).ok, true);
  fs.writeFileSync(ctx.tokenFile, TOKEN_B);
  ctx.server.configure({ token: TOKEN_B });
  const before = ctx.server.counts().total;
  const second = await step(ctx);
  assert.equal(second.ok, true);
  assert.equal(second.outcome.source, 'cache');
  assert.equal(ctx.server.counts().total, before, 'no request');
  assert.deepEqual(second.log.warnings, [], 'a fresh record: nothing to say');
});

test(`[${consumer.flavour}] another runner home (another secret): "written with another key", not "forged", and a fresh check`, { timeout: 30_000 }, async (t) => {
  const ctx = await runner(t);
  assert.equal((await step(ctx)).ok, true);
  const otherHome = tempDir(t, 'preflight-other-runner-home');
  const before = ctx.server.counts().total;
  const second = await step(ctx, { env: envFor(ctx, {}, otherHome) });
  assert.equal(second.ok, true);
  assert.equal(second.outcome.source, 'reviews');
  assert.equal(ctx.server.counts().total - before, 13, 'asked the API');
  const all = second.log.warnings.join('\n');
  assert.match(all, /record was written with another key/, all);
  assert.doesNotMatch(all, /forged/, all);
  assert.equal(keyWarnings(second.log).length, 1, all);
  assert.notEqual(fs.readFileSync(keyFileOf(ctx.home), 'utf8'), fs.readFileSync(keyFileOf(otherHome), 'utf8'));
});

test(`[${consumer.flavour}] the key file is made once, 0600 in a 0700 folder, and holds no token`, { timeout: 30_000 }, async (t) => {
  const ctx = await runner(t);
  assert.equal((await step(ctx)).ok, true);
  const file = keyFileOf(ctx.home);
  const text = fs.readFileSync(file, 'utf8');
  assert.match(text, /^k8s-auth-preflight runner-key v1 [0-9a-f]{64}\n$/);
  assert.equal(fs.lstatSync(file).mode & 0o777, 0o600);
  assert.equal(fs.lstatSync(path.dirname(file)).mode & 0o777, 0o700);
  assert.deepEqual(listDir(path.dirname(file)), ['runner-key'], 'no temp file left');
  assert.equal((await step(ctx)).ok, true);
  assert.equal(fs.readFileSync(file, 'utf8'), text, 'kept, not remade');
  const record = fs.readFileSync(path.join(ctx.cacheDir, listDir(ctx.cacheDir).find((f) => RECORD.test(f))), 'utf8');
  assert.ok(!record.includes(text.trim().split(' ').pop()), 'the secret is not in the record');
  assert.ok(!record.includes(TOKEN_A));
});

test(`[${consumer.flavour}] ACTIONS_RUNNER_PREFLIGHT_KEY_FILE names the key file; a relative path is a named warning`, { timeout: 30_000 }, async (t) => {
  const ctx = await runner(t);
  const file = path.join(ctx.home, 'elsewhere-key');
  const first = await step(ctx, { env: envFor(ctx, { KEY_FILE: file }) });
  assert.equal(first.ok, true);
  assert.deepEqual(keyWarnings(first.log), []);
  assert.ok(fs.existsSync(file), 'made at the named path');
  assert.ok(!fs.existsSync(keyFileOf(ctx.home)), 'not in HOME');
  const bad = await step(ctx, { env: envFor(ctx, { KEY_FILE: 'relative/key' }) });
  assert.equal(bad.ok, true);
  assert.ok(
    bad.log.warnings.some((w) => w.startsWith('ACTIONS_RUNNER_PREFLIGHT_KEY_FILE="relative/key" ignored: not an absolute path')),
    bad.log.warnings.join('\n'),
  );
});

/** Ways the key file can be unsafe, each with the reason its warning must name. */
const unsafe = [
  { what: 'mode 0644', reason: /its mode is 0644/, make: (file) => fs.chmodSync(file, 0o644) },
  { what: 'mode 0660', reason: /its mode is 0660/, make: (file) => fs.chmodSync(file, 0o660) },
  {
    what: 'owned by another uid',
    reason: /owned by uid 1001, not by this process's uid/,
    // Needs root (CAP_CHOWN); the core's judgement of the owner fact is also
    // covered by src/runner_key.rs `unsafe_key_files_are_named`.
    skip: typeof process.getuid !== 'function' || process.getuid() !== 0 ? 'chown needs root' : false,
    make: (file) => fs.chownSync(file, 1001, 1001),
  },
  {
    what: 'a symlink (to a good key file)',
    reason: /it is a symbolic link/,
    make: (file) => {
      fs.renameSync(file, `${file}.real`);
      fs.symlinkSync(`${file}.real`, file);
    },
  },
  {
    what: 'a directory',
    reason: /it is a directory/,
    make: (file) => {
      fs.unlinkSync(file);
      fs.mkdirSync(file);
    },
  },
  { what: 'too short', reason: /it holds 20 bytes, expected 98/, make: (file) => fs.truncateSync(file, 20) },
  { what: 'too long', reason: /it holds 99 bytes, expected 98/, make: (file) => fs.appendFileSync(file, 'x') },
  {
    what: 'the right size, not the format',
    reason: /it is not a runner key file/,
    make: (file) => fs.writeFileSync(file, 'x'.repeat(98)),
  },
];

for (const { what, reason, make, skip } of unsafe) {
  test(`[${consumer.flavour}] a key file that is ${what}: a warning names the path and why, and the token-derived key signs the record`, { timeout: 30_000, skip }, async (t) => {
    const ctx = await runner(t);
    assert.equal((await step(ctx)).ok, true);
    const file = keyFileOf(ctx.home);
    make(file);
    for (const n of [1, 2]) {
      const run = await step(ctx);
      assert.equal(run.ok, true, String(run.error));
      const line = run.log.warnings.find((w) => w.includes(`The runner key file "${file}" cannot be used`));
      assert.ok(line, `step ${n}: ${run.log.warnings.join('\n')}`);
      assert.match(line, reason);
      assert.match(line, /derived from the service-account token/);
      // Step 1 finds the record of the runner key (another key); step 2 the
      // fallback's own record, which answers.
      assert.equal(run.outcome.source, n === 1 ? 'reviews' : 'cache', run.log.warnings.join('\n'));
    }
    assert.doesNotMatch(fs.readFileSync(path.join(ctx.cacheDir, listDir(ctx.cacheDir).find((f) => RECORD.test(f))), 'utf8'), /runner-key/);
  });
}

test(`[${consumer.flavour}] a HOME where the key folder cannot be made: a named warning, the fallback, the verdict stands`, { timeout: 30_000 }, async (t) => {
  const ctx = await runner(t);
  const missingHome = path.join(ctx.home, 'no-such-folder');
  const run = await step(ctx, { env: envFor(ctx, {}, missingHome) });
  assert.equal(run.ok, true);
  const line = run.log.warnings.find((w) => w.includes('cannot be used'));
  assert.ok(line, run.log.warnings.join('\n'));
  assert.match(line, /it is missing and cannot be created \(ENOENT\)/);
  assert.ok(line.includes(keyFileOf(missingHome)), line);
});

/** A hook process that loads, waits for "go" on stdin, checks, and prints its record's keyId. */
const CHILD = `'use strict';
const { createRequire } = require('node:module');
const fs = require('node:fs');
const path = require('node:path');
const fromConsumer = createRequire(path.join(process.env.CONSUMER_DIR, 'package.json'));
const preflight = fromConsumer('k8s-auth-preflight');
const k8s = fromConsumer('@kubernetes/client-node');
const kc = new k8s.KubeConfig();
kc.loadFromFile(process.env.KUBECONFIG);
const warnings = [];
const env = JSON.parse(process.env.CHECK_ENV);
const check = preflight.createAuthPreflight({ kubeConfig: kc, namespace: 'ci', cacheDir: process.env.CACHE_DIR, env,
  logger: { info() {}, warning: (m) => warnings.push(m), error: (m) => warnings.push(m) } });
process.stdin.once('data', () => check.isAuthPermissionsOK().then(
  (ok) => {
    const name = fs.readdirSync(process.env.CACHE_DIR).find((f) => f.endsWith('.json'));
    const keyId = name ? JSON.parse(fs.readFileSync(path.join(process.env.CACHE_DIR, name), 'utf8')).keyId : null;
    process.stdout.write(JSON.stringify({ ok, keyId, warnings }) + '\\n');
  },
  (e) => process.stdout.write(JSON.stringify({ ok: false, error: String(e && e.message), warnings }) + '\\n'),
));
process.stdout.write('ready\\n');
`;

test(`[${consumer.flavour}] processes racing to make the key file all end with the same secret`, { timeout: 60_000 }, async (t) => {
  const ctx = await runner(t);
  const childFile = path.join(ctx.work, 'child.js');
  fs.writeFileSync(childFile, CHILD);
  const N = 8;
  const children = Array.from({ length: N }, (_, i) => {
    // A cache folder each: no single flight between them, each signs its own record.
    const cacheDir = path.join(ctx.work, `cache-${i}`);
    fs.mkdirSync(cacheDir);
    const child = spawn(process.execPath, [childFile], {
      env: {
        PATH: process.env.PATH,
        CONSUMER_DIR: consumer.consumerDir,
        KUBECONFIG: ctx.kubeconfigPath,
        CACHE_DIR: cacheDir,
        // Eight processes and 104 reviews on a shared machine: a roomy timeout.
        CHECK_ENV: JSON.stringify(envFor(ctx)),
      },
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    let out = '';
    const ready = new Promise((resolve) => child.stdout.on('data', (d) => (out += d) && out.startsWith('ready\n') && resolve()));
    const done = new Promise((resolve) => child.on('close', () => resolve(out.split('\n')[1])));
    return { child, ready, done };
  });
  await Promise.all(children.map((c) => c.ready));
  for (const c of children) c.child.stdin.end('go\n');
  const results = (await Promise.all(children.map((c) => c.done))).map((line) => JSON.parse(line));
  for (const r of results) {
    assert.equal(r.ok, true, JSON.stringify(r));
    const keyTrouble = r.warnings.filter((w) => KEY_TROUBLE.test(w));
    assert.deepEqual(keyTrouble, [], JSON.stringify(r));
  }
  const keyIds = new Set(results.map((r) => r.keyId));
  assert.equal(keyIds.size, 1, `one key for all: ${[...keyIds]}`);
  assert.match([...keyIds][0], /^[0-9a-f]{16}$/);
  assert.deepEqual(listDir(path.dirname(keyFileOf(ctx.home))), ['runner-key'], 'one key file, no temp file left');
  // And a later step of this runner reads the same key.
  const later = await step(ctx, { env: envFor(ctx) });
  assert.equal(later.ok, true);
  assert.deepEqual(keyWarnings(later.log), []);
  assert.equal(theRecord(ctx).keyId, [...keyIds][0]);
});

test(`[${consumer.flavour}] no HOME and no KEY_FILE setting: a named warning, and the verdict is still cached (token-derived key)`, { timeout: 30_000 }, async (t) => {
  const ctx = await runner(t);
  const { HOME: _home, ...env } = fastEnv();
  const first = await step(ctx, { env });
  assert.equal(first.ok, true);
  assert.ok(first.log.warnings.some((w) => w.startsWith('No runner key file: HOME is not an absolute path')), first.log.warnings.join('\n'));
  const second = await step(ctx, { env });
  assert.equal(second.outcome.source, 'cache');
});

test(`[${consumer.flavour}] the shim's creation: the loser of a race gets EEXIST, and the file keeps the winner's key, whole`, () => {
  const { createKeyFile, readKeyFile } = require(path.join(consumer.consumerDir, 'node_modules', 'k8s-auth-preflight', 'js-shim', 'key-file.js'));
  const home = fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'preflight-race-home-'));
  try {
    const at = { file: keyFileOf(home), folder: path.dirname(keyFileOf(home)) };
    const winner = `k8s-auth-preflight runner-key v1 ${'a'.repeat(64)}\n`;
    const loser = `k8s-auth-preflight runner-key v1 ${'b'.repeat(64)}\n`;
    assert.equal(createKeyFile(at, winner), null);
    assert.equal(createKeyFile(at, loser), 'EEXIST');
    const facts = readKeyFile(at.file, 98);
    assert.equal(facts.type, 'found');
    assert.equal(facts.kind, 'file');
    assert.equal(facts.mode, 0o600);
    assert.equal(Buffer.from(facts.bytes).toString(), winner);
    assert.deepEqual(listDir(at.folder), ['runner-key'], 'no temp file left');
    // A symlink at the path is reported as one, never followed.
    fs.unlinkSync(at.file);
    fs.symlinkSync('/etc/passwd', at.file);
    const link = readKeyFile(at.file, 98);
    assert.equal(link.kind, 'symlink');
    assert.equal(link.bytes, null);
    assert.equal(createKeyFile(at, winner), 'EEXIST', 'never written through the link');
    assert.equal(fs.readlinkSync(at.file), '/etc/passwd');
  } finally {
    fs.rmSync(home, { recursive: true, force: true });
  }
});

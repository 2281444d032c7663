'use strict';
// The per-job cache record on the real file system: whatever is found at the
// cache path (junk, a truncated or edited record, another namespace's record,
// a symlink, a FIFO, a directory) is a miss with a warning, never a crash and
// never trusted; and a write that cannot happen is one warning, not a failure.

const test = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

const { consumer, TOKEN, fastEnv, captureLogger, setup, tempDir, newCheck, listDir } = require('./support/harness');

/** Runs a healthy check in `cacheDir` and returns the record it wrote. */
async function writeRecord(ctx, namespace = 'ci', dir = ctx.cacheDir) {
  const check = newCheck({ kc: ctx.kc, cacheDir: dir, namespace });
  assert.equal(await check.isAuthPermissionsOK(), true);
  assert.equal(check.lastOutcome().source, 'reviews');
  const names = listDir(dir);
  assert.equal(names.length, 1, `one record in ${dir}: ${names}`);
  const file = path.join(dir, names[0]);
  return { name: names[0], file, text: fs.readFileSync(file, 'utf8') };
}

/** A new check must now answer from the record: a valid one is in place. */
async function assertValidRecordInPlace(ctx, file) {
  const stat = fs.lstatSync(file);
  assert.equal(stat.isFile(), true, 'a regular file');
  const record = JSON.parse(fs.readFileSync(file, 'utf8'));
  assert.equal(record.version, 2);
  assert.equal(record.verdict, 'allowed');
  assert.equal(record.namespace, 'ci');
  const before = ctx.server.counts().total;
  const log = captureLogger();
  const check = newCheck({ kc: ctx.kc, cacheDir: ctx.cacheDir, logger: log.logger });
  assert.equal(await check.isAuthPermissionsOK(), true);
  assert.equal(check.lastOutcome().source, 'cache');
  assert.equal(ctx.server.counts().total, before, 'answered from the record');
  assert.deepEqual(log.warnings, []);
}

/** A check against what is at the cache path now: true after 13 reviews. */
async function checkAsksTheApi(ctx) {
  ctx.server.resetCounts();
  const log = captureLogger();
  const check = newCheck({ kc: ctx.kc, cacheDir: ctx.cacheDir, logger: log.logger });
  assert.equal(await check.isAuthPermissionsOK(), true);
  assert.equal(check.lastOutcome().source, 'reviews');
  assert.equal(ctx.server.counts().total, 13, 'asked the API');
  assert.deepEqual(log.errors, []);
  return log;
}

const damaged = [
  {
    what: 'a corrupt file (garbage bytes)',
    damage: (file) => fs.writeFileSync(file, Buffer.concat([Buffer.from([0xff, 0xfe, 0x00, 0x7b]), crypto.randomBytes(300)])),
    warning: 'file is not a verdict record',
  },
  {
    what: 'a truncated record (its first half)',
    damage: (file, record) => fs.writeFileSync(file, record.text.slice(0, Math.floor(record.text.length / 2))),
    warning: 'file is not a verdict record',
  },
  {
    what: 'a record of another format version',
    damage: (file, record) => fs.writeFileSync(file, JSON.stringify({ ...JSON.parse(record.text), version: 3 })),
    warning: 'record version 3, expected 2',
  },
  {
    what: 'a forged record (writtenAtMs moved forward, MAC kept)',
    damage: (file, record) => {
      const parsed = JSON.parse(record.text);
      fs.writeFileSync(file, JSON.stringify({ ...parsed, writtenAtMs: parsed.writtenAtMs + 3_600_000 }));
    },
    warning: 'record signature does not verify (edited or forged)',
  },
  {
    what: 'a forged record (one MAC digit changed)',
    damage: (file, record) => {
      const parsed = JSON.parse(record.text);
      const mac = parsed.mac;
      const flipped = (mac[0] === '0' ? '1' : '0') + mac.slice(1);
      fs.writeFileSync(file, JSON.stringify({ ...parsed, mac: flipped }));
    },
    warning: 'record signature does not verify (edited or forged)',
  },
  {
    what: 'a file larger than the record limit',
    damage: (file) => fs.writeFileSync(file, `{"pad":"${'x'.repeat(64 * 1024)}"}`),
    warning: 'file larger than 64 KiB',
  },
];

for (const { what, damage, warning } of damaged) {
  test(`[${consumer.flavour}] ${what}: asks the API, warns, and a valid record replaces it`, { timeout: 20_000 }, async (t) => {
    const ctx = await setup(t);
    const record = await writeRecord(ctx);
    damage(record.file, record);

    const log = await checkAsksTheApi(ctx);
    const line = log.warnings.find((w) => w.includes(warning));
    assert.ok(line, `a warning names the problem (${warning}): ${JSON.stringify(log.warnings)}`);
    assert.match(line, /Asking the Kubernetes API instead/);
    assert.equal(log.warnings.length, 1, JSON.stringify(log.warnings));
    assert.deepEqual(listDir(ctx.cacheDir), [record.name]);
    await assertValidRecordInPlace(ctx, record.file);
  });
}

test(`[${consumer.flavour}] a valid record for another namespace, copied to this namespace's name, is not used`, { timeout: 20_000 }, async (t) => {
  const ctx = await setup(t);
  const ours = await writeRecord(ctx, 'ci');

  // The same service account, checked in namespace 'other' (its own folder).
  const otherDir = tempDir(t, 'preflight-other');
  ctx.server.configure({ namespace: 'other' });
  const theirs = await writeRecord(ctx, 'other', otherDir);
  ctx.server.configure({ namespace: 'ci' });
  assert.notEqual(theirs.name, ours.name, 'the namespace is part of the file name');
  assert.equal(JSON.parse(theirs.text).namespace, 'other');

  fs.copyFileSync(theirs.file, ours.file);
  const log = await checkAsksTheApi(ctx);
  assert.ok(
    log.warnings.some((w) => w.includes('record is for another namespace')),
    JSON.stringify(log.warnings),
  );
  await assertValidRecordInPlace(ctx, ours.file);
});

test(`[${consumer.flavour}] a record dated in the future (beyond clock skew) is not used`, { timeout: 20_000 }, async (t) => {
  const ctx = await setup(t);
  const record = await writeRecord(ctx);
  ctx.server.resetCounts();
  const log = captureLogger();
  // This check's clock is 10 min behind the one that wrote the record.
  const check = newCheck({ kc: ctx.kc, cacheDir: ctx.cacheDir, logger: log.logger, now: () => Date.now() - 600_000 });
  assert.equal(await check.isAuthPermissionsOK(), true);
  assert.equal(ctx.server.counts().total, 13);
  assert.ok(log.warnings.some((w) => /record is dated (599|600) s in the future/.test(w)), JSON.stringify(log.warnings));
  assert.ok(JSON.parse(fs.readFileSync(record.file, 'utf8')).writtenAtMs < JSON.parse(record.text).writtenAtMs);
});

test(`[${consumer.flavour}] a symlink at the cache path is neither followed for reading nor written through`, { timeout: 20_000 }, async (t) => {
  const ctx = await setup(t);
  const record = await writeRecord(ctx);
  // The link points outside the folder, at a copy of a valid, fresh record:
  // if the check followed it, it would answer from it with no request.
  const outside = tempDir(t, 'preflight-outside');
  const target = path.join(outside, 'victim.json');
  fs.writeFileSync(target, record.text, { mode: 0o644 });
  const targetBefore = fs.readFileSync(target);
  fs.unlinkSync(record.file);
  fs.symlinkSync(target, record.file);

  const log = await checkAsksTheApi(ctx);
  const line = log.warnings.find((w) => w.includes('symbolic link'));
  assert.ok(line, JSON.stringify(log.warnings));
  assert.ok(line.includes(record.file));
  assert.deepEqual(fs.readFileSync(target), targetBefore, 'the target is unchanged');
  assert.equal(fs.statSync(target).mode & 0o777, 0o644);
  assert.equal(fs.lstatSync(record.file).isSymbolicLink(), false, 'the link was replaced');
  assert.deepEqual(listDir(ctx.cacheDir), [record.name]);
  await assertValidRecordInPlace(ctx, record.file);
});

test(`[${consumer.flavour}] a dangling symlink at the cache path: its target is never created`, { timeout: 20_000 }, async (t) => {
  const ctx = await setup(t);
  const record = await writeRecord(ctx);
  const outside = tempDir(t, 'preflight-outside');
  const target = path.join(outside, 'created-through-link.json');
  fs.unlinkSync(record.file);
  fs.symlinkSync(target, record.file);

  const log = await checkAsksTheApi(ctx);
  assert.ok(log.warnings.some((w) => w.includes('symbolic link')), JSON.stringify(log.warnings));
  assert.equal(fs.existsSync(target), false);
  assert.deepEqual(listDir(outside), []);
  await assertValidRecordInPlace(ctx, record.file);
});

test(`[${consumer.flavour}] a FIFO at the cache path is not read (no hang) and is replaced`, { timeout: 20_000 }, async (t) => {
  const ctx = await setup(t);
  const record = await writeRecord(ctx);
  fs.unlinkSync(record.file);
  execFileSync('mkfifo', ['-m', '600', record.file]);
  assert.equal(fs.lstatSync(record.file).isFIFO(), true);

  const log = await checkAsksTheApi(ctx);
  assert.ok(log.warnings.some((w) => w.includes('not a regular file')), JSON.stringify(log.warnings));
  await assertValidRecordInPlace(ctx, record.file);
});

test(`[${consumer.flavour}] a directory at the cache path: ignored, one warning that it cannot be cached, no throw`, { timeout: 20_000 }, async (t) => {
  const ctx = await setup(t);
  const record = await writeRecord(ctx);
  fs.unlinkSync(record.file);
  fs.mkdirSync(record.file);
  fs.writeFileSync(path.join(record.file, 'keep'), 'x');

  const log = await checkAsksTheApi(ctx);
  assert.equal(log.warnings.length, 2, JSON.stringify(log.warnings));
  assert.match(log.warnings[0], /not a regular file/);
  assert.match(log.warnings[1], /could not cache the permission verdict/);
  assert.equal(fs.readFileSync(path.join(record.file, 'keep'), 'utf8'), 'x');
  assert.deepEqual(listDir(ctx.cacheDir), [record.name], 'no temp file left behind');
});

test(`[${consumer.flavour}] an unwritable cache folder: true, exactly one warning about not caching, no throw`, { timeout: 20_000 }, async (t) => {
  const ctx = await setup(t);
  // Tests run as root, which ignores mode bits: a folder "under" a regular
  // file fails for everyone (ENOTDIR).
  const blocker = path.join(ctx.work, 'not-a-folder');
  fs.writeFileSync(blocker, 'a file');
  const cacheDir = path.join(blocker, 'sub');

  for (let round = 1; round <= 2; round++) {
    ctx.server.resetCounts();
    const log = captureLogger();
    const check = newCheck({ kc: ctx.kc, cacheDir, logger: log.logger });
    assert.equal(await check.isAuthPermissionsOK(), true);
    assert.equal(check.lastOutcome().source, 'reviews');
    assert.equal(ctx.server.counts().total, 13, `round ${round} asked the API`);
    assert.equal(log.warnings.length, 1, JSON.stringify(log.warnings));
    assert.match(log.warnings[0], /could not cache the permission verdict in .*not-a-folder\/sub \(ENOTDIR\); later steps will check again/);
    assert.deepEqual(log.errors, []);
  }
  assert.equal(fs.readFileSync(blocker, 'utf8'), 'a file');
});

test(`[${consumer.flavour}] the record file is mode 0600 and holds no token`, { timeout: 20_000 }, async (t) => {
  const ctx = await setup(t);
  const record = await writeRecord(ctx);
  assert.equal(fs.statSync(record.file).mode & 0o777, 0o600);
  const bytes = fs.readFileSync(record.file);
  assert.equal(bytes.includes(TOKEN), false, 'no token');
  assert.equal(bytes.includes(Buffer.from(TOKEN).toString('base64')), false, 'no base64 token');
  assert.equal(bytes.includes(TOKEN.slice(0, 16)), false, 'no token prefix');
  assert.equal(record.name.includes(TOKEN.slice(0, 8)), false);
  assert.deepEqual(Object.keys(JSON.parse(record.text)).sort(), [
    'identity',
    'keyId',
    'mac',
    'namespace',
    'permissions',
    'verdict',
    'version',
    'writtenAtMs',
  ]);
  assert.deepEqual(listDir(ctx.cacheDir), [record.name], 'no temp files left');
});

test(`[${consumer.flavour}] caching off: nothing is read or written`, { timeout: 20_000 }, async (t) => {
  const ctx = await setup(t);
  const env = fastEnv({ CACHE: 'off' });
  for (let round = 1; round <= 2; round++) {
    const check = newCheck({ kc: ctx.kc, cacheDir: ctx.cacheDir, env });
    assert.equal(await check.isAuthPermissionsOK(), true);
    assert.equal(check.lastOutcome().source, 'reviews');
    assert.equal(check.lastOutcome().record, null);
  }
  assert.equal(ctx.server.counts().total, 26);
  assert.deepEqual(listDir(ctx.cacheDir), []);
});

'use strict';
// Copies into and out of a pod (docs/CALLS.md, "Copies"): one exec per
// copy when healthy, accepted only when the pod's count and hash of the
// archive are the runner's; a cut or a mismatch copies again, what would
// fail again fails at once, and a copy is never accepted unverified. The
// pod is a real folder whose execs are real processes (GNU tar, or
// BusyBox's tar and sh); the runner's side is this machine's GNU tar.

const test = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const util = require('node:util');

const { consumer, preflight, NAMESPACE, TOKEN, tempDir, fastEnv } = require('./support/harness');
const { POD, capture, podServer } = require('./support/durable-pod');
const { tree, under } = require('./support/tree');

const F = `[${consumer.flavour}]`;
const MARK = 'k8s-auth-preflight-copy';

// The copy's exec is a plain one: settings as a hook's, fast.
const copyEnv = (overrides) => fastEnv({ EXEC_PONG_DEADLINE_MS: 2000, CALL_DEADLINE_MS: 20_000, ...overrides });

function spec(from, to) {
  return { namespace: NAMESPACE, pod: POD, container: 'job', from, to };
}

/** The copies' execs the server saw. */
const copyExecs = (env) => env.server.execs.filter((e) => e.command.join(' ').includes(MARK));

/** A workspace with what a checkout holds at its edges. */
function workspace(t) {
  const src = tempDir(t, 'copy-src');
  const at = (...parts) => path.join(src, ...parts);
  fs.mkdirSync(at('a', 'empty'), { recursive: true });
  fs.mkdirSync(at('deep', 'x'.repeat(90), 'y'.repeat(90)), { recursive: true });
  fs.writeFileSync(at('deep', 'x'.repeat(90), 'y'.repeat(90), 'long name, over 100 bytes in all'), 'long\n');
  fs.writeFileSync(at('a', 'f'), 'hello\n');
  fs.writeFileSync(at('name with spaces'), 'spaces\n');
  fs.writeFileSync(at('new\nline'), 'newline\n');
  fs.writeFileSync(Buffer.concat([Buffer.from(`${src}/`), Buffer.from([0x6e, 0xff, 0xfe, 0x2e])]), 'not utf-8\n');
  fs.writeFileSync(at('binary'), crypto.randomBytes(300_000));
  fs.symlinkSync('a/f', at('link'));
  fs.symlinkSync('/nowhere', at('dangling'));
  fs.writeFileSync(at('read-only'), 'ro\n', { mode: 0o444 });
  fs.mkdirSync(at('closed'), { mode: 0o555 });
  fs.mkdirSync(at('_runner_hook_responses'));
  fs.writeFileSync(at('_runner_hook_responses', 'r.json'), '{}');
  return src;
}

/** `tree` without the runner's own answers, which a copy leaves out. */
const withoutResponses = (entries) => under(entries, '_runner_hook_responses', false);

/** The tree of `src` as a copy into the pod leaves it: without the runner's answers, files u+rw, folders u+rwx. */
const asCopiedIn = (entries) =>
  withoutResponses(entries).map((line) => line.replace(/ (file|dir) u(\d)/, (_m, kind, u) => ` ${kind} u${(Number(u) | (kind === 'file' ? 6 : 7)).toString(8)}`));

/** A folder of BusyBox's applets named as the copy's utilities, and sh; null without busybox. */
function busyboxBin(t) {
  const busybox = ['/usr/bin/busybox', '/bin/busybox'].find((p) => fs.existsSync(p));
  if (!busybox) return null;
  const bin = tempDir(t, 'busybox-bin');
  // Only the applets this BusyBox has (Debian's has no cksum: the copy
  // then checks with sha256sum).
  const applets = require('node:child_process').spawnSync(busybox, ['--list'], { encoding: 'utf8' }).stdout.split('\n');
  for (const name of ['sh', 'tar', 'sha256sum', 'cksum', 'tee', 'wc', 'mkfifo', 'mkdir', 'mktemp', 'rm', 'rmdir', 'cat', 'sleep']) if (applets.includes(name)) fs.symlinkSync(busybox, path.join(bin, name));
  return bin;
}

/** A program `name` in a new folder, for the pod's PATH before the real ones. */
function wrapper(t, name, body) {
  const bin = tempDir(t, `wrap-${name}`);
  fs.writeFileSync(path.join(bin, name), `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  return bin;
}

const POD_PATH = '/usr/local/bin:/usr/bin:/bin';

for (const flavour of ['GNU tar and dash', 'BusyBox tar and sh']) {
  test(`${F} ${flavour} in the pod: a workspace into the pod and back out, one exec each, the same files (names with spaces, newlines and bytes not UTF-8, links, empty folders, 100-byte paths), the runner's answers left out, modes as the hooks leave them`, async (t) => {
    const bin = flavour.startsWith('BusyBox') ? busyboxBin(t) : null;
    if (flavour.startsWith('BusyBox') && !bin) return t.skip('no busybox');
    const env = await podServer(t, bin ? { podEnv: { PATH: bin } } : {});
    const src = workspace(t);
    const log = capture();
    const options = { env: copyEnv(), logger: log.logger };
    const into = path.join(env.folder(), 'w');
    const r = await preflight.copyToPod(env.kc, spec(src, into), options);
    assert.equal(r.attempts, 1);
    assert.match(r.sha256, /^[0-9a-f]{64}$/);
    assert.equal(copyExecs(env).length, 1, 'one exec into the pod');
    assert.deepEqual(tree(into), asCopiedIn(tree(src)));
    // The hooks' modes: u+rw on files, u+rwx on folders, nothing else touched.
    assert.equal(fs.statSync(path.join(into, 'read-only')).mode & 0o777, 0o644);
    assert.equal(fs.statSync(path.join(into, 'closed')).mode & 0o777, 0o755);
    const back = tempDir(t, 'copy-back');
    const r2 = await preflight.copyFromPod(env.kc, spec(into, back), options);
    assert.equal(r2.attempts, 1);
    assert.equal(copyExecs(env).length, 2, 'one exec out of the pod');
    assert.deepEqual(tree(path.join(back, 'w')), tree(into));
    assert.deepEqual(log.warning, []);
  });
}

test(`${F} copying out leaves the runner's answers in place: a pod's _runner_hook_responses is never unpacked over them`, async (t) => {
  const env = await podServer(t);
  const inPod = path.join(env.folder(), '_temp');
  fs.mkdirSync(path.join(inPod, '_runner_hook_responses'), { recursive: true });
  fs.writeFileSync(path.join(inPod, '_runner_hook_responses', 'answer.json'), 'stale');
  fs.writeFileSync(path.join(inPod, 'out.txt'), 'out');
  const runner = tempDir(t, 'runner-work');
  fs.mkdirSync(path.join(runner, '_temp', '_runner_hook_responses'), { recursive: true });
  fs.writeFileSync(path.join(runner, '_temp', '_runner_hook_responses', 'answer.json'), 'fresh');
  await preflight.copyFromPod(env.kc, spec(inPod, runner), { env: copyEnv(), logger: capture().logger });
  assert.equal(fs.readFileSync(path.join(runner, '_temp', 'out.txt'), 'utf8'), 'out');
  assert.equal(fs.readFileSync(path.join(runner, '_temp', '_runner_hook_responses', 'answer.json'), 'utf8'), 'fresh');
});

/** A folder of this machine's utilities for the pod's PATH, `without` some of them. */
function gnuBin(t, without = []) {
  const bin = tempDir(t, 'gnu-bin');
  for (const name of ['sh', 'tar', 'tee', 'wc', 'mkfifo', 'mkdir', 'mktemp', 'rm', 'rmdir', 'cat', 'sha256sum', 'cksum', 'sleep']) {
    if (!without.includes(name)) fs.symlinkSync(`/usr/bin/${name === 'sh' ? 'dash' : name}`, path.join(bin, name));
  }
  return bin;
}

// A check that lies: cksum with its CRC one off (the count right), or
// sha256sum with another hash; `once`: only its first answer.
const lyingCheck = {
  cksum: (flag) => `${flag ? `if [ -e '${flag}' ]; then exec /usr/bin/cksum "$@"; fi; : > '${flag}'\n` : ''}set -- $(/usr/bin/cksum); echo "$((($1 + 1) % 4294967296)) $2"`,
  sha256sum: (flag) => `${flag ? `if [ -e '${flag}' ]; then exec /usr/bin/sha256sum "$@"; fi; : > '${flag}'\n` : ''}cat >/dev/null; echo 0000000000000000000000000000000000000000000000000000000000000000 '-'`,
};

// A container with cksum checks with it; one without, with sha256sum.
for (const check of ['cksum', 'sha256sum']) {
  test(`${F} bytes that arrive different (the pod's ${check} is not the runner's): copied again, and accepted only when they agree, both ways`, async (t) => {
    const flag = path.join(tempDir(t, 'flag'), 'lied');
    const liar = wrapper(t, check, lyingCheck[check](flag));
    const env = await podServer(t, { podEnv: { PATH: `${liar}:${gnuBin(t, check === 'cksum' ? [] : ['cksum'])}` } });
    const src = workspace(t);
    const log = capture();
    const into = path.join(env.folder(), 'w');
    const r = await preflight.copyToPod(env.kc, spec(src, into), { env: copyEnv(), logger: log.logger });
    assert.equal(r.attempts, 2);
    assert.equal(copyExecs(env).length, 2);
    assert.deepEqual(tree(into), asCopiedIn(tree(src)));
    assert.equal(log.warning.length, 1, log.warning.join('\n'));
    assert.match(log.warning[0], /did not arrive whole \(attempt 1 of 5\): \d+ bytes were sent and \d+ arrived, other bytes in their place; copying it again in 250 ms/);
    fs.rmSync(flag);
    const back = tempDir(t, 'back');
    const r2 = await preflight.copyFromPod(env.kc, spec(into, back), { env: copyEnv(), logger: log.logger });
    assert.equal(r2.attempts, 2);
    assert.deepEqual(tree(path.join(back, 'w')), tree(into));
  });
}

test(`${F} bytes that never arrive whole: every attempt made, then a failure that says so, never a success`, async (t) => {
  const bin = wrapper(t, 'cksum', lyingCheck.cksum(null));
  const env = await podServer(t, { podEnv: { PATH: `${bin}:${POD_PATH}` } });
  const log = capture();
  const src = workspace(t);
  await assert.rejects(preflight.copyToPod(env.kc, spec(src, path.join(env.folder(), 'w')), { env: copyEnv(), logger: log.logger }), (e) => {
    assert.equal(e.code, 'PREFLIGHT_COPY_FAILED');
    assert.match(e.message, /^k8s-auth-preflight: the copy of .* into pod .* at .* failed: it did not arrive whole in 5 attempts; the last: \d+ bytes were sent and \d+ arrived, other bytes in their place$/);
    return true;
  });
  assert.equal(copyExecs(env).length, 5);
  assert.equal(log.warning.length, 4);
});

test(`${F} a cut stream in the middle of a copy into the pod: copied again, the files whole`, async (t) => {
  // The pod's tar waits a moment before reading, so the cut comes while
  // the archive is on its way.
  const bin = wrapper(t, 'tar', 'sleep 1\nexec /usr/bin/tar "$@"');
  const env = await podServer(t, { podEnv: { PATH: `${bin}:${POD_PATH}` } });
  const src = workspace(t);
  fs.writeFileSync(path.join(src, 'big'), crypto.randomBytes(8 * 1024 * 1024));
  const log = capture();
  const into = path.join(env.folder(), 'w');
  const copied = preflight.copyToPod(env.kc, spec(src, into), { env: copyEnv(), logger: log.logger });
  await new Promise((r) => setTimeout(r, 500));
  await env.server.setPhase('refuse');
  await new Promise((r) => setTimeout(r, 300));
  await env.server.setPhase('healthy');
  const r = await copied;
  assert.ok(r.attempts >= 2, `attempts ${r.attempts}`);
  assert.deepEqual(tree(into), asCopiedIn(tree(src)));
  assert.match(log.warning[0], /did not arrive whole \(attempt 1 of 5\)/);
});

test(`${F} a cut stream in the middle of a copy out of the pod: copied again, the files whole`, async (t) => {
  const bin = wrapper(t, 'tar', 'sleep 1\nexec /usr/bin/tar "$@"');
  const env = await podServer(t, { podEnv: { PATH: `${bin}:${POD_PATH}` } });
  const inPod = path.join(env.folder(), 'w');
  fs.mkdirSync(inPod, { recursive: true });
  fs.writeFileSync(path.join(inPod, 'big'), crypto.randomBytes(8 * 1024 * 1024));
  fs.writeFileSync(path.join(inPod, 'small'), 'small');
  const log = capture();
  const back = tempDir(t, 'copy-back');
  const copied = preflight.copyFromPod(env.kc, spec(inPod, back), { env: copyEnv(), logger: log.logger });
  await new Promise((r) => setTimeout(r, 500));
  await env.server.setPhase('refuse');
  await new Promise((r) => setTimeout(r, 300));
  await env.server.setPhase('healthy');
  const r = await copied;
  assert.ok(r.attempts >= 2, `attempts ${r.attempts}`);
  assert.deepEqual(tree(path.join(back, 'w')), tree(inPod));
  assert.match(log.warning[0], /did not arrive whole \(attempt 1 of 5\)/);
});

test(`${F} files that change while the runner's tar packs them: copied again; a folder that is not there: a failure at once, in tar's words`, async (t) => {
  const env = await podServer(t);
  const log = capture();
  // This machine's tar, which says once that a file changed as it read it
  // (GNU tar's status 1), as a file a build is writing makes it say.
  const flag = path.join(tempDir(t, 'flag'), 'said');
  const bin = wrapper(t, 'tar', `/usr/bin/tar "$@" || exit $?\nif [ ! -e '${flag}' ]; then : > '${flag}'; echo 'tar: ./a/f: file changed as we read it' >&2; exit 1; fi`);
  const savedPath = process.env.PATH;
  process.env.PATH = `${bin}:${savedPath}`;
  t.after(() => {
    process.env.PATH = savedPath;
  });
  const src = workspace(t);
  const into = path.join(env.folder(), 'w');
  const r = await preflight.copyToPod(env.kc, spec(src, into), { env: copyEnv(), logger: log.logger });
  assert.equal(r.attempts, 2);
  assert.match(log.warning[0], /files changed in the runner while tar packed them: tar: \.\/a\/f: file changed as we read it/);
  await assert.rejects(preflight.copyToPod(env.kc, spec(path.join(src, 'missing'), into), { env: copyEnv(), logger: log.logger }), (e) => {
    assert.equal(e.code, 'PREFLIGHT_COPY_FAILED');
    assert.match(e.message, /tar could not pack in the runner \(exited with 2\): .*missing: Cannot (open|chdir)/);
    return true;
  });
  assert.equal(copyExecs(env).length, 3, 'the failure made one exec');
  await assert.rejects(preflight.copyFromPod(env.kc, spec(path.join(env.folder(), 'missing'), tempDir(t, 'back')), { env: copyEnv(), logger: log.logger }), (e) => {
    assert.match(e.message, /out of pod .* failed: tar could not pack in the pod \(exited with 2\): tar: missing: Cannot stat/);
    return true;
  });
  assert.equal(copyExecs(env).length, 4);
});

test(`${F} a pod folder tar cannot write into: a failure at once, saying so; nothing is accepted`, async (t) => {
  const env = await podServer(t);
  const src = workspace(t);
  fs.mkdirSync(env.folder(), { recursive: true });
  const blocker = path.join(env.folder(), 'file');
  fs.writeFileSync(blocker, 'a file, not a folder');
  await assert.rejects(preflight.copyToPod(env.kc, spec(src, path.join(blocker, 'w')), { env: copyEnv(), logger: capture().logger }), (e) => {
    assert.equal(e.code, 'PREFLIGHT_COPY_FAILED');
    assert.match(e.message, /the pod did not report the bytes it got \(its script exited with 1\): mkdir: .*Not a directory$/);
    return true;
  });
  assert.equal(copyExecs(env).length, 1);
});

test(`${F} a container with neither cksum nor sha256sum: nothing is unpacked, and the failure names what is missing (a workspace larger than a pipe holds: the runner's tar is not left waiting)`, { timeout: 60_000 }, async (t) => {
  const env = await podServer(t, { podEnv: { PATH: gnuBin(t, ['cksum', 'sha256sum']) } });
  const into = path.join(env.folder(), 'w');
  const src = workspace(t);
  fs.writeFileSync(path.join(src, 'big'), crypto.randomBytes(4 * 1024 * 1024));
  await assert.rejects(preflight.copyToPod(env.kc, spec(src, into), { env: copyEnv(), logger: capture().logger }), /its script exited with 127\): k8s-auth-preflight: the container has neither cksum nor sha256sum and wc$/);
  assert.equal(fs.existsSync(into), false);
});

test(`${F} bad specs: a clear error before any exec, naming the field`, async (t) => {
  const env = await podServer(t);
  const options = { env: copyEnv(), logger: capture().logger };
  const good = spec('/tmp', '/w');
  for (const [bad, message] of [
    [null, /spec: namespace: expected a string, got undefined|namespace/],
    [{ ...good, pod: 5 }, /pod: expected a string, got a number/],
    [{ ...good, container: '' }, /container: is empty/],
    [{ ...good, to: 'a\0b' }, /to: holds a NUL byte/],
  ]) {
    await assert.rejects(preflight.copyToPod(env.kc, bad, options), (e) => {
      assert.equal(e.code, 'PREFLIGHT_BAD_INPUT', e.message);
      assert.match(e.message, message);
      return true;
    });
  }
  await assert.rejects(preflight.copyFromPod(env.kc, { ...good, from: '/' }, options), /from: names no folder/);
  assert.equal(copyExecs(env).length, 0);
});

test(`${F} an exec whose set-up is refused (403, its body echoing the token): copied again (a copy may run twice), then a failure that says so, the token in no part of it`, async (t) => {
  const env = await podServer(t);
  await env.server.setPhase('forbidden403', { echoToken: true });
  const log = capture();
  let error;
  await preflight.copyToPod(env.kc, spec(workspace(t), '/w'), { env: copyEnv(), logger: log.logger }).catch((e) => {
    error = e;
  });
  assert.ok(error, 'rejected');
  assert.equal(error.code, 'PREFLIGHT_COPY_FAILED');
  assert.match(error.message, /did not arrive whole in 5 attempts; the last: its exec could not be opened \(HTTP 403\)/);
  assert.equal(log.warning.length, 4);
  for (const form of [error.message, error.stack, util.inspect(error, { depth: 10, showHidden: true }), ...log.warning]) assert.ok(!form.includes(TOKEN), form);
});

test(`${F} an exec for a pod that is not there (404): a failure at once`, async (t) => {
  const env = await podServer(t);
  await assert.rejects(preflight.copyToPod(env.kc, { ...spec(workspace(t), '/w'), pod: 'no-such-pod' }, { env: copyEnv(), logger: capture().logger }), (e) => {
    assert.equal(e.code, 'PREFLIGHT_COPY_FAILED');
    assert.match(e.message, /into pod no-such-pod at \/w failed: its exec could not be opened: /);
    return true;
  });
});

test(`${F} folders named like options ('-w' in the pod, '-src' on the runner): copied as folders, both ways`, async (t) => {
  const env = await podServer(t);
  const base = tempDir(t, 'dash');
  const src = path.join(base, '-src');
  fs.mkdirSync(src);
  fs.writeFileSync(path.join(src, 'f'), 'dash\n');
  await preflight.copyToPod(env.kc, spec(src, '-w'), { env: copyEnv(), logger: capture().logger });
  assert.equal(fs.readFileSync(path.join(env.folder(), '-w', 'f'), 'utf8'), 'dash\n');
  const back = path.join(base, '-back');
  await preflight.copyFromPod(env.kc, spec('-w', back), { env: copyEnv(), logger: capture().logger });
  assert.equal(fs.readFileSync(path.join(back, '-w', 'f'), 'utf8'), 'dash\n');
});

test(`${F} a file that grows on the runner all through the copy (this machine's GNU tar, a real writer): the copy fails naming it, or arrives as a prefix of it; never other bytes`, { timeout: 120_000 }, async (t) => {
  const env = await podServer(t);
  const src = tempDir(t, 'growing');
  const file = path.join(src, 'log');
  fs.writeFileSync(file, '');
  fs.writeFileSync(path.join(src, 'still'), 'still\n');
  // A writer that appends a numbered line every millisecond until stopped.
  const { spawn } = require('node:child_process');
  const writer = spawn('sh', ['-c', `i=0; while [ $i -lt 200000 ]; do echo "line $i" >> '${file}'; i=$((i+1)); done`], { stdio: 'ignore' });
  t.after(() => writer.kill('SIGKILL'));
  await new Promise((r) => setTimeout(r, 300));
  const log = capture();
  const into = path.join(env.folder(), 'w');
  let result = null;
  let error = null;
  await preflight.copyToPod(env.kc, spec(src, into), { env: copyEnv(), logger: log.logger }).then(
    (r) => {
      result = r;
    },
    (e) => {
      error = e;
    },
  );
  writer.kill('SIGKILL');
  if (error) {
    assert.equal(error.code, 'PREFLIGHT_COPY_FAILED');
    assert.match(error.message, /files changed in the runner while tar packed them: .*log: file changed as we read it/);
  } else {
    const got = fs.readFileSync(path.join(into, 'log'));
    const now = fs.readFileSync(file);
    assert.ok(got.length <= now.length && now.subarray(0, got.length).equals(got), `the pod's log is a prefix of the runner's (${got.length} of ${now.length} bytes)`);
    assert.equal(fs.readFileSync(path.join(into, 'still'), 'utf8'), 'still\n');
  }
  t.diagnostic(error ? `failed after every attempt: ${log.warning.length} warnings` : `arrived at attempt ${result.attempts}`);
  // Every attempt that saw the file change said so.
  for (const w of log.warning) assert.match(w, /file changed as we read it|were sent and/);
});

test(`${F} a copy into the pod touches nothing it did not bring: the folder's own mode, and what the folder held before, keep their modes`, async (t) => {
  const env = await podServer(t);
  const src = workspace(t);
  fs.chmodSync(src, 0o700);
  const into = path.join(env.folder(), 'w');
  fs.mkdirSync(path.join(into, 'before', 'locked'), { recursive: true });
  fs.writeFileSync(path.join(into, 'before', 'read-only'), 'kept\n', { mode: 0o400 });
  fs.chmodSync(path.join(into, 'before', 'locked'), 0o500);
  fs.chmodSync(into, 0o751);
  await preflight.copyToPod(env.kc, spec(src, into), { env: copyEnv(), logger: capture().logger });
  assert.equal(fs.statSync(into).mode & 0o777, 0o751, "the folder's own mode");
  assert.equal(fs.statSync(path.join(into, 'before', 'read-only')).mode & 0o777, 0o400);
  assert.equal(fs.statSync(path.join(into, 'before', 'locked')).mode & 0o777, 0o500);
  // What it brought has the hooks' modes.
  assert.equal(fs.statSync(path.join(into, 'read-only')).mode & 0o777, 0o644);
  assert.equal(fs.statSync(path.join(into, 'closed')).mode & 0o777, 0o755);
  fs.chmodSync(path.join(into, 'before', 'locked'), 0o700);
});

test(`${F} a pod that reads the archive slowly but steadily (about 640 KB/s, pongs queued behind 12 MB of data, far longer than the pong deadline): one attempt, whole`, { timeout: 180_000, skip: consumer.flavour === '2x' && 'not yet with client-node 2.x: there the stream watch did not see the bytes move, and the first two attempts were cut (not investigated; docs/RELIABILITY.md)' }, async (t) => {
  const bin = tempDir(t, 'slow-tar');
  fs.writeFileSync(path.join(bin, 'throttle.js'), "process.stdin.on('data', (c) => { process.stdout.write(c); process.stdin.pause(); setTimeout(() => process.stdin.resume(), 100); });\n");
  fs.writeFileSync(path.join(bin, 'tar'), `#!/bin/sh\ncase "$1" in x*) ${process.execPath} '${bin}/throttle.js' | /usr/bin/tar "$@" ;; *) exec /usr/bin/tar "$@" ;; esac\n`, { mode: 0o755 });
  const env = await podServer(t, { podEnv: { PATH: `${bin}:${POD_PATH}` } });
  const src = tempDir(t, 'slow-src');
  fs.writeFileSync(path.join(src, 'big'), crypto.randomBytes(12 * 1024 * 1024));
  const log = capture();
  const into = path.join(env.folder(), 'w');
  // A pong deadline of 6 s: the data ahead of a pong takes about 19 s to be
  // read, while the connection hands on about 64 KB every 0.1 s (a loaded
  // machine can starve one look of its bytes; not six seconds of them).
  const r = await preflight.copyToPod(env.kc, spec(src, into), { env: copyEnv({ EXEC_PONG_DEADLINE_MS: 6000 }), logger: log.logger });
  assert.deepEqual(log.warning, []);
  assert.equal(r.attempts, 1);
  assert.deepEqual(tree(into), asCopiedIn(tree(src)));
});

test(`${F} a pod whose TMPDIR is not there: the copy's FIFOs go to the next place that takes them, both ways`, async (t) => {
  const env = await podServer(t, { podEnv: { TMPDIR: '/nonexistent-k8s-auth-preflight' } });
  const src = workspace(t);
  const into = path.join(env.folder(), 'w');
  await preflight.copyToPod(env.kc, spec(src, into), { env: copyEnv(), logger: capture().logger });
  assert.deepEqual(tree(into), asCopiedIn(tree(src)));
  const back = tempDir(t, 'back');
  await preflight.copyFromPod(env.kc, spec(into, back), { env: copyEnv(), logger: capture().logger });
  assert.deepEqual(tree(path.join(back, 'w')), tree(into));
});

test(`${F} a pod whose tar prints the token when it fails: the failure and every line hide it`, async (t) => {
  const bin = wrapper(t, 'tar', `echo "tar: cannot write: ${TOKEN}" >&2\nexit 2`);
  const env = await podServer(t, { podEnv: { PATH: `${bin}:${POD_PATH}` } });
  const log = capture();
  let error;
  await preflight.copyToPod(env.kc, spec(workspace(t), path.join(env.folder(), 'w')), { env: copyEnv(), logger: log.logger }).catch((e) => {
    error = e;
  });
  assert.ok(error, 'rejected');
  assert.match(error.message, /tar could not unpack in the pod \(exited with 2\): tar: cannot write: /);
  for (const form of [error.message, error.stack, util.inspect(error, { depth: 10, showHidden: true }), ...log.warning, ...log.info]) assert.ok(!form.includes(TOKEN), form);
});

/** A folder of a `tar` that runs this machine's GNU tar with its archive passed at about 640 KB/s (`way`: 'x' unpacking, 'c' packing). */
function slowTar(t, way) {
  const bin = tempDir(t, 'slow-tar');
  fs.writeFileSync(path.join(bin, 'throttle.js'), "process.stdin.on('data', (c) => { process.stdout.write(c); process.stdin.pause(); setTimeout(() => process.stdin.resume(), 100); });\n");
  const slow = way === 'x' ? `${process.execPath} '${bin}/throttle.js' | /usr/bin/tar "$@"` : `/usr/bin/tar "$@" | ${process.execPath} '${bin}/throttle.js'`;
  fs.writeFileSync(path.join(bin, 'tar'), `#!/bin/sh\ncase "$1" in ${way}*) ${slow} ;; *) exec /usr/bin/tar "$@" ;; esac\n`, { mode: 0o755 });
  return bin;
}

/** Resolves once `file` holds some bytes (a tar is writing it), within 30 s. */
async function partlyWritten(file) {
  const started = performance.now();
  while (performance.now() - started < 30_000) {
    if (fs.existsSync(file) && fs.statSync(file).size > 0) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`${file} was never written`);
}

// A folder named with a newline and a file named with bytes that are not
// UTF-8: the names go from the runner's tar's listing through the core to
// the removal script and back to bytes.
const GONE = 'gone\nfolder';
const goneFile = (root) => Buffer.concat([Buffer.from(`${root}/${GONE}/big-`), Buffer.from([0xff, 0xfe])]);

for (const way of ['into', 'out of']) {
  test(`${F} a copy ${way} the pod cut while it wrote a large file, whose folder the source then removed: what the cut attempt wrote is removed before the next (the half-written file and its folder), which leaves neither, and says so`, { timeout: 120_000 }, async (t) => {
    const bin = slowTar(t, way === 'into' ? 'x' : 'c');
    const env = await podServer(t, { podEnv: { PATH: `${bin}:${POD_PATH}` } });
    const log = capture();
    const options = { env: copyEnv({ EXEC_PONG_DEADLINE_MS: 6000 }), logger: log.logger };
    const source = way === 'into' ? tempDir(t, 'src') : path.join(env.folder(), 'w');
    fs.mkdirSync(path.join(source, GONE), { recursive: true });
    fs.writeFileSync(path.join(source, 'kept'), 'kept\n');
    fs.writeFileSync(goneFile(source), crypto.randomBytes(12 * 1024 * 1024));
    const into = way === 'into' ? path.join(env.folder(), 'w') : tempDir(t, 'back');
    const landed = way === 'into' ? into : path.join(into, 'w');
    const copied = way === 'into' ? preflight.copyToPod(env.kc, spec(source, into), options) : preflight.copyFromPod(env.kc, spec(source, into), options);
    await partlyWritten(goneFile(landed));
    await env.server.setPhase('refuse');
    fs.rmSync(path.join(source, GONE), { recursive: true });
    await new Promise((r) => setTimeout(r, 300));
    await env.server.setPhase('healthy');
    const r = await copied;
    assert.ok(r.attempts >= 2, `attempts ${r.attempts}`);
    assert.equal(fs.existsSync(path.join(landed, GONE)), false, 'what the cut attempt wrote is gone');
    assert.deepEqual(tree(landed), way === 'into' ? asCopiedIn(tree(source)) : tree(source));
    assert.ok(log.info.some((line) => /removed the \d+ name\(s\) attempt 1 may have written in .*, before attempt 2$/.test(line)), log.info.join('\n'));
  });
}

/** The removal script as the package ships it. */
const removalScript = () => require(path.join(consumer.consumerDir, 'node_modules', 'k8s-auth-preflight', 'pkg', 'pod-program.js'))['copy-remove'];

const shells = () => [['dash'], ['bash'], ['busybox', 'sh']].filter(([shell]) => ['/usr/bin', '/bin'].some((d) => fs.existsSync(path.join(d, shell))));

for (const shell of shells()) {
  test(`${F} the removal script under ${shell.join(' ')}: every listed file and empty folder goes (names with newlines, backslashes, leading spaces and dashes, bytes not UTF-8); a folder that holds more, what is under a link, and what is outside stay; no end line, no report`, (t) => {
    const { spawnSync } = require('node:child_process');
    const root = tempDir(t, 'remove');
    const outside = tempDir(t, 'outside');
    fs.writeFileSync(path.join(outside, 'target'), 'outside\n');
    const at = (name) => (Buffer.isBuffer(name) ? Buffer.concat([Buffer.from(`${root}/`), name]) : path.join(root, name));
    const nonUtf8 = Buffer.from([0x6e, 0xff, 0xfe]);
    for (const name of ['plain', 'new\nline', 'back\\slash', ' lead', '-rf', 'dir/inner', 'full/listed', 'full/other']) {
      fs.mkdirSync(path.dirname(at(name)), { recursive: true });
      fs.writeFileSync(at(name), 'x');
    }
    fs.writeFileSync(at(nonUtf8), 'x');
    fs.symlinkSync(outside, at('link'));
    fs.symlinkSync(path.join(outside, 'target'), at('file-link'));
    // Deepest first, escaped as the core writes them.
    const lines = ['plain', 'new\\nline', 'back\\\\slash', ' lead', '-rf', 'dir/inner', 'dir', 'full/listed', 'full', 'link/target', 'file-link', 'missing'];
    const input = Buffer.concat([...lines.map((l) => Buffer.from(`${l}\n`)), nonUtf8, Buffer.from('\n/\n')]);
    const run = (stdin) => spawnSync(shell[0], [...shell.slice(1), '-c', removalScript(), 'k8s-auth-preflight', root], { input: stdin, encoding: 'utf8', timeout: 30_000 });
    const done = run(input);
    assert.equal(done.status, 0, done.stderr);
    assert.equal(done.stdout, 'k8s-auth-preflight-removed\n');
    assert.deepEqual(fs.readdirSync(root).sort(), ['full', 'link']);
    assert.deepEqual(fs.readdirSync(at('full')), ['other']);
    assert.equal(fs.readFileSync(path.join(outside, 'target'), 'utf8'), 'outside\n');
    fs.writeFileSync(at('again'), 'x');
    const short = run(Buffer.from('again\n'));
    assert.equal(short.status, 1);
    assert.equal(short.stdout, '');
    assert.match(short.stderr, /the names ended before their end line/);
  });
}

test(`${F} an apiserver that speaks only v4.channel.k8s.io (Kubernetes 1.29 and older): a copy into the pod fails at its first attempt naming the protocol (the end of stdin closes the whole stream there); a copy out of the pod, which sends no stdin, works`, async (t) => {
  const env = await podServer(t, { execProtocols: ['v4.channel.k8s.io'] });
  const log = capture();
  const into = path.join(env.folder(), 'w');
  const src = workspace(t);
  await assert.rejects(preflight.copyToPod(env.kc, spec(src, into), { env: copyEnv(), logger: log.logger }), (e) => {
    assert.equal(e.code, 'PREFLIGHT_COPY_FAILED');
    assert.match(e.message, /failed: the apiserver chose v4\.channel\.k8s\.io for its exec, where the end of the archive closes the stream, so no report can come back; a copy into a pod needs v5\.channel\.k8s\.io/);
    return true;
  });
  assert.equal(copyExecs(env).length, 1, 'not copied again');
  assert.deepEqual(log.warning, []);
  const inPod = path.join(env.folder(), 'made');
  fs.mkdirSync(inPod);
  fs.writeFileSync(path.join(inPod, 'f'), 'out\n');
  const back = tempDir(t, 'back');
  const r = await preflight.copyFromPod(env.kc, spec(inPod, back), { env: copyEnv(), logger: log.logger });
  assert.equal(r.attempts, 1);
  assert.equal(fs.readFileSync(path.join(back, 'made', 'f'), 'utf8'), 'out\n');
});

test(`${F} BusyBox tar in the pod (which writes through a link where a folder goes): a link an attempt that did not arrive whole left, where the source then holds a folder, is removed before the next attempt; nothing is written through it`, async (t) => {
  const bin = busyboxBin(t);
  if (!bin) return t.skip('no busybox');
  const src = tempDir(t, 'src');
  const decoy = tempDir(t, 'decoy');
  fs.writeFileSync(path.join(decoy, 'f'), 'decoy\n');
  fs.symlinkSync(decoy, path.join(src, 'alink'));
  fs.writeFileSync(path.join(src, 'big'), crypto.randomBytes(1024 * 1024));
  // The pod's check lies once, after the whole archive went through it;
  // then the source's link becomes a folder.
  const check = fs.existsSync(path.join(bin, 'cksum')) ? 'cksum' : 'sha256sum';
  const flag = path.join(tempDir(t, 'flag'), 'lied');
  const lie = check === 'cksum' ? `set -- $(${bin}/cksum); echo "$((($1 + 1) % 4294967296)) $2"` : `cat >/dev/null; echo 0000000000000000000000000000000000000000000000000000000000000000 '-'`;
  const liar = wrapper(t, check, `if [ -e '${flag}' ]; then exec ${bin}/${check} "$@"; fi; : > '${flag}'\n${lie}\nrm '${src}/alink'; mkdir '${src}/alink'; echo new > '${src}/alink/f'`);
  const env = await podServer(t, { podEnv: { PATH: `${liar}:${bin}` } });
  const log = capture();
  const into = path.join(env.folder(), 'w');
  const r = await preflight.copyToPod(env.kc, spec(src, into), { env: copyEnv(), logger: log.logger });
  assert.equal(r.attempts, 2);
  assert.deepEqual(fs.readdirSync(decoy), ['f']);
  assert.equal(fs.readFileSync(path.join(decoy, 'f'), 'utf8'), 'decoy\n', 'nothing was written through the link');
  assert.ok(fs.lstatSync(path.join(into, 'alink')).isDirectory());
  assert.deepEqual(tree(into), asCopiedIn(tree(src)));
});

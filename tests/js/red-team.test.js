'use strict';
// Issue 10, the red team's findings on the built package: a credential the
// HTTP client refuses as a header value must never leak (nor any long piece
// of it); a 2xx body cut off mid-way is retried; a host logger that throws
// never changes the verdict; without RUNNER_TEMP nothing is cached in the
// shared temp folder.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const {
  k8s,
  consumer,
  TOKEN,
  NAMESPACE,
  fullRole,
  roleWithout,
  fastEnv,
  captureLogger,
  tempDir,
  setup,
  newCheck,
  listDir,
} = require('./support/harness');

const { isPreflightError, isPreflightInconclusiveError } = consumer.preflight;

/** Every 8-character piece of `secret` that occurs in `text`. */
function leakedPieces(text, secret) {
  const found = [];
  for (let i = 0; i + 8 <= secret.length; i++) {
    const piece = secret.slice(i, i + 8);
    if (text.includes(piece)) found.push(JSON.stringify(piece));
  }
  return found;
}

/** A logger that keeps every line, debug included. */
function fullCapture() {
  const capture = captureLogger();
  capture.logger.debug = (m) => capture.all.push(['debug', m]);
  return capture;
}

/** A KubeConfig for `server` whose user reads its token from `tokenFile`. */
function tokenFileKubeConfig(server, tokenFile) {
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'fake', server: server.url, caData: Buffer.from(server.caPem).toString('base64') }],
    users: [{ name: 'runner', authProvider: { name: 'tokenFile', config: { tokenFile } } }],
    contexts: [{ name: 'fake', cluster: 'fake', user: 'runner', namespace: NAMESPACE }],
    currentContext: 'fake',
  });
  return kc;
}

const BAD_ENDINGS = [
  ['a trailing newline', '\n'],
  ['a trailing CR', '\r'],
  ['a trailing NUL', '\0'],
  ['a zero-width space (U+200B)', '\u200b'],
  ['a right single quote (U+2019)', '\u2019'],
];

for (const [what, ending] of BAD_ENDINGS) {
  for (const source of ['inline', 'file']) {
    test(`a token with ${what} (${source === 'inline' ? "the kubeconfig's inline token" : 'a token file'}) never leaks, and the error says what is wrong`, { timeout: 30_000 }, async (t) => {
      const ctx = await setup(t);
      const credential = TOKEN + ending;
      let kc;
      let tokenFile = null;
      if (source === 'inline') {
        const file = path.join(ctx.work, 'bad-token-kubeconfig.yaml');
        ctx.server.writeKubeconfig(file, { token: credential });
        kc = new k8s.KubeConfig();
        kc.loadFromFile(file);
        assert.equal(kc.getCurrentUser().token, credential, 'the kubeconfig holds the bad token');
      } else {
        tokenFile = path.join(ctx.work, 'token');
        fs.writeFileSync(tokenFile, credential);
        kc = tokenFileKubeConfig(ctx.server, tokenFile);
      }
      const log = fullCapture();
      const check = newCheck({ kc, cacheDir: ctx.cacheDir, env: fastEnv({ RULES_REVIEW: 'on' }), logger: log.logger });
      const texts = [];
      let verdict;
      let error = null;
      try {
        verdict = await check.isAuthPermissionsOK();
      } catch (e) {
        error = e;
        texts.push(String(e.message), String(e.stack), JSON.stringify(e), JSON.stringify(e.outcome));
        if (e.outcome) texts.push(String(e.outcome.lastError));
      }
      texts.push(JSON.stringify(check.lastOutcome()));
      for (const [, line] of log.all) texts.push(String(line));
      for (const f of listDir(ctx.cacheDir)) texts.push(fs.readFileSync(path.join(ctx.cacheDir, f), 'latin1'));

      const leaks = texts
        .map((text) => [leakedPieces(text, credential), text])
        .filter(([pieces]) => pieces.length > 0)
        .map(([pieces, text]) => `${pieces.length} pieces (${pieces[0]}, ...) in ${JSON.stringify(text.slice(0, 200))}`);
      assert.deepEqual(leaks, [], 'no piece of the token appears anywhere');

      if (error === null) {
        // undici (client-node 2.x) trims a trailing newline or CR from a
        // header value, as the Fetch standard says; the token then works.
        assert.equal(consumer.flavour, '2x', `only undici sends ${what}`);
        assert.ok(['\n', '\r'].includes(ending), `undici sent ${what}`);
        assert.equal(verdict, true);
        return;
      }
      assert.ok(isPreflightError(error), `a PreflightError, got ${error.name}: ${error.message}`);
      assert.equal(error.outcome.requests, 1, 'the rules review alone: the access reviews would fail the same way');
      assert.match(error.message, /the service-account token contains a character that is not allowed in an HTTP header, such as a trailing newline/);
      if (source === 'inline') assert.match(error.message, /the kubeconfig's inline token/);
      else assert.ok(error.message.includes(`the token file ${tokenFile}`), error.message);
    });
  }
}

test('a 2xx body cut off mid-way is retried, for each framing', { timeout: 60_000 }, async (t) => {
  const ctx = await setup(t);
  for (const framing of ['chunked', 'length']) {
    await ctx.server.setPhase('cutBody', { framing, share: 0.5 });
    const check = newCheck({ kc: ctx.kc, cacheDir: ctx.cacheDir, env: fastEnv({ CACHE: 'off' }) });
    let verdict;
    try {
      verdict = await check.isAuthPermissionsOK();
    } catch (e) {
      assert.fail(`${framing}: ${e.message}`);
    }
    assert.equal(verdict, true, framing);
    const cut = ctx.server.requests.filter((r) => r.status === 'cut');
    assert.ok(cut.length >= 6, `${framing}: ${cut.length} bodies were cut`);
    ctx.server.requests.length = 0;
  }
});

test('a cut rules review is retried and does not fall back to the access reviews', { timeout: 30_000 }, async (t) => {
  const ctx = await setup(t);
  await ctx.server.setPhase('cutBody', { framing: 'chunked' });
  let failures = 0;
  const observer = (event) => {
    if (event.type === 'result' && event.result.type === 'failed' && ++failures === 4) ctx.server.setPhase('healthy');
  };
  const check = newCheck({ kc: ctx.kc, cacheDir: ctx.cacheDir, env: fastEnv({ RULES_REVIEW: 'on' }), observer });
  assert.equal(await check.isAuthPermissionsOK(), true);
  const kinds = ctx.server.requests.map((r) => `${r.kind} ${r.status}`);
  assert.deepEqual(kinds, ['ssrr cut', 'ssrr cut', 'ssrr cut', 'ssrr cut', 'ssrr 201'], 'four cuts, then the answer; no access review');
});

test('a host logger whose every method throws never changes the verdict', { timeout: 60_000 }, async (t) => {
  const ctx = await setup(t);
  const calls = [];
  const thrower = {};
  for (const level of ['debug', 'info', 'warning', 'error']) {
    thrower[level] = (m) => {
      calls.push(level);
      throw new Error(`logger.${level} is broken (${String(m).slice(0, 20)})`);
    };
  }
  // allowed, with warnings on the way (a bad setting, a refused request)
  await ctx.server.setPhase('reset', { share: 0.5 });
  const allowed = newCheck({ kc: ctx.kc, cacheDir: ctx.cacheDir, env: fastEnv({ JITTER: 'wobbly' }), logger: thrower });
  assert.equal(await allowed.isAuthPermissionsOK(), true);
  assert.ok(calls.includes('warning'), 'the logger was called');
  await ctx.server.setPhase('healthy');
  // and again, from the cache it wrote
  assert.equal(await newCheck({ kc: ctx.kc, cacheDir: ctx.cacheDir, logger: thrower }).isAuthPermissionsOK(), true);
  // denied (logged with logger.error)
  ctx.server.configure({ role: roleWithout('create', 'pods/exec') });
  calls.length = 0;
  const denied = newCheck({ kc: ctx.kc, cacheDir: ctx.cacheDir, env: fastEnv({ CACHE: 'off' }), logger: thrower });
  assert.equal(await denied.isAuthPermissionsOK(), false);
  assert.ok(calls.includes('error'), 'the denial was logged');
  ctx.server.configure({ role: fullRole() });
  // inconclusive
  await ctx.server.setPhase('refuse');
  const inconclusive = newCheck({
    kc: ctx.kc,
    cacheDir: ctx.cacheDir,
    env: fastEnv({ CACHE: 'off', DEADLINE_MS: 1000 }), // the least accepted (800 was refused: 90 s)
    logger: thrower,
  });
  await assert.rejects(inconclusive.isAuthPermissionsOK(), (e) => isPreflightInconclusiveError(e));
  await ctx.server.setPhase('healthy');
});

test('env without RUNNER_TEMP: nothing is cached in the shared temp folder, and one warning says why', { timeout: 30_000 }, async (t) => {
  const ctx = await setup(t);
  const sharedTmp = tempDir(t, 'preflight-shared-tmp');
  const saved = process.env.TMPDIR;
  process.env.TMPDIR = sharedTmp; // what os.tmpdir() answers
  t.after(() => {
    if (saved === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = saved;
  });
  const log = captureLogger();
  const check = newCheck({ kc: ctx.kc, cacheDir: undefined, env: fastEnv(), logger: log.logger });
  assert.equal(await check.isAuthPermissionsOK(), true);
  assert.deepEqual(listDir(sharedTmp), [], 'nothing written to the shared temp folder');
  const why = log.warnings.filter((w) => w.includes('RUNNER_TEMP is not set: the verdict will not be cached for later steps'));
  assert.equal(why.length, 1, log.warnings.join('\n'));
});

test('the record goes to RUNNER_TEMP from env, or to options.cacheDir', { timeout: 30_000 }, async (t) => {
  const ctx = await setup(t);
  const runnerTemp = tempDir(t, 'preflight-runner-temp');
  const log = captureLogger();
  const fromEnv = newCheck({ kc: ctx.kc, cacheDir: undefined, env: { ...fastEnv(), RUNNER_TEMP: runnerTemp }, logger: log.logger });
  assert.equal(await fromEnv.isAuthPermissionsOK(), true);
  assert.equal(listDir(runnerTemp).length, 1, 'one record in RUNNER_TEMP');
  assert.equal(await newCheck({ kc: ctx.kc, cacheDir: ctx.cacheDir, logger: log.logger }).isAuthPermissionsOK(), true);
  assert.equal(listDir(ctx.cacheDir).length, 1, 'one record in cacheDir');
  assert.deepEqual(log.warnings, []);
});

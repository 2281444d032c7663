'use strict';
// The kubeconfig's credential: the shim reports every candidate (and reads
// the files named), the core chooses one and says why a named file gave
// none; every candidate is hidden from error texts, chosen or not.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const { consumer, k8s, preflight, NAMESPACE, TOKEN, setup, newCheck, captureLogger, fastEnv, tempDir } = require('./support/harness');

const installed = path.join(consumer.consumerDir, 'node_modules', 'k8s-auth-preflight');
const { credentialFacts } = require(path.join(installed, 'js-shim', 'credential.js'));
const { errorDescriber, redactor } = require(path.join(installed, 'js-shim', 'facts.js'));

/** A KubeConfig for `server` whose current user is `user`. */
function kubeConfigOf(server, user) {
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: server.url, caData: Buffer.from(server.caPem).toString('base64') }],
    users: [{ name: 'u', ...user }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u', namespace: NAMESPACE }],
    currentContext: 'x',
  });
  return kc;
}

const NOT_CACHED = /will not be cached/;

test('every candidate is reported, each file with what reading it gave; nothing is chosen', (t) => {
  const dir = tempDir(t, 'credential-facts');
  const key = path.join(dir, 'client.key');
  fs.writeFileSync(key, 'PEM-KEY-BYTES-0123456789');
  const user = {
    getCurrentUser: () => ({
      token: 'inline-token-0123456789',
      authProvider: { config: { 'token-file': path.join(dir, 'missing') } },
      keyData: Buffer.from('key-data-0123456789').toString('base64'),
      keyFile: key,
    }),
  };
  const { facts, secrets } = credentialFacts(user);
  assert.equal(facts.token, 'inline-token-0123456789');
  assert.deepEqual(facts.tokenFile, { path: path.join(dir, 'missing'), type: 'failed', code: 'ENOENT' });
  assert.equal(Buffer.from(facts.keyData).toString(), 'key-data-0123456789');
  assert.equal(facts.keyFile.type, 'read');
  assert.equal(Buffer.from(facts.keyFile.bytes).toString(), 'PEM-KEY-BYTES-0123456789');
  assert.equal(secrets.length, 4, 'the token, the key data (decoded and as the kubeconfig holds it) and the key file (the token file gave nothing)');

  assert.deepEqual(credentialFacts({ getCurrentUser: () => ({ keyFile: dir }) }).facts.keyFile, { path: dir, type: 'notRegular' });
  assert.deepEqual(credentialFacts({ getCurrentUser: () => ({ authProvider: { config: { tokenFile: 42 } } }) }).facts.tokenFile, {
    path: null,
    type: 'failed',
    code: 'ERR_INVALID_ARG_TYPE',
  });
});

test('a hostile user object is no credential, never a throw', () => {
  const throwing = {
    get token() {
      throw new Error('boom');
    },
    get authProvider() {
      throw new Error('boom');
    },
  };
  for (const kc of [null, {}, { getCurrentUser: () => null }, { getCurrentUser: () => { throw new Error('no user'); } }, { getCurrentUser: () => throwing }]) {
    assert.deepEqual(credentialFacts(kc), { facts: {}, secrets: [] });
  }
});

test('errors hide every candidate, the one not chosen too', () => {
  const describe = errorDescriber(['inline-token-0123456789', new Uint8Array(Buffer.from('PEM-KEY-BYTES-0123456789'))]);
  const facts = describe(new Error('saw inline-token-0123456789 and PEM-KEY-BYTES-0123456789'), false);
  assert.equal(facts.message, 'saw <redacted> and <redacted>');
});

test(`[${consumer.flavour}] a token file that cannot be read: the check says so once, by name, and still answers`, { timeout: 30_000 }, async (t) => {
  const ctx = await setup(t);
  const missing = path.join(ctx.work, 'no-such-token');
  // The inline token is empty: the token file is the one that counts.
  const kc = kubeConfigOf(ctx.server, { token: '', authProvider: { name: 'tokenFile', config: { tokenFile: missing } } });
  const log = captureLogger();
  const check = newCheck({ kc, cacheDir: ctx.cacheDir, env: fastEnv(), logger: log.logger });
  // The server refuses a request without the token: the verdict is the server's.
  await check.isAuthPermissionsOK().catch(() => {});
  assert.deepEqual(log.warnings.filter((w) => NOT_CACHED.test(w)), [
    `the service-account token at ${missing} cannot be read (ENOENT); the verdict will not be cached`,
  ]);
  assert.deepEqual(fs.readdirSync(ctx.cacheDir), [], 'no record without a credential');
});

test(`[${consumer.flavour}] an inline token beside a token file: the inline one is the credential`, { timeout: 30_000 }, async (t) => {
  const ctx = await setup(t);
  const tokenFile = path.join(ctx.work, 'other-token');
  fs.writeFileSync(tokenFile, 'not-the-servers-token-0123456789');
  const kc = kubeConfigOf(ctx.server, { token: TOKEN, authProvider: { name: 'tokenFile', config: { tokenFile } } });
  const log = captureLogger();
  assert.equal(await newCheck({ kc, cacheDir: ctx.cacheDir, env: fastEnv(), logger: log.logger }).isAuthPermissionsOK(), true);
  assert.deepEqual(log.warnings, []);
  assert.equal(fs.readdirSync(ctx.cacheDir).filter((f) => f.endsWith('.json')).length, 1, 'the verdict is cached under the inline token');
});

test('a token the kubeconfig holds as a number (a YAML number) is the credential, hidden as the client sends it', () => {
  const { facts, secrets } = credentialFacts({ getCurrentUser: () => ({ token: 4815162342481516 }) });
  assert.equal(facts.token, '4815162342481516');
  assert.equal(errorDescriber(secrets)(new Error('malformed bearer token 4815162342481516'), false).message, 'malformed bearer token <redacted>');
});

test('key data is hidden in the form the kubeconfig holds it (base64) too', () => {
  const keyData = Buffer.from('BAQCxupwZRKAS9hxu-private-key-bytes').toString('base64');
  const { secrets } = credentialFacts({ getCurrentUser: () => ({ keyData }) });
  const text = errorDescriber(secrets)(new Error(`client rejected credential ${keyData}`), false).message;
  assert.equal(text, 'client rejected credential <redacted>');
});

test("a token echoed with Go's HTML-safe JSON escapes (\\u003c, \\u003e, \\u0026) is hidden", () => {
  const token = 'a<b>c&d<e>f&g<h>i&j<k>';
  const goJson = JSON.stringify(`token ${token} is malformed`).replace(/[<>&]/g, (c) => `\\u00${c.charCodeAt(0).toString(16)}`);
  const redact = redactor(token);
  const out = redact(goJson);
  assert.ok(!out.includes('\\u003cb\\u003ec'), out);
  assert.ok(out.includes('<redacted>'), out);
});

test(`[${consumer.flavour}] a token file rotated after a wrapper was made: the token the client sent is hidden`, { timeout: 20_000 }, async (t) => {
  const dir = tempDir(t, 'credential-rotation');
  const tokenFile = path.join(dir, 'token');
  fs.writeFileSync(tokenFile, 'AAAAtokenAlphaAlphaAlpha1234567890');
  const sent = () => fs.readFileSync(tokenFile, 'utf8');
  // A client that reads the token file when it sends, as client-node does,
  // and whose error quotes what it sent.
  const kc = {
    getCurrentUser: () => ({ name: 'u', authProvider: { config: { tokenFile } } }),
    makeApiClient: () => ({
      async readNamespacedPod() {
        throw Object.assign(new Error(`credential [${sent()}] is malformed`), { code: 400 });
      },
    }),
  };
  const api = preflight.resilientKubeConfig(kc, { env: fastEnv(), logger: captureLogger().logger }).makeApiClient(class {});
  fs.writeFileSync(tokenFile, 'BBBBtokenBravoBravoBravo0987654321');
  const thrown = await api.readNamespacedPod({ name: 'p', namespace: 'ci' }).catch((e) => e);
  const text = require('node:util').inspect(thrown, { depth: 10 });
  assert.ok(text.includes('is malformed'), text);
  assert.ok(!text.includes('BBBBtoke') && !text.includes('Bravo098'), text);
});

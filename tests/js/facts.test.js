'use strict';
// js-shim/facts.js: whatever a client call threw -> plain error facts for the
// core. Unit tests on the shapes each client-node major produces, on hostile
// shapes (cycles, throwing getters), and on the errors the real installed
// client throws against the loopback apiserver, fed to the core's classifier.

const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');

const { consumer, k8s, preflight, setup, expectedReview, testCore } = require('./support/harness');

const installed = path.join(consumer.consumerDir, 'node_modules', 'k8s-auth-preflight');
const { errorFacts, errorDescriber, redactor } = require(path.join(installed, 'js-shim', 'facts.js'));
// classify is a test-only export (cargo feature test-exports): the same
// core, from the second module scripts/build.sh builds.
const classify = (facts) => testCore.classify(facts, Date.now(), {});

test('client-node 1.x FetchError: the code, no status, the name', () => {
  const e = Object.assign(new Error('request to https://10.0.0.1/apis failed, reason: connect ECONNREFUSED 10.0.0.1:443'), {
    name: 'FetchError',
    type: 'system',
    errno: 'ECONNREFUSED',
    code: 'ECONNREFUSED',
  });
  const facts = errorFacts(e);
  assert.deepEqual(facts, {
    codes: ['ECONNREFUSED'],
    status: null,
    retryAfter: null,
    timedOut: false,
    name: 'FetchError',
    message: 'request to https://10.0.0.1/apis failed, reason: connect ECONNREFUSED 10.0.0.1:443',
  });
  assert.deepEqual(classify(facts), { kind: 'transient', why: 'ECONNREFUSED' });
});

test('ApiException 429 with Retry-After (any header case): status and retry-after, no string codes', () => {
  const e = Object.assign(new Error('HTTP-Code: 429\nMessage: Unknown API Status Code!'), {
    name: 'ApiException',
    code: 429,
    body: '{"kind":"Status","code":429}',
    headers: { 'Content-Type': 'application/json', 'Retry-After': '3' },
  });
  const facts = errorFacts(e);
  assert.equal(facts.status, 429);
  assert.equal(facts.retryAfter, '3');
  assert.deepEqual(facts.codes, []);
  assert.equal(facts.name, 'ApiException');
  assert.deepEqual(classify(facts), { kind: 'throttled', retryAfterMs: 3000, why: 'HTTP 429' });
});

test('the real ApiException class of the installed client-node', () => {
  const e = new k8s.ApiException(503, 'Service Unavailable', '{"kind":"Status"}', { 'retry-after': '2' });
  const facts = errorFacts(e);
  assert.equal(facts.status, 503);
  assert.equal(facts.retryAfter, '2');
  assert.deepEqual(classify(facts), { kind: 'throttled', retryAfterMs: 2000, why: 'HTTP 503' });
});

test('headers as a Headers instance or an array value', () => {
  const withHeaders = Object.assign(new Error('x'), { code: 429, headers: new Headers({ 'Retry-After': '7' }) });
  assert.equal(errorFacts(withHeaders).retryAfter, '7');
  const withArray = Object.assign(new Error('x'), { code: 429, headers: { 'retry-after': ['5', '9'] } });
  assert.equal(errorFacts(withArray).retryAfter, '5');
  const withNumber = Object.assign(new Error('x'), { code: 429, headers: { 'Retry-After': 4 } });
  assert.equal(errorFacts(withNumber).retryAfter, '4');
});

test('headers as a Map: names are matched case-insensitively', () => {
  const e = Object.assign(new Error('throttled'), { code: 429, headers: new Map([['Retry-After', '7']]) });
  assert.equal(errorFacts(e).retryAfter, '7');
  const none = Object.assign(new Error('throttled'), { code: 429, headers: new Map([['x-other', '1']]) });
  assert.equal(errorFacts(none).retryAfter, null);
});

test('undici TypeError("fetch failed") with cause { code: UND_ERR_SOCKET }', () => {
  const cause = Object.assign(new Error('other side closed'), { name: 'SocketError', code: 'UND_ERR_SOCKET' });
  const e = new TypeError('fetch failed', { cause });
  const facts = errorFacts(e);
  assert.deepEqual(facts.codes, ['UND_ERR_SOCKET']);
  assert.equal(facts.status, null);
  assert.equal(facts.name, 'TypeError');
  assert.equal(facts.message, 'fetch failed: other side closed');
  assert.deepEqual(classify(facts), { kind: 'transient', why: 'UND_ERR_SOCKET' });
});

test('a code two causes deep is found, with every message on the way', () => {
  const root = Object.assign(new Error('connect ETIMEDOUT 10.0.0.1:443'), { code: 'ETIMEDOUT' });
  const middle = new Error('connect failed', { cause: root });
  const e = new TypeError('fetch failed', { cause: middle });
  const facts = errorFacts(e);
  assert.deepEqual(facts.codes, ['ETIMEDOUT']);
  assert.equal(facts.message, 'fetch failed: connect failed: connect ETIMEDOUT 10.0.0.1:443');
  assert.deepEqual(classify(facts), { kind: 'transient', why: 'ETIMEDOUT' });
});

test('an AggregateError cause: the codes of all its errors', () => {
  const aggregate = new AggregateError(
    [Object.assign(new Error('connect ECONNREFUSED ::1:443'), { code: 'ECONNREFUSED' }), { code: 'ETIMEDOUT' }],
    'all attempts failed',
  );
  const e = new TypeError('fetch failed', { cause: aggregate });
  const facts = errorFacts(e);
  assert.deepEqual(facts.codes, ['ECONNREFUSED', 'ETIMEDOUT']);
  assert.equal(facts.message, 'fetch failed: all attempts failed: connect ECONNREFUSED ::1:443');
  assert.equal(classify(facts).kind, 'transient');
});

test('a SyntaxError: no code, no status, named, and fatal', () => {
  let e;
  try {
    JSON.parse('{"status":{"allowed":tr');
  } catch (err) {
    e = err;
  }
  const facts = errorFacts(e);
  assert.deepEqual(facts.codes, []);
  assert.equal(facts.status, null);
  assert.equal(facts.name, 'SyntaxError');
  assert.ok(facts.message.length > 0);
  assert.deepEqual(classify(facts), { kind: 'fatal', why: 'malformed response body (not JSON)' });
});

test('a thrown string becomes the message', () => {
  assert.deepEqual(errorFacts('connect ECONNREFUSED 10.0.0.1:443'), {
    codes: [],
    status: null,
    retryAfter: null,
    timedOut: false,
    name: null,
    message: 'connect ECONNREFUSED 10.0.0.1:443',
  });
  // The classifier still sees the code spelled out in the message.
  assert.deepEqual(classify(errorFacts('connect ECONNREFUSED 10.0.0.1:443')), { kind: 'transient', why: 'ECONNREFUSED' });
  assert.equal(errorFacts(42).message, '42');
});

test('null and undefined give empty facts, and the timeout flag is passed through', () => {
  const empty = { codes: [], status: null, retryAfter: null, timedOut: false, name: null, message: '' };
  assert.deepEqual(errorFacts(null), empty);
  assert.deepEqual(errorFacts(undefined), empty);
  assert.deepEqual(errorFacts(undefined, { timedOut: true }), { ...empty, timedOut: true });
  assert.deepEqual(classify(errorFacts(null, { timedOut: true })), { kind: 'transient', why: 'request timed out' });
});

test('a cyclic cause chain terminates and reports each error once', () => {
  const a = Object.assign(new Error('a'), { code: 'ECONNRESET' });
  const b = Object.assign(new Error('b'), { code: 'EPIPE' });
  a.cause = b;
  b.cause = a;
  const self = new Error('self');
  self.cause = self;
  const aggregate = new AggregateError([], 'agg');
  aggregate.errors.push(aggregate);
  aggregate.cause = aggregate;

  assert.deepEqual(errorFacts(a).codes, ['ECONNRESET', 'EPIPE']);
  assert.equal(errorFacts(a).message, 'a: b');
  assert.equal(errorFacts(self).message, 'self');
  assert.equal(errorFacts(aggregate).message, 'agg');
});

test('a long cause chain is cut at a fixed depth', () => {
  let e = Object.assign(new Error('deepest'), { code: 'ECONNREFUSED' });
  for (let i = 0; i < 50; i++) e = new Error(`level ${i}`, { cause: e });
  const facts = errorFacts(e);
  assert.deepEqual(facts.codes, [], 'the code 50 levels down is out of reach');
  assert.ok(facts.message.length <= 500);
  assert.match(facts.message, /^level 49: level 48/);
});

test('getters that throw are skipped, the rest is still read', () => {
  const e = new Error('outer');
  Object.defineProperty(e, 'code', {
    get() {
      throw new Error('boom: code');
    },
  });
  Object.defineProperty(e, 'cause', {
    get() {
      throw new Error('boom: cause');
    },
  });
  Object.defineProperty(e, 'headers', {
    get() {
      throw new Error('boom: headers');
    },
  });
  const hostileHeaders = {};
  Object.defineProperty(hostileHeaders, 'retry-after', {
    enumerable: true,
    get() {
      throw new Error('boom: retry-after');
    },
  });
  const inner = Object.assign(new Error('inner'), { code: 'ECONNRESET', headers: hostileHeaders });
  Object.defineProperty(inner, 'name', {
    get() {
      throw new Error('boom: name');
    },
  });
  const wrapper = new Error('wrapper', { cause: inner });

  const facts = errorFacts(e);
  assert.deepEqual(facts.codes, []);
  assert.equal(facts.message, 'outer');
  assert.equal(facts.name, 'Error');
  const wrapped = errorFacts(wrapper);
  assert.deepEqual(wrapped.codes, ['ECONNRESET']);
  assert.equal(wrapped.retryAfter, null);
  assert.equal(wrapped.message, 'wrapper: inner');

  const proxy = new Proxy(
    {},
    {
      get() {
        throw new Error('boom: everything');
      },
    },
  );
  assert.deepEqual(errorFacts(proxy), { codes: [], status: null, retryAfter: null, timedOut: false, name: null, message: '' });
});

test('a huge message is cut to a bounded length', () => {
  const facts = errorFacts(new Error('x'.repeat(10_000)));
  assert.equal(facts.message.length, 500);
});

// --- what the installed client-node really throws ---------------------------

async function realError(t, phase, phaseOptions, abortAfterMs) {
  const { server, kc } = await setup(t);
  const api = kc.makeApiClient(k8s.AuthorizationV1Api);
  await server.setPhase(phase, phaseOptions);
  const controller = new AbortController();
  const timer = abortAfterMs ? setTimeout(() => controller.abort(), abortAfterMs) : null;
  try {
    await api.createSelfSubjectAccessReview(
      { body: expectedReview(['get', 'pods', '']) },
      preflight.withAbortSignal(controller.signal),
    );
  } catch (e) {
    return e;
  } finally {
    clearTimeout(timer);
  }
  throw new Error(`the ${phase} phase did not make the client throw`);
}

test(`[${consumer.flavour}] real client: connection refused`, { timeout: 10_000 }, async (t) => {
  const e = await realError(t, 'refuse');
  const facts = errorFacts(e);
  assert.ok(facts.codes.includes('ECONNREFUSED'), JSON.stringify(facts));
  assert.equal(facts.status, null);
  if (consumer.flavour === '1x') {
    assert.equal(facts.name, 'FetchError');
    assert.match(facts.message, /reason: connect ECONNREFUSED 127\.0\.0\.1:\d+$/);
  } else {
    assert.equal(facts.name, 'TypeError');
    assert.match(facts.message, /^fetch failed: connect ECONNREFUSED 127\.0\.0\.1:\d+$/);
  }
  assert.deepEqual(classify(facts), { kind: 'transient', why: 'ECONNREFUSED' });
});

test(`[${consumer.flavour}] real client: connection reset mid-request`, { timeout: 10_000 }, async (t) => {
  const e = await realError(t, 'reset');
  const facts = errorFacts(e);
  assert.equal(facts.status, null);
  const expected = consumer.flavour === '1x' ? 'ECONNRESET' : 'UND_ERR_SOCKET';
  assert.deepEqual(facts.codes, [expected], JSON.stringify(facts));
  assert.deepEqual(classify(facts), { kind: 'transient', why: expected });
});

test(`[${consumer.flavour}] real client: 429 with Retry-After`, { timeout: 10_000 }, async (t) => {
  const e = await realError(t, 'throttle429', { retryAfterSeconds: 3 });
  assert.ok(e instanceof k8s.ApiException);
  const facts = errorFacts(e);
  assert.equal(facts.status, 429);
  assert.equal(facts.retryAfter, '3');
  assert.deepEqual(classify(facts), { kind: 'throttled', retryAfterMs: 3000, why: 'HTTP 429' });
});

test(`[${consumer.flavour}] real client: transient 403 from an unwarmed apiserver`, { timeout: 10_000 }, async (t) => {
  const e = await realError(t, 'forbidden403');
  const facts = errorFacts(e);
  assert.equal(facts.status, 403);
  assert.deepEqual(classify(facts), { kind: 'transient', why: 'HTTP 403' });
});

test(`[${consumer.flavour}] real client: malformed 2xx body`, { timeout: 10_000 }, async (t) => {
  const e = await realError(t, 'malformed');
  const facts = errorFacts(e);
  assert.equal(facts.name, 'SyntaxError');
  assert.equal(facts.status, null, 'client-node does not say which status carried the bad body');
  assert.equal(classify(facts).kind, 'fatal');
});

test(`[${consumer.flavour}] real client: a hung request aborted through withAbortSignal`, { timeout: 10_000 }, async (t) => {
  const started = performance.now();
  const e = await realError(t, 'hang', {}, 300);
  const elapsed = performance.now() - started;
  assert.ok(elapsed < 3000, `the abort ended the request (${elapsed} ms)`);
  const facts = errorFacts(e);
  assert.equal(facts.name, 'AbortError');
  assert.equal(facts.status, null);
  assert.deepEqual(facts.codes, []);
  // Only the shim knows the abort was its timeout; it says so with timedOut.
  assert.equal(classify(facts).kind, 'fatal');
  assert.deepEqual(classify(errorFacts(e, { timedOut: true })), { kind: 'transient', why: 'request timed out' });
});

test('redaction: the credential, and every piece of it of 8 characters or more, becomes <redacted>', () => {
  const token = 'eyJhbGciOiJSUzI1NiJ9.payload-part.signature-part\n';
  const redact = redactor(token);
  assert.equal(redact(`Bearer ${token} is not a legal HTTP header value`), 'Bearer <redacted> is not a legal HTTP header value');
  assert.equal(redact('head payload-part tail'), 'head <redacted> tail', 'a long piece alone');
  assert.equal(redact('eyJhbGci and ignature'), 'eyJhbGci and ignature'.replace('eyJhbGci', '<redacted>').replace('ignature', '<redacted>'));
  assert.equal(redact('a short eyJhbGc piece'), 'a short eyJhbGc piece', 'seven characters stay');
  assert.equal(redact('nothing here'), 'nothing here');
  // Bytes, as read from a token file: seen as UTF-8 and as Latin-1.
  const bytes = Buffer.from('token-with-quote\u2019-end', 'utf8');
  const r = redactor(new Uint8Array(bytes));
  assert.equal(r('x token-with-quote\u2019-end y'), 'x <redacted> y');
  assert.equal(r(`x ${bytes.toString('latin1')} y`), 'x <redacted> y');
  // No credential, or a short one: nothing to hide.
  assert.equal(redactor(null)('Bearer abcdefghij'), 'Bearer abcdefghij');
  assert.equal(redactor('abc')('abc abc'), 'abc abc');
});

test('errorDescriber: redacted facts, through the cause chain; the core names the credential source', () => {
  const token = 'sa-token-0123456789abcdef';
  const cause = Object.assign(new Error(`inner ${token}`), { code: 'UND_ERR_SOCKET' });
  const e = new TypeError(`Headers.append: "Bearer ${token}\u0000" is an invalid header value.`, { cause });
  const facts = errorDescriber(token)(e, false);
  assert.equal(facts.message, 'Headers.append: "Bearer <redacted>" is an invalid header value.: inner <redacted>');
  assert.equal(facts.credentialSource, undefined, 'the shim does not know which credential the core chose');
  assert.deepEqual(facts.codes, ['UND_ERR_SOCKET']);
  const cls = classify({ ...facts, codes: [], credentialSource: 'the token file /run/token' });
  assert.equal(cls.kind, 'fatal');
  assert.match(cls.why, /not allowed in an HTTP header, such as a trailing newline \(the token comes from the token file \/run\/token\)/);
});

test('a credential the shim does not know is still hidden after its scheme', () => {
  const e = new TypeError('Bearer some.unknown-oidc-token\n is not a legal HTTP header value');
  assert.equal(errorFacts(e).message, 'Bearer <redacted>\n is not a legal HTTP header value');
  const basic = new TypeError('Headers.append: "Basic dXNlcjpwYXNz\u0000" is an invalid header value.');
  assert.equal(errorFacts(basic).message, 'Headers.append: "Basic <redacted>" is an invalid header value.');
  assert.equal(errorFacts(new Error('the bearer of bad news')).message, 'the bearer of bad news', 'only the scheme, spelled as sent');
});

'use strict';
// Tests for the loopback fake apiserver. Plain https.request with the test CA, no k8s client.
// Run: node --test tests/support/

const assert = require('node:assert/strict');
const fs = require('node:fs');
const https = require('node:https');
const os = require('node:os');
const path = require('node:path');
const { describe, it, before, after } = require('node:test');

const { startApiServer } = require('./apiserver');
const { startApiServerProcess, APISERVER_JS } = require('./apiserver-process');
const { runProcess } = require('./run-process');

const SSAR = '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews';
const SSRR = '/apis/authorization.k8s.io/v1/selfsubjectrulesreviews';

/**
 * One HTTPS request to the fake server on a fresh connection (agent: false, so a
 * pooled socket from an earlier phase never changes what a test sees).
 * Resolves { status, headers, text, ms, chunks }; rejects with the client error.
 */
function request(server, options = {}) {
  const {
    path: urlPath = SSAR,
    method = 'POST',
    body,
    rawBody,
    token = 'test-token',
    timeoutMs = 3000,
    signal,
  } = options;
  const payload = rawBody !== undefined ? rawBody : body === undefined ? '' : JSON.stringify(body);
  const headers = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) };
  if (token !== null) headers.authorization = `Bearer ${token}`;
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const req = https.request(
      `${server.url}${urlPath}`,
      { method, headers, ca: server.caPem, agent: false, signal },
      (res) => {
        const parts = [];
        res.on('data', (chunk) => parts.push(chunk));
        res.on('end', () =>
          resolve({
            status: res.statusCode,
            headers: res.headers,
            text: Buffer.concat(parts).toString('utf8'),
            ms: Date.now() - started,
            chunks: parts.length,
          }),
        );
        res.on('error', reject);
      },
    );
    // Safety net so no test can wait forever on a request.
    req.setTimeout(timeoutMs, () => req.destroy(Object.assign(new Error('test client timeout'), { code: 'TEST_TIMEOUT' })));
    req.on('error', reject);
    req.end(payload);
  });
}

function ssar(attrs) {
  return {
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SelfSubjectAccessReview',
    spec: { resourceAttributes: attrs },
  };
}

async function review(server, attrs) {
  const res = await request(server, { body: ssar(attrs) });
  assert.equal(res.status, 201, res.text);
  const json = JSON.parse(res.text);
  assert.equal(json.kind, 'SelfSubjectAccessReview');
  assert.deepEqual(json.spec.resourceAttributes, attrs);
  assert.equal(typeof json.status.allowed, 'boolean');
  return json.status.allowed;
}

// If anything a server started is still holding the event loop after the last
// test (a leaked timer or socket), fail the file instead of hanging the run.
after(() => {
  setTimeout(() => {
    process.stderr.write(`event loop still busy 5 s after the last test: ${process.getActiveResourcesInfo().join(', ')}\n`);
    process.exit(1);
  }, 5000).unref();
});

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function expectClientError(promise) {
  try {
    const res = await promise;
    assert.fail(`expected a client error, got HTTP ${res.status}: ${res.text}`);
  } catch (err) {
    if (err instanceof assert.AssertionError) throw err;
    return err;
  }
}

function assertStatus(res, code, reason) {
  assert.equal(res.status, code, res.text);
  assert.match(res.headers['content-type'], /^application\/json/);
  const json = JSON.parse(res.text);
  assert.equal(json.kind, 'Status');
  assert.equal(json.apiVersion, 'v1');
  assert.deepEqual(json.metadata, {});
  assert.equal(json.status, 'Failure');
  assert.equal(json.code, code);
  assert.equal(json.reason, reason);
  assert.equal(typeof json.message, 'string');
  return json;
}

// ---------------------------------------------------------------------------

describe('RBAC evaluation over SSAR (healthy)', () => {
  let server;
  before(async () => {
    server = await startApiServer({ token: 'test-token', namespace: 'ci' });
  });
  after(() => server.close());

  // Each case: the Role's rules, then [attributes, expected allowed].
  const cases = [
    {
      name: 'exact verb, group, resource',
      rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get'] }],
      checks: [
        [{ namespace: 'ci', group: '', resource: 'pods', verb: 'get' }, true],
        [{ namespace: 'ci', group: '', resource: 'pods', verb: 'list' }, false],
        [{ namespace: 'ci', group: '', resource: 'services', verb: 'get' }, false],
        [{ namespace: 'ci', resource: 'pods', verb: 'get' }, true], // group omitted = core
      ],
    },
    {
      name: "verb '*'",
      rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['*'] }],
      checks: [
        [{ namespace: 'ci', group: '', resource: 'pods', verb: 'delete' }, true],
        [{ namespace: 'ci', group: '', resource: 'pods', verb: 'create' }, true],
        [{ namespace: 'ci', group: '', resource: 'secrets', verb: 'delete' }, false],
      ],
    },
    {
      name: "apiGroup '*'",
      rules: [{ apiGroups: ['*'], resources: ['deployments'], verbs: ['get'] }],
      checks: [
        [{ namespace: 'ci', group: 'apps', resource: 'deployments', verb: 'get' }, true],
        [{ namespace: 'ci', group: '', resource: 'deployments', verb: 'get' }, true],
        [{ namespace: 'ci', group: 'apps', resource: 'statefulsets', verb: 'get' }, false],
      ],
    },
    {
      name: "resource '*' (includes subresources)",
      rules: [{ apiGroups: [''], resources: ['*'], verbs: ['get', 'create'] }],
      checks: [
        [{ namespace: 'ci', group: '', resource: 'secrets', verb: 'get' }, true],
        [{ namespace: 'ci', group: '', resource: 'pods', subresource: 'exec', verb: 'create' }, true],
        [{ namespace: 'ci', group: '', resource: 'pods', subresource: 'log', verb: 'get' }, true],
        [{ namespace: 'ci', group: 'apps', resource: 'deployments', verb: 'get' }, false],
        [{ namespace: 'ci', group: '', resource: 'pods', verb: 'delete' }, false],
      ],
    },
    {
      name: "'*/exec' grants any resource's exec subresource only",
      rules: [{ apiGroups: [''], resources: ['*/exec'], verbs: ['create'] }],
      checks: [
        [{ namespace: 'ci', group: '', resource: 'pods', subresource: 'exec', verb: 'create' }, true],
        [{ namespace: 'ci', group: '', resource: 'nodes', subresource: 'exec', verb: 'create' }, true],
        [{ namespace: 'ci', group: '', resource: 'pods', verb: 'create' }, false],
        [{ namespace: 'ci', group: '', resource: 'pods', subresource: 'log', verb: 'create' }, false],
        [{ namespace: 'ci', group: '', resource: 'exec', verb: 'create' }, false],
      ],
    },
    {
      name: "'pods' does not grant 'pods/exec'; 'pods/exec' does not grant 'pods'",
      rules: [
        { apiGroups: [''], resources: ['pods'], verbs: ['create'] },
        { apiGroups: [''], resources: ['pods/log'], verbs: ['get'] },
      ],
      checks: [
        [{ namespace: 'ci', group: '', resource: 'pods', verb: 'create' }, true],
        [{ namespace: 'ci', group: '', resource: 'pods', subresource: 'exec', verb: 'create' }, false],
        [{ namespace: 'ci', group: '', resource: 'pods', subresource: 'log', verb: 'get' }, true],
        [{ namespace: 'ci', group: '', resource: 'pods', verb: 'get' }, false],
      ],
    },
    {
      name: 'resourceNames restricts the rule to named requests',
      rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'delete'], resourceNames: ['runner-0'] }],
      checks: [
        [{ namespace: 'ci', group: '', resource: 'pods', verb: 'get', name: 'runner-0' }, true],
        [{ namespace: 'ci', group: '', resource: 'pods', verb: 'delete', name: 'runner-0' }, true],
        [{ namespace: 'ci', group: '', resource: 'pods', verb: 'get', name: 'runner-1' }, false],
        [{ namespace: 'ci', group: '', resource: 'pods', verb: 'get' }, false],
        [{ namespace: 'ci', group: '', resource: 'pods', verb: 'get', name: '' }, false],
      ],
    },
    {
      name: 'empty resourceNames does not restrict',
      rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get'], resourceNames: [] }],
      checks: [
        [{ namespace: 'ci', group: '', resource: 'pods', verb: 'get' }, true],
        [{ namespace: 'ci', group: '', resource: 'pods', verb: 'get', name: 'anything' }, true],
      ],
    },
    {
      name: "core group '' vs 'apps'",
      rules: [
        { apiGroups: ['apps'], resources: ['deployments'], verbs: ['get'] },
        { apiGroups: [''], resources: ['pods'], verbs: ['get'] },
      ],
      checks: [
        [{ namespace: 'ci', group: 'apps', resource: 'deployments', verb: 'get' }, true],
        [{ namespace: 'ci', group: '', resource: 'deployments', verb: 'get' }, false],
        [{ namespace: 'ci', group: '', resource: 'pods', verb: 'get' }, true],
        [{ namespace: 'ci', group: 'apps', resource: 'pods', verb: 'get' }, false],
      ],
    },
    {
      name: "another namespace is denied, even for '*' everything",
      rules: [{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }],
      checks: [
        [{ namespace: 'ci', group: 'batch', resource: 'jobs', verb: 'watch' }, true],
        [{ namespace: 'other', group: '', resource: 'pods', verb: 'get' }, false],
        [{ namespace: '', group: '', resource: 'pods', verb: 'get' }, false],
        [{ group: '', resource: 'nodes', verb: 'get' }, false],
      ],
    },
  ];

  for (const c of cases) {
    it(c.name, async () => {
      server.configure({ role: { rules: c.rules } });
      for (const [attrs, expected] of c.checks) {
        assert.equal(await review(server, attrs), expected, `${JSON.stringify(attrs)} should be ${expected}`);
      }
    });
  }

  it('answers 201 with the same object plus status, reason only when allowed', async () => {
    server.configure({ role: { rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get'] }] } });
    const attrs = { namespace: 'ci', group: '', resource: 'pods', verb: 'get' };
    const res = await request(server, { body: ssar(attrs) });
    assert.equal(res.status, 201);
    assert.match(res.headers['content-type'], /^application\/json/);
    const json = JSON.parse(res.text);
    assert.equal(json.apiVersion, 'authorization.k8s.io/v1');
    assert.equal(json.kind, 'SelfSubjectAccessReview');
    assert.deepEqual(json.spec, { resourceAttributes: attrs });
    assert.equal(json.status.allowed, true);
    assert.match(json.status.reason, /^RBAC: allowed/);
    const denied = JSON.parse((await request(server, { body: ssar({ ...attrs, verb: 'list' }) })).text);
    assert.deepEqual(denied.status, { allowed: false });
  });

  it('malformed request JSON -> 400 Status; missing resourceAttributes -> 422', async () => {
    assertStatus(await request(server, { rawBody: '{"spec": {' }), 400, 'BadRequest');
    assertStatus(await request(server, { rawBody: '' }), 400, 'BadRequest');
    assertStatus(await request(server, { body: { kind: 'SelfSubjectAccessReview', spec: {} } }), 422, 'Invalid');
  });

  it('bad or missing token -> 401 Status; unknown path -> 404; GET on a review -> 405', async () => {
    const body = ssar({ namespace: 'ci', resource: 'pods', verb: 'get' });
    assert.equal(assertStatus(await request(server, { body, token: 'wrong' }), 401, 'Unauthorized').message, 'Unauthorized');
    assertStatus(await request(server, { body, token: null }), 401, 'Unauthorized');
    assertStatus(await request(server, { body, token: 'test-token-and-more' }), 401, 'Unauthorized');
    assertStatus(await request(server, { path: '/api/v1/namespaces/ci/pods', method: 'GET' }), 404, 'NotFound');
    assertStatus(await request(server, { path: SSAR, method: 'GET' }), 405, 'MethodNotAllowed');
    // the query string is ignored for routing
    assert.equal((await request(server, { path: `${SSAR}?timeout=10s`, body })).status, 201);
  });
});

describe('SelfSubjectRulesReview', () => {
  const rules = [
    { apiGroups: [''], resources: ['pods', 'pods/exec'], verbs: ['get', 'create'], resourceNames: [] },
    { apiGroups: ['batch'], resources: ['jobs'], verbs: ['get'], resourceNames: ['job-a'] },
  ];

  it('returns the Role rules for the matching namespace, [] for another', async () => {
    const server = await startApiServer({ role: { rules }, namespace: 'ci', rulesIncomplete: false });
    try {
      const res = await request(server, { path: SSRR, body: { kind: 'SelfSubjectRulesReview', spec: { namespace: 'ci' } } });
      assert.equal(res.status, 201, res.text);
      const json = JSON.parse(res.text);
      assert.equal(json.kind, 'SelfSubjectRulesReview');
      assert.deepEqual(json.status, {
        resourceRules: [
          { apiGroups: [''], resources: ['pods', 'pods/exec'], verbs: ['get', 'create'] },
          { apiGroups: ['batch'], resources: ['jobs'], verbs: ['get'], resourceNames: ['job-a'] },
        ],
        nonResourceRules: [],
        incomplete: false,
      });
      const other = JSON.parse((await request(server, { path: SSRR, body: { spec: { namespace: 'prod' } } })).text);
      assert.deepEqual(other.status.resourceRules, []);
      assert.equal(other.status.incomplete, false);
      assertStatus(await request(server, { path: SSRR, rawBody: 'nope' }), 400, 'BadRequest');
    } finally {
      await server.close();
    }
  });

  it('reports incomplete with an evaluationError when rulesIncomplete', async () => {
    const server = await startApiServer({ role: { rules }, namespace: 'ci', rulesIncomplete: true });
    try {
      const json = JSON.parse((await request(server, { path: SSRR, body: { spec: { namespace: 'ci' } } })).text);
      assert.equal(json.status.incomplete, true);
      assert.equal(json.status.evaluationError, 'webhook authorizer does not support user rule resolution');
      assert.equal(json.status.resourceRules.length, 2);
    } finally {
      await server.close();
    }
  });

  it('rulesReviewStatus fails only the SSRR (404, 403, other), SSAR still answers; null turns it off', async () => {
    const server = await startApiServer({ role: { rules }, namespace: 'ci', rulesReviewStatus: 404 });
    try {
      const ssrrBody = { kind: 'SelfSubjectRulesReview', spec: { namespace: 'ci' } };
      const notFound = assertStatus(await request(server, { path: SSRR, body: ssrrBody }), 404, 'NotFound');
      assert.equal(notFound.message, 'the server could not find the requested resource');
      assert.equal(await review(server, { namespace: 'ci', group: '', resource: 'pods', verb: 'get' }), true);
      assert.equal(await review(server, { namespace: 'ci', group: '', resource: 'pods', verb: 'delete' }), false);
      // Authentication still comes first.
      assertStatus(await request(server, { path: SSRR, body: ssrrBody, token: 'wrong' }), 401, 'Unauthorized');

      server.configure({ rulesReviewStatus: 403 });
      const forbidden = assertStatus(await request(server, { path: SSRR, body: ssrrBody }), 403, 'Forbidden');
      assert.equal(
        forbidden.message,
        'selfsubjectrulesreviews.authorization.k8s.io is forbidden: User "system:serviceaccount:ci:runner" cannot create ' +
          'resource "selfsubjectrulesreviews" in API group "authorization.k8s.io" at the cluster scope',
      );
      assert.deepEqual(forbidden.details, { group: 'authorization.k8s.io', kind: 'selfsubjectrulesreviews' });

      server.configure({ rulesReviewStatus: 500 });
      assertStatus(await request(server, { path: SSRR, body: ssrrBody }), 500, 'InternalError');

      server.configure({ rulesReviewStatus: null });
      const ok = await request(server, { path: SSRR, body: ssrrBody });
      assert.equal(ok.status, 201, ok.text);
      assert.equal(JSON.parse(ok.text).status.resourceRules.length, 2);

      assert.deepEqual(
        server.requests.map((r) => [r.kind, r.status]),
        [
          ['ssrr', 404],
          ['ssar', 201],
          ['ssar', 201],
          ['ssrr', 401],
          ['ssrr', 403],
          ['ssrr', 500],
          ['ssrr', 201],
        ],
      );
      assert.throws(() => server.configure({ rulesReviewStatus: 200 }), RangeError);
      assert.throws(() => server.configure({ rulesReviewStatus: '404' }), RangeError);
    } finally {
      await server.close();
    }
    await assert.rejects(startApiServer({ rulesReviewStatus: 302 }), RangeError);
  });
});

describe('fault phases', () => {
  let server;
  const body = ssar({ namespace: 'ci', group: '', resource: 'pods', verb: 'get' });
  before(async () => {
    server = await startApiServer({ role: { rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get'] }] } });
  });
  after(() => server.close());

  it('refuse -> ECONNREFUSED; back to healthy the same port answers', async () => {
    const port = server.port;
    assert.equal((await request(server, { body })).status, 201);
    await server.setPhase('refuse');
    assert.equal(server.phase, 'refuse');
    assert.equal(server.listening, false);
    for (let i = 0; i < 3; i++) {
      const err = await expectClientError(request(server, { body }));
      assert.equal(err.code, 'ECONNREFUSED');
    }
    await server.setPhase('healthy');
    assert.equal(server.port, port);
    assert.equal(server.url, `https://127.0.0.1:${port}`);
    const res = await request(server, { body });
    assert.equal(res.status, 201);
    assert.equal(JSON.parse(res.text).status.allowed, true);
    // refuse twice in a row, then back: still the same port
    await server.setPhase('refuse');
    await server.setPhase('refuse');
    assert.equal((await expectClientError(request(server, { body }))).code, 'ECONNREFUSED');
    await server.setPhase('healthy');
    assert.equal((await request(server, { body })).status, 201);
    assert.equal(server.port, port);
  });

  it('refuse destroys open connections, including hung requests', async () => {
    await server.setPhase('hang');
    const pending = expectClientError(request(server, { body, timeoutMs: 5000 }));
    await waitFor(() => server.requests.some((r) => r.status === 'hang'), 2000);
    const started = Date.now();
    await server.setPhase('refuse');
    const err = await pending;
    assert.ok(Date.now() - started < 1000, 'hung request was not ended by refuse');
    assert.ok(['ECONNRESET'].includes(err.code), `got ${err.code} ${err.message}`);
    await server.setPhase('healthy');
  });

  it('hang -> the client times out and aborts; close() still ends quickly', async () => {
    const local = await startApiServer({});
    try {
      await local.setPhase('hang');
      const started = Date.now();
      const err = await expectClientError(request(local, { body, signal: AbortSignal.timeout(300) }));
      const elapsed = Date.now() - started;
      assert.equal(err.name, 'AbortError');
      assert.ok(elapsed >= 280 && elapsed < 2000, `aborted after ${elapsed} ms`);
      assert.equal(local.requests.length, 1);
      assert.equal(local.requests[0].status, 'hang');
      assert.equal(local.requests[0].phase, 'hang');
      assert.deepEqual(local.requests[0].body, body); // the request was read
      // Leave one request hung with no client timeout, switch phase: it stays hung.
      const stillHung = expectClientError(request(local, { body, timeoutMs: 10000 }));
      await waitFor(() => local.requests.length === 2, 2000);
      await local.setPhase('healthy');
      const raced = await Promise.race([stillHung.then(() => 'ended'), sleep(200).then(() => 'hung')]);
      assert.equal(raced, 'hung');
      const closeStarted = Date.now();
      await local.close();
      const closeMs = Date.now() - closeStarted;
      assert.ok(closeMs < 1000, `close took ${closeMs} ms`);
      const closedErr = await stillHung;
      assert.equal(closedErr.code, 'ECONNRESET');
    } finally {
      await local.close();
    }
  });

  it('reset -> ECONNRESET / socket hang up', async () => {
    await server.setPhase('reset');
    const err = await expectClientError(request(server, { body }));
    assert.ok(err.code === 'ECONNRESET' || /socket hang up/.test(err.message), `got ${err.code} ${err.message}`);
    const last = server.requests[server.requests.length - 1];
    assert.equal(last.status, 'reset');
    assert.equal(last.phase, 'reset');
    await server.setPhase('healthy');
  });

  it('forbidden403 with the apiserver message, for SSAR and SSRR', async () => {
    await server.setPhase('forbidden403');
    const a = assertStatus(await request(server, { body }), 403, 'Forbidden');
    assert.equal(
      a.message,
      'selfsubjectaccessreviews.authorization.k8s.io is forbidden: User "system:serviceaccount:ci:runner" cannot create ' +
        'resource "selfsubjectaccessreviews" in API group "authorization.k8s.io" at the cluster scope',
    );
    const r = assertStatus(await request(server, { path: SSRR, body: { spec: { namespace: 'ci' } } }), 403, 'Forbidden');
    assert.equal(
      r.message,
      'selfsubjectrulesreviews.authorization.k8s.io is forbidden: User "system:serviceaccount:ci:runner" cannot create ' +
        'resource "selfsubjectrulesreviews" in API group "authorization.k8s.io" at the cluster scope',
    );
    await server.setPhase('healthy');
  });

  it('unauthorized401 even with the right token', async () => {
    await server.setPhase('unauthorized401');
    assertStatus(await request(server, { body }), 401, 'Unauthorized');
    await server.setPhase('healthy');
    assert.equal((await request(server, { body })).status, 201);
  });

  it('throttle429 with Retry-After (default 1, or retryAfterSeconds)', async () => {
    await server.setPhase('throttle429');
    let res = await request(server, { body });
    assertStatus(res, 429, 'TooManyRequests');
    assert.equal(res.headers['retry-after'], '1');
    await server.setPhase('throttle429', { retryAfterSeconds: 7 });
    res = await request(server, { body });
    assert.equal(assertStatus(res, 429, 'TooManyRequests').details.retryAfterSeconds, 7);
    assert.equal(res.headers['retry-after'], '7');
    await server.setPhase('healthy');
  });

  it('error500 and unavailable503 (Retry-After only when asked)', async () => {
    await server.setPhase('error500');
    assertStatus(await request(server, { body }), 500, 'InternalError');
    await server.setPhase('unavailable503');
    let res = await request(server, { body });
    assertStatus(res, 503, 'ServiceUnavailable');
    assert.equal(res.headers['retry-after'], undefined);
    await server.setPhase('unavailable503', { retryAfterSeconds: 4 });
    res = await request(server, { body });
    assertStatus(res, 503, 'ServiceUnavailable');
    assert.equal(res.headers['retry-after'], '4');
    await server.setPhase('healthy');
  });

  it('malformed -> 201 application/json that does not parse', async () => {
    await server.setPhase('malformed');
    const res = await request(server, { body });
    assert.equal(res.status, 201);
    assert.match(res.headers['content-type'], /^application\/json/);
    assert.match(res.text, /^\{"kind":"SelfSubjectAccessReview"/);
    assert.throws(() => JSON.parse(res.text), SyntaxError);
    await server.setPhase('healthy');
  });

  it('cutBody -> 201 and half the body, then the connection is destroyed (or left silent), for each framing', async () => {
    // What arrived on the wire, and how the response ended.
    const cutRequest = (hangMs) =>
      new Promise((resolve, reject) => {
        const payload = JSON.stringify(body);
        const req = https.request(
          `${server.url}${SSAR}`,
          {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload), authorization: 'Bearer test-token' },
            ca: server.caPem,
            agent: false,
          },
          (res) => {
            let bytes = 0;
            let ended = 'open';
            res.on('data', (chunk) => (bytes += chunk.length));
            res.on('end', () => (ended = 'end'));
            res.on('error', () => {});
            res.on('close', () => resolve({ status: res.statusCode, headers: res.headers, bytes, ended, complete: res.complete }));
            if (hangMs) setTimeout(() => req.destroy(), hangMs);
          },
        );
        req.on('error', () => {});
        req.on('close', () => setTimeout(() => reject(new Error('closed before a response')), 50).unref());
        req.end(payload);
      });
    for (const framing of ['length', 'chunked', 'close']) {
      await server.setPhase('cutBody', { framing });
      const res = await cutRequest(0);
      assert.equal(res.status, 201, framing);
      assert.ok(res.bytes > 20, `${framing}: half a body arrived (${res.bytes} bytes)`);
      if (framing === 'length') {
        assert.ok(Number(res.headers['content-length']) > res.bytes, 'fewer bytes than the Content-Length');
        assert.equal(res.complete, false);
      }
      if (framing === 'chunked') {
        assert.equal(res.headers['transfer-encoding'], 'chunked');
        assert.equal(res.complete, false, 'no last chunk');
      }
      if (framing === 'close') {
        assert.equal(res.headers['content-length'], undefined);
        assert.equal(res.headers['transfer-encoding'], undefined);
      }
      assert.equal(server.requests.at(-1).status, 'cut');
    }
    await server.setPhase('cutBody', { framing: 'length', hang: true });
    const res = await cutRequest(200);
    assert.equal(res.status, 201);
    assert.equal(res.complete, false, 'still open when the client gave up');
    assert.equal(server.requests.at(-1).status, 'cut-hang');
    assert.throws(() => server.setPhase('cutBody', { framing: 'gzip' }), /framing must be one of/);
    await server.setPhase('healthy');
  });

  it('trickle -> complete answer, slowly, in several chunks', async () => {
    await server.setPhase('trickle', { trickleMs: 15, trickleBytes: 32 });
    const res = await request(server, { body });
    assert.equal(res.status, 201);
    const json = JSON.parse(res.text);
    assert.equal(json.status.allowed, true);
    const writes = Math.ceil(Buffer.byteLength(res.text) / 32);
    assert.ok(writes >= 5, `only ${writes} writes`);
    assert.ok(res.ms >= writes * 15 * 0.8, `arrived in ${res.ms} ms, expected about ${writes * 15} ms`);
    assert.ok(res.chunks > 1, `arrived in ${res.chunks} chunk(s)`);
    await server.setPhase('healthy');
  });

  it('latencyMs delays healthy answers', async () => {
    server.configure({ latencyMs: 150 });
    try {
      const res = await request(server, { body });
      assert.equal(res.status, 201);
      assert.ok(res.ms >= 140, `answered in ${res.ms} ms`);
    } finally {
      server.configure({ latencyMs: 0 });
    }
  });

  it('share 0.5 faults exactly half of 10 requests, deterministically', async () => {
    server.resetCounts();
    await server.setPhase('error500', { share: 0.5 });
    const statuses = [];
    for (let i = 0; i < 10; i++) statuses.push((await request(server, { body })).status);
    assert.deepEqual(statuses, [201, 500, 201, 500, 201, 500, 201, 500, 201, 500]);
    const counts = server.counts();
    assert.deepEqual(counts.byPhase, { healthy: 5, error500: 5 });
    assert.ok(server.requests.every((r) => r.activePhase === 'error500'));
    // share 0.3: 3 of 10; share 0: none
    await server.setPhase('unavailable503', { share: 0.3 });
    let faulted = 0;
    for (let i = 0; i < 10; i++) if ((await request(server, { body })).status === 503) faulted++;
    assert.equal(faulted, 3);
    await server.setPhase('unavailable503', { share: 0 });
    assert.equal((await request(server, { body })).status, 201);
    await server.setPhase('healthy');
  });

  it('rejects bad phase names and options', () => {
    assert.throws(() => server.setPhase('exploding'), TypeError);
    assert.throws(() => server.setPhase('error500', { share: 1.5 }), RangeError);
    assert.throws(() => server.setPhase('refuse', { share: 0.5 }), RangeError);
    assert.throws(() => server.setPhase('throttle429', { retryAfterSeconds: -1 }), RangeError);
    assert.equal(server.phase, 'healthy');
  });
});

async function waitFor(predicate, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  for (let i = 0; i < 1000 && Date.now() < deadline; i++) {
    if (predicate()) return;
    await sleep(10);
  }
  assert.fail(`condition not met within ${timeoutMs} ms`);
}

describe('counting and timelines', () => {
  it('counts by phase, kind and second; resetCounts clears', async () => {
    const server = await startApiServer({ role: { rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get'] }] } });
    try {
      const body = ssar({ namespace: 'ci', resource: 'pods', verb: 'get' });
      for (let i = 0; i < 3; i++) await request(server, { body });
      for (let i = 0; i < 2; i++) await request(server, { path: SSRR, body: { spec: { namespace: 'ci' } } });
      await request(server, { path: '/version', method: 'GET' });
      await server.setPhase('forbidden403');
      await request(server, { body });
      await server.setPhase('refuse');
      await expectClientError(request(server, { body })); // never reaches HTTP: not counted
      await server.setPhase('reset');
      await expectClientError(request(server, { path: SSRR, body: {} }));
      const counts = server.counts();
      assert.equal(counts.total, 8);
      assert.deepEqual(counts.byPhase, { healthy: 6, forbidden403: 1, reset: 1 });
      assert.deepEqual(counts.byKind, { ssar: 4, ssrr: 3, other: 1 });
      assert.equal(Object.values(counts.bySecond).reduce((a, b) => a + b, 0), 8);
      const nowSecond = Math.floor(Date.now() / 1000);
      for (const second of Object.keys(counts.bySecond)) assert.ok(Number(second) <= nowSecond && Number(second) > nowSecond - 30);
      assert.deepEqual(
        server.requests.map((r) => r.status),
        [201, 201, 201, 201, 201, 404, 403, 'reset'],
      );
      const first = server.requests[0];
      assert.equal(first.method, 'POST');
      assert.equal(first.path, SSAR);
      assert.equal(first.kind, 'ssar');
      assert.deepEqual(first.body, body);
      assert.equal(typeof first.atMs, 'number');
      server.resetCounts();
      assert.deepEqual(server.counts(), { total: 0, byPhase: {}, bySecond: {}, byKind: { ssar: 0, ssrr: 0, other: 0 } });
    } finally {
      await server.close();
    }
  });

  it('runTimeline switches phases in order, on time, and resolves when the last began', async () => {
    const server = await startApiServer({ role: { rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get'] }] } });
    try {
      const body = ssar({ namespace: 'ci', resource: 'pods', verb: 'get' });
      const started = Date.now();
      const done = server.runTimeline([
        { phase: 'error500', ms: 250 },
        { phase: 'refuse', ms: 250 },
        { phase: 'throttle429', ms: 250, retryAfterSeconds: 2 },
        { phase: 'healthy' },
      ]);
      assert.equal(server.phase, 'error500');
      assertStatus(await request(server, { body }), 500, 'InternalError');
      assert.equal(await done, true);
      const elapsed = Date.now() - started;
      assert.ok(elapsed >= 740 && elapsed < 3000, `timeline took ${elapsed} ms`);
      assert.equal(server.phase, 'healthy');
      assert.equal((await request(server, { body })).status, 201);
      const history = server.phaseHistory.slice(1); // [0] is the initial healthy
      assert.deepEqual(
        history.map((h) => h.phase),
        ['error500', 'refuse', 'throttle429', 'healthy'],
      );
      assert.equal(history[2].options.retryAfterSeconds, 2);
      for (let i = 1; i < history.length; i++) {
        const gap = history[i].atMs - history[i - 1].atMs;
        assert.ok(gap >= 240, `phase ${history[i].phase} began ${gap} ms after the previous one`);
      }
    } finally {
      await server.close();
    }
  });

  it('runTimeline probes see each phase while it lasts', async () => {
    const server = await startApiServer({});
    try {
      const body = ssar({ namespace: 'ci', resource: 'pods', verb: 'get' });
      const done = server.runTimeline([{ phase: 'refuse', ms: 400 }, { phase: 'unavailable503', ms: 400 }, { phase: 'healthy' }]);
      await sleep(100);
      assert.equal((await expectClientError(request(server, { body }))).code, 'ECONNREFUSED');
      await waitFor(() => server.phase === 'unavailable503', 2000);
      await sleep(50);
      assertStatus(await request(server, { body }), 503, 'ServiceUnavailable');
      await done;
      const res = await request(server, { body });
      assert.equal(res.status, 201);
      assert.equal(JSON.parse(res.text).status.allowed, false); // healthy, and the Role is empty
    } finally {
      await server.close();
    }
  });

  it('close() cancels a running timeline (resolves false) and clears its timers', async () => {
    const server = await startApiServer({});
    const done = server.runTimeline([{ phase: 'refuse', ms: 60000 }, { phase: 'healthy' }]);
    await sleep(50);
    const started = Date.now();
    await server.close();
    assert.equal(await done, false);
    assert.ok(Date.now() - started < 1000);
    assert.equal(server.listening, false);
    assert.throws(() => server.setPhase('healthy'), /closed/);
  });
});

describe('kubeconfig and process lifetime', () => {
  it('writeKubeconfig writes server, CA data, token, context and namespace', async () => {
    const server = await startApiServer({ token: 'tok-123', namespace: 'runners' });
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fake-apiserver-'));
    try {
      const file = path.join(dir, 'kubeconfig');
      assert.equal(server.writeKubeconfig(file), file);
      const text = fs.readFileSync(file, 'utf8');
      assert.match(text, new RegExp(`server: "https://127\\.0\\.0\\.1:${server.port}"`));
      const ca = /certificate-authority-data: "([A-Za-z0-9+/=]+)"/.exec(text);
      assert.ok(ca, text);
      assert.equal(Buffer.from(ca[1], 'base64').toString('utf8'), server.caPem);
      assert.match(text, /token: "tok-123"/);
      assert.match(text, /namespace: "runners"/);
      assert.match(text, /^current-context: fake-apiserver$/m);
      assert.match(text, /^kind: Config$/m);
      server.writeKubeconfig(file, { token: 'other' });
      assert.match(fs.readFileSync(file, 'utf8'), /token: "other"/);
      // The token and CA in the file work against the server.
      const res = await request({ url: server.url, caPem: Buffer.from(ca[1], 'base64').toString('utf8') }, {
        path: SSRR,
        body: { spec: { namespace: 'runners' } },
        token: 'tok-123',
      });
      assert.equal(res.status, 201);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
      await server.close();
    }
  });

  it('a closed server lets the Node process exit, even with hung requests and a refuse phase', async () => {
    const script = `
      const https = require('node:https');
      const { startApiServer } = require(${JSON.stringify(APISERVER_JS)});
      (async () => {
        const s = await startApiServer({});
        await s.setPhase('hang');
        const req = https.request(s.url + '/x', { method: 'POST', ca: s.caPem, agent: false });
        req.on('error', () => {});
        req.end('{}');
        await new Promise((r) => setTimeout(r, 150));
        s.runTimeline([{ phase: 'hang', ms: 100 }, { phase: 'refuse', ms: 60000 }, { phase: 'healthy' }]);
        await new Promise((r) => setTimeout(r, 250));
        if (s.phase !== 'refuse') throw new Error('expected refuse, got ' + s.phase);
        await s.close();
        console.log('closed');
      })();
    `;
    const { code, stdout, ms } = await runNode(['-e', script], 5000);
    assert.equal(code, 0);
    assert.equal(stdout.trim(), 'closed');
    assert.ok(ms < 4000, `process took ${ms} ms to exit`);
  });
});

/** Runs `node ...args`; rejects when it has not exited within `timeoutMs` (it is then killed). */
async function runNode(args, timeoutMs) {
  const r = await runProcess(process.execPath, args, { timeoutMs });
  if (r.timedOut) throw new Error(`child did not exit within ${timeoutMs} ms; stderr: ${r.stderr}`);
  return { code: r.code, signal: r.signal, stdout: r.stdout, stderr: r.stderr, ms: r.endedAt - r.startedAt };
}

describe('CLI mode', () => {
  let dir;
  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fake-apiserver-cli-'));
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  /** Starts the CLI; resolves { child, line, exited } once it printed its JSON line. */
  function startCli(config, logFile) {
    const configFile = path.join(dir, `config-${Date.now()}-${Math.floor(Math.random() * 1e6)}.json`);
    const server = startApiServerProcess({ config, configFile, logFile, readyTimeoutMs: 5000 });
    return { child: server.child, line: server.ready, exited: server.exited };
  }

  async function boundedExit(exited, ms, child) {
    let timer;
    const timeout = new Promise((resolve) => {
      timer = setTimeout(() => resolve('timeout'), ms);
    });
    const result = await Promise.race([exited, timeout]);
    clearTimeout(timer);
    if (result === 'timeout') {
      child.kill('SIGKILL');
      assert.fail(`CLI did not exit within ${ms} ms`);
    }
    return result;
  }

  it('starts, prints its line, runs the timeline, answers, and logs on SIGTERM', async () => {
    const kubeconfig = path.join(dir, 'kubeconfig.yaml');
    const logFile = path.join(dir, 'log.json');
    const { child, line, exited } = startCli(
      {
        token: 'cli-token',
        namespace: 'ci',
        role: { rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get'] }] },
        kubeconfig,
        timeline: [{ phase: 'forbidden403', ms: 400 }, { phase: 'healthy' }],
        maxRunMs: 15000,
      },
      logFile,
    );
    const info = await line;
    assert.match(info.url, /^https:\/\/127\.0\.0\.1:\d+$/);
    assert.equal(info.url, `https://127.0.0.1:${info.port}`);
    assert.equal(info.kubeconfig, kubeconfig);
    assert.match(fs.readFileSync(kubeconfig, 'utf8'), /token: "cli-token"/);
    const target = { url: info.url, caPem: fs.readFileSync(path.join(__dirname, 'certs', 'ca.pem'), 'utf8') };
    const body = ssar({ namespace: 'ci', group: '', resource: 'pods', verb: 'get' });
    assertStatus(await request(target, { body, token: 'cli-token' }), 403, 'Forbidden');
    await sleep(500);
    const ok = await request(target, { body, token: 'cli-token' });
    assert.equal(ok.status, 201);
    assert.equal(JSON.parse(ok.text).status.allowed, true);
    await request(target, { path: SSRR, body: { spec: { namespace: 'ci' } }, token: 'cli-token' });
    child.kill('SIGTERM');
    const { code } = await boundedExit(exited, 5000, child);
    assert.equal(code, 0);
    const log = JSON.parse(fs.readFileSync(logFile, 'utf8'));
    assert.equal(log.stoppedBy, 'SIGTERM');
    assert.equal(log.counts.total, 3);
    assert.deepEqual(log.counts.byPhase, { forbidden403: 1, healthy: 2 });
    assert.deepEqual(log.counts.byKind, { ssar: 2, ssrr: 1, other: 0 });
    assert.deepEqual(
      log.requests.map((r) => [r.kind, r.status]),
      [
        ['ssar', 403],
        ['ssar', 201],
        ['ssrr', 201],
      ],
    );
    assert.deepEqual(
      log.phaseHistory.map((h) => h.phase),
      ['healthy', 'forbidden403', 'healthy'],
    );
  });

  it('stops itself after maxRunMs and still writes its log', async () => {
    const logFile = path.join(dir, 'log-max.json');
    const started = Date.now();
    const { child, line, exited } = startCli({ maxRunMs: 400, timeline: [{ phase: 'refuse', ms: 60000 }, { phase: 'healthy' }] }, logFile);
    await line;
    const { code, stderr } = await boundedExit(exited, 5000, child);
    const ms = Date.now() - started;
    assert.equal(code, 0);
    assert.match(stderr, /maxRunMs 400 reached/);
    assert.ok(ms >= 350, `stopped after ${ms} ms`);
    const log = JSON.parse(fs.readFileSync(logFile, 'utf8'));
    assert.equal(log.stoppedBy, 'maxRunMs');
    assert.equal(log.counts.total, 0);
  });

  it('fails fast on a bad command line', async () => {
    const { code, stderr } = await runNode([APISERVER_JS, '--nope'], 5000);
    assert.equal(code, 1);
    assert.match(stderr, /unknown argument --nope/);
  });
});

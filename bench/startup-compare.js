'use strict';
// Two builds of the package, compared on one machine with interleaved runs
// (drift in machine load hits both alike): loading the package, and a whole
// hook step answered from the cache in a fresh process, each as the median
// over bare `node -e ""`. Give each build as a consumer folder that has it
// installed (tests/js/support/prepare.js makes .tools/consumer-1x).
//
//   node bench/startup-compare.js <before consumer> <after consumer> [--runs 40]

const { spawnSync } = require('node:child_process');
const { createRequire } = require('node:module');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..');
const [beforeDir, afterDir] = process.argv.slice(2, 4).map((d) => path.resolve(d));
const runsAt = process.argv.indexOf('--runs');
const runs = Math.min(200, Math.max(5, Number(runsAt > 0 ? process.argv[runsAt + 1] : 40) || 40));

const median = (values) => {
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
};

function timeProcess(cwd, code) {
  const started = process.hrtime.bigint();
  const r = spawnSync(process.execPath, ['-e', code], { cwd, stdio: 'ignore', timeout: 30_000 });
  if (r.status !== 0) throw new Error(`node -e in ${cwd} failed with ${r.status}`);
  return Number(process.hrtime.bigint() - started) / 1e6;
}

const stepCode = (dir) => `const pf = require('k8s-auth-preflight');
const check = pf.createAuthPreflight({
  kubeConfig: { getCurrentUser: () => ({ token: 'bench-token' }) },
  namespace: 'ci', cacheDir: ${JSON.stringify(dir)}, env: {}, logger: { info() {}, warning() {}, error() {}, debug() {} },
});
check.isAuthPermissionsOK().then((ok) => { if (!ok || check.lastOutcome().source !== 'cache') process.exitCode = 3; });`;

async function main() {
  if (!beforeDir || !afterDir) throw new Error('usage: node bench/startup-compare.js <before consumer> <after consumer> [--runs 40]');
  const { startApiServer } = require(path.join(ROOT, 'tests/support/apiserver'));
  const role = { rules: [{ apiGroups: [''], resources: ['pods', 'pods/exec', 'pods/log', 'secrets'], verbs: ['*'] }] };
  const server = await startApiServer({ token: 'bench-token', role, namespace: 'ci' });
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'preflight-compare-'));
  try {
    const kubeconfig = server.writeKubeconfig(path.join(work, 'kubeconfig'), { token: 'bench-token' });
    const builds = [];
    for (const [name, consumer] of [['before', beforeDir], ['after', afterDir]]) {
      const load = createRequire(path.join(consumer, 'package.json'));
      const k8s = load('@kubernetes/client-node');
      const kc = new k8s.KubeConfig();
      kc.loadFromFile(kubeconfig);
      const dir = fs.mkdtempSync(path.join(work, `${name}-`));
      const options = { kubeConfig: kc, namespace: 'ci', cacheDir: dir, env: {}, logger: { warning() {}, info() {}, error() {}, debug() {} } };
      if (!(await load('k8s-auth-preflight').createAuthPreflight(options).isAuthPermissionsOK())) throw new Error(`${name}: first check failed`);
      builds.push({ name, consumer, step: stepCode(dir) });
    }
    const variants = [
      ['bare node -e ""', afterDir, ''],
      ...builds.map((b) => [`${b.name}: require('k8s-auth-preflight')`, b.consumer, "require('k8s-auth-preflight')"]),
      ...builds.map((b) => [`${b.name}: a hook step answered from the cache`, b.consumer, b.step]),
    ];
    for (const [, cwd, code] of variants) timeProcess(cwd, code);
    const samples = variants.map(() => []);
    for (let i = 0; i < runs; i += 1) variants.forEach(([, cwd, code], v) => samples[v].push(timeProcess(cwd, code)));
    const m = samples.map(median);
    console.log(`Before/after, Node ${process.version}, ${os.cpus().length} cores, ${runs} interleaved runs per variant (medians).\n`);
    console.log('| process | median ms | over bare node |');
    console.log('| --- | ---: | ---: |');
    variants.forEach(([name], v) => console.log(`| ${name} | ${m[v].toFixed(1)} | ${v ? `+${(m[v] - m[0]).toFixed(1)} ms` : ''} |`));
    console.log(`\nthe cached hook step, after less before: ${(m[4] - m[3]).toFixed(1)} ms; loading: ${(m[2] - m[1]).toFixed(1)} ms`);
    console.log(`\n(command: node bench/startup-compare.js ${process.argv.slice(2).join(' ')})`);
  } finally {
    await server.close();
    fs.rmSync(work, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});

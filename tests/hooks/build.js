'use strict';
// Builds the hooks' real bundles the way their users do, for every release
// in upstream.js and two variants:
//   plain       the snapshot as published;
//   integrated  the snapshot with the diff of docs/runner-container-hooks.md
//               applied (patch -p1) and this package's packed tarball
//               installed with the documented `npm install --legacy-peer-deps`.
// Each: a copy of the snapshot in .tools/real-hooks/<release>-<variant>/,
// then the hooks' own `npm install` in packages/hooklib and `npm ci` in
// packages/k8s (their bootstrap), their `npm run build` in both (tsc, then
// ncc for k8s). The bundle is packages/k8s/dist/index.js, with the .wasm
// beside it for the integrated one. The tree stays, node_modules and all, so
// that the hooks' own jest can run in it (tests/hooks/unit.test.js).
//
// A build whose inputs (the snapshot's lock files, the diff, the tarball)
// have not changed since the last one is skipped.
//
//   node tests/hooks/build.js [tarball]   # default: the one tests/js/support/prepare.js packed
//
// Without the snapshots it prints one line saying so and exits 0: the tests
// that need the bundles skip with the same line.

const { execFileSync, spawn } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');

const { ROOT, RELEASES, missingUpstream, snapshotOf, integrationDiff } = require('./upstream');

const OUT = path.join(ROOT, '.tools', 'real-hooks');
const VARIANTS = ['plain', 'integrated'];

/** The folder of one build (its tree; the bundle is under packages/k8s/dist). */
function treeOf(release, variant) {
  return path.join(OUT, `${release.name}-${variant}`);
}

/** The bundle's folder of one build: where `node index.js` runs a hook. */
function bundleOf(release, variant) {
  return path.join(treeOf(release, variant), 'packages', 'k8s', 'dist');
}

function defaultTarball() {
  const dir = path.join(ROOT, '.tools', 'pack');
  const found = fs.existsSync(dir) ? fs.readdirSync(dir).filter((n) => n.endsWith('.tgz')) : [];
  if (found.length !== 1) throw new Error(`expected one packed tarball in ${dir} (node tests/js/support/prepare.js makes it), found ${found.length}`);
  return path.join(dir, found[0]);
}

const sha = (...parts) => {
  const h = crypto.createHash('sha256');
  for (const p of parts) h.update(p).update('\0');
  return h.digest('hex');
};

/** Runs one command in `cwd`; its output goes to `log`; rejects naming the command and the log's tail. */
function run(cmd, args, cwd, log) {
  return new Promise((resolve, reject) => {
    fs.appendFileSync(log, `\n$ (${path.relative(ROOT, cwd)}) ${cmd} ${args.join(' ')}\n`);
    const fd = fs.openSync(log, 'a');
    const child = spawn(cmd, args, { cwd, stdio: ['ignore', fd, fd], env: { ...process.env, npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false' } });
    fs.closeSync(fd);
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      if (code === 0) return resolve();
      const tail = fs.readFileSync(log, 'utf8').split('\n').slice(-25).join('\n');
      reject(new Error(`${cmd} ${args.join(' ')} in ${cwd} failed (${signal || `exit ${code}`}); the end of ${log}:\n${tail}`));
    });
  });
}

async function buildOne(release, variant, tarball) {
  const tree = treeOf(release, variant);
  const snapshot = snapshotOf(release);
  const diff = variant === 'integrated' ? integrationDiff() : '';
  const inputs = sha(
    variant,
    fs.readFileSync(path.join(snapshot, 'packages', 'k8s', 'package-lock.json')),
    fs.readFileSync(path.join(snapshot, 'packages', 'k8s', 'src', 'k8s', 'index.ts')),
    diff,
    variant === 'integrated' ? fs.readFileSync(tarball) : '',
  );
  const stamp = path.join(tree, '.built');
  if (fs.existsSync(stamp) && fs.readFileSync(stamp, 'utf8') === inputs && fs.existsSync(path.join(bundleOf(release, variant), 'index.js'))) {
    return { release: release.name, variant, skipped: true };
  }
  const started = performance.now();
  fs.rmSync(tree, { recursive: true, force: true });
  fs.mkdirSync(path.dirname(tree), { recursive: true });
  execFileSync('cp', ['-R', snapshot, tree]);
  execFileSync('chmod', ['-R', 'u+w', tree]);
  const log = path.join(OUT, `${release.name}-${variant}.log`);
  fs.writeFileSync(log, `build of ${release.name} (${variant})\n`);
  if (variant === 'integrated') {
    const diffFile = path.join(OUT, `${release.name}.diff`);
    fs.writeFileSync(diffFile, diff);
    await run('patch', ['-p1', '--forward', '--no-backup-if-mismatch', '-i', diffFile], tree, log);
  }
  const hooklib = path.join(tree, 'packages', 'hooklib');
  const k8s = path.join(tree, 'packages', 'k8s');
  await run('npm', ['install'], hooklib, log);
  await run('npm', ['run', 'build'], hooklib, log);
  await run('npm', ['ci'], k8s, log);
  if (variant === 'integrated') await run('npm', ['install', '--legacy-peer-deps', tarball], k8s, log);
  await run('npm', ['run', 'build'], k8s, log);
  const bundle = bundleOf(release, variant);
  if (!fs.existsSync(path.join(bundle, 'index.js'))) throw new Error(`${release.name} (${variant}): the build wrote no ${bundle}/index.js`);
  if (variant === 'integrated' && !fs.existsSync(path.join(bundle, 'k8s_auth_preflight_bg.wasm'))) throw new Error(`${release.name} (integrated): ncc did not put k8s_auth_preflight_bg.wasm beside index.js`);
  fs.writeFileSync(stamp, inputs);
  return { release: release.name, variant, skipped: false, ms: Math.round(performance.now() - started) };
}

/** Builds every release and variant, two at a time (these machines have 2 cores). */
async function buildAll(tarball = defaultTarball()) {
  const jobs = RELEASES.flatMap((release) => VARIANTS.map((variant) => () => buildOne(release, variant, tarball)));
  const results = [];
  const worker = async () => {
    for (let job = jobs.shift(); job; job = jobs.shift()) results.push(await job());
  };
  await Promise.all([worker(), worker()]);
  return results;
}

if (require.main === module) {
  const missing = missingUpstream();
  if (missing) {
    console.log(`real hooks: not built: ${missing}`);
    process.exit(0);
  }
  buildAll(process.argv[2] ? path.resolve(process.argv[2]) : undefined).then(
    (results) => {
      for (const r of results) console.log(`real hooks: ${r.release} (${r.variant}): ${r.skipped ? 'unchanged, kept' : `built in ${(r.ms / 1000).toFixed(0)} s`} -> ${path.relative(ROOT, bundleOf({ name: r.release }, r.variant))}/index.js`);
    },
    (error) => {
      console.error(`real hooks: ${error.message}`);
      process.exit(1);
    },
  );
}

module.exports = { VARIANTS, treeOf, bundleOf, buildAll };

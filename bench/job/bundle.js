'use strict';
// The hook a whole-job run starts: the ncc bundle of tests/consumer's
// src/job.ts (prepare_job, run_script_step, cleanup_job) for the installed
// package, built once and cached under .tools/job/.

const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const { ROOT, TOOLS } = require('../../tests/js/support/prepare');
const { WASM, consumerSources, makeConsumerProject, nccBuild } = require('../../tests/js/support/consumer-project');

const CACHE = path.join(TOOLS, 'job');
const BUILD_TIMEOUT_MS = 180_000;

/**
 * The folder of the job bundle (index.js and the .wasm) for the package
 * installed in `consumerDir`, keyed by its install stamp, the consumer's
 * sources and ncc's version; built when missing (replacing older bundles of
 * the flavour). Adds a line to `notes` when given.
 */
async function jobBundle(consumerDir, flavour, notes = []) {
  const stamp = fs.readFileSync(path.join(consumerDir, '.installed'), 'utf8');
  const nccVersion = JSON.parse(fs.readFileSync(path.join(ROOT, 'node_modules', '@vercel', 'ncc', 'package.json'), 'utf8')).version;
  const hash = crypto.createHash('sha256').update(`${stamp}\n${nccVersion}\n`);
  for (const file of consumerSources()) hash.update(`${path.relative(ROOT, file)}\n`).update(fs.readFileSync(file));
  // One cached bundle per flavour: the bundle is plain JavaScript and the
  // .wasm, the same whichever Node ran ncc (scripts/test.sh runs the 2x
  // tests on Node 22 and 24 with one bundle).
  const prefix = `bundle-${flavour}-`;
  const dir = path.join(CACHE, `${prefix}${hash.digest('hex').slice(0, 16)}`);
  if (fs.existsSync(path.join(dir, 'index.js')) && fs.existsSync(path.join(dir, WASM))) {
    notes.push(`bundle: cached ${path.relative(ROOT, dir)}`);
    return dir;
  }
  const project = fs.mkdtempSync(path.join(os.tmpdir(), 'preflight-job-build-'));
  try {
    makeConsumerProject(project, consumerDir);
    const started = Date.now();
    const build = await nccBuild(project, { timeoutMs: BUILD_TIMEOUT_MS, entry: 'src/job.ts', out: 'dist-job' });
    if (build.code !== 0 || !fs.existsSync(path.join(project, 'dist-job', WASM))) {
      throw new Error(`ncc build of src/job.ts failed (exit ${build.code}${build.timedOut ? ', timed out' : ''}):\n${build.stdout}${build.stderr}`);
    }
    fs.mkdirSync(CACHE, { recursive: true });
    for (const name of fs.readdirSync(CACHE)) {
      if (name.startsWith(prefix)) fs.rmSync(path.join(CACHE, name), { recursive: true, force: true });
    }
    const staging = `${dir}.tmp-${process.pid}`;
    fs.cpSync(path.join(project, 'dist-job'), staging, { recursive: true });
    fs.renameSync(staging, dir);
    notes.push(`bundle: built ${path.relative(ROOT, dir)} with ncc ${nccVersion} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    return dir;
  } finally {
    fs.rmSync(project, { recursive: true, force: true });
  }
}

/**
 * A copy of the bundle in a fresh temporary folder, with no node_modules
 * anywhere above it (the cache is inside the repository, whose node_modules
 * would hide a bundle that lost a dependency). Returns { dir, remove() }.
 */
function bundleRunDir(bundleDir) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'preflight-job-run-'));
  fs.cpSync(bundleDir, dir, { recursive: true });
  return { dir, remove: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

module.exports = { jobBundle, bundleRunDir };

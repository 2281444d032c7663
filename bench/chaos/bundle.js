'use strict';
// The hook the chaos run starts: the ncc bundle of tests/consumer for the
// installed package, built once and cached under .tools/chaos/.

const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const { ROOT, TOOLS } = require('../../tests/js/support/prepare');
const { WASM, consumerSources, makeConsumerProject, nccBuild } = require('../../tests/js/support/consumer-project');
const { secs } = require('./measurement');

const CACHE = path.join(TOOLS, 'chaos');
const BUILD_TIMEOUT_MS = 180_000;

/**
 * The folder of the bundle (index.js and the .wasm) for this installed
 * package, cached by the packed tarball's hash (the consumer's .installed
 * stamp), the consumer's sources, ncc's version and Node's; built when
 * missing, replacing older bundles of the flavour. Adds a line to `notes`.
 */
async function consumerBundle(consumerDir, flavour, stamp, notes) {
  const nccVersion = JSON.parse(fs.readFileSync(path.join(ROOT, 'node_modules', '@vercel', 'ncc', 'package.json'), 'utf8')).version;
  const hash = crypto.createHash('sha256');
  hash.update(`${stamp}\n${nccVersion}\n${process.version}\n`);
  for (const file of consumerSources()) hash.update(`${path.relative(ROOT, file)}\n`).update(fs.readFileSync(file));
  const key = hash.digest('hex').slice(0, 16);
  const dir = path.join(CACHE, `bundle-${flavour}-${key}`);
  if (fs.existsSync(path.join(dir, 'index.js')) && fs.existsSync(path.join(dir, WASM))) {
    notes.push(`bundle: cached ${path.relative(ROOT, dir)}`);
    return dir;
  }
  const project = fs.mkdtempSync(path.join(os.tmpdir(), 'preflight-chaos-build-'));
  try {
    makeConsumerProject(project, consumerDir);
    const started = Date.now();
    const build = await nccBuild(project, { timeoutMs: BUILD_TIMEOUT_MS });
    if (build.code !== 0 || !fs.existsSync(path.join(project, 'dist', WASM))) {
      throw new Error(`ncc build failed (exit ${build.code}${build.timedOut ? ', timed out' : ''}):\n${build.stdout}${build.stderr}`);
    }
    // Replace older bundles of this client flavour; write the new one under
    // a temporary name, then rename.
    fs.mkdirSync(CACHE, { recursive: true });
    for (const name of fs.readdirSync(CACHE)) {
      if (name.startsWith(`bundle-${flavour}-`)) fs.rmSync(path.join(CACHE, name), { recursive: true, force: true });
    }
    const staging = `${dir}.tmp-${process.pid}`;
    fs.cpSync(path.join(project, 'dist'), staging, { recursive: true });
    fs.renameSync(staging, dir);
    notes.push(`bundle: built ${path.relative(ROOT, dir)} with ncc ${nccVersion} in ${secs(Date.now() - started)}`);
    return dir;
  } finally {
    fs.rmSync(project, { recursive: true, force: true });
  }
}

module.exports = { consumerBundle };

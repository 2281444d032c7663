'use strict';
// The packed package as the test consumer installed it (.tools/consumer-1x
// or -2x, by tests/js/support/prepare.js): which one this Node uses, whether
// it matches the working tree, and installing it when it is missing (or,
// with --prepare, stale).

const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');

const { ROOT, clientFlavour, consumerFolder } = require('../../tests/js/support/prepare');
const { WASM } = require('../../tests/js/support/consumer-project');
const { runProcess } = require('../../tests/support/run-process');
const { die } = require('./control');

const PREPARE = path.join(ROOT, 'tests', 'js', 'support', 'prepare.js');
const PREPARE_TIMEOUT_MS = 300_000;

const sha256 = (data) => crypto.createHash('sha256').update(data).digest('hex');

/** The client flavour ('1x' or '2x') this process uses; dies on a bad PREFLIGHT_CLIENT. */
function flavourOrDie() {
  try {
    return clientFlavour();
  } catch (e) {
    return die(e.message);
  }
}

/** Files of the working tree that the packed package ships, and whether the installed copy matches. */
function installState(consumerDir) {
  const installed = path.join(consumerDir, 'node_modules', 'k8s-auth-preflight');
  const stamp = path.join(consumerDir, '.installed');
  if (!fs.existsSync(stamp) || !fs.existsSync(path.join(installed, 'package.json'))) return { present: false, differing: [] };
  const files = [
    ...['k8s_auth_preflight.js', WASM].map((f) => path.join('pkg', f)),
    ...fs.readdirSync(path.join(ROOT, 'js-shim')).map((f) => path.join('js-shim', f)),
  ];
  const differing = files.filter((f) => {
    const here = path.join(ROOT, f);
    const there = path.join(installed, f);
    if (!fs.existsSync(here)) return false;
    return !fs.existsSync(there) || sha256(fs.readFileSync(here)) !== sha256(fs.readFileSync(there));
  });
  return { present: true, differing, stamp: fs.readFileSync(stamp, 'utf8').trim() };
}

/**
 * The installed package for this Node, installed first (prepare.js) when
 * missing, or when `prepare` is set and it differs from the working tree.
 * Resolves { flavour, consumerDir, stamp, tarball, stale, clientVersion };
 * `stale` is the note to print when the installed copy still differs.
 */
async function installedPackage(prepare, control) {
  const flavour = flavourOrDie();
  const consumerDir = consumerFolder(flavour);
  let state = installState(consumerDir);
  if (!state.present || (prepare && state.differing.length > 0)) {
    process.stderr.write(`chaos: running ${path.relative(ROOT, PREPARE)} (pack and install the package) ...\n`);
    const r = await runProcess(process.execPath, [PREPARE], { cwd: ROOT, env: process.env, timeoutMs: PREPARE_TIMEOUT_MS, track: control.children });
    if (r.code !== 0) die(`prepare failed (exit ${r.code}${r.timedOut ? ', timed out' : ''}):\n${r.stdout}${r.stderr}`);
    state = installState(consumerDir);
    if (!state.present) die(`${consumerDir} still has no installed package`);
  }
  const stale =
    state.differing.length > 0
      ? `NOTE: the installed package differs from the working tree (${state.differing.join(', ')}); run with --prepare to re-pack and re-install it`
      : null;
  const clientVersion = JSON.parse(fs.readFileSync(path.join(consumerDir, 'node_modules', '@kubernetes', 'client-node', 'package.json'), 'utf8')).version;
  return { flavour, consumerDir, stamp: state.stamp, tarball: state.stamp.split(' ')[0], stale, clientVersion };
}

module.exports = { installedPackage };

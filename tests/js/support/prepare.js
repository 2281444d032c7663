'use strict';
// Packs this package with `npm pack` and installs the tarball, as a user
// would, into two consumer folders under .tools/: one with
// @kubernetes/client-node 1.x (tests on Node 20) and one with 2.x (Node 22+).
// Re-installs only when the tarball's content changed.
//
//   node tests/js/support/prepare.js        # both consumers
//
// Tests then load the package through tests/js/support/consumer.js.

const { execFileSync } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..', '..', '..');
const TOOLS = path.join(ROOT, '.tools');
const CLIENTS = { '1x': '1.4.0', '2x': '2.0.1' };

/**
 * The consumer a process uses: PREFLIGHT_CLIENT, else '1x' on Node 20 and
 * '2x' on Node 22+. Throws for a name not in CLIENTS.
 */
function clientFlavour() {
  const major = Number(process.versions.node.split('.')[0]);
  const flavour = process.env.PREFLIGHT_CLIENT || (major >= 22 ? '2x' : '1x');
  if (!CLIENTS[flavour]) throw new Error(`PREFLIGHT_CLIENT must be one of ${Object.keys(CLIENTS).join(', ')}`);
  return flavour;
}

/** The folder of one consumer (.tools/consumer-1x, .tools/consumer-2x). */
function consumerFolder(flavour) {
  return path.join(TOOLS, `consumer-${flavour}`);
}

function pack() {
  const out = path.join(TOOLS, 'pack');
  fs.rmSync(out, { recursive: true, force: true });
  fs.mkdirSync(out, { recursive: true });
  const json = execFileSync('npm', ['pack', '--json', '--pack-destination', out], { cwd: ROOT, encoding: 'utf8' });
  const [{ filename }] = JSON.parse(json);
  return path.join(out, path.basename(filename));
}

function install(flavour, tarball) {
  const dir = consumerFolder(flavour);
  const sum = crypto.createHash('sha256').update(fs.readFileSync(tarball)).digest('hex');
  const stamp = path.join(dir, '.installed');
  if (fs.existsSync(stamp) && fs.readFileSync(stamp, 'utf8') === `${sum} ${CLIENTS[flavour]}`) return dir;
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: `consumer-${flavour}`, private: true }));
  const saved = path.join(dir, 'k8s-auth-preflight.tgz');
  fs.copyFileSync(tarball, saved);
  execFileSync(
    'npm',
    ['install', '--no-audit', '--no-fund', '--no-package-lock', saved, `@kubernetes/client-node@${CLIENTS[flavour]}`],
    { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] },
  );
  fs.writeFileSync(stamp, `${sum} ${CLIENTS[flavour]}`);
  return dir;
}

if (require.main === module) {
  const tarball = pack();
  for (const flavour of Object.keys(CLIENTS)) {
    const dir = install(flavour, tarball);
    console.log(`prepare: ${path.relative(ROOT, dir)} has ${path.basename(tarball)} and @kubernetes/client-node@${CLIENTS[flavour]}`);
  }
}

module.exports = { ROOT, TOOLS, CLIENTS, clientFlavour, consumerFolder };

'use strict';
// Loads the installed package (from the packed tarball, see prepare.js) and
// the @kubernetes/client-node next to it. PREFLIGHT_CLIENT picks the
// consumer: '1x' (default on Node 20) or '2x' (default on Node 22+).

const path = require('node:path');
const { TOOLS, CLIENTS } = require('./prepare');

const major = Number(process.versions.node.split('.')[0]);
const flavour = process.env.PREFLIGHT_CLIENT || (major >= 22 ? '2x' : '1x');
if (!CLIENTS[flavour]) throw new Error(`PREFLIGHT_CLIENT must be one of ${Object.keys(CLIENTS).join(', ')}`);
const dir = path.join(TOOLS, `consumer-${flavour}`);

function load(name) {
  return require(require.resolve(name, { paths: [dir] }));
}

module.exports = {
  flavour,
  clientVersion: CLIENTS[flavour],
  consumerDir: dir,
  preflight: load('k8s-auth-preflight'),
  k8s: load('@kubernetes/client-node'),
};

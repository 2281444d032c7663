'use strict';
// Loads the installed package (from the packed tarball, see prepare.js) and
// the @kubernetes/client-node next to it. PREFLIGHT_CLIENT picks the
// consumer: '1x' (default on Node 20) or '2x' (default on Node 22+).

const { createRequire } = require('node:module');
const path = require('node:path');
const { CLIENTS, clientFlavour, consumerFolder } = require('./prepare');

const flavour = clientFlavour();
const dir = consumerFolder(flavour);

// Resolve as a module inside the consumer folder would. Not
// require.resolve(name, { paths: [dir] }): Node tries "self" resolution from
// the calling file first, and this file lives inside the package's own repo
// (package.json name "k8s-auth-preflight"), so that returned
// /work/main/js-shim/index.js, i.e. the working tree, not the tarball, and
// the shim then loaded the repo's devDependency client-node 1.4.0 even in
// the 2x consumer. (Node also caches that answer for the same lookup paths.)
const requireFromConsumer = createRequire(path.join(dir, 'package.json'));

function load(name) {
  return requireFromConsumer(name);
}

module.exports = {
  flavour,
  clientVersion: CLIENTS[flavour],
  consumerDir: dir,
  preflight: load('k8s-auth-preflight'),
  k8s: load('@kubernetes/client-node'),
};

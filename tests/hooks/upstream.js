'use strict';
// Where the hooks' real source is, which releases are tested, and the
// integration diff, read from docs/runner-container-hooks.md: that page is
// the one source of the integration, and what a user copies from it is what
// every test builds.
//
// The snapshots live beside the project, in ../shared/upstream/ (or where
// PREFLIGHT_UPSTREAM points). They are read, never changed: a build copies
// one into a temporary folder first.

const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..', '..');
const DOC = path.join(ROOT, 'docs', 'runner-container-hooks.md');

/** The releases the tests build, oldest first: what runner images ship, and the newest main. */
const RELEASES = [
  { name: 'v0.8.1', folder: 'runner-container-hooks-v0.8.1' },
  { name: 'main', folder: 'runner-container-hooks-cf62bcc' },
];

function upstreamRoot() {
  return process.env.PREFLIGHT_UPSTREAM ? path.resolve(process.env.PREFLIGHT_UPSTREAM) : path.resolve(ROOT, '..', 'shared', 'upstream');
}

/** null when every snapshot is there, else one line saying what is missing (a user's clone has none). */
function missingUpstream() {
  const root = upstreamRoot();
  for (const release of RELEASES) {
    const dir = path.join(root, release.folder, 'packages', 'k8s', 'src', 'k8s', 'index.ts');
    if (!fs.existsSync(dir)) return `the hooks' source is not beside this clone (${path.join(root, release.folder)} is missing; set PREFLIGHT_UPSTREAM to a folder of snapshots)`;
  }
  return null;
}

/**
 * What a test file passes as `skip`: false when the snapshots are there,
 * else the one line that says why not. Under CI=true a missing snapshot
 * throws instead: a user's clone may lack them, CI never does.
 */
function skipWithoutUpstream() {
  const missing = missingUpstream();
  if (!missing) return false;
  if (process.env.CI === 'true') throw new Error(`CI=true, but ${missing}`);
  return `skipped: ${missing}`;
}

/** The snapshot folder of a release. */
function snapshotOf(release) {
  return path.join(upstreamRoot(), release.folder);
}

/**
 * The diff of the integration, exactly as the page shows it: the text of its
 * one ```diff block. Throws when the page has none, or more than one (a
 * user could not tell which to apply).
 */
function integrationDiff(doc = fs.readFileSync(DOC, 'utf8')) {
  const blocks = [...doc.matchAll(/^```diff\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
  if (blocks.length !== 1) throw new Error(`${path.relative(ROOT, DOC)} must hold exactly one diff block, found ${blocks.length}`);
  return blocks[0];
}

module.exports = { ROOT, RELEASES, upstreamRoot, missingUpstream, skipWithoutUpstream, snapshotOf, integrationDiff };

'use strict';
// The hooks-shaped TypeScript consumer (tests/consumer) as a project of its
// own: its sources in a temporary folder whose node_modules mirrors an
// installed consumer (.tools/consumer-1x or -2x) plus the repo's typescript
// and @types/node, and its ncc bundle (one index.js plus the .wasm in dist/).
// For tests/js/consumer.test.js, tests/js/job.test.js, bench/chaos/ and
// bench/job/. Loads no package itself.

const fs = require('node:fs');
const path = require('node:path');

const { ROOT } = require('./prepare');
const { runProcess } = require('../../support/run-process');

const CONSUMER_SRC = path.join(ROOT, 'tests', 'consumer');
const NCC = path.join(ROOT, 'node_modules', '@vercel', 'ncc', 'dist', 'ncc', 'cli.js');
const WASM = 'k8s_auth_preflight_bg.wasm';

/** The files the consumer project is made of: its sources and tsconfig, sorted. */
function consumerSources() {
  const out = [];
  const walk = (dir) => {
    for (const name of fs.readdirSync(dir).sort()) {
      const full = path.join(dir, name);
      if (fs.statSync(full).isDirectory()) walk(full);
      else out.push(full);
    }
  };
  walk(path.join(CONSUMER_SRC, 'src'));
  out.push(path.join(CONSUMER_SRC, 'tsconfig.json'));
  return out;
}

/**
 * Fills the empty folder `dir` with the consumer project: src/, tsconfig.json,
 * a package.json, and a node_modules of links into `consumerDir`'s (all but
 * dot entries and @types/node) plus the repo's typescript and @types/node.
 */
function makeConsumerProject(dir, consumerDir) {
  fs.cpSync(path.join(CONSUMER_SRC, 'src'), path.join(dir, 'src'), { recursive: true });
  fs.copyFileSync(path.join(CONSUMER_SRC, 'tsconfig.json'), path.join(dir, 'tsconfig.json'));
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'hooks-consumer', private: true }));
  const modules = path.join(dir, 'node_modules');
  const source = path.join(consumerDir, 'node_modules');
  fs.mkdirSync(path.join(modules, '@types'), { recursive: true });
  for (const name of fs.readdirSync(source)) {
    if (name === '@types' || name.startsWith('.')) continue;
    fs.symlinkSync(path.join(source, name), path.join(modules, name));
  }
  if (fs.existsSync(path.join(source, '@types'))) {
    for (const name of fs.readdirSync(path.join(source, '@types'))) {
      if (name !== 'node') fs.symlinkSync(path.join(source, '@types', name), path.join(modules, '@types', name));
    }
  }
  fs.symlinkSync(path.join(ROOT, 'node_modules', '@types', 'node'), path.join(modules, '@types', 'node'));
  fs.symlinkSync(path.join(ROOT, 'node_modules', 'typescript'), path.join(modules, 'typescript'));
  return dir;
}

/**
 * Runs `ncc build <entry> -o <out>` in `project` (src/index.ts into dist by
 * default; src/job.ts into dist-job for the whole-job consumer); resolves
 * what runProcess does.
 */
function nccBuild(project, { timeoutMs, track, entry = 'src/index.ts', out = 'dist' }) {
  return runProcess(process.execPath, [NCC, 'build', entry, '-o', out, '--no-cache'], {
    cwd: project,
    env: process.env,
    timeoutMs,
    track,
  });
}

module.exports = { CONSUMER_SRC, NCC, WASM, consumerSources, makeConsumerProject, nccBuild };

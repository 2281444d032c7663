'use strict';
// What checking a copy's bytes costs, on each side, per GiB: the pod's
// candidates (each utility reading a file of --mb random MB from the page
// cache, as it would read a FIFO), and the runner's (Node's SHA-256 and
// js-shim/cksum.js over the same bytes in 64 KiB chunks, as the shim gets
// them). The median of --runs, CPU-bound, one at a time. Why the pod checks
// with `cksum` where it has it: docs/CALLS.md, "Copies".
//
//   node bench/copy-check.js [--mb 1024] [--runs 3] [--write]
//
// --write writes bench/results/copy-check.md.

const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const cksum = require('../js-shim/cksum');
const { median } = require('./job/table');

const RESULTS = path.join(__dirname, 'results', 'copy-check.md');
const CHUNK = 64 * 1024;

// The pod's candidates: [label, program, args]; one that is not there is
// left out of the table.
const POD_TOOLS = [
  ['coreutils cksum', 'cksum', []],
  ['coreutils sha256sum', 'sha256sum', []],
  ['coreutils sha1sum', 'sha1sum', []],
  ['coreutils md5sum', 'md5sum', []],
  ['coreutils b2sum', 'b2sum', []],
  ['coreutils wc -c', 'wc', ['-c']],
  ['BusyBox sha256sum', 'busybox', ['sha256sum']],
  ['BusyBox md5sum', 'busybox', ['md5sum']],
  ['BusyBox cksum', 'busybox', ['cksum']],
];

function parseArgs(argv) {
  const o = { mb: 1024, runs: 3, write: false };
  for (let i = 2; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--write') o.write = true;
    else if (a === '--mb' || a === '--runs') {
      const n = Number(argv[++i]);
      if (!Number.isInteger(n) || n < 1 || n > 16384) throw new Error(`${a} takes a whole number from 1 to 16384`);
      o[a.slice(2)] = n;
    } else throw new Error(`unknown argument ${a}: node bench/copy-check.js [--mb 1024] [--runs 3] [--write]`);
  }
  return o;
}

/** ms of `program args < file`, or null when it is not there or fails. */
function podTool(program, args, file) {
  const fd = fs.openSync(file, 'r');
  try {
    const started = performance.now();
    const r = spawnSync(program, args, { stdio: [fd, 'ignore', 'ignore'], timeout: 600_000 });
    const ms = performance.now() - started;
    return r.status === 0 ? ms : null;
  } finally {
    fs.closeSync(fd);
  }
}

/** ms of `update` over `bytes` in CHUNK pieces. */
function runnerCheck(bytes, start, update) {
  const started = performance.now();
  let state = start();
  for (let at = 0; at < bytes.length; at += CHUNK) state = update(state, bytes.subarray(at, at + CHUNK));
  return performance.now() - started;
}

function main() {
  const o = parseArgs(process.argv);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-copy-check-'));
  try {
    const file = path.join(dir, 'bytes');
    const bytes = crypto.randomBytes(o.mb * 1024 * 1024);
    fs.writeFileSync(file, bytes);
    const perGiB = (ms) => (ms * 1024) / o.mb;
    const rows = [];
    for (const [label, program, args] of POD_TOOLS) {
      const runs = [];
      for (let i = 0; i < o.runs; i++) runs.push(podTool(program, args, file));
      if (runs.some((ms) => ms === null)) continue;
      rows.push(['pod', label, perGiB(median(runs))]);
    }
    const runner = [
      ['Node SHA-256 (the shim)', () => crypto.createHash('sha256'), (h, c) => h.update(c)],
      ['js-shim/cksum.js (the shim)', () => 0, (crc, c) => cksum.update(crc, c)],
    ];
    for (const [label, start, update] of runner) {
      const runs = [];
      for (let i = 0; i < o.runs; i++) runs.push(runnerCheck(bytes, start, update));
      rows.push(['runner', label, perGiB(median(runs))]);
    }
    const lines = [
      `What checking a copy's bytes costs per GiB: median of ${o.runs} over ${o.mb} MB (Node ${process.version}, ${os.cpus().length} cores, ${os.cpus()[0].model}).`,
      '',
      `    node bench/copy-check.js ${process.argv.slice(2).filter((a) => a !== '--write').join(' ')}`.trimEnd(),
      '',
      '| side | check | s per GiB | MB/s |',
      '| --- | --- | ---: | ---: |',
      ...rows.map(([side, label, ms]) => `| ${side} | ${label} | ${(ms / 1000).toFixed(2)} | ${Math.round(1024 / (ms / 1000))} |`),
      '',
    ];
    process.stdout.write(lines.join('\n'));
    if (o.write) fs.writeFileSync(RESULTS, `# ${lines[0]}\n${lines.slice(1).join('\n')}`);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main();

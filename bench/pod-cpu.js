'use strict';
// What a durable start costs the pod in CPU: the start step's script (as
// js-shim/pod-commands.js builds it, `true` as the command) run by the local
// `sh` under `perf stat -e task-clock` (children included), beside a plain
// `true`, interleaved; each start carries the clean-up of the one before, as
// a job's execs do. Prints a table of medians. CPU, not time: on a busy
// machine it moves far less than the latency benches do.
//
//   node bench/pod-cpu.js [--runs 60] [<pod-commands.js> ...]
//
// Other pod-commands.js files (an older commit's, say) are measured beside
// this one's. Needs `perf` (linux-perf).

const { spawnSync } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const args = process.argv.slice(2);
const at = args.indexOf('--runs');
const runs = at >= 0 ? Number(args[at + 1]) : 60;
const files = args.filter((a, i) => a !== '--runs' && i !== at + 1);
const shims = [path.join(__dirname, '..', 'js-shim', 'pod-commands.js'), ...files.map((f) => path.resolve(f))];
// The utilities the core checks for (src/durable/action.rs).
const UTILITIES = ['mkdir', 'mkfifo', 'setsid', 'tail', 'head', 'wc', 'cat', 'rm', 'sleep'];
const ENV = { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', HOME: os.tmpdir() };

if (!Number.isInteger(runs) || runs < 1 || runs > 1000) throw new Error('--runs: 1 to 1000');
if (spawnSync('perf', ['--version']).status !== 0) {
  console.error('perf is not installed (apt-get install linux-perf)');
  process.exit(2);
}

function taskClock(argv, env) {
  const r = spawnSync('perf', ['stat', '-x,', '-e', 'task-clock', '--', ...argv], { env, timeout: 10_000 });
  const m = /^([\d.]+),msec,task-clock/m.exec(String(r.stderr));
  if (r.status !== 0 || !m) throw new Error(`${argv[0]} ended with ${r.status}: ${String(r.stderr).slice(0, 400)}`);
  return Number(m[1]);
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pod-cpu-'));
const rows = [{ name: 'plain `true`', ms: [], run: () => taskClock(['true'], ENV) }];
for (const [i, file] of shims.entries()) {
  const { podCommand } = require(file);
  const env = { ...ENV, TMPDIR: fs.mkdtempSync(path.join(dir, 'tmp-')) };
  let before = null;
  rows.push({
    name: i === 0 ? 'a start (this commit)' : `a start (${file})`,
    ms: [],
    run: () => {
      const run = crypto.randomBytes(16).toString('hex');
      const command = podCommand({ step: 'start', run, utilities: UTILITIES, cleanup: before ? [before] : [] }, { out: 0, err: 0 }, ['true']);
      before = run;
      return taskClock(command, env);
    },
  });
}
try {
  for (let n = 0; n < runs; n++) for (const row of rows) row.ms.push(row.run());
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
console.log(`CPU per exec in the pod, \`perf stat -e task-clock\`, median of ${runs}, ${os.cpus().length} cores, sh = ${fs.realpathSync('/bin/sh')}\n`);
console.log('| what runs | CPU ms, median | min | max |\n| --- | ---: | ---: | ---: |');
for (const row of rows) console.log(`| ${row.name} | ${median(row.ms).toFixed(2)} | ${Math.min(...row.ms).toFixed(2)} | ${Math.max(...row.ms).toFixed(2)} |`);

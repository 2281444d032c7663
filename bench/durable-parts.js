'use strict';
// Where a durable start's time goes, in the pod: the start step's script (pod/start.sh as
// scripts/build-pod.js builds it) run by the local `sh`, whole and with
// one part taken out at a time, beside the plain command, interleaved. Wall
// time of each run (what a healthy exec waits for), medians. A part "taken
// out" is what the start would cost without it, not a way to run: the
// script is edited for the probe only.
//
//   node bench/durable-parts.js [--runs 60] [<pod-commands.js> ...]
//
// Rows: `true` and a command that writes one line to stdout and one to
// stderr. Columns: the plain command; the start whole; with no first tick
// (the reader woken only by the end); carrying the clean-up of six
// delivered runs (one `rm` in the background, as a job's next process
// does); then the whole start as other pod-commands.js files build it (an
// older commit's, say), measured beside it.

const { spawnSync } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const args = process.argv.slice(2);
const at = args.indexOf('--runs');
const runs = at >= 0 ? Number(args[at + 1]) : 60;
if (!Number.isInteger(runs) || runs < 1 || runs > 1000) throw new Error('--runs: 1 to 1000');
const others = args.filter((a, i) => a !== '--runs' && i !== at + 1).map((f) => path.resolve(f));
const { podCommand } = require('../js-shim/pod-commands');

const TMP = fs.mkdtempSync(path.join(os.tmpdir(), 'durable-parts-'));
const ENV = { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', TMPDIR: TMP };
const FOLDER = path.join(TMP, '.k8s-auth-preflight');
const OUTPUT = ['sh', '-c', 'echo one line; echo another >&2'];

// Each edit must find its text: a script changed since this probe was
// written makes it stop, not measure something else.
function edit(script, from, to) {
  if (typeof from === 'string' ? !script.includes(from) : !from.test(script)) throw new Error(`durable-parts: the start script has no ${JSON.stringify(from)}; update this probe`);
  return script.replace(from, to);
}

const PARTS = {
  whole: (script) => script,
  'no first tick': (script) => edit(script, /\(sleep "\$_K\w+"\|\|sleep 1;echo t >&3\) >\/dev\/null 6>&- &/, 'true'),
  'six clean-ups': (script) => script,
};
for (const file of others) PARTS[path.relative(process.cwd(), file)] = { build: require(file).podCommand };

const delivered = [];
function start(part, command) {
  const run = crypto.randomBytes(16).toString('hex');
  const cleanup = part === 'six clean-ups' ? delivered.splice(0, 6) : [];
  const build = PARTS[part].build || podCommand;
  // (An older pod-commands.js took the utilities from the action.)
  const utilities = ['mkdir', 'mkfifo', 'setsid', 'tail', 'head', 'wc', 'cat', 'rm', 'sleep'];
  const argv = build({ step: 'start', run, cleanup, utilities }, { out: 0, err: 0 }, command);
  if (!PARTS[part].build) argv[2] = PARTS[part](argv[2], run);
  return { argv, run };
}

function timed(argv) {
  const began = performance.now();
  const r = spawnSync(argv[0], argv.slice(1), { env: ENV, timeout: 10_000 });
  const ms = performance.now() - began;
  if (r.status !== 0) throw new Error(`${argv[0]} ended with ${r.status}: ${String(r.stderr).slice(0, 300)}`);
  return ms;
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

try {
  fs.mkdirSync(FOLDER, { recursive: true });
  const rows = [];
  for (const [label, command] of [['true', ['true']], ['a line to each stream', OUTPUT]]) {
    const times = { plain: [] };
    for (const part of Object.keys(PARTS)) times[part] = [];
    for (let i = 0; i < runs; i++) {
      times.plain.push(timed(command));
      for (const part of Object.keys(PARTS)) {
        const { argv, run } = start(part, command);
        times[part].push(timed(argv));
        // The run as a delivered one: the next start that carries it removes its files.
        fs.writeFileSync(path.join(FOLDER, `${run}.done`), '0 - -\n');
        delivered.push(run);
      }
    }
    const whole = median(times.whole);
    rows.push(`| ${label} | ${median(times.plain).toFixed(2)} | ${whole.toFixed(2)} | ${Object.keys(PARTS)
      .filter((p) => p !== 'whole')
      .map((p) => (PARTS[p].build ? median(times[p]).toFixed(2) : `${median(times[p]) - whole >= 0 ? '+' : ''}${(median(times[p]) - whole).toFixed(2)}`))
      .join(' | ')} |`);
  }
  const parts = Object.keys(PARTS).filter((p) => p !== 'whole');
  console.log(`Durable start, pod side: ${runs} interleaved runs of each, local sh (${fs.realpathSync('/bin/sh')}), Node ${process.version}, ${os.cpus().length} cores. Medians, ms; a part's column is its difference to the whole start; another file's, its whole start.`);
  console.log('');
  console.log(`| command | plain | durable start | ${parts.join(' | ')} |`);
  console.log(`| --- | ---: | ---: | ${parts.map(() => '---:').join(' | ')} |`);
  for (const row of rows) console.log(row);
} finally {
  fs.rmSync(TMP, { recursive: true, force: true });
}

'use strict';
// What the documented integration costs a healthy job on the hooks' real
// bundles (tests/hooks/build.js: each release built from its source, plain
// and integrated): per hook (prepare_job, a script step, a container step,
// cleanup_job), the median hook-process time of --jobs whole jobs per
// variant, plain and integrated interleaved (the first of each pair
// alternates), in one run, for each release and each workspace:
//
//   tiny   two files in the checkout, nothing in _temp but the runner's folders
//   real   a checkout the size of a real one (--files files in --dirs
//          folders, 0.2 to 16 KB each) and --temp-files files in _temp
//   big    one file of --big-mb MB in the checkout
//
// Each job has its own runner folders (so the integrated prepare_job asks
// the API its one review, as on a runner) and runs in a network namespace
// with the loopback apiserver (tests/js/support/netns-job-server.js, every
// exec a real process in the pod's folder), no fault. A job whose hooks do
// not all do what they should (exit codes, output) stops the run: a fast
// wrong job is no measurement. Also counted: the API requests and the execs
// of each hook.
//
//   node tests/js/support/prepare.js && node tests/hooks/build.js   # once
//   node bench/hooks.js [--jobs 10] [--releases v0.8.1,main] [--workspaces tiny,real,big]
//       [--files 2000] [--dirs 100] [--temp-files 500] [--big-mb 1024] [--write [--out file]]
//       [--faults reset,change [--fault-mb 256]]
//
// --faults replaces the healthy jobs by prepare_job alone, under a fault
// while its copy into the pod is open (the checkout of each --workspaces
// and one file of --fault-mb MB, so that the copy stays open for a while):
//   reset   300 ms after the copy's exec opened, the apiserver's port
//           answers tcp-reset for RESET_MS (iptables, in the job's
//           namespace)
//   change  a checkout file grows by a line every 50 ms for CHANGE_MS
// Each row gives the median time, how many prepare_jobs succeeded with the
// pod holding the checkout whole (the growing file a prefix of what the
// runner ends with), and the execs.
//
// --write writes bench/results/hooks-healthy.md (or --out). Needs root, ip
// and iptables.

const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const { ROOT, RELEASES, missingUpstream } = require('../tests/hooks/upstream');
const { bundleOf } = require('../tests/hooks/build');
const { POD_MOUNTS, makeRunner, inputs, runHook, withoutCommands, describeHook, podVolume } = require('../tests/hooks/job');
const { canUseNetns, createNetns } = require('../tests/support/netns');
const { startNsServer } = require('../tests/js/support/durable-job');
const { median } = require('./job/table');

const RESULTS = path.join(ROOT, 'bench', 'results', 'hooks-healthy.md');
const HOOKS = ['prepare_job', 'run_script_step', 'run_container_step', 'cleanup_job'];
const VARIANTS = ['plain', 'integrated'];
const HOOK_TIMEOUT_MS = 300_000;
const FAULTS = ['reset', 'change'];
const RESET_MS = 2000;
const CHANGE_MS = 3000;
const FAULT_WAIT_MS = 60_000;
const SERVER_MAX_RUN_MS = 6 * 3600_000;
const USAGE = 'usage: node bench/hooks.js [--jobs 10] [--releases v0.8.1,main] [--workspaces tiny,real,big] [--files 2000] [--dirs 100] [--temp-files 500] [--big-mb 1024] [--write [--out file]] [--faults reset,change [--fault-mb 256]]';

function parseArgs(argv) {
  const o = { jobs: 10, releases: RELEASES.map((r) => r.name), workspaces: ['tiny', 'real'], files: 2000, dirs: 100, tempFiles: 500, bigMb: 1024, write: false, out: RESULTS, faults: null, faultMb: 256 };
  const count = (flag, v, min) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) throw new Error(`${flag} wants a whole number >= ${min}, got ${JSON.stringify(v)}\n${USAGE}`);
    return n;
  };
  const list = (flag, v, allowed) => {
    const items = String(v || '').split(',').filter(Boolean);
    const bad = items.filter((x) => !allowed.includes(x));
    if (!items.length || bad.length) throw new Error(`${flag} takes ${allowed.join(', ')}; got ${JSON.stringify(v)}\n${USAGE}`);
    return items;
  };
  for (let i = 2; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--jobs') o.jobs = count(a, argv[++i], 1);
    else if (a === '--releases') o.releases = list(a, argv[++i], RELEASES.map((r) => r.name));
    else if (a === '--workspaces') o.workspaces = list(a, argv[++i], ['tiny', 'real', 'big']);
    else if (a === '--big-mb') o.bigMb = count(a, argv[++i], 1);
    else if (a === '--out') o.out = path.resolve(String(argv[++i]));
    else if (a === '--files') o.files = count(a, argv[++i], 1);
    else if (a === '--dirs') o.dirs = count(a, argv[++i], 1);
    else if (a === '--temp-files') o.tempFiles = count(a, argv[++i], 0);
    else if (a === '--write') o.write = true;
    else if (a === '--faults') o.faults = list(a, argv[++i], FAULTS);
    else if (a === '--fault-mb') o.faultMb = count(a, argv[++i], 1);
    else throw new Error(`unknown argument ${JSON.stringify(a)}\n${USAGE}`);
  }
  return o;
}

/** The runner's files for a workspace: { files, tempFiles } as makeRunner takes them (the same bytes every job). */
function workspaceFiles(kind, o) {
  if (kind === 'tiny') return { files: { 'README.md': 'the checkout\n', 'src/main.c': 'int main(void) { return 0; }\n' }, tempFiles: {} };
  if (kind === 'big') return { files: { 'README.md': 'the checkout\n', 'big.bin': Buffer.alloc(o.bigMb * 1024 * 1024, 7) }, tempFiles: {} };
  const files = { 'README.md': 'the checkout\n' };
  const sized = (seed) => {
    const bytes = 200 + (crypto.createHash('sha256').update(seed).digest().readUInt32BE(0) % 16_000);
    return crypto.createHash('sha256').update(`${seed}:body`).digest('hex').repeat(Math.ceil(bytes / 64)).slice(0, bytes);
  };
  for (let i = 0; i < o.files - 1; i++) files[`src/d${i % o.dirs}/f${i}.txt`] = sized(`w${i}`);
  const tempFiles = {};
  for (let i = 0; i < o.tempFiles; i++) tempFiles[`_actions/a${i % 10}/f${i}.js`] = sized(`t${i}`);
  return { files, tempFiles };
}

const SCRIPT = 'echo "the step"\necho "RESULT=ok" >> "$GITHUB_ENV"\n';

/** One healthy job through `bundle`: resolves { ms: { hook: ms }, requests: { hook: n } }, or throws with what went wrong. */
async function oneJob({ ns, server }, bundle, files) {
  const runner = makeRunner(files);
  try {
    const counts = async () => ({ requests: (await server.call('requests')).length, execs: (await server.call('execs')).length });
    const run = async (command, args, state) => {
      const before = await counts();
      const r = await runHook({ spawn: ns.spawn, bundle, runner, kubeconfig: server.kubeconfig, command, args, state, timeoutMs: HOOK_TIMEOUT_MS });
      const after = await counts();
      return { r, requests: after.requests - before.requests, execs: after.execs - before.execs };
    };
    const out = { ms: {}, requests: {}, execs: {} };
    const keep = (hook, { r, requests, execs }, check) => {
      if (!check(r)) throw new Error(`${bundle}: an unhealthy job\n${describeHook(hook, r)}`);
      out.ms[hook] = r.ms;
      out.requests[hook] = requests;
      out.execs[hook] = execs;
      return r;
    };
    const prepare = keep('prepare_job', await run('prepare_job', inputs.prepareJob({ services: false })), (r) => r.code === 0 && r.response && r.response.state);
    const state = prepare.response.state;
    const env = { GITHUB_ENV: '/__w/_temp/_runner_file_commands/set_env_step' };
    keep('run_script_step', await run('run_script_step', inputs.runScriptStep(runner.writeStepScript(SCRIPT), env), state), (r) => r.code === 0 && withoutCommands(r.stdout).includes('the step\n') && fs.readFileSync(path.join(runner.temp, '_runner_file_commands', 'set_env_step'), 'utf8') === 'RESULT=ok\n');
    keep('run_container_step', await run('run_container_step', inputs.runContainerStep('echo "the container step"; cat README.md'), state), (r) => r.code === 0 && /the container step\nthe checkout\n/.test(r.stdout));
    keep('cleanup_job', await run('cleanup_job', {}, state), (r) => r.code === 0);
    return out;
  } finally {
    runner.remove();
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Whether the pod's checkout holds `files` whole; `growing`: a file that need only be a prefix of the runner's. */
function podHolds(root, files, runnerWorkspace, growing) {
  for (const [rel, content] of Object.entries(files)) {
    const file = path.join(root, rel);
    if (!fs.existsSync(file)) return false;
    const got = fs.readFileSync(file);
    if (rel === growing) {
      const now = fs.readFileSync(path.join(runnerWorkspace, rel));
      if (got.length > now.length || !got.equals(now.subarray(0, got.length))) return false;
    } else if (!got.equals(Buffer.from(content))) return false;
  }
  return true;
}

/** prepare_job alone through `bundle`, under `fault` once its copy into the pod is open: { ms, ok, injected, execs }. */
async function faultJob({ ns, server, podRoot }, bundle, files, fault) {
  const runner = makeRunner({ files });
  try {
    const before = (await server.call('execs')).length;
    const growing = 'README.md';
    let ended = false;
    const injector = (async () => {
      const until = performance.now() + FAULT_WAIT_MS;
      while (!ended && performance.now() < until) {
        const copy = (await server.call('execs')).slice(before).find((e) => e.stdinRequested && e.outcome === 'running');
        if (copy) {
          await sleep(300);
          if (fault === 'reset') await ns.block({ port: server.port, action: 'reset', ms: RESET_MS });
          else {
            const stop = performance.now() + CHANGE_MS;
            for (let i = 0; performance.now() < stop && i < CHANGE_MS / 10; i++) {
              fs.appendFileSync(path.join(runner.workspace, growing), `a line written while the copy ran, ${i}\n`);
              await sleep(50);
            }
          }
          return true;
        }
        await sleep(20);
      }
      return false;
    })();
    const r = await runHook({ spawn: ns.spawn, bundle, runner, kubeconfig: server.kubeconfig, command: 'prepare_job', args: inputs.prepareJob({ services: false }), timeoutMs: HOOK_TIMEOUT_MS });
    ended = true;
    const injected = await injector;
    const execs = (await server.call('execs')).length - before;
    const checkout = path.join(podVolume(podRoot, runner.jobPod, '/__w'), 'repo', 'repo');
    const ok = r.code === 0 && podHolds(checkout, files, runner.workspace, fault === 'change' ? growing : null);
    if (r.response && r.response.state) await runHook({ spawn: ns.spawn, bundle, runner, kubeconfig: server.kubeconfig, command: 'cleanup_job', args: {}, state: r.response.state, timeoutMs: HOOK_TIMEOUT_MS });
    return { ms: r.ms, ok, injected, execs };
  } finally {
    runner.remove();
  }
}

async function faultRows(o) {
  const rows = [];
  for (const name of o.releases) {
    for (const kind of o.workspaces) {
      for (const fault of o.faults) {
        const ns = await createNetns(null);
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-hooks-'));
        const podRoot = path.join(dir, 'pods');
        const server = await startNsServer(ns, { podRoot, dir, podMounts: POD_MOUNTS, maxRunMs: SERVER_MAX_RUN_MS });
        try {
          const files = { ...workspaceFiles(kind, o).files, 'fault.bin': Buffer.alloc(o.faultMb * 1024 * 1024, 7) };
          const got = { plain: [], integrated: [] };
          for (let i = 0; i < o.jobs; i++) {
            const order = i % 2 === 0 ? VARIANTS : [...VARIANTS].reverse();
            for (const v of order) got[v].push(await faultJob({ ns, server, podRoot }, bundleOf({ name }, v), files, fault));
            process.stderr.write(`${name} ${kind} ${fault}: ${i + 1}/${o.jobs} job pairs\n`);
          }
          const of = (v, key) => median(got[v].map((j) => j[key]));
          const whole = (v) => `${got[v].filter((j) => j.ok).length} of ${got[v].length}`;
          const missed = VARIANTS.reduce((n, v) => n + got[v].filter((j) => !j.injected).length, 0);
          rows.push({ release: name, workspace: kind, fault, plain: of('plain', 'ms'), integrated: of('integrated', 'ms'), whole: { plain: whole('plain'), integrated: whole('integrated') }, execs: { plain: of('plain', 'execs'), integrated: of('integrated', 'execs') }, missed });
        } finally {
          await server.close();
          await ns.remove();
          fs.rmSync(dir, { recursive: true, force: true });
        }
      }
    }
  }
  return rows;
}

const fmtMs = (ms) => (ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${Math.round(ms)} ms`);

async function main() {
  const o = parseArgs(process.argv);
  const missing = missingUpstream();
  if (missing) throw new Error(missing);
  const netns = canUseNetns();
  if (!netns.ok) throw new Error(`bench/hooks.js needs network namespaces: ${netns.reason}`);
  for (const name of o.releases) for (const v of VARIANTS) if (!fs.existsSync(path.join(bundleOf({ name }, v), 'index.js'))) throw new Error(`no ${name} ${v} bundle: run node tests/hooks/build.js`);

  const started = performance.now();
  if (o.faults) {
    const rows = await faultRows(o);
    const describe = (kind) => ({ tiny: 'tiny', real: `real (${o.files} files)`, big: `one ${o.bigMb} MB file` })[kind];
    const what = { reset: `tcp-reset for ${RESET_MS / 1000} s`, change: `a file growing for ${CHANGE_MS / 1000} s` };
    const lines = [
      `prepare_job through the hooks' real bundles under a fault while its copy into the pod is open (the checkout and a ${o.faultMb} MB file), plain and integrated: median of ${o.jobs} jobs each, interleaved, one run (${fmtMs(performance.now() - started)} in all; Node ${process.version}, ${os.cpus().length} cores).`,
      '',
      '    node bench/hooks.js ' + process.argv.slice(2).filter((a) => a !== '--write').join(' '),
      '',
      '| release | workspace | fault | plain | integrated | succeeded with the checkout whole, plain / integrated | execs, plain / integrated |',
      '| --- | --- | --- | ---: | ---: | --- | ---: |',
      ...rows.map((r) => `| ${r.release} | ${describe(r.workspace)} | ${what[r.fault]}${r.missed ? ` (not injected in ${r.missed} jobs)` : ''} | ${fmtMs(r.plain)} | ${fmtMs(r.integrated)} | ${r.whole.plain} / ${r.whole.integrated} | ${r.execs.plain} / ${r.execs.integrated} |`),
      '',
    ];
    process.stdout.write(lines.join('\n'));
    if (o.write) fs.writeFileSync(o.out, `# ${lines[0]}\n${lines.slice(1).join('\n')}`);
    return;
  }
  const rows = [];
  for (const name of o.releases) {
    for (const kind of o.workspaces) {
      const ns = await createNetns(null);
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-hooks-'));
      const server = await startNsServer(ns, { podRoot: path.join(dir, 'pods'), dir, podMounts: POD_MOUNTS, maxRunMs: SERVER_MAX_RUN_MS });
      try {
        const files = workspaceFiles(kind, o);
        const got = { plain: [], integrated: [] };
        for (let i = 0; i < o.jobs; i++) {
          const order = i % 2 === 0 ? VARIANTS : [...VARIANTS].reverse();
          for (const v of order) got[v].push(await oneJob({ ns, server }, bundleOf({ name }, v), files));
          process.stderr.write(`${name} ${kind}: ${i + 1}/${o.jobs} job pairs\n`);
        }
        for (const hook of HOOKS) {
          const m = Object.fromEntries(VARIANTS.map((v) => [v, median(got[v].map((j) => j.ms[hook]))]));
          const req = Object.fromEntries(VARIANTS.map((v) => [v, median(got[v].map((j) => j.requests[hook]))]));
          const execs = Object.fromEntries(VARIANTS.map((v) => [v, median(got[v].map((j) => j.execs[hook]))]));
          rows.push({ release: name, workspace: kind, hook, plain: m.plain, integrated: m.integrated, ratio: m.integrated / m.plain, requests: req, execs });
        }
      } finally {
        await server.close();
        await ns.remove();
        fs.rmSync(dir, { recursive: true, force: true });
      }
    }
  }

  const describeWorkspace = (kind) => ({ tiny: 'tiny', real: `real (${o.files} files, ${o.tempFiles} in _temp)`, big: `one ${o.bigMb} MB file` })[kind];
  const lines = [
    `Healthy jobs through the hooks' real bundles, plain and integrated: median of ${o.jobs} jobs each, interleaved, one run (${fmtMs(performance.now() - started)} in all; Node ${process.version}, ${os.cpus().length} cores).`,
    '',
    '    node bench/hooks.js ' + process.argv.slice(2).filter((a) => a !== '--write').join(' '),
    '',
    '| release | workspace | hook | plain | integrated | integrated / plain | API requests, plain / integrated | execs, plain / integrated |',
    '| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |',
    ...rows.map((r) => `| ${r.release} | ${describeWorkspace(r.workspace)} | ${r.hook} | ${fmtMs(r.plain)} | ${fmtMs(r.integrated)} | ${r.ratio.toFixed(3)}x | ${r.requests.plain} / ${r.requests.integrated} | ${r.execs.plain} / ${r.execs.integrated} |`),
    '',
  ];
  process.stdout.write(lines.join('\n'));
  if (o.write) fs.writeFileSync(o.out, `# ${lines[0]}\n${lines.slice(1).join('\n')}`);
}

main().catch((err) => {
  process.stderr.write(`${err.stack || err}\n`);
  process.exitCode = 1;
});

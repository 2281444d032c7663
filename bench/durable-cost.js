'use strict';
// What a durable exec costs a healthy exec: one exec of a short command
// through resilientExec with durable execs on and off, interleaved, against
// the loopback apiserver with a real container (each exec a local process),
// through the installed package and client-node. Prints a table of medians.
//
//   node bench/durable-cost.js [--runs 60] [--write]
//
// Needs `node tests/js/support/prepare.js`. PREFLIGHT_CLIENT picks 1x or 2x.

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { Writable } = require('node:stream');

const { consumer, k8s, preflight, NAMESPACE, fastEnv, loadKubeConfig } = require('../tests/js/support/harness');
const { startApiServer } = require('../tests/support/apiserver');
const { fullRole } = require('../tests/js/support/roles');

const args = process.argv.slice(2);
const runs = Number(args.includes('--runs') ? args[args.indexOf('--runs') + 1] : 60);
const write = args.includes('--write');
const RUN_LIMIT_MS = 30_000;

const COMMANDS = [
  ['true', ['true']],
  ['1 MiB to stdout and 1 MiB to stderr', ['sh', '-c', 'head -c 1048576 /dev/zero; head -c 1048576 /dev/zero >&2']],
  ['a step script (40 lines, 4 KB)', ['sh', '-c', 'i=0; while [ $i -lt 40 ]; do echo "line $i of the step: $(printf %080d $i)"; i=$((i + 1)); done']],
];

function sink() {
  return new Writable({ write: (_c, _e, done) => done() });
}

function once(api, command) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no status')), RUN_LIMIT_MS);
    const started = performance.now();
    api.exec(NAMESPACE, 'job-pod', 'job', command, sink(), sink(), null, false, (status) => {
      clearTimeout(timer);
      if (status.status !== 'Success') reject(new Error(JSON.stringify(status)));
      else resolve(performance.now() - started);
    }).catch(reject);
  });
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

(async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'durable-cost-'));
  const server = await startApiServer({ token: 'bench-token', role: fullRole(), namespace: NAMESPACE, podRunningAfterMs: 0, podRoot: path.join(dir, 'pods') });
  try {
    server.seed('pods', NAMESPACE, { metadata: { name: 'job-pod', namespace: NAMESPACE }, spec: { containers: [{ name: 'job', image: 'x' }] } });
    const kc = loadKubeConfig(server.writeKubeconfig(path.join(dir, 'kubeconfig')));
    const quiet = { debug() {}, info() {}, warning() {}, error() {} };
    const apis = {
      plain: preflight.resilientExec(kc, { env: fastEnv({ DURABLE_EXEC: 'off' }), logger: quiet }),
      durable: preflight.resilientExec(kc, { env: fastEnv({ DURABLE_EXEC: 'on' }), logger: quiet }),
    };
    const rows = [];
    for (const [name, command] of COMMANDS) {
      const times = { plain: [], durable: [] };
      // Warm-up, then interleaved: each pair in alternating order.
      for (const api of Object.values(apis)) await once(api, command);
      for (let i = 0; i < runs; i++) {
        const order = i % 2 ? ['plain', 'durable'] : ['durable', 'plain'];
        for (const mode of order) times[mode].push(await once(apis[mode], command));
      }
      const p = median(times.plain);
      const d = median(times.durable);
      rows.push(`| ${name} | ${p.toFixed(1)} | ${d.toFixed(1)} | +${(d - p).toFixed(1)} | ${(d / p).toFixed(2)} |`);
    }
    const table = [
      `Durable exec cost: ${runs} interleaved execs of each, ${consumer.flavour} (client-node ${consumer.clientVersion}), Node ${process.version}, ${os.cpus().length} cores; loopback apiserver with a real container.`,
      '',
      '| command | plain exec, median ms | durable exec, median ms | difference | ratio |',
      '| --- | --- | --- | --- | --- |',
      ...rows,
      '',
      "A durable exec is one exec when healthy (its start streams the output and exits with the command's code); its clean-up is made in passing by the next start in the pod, or 2 s later. The difference is mostly the pod side: the processes a start adds (mkfifo, the waiter and the reader (forks), two relays, the command's setsid, a tick), each about a millisecond on a 2-core machine; with output, the relays' and the reader's copies.",
    ].join('\n');
    console.log(table);
    if (write) {
      const out = path.join(__dirname, 'results', `durable-cost-${consumer.flavour}.md`);
      fs.writeFileSync(out, `${table}\n\nCommand: \`PREFLIGHT_CLIENT=${consumer.flavour} node bench/durable-cost.js --runs ${runs} --write\`\n`);
      console.log(`wrote ${path.relative(process.cwd(), out)}`);
    }
  } finally {
    await server.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
})().catch((error) => {
  console.error(error);
  process.exit(1);
});

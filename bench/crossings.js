'use strict';
// Boundary crossings per check, counted by a wrapper around the installed
// package's core module (every constructor, method, function and `free`
// call from the shim into the WebAssembly core): a cold check (no record;
// the runner key created), a second cold check (the key in place), and a
// check answered from the record. Prints a table; works on any build of the
// package, so a before/after pair can be compared.
//
//   node bench/crossings.js [consumer folder, default .tools/consumer-1x]

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { createRequire } = require('node:module');

const ROOT = path.resolve(__dirname, '..');
const consumerDir = path.resolve(process.argv[2] || path.join(ROOT, '.tools', 'consumer-1x'));
const installed = path.join(consumerDir, 'node_modules', 'k8s-auth-preflight');
const corePath = path.join(installed, 'pkg', 'k8s_auth_preflight.js');

let log = [];
const count = (name) => log.push(name);

function wrappedCore() {
  const real = require(corePath);
  const wrapFn = (name, fn) =>
    function counted(...args) {
      count(name);
      return fn.apply(this, args);
    };
  const out = {};
  for (const [key, value] of Object.entries(real)) {
    if (typeof value !== 'function') {
      out[key] = value;
      continue;
    }
    if (!/^class\b/.test(Function.prototype.toString.call(value))) {
      out[key] = wrapFn(key, value);
      continue;
    }
    for (const m of Object.getOwnPropertyNames(value.prototype)) {
      const d = Object.getOwnPropertyDescriptor(value.prototype, m);
      if (m === 'constructor' || m.startsWith('__') || typeof d.value !== 'function') continue;
      Object.defineProperty(value.prototype, m, { ...d, value: wrapFn(`${key}.${m}`, d.value) });
    }
    out[key] = new Proxy(value, {
      construct(target, args) {
        count(`new ${key}`);
        return Reflect.construct(target, args);
      },
      get(target, k, receiver) {
        const v = Reflect.get(target, k, receiver);
        return typeof v === 'function' && k !== 'prototype' ? wrapFn(`${key}.${String(k)}`, v.bind(target)) : v;
      },
    });
  }
  return out;
}

async function main() {
  const { startApiServer } = require(path.join(ROOT, 'tests', 'support', 'apiserver'));
  const { fullRole } = require(path.join(ROOT, 'tests', 'js', 'support', 'roles'));
  const token = 'bench-crossings-token-0123456789abcdef';
  const server = await startApiServer({ token, role: fullRole(), namespace: 'ci' });
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'preflight-crossings-'));
  try {
    const kubeconfig = path.join(work, 'kubeconfig.yaml');
    server.writeKubeconfig(kubeconfig);
    require.cache[corePath] = { id: corePath, filename: corePath, loaded: true, exports: wrappedCore() };
    const load = createRequire(path.join(consumerDir, 'package.json'));
    const pf = load('k8s-auth-preflight');
    const k8s = load('@kubernetes/client-node');
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(kubeconfig);
    const env = { HOME: path.join(work, 'home'), ACTIONS_RUNNER_PREFLIGHT_RULES_REVIEW: 'off' };
    fs.mkdirSync(env.HOME);
    const logger = { info() {}, warning() {}, error() {}, debug() {} };
    const rows = [];
    const run = async (label, cacheDir) => {
      log = [];
      let firstSend = null;
      const check = pf.createAuthPreflight({
        kubeConfig: kc,
        namespace: 'ci',
        cacheDir,
        env,
        logger,
        observer: (e) => {
          if (e.type === 'send' && firstSend === null) firstSend = log.length;
        },
      });
      const ok = await check.isAuthPermissionsOK();
      rows.push({ label, ok, before: firstSend === null ? '-' : firstSend, all: log.length, names: [...new Set(log)].join(', ') });
    };
    const dir1 = fs.mkdtempSync(path.join(work, 'c1-'));
    await run('cold (runner key created)', dir1);
    await run('warm (record answers)', dir1);
    await run('cold (runner key in place)', fs.mkdtempSync(path.join(work, 'c2-')));
    console.log(`Boundary crossings per check, ${installed} (command: node bench/crossings.js ${process.argv[2] || ''})\n`);
    console.log('| check | verdict | crossings before the first request | crossings in all | what crossed |');
    console.log('| --- | --- | ---: | ---: | --- |');
    for (const r of rows) console.log(`| ${r.label} | ${r.ok} | ${r.before} | ${r.all} | ${r.names} |`);
  } finally {
    await server.close();
    fs.rmSync(work, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

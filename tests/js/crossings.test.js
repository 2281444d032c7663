'use strict';
// Boundary crossings per check: every call from the shim into the
// WebAssembly core (a constructor, a method, a function, a `free`) is
// counted by a wrapper around the installed package's core module. A
// crossing costs a conversion of everything it carries; a check should
// cross a handful of times before its first request, not a dozen.
//
// - a cold check with a healthy server: at most 6 crossings before its
//   first request (the runner key file is created on the way);
// - a check answered from the record: at most 4 crossings in all;
// - the settings environment crosses once per check (only the check's
//   constructor takes it), so the core parses it once.

const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');

const { consumer, setup, fastEnv, tempDir, captureLogger } = require('./support/harness');

const installedShim = path.join(consumer.consumerDir, 'node_modules', 'k8s-auth-preflight', 'js-shim');
const installedCorePath = path.join(consumer.consumerDir, 'node_modules', 'k8s-auth-preflight', 'pkg', 'k8s_auth_preflight.js');

let currentLog = [];

/**
 * A fresh copy of the installed shim whose core is wrapped: every crossing
 * is appended to `log` as `{ name, args }`.
 */
function countingShim(log) {
  const real = require(installedCorePath);
  // Class methods are wrapped once per process; they append to the log of
  // the latest wrapper.
  currentLog = log;
  const wrapFunction = (name, fn) =>
    function counted(...args) {
      currentLog.push({ name, args });
      return fn.apply(this, args);
    };
  const wrapClass = (name, Real) => {
    const proto = Real.prototype;
    for (const key of Object.getOwnPropertyNames(proto)) {
      if (key === 'constructor') continue;
      const descriptor = Object.getOwnPropertyDescriptor(proto, key);
      if (typeof descriptor.value !== 'function') continue;
      if (descriptor.value.__counted) continue;
      const method = descriptor.value;
      const counted = wrapFunction(`${name}.${key}`, method);
      counted.__counted = true;
      Object.defineProperty(proto, key, { ...descriptor, value: counted });
    }
    return new Proxy(Real, {
      construct(target, args) {
        currentLog.push({ name: `new ${name}`, args });
        return Reflect.construct(target, args);
      },
      get(target, key, receiver) {
        const value = Reflect.get(target, key, receiver);
        return typeof value === 'function' && key !== 'prototype' ? wrapFunction(`${name}.${String(key)}`, value.bind(target)) : value;
      },
    });
  };
  const wrapped = {};
  for (const [key, value] of Object.entries(real)) {
    const isClass = typeof value === 'function' && /^class\b/.test(Function.prototype.toString.call(value));
    wrapped[key] = isClass ? wrapClass(key, value) : typeof value === 'function' ? wrapFunction(key, value) : value;
  }
  // Load the shim anew, with the wrapped core in the module cache.
  for (const key of Object.keys(require.cache)) {
    if (key.startsWith(installedShim)) delete require.cache[key];
  }
  const saved = require.cache[installedCorePath];
  require.cache[installedCorePath] = { ...saved, exports: wrapped };
  try {
    return require(path.join(installedShim, 'index.js'));
  } finally {
    require.cache[installedCorePath] = saved;
  }
}

function newCountedCheck(shim, ctx, cacheDir, log) {
  return shim.createAuthPreflight({
    kubeConfig: ctx.kc,
    namespace: 'ci',
    cacheDir,
    env: fastEnv(),
    logger: captureLogger().logger,
    observer: (event) => {
      if (event.type === 'send') log.push({ name: 'SEND' });
    },
  });
}

// `free` crosses; the JS helper it calls first (`__destroy_into_raw`) does not.
const crossings = (entries) => entries.filter((e) => e.name !== 'SEND' && !e.name.includes('.__'));
const envCrossings = (entries) =>
  entries.filter((e) => e.args && e.args.some((a) => a && typeof a === 'object' && 'ACTIONS_RUNNER_PREFLIGHT_SEED' in a));

test(`[${consumer.flavour}] a cold check crosses at most 6 times before its first request; a warm one at most 4 in all`, { timeout: 30_000 }, async (t) => {
  const ctx = await setup(t);
  const log = [];
  const shim = countingShim(log);
  const cacheDir = tempDir(t, 'preflight-crossings');

  log.length = 0;
  assert.equal(await newCountedCheck(shim, ctx, cacheDir, log).isAuthPermissionsOK(), true);
  const firstSend = log.findIndex((e) => e.name === 'SEND');
  assert.ok(firstSend > 0, 'the cold check sent requests');
  const before = crossings(log.slice(0, firstSend));
  assert.ok(before.length <= 6, `cold: ${before.length} crossings before the first request: ${before.map((e) => e.name).join(', ')}`);
  assert.equal(envCrossings(log).length, 1, 'the settings cross once per check');
  t.diagnostic(`cold: ${before.length} crossings before the first request (${before.map((e) => e.name).join(', ')})`);

  log.length = 0;
  const warm = newCountedCheck(shim, ctx, cacheDir, log);
  assert.equal(await warm.isAuthPermissionsOK(), true);
  assert.equal(warm.lastOutcome().source, 'cache');
  const all = crossings(log);
  assert.ok(
    all.length <= 4,
    `warm: ${all.length} crossings: ${all.map((e) => `${e.name} ${e.name.endsWith('step') ? JSON.stringify(e.args[1]).slice(0, 300) : ''}`).join('\n')}`,
  );
  assert.equal(envCrossings(log).length, 1, 'the settings cross once per check');
  t.diagnostic(`warm: ${all.length} crossings in all`);

  // A second cold check on the same runner (its key file exists now).
  log.length = 0;
  assert.equal(await newCountedCheck(shim, ctx, tempDir(t, 'preflight-crossings-2'), log).isAuthPermissionsOK(), true);
  const again = crossings(log.slice(0, log.findIndex((e) => e.name === 'SEND')));
  assert.ok(again.length <= 6, `cold again: ${again.length}`);
  t.diagnostic(`cold with the runner key in place: ${again.length} crossings before the first request`);
});

test(`[${consumer.flavour}] the counting wrapper sees every crossing (control)`, { timeout: 10_000 }, () => {
  // The wrapper must count class methods and functions alike, or the limits
  // above would pass on an empty log.
  const log = [];
  const shim = countingShim(log);
  log.length = 0;
  const core = require(installedCorePath);
  assert.ok(typeof core.Check === 'function', 'the core exports Check');
  assert.equal(Array.isArray(shim.defaultRequiredPermissions), true);
  const before = log.length;
  // retryK8sApiCall crosses through its Settings' call and the call's step: counted.
  return shim.retryK8sApiCall(async () => 'ok', { env: fastEnv() }).then((value) => {
    assert.equal(value, 'ok');
    const names = log.slice(before).map((e) => e.name);
    assert.ok(names.includes('Settings.call'), names.join(', '));
    assert.ok(names.includes('Call.step'), names.join(', '));
    assert.ok(names.includes('Call.free'), names.join(', '));
  });
});

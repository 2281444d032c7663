'use strict';
// Tests for netns.js: real kernel faults (iptables rules in a network
// namespace of the test's own) on loopback TCP connections, seen from a probe
// process (tcp-probe.js) that runs inside the namespace. Needs root, ip and
// iptables: skipped with the reason elsewhere, failed with it under CI=true.
// Run: node --test --test-concurrency=1 tests/support/netns.test.js

const assert = require('node:assert/strict');
const path = require('node:path');
const { describe, it, after } = require('node:test');

const { canUseNetns, requireNetns, createNetns, netnsExists, listNetns } = require('./netns');

const PROBE = path.join(__dirname, 'tcp-probe.js');
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const made = [];

after(() => {
  setTimeout(() => {
    process.stderr.write(`event loop still busy 5 s after the last test: ${process.getActiveResourcesInfo().join(', ')}\n`);
    process.exit(1);
  }, 5000).unref();
});

/** A namespace with the probe in it, listening: { ns, probe, port, events(from), next(pred, ms) }. */
async function probeIn(t) {
  const ns = await createNetns(t);
  made.push(ns.name);
  const probe = ns.spawnNode([PROBE, '30000']);
  const events = (from = 0) => probe.lines.slice(from).map((l) => JSON.parse(l));
  const next = async (pred, timeoutMs, from = 0) => JSON.parse(await probe.waitForLine((l) => pred(JSON.parse(l)), timeoutMs, from));
  probe.send(JSON.stringify({ op: 'listen' }));
  const { port } = await next((e) => e.ev === 'listening', 5000);
  return { ns, probe, port, events, next };
}

// Opens client `id` and waits for its first pong.
async function openClient(p, id) {
  const from = p.probe.lines.length;
  p.probe.send(JSON.stringify({ op: 'connect', id, port: p.port, pingMs: 100 }));
  await p.next((e) => e.ev === 'pong' && e.id === id, 5000, from);
}

// A new client's first outcome: 'pong' or the error code; `ms` bounds the wait (null: nothing came).
async function tryConnect(p, id, ms) {
  const from = p.probe.lines.length;
  p.probe.send(JSON.stringify({ op: 'connect', id, port: p.port, pingMs: 100 }));
  try {
    const e = await p.next((x) => x.id === id && (x.ev === 'pong' || x.ev === 'error'), ms, from);
    return e.ev === 'pong' ? 'pong' : e.code;
  } catch {
    return null;
  } finally {
    p.probe.send(JSON.stringify({ op: 'close', id }));
  }
}

// What client `id` did since line `from`: { pongs, errors }.
function since(p, id, from) {
  const evs = p.events(from).filter((e) => e.id === id);
  return { pongs: evs.filter((e) => e.ev === 'pong').length, errors: evs.filter((e) => e.ev === 'error').map((e) => e.code) };
}

describe('network namespaces and iptables rules (netns.js)', { timeout: 60_000 }, () => {
  it('canUseNetns says whether this machine can, with the reason when not, and names the iptables it uses', () => {
    const v = canUseNetns();
    assert.equal(typeof v.ok, 'boolean');
    if (v.ok) {
      assert.equal(v.reason, null);
      assert.match(v.iptables, /^iptables-(nft|legacy)$/);
    } else {
      assert.ok(v.reason.length > 0);
    }
  });

  it('tcp-reset: an open connection is reset (ECONNRESET) within a second and a new connect is refused; after the rule, connections work again', async (t) => {
    if (!requireNetns(t)) return;
    const p = await probeIn(t);
    await openClient(p, 'open');
    const from = p.probe.lines.length;
    const rule = await p.ns.addRule({ port: p.port, action: 'reset' });
    const addedAt = performance.now();
    try {
      assert.match(await p.ns.rules(), new RegExp(`--dport ${p.port} .*tcp-reset`));
      const err = await p.next((e) => e.id === 'open' && e.ev === 'error', 3000, from);
      assert.equal(err.code, 'ECONNRESET');
      assert.ok(performance.now() - addedAt < 1000, `reset after ${Math.round(performance.now() - addedAt)} ms`);
      assert.equal(await tryConnect(p, 'during', 3000), 'ECONNREFUSED');
    } finally {
      await rule.remove();
    }
    assert.doesNotMatch(await p.ns.rules(), /tcp-reset/);
    assert.equal(await tryConnect(p, 'after', 3000), 'pong');
  });

  it('REJECT (ICMP port unreachable): a new connect is refused, an open connection stalls with no error; after the rule both work', async (t) => {
    if (!requireNetns(t)) return;
    const p = await probeIn(t);
    await openClient(p, 'open');
    const rule = await p.ns.addRule({ port: p.port, action: 'reject' });
    let from;
    try {
      assert.match(await p.ns.rules(), new RegExp(`--dport ${p.port} -j REJECT --reject-with icmp-port-unreachable`));
      await sleep(200); // an echo already on its way may still land
      from = p.probe.lines.length;
      assert.equal(await tryConnect(p, 'during', 3000), 'ECONNREFUSED');
      await sleep(1500);
      assert.deepEqual(since(p, 'open', from), { pongs: 0, errors: [] }, 'the open connection was not stalled');
    } finally {
      await rule.remove();
    }
    assert.equal(await tryConnect(p, 'after', 3000), 'pong');
    // Its retransmissions back off (0.2 s, 0.4 s, 0.8 s, ...): generous.
    await p.next((e) => e.id === 'open' && e.ev === 'pong', 15_000, from);
    assert.deepEqual(since(p, 'open', from).errors, []);
  });

  it('DROP: an open connection and a new connect both stall; after the rule both work', async (t) => {
    if (!requireNetns(t)) return;
    const p = await probeIn(t);
    await openClient(p, 'open');
    const rule = await p.ns.addRule({ port: p.port, action: 'drop' });
    let from;
    try {
      await sleep(200);
      from = p.probe.lines.length;
      assert.equal(await tryConnect(p, 'during', 1500), null, 'a connect got an answer through DROP');
      assert.deepEqual(since(p, 'open', from), { pongs: 0, errors: [] }, 'the open connection was not stalled');
    } finally {
      await rule.remove();
    }
    assert.equal(await tryConnect(p, 'after', 3000), 'pong');
    await p.next((e) => e.id === 'open' && e.ev === 'pong', 15_000, from);
    assert.deepEqual(since(p, 'open', from).errors, []);
  });

  it('block() adds the rule, holds it and deletes it; remove() kills the processes inside and deletes the namespace', async (t) => {
    if (!requireNetns(t)) return;
    const p = await probeIn(t);
    const blocking = p.ns.block({ port: p.port, action: 'reject', ms: 1000 });
    for (let i = 0; i < 100 && !(await p.ns.rules()).includes('REJECT'); i++) await sleep(10);
    assert.equal(await tryConnect(p, 'during', 3000), 'ECONNREFUSED');
    const { addedAtMs, removedAtMs } = await blocking;
    assert.ok(removedAtMs - addedAtMs >= 1000);
    assert.doesNotMatch(await p.ns.rules(), /REJECT/);
    assert.equal(await tryConnect(p, 'after', 3000), 'pong');

    assert.equal(netnsExists(p.ns.name), true);
    const started = performance.now();
    await p.ns.remove();
    const end = await p.probe.exited;
    assert.equal(end.signal, 'SIGKILL');
    assert.ok(performance.now() - started < 5000);
    assert.equal(netnsExists(p.ns.name), false);
    await p.ns.remove(); // a second time (t.after does it again): no error
  });

  it('every namespace the tests above made is gone (t.after removed them)', (t) => {
    if (!requireNetns(t)) return;
    assert.ok(made.length >= 4, String(made.length));
    const left = listNetns();
    assert.deepEqual(made.filter((name) => left.includes(name) || netnsExists(name)), []);
  });
});

describe('the loopback apiserver inside a namespace: a reset exec stream (netns.js with apiserver.js)', { timeout: 60_000 }, () => {
  const fs = require('node:fs');
  const os = require('node:os');
  const { APISERVER_JS, CERT_DIR } = (() => {
    const { APISERVER_JS: js } = require('./apiserver-process');
    return { APISERVER_JS: js, CERT_DIR: require('./apiserver').CERT_DIR };
  })();
  const { fullRole } = require('../js/support/roles');

  it('tcp-reset on the apiserver port while a script runs: the client sees ECONNRESET, the script runs on and writes its marker', async (t) => {
    if (!requireNetns(t)) return;
    const ns = await createNetns(t);
    made.push(ns.name);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'netns-apiserver-'));
    t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
    const configFile = path.join(dir, 'config.json');
    const logFile = path.join(dir, 'log.json');
    const podRoot = path.join(dir, 'pods');
    fs.writeFileSync(configFile, JSON.stringify({ role: fullRole(), podRunningAfterMs: 0, podRoot, maxRunMs: 30_000 }));
    const apiserver = ns.spawnNode([APISERVER_JS, '--config', configFile, '--log', logFile]);
    const ready = JSON.parse(await apiserver.waitForLine((l) => l.startsWith('{'), 5000));

    const client = ns.spawnNode([
      path.join(__dirname, 'exec-probe.js'),
      ready.url,
      path.join(CERT_DIR, 'ca.pem'),
      'test-token',
      'job-pod',
      JSON.stringify(['sh', '-c', 'echo started; sleep 1.5; echo survived > marker.txt']),
    ]);
    const event = async (pred, ms) => JSON.parse(await client.waitForLine((l) => pred(JSON.parse(l)), ms));
    await event((e) => e.ev === 'stdout' && e.text === 'started\n', 5000);
    const rule = await ns.addRule({ port: ready.port, action: 'reset' });
    const addedAt = performance.now();
    try {
      const err = await event((e) => e.ev === 'error' || e.ev === 'close', 3000);
      assert.equal(err.code, 'ECONNRESET', JSON.stringify(err));
      assert.ok(performance.now() - addedAt < 1000);
      assert.equal((await event((e) => e.ev === 'close', 3000)).code, 1006);
    } finally {
      await rule.remove();
    }
    assert.equal(client.lines.some((l) => JSON.parse(l).ev === 'status'), false, 'a status came through the reset');
    const marker = path.join(podRoot, 'ci', 'job-pod', 'marker.txt');
    // (The shell makes the file, then writes to it: wait for the line.)
    const written = () => fs.existsSync(marker) && fs.readFileSync(marker, 'utf8').endsWith('\n');
    for (let i = 0; i < 250 && !written(); i++) await sleep(20);
    assert.equal(fs.readFileSync(marker, 'utf8'), 'survived\n');

    apiserver.kill('SIGTERM');
    assert.equal((await apiserver.exited).code, 0);
    const [exec] = JSON.parse(fs.readFileSync(logFile, 'utf8')).execs;
    assert.equal(exec.exitCode, 0);
    // No close frame ever came back from the client: the server saw the stream end at 1006
    // (when its status write met the reset, or when it closed, whichever came first).
    assert.equal(exec.closeCode, 1006, JSON.stringify(exec));
  });
});

'use strict';
/**
 * Real kernel faults for tests: a network namespace of a test's own, Node
 * processes run inside it, and iptables rules in its OUTPUT chain for a port,
 * added for a while and then deleted. Traffic stays on 127.0.0.1 inside the
 * namespace (its own loopback), so nothing outside it is touched. Needs root,
 * `ip` (iproute2) and iptables; `scripts/setup.sh --for-tests` installs
 * iptables when it is missing.
 *
 *   const { canUseNetns, requireNetns, createNetns } = require('./netns');
 *   it('...', async (t) => {
 *     if (!requireNetns(t)) return;         // skipped with the reason; under CI=true, failed with it
 *     const ns = await createNetns(t);       // deleted in t.after, also when the test fails
 *     const p = ns.spawnNode(['server.js']); // `ip netns exec <ns> node server.js`
 *     await p.waitForLine((l) => l.includes('listening'), 5000);
 *     await ns.block({ port, action: 'reset', ms: 2000 }); // add, hold, delete
 *   });
 *
 * The rules (one per addRule, in OUTPUT, for TCP to `port`):
 *   'reject' -j REJECT (ICMP port unreachable: a new connect is refused; an
 *            open connection only gets a soft error and stalls, retransmitting)
 *   'reset'  -j REJECT --reject-with tcp-reset (the open connection's next
 *            packet is answered with a RST: ECONNRESET; a new connect is refused)
 *   'drop'   -j DROP (silence: open connections and new connects stall)
 *
 * Which iptables: iptables-nft first, then iptables-legacy, the first that can
 * add and delete a rule inside a fresh namespace (canUseNetns probes this once
 * per process). On this project's machines (Debian 12, kernel 6.x) both work;
 * nft comes first because it is Debian's default `iptables`, and nf_tables is
 * what kernels keep building while the legacy x_tables interface is being
 * dropped from some. A fresh namespace has empty tables in either, so the two
 * never see each other's rules here.
 *
 * Namespaces are named `kap-<pid>-<n>`; creating one first deletes those whose
 * process is gone (a run that was killed before its cleanup ran).
 */

const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');

const PREFIX = 'kap';
const BACKENDS = Object.freeze(['iptables-nft', 'iptables-legacy']);
const ACTIONS = Object.freeze({
  reject: ['-j', 'REJECT'],
  reset: ['-j', 'REJECT', '--reject-with', 'tcp-reset'],
  drop: ['-j', 'DROP'],
});
const COMMAND_TIMEOUT_MS = 10_000;
const OUTPUT_CAP_CHARS = 1_000_000;
const KILL_WAIT_MS = 3000;

let counter = 0;
let verdict = null;

function runSync(command, args) {
  const r = spawnSync(command, args, { encoding: 'utf8', timeout: COMMAND_TIMEOUT_MS });
  return { code: r.status, error: r.error, stdout: r.stdout || '', stderr: r.stderr || '' };
}

function describeFailure(what, r) {
  if (r.error) return `${what}: ${r.error.code === 'ENOENT' ? 'not installed' : r.error.message}`;
  return `${what} exited ${r.code}: ${(r.stderr || r.stdout).trim().split('\n')[0]}`;
}

function pidAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === 'EPERM';
  }
}

/** The names of the network namespaces that exist now. */
function listNetns() {
  const r = runSync('ip', ['netns', 'list']);
  if (r.code !== 0) return [];
  return r.stdout
    .split('\n')
    .map((line) => line.trim().split(/\s+/)[0])
    .filter(Boolean);
}

function netnsExists(name) {
  return listNetns().includes(name) || fs.existsSync(`/run/netns/${name}`);
}

// Kills every process in namespace `name` (SIGKILL) and deletes it.
function destroyNetnsSync(name) {
  const pids = runSync('ip', ['netns', 'pids', name]);
  for (const pid of pids.stdout.split(/\s+/).filter(Boolean)) {
    try {
      process.kill(Number(pid), 'SIGKILL');
    } catch {
      // gone already
    }
  }
  return runSync('ip', ['netns', 'del', name]);
}

function sweepStale() {
  const own = new RegExp(`^${PREFIX}-(\\d+)-\\d+$`);
  for (const name of listNetns()) {
    const m = own.exec(name);
    if (m && Number(m[1]) !== process.pid && !pidAlive(Number(m[1]))) destroyNetnsSync(name);
  }
}

/**
 * Whether this machine can run the namespace tests: { ok, reason, iptables }.
 * `reason` says what is missing when not ok; `iptables` names the backend.
 * Probes once per process (a namespace made, a rule added and deleted).
 */
function canUseNetns() {
  if (verdict) return verdict;
  const no = (reason) => (verdict = { ok: false, reason, iptables: null });
  if (process.platform !== 'linux') return no(`network namespaces need Linux, this is ${process.platform}`);
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) {
    return no('network namespaces need root (ip netns add); run the tests as root, as CI does');
  }
  const ip = runSync('ip', ['-V']);
  if (ip.code !== 0) return no(`${describeFailure('ip (iproute2)', ip)}; apt-get install iproute2`);
  const probe = `${PREFIX}-${process.pid}-probe`;
  const add = runSync('ip', ['netns', 'add', probe]);
  if (add.code !== 0) return no(describeFailure('ip netns add', add));
  const tried = [];
  try {
    const lo = runSync('ip', ['-n', probe, 'link', 'set', 'lo', 'up']);
    if (lo.code !== 0) return no(describeFailure('ip link set lo up in a new namespace', lo));
    for (const backend of BACKENDS) {
      const rule = ['OUTPUT', '-p', 'tcp', '--dport', '9', '-j', 'DROP'];
      const a = runSync('ip', ['netns', 'exec', probe, backend, '-w', '5', '-A', ...rule]);
      if (a.code !== 0) {
        tried.push(describeFailure(backend, a));
        continue;
      }
      const d = runSync('ip', ['netns', 'exec', probe, backend, '-w', '5', '-D', ...rule]);
      if (d.code !== 0) {
        tried.push(describeFailure(`${backend} -D`, d));
        continue;
      }
      verdict = { ok: true, reason: null, iptables: backend };
      return verdict;
    }
    return no(`no iptables works in a new namespace (${tried.join('; ')}); scripts/setup.sh --for-tests installs it`);
  } finally {
    destroyNetnsSync(probe);
  }
}

/**
 * For a test: true when namespaces can be used; otherwise, under CI=true, throws
 * (the test fails with the reason), else skips the test with the reason and
 * returns false.
 */
function requireNetns(t) {
  const v = canUseNetns();
  if (v.ok) return true;
  if (process.env.CI === 'true') throw new Error(`netns tests cannot run: ${v.reason}`);
  t.skip(v.reason);
  return false;
}

/** Runs `command args` to its end (bounded): { code, signal, stdout, stderr }. */
function runAsync(command, args, timeoutMs = COMMAND_TIMEOUT_MS) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', (err) => {
      clearTimeout(timer);
      resolve({ code: null, signal: null, stdout, stderr: stderr + err.message });
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/**
 * Makes a namespace with its loopback up. With `t` (a node:test context), it
 * is removed in t.after. Resolves a handle:
 *   name
 *   run(command, args, { timeoutMs }) -> { code, signal, stdout, stderr }: inside it
 *   spawnNode(args, { env, cwd }) -> a process (below): this Node inside it
 *   spawn(command, args, { env, cwd }) -> a process (below): any command inside it
 *   addRule({ port, action }) -> { action, port, remove() }: action 'reject' | 'reset' | 'drop'
 *   block({ port, action, ms }) -> resolves { addedAtMs, removedAtMs } (performance.now())
 *     once the rule was added, held `ms` and deleted (deleted also when the wait throws)
 *   rules() -> the OUTPUT chain as `iptables -S OUTPUT` prints it
 *   remove() -> kills every process in it (SIGKILL) and deletes it; idempotent
 * A process: { child, pid, lines (stdout lines so far), stdout, stderr (text so
 * far, capped), waitForLine(predicate, timeoutMs, from = 0) -> the first line
 * at index >= from that matches, exited (a Promise of { code, signal, stdout,
 * stderr }), send(line) (to its stdin), kill(signal) }.
 */
async function createNetns(t, { iptables } = {}) {
  const v = canUseNetns();
  if (!v.ok) throw new Error(`cannot create a network namespace: ${v.reason}`);
  const backend = iptables || v.iptables;
  sweepStale();
  counter += 1;
  const name = `${PREFIX}-${process.pid}-${counter}`;
  const processes = new Set();
  let removed = false;

  const must = async (what, r) => {
    if (r.code !== 0) throw new Error(`${what} exited ${r.code}${r.signal ? ` (${r.signal})` : ''}: ${r.stderr.trim()}`);
    return r;
  };
  await must('ip netns add', await runAsync('ip', ['netns', 'add', name]));

  const run = (command, args = [], { timeoutMs } = {}) => runAsync('ip', ['netns', 'exec', name, command, ...args], timeoutMs);

  function spawnIn(command, args = [], { env = process.env, cwd } = {}) {
    if (removed) throw new Error(`namespace ${name} is removed`);
    const child = spawn('ip', ['netns', 'exec', name, command, ...args], { env, cwd, stdio: ['pipe', 'pipe', 'pipe'] });
    const proc = { child, pid: child.pid, lines: [], stdout: '', stderr: '' };
    const waiters = new Set();
    let partial = '';
    child.stdin.on('error', () => {});
    child.stdout.setEncoding('utf8').on('data', (d) => {
      if (proc.stdout.length < OUTPUT_CAP_CHARS) proc.stdout += d;
      partial += d;
      let nl;
      while ((nl = partial.indexOf('\n')) >= 0) {
        proc.lines.push(partial.slice(0, nl));
        partial = partial.slice(nl + 1);
      }
      for (const w of waiters) w();
    });
    child.stderr.setEncoding('utf8').on('data', (d) => {
      if (proc.stderr.length < OUTPUT_CAP_CHARS) proc.stderr += d;
    });
    processes.add(proc);
    proc.exited = new Promise((resolve) => {
      child.on('error', (err) => {
        proc.stderr += err.message;
      });
      child.on('close', (code, signal) => {
        processes.delete(proc);
        for (const w of waiters) w();
        resolve({ code, signal, stdout: proc.stdout, stderr: proc.stderr });
      });
    });
    let ended = false;
    proc.exited.then(() => (ended = true));
    proc.waitForLine = (predicate, timeoutMs, from = 0) =>
      new Promise((resolve, reject) => {
        const check = () => {
          for (let i = from; i < proc.lines.length; i++) {
            if (predicate(proc.lines[i])) {
              done();
              resolve(proc.lines[i]);
              return;
            }
          }
          if (ended) {
            done();
            reject(new Error(`the process ended before the line came; stderr: ${proc.stderr.slice(-2000)}`));
          }
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`no such line within ${timeoutMs} ms; stdout: ${proc.stdout.slice(-2000)} stderr: ${proc.stderr.slice(-2000)}`));
        }, timeoutMs);
        const done = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      });
    proc.send = (line) => {
      if (!child.stdin.destroyed) child.stdin.write(`${line}\n`);
    };
    proc.kill = (signal = 'SIGKILL') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    };
    return proc;
  }

  const spawnNode = (args, options) => spawnIn(process.execPath, args, options);

  function ruleArgs(op, port, action) {
    const target = ACTIONS[action];
    if (!target) throw new RangeError(`action must be one of ${Object.keys(ACTIONS).join(', ')}, got ${JSON.stringify(action)}`);
    if (!(Number.isInteger(port) && port > 0 && port < 65536)) throw new RangeError(`port must be a TCP port, got ${JSON.stringify(port)}`);
    return [backend, '-w', '5', op, 'OUTPUT', '-p', 'tcp', '--dport', String(port), ...target];
  }

  async function addRule({ port, action }) {
    const add = ruleArgs('-A', port, action);
    await must(`${backend} -A`, await run(add[0], add.slice(1)));
    let gone = false;
    return {
      port,
      action,
      async remove() {
        if (gone || removed) return;
        gone = true;
        const del = ruleArgs('-D', port, action);
        await must(`${backend} -D`, await run(del[0], del.slice(1)));
      },
    };
  }

  async function block({ port, action, ms }) {
    if (!(Number.isFinite(ms) && ms >= 0)) throw new RangeError(`ms must be a non-negative number, got ${JSON.stringify(ms)}`);
    const rule = await addRule({ port, action });
    const addedAtMs = performance.now();
    try {
      await new Promise((resolve) => setTimeout(resolve, ms));
    } finally {
      await rule.remove();
    }
    return { addedAtMs, removedAtMs: performance.now() };
  }

  async function rules() {
    return (await must(`${backend} -S`, await run(backend, ['-w', '5', '-S', 'OUTPUT']))).stdout;
  }

  async function remove() {
    if (removed) return;
    removed = true;
    const running = [...processes];
    for (const proc of running) proc.kill('SIGKILL');
    const r = destroyNetnsSync(name);
    const deadline = new Promise((resolve) => setTimeout(resolve, KILL_WAIT_MS).unref());
    await Promise.race([Promise.all(running.map((p) => p.exited)), deadline]);
    if (r.code !== 0 && netnsExists(name)) throw new Error(`ip netns del ${name} exited ${r.code}: ${r.stderr.trim()}`);
  }

  const handle = { name, iptables: backend, run, spawn: spawnIn, spawnNode, addRule, block, rules, remove };
  if (t && typeof t.after === 'function') t.after(() => remove());
  try {
    await must('ip link set lo up', await runAsync('ip', ['-n', name, 'link', 'set', 'lo', 'up']));
  } catch (err) {
    await remove();
    throw err;
  }
  return handle;
}

module.exports = { canUseNetns, requireNetns, createNetns, netnsExists, listNetns, ACTIONS, BACKENDS };

'use strict';
// Durable execs (docs/CALLS.md, "Durable execs") through the real, installed
// @kubernetes/client-node against the loopback apiserver with a real
// container (podRoot: each exec a local process; a cut stream leaves it
// running with its pipes closed; a deleted pod kills its processes). Each
// rule gets a test: the script runs once (its own marker file counts its
// starts), its output arrives whole and in order across cuts, its exit code
// arrives in client-node's shapes, a stream with no status is never a
// success, a deleted pod fails at once naming it, SIGTERM stops the
// script's processes, a container without a utility runs the exec plainly
// with a warning, and the run's files are removed.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { Readable, Writable } = require('node:stream');

const { consumer, k8s, preflight, NAMESPACE, tempDir, waitFor } = require('./support/harness');
const { POD, durableEnv, capture, podServer, sink } = require('./support/durable-pod');
const { ourNames, POD: POD_SOURCE } = require('../../scripts/build-pod');

/** The pod program's source, every file. */
function podSource() {
  const files = [POD_SOURCE, path.join(POD_SOURCE, 'lib')].flatMap((dir) => fs.readdirSync(dir).map((f) => path.join(dir, f)));
  return files.filter((f) => f.endsWith('.sh')).map((f) => fs.readFileSync(f, 'utf8')).join('\n');
}

const F = `[${consumer.flavour}]`;
const RUN_LIMIT_MS = 30_000;
// A status the server sent arrives within this, even when the stream stays open.
const HELD_LIMIT_MS = 10_000;


/**
 * One exec as a hooks-style caller makes it: resolves with { status,
 * stdout, stderr, closedBeforeStatus } when the status arrives, or when
 * the socket closes with none (then status is null); bounded.
 */
function runExec(execApi, command, { stdin = null, pod = POD, onSocket } = {}) {
  const out = sink();
  const err = sink();
  return new Promise((resolve, reject) => {
    let done = false;
    const finish = (status) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve({ status, stdout: out.bytes(), stderr: err.bytes() });
    };
    const timer = setTimeout(() => reject(new Error(`no status and no close within ${RUN_LIMIT_MS} ms`)), RUN_LIMIT_MS);
    Promise.resolve(execApi.exec(NAMESPACE, pod, 'job', command, out, err, stdin, false, finish)).then(
      (socket) => {
        if (onSocket) onSocket(socket);
        socket.on('close', () => setTimeout(() => finish(null), 200));
      },
      (error) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

// A script that counts its own starts, writes `lines` numbered lines to
// stdout and to stderr with a pause between, and exits with `code`.
function script({ lines = 6, pauseS = '0.3', code = 0, tag = 'run' } = {}) {
  return [
    'sh',
    '-c',
    `echo started >> ${tag}.starts; i=0; while [ $i -lt ${lines} ]; do echo "out $i $(printf '%0100d' $i)"; echo "err $i" >&2; i=$((i + 1)); sleep ${pauseS}; done; exit ${code}`,
  ];
}

function expectedOutput(lines) {
  let out = '';
  let err = '';
  for (let i = 0; i < lines; i++) {
    out += `out ${i} ${String(i).padStart(100, '0')}\n`;
    err += `err ${i}\n`;
  }
  return { out, err };
}

const starts = (folder, tag = 'run') => {
  const file = path.join(folder, `${tag}.starts`);
  return fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).length : 0;
};

/** The runs in the pod's temp folder, each with the names of its files (`<run id>.<name>`). */
const runFiles = (folder) => {
  const dir = path.join(folder, 'tmp', '.k8s-auth-preflight');
  const runs = new Map();
  for (const name of fs.existsSync(dir) ? fs.readdirSync(dir) : []) {
    const [run, part] = name.split('.');
    runs.set(run, [...(runs.get(run) || []), part]);
  }
  return runs;
};

/** The runs whose files are left in the pod's temp folder. */
const runFolders = (folder) =>
  // A delivered run leaves only `done` (and the claim's mark, without /dev/shm).
  [...runFiles(folder)].filter(([, parts]) => parts.some((part) => part !== 'done' && part !== 'c')).map(([run]) => run);

/** The execs the server saw that were a durable exec's start step (they carry the caller's command). */
const startSteps = (server) => server.execs.filter((e) => e.command[0] === 'sh' && e.command[3] === 'k8s-auth-preflight' && e.command[2].includes('setsid sh -c'));

// tar-fs's extract() calls back the write of an archive's last chunk only once
// the stream is ended, which its caller does after the status. A status held
// until the caller's streams call back never comes: the plain client gives it
// once the output before it has been written, and so must every exec of ours.
function endGatedSink() {
  const chunks = [];
  let ending = false;
  let held = null;
  const stream = new Writable({
    write(chunk, _e, done) {
      chunks.push(Buffer.from(chunk));
      if (ending) done();
      else held = done;
    },
  });
  const end = stream.end.bind(stream);
  stream.end = (...a) => {
    ending = true;
    if (held) {
      const done = held;
      held = null;
      done();
    }
    return end(...a);
  };
  stream.bytes = () => Buffer.concat(chunks);
  return stream;
}

// A status a client gives at once on a healthy loopback arrives well within this; the old wait held it 10 s.
const STATUS_BOUND_MS = 5000;

test(`${F} a caller whose stdout calls back only once ended (tar-fs extract) gets the status without ending it, durable and plain alike`, async (t) => {
  const env = await podServer(t);
  const clients = {
    'client-node': new k8s.Exec(env.kc),
    durable: preflight.resilientExec(env.kc, { env: durableEnv(), logger: capture().logger }),
    'durable off': preflight.resilientExec(env.kc, { env: durableEnv({ DURABLE_EXEC: 'off' }), logger: capture().logger }),
  };
  const want = Buffer.from(Array.from({ length: 40 }, (_, i) => `line ${i}\n`).join(''));
  for (const [name, client] of Object.entries(clients)) {
    const out = endGatedSink();
    const err = sink();
    const got = await new Promise((resolve, reject) => {
      const timer = setTimeout(() => resolve({ status: null }), STATUS_BOUND_MS);
      Promise.resolve(client.exec(NAMESPACE, POD, 'job', ['sh', '-c', 'i=0; while [ $i -lt 40 ]; do echo "line $i"; i=$((i + 1)); done'], out, err, null, false, (status) => {
        clearTimeout(timer);
        resolve({ status });
      })).catch(reject);
    });
    assert.ok(got.status, `${name}: no status within ${STATUS_BOUND_MS} ms while the caller's stdout held its write callback`);
    assert.equal(got.status.status, 'Success', `${name}: ${JSON.stringify(got.status)}`);
    out.end();
    assert.deepEqual(out.bytes(), want, `${name}: the output before the status was written to the caller's stream`);
  }
});

test(`${F} a healthy durable exec gives what the plain client gives: the same bytes, the same status, exit 0 and exit 3`, async (t) => {
  const env = await podServer(t);
  const durable = preflight.resilientExec(env.kc, { env: durableEnv(), logger: capture().logger });
  const plain = new k8s.Exec(env.kc);
  for (const code of [0, 3]) {
    const command = script({ lines: 4, pauseS: '0.05', code, tag: `healthy-${code}` });
    const a = await runExec(plain, command);
    const b = await runExec(durable, command);
    assert.deepEqual(b.status, a.status, `exit ${code}: the status`);
    // The command's own status, success or failure, is never one of ours.
    assert.equal(preflight.isExecIncomplete(b.status), false, `exit ${code}: isExecIncomplete`);
    assert.equal(b.stdout.toString(), a.stdout.toString());
    assert.equal(b.stderr.toString(), a.stderr.toString());
    assert.equal(starts(env.folder(), `healthy-${code}`), 2, 'once by each client');
  }
  // Removed just after the delivery.
  await waitFor(() => runFolders(env.folder()).length === 0, 5000, `the run's files to be removed: ${runFolders(env.folder())}`);
});

test(`${F} a stream cut while the script runs: one warning, reattached, the output whole and in order, the exit code, the script started once`, async (t) => {
  const env = await podServer(t);
  const log = capture();
  const durable = preflight.resilientExec(env.kc, { env: durableEnv(), logger: log.logger });
  const run = runExec(durable, script({ lines: 10, code: 3 }));
  await waitFor(() => starts(env.folder()) === 1, 5000, 'the script to start');
  await new Promise((r) => setTimeout(r, 700));
  // Every connection to the apiserver cut, and refused for 2 s.
  await env.server.setPhase('refuse');
  await new Promise((r) => setTimeout(r, 2000));
  await env.server.setPhase('healthy');
  const result = await run;
  const expected = expectedOutput(10);
  assert.equal(result.stdout.toString(), expected.out);
  assert.equal(result.stderr.toString(), expected.err);
  assert.equal(result.status.status, 'Failure');
  assert.equal(result.status.reason, 'NonZeroExitCode');
  assert.deepEqual(result.status.details.causes, [{ reason: 'ExitCode', message: '3' }]);
  assert.equal(starts(env.folder()), 1, 'the script ran once');
  assert.equal(startSteps(env.server).length, 1, 'one start step reached the pod');
  assert.equal(log.warning.length, 1, log.warning.join('\n'));
  assert.match(log.warning[0], /^the exec stream of pod "ci\/job-pod" was cut \(.+\); reattaching; the script is still running in the pod and will not be started again$/);
  assert.equal(log.info.filter((l) => l.startsWith('reattached to the script in pod "ci/job-pod" after ')).length, 1, log.info.join('\n'));
  await waitFor(() => runFolders(env.folder()).length === 0, 5000, "the run's files to be removed");
});

test(`${F} output larger than the pipes, cut twice: byte-identical, each byte once`, async (t) => {
  const env = await podServer(t);
  const durable = preflight.resilientExec(env.kc, { env: durableEnv(), logger: capture().logger });
  // 2 MiB to stdout and 1 MiB to stderr, in pieces, over about 3 s.
  const command = ['sh', '-c', 'echo x >> big.starts; i=0; while [ $i -lt 32 ]; do head -c 65536 /dev/zero | tr "\\0" "$((i % 10))"; head -c 32768 /dev/zero | tr "\\0" "e" >&2; i=$((i + 1)); sleep 0.1; done'];
  const run = runExec(durable, command);
  for (let cut = 0; cut < 2; cut++) {
    await new Promise((r) => setTimeout(r, 900));
    await env.server.setPhase('refuse');
    await new Promise((r) => setTimeout(r, 300));
    await env.server.setPhase('healthy');
  }
  const result = await run;
  let want = '';
  for (let i = 0; i < 32; i++) want += String(i % 10).repeat(65536);
  assert.equal(result.stdout.length, want.length);
  assert.ok(result.stdout.equals(Buffer.from(want)), 'stdout differs');
  assert.ok(result.stderr.equals(Buffer.alloc(32 * 32768, 'e')), 'stderr differs');
  assert.deepEqual(result.status, { metadata: {}, status: 'Success' });
  assert.equal(starts(env.folder(), 'big'), 1);
});

test(`${F} a stream closed with no status: durable, it reattaches and succeeds whole; plain (durable off), it fails as unknown, never a success`, async (t) => {
  const env = await podServer(t, { execResults: [{ contains: 'closes-quietly', closeWithoutStatus: true }] });
  const command = script({ lines: 3, pauseS: '0.05', tag: 'closes-quietly' });
  const durable = preflight.resilientExec(env.kc, { env: durableEnv(), logger: capture().logger });
  const a = await runExec(durable, command);
  assert.deepEqual(a.status, { metadata: {}, status: 'Success' });
  assert.equal(a.stdout.toString(), expectedOutput(3).out);
  assert.equal(starts(env.folder(), 'closes-quietly'), 1);

  const off = preflight.resilientExec(env.kc, { env: durableEnv({ DURABLE_EXEC: 'off' }), logger: capture().logger });
  const b = await runExec(off, command);
  assert.ok(b.status, 'the caller got a status');
  assert.equal(b.status.status, 'Failure');
  assert.equal(b.status.reason, 'StreamCut');
  assert.match(b.status.message, /^the exec stream of pod "ci\/job-pod" was cut before the command's status arrived \(.+\): the command's outcome is unknown/);

  // Unwrapped, the same stream ends with no status at all.
  const bare = await runExec(new k8s.Exec(env.kc), command);
  assert.equal(bare.status, null);
});

test(`${F} not durable (durable off, or with stdin: a copy): a cut stream fails with the outcome unknown, and the caller's promise settles`, async (t) => {
  const env = await podServer(t);
  const off = preflight.resilientExec(env.kc, { env: durableEnv({ DURABLE_EXEC: 'off' }), logger: capture().logger });
  const cases = [
    ['durable off', off, script({ lines: 20, tag: 'off' }), null],
    ['stdin', preflight.resilientExec(env.kc, { env: durableEnv(), logger: capture().logger }), ['sh', '-c', 'cat > copied.bin; echo x >> stdin.starts; sleep 5'], Readable.from([Buffer.alloc(1000, 1)])],
  ];
  for (const [name, api, command, stdin] of cases) {
    const run = runExec(api, command, { stdin });
    await new Promise((r) => setTimeout(r, 800));
    await env.server.setPhase('refuse');
    await new Promise((r) => setTimeout(r, 200));
    await env.server.setPhase('healthy');
    const result = await run;
    assert.ok(result.status, `${name}: a status`);
    assert.equal(result.status.status, 'Failure', name);
    assert.equal(result.status.reason, 'StreamCut', name);
    assert.match(result.status.message, /outcome is unknown/, name);
    assert.equal(preflight.isExecIncomplete(result.status), true, `${name}: isExecIncomplete`);
  }
});

test(`${F} a silent connection (no pong) counts as a cut: the durable exec reattaches`, async (t) => {
  const env = await podServer(t);
  const log = capture();
  const durable = preflight.resilientExec(env.kc, { env: durableEnv({ EXEC_PONG_DEADLINE_MS: 1000 }), logger: log.logger });
  const run = runExec(durable, script({ lines: 50, pauseS: '0.3', tag: 'silent' }));
  await waitFor(() => starts(env.folder(), 'silent') === 1, 5000, 'the script to start');
  // The open stream goes silent (the server neither reads nor writes it):
  // pings (every 5 s) go unanswered; after 11 s its socket is destroyed.
  const frozen = freezeExecSockets(env.server);
  await new Promise((r) => setTimeout(r, 11_000));
  frozen.thaw();
  const result = await run;
  assert.equal(result.stdout.toString(), expectedOutput(50).out);
  assert.deepEqual(result.status, { metadata: {}, status: 'Success' });
  assert.ok(log.warning.some((w) => /no pong within 1000 ms/.test(w)), log.warning.join('\n'));
  assert.equal(starts(env.folder(), 'silent'), 1);
});

/** Pauses every open exec socket of the server (no reads, no writes): a silent connection. */
function freezeExecSockets(server) {
  const sockets = server.openExecSockets ? server.openExecSockets() : [];
  if (sockets.length === 0) throw new Error('the server cannot freeze its exec sockets');
  for (const s of sockets) s.pause();
  const cork = sockets.map((s) => {
    const write = s.write;
    s.write = () => true;
    return () => {
      s.write = write;
    };
  });
  return {
    thaw() {
      for (const restore of cork) restore();
      for (const s of sockets) s.destroy();
    },
  };
}

test(`${F} a pod deleted while its script runs: the step fails at once, naming the pod`, async (t) => {
  const env = await podServer(t);
  const durable = preflight.resilientExec(env.kc, { env: durableEnv(), logger: capture().logger });
  const run = runExec(durable, script({ lines: 100, tag: 'deleted' }));
  await waitFor(() => starts(env.folder(), 'deleted') === 1, 5000, 'the script to start');
  const core = env.kc.makeApiClient(k8s.CoreV1Api);
  await core.deleteNamespacedPod({ namespace: NAMESPACE, name: POD, gracePeriodSeconds: 0 });
  const deletedAt = performance.now();
  const result = await run;
  const tookMs = performance.now() - deletedAt;
  assert.equal(result.status.status, 'Failure');
  assert.equal(result.status.reason, 'PodGone');
  assert.match(result.status.message, /the pod "ci\/job-pod" is gone/);
  t.diagnostic(`failed ${Math.round(tookMs)} ms after the delete`);
  assert.ok(tookMs < 10_000, `took ${tookMs} ms`);
});

test(`${F} SIGTERM to the hook process while its script runs: the script's processes in the pod are gone within 5 s`, async (t) => {
  const env = await podServer(t);
  const child = hookScript(t, env, ['sh', '-c', 'sleep 60 & echo $! > child.pid; echo $$ > main.pid; wait']);
  const { hook, output, exited } = startHook(t, child);
  const pidFile = (name) => path.join(env.folder(), name);
  await waitFor(() => fs.existsSync(pidFile('child.pid')) && fs.existsSync(pidFile('main.pid')), 10_000, 'the script to start');
  await new Promise((r) => setTimeout(r, 200));
  const pids = ['child.pid', 'main.pid'].map((n) => Number(fs.readFileSync(pidFile(n), 'utf8').trim()));
  for (const pid of pids) assert.ok(alive(pid), `${pid} runs before the signal`);
  hook.kill('SIGTERM');
  const signalledAt = performance.now();
  await waitFor(() => pids.every((pid) => !alive(pid)), 5000, `the script's processes ${pids} to be gone (hook said: ${output()})`);
  t.diagnostic(`gone ${Math.round(performance.now() - signalledAt)} ms after SIGTERM`);
  const { signal } = await exited;
  assert.equal(signal, 'SIGTERM', 'the hook still ends by its signal');
});

test(`${F} a hook that exits at the status while its stdout, a pipe, is read slowly: every byte before the status reaches the reader`, async (t) => {
  const env = await podServer(t);
  // More than a pipe holds, at once: when the status comes, the rest waits
  // in the process's own stdout queue, which process.exit() would drop.
  const BYTES = 1 << 20;
  const child = hostScript(t, env, [
    `resilientExec(kc, { env }).exec('ci', 'job-pod', 'job', ['sh', '-c', 'head -c ${BYTES} /dev/zero | tr "\\\\0" x'], process.stdout, process.stderr, null, false, (s) => process.exit(s.status === 'Success' ? 0 : 1));`,
  ]);
  // The reader: a pipe that nobody reads for 2 s, then read to its end.
  const out = path.join(tempDir(t, 'durable-slow-pipe'), 'out');
  const shell = spawn('bash', ['-c', 'set -o pipefail; "$0" "$1" | { sleep 2; cat > "$2"; }', process.execPath, child, out], { stdio: ['ignore', 'ignore', 'pipe'] });
  t.after(() => shell.kill('SIGKILL'));
  let stderr = '';
  shell.stderr.on('data', (d) => (stderr += d));
  const code = await Promise.race([
    new Promise((resolve) => shell.on('exit', (c) => resolve(c))),
    new Promise((_, reject) => setTimeout(() => reject(new Error(`the hook and its reader did not end within 30 s (stderr: ${stderr})`)), 30_000).unref()),
  ]);
  assert.equal(code, 0, `the hook's exit (stderr: ${stderr})`);
  const got = fs.readFileSync(out);
  assert.equal(got.length, BYTES, `bytes that reached the reader (stderr: ${stderr})`);
  assert.ok(got.every((b) => b === 0x78), "the output is the command's");
});

test(`${F} isExecIncomplete: true for our statuses only; any other value is false, never a throw`, () => {
  const { revoke, proxy } = Proxy.revocable({}, {});
  revoke();
  const throwing = Object.defineProperty({}, 'reason', { get() { throw new Error('no'); } });
  const values = [undefined, null, 0, 'StreamCut', {}, { reason: 5 }, { reason: 'NonZeroExitCode' }, { status: 'Success' }, { reason: 'streamcut' }, proxy, throwing];
  values.forEach((value, i) => assert.equal(preflight.isExecIncomplete(value), false, `value ${i}`));
  for (const reason of ['StreamCut', 'StreamLost', 'OutputLost', 'ExitCodeLost', 'ExitCodeUnknown', 'RunRecordMissing', 'PodGone', 'PodNotRunning', 'Cancelled']) {
    assert.equal(preflight.isExecIncomplete({ status: 'Failure', reason }), true, reason);
  }
});

/** The hook process of `child`, killed when the test ends: what it printed, and how it exited. */
function startHook(t, child) {
  const hook = spawn(process.execPath, [child], { stdio: ['ignore', 'pipe', 'pipe'] });
  let printed = '';
  const apart = { stdout: '', stderr: '' };
  for (const name of ['stdout', 'stderr']) {
    hook[name].on('data', (d) => {
      printed += d;
      apart[name] += d;
    });
  }
  // ('exit' may come before the pipes are read to their end.)
  const closed = new Promise((resolve) => hook.on('close', (code, signal) => resolve({ code, signal })));
  t.after(() => hook.kill('SIGKILL'));
  // `output`: both pipes as they arrived, whose order between the two is
  // the scheduler's; `stdout` and `stderr`, each in its own order.
  return { hook, output: () => printed, stdout: () => apart.stdout, stderr: () => apart.stderr, exited: closed };
}

/**
 * A host process's script through the installed package: `kc`, `env`
 * (`hostEnv`) and `resilientExec` at hand, then the lines of `body`.
 */
function hostScript(t, env, body, hostEnv = durableEnv()) {
  const child = path.join(tempDir(t, 'durable-host'), 'host.js');
  fs.writeFileSync(
    child,
    [
      "const { createRequire } = require('node:module');",
      `const req = createRequire(${JSON.stringify(path.join(consumer.consumerDir, 'package.json'))});`,
      "const k8s = req('@kubernetes/client-node'); const { resilientExec } = req('k8s-auth-preflight');",
      `const kc = new k8s.KubeConfig(); kc.loadFromFile(${JSON.stringify(env.kubeconfigPath)});`,
      `const env = ${JSON.stringify(hostEnv)};`,
      ...body,
    ].join('\n'),
  );
  return child;
}

/** A hook process's script: one durable exec of `command`, its lines and status printed. */
function hookScript(t, env, command) {
  return hostScript(t, env, [
    "const logger = { debug() {}, info: (m) => console.log('info', m), warning: (m) => console.log('warning', m), error: (m) => console.log('error', m) };",
    `resilientExec(kc, { env, logger }).exec('ci', 'job-pod', 'job', ${JSON.stringify(command)}, process.stdout, process.stderr, null, false, (s) => console.log('status', JSON.stringify(s)));`,
  ]);
}

function alive(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^\d+ \(.*\) Z/.test(stat);
  } catch {
    return false;
  }
}

test(`${F} a container without setsid, or without a writable temp folder: one warning naming it, and the exec runs plainly (once)`, async (t) => {
  const bin = tempDir(t, 'durable-bin');
  for (const name of ['sh', 'mkdir', 'mkfifo', 'tail', 'head', 'wc', 'cat', 'rm', 'sleep', 'printf']) {
    const found = ['/usr/bin', '/bin'].map((d) => path.join(d, name)).find((p) => fs.existsSync(p));
    if (found) fs.symlinkSync(found, path.join(bin, name));
  }
  const cases = [
    [{ PATH: bin }, /has no `setsid`/],
    [{ TMPDIR: '/proc/self' }, /cannot make or write the run's files/],
  ];
  for (const [podEnv, warned] of cases) {
    const env = await podServer(t, { podEnv });
    const log = capture();
    const durable = preflight.resilientExec(env.kc, { env: durableEnv(), logger: log.logger });
    const result = await runExec(durable, script({ lines: 2, pauseS: '0', code: 4, tag: 'fallback' }));
    assert.equal(log.warning.length, 1, log.warning.join('\n'));
    assert.match(log.warning[0], warned);
    assert.match(log.warning[0], /runs as a plain exec/);
    assert.equal(result.status.reason, 'NonZeroExitCode');
    assert.deepEqual(result.status.details.causes, [{ reason: 'ExitCode', message: '4' }]);
    assert.equal(result.stdout.toString(), expectedOutput(2).out);
    assert.equal(starts(env.folder(), 'fallback'), 1);
  }
});

test(`${F} a container whose runtime finds no sh (PATH holds only the command): the plain client's result, with one warning`, async (t) => {
  const bin = tempDir(t, 'no-sh');
  fs.symlinkSync('/usr/bin/printf', path.join(bin, 'printf'));
  const env = await podServer(t, { podEnv: { PATH: bin } });
  const log = capture();
  const durable = preflight.resilientExec(env.kc, { env: durableEnv(), logger: log.logger });
  const command = ['printf', 'hello'];
  const plain = await runExec(new k8s.Exec(env.kc), command);
  assert.deepEqual([plain.stdout.toString(), plain.status.status], ['hello', 'Success']);
  assert.deepEqual(await runExec(durable, command), plain);
  assert.equal(log.warning.length, 1, log.warning.join('\n'));
  assert.match(log.warning[0], /has no `sh` its runtime can find: this exec runs as a plain exec/);
});

test(`${F} a container whose environment sets a variable named as one of the pod program's own (_K...): one warning, and the exec runs plainly, the command's environment as it was`, async (t) => {
  // Names the built scripts use: the first, one only attach uses, and the
  // one that held whether the wake FIFO was open (set, it left a reattach
  // forking a tick at once, for ever).
  const scripts = require('../../pkg/pod-program.js');
  const guarded = (script) => script.split('\n').find((line) => line.startsWith('[ -z "${_K')).match(/_K[a-z]+/g);
  const names = [...new Set([guarded(scripts.start)[0], guarded(scripts.attach).at(-1), ...guarded(scripts.start).slice(-3)])];
  for (const name of names) {
    const env = await podServer(t, { podEnv: { [name]: 'theirs' } });
    const log = capture();
    const durable = preflight.resilientExec(env.kc, { env: durableEnv(), logger: log.logger });
    const plain = await runExec(new k8s.Exec(env.kc), ['sh', '-c', `echo "${'$'}${name}"; exit 4`]);
    const result = await runExec(durable, ['sh', '-c', `echo x >> named.starts; echo "${'$'}${name}"; exit 4`]);
    assert.equal(log.warning.length, 1, `${name}: ${log.warning.join('\n')}`);
    assert.match(log.warning[0], /a variable named as one of the durable exec's own/);
    assert.match(log.warning[0], /runs as a plain exec/);
    assert.deepEqual(result.status.details.causes, [{ reason: 'ExitCode', message: '4' }]);
    assert.equal(result.stdout.toString(), 'theirs\n');
    assert.equal(result.stdout.toString(), plain.stdout.toString());
    assert.equal(starts(env.folder(), 'named'), 1);
  }
});

test(`${F} the caller closing the stream before the status stops following the run and leaves the command running, as a plain exec's close does`, async (t) => {
  const env = await podServer(t);
  const durable = preflight.resilientExec(env.kc, { env: durableEnv(), logger: capture().logger });
  let socket;
  const run = runExec(durable, ['sh', '-c', 'echo x >> closed.starts; sleep 1; echo after > closed.after'], { onSocket: (s) => (socket = s) });
  await waitFor(() => socket && starts(env.folder(), 'closed') === 1, 5000, 'the script to start');
  socket.close();
  const result = await run;
  assert.equal(result.status, null, 'no status after the caller closed');
  await waitFor(() => fs.existsSync(path.join(env.folder(), 'closed.after')), 5000, 'the command to go on');
  // The run ends in the pod (its reader, no longer followed, writes `done`
  // last) before the pod's folder is removed.
  await waitFor(() => [...runFiles(env.folder()).values()].every((parts) => parts.includes('done')), 5000, 'the run to end in the pod');
});

test(`${F} an exec refused for good (the pod does not exist): the caller gets the plain client's own rejection`, async (t) => {
  const env = await podServer(t);
  const durable = preflight.resilientExec(env.kc, { env: durableEnv(), logger: capture().logger });
  const plain = new k8s.Exec(env.kc);
  const reasonOf = (p) => p.then(() => 'resolved', (e) => (e && (e.message || (e.error && e.error.message))) || String(e));
  const a = await reasonOf(plain.exec(NAMESPACE, 'no-such-pod', 'job', ['true'], null, null, null, false, () => {}));
  const b = await reasonOf(durable.exec(NAMESPACE, 'no-such-pod', 'job', ['true'], null, null, null, false, () => {}));
  assert.notEqual(a, 'resolved');
  assert.equal(b, a);
});

/**
 * A script of 10 lines that exits 5, through a second of refusals while it
 * runs: one warning, its output whole, its code, started once.
 */
async function ridesACut(env, tag) {
  const log = capture();
  const durable = preflight.resilientExec(env.kc, { env: durableEnv(), logger: log.logger });
  const run = runExec(durable, script({ lines: 10, code: 5, tag }));
  await waitFor(() => starts(env.folder(), tag) === 1, 5000, 'the script to start');
  await new Promise((r) => setTimeout(r, 700));
  await env.server.setPhase('refuse');
  await new Promise((r) => setTimeout(r, 1000));
  await env.server.setPhase('healthy');
  const result = await run;
  assert.equal(result.stdout.toString(), expectedOutput(10).out);
  assert.equal(result.stderr.toString(), expectedOutput(10).err);
  assert.deepEqual(result.status.details.causes, [{ reason: 'ExitCode', message: '5' }]);
  assert.equal(starts(env.folder(), tag), 1);
  assert.equal(log.warning.length, 1, log.warning.join('\n'));
}

test(`${F} in a BusyBox container (PATH holds only BusyBox's applets): cut and reattached, the output whole, the exit code, once`, async (t) => {
  const busybox = ['/usr/bin/busybox', '/bin/busybox'].find((p) => fs.existsSync(p));
  if (!busybox) {
    if (process.env.CI === 'true') assert.fail('busybox is missing: scripts/setup.sh --for-tests installs it');
    t.skip('busybox is not installed (scripts/setup.sh --for-tests installs it)');
    return;
  }
  const bin = tempDir(t, 'durable-busybox');
  const installed = require('node:child_process').spawnSync(busybox, ['--install', '-s', bin]);
  assert.equal(installed.status, 0, String(installed.stderr));
  assert.equal(fs.realpathSync(path.join(bin, 'sh')), fs.realpathSync(busybox));
  const env = await podServer(t, { podEnv: { PATH: bin } });
  await ridesACut(env, 'busybox');
  await waitFor(() => runFolders(env.folder()).length === 0, 5000, "the run's files to be removed");
});

test(`${F} in a container whose /dev/shm cannot be written (the claim in /var/tmp): cut and reattached, the output whole, the exit code, once`, async (t) => {
  if (!asRoot(t)) return;
  const env = await podServer(t, { readOnlyShm: true });
  await ridesACut(env, 'noshm');
  const [runId] = [...runFiles(env.folder()).keys()];
  assert.ok(fs.existsSync(path.join('/var/tmp/.k8s-auth-preflight', runId)), 'the claim is in /var/tmp');
  await waitFor(() => runFolders(env.folder()).length === 0, 5000, "the run's files to be removed");
  // A start of the same run that arrives late finds it claimed: nothing starts again.
  const [start] = startSteps(env.server);
  const again = await runExec(new k8s.Exec(env.kc), start.command);
  assert.notEqual(again.status && again.status.status, 'Success');
  assert.equal(starts(env.folder(), 'noshm'), 1, 'a late start started nothing');
});

const asRoot = (t) => {
  if (process.getuid() === 0) return true;
  if (process.env.CI === 'true') assert.fail('this test makes a mount namespace: CI runs as root');
  t.skip('needs root (a mount namespace per exec)');
  return false;
};

test(`${F} a file where the claims' folder in /dev/shm would be: the claim is made in /var/tmp, and the command runs once, durably`, async (t) => {
  if (!asRoot(t)) return;
  const env = await podServer(t, { shmClaimsFile: true });
  const log = capture();
  const durable = preflight.resilientExec(env.kc, { env: durableEnv(), logger: log.logger });
  const result = await runExec(durable, ['sh', '-c', 'echo x >> shmfile.starts; echo out; exit 3']);
  assert.deepEqual(result.status.details.causes, [{ reason: 'ExitCode', message: '3' }], JSON.stringify(result.status));
  assert.equal(result.stdout.toString(), 'out\n');
  assert.equal(starts(env.folder(), 'shmfile'), 1);
  assert.deepEqual(log.warning, []);
  assert.equal(startSteps(env.server).length, 1, 'one start, durable');
});

test(`${F} without a writable /dev/shm, a start whose answer is lost and whose command removes the dot folder is not started again (the claim is in /var/tmp)`, async (t) => {
  if (!asRoot(t)) return;
  const env = await podServer(t, { readOnlyShm: true });
  env.server.armTrigger({ route: 'exec pods' }, [{ phase: 'applyThenCut', ms: 0 }, { phase: 'healthy' }]);
  const durable = preflight.resilientExec(env.kc, { env: durableEnv(), logger: capture().logger });
  const result = await runExec(durable, ['sh', '-c', 'echo x >> wiper.starts; rm -rf "$TMPDIR/.k8s-auth-preflight"; sleep 1; echo out']);
  assert.notEqual(result.status.status, 'Success', 'its record is gone: the outcome is not known');
  await new Promise((r) => setTimeout(r, 1500));
  assert.equal(starts(env.folder(), 'wiper'), 1, 'started once');
});

test(`${F} a temp folder that is /dev/shm, by any name: a start whose answer is lost and whose command empties its temp folder is not started again (the claim is kept apart)`, async (t) => {
  if (!asRoot(t)) return;
  for (const tmp of ['/dev/shm', '/dev/shm//', '/dev//shm', '/dev/./shm']) {
    const env = await podServer(t, { podShm: true, podEnv: { TMPDIR: tmp } });
    env.server.armTrigger({ route: 'exec pods' }, [{ phase: 'applyThenCut', ms: 0 }, { phase: 'healthy' }]);
    const durable = preflight.resilientExec(env.kc, { env: durableEnv(), logger: capture().logger });
    const result = await runExec(durable, ['sh', '-c', 'echo x >> shm-wiper.starts; find "$TMPDIR/" -mindepth 1 -delete; sleep 1; echo out']);
    await new Promise((r) => setTimeout(r, 1500));
    assert.equal(starts(env.folder(), 'shm-wiper'), 1, `${tmp}: started once`);
    // Its output whole, or a failure: never a success without it.
    if (result.status && result.status.status === 'Success') assert.equal(result.stdout.toString(), 'out\n', tmp);
  }
});

test(`${F} a /dev/shm with no room for a claim's mark (no free inode): one warning, and the exec runs plainly (once)`, async (t) => {
  if (!asRoot(t)) return;
  const { execFileSync } = require('node:child_process');
  const env = await podServer(t, { podShm: true });
  const shm = path.join(env.folder(), 'shm');
  fs.mkdirSync(shm, { recursive: true });
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m,nr_inodes=4', 'tmpfs', shm]);
  // (Unmounted here, before the pod's folder is removed.)
  try {
    await noInode(shm, env);
  } finally {
    execFileSync('umount', ['-l', shm]);
  }
});

async function noInode(shm, env) {
  fs.mkdirSync(path.join(shm, '.k8s-auth-preflight'));
  for (let i = 0; i < 5; i++) {
    try {
      fs.writeFileSync(path.join(shm, `f${i}`), '');
    } catch {
      // no inode left
    }
  }
  const log = capture();
  const durable = preflight.resilientExec(env.kc, { env: durableEnv(), logger: log.logger });
  const r = await runExec(durable, ['sh', '-c', 'echo x >> noinode.starts; echo hi; exit 3']);
  assert.deepEqual(r.status && r.status.details && r.status.details.causes, [{ reason: 'ExitCode', message: '3' }], JSON.stringify(r.status));
  assert.equal(r.stdout.toString(), 'hi\n');
  assert.equal(starts(env.folder(), 'noinode'), 1);
  assert.equal(log.warning.length, 1, log.warning.join('\n'));
  assert.match(log.warning[0], /runs as a plain exec/);
}

test(`${F} in a container without /proc, a command that empties its temp folder: never a success with its output missing`, async (t) => {
  if (!asRoot(t)) return;
  // Every `sh` runs in a mount namespace whose /proc is an empty tmpfs.
  const bin = tempDir(t, 'noproc-sh');
  fs.writeFileSync(path.join(bin, 'sh'), `#!/bin/dash\nif [ -r /proc/self/stat ]; then exec unshare -m --propagation private /bin/dash -c 'mount -t tmpfs none /proc && exec /bin/dash "$@"' dash "$@"; fi\nexec /bin/dash "$@"\n`, { mode: 0o755 });
  const env = await podServer(t, { podEnv: { PATH: `${bin}:/usr/local/bin:/usr/bin:/bin` } });
  const durable = preflight.resilientExec(env.kc, { env: durableEnv(), logger: capture().logger });
  const healthy = await runExec(durable, ['sh', '-c', 'echo hi; exit 3']);
  assert.deepEqual(healthy.status && healthy.status.details && healthy.status.details.causes, [{ reason: 'ExitCode', message: '3' }], JSON.stringify(healthy.status));
  assert.equal(healthy.stdout.toString(), 'hi\n');
  for (const code of [0, 4]) {
    const r = await runExec(durable, ['sh', '-c', `find "$TMPDIR" -mindepth 1 -delete; sleep 0.5; echo out; echo err >&2; exit ${code}`]);
    const whole = r.stdout.toString() === 'out\n' && r.stderr.toString() === 'err\n';
    if (!whole) assert.equal(r.status && r.status.status, 'Failure', `${code}: ${JSON.stringify(r.status)} with ${JSON.stringify(r.stdout.toString())}`);
    if (!whole) assert.notEqual(r.status.reason, 'NonZeroExitCode', `${code}: a code without its output`);
  }
});

test(`${F} a command that keeps emptying its temp folder (dot files too) from a child: the exec ends with its code and output, never a hang`, async (t) => {
  const env = await podServer(t);
  const durable = preflight.resilientExec(env.kc, { env: durableEnv(), logger: capture().logger });
  const wipe = 'find "$TMPDIR" -mindepth 1 -delete 2>/dev/null';
  // (Three times each: whether the waiter has ended before the reader
  // reads its last word is a race the test must meet both ways.)
  for (const code of [0, 3, 0, 3, 0, 3]) {
    // (After a moment: a reader that had not yet opened the output files
    // would find the record gone, a failure that is not this test's.)
    const command = `sleep 0.2; ${wipe}; (i=0; while [ $i -lt 40 ]; do ${wipe}; sleep 0.05; i=$((i+1)); done) >/dev/null 2>&1 & echo hi; echo there >&2; exit ${code}`;
    const result = await runExec(durable, ['sh', '-c', command]);
    if (code === 0) assert.equal(result.status && result.status.status, 'Success', JSON.stringify(result.status));
    else assert.deepEqual(result.status && result.status.details && result.status.details.causes, [{ reason: 'ExitCode', message: '3' }], JSON.stringify(result.status));
    assert.equal(result.stdout.toString(), 'hi\n');
    assert.equal(result.stderr.toString(), 'there\n');
    await new Promise((r) => setTimeout(r, 2200));
  }
});

test(`${F} a container whose sh is bash and whose environment sets SHELLOPTS, BASHOPTS or an exported function: the plain client's result (bash would rewrite the options for the command, trace our lines, or run the function in place of a utility), with one warning`, async (t) => {
  const bin = tempDir(t, 'bash-sh');
  fs.symlinkSync('/bin/bash', path.join(bin, 'sh'));
  const PATH = `${bin}:/usr/local/bin:/usr/bin:/bin`;
  // What a command's bash sees of the options it was given.
  const probe = ['bash', '-c', 'echo "$SHELLOPTS"; shopt -q nullglob && echo nullglob; false; echo after false'];
  // (No pipeline: under xtrace its two sides trace in the order the
  // scheduler runs them, so the plain client's own stderr would vary.)
  const printer = ['sh', '-c', `echo hi; sleep 0.3; awk 'BEGIN { for (k in ENVIRON) if (k ~ /^_K/) print k }' >&2; echo there >&2; exit 0`];
  const cases = [
    { SHELLOPTS: 'errexit' },
    { SHELLOPTS: 'braceexpand' },
    { SHELLOPTS: 'errexit:nounset:pipefail:noclobber:allexport' },
    { SHELLOPTS: 'xtrace' },
    { BASHOPTS: 'nullglob' },
    { 'BASH_FUNC_tail%%': '() { echo FAKE; }', 'BASH_FUNC_cat%%': '() { echo FAKE; }' },
  ];
  for (const vars of cases) {
    const env = await podServer(t, { podEnv: { PATH, ...vars } });
    const log = capture();
    const durable = preflight.resilientExec(env.kc, { env: durableEnv(), logger: log.logger });
    const name = JSON.stringify(vars);
    for (const command of [probe, printer]) {
      const plain = await runExec(new k8s.Exec(env.kc), command);
      assert.deepEqual(await runExec(durable, command), plain, `${name}: ${command[0]}`);
    }
    assert.equal(log.warning.length, 2, `${name}: one per exec: ${log.warning.join('\n')}`);
    assert.match(log.warning[0], /SHELLOPTS, BASHOPTS or an exported function/);
    assert.match(log.warning[0], /runs as a plain exec/);
  }
  // With none set, bash as sh runs the exec durably: no warning.
  const env = await podServer(t, { podEnv: { PATH } });
  const log = capture();
  const durable = preflight.resilientExec(env.kc, { env: durableEnv(), logger: log.logger });
  assert.deepEqual(await runExec(durable, probe), await runExec(new k8s.Exec(env.kc), probe));
  assert.deepEqual(log.warning, []);
});

test(`${F} the caller's stdout and stderr are ended at the status, as the plain client ends them (this process's own are not), with or without a cut`, async (t) => {
  const env = await podServer(t);
  const clients = {
    'client-node': new k8s.Exec(env.kc),
    durable: preflight.resilientExec(env.kc, { env: durableEnv(), logger: capture().logger }),
    'durable off': preflight.resilientExec(env.kc, { env: durableEnv({ DURABLE_EXEC: 'off' }), logger: capture().logger }),
  };
  const { PassThrough } = require('node:stream');
  const ended = async (name, cut) => {
    const out = new PassThrough();
    const err = new PassThrough();
    const chunks = { out: [], err: [] };
    out.on('data', (c) => chunks.out.push(c));
    err.on('data', (c) => chunks.err.push(c));
    const finished = (s) => new Promise((resolve) => s.once('end', () => resolve(true)));
    const bothEnded = Promise.all([finished(out), finished(err)]);
    const status = await new Promise((resolve, reject) => {
      Promise.resolve(clients[name].exec(NAMESPACE, POD, 'job', ['sh', '-c', `echo a; echo b >&2; sleep ${cut ? 1.5 : 0}; echo c; exit 3`], out, err, null, false, resolve)).catch(reject);
      if (cut) {
        setTimeout(async () => {
          await env.server.setPhase('refuse');
          setTimeout(() => env.server.setPhase('healthy'), 300);
        }, 400);
      }
    });
    const bound = new Promise((resolve) => setTimeout(() => resolve(false), STATUS_BOUND_MS).unref());
    const got = await Promise.race([bothEnded.then(() => true), bound]);
    return { status, got, out: Buffer.concat(chunks.out).toString(), err: Buffer.concat(chunks.err).toString() };
  };
  for (const name of Object.keys(clients)) {
    const r = await ended(name, false);
    assert.equal(r.got, true, `${name}: the caller's streams were not ended within ${STATUS_BOUND_MS} ms of the status`);
    assert.deepEqual([r.out, r.err], ['a\nc\n', 'b\n'], name);
  }
  const r = await ended('durable', true);
  assert.equal(r.got, true, 'durable, cut: the streams were not ended');
  assert.deepEqual([r.out, r.err, r.status.details.causes], ['a\nc\n', 'b\n', [{ reason: 'ExitCode', message: '3' }]]);
});

test(`${F} SIGTERM to the hook while its command runs, after the command removed the dot folder (its pid file with it): the command is still stopped`, async (t) => {
  const env = await podServer(t);
  const child = hookScript(t, env, ['sh', '-c', 'echo $$ > main.pid; rm -rf "$TMPDIR/.k8s-auth-preflight"; sleep 60 & echo $! > child.pid; wait']);
  const { hook, output, exited } = startHook(t, child);
  const pidFile = (name) => path.join(env.folder(), name);
  await waitFor(() => fs.existsSync(pidFile('child.pid')) && fs.existsSync(pidFile('main.pid')), 10_000, 'the script to start');
  await new Promise((r) => setTimeout(r, 200));
  const pids = ['child.pid', 'main.pid'].map((n) => Number(fs.readFileSync(pidFile(n), 'utf8').trim()));
  for (const pid of pids) assert.ok(alive(pid), `${pid} runs before the signal`);
  hook.kill('SIGTERM');
  await waitFor(() => pids.every((pid) => !alive(pid)), 5000, `the script's processes ${pids} to be gone (hook said: ${output()})`);
  const { signal } = await exited;
  assert.equal(signal, 'SIGTERM');
});

test(`${F} a command that removes its own run's folder gets its own exit code and output, as from the plain client; cut after that, the exec fails as unknown and is not started again`, async (t) => {
  const env = await podServer(t);
  const durable = preflight.resilientExec(env.kc, { env: durableEnv(), logger: capture().logger });
  const plain = new k8s.Exec(env.kc);
  const command = ['sh', '-c', 'echo x >> remover.starts; echo before; sleep 0.5; rm -rf "$TMPDIR"/.k8s-auth-preflight; sleep 0.5; echo after; echo err >&2; exit 4'];
  const a = await runExec(plain, command);
  const b = await runExec(durable, command);
  assert.deepEqual(b, a);
  assert.equal(a.stdout.toString(), 'before\nafter\n');
  assert.equal(starts(env.folder(), 'remover'), 2, 'once each');

  // The record gone and the stream cut: nothing can say how it ended.
  const log = capture();
  const cutOne = preflight.resilientExec(env.kc, { env: durableEnv(), logger: log.logger });
  const run = runExec(cutOne, ['sh', '-c', 'echo x >> cut-remover.starts; rm -rf "$TMPDIR"/.k8s-auth-preflight; sleep 3; echo after; exit 4']);
  await waitFor(() => starts(env.folder(), 'cut-remover') === 1, 5000, 'the script to start');
  await new Promise((r) => setTimeout(r, 300));
  await env.server.setPhase('refuse');
  await new Promise((r) => setTimeout(r, 300));
  await env.server.setPhase('healthy');
  const result = await run;
  assert.equal(result.status.status, 'Failure');
  assert.equal(result.status.reason, 'RunRecordMissing');
  assert.match(result.status.message, /is not started again; its exit code is unknown/);
  await new Promise((r) => setTimeout(r, 3500));
  assert.equal(starts(env.folder(), 'cut-remover'), 1);
});

// ---- found by an attack on the packed package ---------------------------------

test(`${F} a start whose upgrade the apiserver answers slowly (13 s) is awaited, and the command runs once, even after its folder is cleaned up`, async (t) => {
  const env = await podServer(t);
  const durable = preflight.resilientExec(env.kc, { env: durableEnv({ REQUEST_TIMEOUT_MS: 3000 }), logger: capture().logger });
  env.server.armTrigger({ route: 'exec pods' }, [{ phase: 'slow', slowMs: 6000, ms: 200 }, { phase: 'healthy' }]);
  const result = await runExec(durable, ['sh', '-c', 'echo ran >> slow.starts; exit 3']);
  assert.deepEqual(result.status.details.causes, [{ reason: 'ExitCode', message: '3' }]);
  // Anything late that reached the pod must find the run claimed.
  await new Promise((r) => setTimeout(r, 7000));
  assert.equal(starts(env.folder(), 'slow'), 1);
});

test(`${F} a late start of a run already delivered finds it claimed: it starts nothing and ends at once`, async (t) => {
  const env = await podServer(t);
  const durable = preflight.resilientExec(env.kc, { env: durableEnv(), logger: capture().logger });
  const result = await runExec(durable, ['sh', '-c', 'echo ran >> late.starts']);
  assert.deepEqual(result.status, { metadata: {}, status: 'Success' });
  // The start step again, as a late upgrade would run it in the pod.
  const start = startSteps(env.server)[0];
  assert.ok(start, 'a start step was logged');
  const again = await runExec(new k8s.Exec(env.kc), start.command);
  assert.deepEqual(again.status, { metadata: {}, status: 'Success' });
  assert.equal(again.stdout.length, 0);
  assert.equal(starts(env.folder(), 'late'), 1, 'the late start ran the command again');
});

test(`${F} commands the plain exec runs as programs: exec, exit, echo -e, a missing program, a string command, an empty one: the plain client's results`, async (t) => {
  const env = await podServer(t);
  const durable = preflight.resilientExec(env.kc, { env: durableEnv(), logger: capture().logger });
  const plain = new k8s.Exec(env.kc);
  const outcome = async (api, command) => {
    try {
      const r = await runExec(api, command);
      return { status: r.status, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
    } catch (error) {
      return { rejected: String((error && error.message) || error) };
    }
  };
  for (const command of [['exec', 'true'], ['exit', '0'], ['echo', '-e', 'a\\tb'], ['printf', '%s|', 'x y'], ['no-such-program-here'], 'echo hi', [], ['']]) {
    const a = await outcome(plain, command);
    const b = await outcome(durable, command);
    assert.deepEqual(b, a, JSON.stringify(command));
  }
});

test(`${F} a stream the server holds open after its status: the durable exec delivers at the status, as the plain client does, not at the end of the stream`, async (t) => {
  const env = await podServer(t);
  env.server.configure({ execResults: [{ contains: 'held-open', openAfterStatusMs: 2 * RUN_LIMIT_MS }] });
  const log = capture();
  // (A held stream answers no ping either: a pong deadline longer than the
  // wait keeps a reattach from hiding a wait for the end.)
  const durable = preflight.resilientExec(env.kc, { env: durableEnv({ EXEC_PONG_DEADLINE_MS: 3 * HELD_LIMIT_MS }), logger: log.logger });
  const command = ['sh', '-c', 'echo held-open; echo e >&2; exit 5'];
  for (const [name, api] of [['plain', new k8s.Exec(env.kc)], ['durable', durable]]) {
    let timer;
    const late = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${name}: no status within ${HELD_LIMIT_MS} ms`)), HELD_LIMIT_MS);
    });
    const r = await Promise.race([runExec(api, command), late]).finally(() => clearTimeout(timer));
    assert.deepEqual(r.status && r.status.details.causes, [{ reason: 'ExitCode', message: '5' }], name);
    assert.equal(r.stdout.toString(), 'held-open\n', name);
    assert.equal(r.stderr.toString(), 'e\n', name);
  }
  assert.equal(env.server.execs.filter((e) => JSON.stringify(e.command).includes('held-open')).length, 2, 'one exec by each client');
  assert.deepEqual(log.warning, [], 'no cut, no reattach');
});

test(`${F} the command's environment is the plain exec's: LC_ALL unset, set, empty or odd, LANG set (our utilities run in the C locale, the command never does), and variables named as ours`, async (t) => {
  // (PWD is set by the shell that starts the command: docs/CALLS.md.)
  const entries = (bytes) => bytes.toString('latin1').split('\0').filter((e) => e && !e.startsWith('PWD=')).sort();
  // Every name the pod program's source gives a value, and the short names
  // of the first version, set in the container's environment with odd values.
  const sourceNames = [...ourNames(podSource()).variables];
  assert.ok(sourceNames.length > 30 && sourceNames.includes('run_path'), sourceNames.join(' '));
  const odd = ["it's", '42', 's\nt', '$(w)', 'de_DE.UTF-8', '7'];
  const ours = Object.fromEntries(
    [...sourceNames, 'd', 'b', 'x', 'i', 'iz', 'lx', 'la', 'own', 'cm', 'so', 'wp', 'o', 'e', 'r', 'c', 'l', 'u', 'f', 'k', 'se', 'm', 'n', 'zo', 'ze', 'q', 'z', 's', 't', 'p'].map((name, i) => [name, odd[i % odd.length]]),
  );
  for (const podEnv of [{}, { LANG: 'C.UTF-8' }, { LC_ALL: 'de_DE.UTF-8', LANG: 'C.UTF-8' }, { LC_ALL: '' }, { LC_ALL: 'a b\nc=$(x)' }, ours, { ...ours, LC_ALL: 'C.UTF-8' }]) {
    const env = await podServer(t, { podEnv });
    const durable = preflight.resilientExec(env.kc, { env: durableEnv(), logger: capture().logger });
    const a = await runExec(new k8s.Exec(env.kc), ['env', '-0']);
    const b = await runExec(durable, ['env', '-0']);
    assert.equal(b.status.status, 'Success', JSON.stringify(podEnv));
    assert.deepEqual(entries(b.stdout), entries(a.stdout), JSON.stringify(podEnv));
  }
  // Under bash and BusyBox as `sh` too (which set SHLVL and `_` of their own).
  const shells = tempDir(t, 'durable-shells');
  const system = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
  const found = ['/bin/bash', '/usr/bin/busybox', '/bin/busybox'].filter((p) => fs.existsSync(p)).map((p) => fs.realpathSync(p));
  for (const shell of [...new Set(found)]) {
    const bin = path.join(shells, path.basename(shell));
    fs.mkdirSync(bin);
    fs.symlinkSync(shell, path.join(bin, 'sh'));
    const podEnv = { ...ours, PATH: `${bin}:${system}` };
    const env = await podServer(t, { podEnv });
    const durable = preflight.resilientExec(env.kc, { env: durableEnv(), logger: capture().logger });
    const theirs = (bytes) => entries(bytes).filter((e) => !e.startsWith('SHLVL=') && !e.startsWith('_='));
    const a = await runExec(new k8s.Exec(env.kc), ['env', '-0']);
    const b = await runExec(durable, ['env', '-0']);
    assert.equal(b.status.status, 'Success', shell);
    assert.deepEqual(theirs(b.stdout), theirs(a.stdout), shell);
  }
});

test(`${F} a command that cleans its temp folder (rm -rf "$TMPDIR"/*) gets its own exit code`, async (t) => {
  const env = await podServer(t);
  const durable = preflight.resilientExec(env.kc, { env: durableEnv(), logger: capture().logger });
  const result = await runExec(durable, ['sh', '-c', 'sleep 0.3; rm -rf "${TMPDIR:-/tmp}"/*; echo cleaned; exit 4']);
  assert.deepEqual(result.status.details.causes, [{ reason: 'ExitCode', message: '4' }]);
  assert.equal(result.stdout.toString(), 'cleaned\n');
});

test(`${F} output of background children that outlive the command arrives, as the plain exec waits for it`, async (t) => {
  const env = await podServer(t);
  const durable = preflight.resilientExec(env.kc, { env: durableEnv(), logger: capture().logger });
  const plain = new k8s.Exec(env.kc);
  const command = ['sh', '-c', '(sleep 1; echo late; echo late-err >&2) & echo early'];
  const a = await runExec(plain, command);
  const b = await runExec(durable, command);
  assert.equal(a.stdout.toString(), 'early\nlate\n');
  assert.equal(b.stdout.toString(), a.stdout.toString());
  assert.equal(b.stderr.toString(), a.stderr.toString());
  assert.deepEqual(b.status, a.status);
});

test(`${F} output reaches the caller soon after it is written: what was printed before the pod is deleted arrives`, async (t) => {
  const env = await podServer(t);
  const durable = preflight.resilientExec(env.kc, { env: durableEnv(), logger: capture().logger });
  const out = sink();
  const result = new Promise((resolve) => {
    durable.exec(NAMESPACE, POD, 'job', ['sh', '-c', 'sleep 0.5; echo important; sleep 10'], out, sink(), null, false, resolve);
  });
  await waitFor(() => fs.existsSync(path.join(env.folder(), 'tmp')), 5000, 'the pod folder');
  await new Promise((r) => setTimeout(r, 1100));
  await env.kc.makeApiClient(k8s.CoreV1Api).deleteNamespacedPod({ namespace: NAMESPACE, name: POD, gracePeriodSeconds: 0 });
  const status = await result;
  assert.equal(status.reason, 'PodGone');
  assert.equal(out.bytes().toString(), 'important\n');
});

test(`${F} SIGTERM while the apiserver is briefly unreachable: the stop is retried, and the command is gone once the hook has exited`, async (t) => {
  const env = await podServer(t);
  const child = hookScript(t, env, ['sh', '-c', 'echo $$ > cmd.pid; sleep 60']);
  const { hook, output, exited } = startHook(t, child);
  const pidFile = path.join(env.folder(), 'cmd.pid');
  await waitFor(() => fs.existsSync(pidFile), 10_000, 'the command to start');
  await new Promise((r) => setTimeout(r, 300));
  const pid = Number(fs.readFileSync(pidFile, 'utf8').trim());
  await env.server.setPhase('refuse');
  hook.kill('SIGTERM');
  await new Promise((r) => setTimeout(r, 1500));
  await env.server.setPhase('healthy');
  const { signal } = await exited;
  assert.equal(signal, 'SIGTERM');
  assert.equal(alive(pid), false, `the command outlived the hook (hook said: ${output()})`);
});

// ---- found by a second attack on the packed package ---------------------------

test(`${F} a command that signals its own process group (kill 0, or an EXIT trap doing it) gets the plain client's result, and its output`, async (t) => {
  const env = await podServer(t);
  const durable = preflight.resilientExec(env.kc, { env: durableEnv(), logger: capture().logger });
  const plain = new k8s.Exec(env.kc);
  for (const command of [
    ['sh', '-c', 'echo before; echo e >&2; kill 0; echo never'],
    ['sh', '-c', 'trap "kill 0" EXIT; echo hi; echo e >&2; exit 3'],
  ]) {
    const a = await runExec(plain, command);
    const b = await runExec(durable, command);
    assert.deepEqual(b, a, JSON.stringify(command));
    assert.ok(b.stdout.length > 0 && b.stderr.length > 0, JSON.stringify(command));
  }
});

test(`${F} a command that deletes everything in its temp folder (find -delete) gets the plain client's result, its output whole`, async (t) => {
  const env = await podServer(t);
  const durable = preflight.resilientExec(env.kc, { env: durableEnv(), logger: capture().logger });
  const plain = new k8s.Exec(env.kc);
  const command = ['sh', '-c', 'echo run >> finder.starts; echo a; echo a2 >&2; sleep 0.3; find "${TMPDIR:-/tmp}" -mindepth 1 -delete; sleep 0.3; echo b; echo c >&2; exit 4'];
  const a = await runExec(plain, command);
  const b = await runExec(durable, command);
  assert.deepEqual(b, a);
  assert.equal(b.stdout.toString(), 'a\nb\n');
  assert.equal(b.stderr.toString(), 'a2\nc\n');
});

test(`${F} a status whose exit code a broken proxy rewrote (000, 300, a Failure saying 0, -1) is not taken as the command's: the code is read from the pod`, async (t) => {
  const env = await podServer(t);
  const durable = preflight.resilientExec(env.kc, { env: durableEnv(), logger: capture().logger });
  for (const [said, code] of [['000', 3], ['300', 3], ['0', 3], ['0', 0], ['-1', 4]]) {
    const tag = `garbled-${said}-${code}`;
    // Only the start carries the command's text: the steps that confirm the code get the server's true status.
    env.server.configure({ execResults: [{ contains: tag, statusExitCode: said }] });
    const r = await runExec(durable, ['sh', '-c', `echo ${tag}; exit ${code}`]);
    if (code === 0) assert.equal(r.status && r.status.status, 'Success', `${said}: ${JSON.stringify(r.status)}`);
    else assert.deepEqual(r.status && r.status.details && r.status.details.causes, [{ reason: 'ExitCode', message: String(code) }], `${said}: ${JSON.stringify(r.status)}`);
    assert.equal(r.stdout.toString(), `${tag}\n`, said);
  }
});

test(`${F} output the pod cannot keep (a file size limit in the container stops the relay writing it): a Failure saying the output is incomplete, never a success`, async (t) => {
  // The container's `sh` runs under a file size limit of 20 KiB (ulimit -f
  // 40), and with it everything the exec starts: the command's output goes
  // to the caller, but its copy in the pod's temp folder cannot be written.
  const bin = tempDir(t, 'fsize-sh');
  fs.writeFileSync(path.join(bin, 'sh'), '#!/bin/sh\nulimit -f 40\nexec /bin/sh "$@"\n', { mode: 0o755 });
  const env = await podServer(t, { podEnv: { PATH: `${bin}:/usr/local/bin:/usr/bin:/bin` } });
  const durable = preflight.resilientExec(env.kc, { env: durableEnv(), logger: capture().logger });
  const r = await runExec(durable, ['sh', '-c', 'echo started >> big.starts; head -c 60000 /dev/zero | tr "\\0" a; echo last >&2; exit 0']);
  assert.equal(r.status && r.status.status, 'Failure', JSON.stringify(r.status));
  assert.equal(r.status.reason, 'OutputLost');
  assert.match(r.status.message, /could not be kept in the pod/);
  assert.ok(r.stdout.length < 60000, 'the output is not whole (it could not be)');
  assert.equal(starts(env.folder(), 'big'), 1, 'started once');
});

// A 64 KiB tmpfs for the pod's temp folder (root only), removed after.
function smallTmpfs(t) {
  const { execFileSync } = require('node:child_process');
  const dir = fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'full-tmp-'));
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', dir]);
  t.after(() => {
    execFileSync('umount', ['-l', dir]);
    fs.rmSync(dir, { recursive: true, force: true });
  });
  return dir;
}

const runFilesIn = (tmp) => {
  const dir = path.join(tmp, '.k8s-auth-preflight');
  return fs.existsSync(dir) ? fs.readdirSync(dir) : [];
};

test(`${F} a full temp folder in the container: one warning naming it, and the exec runs plainly (once), never a hang`, { skip: process.getuid() !== 0 && 'needs root (a tmpfs)' }, async (t) => {
  // Something else has filled the pod's temp folder: the run's files can be
  // made, but nothing can be written into them.
  const full = smallTmpfs(t);
  try {
    fs.writeFileSync(path.join(full, 'filler'), Buffer.alloc(65536));
  } catch {
    // full
  }
  const env = await podServer(t, { podEnv: { TMPDIR: full } });
  const log = capture();
  const durable = preflight.resilientExec(env.kc, { env: durableEnv(), logger: log.logger });
  const r = await runExec(durable, ['sh', '-c', 'echo started >> full.starts; echo hello; exit 3']);
  assert.deepEqual(r.status && r.status.details && r.status.details.causes, [{ reason: 'ExitCode', message: '3' }], JSON.stringify(r.status));
  assert.equal(r.stdout.toString(), 'hello\n');
  assert.equal(log.warning.length, 1, log.warning.join('\n'));
  assert.match(log.warning[0], /cannot make or write the run's files in its temp folder/);
  assert.match(log.warning[0], /runs as a plain exec/);
  assert.equal(starts(env.folder(), 'full'), 1, 'started once');
  assert.deepEqual(runFilesIn(full).filter((n) => !n.endsWith('.c')), [], 'nothing of the run is left');
});

test(`${F} a temp folder the command fills: a Failure saying the output could not be kept, the run's files removed after, and the next exec runs durably`, { skip: process.getuid() !== 0 && 'needs root (a tmpfs)' }, async (t) => {
  const small = smallTmpfs(t);
  const env = await podServer(t, { podEnv: { TMPDIR: small } });
  const log = capture();
  const durable = preflight.resilientExec(env.kc, { env: durableEnv(), logger: log.logger });
  const r = await runExec(durable, ['sh', '-c', 'echo hello; head -c 70000 /dev/zero >"$TMPDIR/filler" 2>/dev/null; head -c 9000 /dev/zero | tr "\\0" a; exit 0']);
  assert.equal(r.status && r.status.status, 'Failure', JSON.stringify(r.status));
  assert.equal(r.status.reason, 'OutputLost');
  assert.match(r.status.message, /could not be kept in the pod/);
  // What arrived is a part of what the command wrote, never more (its copy
  // of "hello" may or may not have been written before the folder filled).
  const wrote = `hello\n${'a'.repeat(9000)}`;
  assert.ok(wrote.startsWith(r.stdout.toString()) && r.stdout.length < wrote.length, JSON.stringify(r.stdout.toString().slice(0, 40)));
  // Its files are removed (the claim's mark may stay), by a clean-up of its own.
  await waitFor(() => runFilesIn(small).filter((n) => /\.(out|err|code|lost|w|pid)$/.test(n)).length === 0, 10_000, "the run's files removed");
  fs.rmSync(path.join(small, 'filler'));
  const next = await runExec(durable, ['sh', '-c', 'echo again; exit 0']);
  assert.equal(next.status && next.status.status, 'Success', JSON.stringify(next.status));
  assert.equal(next.stdout.toString(), 'again\n');
  assert.deepEqual(log.warning.filter((w) => /plain exec/.test(w)), [], 'durable, not plain');
});

test(`${F} a container whose file size limit is 0 (ulimit -f 0): one warning, and the exec runs plainly, never a hang`, async (t) => {
  const bin = tempDir(t, 'fsize0-sh');
  fs.writeFileSync(path.join(bin, 'sh'), '#!/bin/sh\nulimit -f 0\nexec /bin/sh "$@"\n', { mode: 0o755 });
  const env = await podServer(t, { podEnv: { PATH: `${bin}:/usr/local/bin:/usr/bin:/bin` } });
  const log = capture();
  const durable = preflight.resilientExec(env.kc, { env: durableEnv(), logger: log.logger });
  const r = await runExec(durable, ['sh', '-c', 'echo hello; echo there >&2; exit 0']);
  assert.equal(r.status && r.status.status, 'Success', JSON.stringify(r.status));
  assert.equal(r.stdout.toString(), 'hello\n');
  assert.equal(r.stderr.toString(), 'there\n');
  assert.equal(log.warning.length, 1, log.warning.join('\n'));
  assert.match(log.warning[0], /cannot make or write the run's files/);
});

test(`${F} a finish step whose status a proxy garbles: a command's own 93 is never taken for output lost; the code is unknown after a few reads`, async (t) => {
  const env = await podServer(t);
  const durable = preflight.resilientExec(env.kc, { env: durableEnv(), logger: capture().logger });
  // Only the finish step prints the run's record ("<code> <sizes>"): its last line.
  const finishing = require('../../pkg/pod-program.js').finish.split('\n').pop();
  assert.match(finishing, /^echo "\$_K\w+ \$_K\w+ \$_K\w+"$/);
  for (const said of ['abc', '0', '3']) {
    env.server.configure({ execResults: [{ contains: finishing, statusExitCode: said }] });
    const before = env.server.execs.length;
    const r = await runExec(durable, ['sh', '-c', `echo own-${said}; exit 93`]);
    assert.equal(r.status && r.status.status, 'Failure', `${said}: ${JSON.stringify(r.status)}`);
    assert.equal(r.status.reason, 'ExitCodeUnknown', `${said}: ${JSON.stringify(r.status)}`);
    assert.match(r.status.message, /could not be read/);
    assert.equal(r.stdout.toString(), `own-${said}\n`);
    const finishes = env.server.execs.slice(before).filter((e) => e.command.join(' ').includes(finishing));
    assert.equal(finishes.length, 3, `${said}: ${finishes.length} finishes`);
  }
});

test(`${F} a running command named like a zombie's stat line ("x) Z <pid>" and a newline) is not taken for one: it ends with its own code (the stopped child it leaves is hung up by the kernel)`, async (t) => {
  const env = await podServer(t);
  const durable = preflight.resilientExec(env.kc, { env: durableEnv(), logger: capture().logger });
  // A stopped child, and the command running on as a copy of `sleep` whose
  // name reads as a zombie whose parent is that child.
  const command = 'sleep 30 >/dev/null 2>&1 </dev/null & s=$!; sleep 0.3; kill -STOP $s; n="$(printf "x) Z %s\\nq" $s)"; n=${n%q}; cp "$(command -v sleep)" "$TMPDIR/$n"; echo started; exec "$TMPDIR/$n" 2';
  const r = await runExec(durable, ['sh', '-c', command]);
  assert.equal(r.status && r.status.status, 'Success', JSON.stringify(r.status));
  assert.equal(r.stdout.toString(), 'started\n');
});

test(`${F} a command that stops the processes that copy its output into the pod's files, and ends: they are let go on, and the exec ends with its output and code, never a hang`, async (t) => {
  const env = await podServer(t);
  const durable = preflight.resilientExec(env.kc, { env: durableEnv(), logger: capture().logger });
  // Its parent's children named `cat` (a copy of its stdout, one of its stderr).
  const command = 'echo a; n=0; for p in $(pgrep -P $PPID -x cat); do kill -STOP $p && n=$((n+1)); done; echo "stopped $n"; echo e >&2; exit 4';
  const result = await runExec(durable, ['sh', '-c', command]);
  assert.deepEqual(result.status && result.status.details && result.status.details.causes, [{ reason: 'ExitCode', message: '4' }], JSON.stringify(result.status));
  assert.equal(result.stdout.toString(), 'a\nstopped 2\n');
  assert.equal(result.stderr.toString(), 'e\n');
});

test(`${F} a command that sends TERM to the processes that copy its output into the pod's files (a pkill cat) and to what waits for it (a pkill sh): the plain client's result`, async (t) => {
  const env = await podServer(t);
  const durable = preflight.resilientExec(env.kc, { env: durableEnv(), logger: capture().logger });
  // (Only this run's own: the relays are children of the command's parent,
  // which is the waiter when it is a shell; plainly, it is the apiserver.)
  const command = ['sh', '-c', 'echo a; for p in $(pgrep -P $PPID -x cat); do kill $p; done; case "$(cat /proc/$PPID/comm)" in sh | dash | bash) kill $PPID ;; esac; sleep 0.3; echo b; echo e >&2; exit 0'];
  const plain = await runExec(new k8s.Exec(env.kc), command);
  assert.deepEqual([plain.stdout.toString(), plain.stderr.toString(), plain.status.status], ['a\nb\n', 'e\n', 'Success']);
  assert.deepEqual(await runExec(durable, command), plain);
});

test(`${F} a command that stops what waits for it (kill -STOP $PPID) and ends: the exec fails saying its exit code is unknown, never a hang`, async (t) => {
  const env = await podServer(t);
  const durable = preflight.resilientExec(env.kc, { env: durableEnv(), logger: capture().logger });
  const result = await runExec(durable, ['sh', '-c', 'echo a; kill -STOP $PPID; echo after; exit 0']);
  assert.equal(result.status && result.status.status, 'Failure', JSON.stringify(result.status));
  assert.equal(result.status.reason, 'ExitCodeLost');
  assert.match(result.status.message, /exit code is unknown/);
  assert.equal(result.stdout.toString(), 'a\nafter\n');
});

test(`${F} a command that kills what waits for it in the pod: the exec fails at once saying its exit code is unknown, never a hang`, async (t) => {
  const env = await podServer(t);
  const durable = preflight.resilientExec(env.kc, { env: durableEnv(), logger: capture().logger });
  const result = await runExec(durable, ['sh', '-c', 'echo x; kill -9 $PPID; sleep 1; exit 0']);
  assert.equal(result.status.status, 'Failure');
  assert.equal(result.status.reason, 'ExitCodeLost');
  assert.match(result.status.message, /exit code is unknown; it may still be running/);
  assert.equal(result.stdout.toString(), 'x\n');
});

test(`${F} a host that lives on through SIGINT (a handler of its own): each run is stopped and told so, and the host's handler runs once per signal`, async (t) => {
  const env = await podServer(t);
  const command = (n) => ['sh', '-c', `echo $$ > cmd${n}.pid; sleep 60`];
  const child = hostScript(t, env, [
    "const api = resilientExec(kc, { env, logger: { debug() {}, info() {}, warning() {}, error() {} } });",
    "process.on('SIGINT', () => console.log('host-handler'));",
    'const keep = setInterval(() => {}, 1000);',
    'const one = (command) => new Promise((resolve) => {',
    "  api.exec('ci', 'job-pod', 'job', command, process.stdout, process.stderr, null, false, (s) => { console.log('status', JSON.stringify(s)); resolve(); });",
    '});',
    `(async () => { await one(${JSON.stringify(command(1))}); await one(${JSON.stringify(command(2))}); console.log('both'); clearInterval(keep); })();`,
  ]);
  const { hook, output, exited } = startHook(t, child);
  for (const n of [1, 2]) {
    const pidFile = path.join(env.folder(), `cmd${n}.pid`);
    await waitFor(() => fs.existsSync(pidFile), 10_000, `command ${n} to start (host said: ${output()})`);
    await new Promise((r) => setTimeout(r, 300));
    const pid = Number(fs.readFileSync(pidFile, 'utf8').trim());
    hook.kill('SIGINT');
    await waitFor(() => !alive(pid), 5000, `command ${n} to be stopped (host said: ${output()})`);
    await waitFor(() => output().split('\n').filter((l) => l.startsWith('status ')).length === n, 5000, `status ${n} (host said: ${output()})`);
  }
  const { code, signal } = await exited;
  assert.equal(signal, null, output());
  assert.equal(code, 0, output());
  const lines = output().split('\n');
  assert.equal(lines.filter((l) => l === 'host-handler').length, 2, output());
  const statuses = lines.filter((l) => l.startsWith('status ')).map((l) => JSON.parse(l.slice(7)));
  assert.equal(statuses.length, 2);
  for (const s of statuses) {
    assert.equal(s.status, 'Failure');
    assert.equal(s.reason, 'Cancelled');
    assert.match(s.message, /^SIGINT: the script in pod "ci\/job-pod" was stopped before it ended/);
  }
  assert.ok(lines.includes('both'), output());
});

test(`${F} a reattach whose upgrade is swallowed by a short hang is made again soon, not after a whole call timeout`, async (t) => {
  const env = await podServer(t);
  const log = capture();
  const durable = preflight.resilientExec(env.kc, { env: durableEnv({ REQUEST_TIMEOUT_MS: 1000, CALL_REQUEST_TIMEOUT_MS: 30_000, DURABLE_DISCONNECT_MS: 60_000 }), logger: log.logger });
  const run = runExec(durable, script({ lines: 8, pauseS: '0.25', code: 0, tag: 'blip' }));
  await waitFor(() => starts(env.folder(), 'blip') === 1, 5000, 'the script to start');
  await new Promise((r) => setTimeout(r, 300));
  await env.server.setPhase('refuse');
  await new Promise((r) => setTimeout(r, 200));
  await env.server.setPhase('hang');
  await new Promise((r) => setTimeout(r, 2500));
  await env.server.setPhase('healthy');
  const healthyAt = performance.now();
  const result = await run;
  const afterMs = performance.now() - healthyAt;
  assert.deepEqual(result.status, { metadata: {}, status: 'Success' });
  assert.equal(result.stdout.toString(), expectedOutput(8).out);
  // An attach hung in the blip is given up after a short wait (1 s, 2 s,
  // 4 s...), not the 30 s a start is awaited.
  assert.ok(afterMs < 12_000, `the status came ${Math.round(afterMs)} ms after the apiserver answered again`);
  assert.equal(starts(env.folder(), 'blip'), 1);
});

test(`${F} a relative temp folder, even one whose name starts with "-", holds the run: durable, no warning`, async (t) => {
  const env = await podServer(t, { podEnv: { TMPDIR: '-tmp' } });
  const log = capture();
  const durable = preflight.resilientExec(env.kc, { env: durableEnv(), logger: log.logger });
  const result = await runExec(durable, script({ lines: 2, pauseS: '0', code: 4, tag: 'relative' }));
  assert.deepEqual(log.warning, []);
  assert.deepEqual(result.status.details.causes, [{ reason: 'ExitCode', message: '4' }]);
  assert.equal(result.stdout.toString(), expectedOutput(2).out);
  assert.equal(startSteps(env.server).length, 1);
  assert.ok(fs.existsSync(path.join(env.folder(), '-tmp', '.k8s-auth-preflight')), 'the run folder is in the relative temp folder');
});

test(`${F} a host that ends in its status callback leaves its run's files; the job's next process removes them with its first durable exec in the pod`, async (t) => {
  const env = await podServer(t);
  const runnerTemp = tempDir(t, 'runner-temp');
  const jobEnv = { ...durableEnv(), RUNNER_TEMP: runnerTemp };
  const child = hostScript(
    t,
    env,
    [
      "const api = resilientExec(kc, { env, logger: { debug() {}, info() {}, warning() {}, error() {} } });",
      "api.exec('ci', 'job-pod', 'job', ['sh', '-c', 'echo out; echo err >&2; exit 3'], process.stdout, process.stderr, null, false, (s) => { console.log('status', JSON.stringify(s)); process.exit(0); });",
    ],
    jobEnv,
  );
  const { output, stdout, stderr, exited } = startHook(t, child);
  assert.deepEqual(await exited, { code: 0, signal: null }, output());
  assert.match(stdout(), /^out\nstatus .*"NonZeroExitCode"/s);
  assert.equal(stderr(), 'err\n');
  assert.equal(runFolders(env.folder()).length, 1, 'the ended host could not clean up');

  const durable = preflight.resilientExec(env.kc, { env: jobEnv, logger: capture().logger });
  const result = await runExec(durable, ['true']);
  assert.deepEqual(result.status, { metadata: {}, status: 'Success' });
  await waitFor(() => runFolders(env.folder()).length === 0, 5000, "both runs' files to be removed");
  // (The host writes its clean-up down once the clean-up's answer is in,
  // a moment after the pod removed the files.)
  const ledgerFile = path.join(runnerTemp, 'k8s-auth-preflight-delivered-runs');
  const whole = /^d [0-9a-f]{32} ci\/job-pod\nc [0-9a-f]{32}\nd [0-9a-f]{32} ci\/job-pod\nc [0-9a-f]{32}\n$/;
  await waitFor(() => whole.test(fs.readFileSync(ledgerFile, 'utf8')), 5000, 'the second clean-up to be written down');
  assert.match(fs.readFileSync(ledgerFile, 'utf8'), whole);
});

test(`${F} a ledger of delivered runs that is a link, a FIFO, a folder or 2 MB of junk is left alone, and the exec runs durably`, async (t) => {
  const env = await podServer(t);
  const target = path.join(tempDir(t, 'ledger-target'), 'precious');
  fs.writeFileSync(target, 'precious\n');
  const cases = {
    link: (file) => fs.symlinkSync(target, file),
    fifo: (file) => require('node:child_process').spawnSync('mkfifo', [file]),
    folder: (file) => fs.mkdirSync(file),
    junk: (file) => fs.writeFileSync(file, Buffer.alloc(2 << 20, 'd 0123456789abcdef0123456789abcdef ci/job-pod\n')),
  };
  for (const [name, make] of Object.entries(cases)) {
    const runnerTemp = tempDir(t, `runner-temp-${name}`);
    make(path.join(runnerTemp, 'k8s-auth-preflight-delivered-runs'));
    const log = capture();
    const durable = preflight.resilientExec(env.kc, { env: { ...durableEnv(), RUNNER_TEMP: runnerTemp }, logger: log.logger });
    const result = await runExec(durable, ['sh', '-c', `echo ${name}`]);
    assert.deepEqual(result.status, { metadata: {}, status: 'Success' }, name);
    assert.equal(result.stdout.toString(), `${name}\n`);
    assert.deepEqual(log.warning, [], name);
  }
  assert.equal(fs.readFileSync(target, 'utf8'), 'precious\n');
  assert.equal(startSteps(env.server).length, 4, 'each ran durably');
});

// ---- found by a third attack on the packed package ----------------------------

test(`${F} a command that removes our folders while its start's answer is lost runs once: never a second start, never a success without its output`, async (t) => {
  const env = await podServer(t);
  const durable = preflight.resilientExec(env.kc, { env: durableEnv(), logger: capture().logger });
  const command = ['sh', '-c', 'echo ran >> lost.starts; rm -rf "${TMPDIR:-/tmp}"/.k8s-auth-preflight; sleep 1.5; echo done'];
  const file = () => path.join(env.folder(), 'lost.starts');
  // The race (the look before the command removed the folder, or after) goes
  // either way: a few tries.
  for (let i = 0; i < 3; i++) {
    fs.rmSync(file(), { force: true });
    env.server.armTrigger({ route: 'exec pods' }, [{ phase: 'applyThenCut', ms: 0 }, { phase: 'slow', slowMs: 700, ms: 500 }, { phase: 'healthy' }]);
    const result = await runExec(durable, command);
    await new Promise((r) => setTimeout(r, 2000));
    assert.equal(starts(env.folder(), 'lost'), 1, `try ${i}: the command ran more than once`);
    if (result.status && result.status.status === 'Success') assert.equal(result.stdout.toString(), 'done\n', `try ${i}`);
    else assert.ok(result.status && ['RunRecordMissing', 'StreamLost'].includes(result.status.reason), `try ${i}: ${JSON.stringify(result.status)}`);
  }
});

test(`${F} a command stopped by SIGINT or SIGQUIT is stopped, as the plain exec's is (nothing of ours starts it with them ignored)`, async (t) => {
  const env = await podServer(t);
  const durable = preflight.resilientExec(env.kc, { env: durableEnv(), logger: capture().logger });
  const plain = new k8s.Exec(env.kc);
  for (const signal of ['INT', 'QUIT']) {
    const command = ['sh', '-c', `kill -${signal} $$; echo survived`];
    const a = await runExec(plain, command);
    const b = await runExec(durable, command);
    assert.deepEqual(b, a, signal);
    assert.equal(a.stdout.length, 0, `${signal}: the plain exec's command was stopped`);
  }
});

test(`${F} SIGTERM while the start's answer is still on its way: the command is stopped if it started, and nothing starts after`, async (t) => {
  const env = await podServer(t);
  env.server.configure({ execResults: [{ contains: 'term-pid', delayUpgradeMs: 3000 }] });
  const child = hookScript(t, env, ['sh', '-c', 'echo $$ > term-pid; sleep 30']);
  const { hook, output, exited } = startHook(t, child);
  const pidFile = path.join(env.folder(), 'term-pid');
  await waitFor(() => fs.existsSync(pidFile), 10_000, `the command to start (hook said: ${output()})`);
  hook.kill('SIGTERM');
  const pid = Number(fs.readFileSync(pidFile, 'utf8').trim());
  await waitFor(() => !alive(pid), 8000, `the command ${pid} to be stopped (hook said: ${output()})`);
  const { signal } = await exited;
  assert.equal(signal, 'SIGTERM');
  assert.doesNotMatch(output(), /was not started/);
});

test(`${F} SIGTERM while a slow pod is between the claim and the command's start: the command never runs on after the hook has said it stopped it`, async (t) => {
  // A pod slow to make the run's FIFOs (CPU throttled, say): the kill step
  // finds the run claimed and no pid for longer than it waits for one.
  const bin = tempDir(t, 'durable-slow-bin');
  fs.writeFileSync(path.join(bin, 'mkfifo'), '#!/bin/sh\nsleep 1.5\nexec /usr/bin/mkfifo "$@"\n', { mode: 0o755 });
  const env = await podServer(t, { podEnv: { PATH: `${bin}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin` } });
  const child = hookScript(t, env, ['sh', '-c', 'echo $$ > slow-pid; exec sleep 30']);
  const { hook, output, exited } = startHook(t, child);
  await waitFor(() => env.server.execs.some((e) => JSON.stringify(e.command).includes('slow-pid') && e.outcome === 'running'), 10_000, `the start to run (hook said: ${output()})`);
  await new Promise((resolve) => setTimeout(resolve, 300));
  const stoppedAt = performance.now();
  hook.kill('SIGTERM');
  await exited;
  // Past the slow mkfifo and the command's start, had it been let start.
  const pidFile = path.join(env.folder(), 'slow-pid');
  while (performance.now() - stoppedAt < 5000) await new Promise((resolve) => setTimeout(resolve, 100));
  const pid = fs.existsSync(pidFile) ? Number(fs.readFileSync(pidFile, 'utf8').trim()) : null;
  assert.ok(pid === null || !alive(pid), `the command ${pid} runs on 5 s after SIGTERM (hook said: ${output()})`);
});

test(`${F} a command of 4 KB whose letters take 6 bytes each in the URL runs as a plain exec with a warning, at once, with the plain client's result`, async (t) => {
  const env = await podServer(t);
  const log = capture();
  const durable = preflight.resilientExec(env.kc, { env: durableEnv(), logger: log.logger });
  const plain = new k8s.Exec(env.kc);
  const command = ['sh', '-c', `echo ${'é'.repeat(2000)} | wc -c`];
  const a = await runExec(plain, command);
  const b = await runExec(durable, command);
  assert.deepEqual(b, a);
  assert.equal(a.stdout.toString().trim(), '4001');
  assert.equal(log.warning.length, 1, log.warning.join('\n'));
  assert.match(log.warning[0], /bytes in its URL, too long to run durably/);
});

test(`${F} a command too long to run durably (its arguments near the apiserver's URL limit) runs as a plain exec, with one warning`, async (t) => {
  const env = await podServer(t);
  const log = capture();
  const durable = preflight.resilientExec(env.kc, { env: durableEnv(), logger: log.logger });
  const plain = new k8s.Exec(env.kc);
  const command = ['sh', '-c', 'echo ${#1}', 'sh', 'x'.repeat(9000)];
  const a = await runExec(plain, command);
  const b = await runExec(durable, command);
  assert.deepEqual(b.status, a.status);
  assert.equal(b.stdout.toString(), '9000\n');
  assert.equal(log.warning.length, 1, log.warning.join('\n'));
  assert.match(log.warning[0], /too long to run durably/);
});

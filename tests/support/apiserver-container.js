'use strict';
/**
 * The real "container" of the loopback apiserver's exec (apiserver-exec.js),
 * used when the server is started with `podRoot` (a directory). For tests only.
 *
 * Each pod gets a folder, `<podRoot>/<namespace>/<pod>` (both names
 * percent-encoded, so no name can climb out of podRoot), made at its first
 * exec and left in place when the pod is deleted, so that a test can read
 * what the commands left there (a pod made again with the same name finds it
 * as it was left). An exec runs its `command` array as a local process:
 * spawn(command[0], command.slice(1)) in the pod's folder, in a process group
 * of its own, with an environment of PATH (the directory of the Node running
 * the server first, then the usual system directories), HOME (the pod's
 * folder), TMPDIR (its tmp folder, standing in for the container's own /tmp) and LOOPBACK_POD (who started it: this server and the pod), nothing
 * else. No terminal is ever allocated; stdin, stdout and stderr are pipes when
 * the exec asked for them and /dev/null when it did not. Stdout and stderr are
 * FIFOs, as a container runtime gives an exec, not the socket pairs Node makes
 * for a child: a socket whose reader closed with data unread answers the next
 * write with ECONNRESET, where a pipe answers SIGPIPE (or EPIPE).
 *
 * What it shares with a cluster, on purpose:
 * - cutting the stream does not kill the command: the server closes its ends
 *   of the command's pipes (stdin reaches its end; a write to stdout or
 *   stderr then fails with EPIPE or kills the writer with SIGPIPE), and a
 *   command that sends its output to files keeps running;
 * - deleting the pod kills every process of the pod at once (SIGKILL), those
 *   that left the exec's process group or session too: they are found by the
 *   LOOPBACK_POD variable that every descendant inherits (a process that
 *   clears its environment escapes this; nothing in these tests does);
 * - a process killed by a signal exits with 128 + the signal's number, as a
 *   container runtime reports it (SIGKILL: 137).
 * closeAll() (the server's close()) kills every process this server started,
 * the same way, and waits (bounded) until they are gone.
 */

const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const net = require('node:net');
const { spawn, spawnSync } = require('node:child_process');

const SYSTEM_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
const MARKER = 'LOOPBACK_POD';
// A killed process is gone within milliseconds; these bound the waits for it.
const KILL_ROUNDS = 40;
const KILL_ROUND_MS = 50;
// A command that never reads its stdin must not hold it open forever once the
// stream is gone: what was received gets this long to be read, then the pipe closes.
const STDIN_DRAIN_MS = 1000;

function encodeName(name) {
  const encoded = encodeURIComponent(name);
  return encoded === '.' || encoded === '..' ? encoded.replace(/\./g, '%2E') : encoded;
}

/** 128 + the signal's number: how a runtime reports a process a signal killed. */
function signalExitCode(signal) {
  const n = os.constants.signals[signal];
  return 128 + (Number.isInteger(n) ? n : 0);
}

/**
 * The pids (not this process) whose environment has `${MARKER}=` + a value that
 * starts with `prefix`. Zombies have no readable environment and are not listed.
 */
function markedPids(prefix) {
  const needle = Buffer.from(`${MARKER}=${prefix}`);
  const out = [];
  let entries;
  try {
    entries = fs.readdirSync('/proc');
  } catch {
    return out;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    if (pid === process.pid) continue;
    let environ;
    try {
      environ = fs.readFileSync(`/proc/${entry}/environ`);
    } catch {
      continue;
    }
    let at = environ.indexOf(needle);
    while (at >= 0) {
      if (at === 0 || environ[at - 1] === 0) {
        out.push(pid);
        break;
      }
      at = environ.indexOf(needle, at + 1);
    }
  }
  return out;
}

/**
 * A FIFO for one output stream: { writeFd (for the child), reader (a
 * net.Socket on the read end) }. Its name is unlinked once both ends are open.
 */
function makeOutputPipe(dir, name) {
  const fifo = path.join(dir, name);
  const made = spawnSync('mkfifo', ['-m', '600', fifo], { stdio: 'ignore' });
  if (made.status !== 0) throw new Error(`mkfifo ${fifo} failed (${made.error ? made.error.message : `exit ${made.status}`})`);
  try {
    // The read end first, without blocking, so that opening the write end does not block either.
    const readFd = fs.openSync(fifo, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
    const writeFd = fs.openSync(fifo, fs.constants.O_WRONLY);
    const reader = new net.Socket({ fd: readFd, readable: true, writable: false });
    reader.on('error', () => {});
    return { writeFd, reader };
  } finally {
    fs.rmSync(fifo, { force: true });
  }
}

// Resolves once `stream` (or nothing) is closed.
const streamClosed = (stream) =>
  new Promise((resolve) => {
    if (!stream || stream.destroyed) resolve();
    else stream.once('close', resolve);
  });

const shellQuote = (s) => `'${s.replace(/'/g, `'\\''`)}'`;

function killQuietly(pid, signal) {
  try {
    process.kill(pid, signal);
    return true;
  } catch {
    return false; // already gone
  }
}

/**
 * createPodContainer({ podRoot }) -> {
 *   folderFor(namespace, pod): the pod's folder (not made),
 *   start(exec, query): a started process (see below) for the exec log entry
 *     `exec` (it gains pid, exitCode, signal, exitedAtMs, killedBy),
 *   killPod(namespace, pod): SIGKILL to every process of the pod; returns how many,
 *   closeAll(): kills every process started here; resolves once they are gone (bounded),
 * }
 * A started process: { child, exec, failed (an Error when it could not start),
 * exited (a Promise of { code, signal } once it ended, code already 128 + n
 * for a signal), closed (a Promise, once its pipes are closed too), cut() }.
 */
function createPodContainer({ podRoot, podEnv = {}, readOnlyShm = false, shmClaimsFile = false, podShm = false, podMounts = [] }) {
  if (!Array.isArray(podMounts) || podMounts.some((m) => typeof m !== 'string' || !/^\/[A-Za-z0-9_.-]+$/.test(m))) {
    throw new TypeError(`podMounts must be a list of top-level absolute folders such as /__w, got ${JSON.stringify(podMounts)}`);
  }
  // The mount points of a pod's volumes must exist on this machine (empty
  // folders: each exec binds the pod's own folder over them in a mount
  // namespace of its own).
  for (const mount of podMounts) fs.mkdirSync(mount, { recursive: true });
  for (const [key, value] of Object.entries(podEnv)) {
    if (typeof value !== 'string' || key === MARKER) throw new TypeError(`podEnv.${key} must be a string, and not ${MARKER}`);
  }
  const root = path.resolve(podRoot);
  fs.mkdirSync(root, { recursive: true });
  const serverId = crypto.randomBytes(6).toString('hex');
  const live = new Set();
  let fifoDir = null;
  let fifoCount = 0;
  const fifoPath = () => {
    if (!fifoDir) fifoDir = fs.mkdtempSync(path.join(os.tmpdir(), 'loopback-exec-fifo-'));
    return fifoDir;
  };

  const folderFor = (namespace, pod) => path.join(root, encodeName(namespace), encodeName(pod));
  const podMark = (namespace, pod) => `${serverId}/${encodeName(namespace)}/${encodeName(pod)}/`;

  function start(exec, query) {
    const cwd = folderFor(exec.namespace, exec.pod);
    fs.mkdirSync(cwd, { recursive: true });
    // A container's /tmp is its own: here, a folder of the pod's.
    const tmp = path.join(cwd, 'tmp');
    fs.mkdirSync(tmp, { recursive: true });
    const env = {
      PATH: SYSTEM_PATH.split(':').includes(path.dirname(process.execPath)) ? SYSTEM_PATH : `${path.dirname(process.execPath)}:${SYSTEM_PATH}`,
      HOME: cwd,
      TMPDIR: tmp,
      ...podEnv,
      [MARKER]: podMark(exec.namespace, exec.pod),
    };
    exec.pid = null;
    exec.exitCode = null;
    exec.signal = null;
    exec.exitedAtMs = null;
    exec.killedBy = null;
    fifoCount += 1;
    const out = query.stdout ? makeOutputPipe(fifoPath(), `${fifoCount}-out`) : null;
    const err = query.stderr ? makeOutputPipe(fifoPath(), `${fifoCount}-err`) : null;
    let child;
    try {
      // An empty program name cannot be spawned at all (Node throws): a file
      // that is not there fails as a runtime's exec of "" does, later.
      const program = exec.command[0] === '' ? path.join(root, '.no-such-program') : exec.command[0];
      // A container whose /dev/shm cannot be written, or holds a file where
      // our claims' folder would be: the command in a mount namespace of its
      // own with a tmpfs of its own there (unshare and the shell each
      // execute the next program: the pid stays the child's). Root only.
      // Or one whose /dev/shm is the pod's own, kept across its execs: a
      // folder of the pod's bound there ("$0").
      const shmDir = path.join(cwd, 'shm');
      if (podShm) fs.mkdirSync(shmDir, { recursive: true });
      const shm = readOnlyShm ? 'mount -t tmpfs -o ro tmpfs /dev/shm' : shmClaimsFile ? 'mount -t tmpfs tmpfs /dev/shm&&: >/dev/shm/.k8s-auth-preflight' : podShm ? 'mount --bind "$0" /dev/shm' : null;
      // A pod's volumes (/__w, /__e, /github for the hooks): the pod's own
      // folders under volumes/, bound over the same absolute paths, so that
      // a command that names /__w/_temp finds its pod's, as in a container.
      const binds = podMounts.map((mount) => {
        const own = path.join(cwd, 'volumes', mount.slice(1));
        fs.mkdirSync(own, { recursive: true });
        return `mount --bind ${shellQuote(own)} ${mount}`;
      });
      const setup = [shm, ...binds].filter(Boolean);
      const [file, args] = setup.length
        ? ['unshare', ['--mount', '--propagation', 'private', '--', '/bin/sh', '-c', `${setup.join('&&')}&&exec "$@"`, podShm ? shmDir : 'private-shm', program, ...exec.command.slice(1)]]
        : [program, exec.command.slice(1)];
      child = spawn(file, args, {
        cwd,
        env,
        detached: true,
        stdio: [query.stdin ? 'pipe' : 'ignore', out ? out.writeFd : 'ignore', err ? err.writeFd : 'ignore'],
      });
    } finally {
      // The child has its own copies now; the readers see the end once it and its descendants close theirs.
      for (const p of [out, err]) if (p) fs.closeSync(p.writeFd);
    }
    const proc = { child, exec, failed: null, cutDone: false, stdout: out && out.reader, stderr: err && err.reader };
    exec.pid = child.pid === undefined ? null : child.pid;
    if (child.stdin) child.stdin.on('error', () => {});
    proc.exited = new Promise((resolve) => {
      child.once('error', (err) => {
        // The command could not be started (no such file, not executable).
        proc.failed = err;
        exec.exitedAtMs = Date.now();
        live.delete(proc);
        resolve({ code: null, signal: null });
      });
      child.once('exit', (code, signal) => {
        exec.exitCode = signal ? signalExitCode(signal) : code;
        exec.signal = signal || null;
        exec.exitedAtMs = Date.now();
        live.delete(proc);
        resolve({ code: exec.exitCode, signal: exec.signal });
      });
    });
    proc.closed = Promise.all([proc.exited, streamClosed(proc.stdout), streamClosed(proc.stderr)]);
    proc.exited.then(() => {
      if (!proc.failed) return;
      for (const reader of [proc.stdout, proc.stderr]) if (reader) reader.destroy();
    });
    proc.cut = () => {
      if (proc.cutDone) return;
      proc.cutDone = true;
      if (child.stdin && !child.stdin.destroyed) {
        child.stdin.end();
        const timer = setTimeout(() => child.stdin.destroy(), STDIN_DRAIN_MS);
        timer.unref();
        child.stdin.once('close', () => clearTimeout(timer));
      }
      if (proc.stdout) proc.stdout.destroy();
      if (proc.stderr) proc.stderr.destroy();
    };
    if (exec.pid !== null) live.add(proc);
    return proc;
  }

  // SIGKILL to the process groups of `procs`, then to every marked process, for
  // a bounded number of rounds (a process may fork while it is being killed).
  async function killMarked(procs, prefix, why) {
    for (const proc of procs) {
      if (!proc.exec.killedBy) proc.exec.killedBy = why;
      killQuietly(-proc.child.pid, 'SIGKILL');
    }
    for (let round = 0; round < KILL_ROUNDS; round++) {
      const left = markedPids(prefix);
      if (left.length === 0) return;
      for (const pid of left) killQuietly(pid, 'SIGKILL');
      await new Promise((resolve) => setTimeout(resolve, KILL_ROUND_MS));
    }
  }

  function killPod(namespace, pod) {
    const procs = [...live].filter((p) => p.exec.namespace === namespace && p.exec.pod === pod);
    // The groups die now; the sweep for processes that left them runs on its own.
    const sweep = killMarked(procs, podMark(namespace, pod), 'pod-deleted');
    sweep.catch(() => {});
    return procs.length;
  }

  async function closeAll() {
    const procs = [...live];
    await killMarked(procs, `${serverId}/`, 'server-closed');
    const deadline = new Promise((resolve) => {
      const timer = setTimeout(resolve, KILL_ROUNDS * KILL_ROUND_MS);
      timer.unref();
    });
    await Promise.race([Promise.all(procs.map((p) => p.exited)), deadline]);
    for (const proc of procs) proc.cut();
    if (fifoDir) fs.rmSync(fifoDir, { recursive: true, force: true });
  }

  return { folderFor, start, killPod, closeAll, signalExitCode, root };
}

module.exports = { createPodContainer, markedPids, signalExitCode, MARKER };

'use strict';
// Copies of a folder into and out of a pod: one exec of `tar` per attempt,
// the archive counted and hashed on the runner as it goes, and in the pod
// by the pod-side script (pod/copy-in.sh, pod/copy-out.sh) in the same
// exec. The core (src/copy/) decides whether an attempt arrived whole, and
// what comes next; this makes the attempts and reports what it saw.

const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { PassThrough, Writable } = require('node:stream');
const { execute } = require('./execute');
const { statusFacts } = require('./facts');
const cksum = require('./cksum');

// How much of the end of the pod's report stream and of each tar's stderr
// is kept for the core: the report line and tar's last words.
const KEPT_BYTES = 16 * 1024;

// After the exec's status, how long the runner's unpacking tar gets to
// write what it has (a large file to a slow disk), and the packing tar to
// pack the rest of a folder the pod did not read to the end, before either
// is given up on and killed: a tar that hangs must not hang the copy.
const TAR_END_WAIT_MS = 120_000;

// What the runner's tar leaves out both ways: the runner's own answers to
// the hook, which it writes while the hook runs.
const EXCLUDE = '--exclude=_runner_hook_responses*';

// The runner's tar lists each name it packs or unpacks, with the block its
// header starts at (for the core: what an attempt may have written,
// src/copy/listing.rs), escaped the one
// way the core reads, whatever the environment's TAR_OPTIONS,
// QUOTING_STYLE or locale say; LC_ALL=C escapes every byte that is not
// printable ASCII. (An index file, not a pipe: tar opens it by name, and
// a child's extra stdio is a socket, which /dev/fd cannot open.)
const LISTING = ['-R', '-v', '--quoting-style=escape'];
const tarEnv = () => ({ ...process.env, LC_ALL: 'C' });

/** A new file for one tar's listing: `{option, read(), done()}`. */
function listingFile() {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'k8s-auth-preflight-listing-'));
  const file = path.join(folder, 'names');
  return {
    option: `--index-file=${file}`,
    read() {
      try {
        return fs.readFileSync(file);
      } catch {
        return Buffer.alloc(0);
      }
    },
    done: () => fs.rmSync(folder, { recursive: true, force: true }),
  };
}

/** The last KEPT_BYTES of what is written, as text. */
function tailKeeper() {
  let kept = Buffer.alloc(0);
  return {
    add(chunk) {
      kept = Buffer.concat([kept, Buffer.from(chunk)]);
      if (kept.length > KEPT_BYTES) kept = kept.subarray(kept.length - KEPT_BYTES);
    },
    text: () => kept.toString('utf8'),
  };
}

/** A writable that keeps the last KEPT_BYTES of its bytes. */
function tailSink() {
  const tail = tailKeeper();
  const sink = new Writable({
    write(chunk, _encoding, done) {
      tail.add(chunk);
      done();
    },
  });
  sink.text = tail.text;
  return sink;
}

/** Counts bytes as they pass and computes both checks a pod may make of them (SHA-256 and POSIX cksum's CRC), until its facts are taken. */
function tally() {
  const hash = crypto.createHash('sha256');
  let crc = 0;
  let bytes = 0;
  let facts = null;
  return {
    add(chunk) {
      if (facts) return;
      hash.update(chunk);
      crc = cksum.update(crc, chunk);
      bytes += chunk.length;
    },
    facts() {
      facts = facts || { runnerBytes: bytes, runnerSha256: hash.digest('hex'), runnerCksum: cksum.finish(crc, bytes) };
      return facts;
    },
  };
}

/** A child's end: `{code, error}`, `code` null when it did not exit by itself; it is killed after `waitMs`. */
function childEnd(child, stderr) {
  return new Promise((resolve) => {
    let startError = null;
    child.on('error', (error) => {
      startError = error;
    });
    child.on('close', (code) => resolve({ code: startError ? null : code, error: startError ? `${child.spawnfile} could not start: ${startError.message}` : stderr.text() }));
  });
}

function within(promise, ms, onLate) {
  let timer;
  const late = new Promise((resolve) => {
    timer = setTimeout(() => resolve(onLate()), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/**
 * Runs the exec of one attempt and resolves with what came of it:
 * `{status}` (the `V1Status`, or null when the stream closed with none) or
 * `{openError}` (the exec could not be opened: its error's facts, the
 * credential hidden), and `protocol`, the stream's subprotocol (null when
 * it never opened).
 */
function runExec(exec, spec, command, streams, describeError) {
  return new Promise((resolve) => {
    let settled = false;
    let protocol = null;
    const settle = (result) => {
      if (settled) return;
      settled = true;
      resolve({ ...result, protocol });
    };
    let opened;
    try {
      opened = Promise.resolve(exec(spec.namespace, spec.pod, spec.container, command, streams.stdout, streams.stderr, streams.stdin, false, (status) => settle({ status })));
    } catch (error) {
      opened = Promise.reject(error);
    }
    opened.then(
      (socket) => {
        // The subprotocol the apiserver chose: before v5, a client can end
        // stdin only by closing the whole stream.
        if (socket && typeof socket.protocol === 'string') protocol = socket.protocol;
        // A stream that closed and never gave a status: none will come.
        if (socket && typeof socket.on === 'function') socket.on('close', () => setTimeout(() => settle({ status: null }), 1000).unref());
      },
      (error) => settle({ openError: describeError(error, false) }),
    );
  });
}

/** One attempt into the pod: the runner's tar into the exec's stdin. */
async function attemptToPod({ exec, spec, script, args, describeError }) {
  const tarErr = tailKeeper();
  // What `from` holds, named one by one (NUL-separated on tar's stdin: any
  // name, any number), not `.`: a `.` entry would give the pod's folder the
  // runner's folder's mode and owner, and that folder may be `/`. The
  // hooks' modes (u+rw, and u+x on folders) are given to what the archive
  // carries, as it is packed: nothing the pod's folder held before is
  // touched. (A folder that cannot be read names nothing: tar says why.)
  let names = [];
  try {
    // In one order, whatever the file system's.
    names = fs.readdirSync(spec.from, { encoding: 'buffer' }).sort(Buffer.compare);
  } catch {
    // tar's own error names the folder
  }
  const listing = listingFile();
  const tar = spawn('tar', ['cf', '-', '--format=gnu', '--mode=u+rwX', ...LISTING, listing.option, EXCLUDE, '-C', spec.from, '--null', '-T', '-'], { stdio: ['pipe', 'pipe', 'pipe'], env: tarEnv() });
  tar.stdin.on('error', () => {});
  tar.stdin.end(Buffer.concat(names.flatMap((name) => [name, Buffer.from([0])])));
  tar.stderr.on('data', (chunk) => tarErr.add(chunk));
  const tarEnd = childEnd(tar, tarErr);
  const counted = tally();
  const stdin = new PassThrough();
  tar.stdout.on('data', (chunk) => counted.add(chunk));
  tar.stdout.pipe(stdin);
  const stdout = tailSink();
  const stderr = tailSink();
  const command = ['sh', '-c', script, 'k8s-auth-preflight', ...args];
  const ended = await runExec(exec, spec, command, { stdout, stderr, stdin }, describeError);
  // The exec takes no more, and what was sent is counted. A tar that is
  // still packing (the stream was cut, or the pod's script ended before
  // reading it all) packs the rest into nowhere and ends by itself: one
  // killed would lose the end of its listing.
  const sent = counted.facts();
  tar.stdout.unpipe(stdin);
  stdin.destroy();
  tar.stdout.resume();
  const tarFacts = await within(tarEnd, TAR_END_WAIT_MS, () => {
    tar.kill('SIGKILL');
    return { code: null, error: `${tarErr.text()}(tar was still running when the exec ended)` };
  });
  const listed = listing.read();
  listing.done();
  return {
    type: 'copied',
    ...sent,
    runnerTar: tarFacts.code,
    runnerTarError: tarFacts.error,
    podOut: stdout.text(),
    podErr: stderr.text(),
    status: ended.status ? statusFacts(ended.status) : null,
    openError: ended.openError || null,
    protocol: ended.protocol,
    listing: listed,
    listingWhole: tarFacts.code !== null,
  };
}

/** One attempt out of the pod: the exec's stdout into the runner's tar. */
async function attemptFromPod({ exec, spec, script, args, describeError }) {
  try {
    fs.mkdirSync(spec.to, { recursive: true });
  } catch {
    // the runner's tar says why it cannot unpack there
  }
  const tarErr = tailKeeper();
  const listing = listingFile();
  const tar = spawn('tar', ['xf', '-', ...LISTING, listing.option, EXCLUDE, '-C', spec.to], { stdio: ['pipe', 'ignore', 'pipe'], env: tarEnv() });
  tar.stderr.on('data', (chunk) => tarErr.add(chunk));
  // A tar that ended early (it could not unpack there) reads no more.
  tar.stdin.on('error', () => {});
  const tarEnd = childEnd(tar, tarErr);
  const counted = tally();
  const stdout = new Writable({
    write(chunk, _encoding, done) {
      counted.add(chunk);
      if (tar.stdin.destroyed || tar.stdin.write(chunk)) done();
      else tar.stdin.once('drain', () => done());
    },
    final(done) {
      tar.stdin.end();
      done();
    },
  });
  // Bytes a cut stream still delivers after its status are too late to
  // count: written after the end, they are dropped.
  stdout.on('error', () => {});
  const finished = new Promise((resolve) => stdout.once('finish', () => resolve(true)));
  const stderr = tailSink();
  const command = ['sh', '-c', script, 'k8s-auth-preflight', ...args];
  const ended = await runExec(exec, spec, command, { stdout, stderr, stdin: null }, describeError);
  // The status comes after the last byte: ended here, every byte that
  // arrived is counted once 'finish' comes (whatever the client does with
  // the stream later), and tar gets the end of its input.
  stdout.end();
  const whole = await within(finished, ended.status ? TAR_END_WAIT_MS : 0, () => false);
  if (!whole) tar.stdin.destroy();
  const tarFacts = await within(tarEnd, TAR_END_WAIT_MS, () => {
    tar.kill('SIGKILL');
    return { code: null, error: `${tarErr.text()}(tar was still running after the stream ended)` };
  });
  const listed = listing.read();
  listing.done();
  return {
    type: 'copied',
    ...counted.facts(),
    runnerTar: tarFacts.code,
    runnerTarError: tarFacts.error,
    podOut: '',
    podErr: stderr.text(),
    // A stream whose last bytes never came through has no status to give.
    status: whole && ended.status ? statusFacts(ended.status) : null,
    openError: ended.openError || null,
    protocol: ended.protocol,
    listing: listed,
    listingWhole: tarFacts.code !== null,
  };
}

/**
 * Runs the removal script with `input` on its stdin: in the pod as an
 * exec, or on the runner as a local `sh`; resolves what came of it.
 */
async function removeLeftovers({ exec, spec, script, action, describeError }) {
  const out = tailSink();
  const err = tailSink();
  const argv = ['sh', '-c', script, 'k8s-auth-preflight', ...action.args];
  if (action.place === 'pod') {
    const stdin = new PassThrough();
    stdin.end(Buffer.from(action.input));
    const ended = await runExec(exec, spec, argv, { stdout: out, stderr: err, stdin }, describeError);
    stdin.destroy();
    return { type: 'removed', out: out.text(), err: err.text(), status: ended.status ? statusFacts(ended.status) : null, exitCode: null, openError: ended.openError || null };
  }
  const sh = spawn(argv[0], argv.slice(1), { stdio: ['pipe', 'pipe', 'pipe'] });
  sh.stdin.on('error', () => {});
  sh.stdin.end(Buffer.from(action.input));
  sh.stdout.pipe(out);
  sh.stderr.pipe(err);
  const end = await within(childEnd(sh, err), TAR_END_WAIT_MS, () => {
    sh.kill('SIGKILL');
    return { code: null, error: '' };
  });
  return { type: 'removed', out: out.text(), err: end.code === null && end.error ? end.error : err.text(), status: null, exitCode: end.code, openError: null };
}

async function copy(kc, direction, spec, options) {
  const core = require('../pkg/k8s_auth_preflight.js');
  const program = require('../pkg/pod-program.js');
  const { callPolicy, plainExecOf } = require('./calls');
  const state = callPolicy(kc, options);
  const given = pick(spec !== null && typeof spec === 'object' ? spec : {});
  const machine = new core.Copy({ direction, ...given });
  try {
    const exec = plainExecOf(kc, state);
    const attempt = direction === 'toPod' ? attemptToPod : attemptFromPod;
    const script = program[direction === 'toPod' ? 'copy-in' : 'copy-out'];
    const removal = program['copy-remove'];
    // What the pod and the tars said may hold the credential (a pod that
    // prints its environment, a file named so): hidden before the core
    // sees it, and in every line and failure.
    const hidden = (fact) => {
      const seen = { ...fact };
      for (const key of ['podOut', 'podErr', 'runnerTarError', 'out', 'err']) if (typeof seen[key] === 'string') seen[key] = state.redact(seen[key]);
      if (seen.status) seen.status = { ...seen.status, message: state.redact(seen.status.message || '') };
      return seen;
    };
    const logger = Object.fromEntries(['debug', 'info', 'warning', 'error'].map((level) => [level, (message) => state.logger[level](state.redact(message))]));
    const outcome = await execute(
      machine,
      {
        act: async (action) =>
          action.type === 'remove'
            ? hidden(await removeLeftovers({ exec, spec: given, script: removal, action, describeError: state.describeError }))
            : hidden(await attempt({ exec, spec: given, script, args: action.args, describeError: state.describeError })),
      },
      { clock: state.clock, logger },
    );
    if (!outcome.ok) {
      const error = new Error(state.redact(outcome.message));
      error.code = 'PREFLIGHT_COPY_FAILED';
      throw error;
    }
    return { attempts: outcome.attempts, bytes: outcome.bytes, sha256: outcome.sha256 };
  } finally {
    machine.free();
  }
}

/** The spec's fields, read once (a getter is not asked twice). */
function pick(spec) {
  const { namespace, pod, container, from, to } = spec;
  return { namespace, pod, container, from, to };
}

/**
 * Copies the folder `from` of the runner into the folder `to` of the pod's
 * container (its contents, as `tar -C from .`), with one exec when healthy;
 * resolves `{attempts, bytes, sha256}` once the pod has unpacked the very
 * bytes sent, and rejects (code PREFLIGHT_COPY_FAILED) otherwise.
 */
function copyToPod(kc, spec, options) {
  return copy(kc, 'toPod', spec, options);
}

/**
 * Copies the folder `from` of the pod's container into the runner's folder
 * `to` (as `to/<from's last part>`), the same way.
 */
function copyFromPod(kc, spec, options) {
  return copy(kc, 'fromPod', spec, options);
}

module.exports = { copyToPod, copyFromPod };

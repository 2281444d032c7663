'use strict';
// Runs a command to completion as a child process, for the tests and the
// benchmarks that drive real processes (tests/js/consumer.test.js,
// bench/chaos/): stdin gets `input` and is closed, stdout and stderr are
// collected (up to 1 MB each), and the child is killed (SIGKILL) after
// `timeoutMs`. It never rejects: a command that cannot be spawned resolves
// with code null and the error in stderr.

const { spawn } = require('node:child_process');

const OUTPUT_CAP_CHARS = 1_000_000;

/**
 * Resolves { code, signal, stdout, stderr, timedOut, startedAt, endedAt }
 * (times from Date.now(): startedAt just before the spawn, endedAt when
 * the child's output closed). `track`, a Set, holds the child while it runs,
 * so a caller can kill every running child at once.
 */
function runProcess(command, args, { cwd, env, input = '', timeoutMs, track }) {
  return new Promise((resolve) => {
    const startedAt = Date.now();
    let child;
    try {
      child = spawn(command, args, { cwd, env, stdio: ['pipe', 'pipe', 'pipe'] });
    } catch (e) {
      resolve({ code: null, signal: null, stdout: '', stderr: String(e), timedOut: false, startedAt, endedAt: Date.now() });
      return;
    }
    if (track) track.add(child);
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.stdout.setEncoding('utf8').on('data', (d) => {
      if (stdout.length < OUTPUT_CAP_CHARS) stdout += d;
    });
    child.stderr.setEncoding('utf8').on('data', (d) => {
      if (stderr.length < OUTPUT_CAP_CHARS) stderr += d;
    });
    let settled = false;
    const finish = (code, signal, extra = '') => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (track) track.delete(child);
      resolve({ code, signal, stdout, stderr: stderr + extra, timedOut, startedAt, endedAt: Date.now() });
    };
    child.on('error', (e) => finish(null, null, String(e)));
    child.on('close', (code, signal) => finish(code, signal));
    child.stdin.on('error', () => {}); // a child that dies early closes its stdin
    child.stdin.end(input);
  });
}

module.exports = { runProcess };

'use strict';
// Starts the loopback apiserver (apiserver.js, its command-line mode) as a
// process of its own, for the tests of that mode (apiserver.test.js) and for
// bench/chaos/, whose hook processes must not share a CPU with it.

const { spawn } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const APISERVER_JS = path.join(__dirname, 'apiserver.js');
const STDERR_CAP_CHARS = 100_000;

/**
 * Writes `config` to `configFile`, starts `node apiserver.js --config
 * configFile [--log logFile]` and returns { child, ready, exited, stop }:
 * - ready: resolves the JSON line the server prints once it listens (url,
 *   port, kubeconfig, ...) plus readyAtMs (Date.now() when it came); rejects
 *   when the server exits first, prints something else, or prints nothing
 *   within `readyTimeoutMs` (the server is then killed);
 * - exited: resolves { code, signal, stderr } once the process has ended;
 * - stop(): SIGTERM (the server writes its log and exits), SIGKILL after
 *   `stopTimeoutMs`; resolves what `exited` resolves.
 * `track`, a Set, holds the child while it runs.
 */
function startApiServerProcess({ config, configFile, logFile, readyTimeoutMs, stopTimeoutMs = 10_000, track }) {
  fs.writeFileSync(configFile, JSON.stringify(config));
  const args = [APISERVER_JS, '--config', configFile];
  if (logFile) args.push('--log', logFile);
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  if (track) track.add(child);
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d) => {
    if (stderr.length < STDERR_CAP_CHARS) stderr += d;
  });
  const exited = new Promise((resolve) =>
    child.on('close', (code, signal) => {
      if (track) track.delete(child);
      resolve({ code, signal, stderr });
    }),
  );
  const ready = new Promise((resolve, reject) => {
    let buffered = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the apiserver printed no line within ${readyTimeoutMs} ms; stderr: ${stderr}`));
    }, readyTimeoutMs);
    child.stdout.setEncoding('utf8').on('data', (d) => {
      buffered += d;
      const nl = buffered.indexOf('\n');
      if (nl < 0) return;
      clearTimeout(timer);
      try {
        resolve({ ...JSON.parse(buffered.slice(0, nl)), readyAtMs: Date.now() });
      } catch (e) {
        reject(new Error(`the apiserver printed ${buffered.slice(0, nl)}: ${e.message}`));
      }
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      reject(new Error(`the apiserver exited (${code}) before listening; stderr: ${stderr}`));
    });
  });
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    const killer = setTimeout(() => child.kill('SIGKILL'), stopTimeoutMs);
    const end = await exited;
    clearTimeout(killer);
    return end;
  };
  return { child, ready, exited, stop };
}

module.exports = { startApiServerProcess, APISERVER_JS };

'use strict';
// The loopback apiserver of a chaos run (tests/support/apiserver.js as a
// process of its own), granting the 13 default permissions, through the
// incident's timeline: healthy, connections refused, 403s for a share of
// requests, healthy again.

const fs = require('node:fs');
const path = require('node:path');

const { startApiServerProcess } = require('../../tests/support/apiserver-process');
const { fullRole } = require('../../tests/js/support/roles');

const TOKEN = 'chaos-run-token';
const NAMESPACE = 'ci';
const SERVER_READY_TIMEOUT_MS = 15_000;
const SERVER_STOP_TIMEOUT_MS = 10_000;

/**
 * Starts the apiserver with its config, kubeconfig and request log in
 * `work`. Returns { child, ready, stop }: `ready` resolves { url,
 * kubeconfig, readyAtMs, ... } once it listens; `stop()` stops it and
 * resolves its request log (rejects when there is none).
 */
function startIncidentApiServer(work, o, track) {
  const config = {
    token: TOKEN,
    role: fullRole(),
    namespace: NAMESPACE,
    kubeconfig: path.join(work, 'kubeconfig'),
    // It stops itself a little after chaos.js would have stopped it.
    maxRunMs: o.limitS * 1000 + 10_000,
    timeline: [
      { phase: 'healthy', ms: o.stallAtMs },
      { phase: 'refuse', ms: o.stallMs },
      { phase: 'forbidden403', ms: o.forbiddenMs, share: o.forbiddenShare },
      { phase: 'healthy' },
    ],
  };
  const logFile = path.join(work, 'apiserver-log.json');
  const server = startApiServerProcess({
    config,
    configFile: path.join(work, 'apiserver.json'),
    logFile,
    readyTimeoutMs: SERVER_READY_TIMEOUT_MS,
    stopTimeoutMs: SERVER_STOP_TIMEOUT_MS,
    track,
  });
  const stop = async () => {
    const { code, signal, stderr } = await server.stop();
    try {
      return JSON.parse(fs.readFileSync(logFile, 'utf8'));
    } catch (e) {
      throw new Error(`no request log from the apiserver (${e.message}); exit ${JSON.stringify({ code, signal })}; stderr: ${stderr}`);
    }
  };
  return { child: server.child, ready: server.ready, stop };
}

module.exports = { startIncidentApiServer, NAMESPACE };

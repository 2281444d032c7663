'use strict';
// One step of a job, as the runner container hooks run it: a fresh Node
// process that checks permissions before doing its work. Prints one JSON line
// with what happened; workflow-command warnings go to stdout as in a job log.

const { KubeConfig } = require('@kubernetes/client-node');
const { createAuthPreflight, isPreflightInconclusiveError } = require('..');

async function main() {
  const started = Date.now();
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromDefault();
  const lines = [];
  const logger = {
    info: (m) => lines.push(`${m}`),
    warning: (m) => lines.push(`::warning::${m}`),
    error: (m) => lines.push(`::error::${m}`),
  };
  const preflight = createAuthPreflight({
    kubeConfig,
    namespace: process.env.ACTIONS_RUNNER_KUBERNETES_NAMESPACE,
    logger,
  });
  let result;
  try {
    const ok = await preflight.isAuthPermissionsOK();
    result = ok ? 'ok' : 'denied';
  } catch (e) {
    result = isPreflightInconclusiveError(e) ? 'inconclusive' : 'error';
    lines.push(`::error::${e.message}`);
  }
  const outcome = preflight.lastOutcome();
  process.stdout.write(
    `${JSON.stringify({
      result,
      source: outcome && outcome.source,
      requests: outcome ? outcome.requests : 0,
      ms: Date.now() - started,
      lines,
    })}\n`,
  );
  process.exitCode = result === 'ok' ? 0 : 1;
}

main();

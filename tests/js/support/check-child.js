'use strict';
// Runs one isAuthPermissionsOK() in a process of its own, as a hook step
// would, and prints one JSON line with the result. It never calls
// process.exit: the parent asserts that the process ends by itself, i.e.
// that no socket, timer or hung request keeps it alive after the verdict.
//
//   node check-child.js '{"kubeconfig": "...", "cacheDir": "...", "namespace": "ci", "env": {...}}'

const { preflight, k8s, flavour } = require('./consumer');

const options = JSON.parse(process.argv[2]);
const kc = new k8s.KubeConfig();
kc.loadFromFile(options.kubeconfig);
const warnings = [];
const check = preflight.createAuthPreflight({
  kubeConfig: kc,
  namespace: options.namespace,
  cacheDir: options.cacheDir,
  env: options.env,
  logger: { info() {}, warning: (m) => warnings.push(m), error: (m) => warnings.push(m) },
});
const started = performance.now();
check.isAuthPermissionsOK().then(
  (ok) => report({ ok }),
  (e) => report({ error: { code: e && e.code, message: e && e.message } }),
);

function report(result) {
  const outcome = check.lastOutcome();
  const line = {
    flavour,
    ...result,
    elapsedMs: performance.now() - started,
    requests: outcome && outcome.requests,
    source: outcome && outcome.source,
    warnings,
  };
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

'use strict';
// k8s-auth-preflight: the JavaScript side. It reports the kubeconfig's
// credentials, makes one check machine of the policy core (Rust, compiled to WebAssembly) per
// check, and runs it with the executor (execute.js): the core asks for every
// file read and write, lock step, request and log line; the shim does them
// (file-actions.js, the HTTP calls through the host's
// @kubernetes/client-node) and reports plain facts.

const os = require('node:os');

const core = require('../pkg/k8s_auth_preflight.js');
const { execute } = require('./execute');
const { performFileAction } = require('./file-actions');
const { completeLogger } = require('./log');
const { errorDescriber, textRedactor } = require('./facts');
const { steadyClock, environment, settingsOf, withAbortSignal, capturingBody } = require('./host');
const { credentialFacts } = require('./credential');
const { resilientKubeConfig, resilientExec, resilientLog, retryK8sApiCall, isExecIncomplete } = require('./calls');
const {
  PreflightInconclusiveError,
  PreflightError,
  CallGaveUpError,
  isPreflightInconclusiveError,
  isPreflightError,
  isCallGaveUpError,
} = require('./errors');

/** The permissions the runner container hooks need in their namespace (the core's table). */
const defaultRequiredPermissions = Object.freeze(
  core.runnerHooksPermissions().map((row) => Object.freeze({ ...row, verbs: Object.freeze(row.verbs) })),
);

function createAuthPreflight(options) {
  if (!options || typeof options !== 'object') {
    throw new TypeError('createAuthPreflight(options): options must be an object');
  }
  const { kubeConfig, authorizationApi, namespace } = options;
  const requiredPermissions = options.requiredPermissions || defaultRequiredPermissions;
  if (!kubeConfig && !authorizationApi) {
    throw new TypeError('createAuthPreflight: pass kubeConfig (a loaded KubeConfig) or authorizationApi');
  }
  if (typeof namespace !== 'string' || namespace === '') {
    throw new TypeError('createAuthPreflight: namespace must be a non-empty string');
  }
  let api = authorizationApi || null;
  let last = null;

  async function isAuthPermissionsOK() {
    const clock = steadyClock(options.now || Date.now);
    const logger = completeLogger(options.logger);
    const { facts: user, secrets } = credentialFacts(kubeConfig);
    // Error facts never carry a credential, nor any long piece of one.
    const describeError = errorDescriber(secrets);
    // Nor does anything the server sent (a body may echo the header).
    const redactText = textRedactor(secrets);
    const cacheDir = typeof options.cacheDir === 'string' ? options.cacheDir : null;
    const [check, first] = core.startCheck(
      settingsOf(environment(options)),
      requiredPermissions,
      namespace,
      user,
      cacheDir,
      { pid: process.pid, host: os.hostname() },
      clock(),
    );
    // The client is made on the first request: a cached verdict never pays
    // for loading @kubernetes/client-node.
    const client = () => api || (api = makeAuthorizationApi(kubeConfig));
    let outcome;
    try {
      outcome = await execute(
        check,
        {
          send: (action, signal) => review(client(), action, signal, redactText),
          act: performFileAction,
        },
        { clock, logger, observer: options.observer, describeError, first },
      );
    } finally {
      check.free();
    }
    last = outcome;
    switch (outcome.verdict) {
      case 'allowed':
        return true;
      case 'denied':
        return false;
      case 'inconclusive':
        // The core says whether the step goes on anyway (a setting); its
        // warning said so.
        if (outcome.proceed) return true;
        throw new PreflightInconclusiveError(outcome);
      default:
        throw new PreflightError(outcome);
    }
  }

  return { isAuthPermissionsOK, lastOutcome: () => last };
}

/**
 * One request, as the core asked for it: `action.request` is
 * `{ kind: 'accessReview' | 'rulesReview', body }`. The answer's body goes
 * to the core as the server sent it: the core reads it and decides what a
 * malformed one means.
 */
async function review(api, action, signal, redactText) {
  const { request } = action;
  const call = { body: request.body };
  const capture = capturingBody(signal);
  const rules = request.kind === 'rulesReview';
  const response = rules
    ? await api.createSelfSubjectRulesReview(call, capture.options)
    : await api.createSelfSubjectAccessReview(call, capture.options);
  // A host's own `authorizationApi` may not run client-node's middleware:
  // then what it returned is the answer, as JSON.
  let body = capture.body();
  if (body === null) {
    try {
      body = JSON.stringify(response === undefined ? null : response);
    } catch {
      body = '';
    }
  }
  return { type: rules ? 'rulesBody' : 'accessBody', body: redactText(body) };
}

function makeAuthorizationApi(kubeConfig) {
  const k8s = require('@kubernetes/client-node');
  return kubeConfig.makeApiClient(k8s.AuthorizationV1Api);
}

let wired = null;

/** Sets the options that the zero-argument `isAuthPermissionsOK()` uses. */
function configureAuthPreflight(options) {
  wired = createAuthPreflight(options);
  return wired;
}

/**
 * Drop-in for the hooks' `isAuthPermissionsOK()`: uses the options given to
 * `configureAuthPreflight`, else the default kubeconfig, the namespace in
 * ACTIONS_RUNNER_KUBERNETES_NAMESPACE (or the current context's), and
 * `defaultRequiredPermissions`.
 */
async function isAuthPermissionsOK() {
  if (!wired) wired = createAuthPreflight(defaultOptions());
  return wired.isAuthPermissionsOK();
}

function defaultOptions() {
  const k8s = require('@kubernetes/client-node');
  const kubeConfig = new k8s.KubeConfig();
  kubeConfig.loadFromDefault();
  let namespace = process.env.ACTIONS_RUNNER_KUBERNETES_NAMESPACE;
  if (!namespace) {
    const context = kubeConfig.getContextObject(kubeConfig.getCurrentContext());
    namespace = context && context.namespace;
  }
  if (!namespace) {
    throw new Error(
      'k8s-auth-preflight: no namespace: set ACTIONS_RUNNER_KUBERNETES_NAMESPACE or call configureAuthPreflight()',
    );
  }
  return { kubeConfig, namespace, requiredPermissions: defaultRequiredPermissions };
}

// Loaded at the first copy: a step answered from the cache never makes one.
const copyToPod = (kc, spec, options) => require('./copy').copyToPod(kc, spec, options);
const copyFromPod = (kc, spec, options) => require('./copy').copyFromPod(kc, spec, options);

module.exports = {
  createAuthPreflight,
  configureAuthPreflight,
  isAuthPermissionsOK,
  retryK8sApiCall,
  resilientKubeConfig,
  resilientExec,
  resilientLog,
  isExecIncomplete,
  copyToPod,
  copyFromPod,
  withAbortSignal,
  defaultRequiredPermissions,
  PreflightInconclusiveError,
  PreflightError,
  isPreflightInconclusiveError,
  isPreflightError,
  CallGaveUpError,
  isCallGaveUpError,
};

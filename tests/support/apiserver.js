'use strict';
/**
 * A fake Kubernetes apiserver on loopback HTTPS, for tests only.
 *
 * It answers SelfSubjectAccessReview (SSAR) and SelfSubjectRulesReview (SSRR)
 * POSTs from one namespaced Role evaluated with Kubernetes RBAC matching,
 * serves what a whole Kubernetes-mode job needs (pods and secrets: create,
 * read, list, delete, see apiserver-objects.js; exec over WebSocket, see
 * apiserver-exec.js), and can be switched at run time into the fault shapes
 * seen during control-plane endpoint rotations (refused connections, hung
 * requests, resets, transient 401/403, throttling, 5xx, malformed, trickled
 * and cut bodies), on every path, the exec upgrade included.
 *
 * Library:
 *   const { startApiServer } = require('./apiserver');
 *   const server = await startApiServer({ token, role, namespace, ... });
 *
 * CLI:
 *   node tests/support/apiserver.js --config cfg.json [--log out.json]
 *
 * Uses Node built-ins and `ws` (for exec) only. Listens on 127.0.0.1 only.
 *
 * Behaviour worth knowing:
 * - Faults are applied before authentication and routing: a request in a
 *   faulted phase gets the fault whatever its token or path.
 * - `share` (0..1) picks which requests of a phase get the fault with a
 *   counter that restarts at every setPhase: request i (0-based) is faulted
 *   when floor((i+1)*share) > floor(i*share). share 0.5 faults i = 1, 3, 5, ...
 * - `refuse` closes the listening socket and destroys every open connection
 *   (hung ones included). It does not support share < 1: a closed listener
 *   refuses everyone. Connections that were refused never reach the HTTP layer
 *   and are not counted anywhere (the kernel answers them with RST; Node never
 *   sees them).
 * - Leaving `refuse` listens again on the same port, retrying EADDRINUSE a
 *   bounded number of times. Between setPhase() and the re-listen completing
 *   (a few ms) connections are still refused; await setPhase() to be sure.
 * - `cutBody` answers 201 with half a body and then destroys the connection;
 *   `framing` is 'length' (a Content-Length for the whole body, the default),
 *   'chunked', or 'close' (neither: the body runs to the end of the
 *   connection); with `hang: true` the connection is left open and silent
 *   instead, as when a path drops without a reset.
 * - `applyThenCut` is an answer lost after the apiserver did the work: the
 *   request is handled as when healthy (authentication, RBAC, the store: a
 *   create makes the object, a delete removes it), and then a 2xx answer is
 *   cut as `cutBody` cuts it (same `framing` and `hang` options: the real
 *   status line, half the real body); an error answer (401, 403, 404, 409,
 *   ...) goes out whole. On the exec upgrade the command starts (it is
 *   logged in `server.execs` with outcome 'answer-lost') and the socket is
 *   destroyed before the 101 goes out. Armed with armTrigger for one request
 *   ([{ phase: 'applyThenCut', ms: 0 }, { phase: 'healthy' }]) it is the
 *   "create applied, answer lost" of a rotating endpoint.
 * - A status fault phase (401, 403, 429, 500, 503) with `echoToken: true`
 *   quotes the request's bearer token (without its scheme) in the Status
 *   message, as a hostile or careless server might: for tests that no
 *   credential reaches a log line.
 * - `markTerminating(resource, namespace, name)` gives a stored object a
 *   `deletionTimestamp` (a delete with a grace period that has not ended):
 *   it is still there, read and listed, and a create of its name gets 409.
 * - `slow` answers as when healthy, `slowMs` (default 1000) late, on every
 *   path: an apiserver behind a slow admission webhook or a slow etcd. The
 *   request is handled when the delay ends, not when it arrives: a create
 *   stores its object as the answer is sent, and an exec upgrade is
 *   authorized and answered 101 (the command starts) only then. A request
 *   whose client hung up before the delay ended is not handled at all (its
 *   context is cancelled, as a real apiserver's is: nothing is stored, no
 *   command starts) and is logged with status 'abandoned'. A request that
 *   arrived in a `slow` phase is still answered late after the phase changes.
 * - `hang` keeps hung requests hung after the phase changes, until the client
 *   gives up, a later `refuse` phase, or close().
 * - `rulesReviewStatus` (an HTTP status 400..599, or null: off) makes healthy
 *   SelfSubjectRulesReview POSTs, and only those, fail with that status and a
 *   Status body (404 NotFound as from a server without the API, 403 Forbidden
 *   with the apiserver's message, else a generic Failure), while
 *   SelfSubjectAccessReviews are still answered from the Role. Unlike a fault
 *   phase it applies after authentication and to every SSRR until configure()
 *   sets it back to null.
 * - `admissionDenial` (a message string, or { message, code?, reason?,
 *   resources? }, or null: off) denies every create of a pod or a secret
 *   (`resources`, default ['pods', 'secrets']) that passed authentication,
 *   RBAC and validation, as an admission plugin (PodSecurity, ResourceQuota,
 *   LimitRanger) or a validating webhook does: HTTP `code` (default 403)
 *   with a Status of `reason` (default 'Forbidden'), the message exactly as
 *   given, and details { name, kind }. Nothing is stored; `objectLog` logs
 *   the create with that code. `seed()` is not subject to it. Settable at
 *   run time with configure().
 * - `validateNames` (default false: any non-empty name is accepted, as
 *   before) makes a create whose metadata.name is not a lowercase RFC 1123
 *   subdomain (pods, secrets: [a-z0-9]([-a-z0-9]*[a-z0-9])? parts joined by
 *   '.', at most 253 characters) answer 422 Invalid with the Status a real
 *   apiserver sends (message `Pod "Bad_Name" is invalid: metadata.name:
 *   Invalid value: ...`, details.causes with field metadata.name), before
 *   admission and before a 409 for a name in use. Settable with configure().
 * - `podRoot` (a directory; default none) gives exec a real container: each
 *   pod a folder, each exec a local process, a cut stream leaving it running
 *   with its pipes closed, a deleted pod killing its processes, close()
 *   killing every process the server started (apiserver-exec.js and
 *   apiserver-container.js). `server.podFolder(namespace, name)` names a
 *   pod's folder; `server.execs` entries gain pid, signal, exitedAtMs and
 *   killedBy ('pod-deleted', 'server-closed' or null). Without it an exec
 *   runs nothing and `execResults` script what it prints.
 * - Pods, secrets and exec obey the Role like the reviews do: a verb the Role
 *   does not grant gets 403 Forbidden (exec is authorized as `create` on
 *   pods/exec). An exec needs the pod to exist (else the upgrade is answered
 *   404) and to be Running (else 400). `server.execs` logs every exec whose
 *   WebSocket opened (the command started), with its stdin;
 *   `server.objectLog` every create and delete that reached the store.
 * - The exec upgrade in a fault phase: refuse and reset destroy the socket,
 *   hang leaves it silent, 401/403/429/500/503 answer that HTTP status (with
 *   a Status body) instead of 101 Switching Protocols, malformed answers 200
 *   with a cut body, cutBody sends half the 101 head and destroys the
 *   socket, trickle upgrades after `trickleMs`. A `refuse` phase destroys open
 *   exec streams too. Fault bodies of other phases are SSAR-shaped whatever
 *   the path (they only have to fail to parse).
 * - armTrigger(match, timeline) runs `timeline` (as runTimeline does) the
 *   moment the `nth` (default 1) request matching { route, name? } arrives;
 *   that request is then handled in the timeline's first phase. Routes:
 *   'ssar', 'ssrr', 'create pods', 'get pods', 'list pods', 'delete pods',
 *   'exec pods', the same for secrets, 'other'. The CLI takes the same as
 *   `triggers: [{ match, timeline }]` in its config.
 * - With port 0 the server picks a free port just below the kernel's ephemeral
 *   range (/proc/sys/net/ipv4/ip_local_port_range; falls back to an OS-chosen
 *   port elsewhere). While it refuses, the port is unbound; a port from the
 *   ephemeral range could meanwhile be handed to another listener asking for
 *   port 0 or become some outgoing connection's source port, and the re-listen
 *   would fail with EADDRINUSE. (A loopback TCP self-connect to the closed port
 *   is the other classic hazard; it did not occur here in 40,000 connects, but
 *   the port choice rules it out anyway.)
 */

const crypto = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const https = require('node:https');
const path = require('node:path');

const { createObjectStore, parseObjectPath } = require('./apiserver-objects');
const { createExecHandler, checkExecProtocols, checkExecResults, parseExecQuery } = require('./apiserver-exec');
const { createPodContainer } = require('./apiserver-container');

const HOST = '127.0.0.1';
const CERT_DIR = path.join(__dirname, 'certs');
const SSAR_PATH = '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews';
const SSRR_PATH = '/apis/authorization.k8s.io/v1/selfsubjectrulesreviews';
const MAX_BODY_BYTES = 1024 * 1024;
const RELISTEN_ATTEMPTS = 10;
const RELISTEN_DELAY_MS = 100;
const CLOSE_WAIT_MS = 2000;
const PORT_PICK_ATTEMPTS = 40;
const INCOMPLETE_ERROR = 'webhook authorizer does not support user rule resolution';
const SERVICE_ACCOUNT_USER = 'system:serviceaccount:ci:runner';

const PHASES = Object.freeze([
  'healthy',
  'refuse',
  'hang',
  'reset',
  'forbidden403',
  'unauthorized401',
  'throttle429',
  'error500',
  'unavailable503',
  'malformed',
  'trickle',
  'cutBody',
  'applyThenCut',
  'slow',
]);

// How a `cutBody` answer frames its body: a Content-Length, chunked
// encoding, or neither (the body runs to the end of the connection).
const CUT_FRAMINGS = Object.freeze(['length', 'chunked', 'close']);

function loadCerts() {
  return {
    caPem: fs.readFileSync(path.join(CERT_DIR, 'ca.pem'), 'utf8'),
    certPem: fs.readFileSync(path.join(CERT_DIR, 'server.pem'), 'utf8'),
    keyPem: fs.readFileSync(path.join(CERT_DIR, 'server-key.pem'), 'utf8'),
  };
}

// ---------------------------------------------------------------------------
// RBAC evaluation (one Role, one namespace)

function ruleAllowsVerb(rule, verb) {
  const verbs = rule.verbs || [];
  return verbs.includes('*') || verbs.includes(verb);
}

function ruleAllowsGroup(rule, group) {
  const groups = rule.apiGroups || [];
  return groups.includes('*') || groups.includes(group);
}

function ruleAllowsResource(rule, resource, subresource) {
  const requested = subresource ? `${resource}/${subresource}` : resource;
  for (const ruleResource of rule.resources || []) {
    if (ruleResource === '*' || ruleResource === requested) return true;
    // '*/exec' grants the exec subresource of any resource, never a resource itself.
    if (subresource && ruleResource === `*/${subresource}`) return true;
  }
  return false;
}

function ruleAllowsName(rule, name) {
  const names = rule.resourceNames || [];
  if (names.length === 0) return true;
  // A rule restricted to names never grants a request without a name
  // (list, create without a name, deletecollection ...).
  return typeof name === 'string' && name !== '' && names.includes(name);
}

/**
 * @returns {{ allowed: boolean, ruleIndex?: number }}
 */
function evaluateRole(role, serverNamespace, attrs) {
  if (!attrs || attrs.namespace !== serverNamespace) return { allowed: false };
  const verb = attrs.verb || '';
  const group = attrs.group || '';
  const resource = attrs.resource || '';
  const subresource = attrs.subresource || '';
  const rules = (role && role.rules) || [];
  for (let i = 0; i < rules.length; i++) {
    const rule = rules[i];
    if (
      ruleAllowsVerb(rule, verb) &&
      ruleAllowsGroup(rule, group) &&
      ruleAllowsResource(rule, resource, subresource) &&
      ruleAllowsName(rule, attrs.name)
    ) {
      return { allowed: true, ruleIndex: i };
    }
  }
  return { allowed: false };
}

function rulesForReview(role) {
  return ((role && role.rules) || []).map((rule) => {
    const out = {
      verbs: [...(rule.verbs || [])],
      apiGroups: [...(rule.apiGroups || [])],
      resources: [...(rule.resources || [])],
    };
    if (rule.resourceNames && rule.resourceNames.length > 0) out.resourceNames = [...rule.resourceNames];
    return out;
  });
}

// ---------------------------------------------------------------------------
// Status objects

function statusObject(code, reason, message, details) {
  const out = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code };
  if (details) out.details = details;
  return out;
}

function kindOfPath(urlPath) {
  if (urlPath === SSAR_PATH) return 'ssar';
  if (urlPath === SSRR_PATH) return 'ssrr';
  return 'other';
}

function forbiddenMessage(kind, method, urlPath) {
  if (kind === 'other') {
    return `forbidden: User "${SERVICE_ACCOUNT_USER}" cannot ${String(method).toLowerCase()} path "${urlPath}"`;
  }
  const resource = kind === 'ssar' ? 'selfsubjectaccessreviews' : 'selfsubjectrulesreviews';
  return (
    `${resource}.authorization.k8s.io is forbidden: User "${SERVICE_ACCOUNT_USER}" cannot create ` +
    `resource "${resource}" in API group "authorization.k8s.io" at the cluster scope`
  );
}

// ---------------------------------------------------------------------------
// Options

function checkPhase(name, options) {
  if (!PHASES.includes(name)) {
    throw new TypeError(`unknown phase ${JSON.stringify(name)}; expected one of ${PHASES.join(', ')}`);
  }
  const opts = { ...(options || {}) };
  delete opts.phase;
  delete opts.ms;
  const share = opts.share === undefined ? 1 : opts.share;
  if (typeof share !== 'number' || !(share >= 0 && share <= 1)) {
    throw new RangeError(`share must be a number in 0..1, got ${JSON.stringify(opts.share)}`);
  }
  if (name === 'refuse' && share !== 1) {
    throw new RangeError('phase "refuse" closes the listener for everyone; share must be 1');
  }
  for (const key of ['retryAfterSeconds', 'trickleMs', 'trickleBytes', 'slowMs']) {
    if (opts[key] !== undefined && !(Number.isFinite(opts[key]) && opts[key] >= 0)) {
      throw new RangeError(`${key} must be a non-negative number, got ${JSON.stringify(opts[key])}`);
    }
  }
  if (opts.trickleBytes !== undefined && opts.trickleBytes < 1) {
    throw new RangeError('trickleBytes must be at least 1');
  }
  if (opts.framing !== undefined && !CUT_FRAMINGS.includes(opts.framing)) {
    throw new RangeError(`framing must be one of ${CUT_FRAMINGS.join(', ')}, got ${JSON.stringify(opts.framing)}`);
  }
  return { ...opts, share };
}

function checkNonNegative(name, value, fallback) {
  if (value === undefined) return fallback;
  if (!(Number.isFinite(value) && value >= 0)) throw new RangeError(`${name} must be a non-negative number, got ${JSON.stringify(value)}`);
  return value;
}

function checkTriggerMatch(match) {
  if (!match || typeof match !== 'object' || typeof match.route !== 'string' || !match.route) {
    throw new TypeError(`a trigger needs match.route (a string such as 'create pods'), got ${JSON.stringify(match)}`);
  }
  const nth = match.nth === undefined ? 1 : match.nth;
  if (!(Number.isInteger(nth) && nth >= 1)) throw new RangeError(`match.nth must be an integer >= 1, got ${JSON.stringify(match.nth)}`);
  if (match.name !== undefined && typeof match.name !== 'string') throw new TypeError('match.name must be a string');
  return { route: match.route, name: match.name, nth };
}

function checkRulesReviewStatus(value) {
  if (value === undefined || value === null) return null;
  if (!Number.isInteger(value) || value < 400 || value > 599) {
    throw new RangeError(`rulesReviewStatus must be an HTTP status in 400..599 or null, got ${JSON.stringify(value)}`);
  }
  return value;
}

const ADMISSION_RESOURCES = Object.freeze(['pods', 'secrets']);

/** null, or { message, code, reason, resources } from a message string or an object. */
function checkAdmissionDenial(value) {
  if (value === undefined || value === null) return null;
  const given = typeof value === 'string' ? { message: value } : value;
  if (!given || typeof given !== 'object' || typeof given.message !== 'string' || !given.message) {
    throw new TypeError(`admissionDenial must be a message string, { message, code?, reason?, resources? } or null, got ${JSON.stringify(value)}`);
  }
  const code = given.code === undefined ? 403 : given.code;
  if (!Number.isInteger(code) || code < 400 || code > 599) {
    throw new RangeError(`admissionDenial.code must be an HTTP status in 400..599, got ${JSON.stringify(given.code)}`);
  }
  const reason = given.reason === undefined ? 'Forbidden' : given.reason;
  if (typeof reason !== 'string') throw new TypeError('admissionDenial.reason must be a string');
  const resources = given.resources === undefined ? [...ADMISSION_RESOURCES] : given.resources;
  if (!Array.isArray(resources) || resources.length === 0 || !resources.every((r) => ADMISSION_RESOURCES.includes(r))) {
    throw new RangeError(`admissionDenial.resources must be a non-empty list of ${ADMISSION_RESOURCES.join(', ')}`);
  }
  return { message: given.message, code, reason, resources: [...resources] };
}

function portPickRange() {
  try {
    const text = fs.readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8');
    const low = Number.parseInt(text.trim().split(/\s+/)[0], 10);
    if (Number.isInteger(low) && low > 4096) return [Math.max(1025, low - 12000), low - 1];
  } catch {
    // not Linux: fall through
  }
  return null;
}

const delay = (ms) =>
  new Promise((resolve) => {
    setTimeout(resolve, ms).unref();
  });

// ---------------------------------------------------------------------------
// The server

function checkPodRoot(value) {
  if (value === undefined || value === null) return false;
  if (typeof value !== 'string' || value === '') throw new TypeError(`podRoot must be a directory path, got ${JSON.stringify(value)}`);
  return true;
}

/**
 * Start the fake apiserver.
 *
 * @param {object} [options]
 * @param {string} [options.token='test-token'] bearer token accepted
 * @param {{rules: object[]}} [options.role] the Role's rules
 * @param {string} [options.namespace='ci'] the Role's namespace
 * @param {boolean} [options.rulesIncomplete=false] SSRR status.incomplete
 * @param {number|null} [options.rulesReviewStatus=null] answer every SSRR with this HTTP status
 * @param {object|null} [options.rulesStatus=null] answer every SSRR with exactly this `status` (malformed on purpose, say)
 * @param {object|null} [options.accessStatus=null] answer every SSAR with exactly this `status`
 * @param {number} [options.latencyMs=0] added latency for healthy answers
 * @param {string|object|null} [options.admissionDenial=null] deny every create (see the header)
 * @param {boolean} [options.validateNames=false] answer 422 Invalid to a create whose name is not an RFC 1123 subdomain
 * @param {number} [options.podRunningAfterMs=1000] a pod's phase is Pending this long after its create, then Running
 * @param {object[]} [options.execResults=[]] what an exec prints and how it exits (apiserver-exec.js)
 * @param {string[]} [options.execProtocols] the exec subprotocols allowed, in order of preference (all by default)
 * @param {string|null} [options.podRoot=null] a directory: execs run for real, each pod in a folder of its own (see the header)
 * @param {boolean} [options.readOnlyShm=false] with podRoot: /dev/shm cannot be written in the pod (a mount namespace per exec; root only)
 * @param {boolean} [options.shmClaimsFile=false] with podRoot: /dev/shm/.k8s-auth-preflight is a file in the pod (likewise)
 * @param {boolean} [options.podShm=false] with podRoot: each pod has a /dev/shm of its own, kept across its execs (likewise)
 * @param {string[]} [options.podMounts] with podRoot: top-level folders (such as /__w) that each pod has a folder of its own bound over, in a mount namespace per exec (root only): the volumes a pod template mounts
 * @param {object} [options.podEnv] with podRoot: variables set in every exec's environment over the container's own (PATH, TMPDIR: a container that lacks a utility, or has no writable temp folder)
 * @param {{match: object, timeline: object[]}[]} [options.triggers=[]] armed at start (see armTrigger)
 * @param {number} [options.port=0] 0 picks a free port
 * @param {string} [options.phase='healthy'] initial phase
 * @param {object} [options.phaseOptions] options of the initial phase
 */
async function startApiServer(options = {}) {
  const { caPem, certPem, keyPem } = loadCerts();
  const config = {
    token: options.token === undefined ? 'test-token' : options.token,
    role: options.role || { rules: [] },
    namespace: options.namespace === undefined ? 'ci' : options.namespace,
    rulesIncomplete: Boolean(options.rulesIncomplete),
    rulesReviewStatus: checkRulesReviewStatus(options.rulesReviewStatus),
    rulesStatus: options.rulesStatus || null,
    accessStatus: options.accessStatus || null,
    latencyMs: options.latencyMs || 0,
    admissionDenial: checkAdmissionDenial(options.admissionDenial),
    validateNames: Boolean(options.validateNames),
    podRunningAfterMs: checkNonNegative('podRunningAfterMs', options.podRunningAfterMs, 1000),
    execResults: checkExecResults(options.execResults),
    execProtocols: checkExecProtocols(options.execProtocols),
  };

  const state = {
    phase: 'healthy',
    phaseOptions: { share: 1 },
    phaseRequestIndex: 0,
    closed: false,
    listening: false,
    port: 0,
    rawSockets: new Set(),
    tlsSockets: new Set(),
    timers: new Set(),
    refuseKeepAlive: null,
    timelineToken: null,
    timelineResolve: null,
    transition: Promise.resolve(),
    phaseHistory: [],
    triggers: [],
  };
  const requests = [];
  const execs = [];
  const store = createObjectStore(() => config);
  const container = checkPodRoot(options.podRoot) ? createPodContainer({ podRoot: options.podRoot, podEnv: options.podEnv, readOnlyShm: Boolean(options.readOnlyShm), shmClaimsFile: Boolean(options.shmClaimsFile), podShm: Boolean(options.podShm), podMounts: options.podMounts || [] }) : null;
  const execHandler = createExecHandler({ later, settings: () => config, container });

  const httpsServer = https.createServer({ key: keyPem, cert: certPem });
  httpsServer.on('connection', (socket) => {
    if (state.closed || state.phase === 'refuse') {
      socket.destroy();
      return;
    }
    state.rawSockets.add(socket);
    socket.on('close', () => state.rawSockets.delete(socket));
  });
  httpsServer.on('secureConnection', (socket) => {
    state.tlsSockets.add(socket);
    socket.on('close', () => state.tlsSockets.delete(socket));
  });
  httpsServer.on('tlsClientError', () => {});
  httpsServer.on('clientError', (_err, socket) => socket.destroy());
  httpsServer.on('request', handleRequest);
  httpsServer.on('upgrade', handleUpgrade);

  function later(ms, fn) {
    const timer = setTimeout(() => {
      state.timers.delete(timer);
      fn();
    }, ms);
    timer.unref();
    state.timers.add(timer);
    return timer;
  }

  function destroyAllSockets() {
    for (const socket of state.tlsSockets) socket.destroy();
    for (const socket of state.rawSockets) socket.destroy();
    state.tlsSockets.clear();
    state.rawSockets.clear();
  }

  // --- listener ------------------------------------------------------------

  function listenOnce(port) {
    return new Promise((resolve, reject) => {
      const onError = (err) => {
        httpsServer.off('listening', onListening);
        reject(err);
      };
      const onListening = () => {
        httpsServer.off('error', onError);
        resolve(httpsServer.address().port);
      };
      httpsServer.once('error', onError);
      httpsServer.once('listening', onListening);
      httpsServer.listen({ port, host: HOST, exclusive: true });
    });
  }

  async function listenFirst(port) {
    if (port) return listenOnce(port);
    const range = portPickRange();
    if (range) {
      for (let i = 0; i < PORT_PICK_ATTEMPTS; i++) {
        const candidate = crypto.randomInt(range[0], range[1] + 1);
        try {
          return await listenOnce(candidate);
        } catch (err) {
          if (err.code !== 'EADDRINUSE' && err.code !== 'EACCES') throw err;
        }
      }
    }
    return listenOnce(0);
  }

  async function relisten() {
    if (httpsServer.listening) {
      state.listening = true;
      return;
    }
    let lastError;
    for (let attempt = 0; attempt < RELISTEN_ATTEMPTS; attempt++) {
      if (state.closed) return;
      try {
        await listenOnce(state.port);
        state.listening = true;
        return;
      } catch (err) {
        lastError = err;
        if (err.code !== 'EADDRINUSE') break;
        await delay(RELISTEN_DELAY_MS);
      }
    }
    throw new Error(`could not listen again on ${HOST}:${state.port}: ${lastError && lastError.message}`, {
      cause: lastError,
    });
  }

  function stopListening() {
    if (!state.listening) return Promise.resolve();
    state.listening = false;
    return new Promise((resolve) => {
      const guard = setTimeout(resolve, CLOSE_WAIT_MS);
      guard.unref();
      httpsServer.close(() => {
        clearTimeout(guard);
        resolve();
      });
      destroyAllSockets();
    });
  }

  // Runs listener changes one after the other; never leaves a rejected promise unhandled.
  function enqueue(step) {
    const next = state.transition.then(step);
    state.transition = next.catch(() => {});
    next.catch(() => {});
    return next;
  }

  // --- phases --------------------------------------------------------------

  function setPhase(name, phaseOptions) {
    if (state.closed) throw new Error('server is closed');
    const opts = checkPhase(name, phaseOptions);
    const previous = state.phase;
    state.phase = name;
    state.phaseOptions = opts;
    state.phaseRequestIndex = 0;
    state.phaseHistory.push({ atMs: Date.now(), phase: name, options: opts });
    if (name === 'refuse' && previous !== 'refuse') {
      // A listening server keeps the event loop alive; a refusing one should too,
      // until close(). (Timeline timers are unref'd.)
      if (!state.refuseKeepAlive) state.refuseKeepAlive = setInterval(() => {}, 60 * 60 * 1000);
      destroyAllSockets();
      return enqueue(stopListening);
    }
    if (name !== 'refuse' && previous === 'refuse') {
      return enqueue(async () => {
        if (state.phase === 'refuse' || state.closed) return; // switched back before we got here
        await relisten();
        if (state.refuseKeepAlive && state.phase !== 'refuse') {
          clearInterval(state.refuseKeepAlive);
          state.refuseKeepAlive = null;
        }
      });
    }
    return enqueue(() => {});
  }

  function faultApplies() {
    if (state.phase === 'healthy') return false;
    const i = state.phaseRequestIndex++;
    const share = state.phaseOptions.share;
    return Math.floor((i + 1) * share) > Math.floor(i * share);
  }

  function cancelTimeline() {
    if (state.timelineResolve) state.timelineResolve(false);
    state.timelineToken = null;
    state.timelineResolve = null;
  }

  function checkTimeline(entries) {
    if (!Array.isArray(entries) || entries.length === 0) {
      throw new TypeError('a timeline is a non-empty array of { phase, ms?, ...options }');
    }
    entries.forEach((entry, i) => {
      checkPhase(entry && entry.phase, entry);
      if (i < entries.length - 1 && !(Number.isFinite(entry.ms) && entry.ms >= 0)) {
        throw new RangeError(`timeline entry ${i} (${entry.phase}) needs ms >= 0`);
      }
    });
  }

  /**
   * Runs `timeline` (as runTimeline) when the `nth` request on `match.route`
   * (and `match.name`, when given) arrives, before that request is faulted
   * or answered. Resolves what runTimeline resolves, or false when the
   * server closes or disarmTriggers() runs first.
   */
  function armTrigger(match, timeline) {
    if (state.closed) return Promise.resolve(false);
    const checked = checkTriggerMatch(match);
    checkTimeline(timeline);
    return new Promise((resolve) => {
      state.triggers.push({ match: checked, timeline, seen: 0, resolve });
    });
  }

  function disarmTriggers() {
    const armed = state.triggers.splice(0);
    for (const t of armed) t.resolve(false);
  }

  function fireTriggers(route, name) {
    for (const t of state.triggers) {
      if (t.match.route !== route) continue;
      if (t.match.name !== undefined && t.match.name !== name) continue;
      t.seen += 1;
      if (t.seen < t.match.nth) continue;
      state.triggers.splice(state.triggers.indexOf(t), 1);
      runTimeline(t.timeline).then(t.resolve);
      return; // one trigger per request
    }
  }

  function runTimeline(entries) {
    if (state.closed) return Promise.resolve(false);
    checkTimeline(entries);
    cancelTimeline();
    const token = {};
    state.timelineToken = token;
    return new Promise((resolve) => {
      state.timelineResolve = resolve;
      const startMs = Date.now();
      let offsetMs = 0;
      const step = (i) => {
        if (state.timelineToken !== token || state.closed) return;
        const entry = entries[i];
        Promise.resolve(setPhase(entry.phase, entry))
          .catch(() => {})
          .then(() => {
            if (state.timelineToken !== token || state.closed) return;
            if (i === entries.length - 1) {
              state.timelineToken = null;
              state.timelineResolve = null;
              resolve(true);
              return;
            }
            offsetMs += entry.ms;
            later(Math.max(0, startMs + offsetMs - Date.now()), () => step(i + 1));
          });
      };
      step(0);
    });
  }

  // --- requests ------------------------------------------------------------

  function sendJson(res, entry, code, object, extraHeaders) {
    if (res.destroyed || res.writableEnded) return;
    const body = JSON.stringify(object);
    res.writeHead(code, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(body),
      ...(extraHeaders || {}),
    });
    res.end(body);
    entry.status = code;
  }

  function readBody(req, onDone) {
    const chunks = [];
    let size = 0;
    let tooLarge = false;
    req.on('data', (chunk) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) tooLarge = true;
      else chunks.push(chunk);
    });
    req.on('end', () => onDone(tooLarge ? null : Buffer.concat(chunks).toString('utf8'), tooLarge));
    req.on('error', () => {});
  }

  function parseJson(text) {
    if (!text) return null;
    try {
      return JSON.parse(text);
    } catch {
      return null;
    }
  }

  // The log entry of one request (an upgrade included), after the triggers
  // it fires and the fault decision.
  function openEntry(req) {
    const url = req.url || '/';
    const q = url.indexOf('?');
    const urlPath = q < 0 ? url : url.slice(0, q);
    const search = q < 0 ? '' : url.slice(q + 1);
    const kind = kindOfPath(urlPath);
    const object = kind === 'other' ? parseObjectPath(req.method, urlPath) : null;
    const route = kind !== 'other' ? kind : object && object.route ? object.route : 'other';
    fireTriggers(route, object ? object.name : '');
    const activePhase = state.phase;
    const faulted = faultApplies();
    const phase = faulted ? activePhase : 'healthy';
    const entry = {
      atMs: Date.now(),
      phase,
      activePhase,
      method: req.method,
      path: urlPath,
      kind,
      route,
      body: null,
      status: null,
    };
    if (object && object.name) entry.name = object.name;
    requests.push(entry);
    return { entry, urlPath, search, kind, object, phase };
  }

  function handleRequest(req, res) {
    const { entry, urlPath, kind, phase } = openEntry(req);

    if (phase === 'refuse') {
      // Only reachable on a connection accepted just before the listener closed.
      entry.status = 'refused';
      req.socket.destroy();
      return;
    }
    if (phase === 'reset') {
      // Headers are read; drop the connection mid-request.
      entry.status = 'reset';
      req.socket.destroy();
      return;
    }

    readBody(req, (text, tooLarge) => {
      entry.body = parseJson(text);
      if (phase === 'hang') {
        entry.status = 'hang';
        return; // never answer; close(), refuse or the client ends it
      }
      if (phase !== 'healthy' && phase !== 'trickle' && phase !== 'applyThenCut' && phase !== 'slow') {
        answerFault(req, res, entry, phase, kind, urlPath);
        return;
      }
      const shape = phase === 'healthy' || phase === 'slow' ? null : phase === 'trickle' ? 'trickle' : 'cut';
      const answer = () => answerHealthy(req, res, entry, kind, urlPath, text, tooLarge, shape);
      if (phase === 'slow') {
        // Handled when the delay ends; not at all when the client left first.
        later(slowDelayMs() + config.latencyMs, () => {
          if (res.destroyed || req.socket.destroyed) {
            entry.status = 'abandoned';
            return;
          }
          answer();
        });
        return;
      }
      if (config.latencyMs > 0) later(config.latencyMs, answer);
      else answer();
    });
  }

  // The delay of a `slow` phase, read when its request arrives.
  function slowDelayMs() {
    return state.phaseOptions.slowMs === undefined ? 1000 : state.phaseOptions.slowMs;
  }

  // The HTTP status answer of a status fault phase: { code, object, headers }, or null for other phases.
  function faultAnswer(req, phase, kind, urlPath) {
    const status = faultStatus(phase, kind, req.method, urlPath);
    if (status && state.phaseOptions.echoToken) {
      const token = String(req.headers.authorization || '').replace(/^\S+\s+/, '');
      status.object.message += ` (the request's token ${token} was not accepted by this replica)`;
      // A debugging proxy's echo: a header is part of the client's error too.
      status.headers = { ...status.headers, 'x-debug-authorization': `Bearer ${token}` };
    }
    return status;
  }

  function faultStatus(phase, kind, method, urlPath) {
    const opts = state.phaseOptions;
    switch (phase) {
      case 'forbidden403':
        return {
          code: 403,
          object: statusObject(403, 'Forbidden', forbiddenMessage(kind, method, urlPath), {
            group: 'authorization.k8s.io',
            kind: kind === 'ssrr' ? 'selfsubjectrulesreviews' : 'selfsubjectaccessreviews',
          }),
          headers: {},
        };
      case 'unauthorized401':
        return { code: 401, object: statusObject(401, 'Unauthorized', 'Unauthorized'), headers: {} };
      case 'throttle429': {
        const seconds = opts.retryAfterSeconds === undefined ? 1 : opts.retryAfterSeconds;
        return {
          code: 429,
          object: statusObject(429, 'TooManyRequests', 'Too many requests, please try again later.', {
            retryAfterSeconds: seconds,
          }),
          headers: { 'retry-after': String(seconds) },
        };
      }
      case 'error500':
        return { code: 500, object: statusObject(500, 'InternalError', 'Internal error occurred: injected fault'), headers: {} };
      case 'unavailable503':
        return {
          code: 503,
          object: statusObject(503, 'ServiceUnavailable', 'the server is currently unable to handle the request'),
          headers: opts.retryAfterSeconds === undefined ? {} : { 'retry-after': String(opts.retryAfterSeconds) },
        };
      default:
        return null;
    }
  }

  function answerFault(req, res, entry, phase, kind, urlPath) {
    const status = faultAnswer(req, phase, kind, urlPath);
    if (status) return sendJson(res, entry, status.code, status.object, status.headers);
    switch (phase) {
      case 'malformed': {
        if (res.destroyed) return;
        const kindName = kind === 'ssrr' ? 'SelfSubjectRulesReview' : 'SelfSubjectAccessReview';
        const body = `{"kind":"${kindName}","apiVersion":"authorization.k8s.io/v1","status":{"allowed":tr`;
        res.writeHead(201, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
        res.end(body);
        entry.status = 201;
        return;
      }
      case 'cutBody':
        return sendCut(res, entry, 201, cutReview(kind));
      default:
        throw new Error(`no fault answer for phase ${phase}`);
    }
  }

  // `shape`: null (a whole answer), 'trickle' or 'cut' (a 2xx answer cut, as `applyThenCut`).
  function answerHealthy(req, res, entry, kind, urlPath, text, tooLarge, shape) {
    if (res.destroyed) return;
    const auth = req.headers.authorization || '';
    if (auth !== `Bearer ${config.token}`) {
      return sendJson(res, entry, 401, statusObject(401, 'Unauthorized', 'Unauthorized'));
    }
    if (kind === 'other') {
      const object = parseObjectPath(req.method, urlPath);
      if (object) return answerObject(req, res, entry, object, tooLarge, shape);
      return sendJson(res, entry, 404, statusObject(404, 'NotFound', 'the server could not find the requested resource'));
    }
    if (req.method !== 'POST') {
      return sendJson(
        res,
        entry,
        405,
        statusObject(405, 'MethodNotAllowed', `the server does not allow this method on the requested resource`),
      );
    }
    if (tooLarge) {
      return sendJson(res, entry, 413, statusObject(413, 'RequestEntityTooLarge', 'request body too large'));
    }
    if (kind === 'ssrr' && config.rulesReviewStatus !== null) {
      const code = config.rulesReviewStatus;
      if (code === 403) {
        return sendJson(res, entry, 403, statusObject(403, 'Forbidden', forbiddenMessage(kind, req.method, urlPath), {
          group: 'authorization.k8s.io',
          kind: 'selfsubjectrulesreviews',
        }));
      }
      if (code === 404) {
        return sendJson(res, entry, 404, statusObject(404, 'NotFound', 'the server could not find the requested resource'));
      }
      return sendJson(res, entry, code, statusObject(code, 'InternalError', `injected rules review failure (HTTP ${code})`));
    }
    const body = entry.body;
    if (body === null || typeof body !== 'object' || Array.isArray(body)) {
      return sendJson(
        res,
        entry,
        400,
        statusObject(400, 'BadRequest', `the request body is not a JSON object: ${JSON.stringify((text || '').slice(0, 80))}`),
      );
    }
    const spec = body.spec && typeof body.spec === 'object' ? body.spec : {};
    let answer;
    if (kind === 'ssar') {
      const attrs = spec.resourceAttributes;
      if (!attrs || typeof attrs !== 'object') {
        if (spec.nonResourceAttributes) {
          answer = { ...body, status: { allowed: false } };
        } else {
          return sendJson(
            res,
            entry,
            422,
            statusObject(
              422,
              'Invalid',
              'SelfSubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes: ' +
                'Invalid value: "null": exactly one of nonResourceAttributes or resourceAttributes must be specified',
            ),
          );
        }
      } else {
        const verdict = evaluateRole(config.role, config.namespace, attrs);
        const status = config.accessStatus ? { ...config.accessStatus } : { allowed: verdict.allowed };
        if (verdict.allowed && !config.accessStatus) {
          status.reason = `RBAC: allowed by RoleBinding "runner/${config.namespace}" of Role "runner" (rule ${verdict.ruleIndex}) to ServiceAccount "runner/${config.namespace}"`;
        }
        answer = {
          ...body,
          apiVersion: body.apiVersion || 'authorization.k8s.io/v1',
          kind: body.kind || 'SelfSubjectAccessReview',
          metadata: { creationTimestamp: null, ...(body.metadata || {}) },
          status,
        };
      }
    } else {
      const matches = spec.namespace === config.namespace;
      const status = config.rulesStatus || {
        resourceRules: matches ? rulesForReview(config.role) : [],
        nonResourceRules: [],
        incomplete: config.rulesIncomplete,
      };
      if (config.rulesIncomplete && !config.rulesStatus) status.evaluationError = INCOMPLETE_ERROR;
      answer = {
        ...body,
        apiVersion: body.apiVersion || 'authorization.k8s.io/v1',
        kind: body.kind || 'SelfSubjectRulesReview',
        metadata: { creationTimestamp: null, ...(body.metadata || {}) },
        status,
      };
    }
    return sendShaped(res, entry, 201, answer, shape);
  }

  // RBAC for a pod or secret path: null when the Role grants it, else the 403 Status.
  function objectForbidden(object) {
    const attrs = {
      namespace: object.namespace,
      verb: object.verb,
      group: '',
      resource: object.resource,
      subresource: object.subresource,
      name: object.name,
    };
    if (evaluateRole(config.role, config.namespace, attrs).allowed) return null;
    const what = object.name && object.op !== 'exec' ? `${object.resource} "${object.name}"` : object.resource;
    const resource = object.subresource ? `${object.resource}/${object.subresource}` : object.resource;
    return statusObject(
      403,
      'Forbidden',
      `${what} is forbidden: User "${SERVICE_ACCOUNT_USER}" cannot ${object.verb} resource "${resource}" in API group "" in the namespace "${object.namespace}"`,
      { name: object.name || undefined, kind: object.resource },
    );
  }

  // A healthy answer on a pod or secret path (apiserver-objects.js).
  function answerObject(req, res, entry, object, tooLarge, shape) {
    if (object.op === 'exec') {
      return sendJson(res, entry, 400, statusObject(400, 'BadRequest', 'Upgrade request required'));
    }
    if (!object.op) {
      if (object.subresource) {
        return sendJson(res, entry, 404, statusObject(404, 'NotFound', 'the server could not find the requested resource'));
      }
      return sendJson(
        res,
        entry,
        405,
        statusObject(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource'),
      );
    }
    const forbidden = objectForbidden(object);
    if (forbidden) return sendJson(res, entry, 403, forbidden);
    if (tooLarge) {
      return sendJson(res, entry, 413, statusObject(413, 'RequestEntityTooLarge', 'request body too large'));
    }
    let result;
    if (object.op === 'create') {
      const body = entry.body;
      if (body === null || typeof body !== 'object' || Array.isArray(body)) {
        return sendJson(res, entry, 400, statusObject(400, 'BadRequest', 'the request body is not a JSON object'));
      }
      result = store.create(object.resource, object.namespace, body, { admission: true });
    } else if (object.op === 'get') {
      result = store.get(object.resource, object.namespace, object.name);
    } else if (object.op === 'list') {
      const search = (req.url || '').includes('?') ? req.url.slice(req.url.indexOf('?') + 1) : '';
      result = store.list(object.resource, object.namespace, new URLSearchParams(search).get('labelSelector'));
    } else {
      result = store.remove(object.resource, object.namespace, object.name);
      if (object.resource === 'pods' && result.code === 200) execHandler.podDeleted(object.namespace, object.name);
    }
    if (result.status) {
      const [reason, message, details] = result.status;
      return sendJson(res, entry, result.code, statusObject(result.code, reason, message, details));
    }
    return sendShaped(res, entry, result.code, result.object, shape);
  }

  function sendShaped(res, entry, code, object, shape) {
    if (shape === 'trickle') return sendTrickle(res, entry, code, object);
    if (shape === 'cut') return sendCut(res, entry, code, object);
    return sendJson(res, entry, code, object);
  }

  // --- exec: the WebSocket upgrade ----------------------------------------

  // An HTTP answer written on the raw socket of an upgrade request (no 101).
  function rawAnswer(socket, entry, code, object, extraHeaders) {
    if (socket.destroyed) return;
    const body = JSON.stringify(object);
    const head = [
      `HTTP/1.1 ${code} ${http.STATUS_CODES[code] || 'Unknown'}`,
      'Content-Type: application/json',
      `Content-Length: ${Buffer.byteLength(body)}`,
      'Connection: close',
      ...Object.entries(extraHeaders || {}).map(([k, v]) => `${k}: ${v}`),
    ];
    socket.end(`${head.join('\r\n')}\r\n\r\n${body}`);
    entry.status = code;
  }

  function handleUpgrade(req, socket, head) {
    socket.on('error', () => {});
    const { entry, urlPath, search, kind, phase } = openEntry(req);
    if (phase === 'refuse' || phase === 'reset') {
      entry.status = phase === 'refuse' ? 'refused' : 'reset';
      socket.destroy();
      return;
    }
    if (phase === 'hang') {
      entry.status = 'hang'; // silent until close(), a refuse phase, or the client gives up
      return;
    }
    const status = faultAnswer(req, phase, kind, urlPath);
    if (status) return rawAnswer(socket, entry, status.code, status.object, status.headers);
    if (phase === 'malformed') {
      const body = '{"kind":"Status","apiVersion":"v1","status":"Succ';
      socket.end(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`);
      entry.status = 200;
      return;
    }
    if (phase === 'cutBody') {
      const headText = 'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n';
      entry.status = state.phaseOptions.hang ? 'cut-hang' : 'cut';
      socket.write(headText.slice(0, Math.floor(headText.length / 2)), () => {
        if (!state.phaseOptions.hang) socket.destroy();
      });
      return;
    }
    const go = () => upgradeHealthy(req, socket, head, entry, search, urlPath, phase === 'applyThenCut');
    if (phase === 'slow') {
      later(slowDelayMs() + config.latencyMs, () => {
        if (socket.destroyed) {
          entry.status = 'abandoned';
          return;
        }
        go();
      });
      return;
    }
    const waitMs = phase === 'trickle' ? (state.phaseOptions.trickleMs === undefined ? 200 : state.phaseOptions.trickleMs) : config.latencyMs;
    if (waitMs > 0) later(waitMs, go);
    else go();
  }

  // `lose`: the command starts and the 101 is never sent (applyThenCut).
  function upgradeHealthy(req, socket, head, entry, search, urlPath, lose) {
    if (socket.destroyed) return;
    const auth = req.headers.authorization || '';
    if (auth !== `Bearer ${config.token}`) return rawAnswer(socket, entry, 401, statusObject(401, 'Unauthorized', 'Unauthorized'));
    const object = parseObjectPath(req.method, urlPath);
    if (!object || object.op !== 'exec') {
      return rawAnswer(socket, entry, 404, statusObject(404, 'NotFound', 'the server could not find the requested resource'));
    }
    const forbidden = objectForbidden(object);
    if (forbidden) return rawAnswer(socket, entry, 403, forbidden);
    const pod = store.podForExec(object.namespace, object.name);
    if (!pod) {
      return rawAnswer(socket, entry, 404, statusObject(404, 'NotFound', `pods "${object.name}" not found`, { name: object.name, kind: 'pods' }));
    }
    const query = parseExecQuery(search);
    if (query.command.length === 0) {
      return rawAnswer(socket, entry, 400, statusObject(400, 'BadRequest', 'you must specify at least one command for the container'));
    }
    const container = query.container || pod.containers[0] || '';
    if (!pod.containers.includes(container)) {
      return rawAnswer(socket, entry, 400, statusObject(400, 'BadRequest', `container ${container} is not valid for pod ${object.name}`));
    }
    if (pod.phase !== 'Running') {
      return rawAnswer(socket, entry, 400, statusObject(400, 'BadRequest', `unable to upgrade connection: container not found ("${container}")`));
    }
    if (!execHandler.chooseProtocol(req)) {
      return rawAnswer(socket, entry, 400, statusObject(400, 'BadRequest', 'none of the offered subprotocols is supported'));
    }
    const exec = {
      atMs: Date.now(),
      namespace: object.namespace,
      pod: object.name,
      container,
      command: query.command,
      stdinRequested: query.stdin,
      protocol: null,
      stdin: '',
      stdinBytes: 0,
      outcome: 'opening',
      exitCode: null,
      endedAtMs: null,
      closeCode: null,
    };
    if (lose) {
      entry.status = 'cut';
      execHandler.startLost(exec, query, () => execs.push(exec));
      exec.outcome = 'answer-lost';
      exec.endedAtMs = Date.now();
      socket.destroy();
      return;
    }
    entry.status = 101;
    execHandler.upgrade(req, socket, head, exec, query, () => execs.push(exec));
  }

  function sendTrickle(res, entry, code, object) {
    const opts = state.phaseOptions;
    const gapMs = opts.trickleMs === undefined ? 200 : opts.trickleMs;
    const chunkBytes = opts.trickleBytes === undefined ? 8 : Math.floor(opts.trickleBytes);
    const body = Buffer.from(JSON.stringify(object), 'utf8');
    res.writeHead(code, { 'content-type': 'application/json', 'content-length': body.length });
    res.flushHeaders();
    entry.status = code;
    let offset = 0;
    const writeNext = () => {
      if (res.destroyed || state.closed) return;
      const chunk = body.subarray(offset, offset + chunkBytes);
      offset += chunk.length;
      if (offset >= body.length) {
        res.end(chunk);
        return;
      }
      res.write(chunk);
      later(gapMs, writeNext);
    };
    later(gapMs, writeNext);
  }

  // A rotating endpoint cutting a 2xx answer mid-body: the status line, the
  // headers and half the body go out on the raw socket (so the framing is
  // exactly what `framing` says), then the connection is destroyed, or with
  // `hang: true` left open and silent (a path that dropped without a reset).
  function cutReview(kind) {
    return {
      kind: kind === 'ssrr' ? 'SelfSubjectRulesReview' : 'SelfSubjectAccessReview',
      apiVersion: 'authorization.k8s.io/v1',
      metadata: { creationTimestamp: null },
      spec: { resourceAttributes: { namespace: config.namespace, verb: 'get', resource: 'pods' } },
      status: { allowed: true, resourceRules: [], incomplete: false },
    };
  }

  function sendCut(res, entry, code, object) {
    const socket = res.socket;
    if (!socket || socket.destroyed) return;
    const opts = state.phaseOptions;
    const framing = opts.framing || 'length';
    const body = Buffer.from(JSON.stringify(object), 'utf8');
    const half = body.subarray(0, Math.floor(body.length / 2));
    const head = [`HTTP/1.1 ${code} ${http.STATUS_CODES[code] || 'Unknown'}`, 'Content-Type: application/json'];
    if (framing === 'length') head.push(`Content-Length: ${body.length}`);
    if (framing === 'chunked') head.push('Transfer-Encoding: chunked');
    if (framing === 'close') head.push('Connection: close');
    const payload =
      framing === 'chunked'
        ? Buffer.concat([Buffer.from(`${half.length.toString(16)}\r\n`), half, Buffer.from('\r\n')])
        : half;
    entry.status = opts.hang ? 'cut-hang' : 'cut';
    socket.write(Buffer.concat([Buffer.from(`${head.join('\r\n')}\r\n\r\n`), payload]), () => {
      if (!opts.hang) socket.destroy();
    });
  }

  // --- public handle -------------------------------------------------------

  /** How many requests each route got ('create pods': 2, ...), faulted ones included. */
  function routeCounts() {
    const out = {};
    for (const r of requests) out[r.route] = (out[r.route] || 0) + 1;
    return out;
  }

  function counts() {
    const byPhase = {};
    const bySecond = {};
    const byKind = { ssar: 0, ssrr: 0, other: 0 };
    for (const r of requests) {
      byPhase[r.phase] = (byPhase[r.phase] || 0) + 1;
      const second = Math.floor(r.atMs / 1000);
      bySecond[second] = (bySecond[second] || 0) + 1;
      byKind[r.kind] += 1;
    }
    return { total: requests.length, byPhase, bySecond, byKind };
  }

  function writeKubeconfig(filePath, kubeOptions = {}) {
    const token = kubeOptions.token === undefined ? config.token : kubeOptions.token;
    const namespace = kubeOptions.namespace === undefined ? config.namespace : kubeOptions.namespace;
    const q = (value) => JSON.stringify(String(value)); // a JSON string is a valid YAML double-quoted scalar
    const yaml = [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      '- name: fake-apiserver',
      '  cluster:',
      `    server: ${q(handle.url)}`,
      `    certificate-authority-data: ${q(Buffer.from(caPem, 'utf8').toString('base64'))}`,
      'users:',
      '- name: runner',
      '  user:',
      `    token: ${q(token)}`,
      'contexts:',
      '- name: fake-apiserver',
      '  context:',
      '    cluster: fake-apiserver',
      '    user: runner',
      `    namespace: ${q(namespace)}`,
      'current-context: fake-apiserver',
      '',
    ].join('\n');
    fs.writeFileSync(filePath, yaml, { mode: 0o600 });
    return filePath;
  }

  async function close() {
    if (state.closed) return;
    state.closed = true;
    cancelTimeline();
    disarmTriggers();
    const execsClosed = execHandler.close();
    for (const timer of state.timers) clearTimeout(timer);
    state.timers.clear();
    if (state.refuseKeepAlive) {
      clearInterval(state.refuseKeepAlive);
      state.refuseKeepAlive = null;
    }
    destroyAllSockets();
    await state.transition;
    if (httpsServer.listening) {
      state.listening = true;
      await stopListening();
    }
    destroyAllSockets();
    await execsClosed;
  }

  const handle = {
    get url() {
      return `https://${HOST}:${state.port}`;
    },
    get port() {
      return state.port;
    },
    caPem,
    get phase() {
      return state.phase;
    },
    get phaseOptions() {
      return { ...state.phaseOptions };
    },
    get listening() {
      return httpsServer.listening;
    },
    get requests() {
      return requests;
    },
    /** Every phase change: { atMs, phase, options }, starting with the initial 'healthy'. */
    get phaseHistory() {
      return state.phaseHistory;
    },
    /**
     * Every exec whose command started: { atMs, pod, container, command, stdin, stdinBytes, protocol, outcome,
     * exitCode, closeCode, ... }; with `podRoot` also pid, signal, exitedAtMs, killedBy (apiserver-exec.js).
     */
    get execs() {
      return execs;
    },
    /** The TCP sockets of the exec streams open now (a test may silence one). */
    openExecSockets() {
      return execHandler.openSockets();
    },
    /** The folder of a pod's processes with `podRoot` (made at its first exec), else null. */
    podFolder(namespace, name) {
      return container ? container.folderFor(namespace, name) : null;
    },
    /** Every create and delete that reached the store: { atMs, op, resource, namespace, name, code }. */
    get objectLog() {
      return store.log;
    },
    /** Marks a stored pod or secret terminating (a deletionTimestamp); false when there is none. */
    markTerminating(resource, namespace, name) {
      return store.markTerminating(resource, namespace, name);
    },
    /** The names ('namespace/name') of the pods or secrets that exist now, sorted. */
    objects(resource) {
      return store.names(resource);
    },
    /**
     * Puts `body` (a pod or secret) into the store as a create would, without
     * a request (someone else's object, made before a test), made at
     * `options.creationTimestamp` if given (RFC 3339), else now. Resolves
     * what the create answered: { code, object } or { code, status }.
     */
    seed(resource, namespace, body, options) {
      return store.create(resource, namespace, body, options);
    },
    /**
     * Change the healthy behaviour at run time: token, role, namespace, rulesIncomplete,
     * rulesReviewStatus, latencyMs, podRunningAfterMs, execResults, execProtocols,
     * admissionDenial, validateNames.
     */
    configure(partial) {
      for (const key of Object.keys(partial || {})) {
        if (!(key in config)) throw new TypeError(`unknown setting ${key}`);
        if (key === 'rulesReviewStatus') config[key] = checkRulesReviewStatus(partial[key]);
        else if (key === 'podRunningAfterMs') config[key] = checkNonNegative(key, partial[key], 1000);
        else if (key === 'execResults') config[key] = checkExecResults(partial[key]);
        else if (key === 'execProtocols') config[key] = checkExecProtocols(partial[key]);
        else if (key === 'admissionDenial') config[key] = checkAdmissionDenial(partial[key]);
        else if (key === 'validateNames') config[key] = Boolean(partial[key]);
        else config[key] = key === 'rulesIncomplete' ? Boolean(partial[key]) : partial[key];
      }
    },
    setPhase,
    runTimeline,
    armTrigger,
    disarmTriggers,
    counts,
    routeCounts,
    resetCounts() {
      requests.length = 0;
    },
    writeKubeconfig,
    close,
  };

  try {
    state.port = await listenFirst(options.port || 0);
    state.listening = true;
    state.phaseHistory.push({ atMs: Date.now(), phase: 'healthy', options: { share: 1 } });
    if (options.phase && options.phase !== 'healthy') await setPhase(options.phase, options.phaseOptions);
    for (const t of options.triggers || []) armTrigger(t && t.match, t && t.timeline);
  } catch (err) {
    await close();
    throw err;
  }
  return handle;
}

// ---------------------------------------------------------------------------
// CLI

function parseArgs(argv) {
  const args = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--config' || arg === '--log') {
      if (i + 1 >= argv.length) throw new Error(`${arg} needs a value`);
      args[arg.slice(2)] = argv[++i];
    } else {
      throw new Error(`unknown argument ${arg}; usage: apiserver.js --config <file.json> [--log <file.json>]`);
    }
  }
  if (!args.config) throw new Error('usage: apiserver.js --config <file.json> [--log <file.json>]');
  return args;
}

async function main(argv) {
  const args = parseArgs(argv);
  const config = JSON.parse(fs.readFileSync(args.config, 'utf8'));
  const maxRunMs = config.maxRunMs === undefined ? 120000 : config.maxRunMs;
  const server = await startApiServer(config);
  let stopping = false;

  const stop = async (why, exitCode) => {
    if (stopping) return;
    stopping = true;
    // Closed first, so that the log says how the processes of a real container ended.
    await server.close();
    if (args.log) {
      const log = {
        stoppedBy: why,
        url: server.url,
        counts: server.counts(),
        routeCounts: server.routeCounts(),
        requests: server.requests,
        phaseHistory: server.phaseHistory,
        execs: server.execs,
        objectLog: server.objectLog,
      };
      fs.writeFileSync(args.log, `${JSON.stringify(log, null, 2)}\n`);
    }
    process.exit(exitCode);
  };

  // Hard self-stop: this timer is deliberately ref'd so it also keeps the process alive.
  setTimeout(() => {
    process.stderr.write(`apiserver.js: maxRunMs ${maxRunMs} reached, stopping\n`);
    stop('maxRunMs', 0);
  }, maxRunMs);
  process.on('SIGTERM', () => stop('SIGTERM', 0));
  process.on('SIGINT', () => stop('SIGINT', 0));

  const kubeconfig = config.kubeconfig ? server.writeKubeconfig(config.kubeconfig) : null;
  process.stdout.write(`${JSON.stringify({ url: server.url, port: server.port, kubeconfig })}\n`);
  if (Array.isArray(config.timeline) && config.timeline.length > 0) {
    await server.runTimeline(config.timeline);
  }
}

if (require.main === module) {
  main(process.argv.slice(2)).catch((err) => {
    process.stderr.write(`apiserver.js: ${err && err.stack ? err.stack : err}\n`);
    process.exit(1);
  });
}

module.exports = { startApiServer, evaluateRole, PHASES, CERT_DIR };

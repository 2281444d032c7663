'use strict';
/**
 * The pods and secrets of the loopback apiserver (apiserver.js): the paths
 * a whole Kubernetes-mode job uses, an in-memory store, and a log of every
 * create and delete. For tests only; Node built-ins only.
 *
 * Paths (core group, one namespace):
 *   POST   /api/v1/namespaces/{ns}/pods             create (409 AlreadyExists on a name in use; with
 *                                                   `validateNames`, 422 Invalid on a name that is not
 *                                                   an RFC 1123 subdomain; with `admissionDenial`, the
 *                                                   denial, see apiserver.js)
 *   GET    /api/v1/namespaces/{ns}/pods             list (labelSelector: k=v, k==v, k!=v, k, !k)
 *   GET    /api/v1/namespaces/{ns}/pods/{name}      read (status.phase Pending, Running once
 *                                                   `podRunningAfterMs` have passed since the create)
 *   DELETE /api/v1/namespaces/{ns}/pods/{name}      delete (404 NotFound when missing)
 *   the same four for secrets (a secret has no phase)
 *   GET    /api/v1/namespaces/{ns}/pods/{name}/exec the exec upgrade (apiserver-exec.js)
 */

const crypto = require('node:crypto');

const OBJECT_PATH = /^\/api\/v1\/namespaces\/([^/]+)\/(pods|secrets)(?:\/([^/]+)(?:\/([^/]+))?)?$/;

const KINDS = Object.freeze({ pods: 'Pod', secrets: 'Secret' });

// A lowercase RFC 1123 subdomain, as the apiserver validates pod and secret names.
const DNS1123_LABEL = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const DNS1123_SUBDOMAIN = new RegExp(`^${DNS1123_LABEL}(\\.${DNS1123_LABEL})*$`);
const DNS1123_SUBDOMAIN_MAX = 253;
const DNS1123_SUBDOMAIN_ERROR =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', " +
  "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is " +
  "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

/** The apiserver's complaints about a name (none: []), each as its field error message. */
function nameErrors(name) {
  const out = [];
  if (name.length > DNS1123_SUBDOMAIN_MAX) {
    out.push(`Invalid value: ${JSON.stringify(name)}: must be no more than ${DNS1123_SUBDOMAIN_MAX} characters`);
  }
  if (!DNS1123_SUBDOMAIN.test(name)) out.push(`Invalid value: ${JSON.stringify(name)}: ${DNS1123_SUBDOMAIN_ERROR}`);
  return out;
}

/**
 * What an object path names: { namespace, resource, name, subresource, verb,
 * route } ('create pods', 'get pods', 'list pods', 'delete pods', 'exec pods',
 * and the same for secrets), or null for a path that is not one of ours.
 * `verb` is the RBAC verb (exec: 'create', as the apiserver authorizes it).
 */
function parseObjectPath(method, urlPath) {
  const m = OBJECT_PATH.exec(urlPath);
  if (!m) return null;
  const [, namespace, resource, rawName, subresource] = m;
  const name = rawName === undefined ? '' : decodeURIComponent(rawName);
  const sub = subresource || '';
  let op;
  if (sub === 'exec' && resource === 'pods' && name) op = 'exec';
  else if (sub) op = null;
  else if (!name && method === 'POST') op = 'create';
  else if (!name && method === 'GET') op = 'list';
  else if (name && method === 'GET') op = 'get';
  else if (name && method === 'DELETE') op = 'delete';
  else op = null;
  const verb = op === 'exec' ? 'create' : op;
  return { namespace: decodeURIComponent(namespace), resource, name, subresource: sub, op, verb, route: op ? `${op} ${resource}` : null };
}

/**
 * A label selector as the apiserver reads one: requirements separated by
 * commas, each `k=v`, `k==v`, `k!=v`, `k` (has the label) or `!k` (has not).
 * Returns a predicate over a labels object, or throws a RangeError naming the
 * requirement it cannot read (set-based `in`/`notin` included).
 */
function parseLabelSelector(text) {
  const checks = [];
  for (const raw of String(text || '').split(',')) {
    const part = raw.trim();
    if (!part) continue;
    let m;
    if ((m = /^([A-Za-z0-9_./-]+)\s*(==|=|!=)\s*([A-Za-z0-9_.-]*)$/.exec(part))) {
      const [, key, op, value] = m;
      checks.push(op === '!=' ? (l) => l[key] !== value : (l) => l[key] === value);
    } else if ((m = /^!([A-Za-z0-9_./-]+)$/.exec(part))) {
      const key = m[1];
      checks.push((l) => !(key in l));
    } else if ((m = /^([A-Za-z0-9_./-]+)$/.exec(part))) {
      const key = m[1];
      checks.push((l) => key in l);
    } else {
      throw new RangeError(`unable to parse requirement: ${JSON.stringify(part)}`);
    }
  }
  return (labels) => checks.every((check) => check(labels || {}));
}

/**
 * The store: pods and secrets of every namespace, by name, and `log`, every
 * create and delete that reached it ({ atMs, op, resource, namespace, name,
 * code }: 201/409/422 for a create, 200/404 for a delete).
 * `settings()` returns { podRunningAfterMs, validateNames, admissionDenial }
 * at the time of each call.
 */
function createObjectStore(settings) {
  const objects = { pods: new Map(), secrets: new Map() };
  const log = [];
  let resourceVersion = 1000;

  const key = (namespace, name) => `${namespace}/${name}`;

  // A pod's phase as the kubelet would report it: Pending, then Running.
  function withStatus(resource, stored) {
    const copy = JSON.parse(JSON.stringify(stored.object));
    if (resource === 'pods') {
      const running = Date.now() - stored.createdAtMs >= settings().podRunningAfterMs;
      copy.status = { ...(copy.status || {}), phase: running ? 'Running' : 'Pending' };
    }
    return copy;
  }

  function record(op, resource, namespace, name, code) {
    log.push({ atMs: Date.now(), op, resource, namespace, name, code });
  }

  /**
   * { code, object } or { code, status: [reason, message, details] }.
   * `options.admission`: the create came over the API, so `admissionDenial`
   * applies (after validation, before the name is checked for use);
   * `options.creationTimestamp`: made then (RFC 3339), not now.
   */
  function create(resource, namespace, body, options = {}) {
    const name = body && body.metadata && typeof body.metadata.name === 'string' ? body.metadata.name : '';
    if (!name) {
      record('create', resource, namespace, '', 422);
      return {
        code: 422,
        status: ['Invalid', `${KINDS[resource]} "" is invalid: metadata.name: Required value: name or generateName is required`, { kind: resource }],
      };
    }
    const current = settings();
    if (current.validateNames) {
      const errors = nameErrors(name);
      if (errors.length > 0) {
        record('create', resource, namespace, name, 422);
        const causes = errors.map((message) => ({ reason: 'FieldValueInvalid', message, field: 'metadata.name' }));
        return {
          code: 422,
          status: [
            'Invalid',
            `${KINDS[resource]} ${JSON.stringify(name)} is invalid: ${errors.map((m) => `metadata.name: ${m}`).join(', ')}`,
            { name, kind: KINDS[resource], causes },
          ],
        };
      }
    }
    const denial = options.admission ? current.admissionDenial : null;
    if (denial && denial.resources.includes(resource)) {
      record('create', resource, namespace, name, denial.code);
      return { code: denial.code, status: [denial.reason, denial.message, { name, kind: resource }] };
    }
    const k = key(namespace, name);
    if (objects[resource].has(k)) {
      record('create', resource, namespace, name, 409);
      return { code: 409, status: ['AlreadyExists', `${resource} "${name}" already exists`, { name, kind: resource }] };
    }
    const object = JSON.parse(JSON.stringify(body));
    object.apiVersion = 'v1';
    object.kind = KINDS[resource];
    object.metadata = {
      ...object.metadata,
      namespace,
      uid: crypto.randomUUID(),
      resourceVersion: String(++resourceVersion),
      creationTimestamp: options.creationTimestamp || new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    };
    const stored = { object, createdAtMs: Date.now() };
    objects[resource].set(k, stored);
    record('create', resource, namespace, name, 201);
    return { code: 201, object: withStatus(resource, stored) };
  }

  function get(resource, namespace, name) {
    const stored = objects[resource].get(key(namespace, name));
    if (!stored) return { code: 404, status: ['NotFound', `${resource} "${name}" not found`, { name, kind: resource }] };
    return { code: 200, object: withStatus(resource, stored) };
  }

  function list(resource, namespace, labelSelector) {
    let matches;
    try {
      matches = parseLabelSelector(labelSelector);
    } catch (err) {
      return { code: 400, status: ['BadRequest', err.message] };
    }
    const items = [];
    for (const stored of objects[resource].values()) {
      if (stored.object.metadata.namespace === namespace && matches(stored.object.metadata.labels)) {
        items.push(withStatus(resource, stored));
      }
    }
    return {
      code: 200,
      object: { kind: `${KINDS[resource]}List`, apiVersion: 'v1', metadata: { resourceVersion: String(resourceVersion) }, items },
    };
  }

  function remove(resource, namespace, name) {
    const k = key(namespace, name);
    const stored = objects[resource].get(k);
    if (!stored) {
      record('delete', resource, namespace, name, 404);
      return { code: 404, status: ['NotFound', `${resource} "${name}" not found`, { name, kind: resource }] };
    }
    objects[resource].delete(k);
    resourceVersion += 1;
    record('delete', resource, namespace, name, 200);
    if (resource === 'pods') return { code: 200, object: withStatus(resource, stored) };
    // A deleted secret answers with a Status, as the apiserver does.
    return {
      code: 200,
      object: {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Success',
        details: { name, kind: resource, uid: stored.object.metadata.uid },
      },
    };
  }

  /** Gives a stored object a deletionTimestamp: being deleted, still there. */
  function markTerminating(resource, namespace, name) {
    const stored = objects[resource] && objects[resource].get(key(namespace, name));
    if (!stored) return false;
    stored.object.metadata.deletionTimestamp = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    stored.object.metadata.deletionGracePeriodSeconds = 30;
    return true;
  }

  /** The stored objects of `resource` (names with their namespace, 'ns/name'), sorted. */
  function names(resource) {
    return [...objects[resource].keys()].sort();
  }

  /** A stored pod as the exec path needs it: { phase, containers } or null. */
  function podForExec(namespace, name) {
    const stored = objects.pods.get(key(namespace, name));
    if (!stored) return null;
    const pod = withStatus('pods', stored);
    const containers = ((pod.spec && pod.spec.containers) || []).map((c) => c && c.name).filter(Boolean);
    return { phase: pod.status.phase, containers };
  }

  return { create, get, list, remove, names, podForExec, markTerminating, log };
}

module.exports = { createObjectStore, parseObjectPath, parseLabelSelector, nameErrors, KINDS };

'use strict';
// Turns whatever a Kubernetes client call threw into plain error facts for
// the core's classifier. No decisions here: the core says what the facts mean.
//
// Shapes seen in practice:
// - @kubernetes/client-node 1.x (node-fetch): FetchError { code: 'ECONNREFUSED', message }
// - 1.x and 2.x HTTP errors: ApiException { code: <HTTP status>, body, headers }
// - 2.x (undici): TypeError('fetch failed') whose cause (maybe nested, maybe an
//   AggregateError with .errors) carries { code: 'ECONNREFUSED' | 'UND_ERR_*' }
// - a body that is not JSON: SyntaxError, no code
// - our own timeout: an AbortError; the caller knows it fired and says so

const MAX_DEPTH = 8;
const MAX_MESSAGE = 500;

function errorFacts(error, { timedOut = false } = {}) {
  const codes = [];
  const messages = [];
  let status = null;
  let retryAfter = null;
  const seen = new Set();

  const visit = (e, depth) => {
    if (e === null || e === undefined || depth > MAX_DEPTH) return;
    if (typeof e !== 'object' && typeof e !== 'function') {
      messages.push(String(e));
      return;
    }
    if (seen.has(e)) return;
    seen.add(e);
    const code = safeGet(e, 'code');
    if (typeof code === 'string' && code) codes.push(code);
    if (status === null && isHttpStatus(code)) status = code;
    const statusCode = safeGet(e, 'statusCode');
    if (status === null && isHttpStatus(statusCode)) status = statusCode;
    if (retryAfter === null) retryAfter = header(safeGet(e, 'headers'), 'retry-after');
    const message = safeGet(e, 'message');
    if (typeof message === 'string' && message && !messages.includes(message)) messages.push(message);
    visit(safeGet(e, 'cause'), depth + 1);
    const inner = safeGet(e, 'errors');
    if (Array.isArray(inner)) for (const x of inner.slice(0, 16)) visit(x, depth + 1);
  };
  visit(error, 0);

  const name = error && typeof error === 'object' ? safeGet(error, 'name') : undefined;
  return {
    codes,
    status,
    retryAfter,
    timedOut: Boolean(timedOut),
    name: typeof name === 'string' ? name : null,
    message: messages.join(': ').slice(0, MAX_MESSAGE),
  };
}

function isHttpStatus(value) {
  return Number.isInteger(value) && value >= 100 && value <= 599;
}

function safeGet(object, key) {
  try {
    return object[key];
  } catch {
    return undefined;
  }
}

// Headers arrive as a plain object (client-node's ApiException), a Headers
// instance, or a Map; names are case-insensitive.
function header(headers, name) {
  if (!headers || typeof headers !== 'object') return null;
  try {
    if (headers instanceof Map) {
      for (const [key, value] of headers) {
        if (String(key).toLowerCase() === name) return Array.isArray(value) ? String(value[0]) : String(value);
      }
      return null;
    }
    if (typeof headers.get === 'function') {
      // A fetch Headers object: its get() is already case-insensitive.
      const v = headers.get(name);
      return v === undefined || v === null ? null : String(v);
    }
    for (const [key, value] of Object.entries(headers)) {
      if (key.toLowerCase() === name) return Array.isArray(value) ? String(value[0]) : String(value);
    }
  } catch {
    // A hostile headers object is no reason to lose the verdict.
  }
  return null;
}

module.exports = { errorFacts };

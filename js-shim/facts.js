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
// - a failed exec set-up (the ws client): an ErrorEvent { message, error },
//   the status of an upgrade refused only in its message ("Unexpected
//   server response: 503"), read by the core

const MAX_DEPTH = 8;
const MAX_MESSAGE = 500;
// An apiserver's Status body is a few hundred bytes; longer is clipped.
const MAX_BODY = 16 * 1024;
// Any piece of the credential this long or longer is hidden from messages.
const MIN_SECRET_PIECE = 8;
// Pieces are indexed for credentials up to this length (a token is 1-2 KB);
// a longer one (a client key file) is hidden where it occurs whole.
const MAX_INDEXED_SECRET = 64 * 1024;
// A credential shorter than a piece is hidden where it occurs whole, if it
// is at least this long (a shorter one would hide ordinary words).
const MIN_WHOLE_SECRET = 4;
const REDACTED = '<redacted>';

/** `text` (a JSON string's inside) with <, >, &, U+2028 and U+2029 as \u escapes. */
function htmlSafe(text) {
  return text.replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** `text` as it reads inside a JSON string. */
function jsonEscaped(text) {
  return JSON.stringify(text).slice(1, -1);
}

/**
 * `redact(text)`: `text` with every run of characters that lies inside a
 * piece of `credentials` (one, or an array of them) of MIN_SECRET_PIECE
 * characters or more replaced by `<redacted>`, and a credential shorter than that (of MIN_WHOLE_SECRET or
 * more) wherever it occurs whole. The credential is a string or bytes (read
 * as UTF-8 and as Latin-1, the ways an HTTP client may have turned it into
 * a header), also as JSON escapes it, once and twice (a server's Status
 * message inside a body, a body inside client-node's message): a token
 * with a `"` or a `\` is then hidden in those texts too, before anything
 * decodes them. Without a credential, text is returned as it is.
 */
function redactor(credentials) {
  const forms = new Set();
  for (const credential of Array.isArray(credentials) ? credentials : [credentials]) {
    if (typeof credential === 'string') forms.add(credential);
    else if (credential instanceof Uint8Array) {
      const bytes = Buffer.from(credential.buffer, credential.byteOffset, credential.byteLength);
      forms.add(bytes.toString('utf8'));
      forms.add(bytes.toString('latin1'));
    }
  }
  for (const form of [...forms]) {
    const once = jsonEscaped(form);
    forms.add(once);
    forms.add(jsonEscaped(once));
    // Go's encoding/json (the apiserver's) also escapes <, > and & (and
    // U+2028, U+2029) as \u003c, ...
    const go = htmlSafe(once);
    forms.add(go);
    forms.add(jsonEscaped(go));
  }
  const whole = [];
  for (const form of [...forms]) {
    if (form.length >= MIN_SECRET_PIECE && form.length <= MAX_INDEXED_SECRET) continue;
    forms.delete(form);
    if (form.length >= MIN_WHOLE_SECRET) whole.push(form);
  }
  if (forms.size === 0 && whole.length === 0) return (text) => text;
  const shortest = Math.min(MIN_SECRET_PIECE, ...whole.map((form) => form.length));
  let pieces = null; // built on the first error: most checks have none
  const index = () => {
    pieces = new Set();
    for (const form of forms) {
      for (let i = 0; i + MIN_SECRET_PIECE <= form.length; i++) pieces.add(form.slice(i, i + MIN_SECRET_PIECE));
    }
  };
  return (text) => {
    if (typeof text !== 'string' || text.length < shortest) return text;
    if (pieces === null) index();
    let out = text;
    // Longest first: a form inside another is hidden with it.
    for (const form of [...whole].sort((x, y) => y.length - x.length)) out = out.split(form).join(REDACTED);
    const hidden = new Uint8Array(out.length);
    let any = false;
    for (let i = 0; i + MIN_SECRET_PIECE <= out.length; i++) {
      if (pieces.has(out.slice(i, i + MIN_SECRET_PIECE))) {
        hidden.fill(1, i, i + MIN_SECRET_PIECE);
        any = true;
      }
    }
    if (!any) return out;
    let result = '';
    for (let i = 0; i < out.length; i++) {
      if (!hidden[i]) result += out[i];
      else if (i === 0 || !hidden[i - 1]) result += REDACTED;
    }
    return result;
  };
}

/**
 * `describe(error, timedOut)`: error facts with `credentials` (one, or an
 * array of them) hidden from every text.
 */
function errorDescriber(credentials) {
  const redact = redactor(credentials);
  return (error, timedOut) => errorFacts(error, { timedOut, redact });
}

// A credential the shim does not know (an exec plugin's, an OIDC token, a
// host's own client in retryK8sApiCall) is still hidden where a client
// quotes it after its scheme, as in "Bearer <token> is not a legal HTTP
// header value".
// The value runs to the next ASCII space, quote, comma or semicolon: a
// Unicode space (U+00A0, U+2028) inside a token does not end it.
const AUTH_HEADER_VALUE = /\b(Bearer|Basic)( +)[^ \t\r\n"',;]+/g;

function scrubAuthorization(text) {
  return text.replace(AUTH_HEADER_VALUE, (_, scheme, space) => `${scheme}${space}${REDACTED}`);
}

function errorFacts(error, { timedOut = false, redact: redactCredential = (text) => text } = {}) {
  const redact = (text) => scrubAuthorization(redactCredential(text));
  const codes = [];
  const messages = [];
  let status = null;
  let retryAfter = null;
  let body = null;
  const seen = new Set();

  const visit = (e, depth) => {
    if (e === null || e === undefined || depth > MAX_DEPTH) return;
    if (typeof e !== 'object' && typeof e !== 'function') {
      messages.push(redact(String(e)));
      return;
    }
    if (seen.has(e)) return;
    seen.add(e);
    const code = safeGet(e, 'code');
    if (typeof code === 'string' && code) codes.push(redact(code));
    if (status === null && isHttpStatus(code)) status = code;
    const statusCode = safeGet(e, 'statusCode');
    if (status === null && isHttpStatus(statusCode)) status = statusCode;
    if (retryAfter === null) retryAfter = header(safeGet(e, 'headers'), 'retry-after');
    // An HTTP error's body (client-node's ApiException keeps it as text).
    if (body === null) body = bodyText(safeGet(e, 'body'));
    const raw = safeGet(e, 'message');
    const message = typeof raw === 'string' ? redact(raw) : raw;
    if (typeof message === 'string' && message && !messages.includes(message)) messages.push(message);
    visit(safeGet(e, 'cause'), depth + 1);
    // A WebSocket's error event (a failed exec set-up) holds the error.
    visit(safeGet(e, 'error'), depth + 1);
    const inner = safeGet(e, 'errors');
    let list = [];
    try {
      // A revoked Proxy throws even on Array.isArray: what cannot be read is skipped.
      if (Array.isArray(inner)) list = inner.slice(0, 16);
    } catch {
      list = [];
    }
    for (const x of list) visit(x, depth + 1);
  };
  visit(error, 0);

  const name = error && typeof error === 'object' ? safeGet(error, 'name') : undefined;
  return {
    codes,
    status,
    retryAfter: retryAfter === null ? null : redact(retryAfter),
    timedOut: Boolean(timedOut),
    name: typeof name === 'string' ? redact(name) : null,
    message: messages.join(': ').slice(0, MAX_MESSAGE),
    ...(body === null ? {} : { body: redact(body.slice(0, MAX_BODY)) }),
  };
}

/** A response body as text, or null: a string as it is, an object as JSON. */
function bodyText(value) {
  if (typeof value === 'string') return value;
  if (value === null || typeof value !== 'object' || value instanceof Uint8Array) return null;
  try {
    const text = JSON.stringify(value);
    return typeof text === 'string' ? text : null;
  } catch {
    return null; // a cycle, a throwing getter
  }
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

/**
 * `redact(text)` for text the server sent (a response body): the credential
 * and any long piece of it, and whatever follows `Bearer ` or `Basic `,
 * replaced by `<redacted>`. A server that echoes the Authorization header
 * into a field (an evaluationError, a value of the wrong type) must not put
 * the token into a message.
 */
function textRedactor(credentials) {
  const redactCredential = redactor(credentials);
  return (text) => scrubAuthorization(redactCredential(text));
}

/**
 * What an exec's `V1Status` says, as found: its `status` field, its
 * reason, the message of its `ExitCode` cause, and its message (each a
 * string, or null). The core reads them.
 */
function statusFacts(status) {
  const text = (v) => (typeof v === 'string' ? v : null);
  if (!status || typeof status !== 'object') return { status: null, reason: null, exitCode: null, message: null };
  const causes = status.details && Array.isArray(status.details.causes) ? status.details.causes : [];
  const cause = causes.find((c) => c && c.reason === 'ExitCode');
  return { status: text(status.status), reason: text(status.reason), exitCode: cause ? text(String(cause.message)) : null, message: text(status.message) };
}

module.exports = { errorFacts, errorDescriber, redactor, textRedactor, statusFacts };

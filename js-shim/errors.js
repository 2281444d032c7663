'use strict';
// Errors a host can tell apart. Each carries a stable `code` and a brand, and
// the guards check those rather than `instanceof`, so they still work when
// node_modules holds two copies of this package.

const BRAND = Symbol.for('k8s-auth-preflight.error');

class PreflightInconclusiveError extends Error {
  /** @param outcome the core's outcome (verdict 'inconclusive') */
  constructor(outcome) {
    super(outcome.message);
    this.name = 'PreflightInconclusiveError';
    this.code = 'PREFLIGHT_INCONCLUSIVE';
    this.outcome = outcome;
    this[BRAND] = true;
  }
}

class PreflightError extends Error {
  /** @param outcome the core's outcome (verdict 'error') */
  constructor(outcome) {
    super(outcome.message);
    this.name = 'PreflightError';
    this.code = 'PREFLIGHT_ERROR';
    this.outcome = outcome;
    this[BRAND] = true;
  }
}

/**
 * A Kubernetes call that the call policy gave up on (out of time or
 * attempts, or a failure that may not be retried). Its message says which
 * call, for how long, the last error, and that the API failed, not the job;
 * `cause` is the last error the call got, when there is one. It has no
 * `body` or `response` of its own, so a host that prints those of an API
 * error prints this message.
 */
class CallGaveUpError extends Error {
  constructor(message, cause) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = 'CallGaveUpError';
    this.code = 'PREFLIGHT_CALL_GAVE_UP';
    this[BRAND] = true;
  }
}

function isCallGaveUpError(e) {
  try {
    return Boolean(e) && e[BRAND] === true && e.code === 'PREFLIGHT_CALL_GAVE_UP';
  } catch {
    return false; // a revoked Proxy, a throwing getter
  }
}

function isPreflightInconclusiveError(e) {
  return Boolean(e) && e[BRAND] === true && e.code === 'PREFLIGHT_INCONCLUSIVE';
}

function isPreflightError(e) {
  return Boolean(e) && e[BRAND] === true && e.code === 'PREFLIGHT_ERROR';
}

module.exports = {
  PreflightInconclusiveError,
  PreflightError,
  CallGaveUpError,
  isPreflightInconclusiveError,
  isPreflightError,
  isCallGaveUpError,
};

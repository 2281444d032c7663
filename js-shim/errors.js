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

function isPreflightInconclusiveError(e) {
  return Boolean(e) && e[BRAND] === true && e.code === 'PREFLIGHT_INCONCLUSIVE';
}

function isPreflightError(e) {
  return Boolean(e) && e[BRAND] === true && e.code === 'PREFLIGHT_ERROR';
}

module.exports = { PreflightInconclusiveError, PreflightError, isPreflightInconclusiveError, isPreflightError };

'use strict';
// Where warnings go: GitHub workflow commands (`::warning::...`,
// `::debug::...`), escaped so a message can never inject a command of its
// own. The host may pass its own logger ({ debug, info, warning, error });
// by default @actions/core is used when the host has it, else stdout.

function escapeData(text) {
  return String(text).replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
}

function stdoutLogger(write = (line) => process.stdout.write(line)) {
  return {
    debug: (m) => write(`::debug::${escapeData(m)}\n`),
    info: (m) => write(`${escapeData(m)}\n`),
    warning: (m) => write(`::warning::${escapeData(m)}\n`),
    error: (m) => write(`::error::${escapeData(m)}\n`),
  };
}

function defaultLogger() {
  try {
    // Resolved from the host's dependencies; absent is fine.
    const core = require('@actions/core');
    if (typeof core.warning === 'function' && typeof core.info === 'function') {
      const debug = typeof core.debug === 'function' ? core.debug : stdoutLogger().debug;
      return { debug, info: core.info, warning: core.warning, error: core.error || core.warning };
    }
  } catch {
    // not installed: plain stdout
  }
  return stdoutLogger();
}

/**
 * Fills in missing methods, and makes every method safe: a host logger
 * that throws (a closed stream, a bug) loses that line, never the verdict.
 */
function completeLogger(logger) {
  const base = logger || defaultLogger();
  const pick = (name, fallback) => {
    try {
      const method = base[name];
      return typeof method === 'function' ? method.bind(base) : fallback;
    } catch {
      return fallback; // a throwing getter
    }
  };
  const safe = (write) => (message) => {
    try {
      const result = write(message);
      // An async logger's rejection is the same lost line, not an
      // unhandled rejection that ends the hook process.
      if (result && typeof result.then === 'function') result.then(undefined, () => {});
    } catch {
      // The line is lost; the check goes on.
    }
  };
  const warning = pick('warning', stdoutLogger().warning);
  // A host logger without `debug` prints nothing at debug level.
  return {
    debug: safe(pick('debug', () => {})),
    info: safe(pick('info', () => {})),
    warning: safe(warning),
    error: safe(pick('error', warning)),
  };
}

module.exports = { escapeData, stdoutLogger, defaultLogger, completeLogger };

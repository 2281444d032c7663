'use strict';
// js-shim/log.js: workflow-command output that a message cannot break out of,
// and loggers with missing methods.

const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');

const { consumer, preflight, setup, fastEnv } = require('./support/harness');

const installed = path.join(consumer.consumerDir, 'node_modules', 'k8s-auth-preflight');
const { escapeData, stdoutLogger, defaultLogger, completeLogger } = require(path.join(installed, 'js-shim', 'log.js'));

/**
 * Replaces process.stdout.write: string chunks (what the logger writes) are
 * kept, anything else (the test runner's own binary reports) passes through.
 * Returns { text(), restore() }.
 */
function interceptStdout() {
  const written = [];
  const real = process.stdout.write;
  process.stdout.write = function write(chunk, ...rest) {
    if (typeof chunk === 'string') {
      written.push(chunk);
      return true;
    }
    return real.call(process.stdout, chunk, ...rest);
  };
  return {
    text: () => written.join(''),
    restore: () => {
      process.stdout.write = real;
    },
  };
}

/** Runs fn with process.stdout.write captured; returns what was written. */
function captureStdout(fn) {
  const capture = interceptStdout();
  try {
    fn();
  } finally {
    capture.restore();
  }
  return capture.text();
}

test('escapeData escapes %, CR and LF (the % first, so escapes stay literal)', () => {
  assert.equal(escapeData('100%'), '100%25');
  assert.equal(escapeData('a\rb'), 'a%0Db');
  assert.equal(escapeData('a\nb'), 'a%0Ab');
  assert.equal(escapeData('a\r\nb'), 'a%0D%0Ab');
  // A message that already contains an escape must not decode to a newline.
  assert.equal(escapeData('x%0A::error::y'), 'x%250A::error::y');
  assert.equal(escapeData('plain :: text, with: colons'), 'plain :: text, with: colons');
  assert.equal(escapeData(42), '42');
});

test('a message cannot start a workflow command on a new line', () => {
  const lines = [];
  const logger = stdoutLogger((line) => lines.push(line));
  const hostile = 'the API said no\n::error::injected\r::set-output name=x::y\r\n::add-mask::z%0A::stop-commands::t';
  logger.warning(hostile);
  logger.error(hostile);
  logger.info(hostile);

  assert.equal(lines.length, 3);
  for (const line of lines) {
    assert.equal(line.endsWith('\n'), true);
    const body = line.slice(0, -1);
    assert.equal(/[\r\n]/.test(body), false, `one physical line: ${JSON.stringify(line)}`);
  }
  assert.equal(
    lines[0],
    '::warning::the API said no%0A::error::injected%0D::set-output name=x::y%0D%0A::add-mask::z%250A::stop-commands::t\n',
  );
  assert.ok(lines[1].startsWith('::error::the API said no%0A'));
  assert.ok(lines[2].startsWith('the API said no%0A'), 'info is plain text, escaped too');
  // Every physical line the runner would parse: only the one intended command.
  const physical = lines.join('').split(/\r?\n|\r/).filter(Boolean);
  assert.deepEqual(
    physical.map((l) => (l.match(/^::([a-z-]+)::/) || [])[1] || null),
    ['warning', 'error', null],
  );
});

test('stdoutLogger writes to process.stdout by default', () => {
  const out = captureStdout(() => stdoutLogger().warning('cache folder not writable\nsecond line'));
  assert.equal(out, '::warning::cache folder not writable%0Asecond line\n');
});

test('defaultLogger without @actions/core installed: stdout workflow commands', () => {
  let resolvable = true;
  try {
    require.resolve('@actions/core', { paths: [installed] });
  } catch {
    resolvable = false;
  }
  assert.equal(resolvable, false, 'the consumer has no @actions/core; this test is about the fallback');
  const logger = defaultLogger();
  const out = captureStdout(() => {
    logger.warning('w');
    logger.error('e');
    logger.info('i');
  });
  assert.equal(out, '::warning::w\n::error::e\ni\n');
});

test('completeLogger: a logger with only warning gets error routed to it and a silent info', () => {
  const seen = [];
  const logger = completeLogger({ warning: (m) => seen.push(['warning', m]) });
  const out = captureStdout(() => {
    logger.info('i');
    logger.warning('w');
    logger.error('e');
  });
  assert.deepEqual(seen, [
    ['warning', 'w'],
    ['warning', 'e'],
  ]);
  assert.equal(out, '', 'nothing leaks to stdout');
});

test('completeLogger: a logger with only info gets workflow-command warnings and errors on stdout', () => {
  const infos = [];
  const logger = completeLogger({ info: (m) => infos.push(m) });
  const out = captureStdout(() => {
    logger.info('hello');
    logger.warning('careful\n::error::x');
    logger.error('bad');
  });
  assert.deepEqual(infos, ['hello']);
  assert.equal(out, '::warning::careful%0A::error::x\n::warning::bad\n');
});

test('completeLogger: methods keep their `this`, non-functions are ignored', () => {
  class HostLogger {
    constructor() {
      this.lines = [];
    }
    warning(m) {
      this.lines.push(`W ${m}`);
    }
    error(m) {
      this.lines.push(`E ${m}`);
    }
  }
  const host = new HostLogger();
  const logger = completeLogger(host);
  logger.warning('a');
  logger.error('b');
  assert.deepEqual(host.lines, ['W a', 'E b']);

  const odd = completeLogger({ info: 'not a function', warning: 17, error: null });
  const out = captureStdout(() => {
    odd.info('i');
    odd.warning('w');
    odd.error('e');
  });
  assert.equal(out, '::warning::w\n::warning::e\n');
});

test('completeLogger(undefined) falls back to the default logger', () => {
  const logger = completeLogger(undefined);
  const out = captureStdout(() => logger.error('no logger given'));
  assert.equal(out, '::error::no logger given\n');
});

test(`[${consumer.flavour}] the package's own warnings go through the escaping default logger`, { timeout: 10_000 }, async (t) => {
  // No logger passed: a bad setting whose value carries a newline and an
  // unreachable API both warn through the default (stdout) logger.
  const { server, kc, cacheDir } = await setup(t);
  await server.setPhase('refuse');
  const check = preflight.createAuthPreflight({
    kubeConfig: kc,
    namespace: 'ci',
    cacheDir,
    env: fastEnv({ DEADLINE_MS: 1000, JITTER: 'sideways\n::error::injected' }),
  });
  const capture = interceptStdout();
  let caught;
  try {
    await check.isAuthPermissionsOK();
  } catch (e) {
    caught = e;
  } finally {
    capture.restore();
  }
  assert.equal(preflight.isPreflightInconclusiveError(caught), true);
  // The debug trail is its own workflow command, shown only
  // with step debug logging; every line is one command.
  const all = capture.text().split('\n').filter(Boolean);
  for (const line of all) assert.match(line, /^::(warning|debug)::/, `one command per line: ${line}`);
  const lines = all.filter((l) => !l.startsWith('::debug::'));
  assert.equal(lines.length, 2, JSON.stringify(lines));
  for (const line of lines) assert.match(line, /^::warning::/, `only warnings, one per line: ${line}`);
  const setting = lines.find((l) => l.includes('ACTIONS_RUNNER_PREFLIGHT_JITTER'));
  assert.ok(setting, JSON.stringify(lines));
  // The core quotes the value (Rust Debug formatting), so the newline is
  // already spelled `\n`; either way it stays inside the warning's line.
  assert.match(setting, /sideways(\\n|%0A)::error::injected/);
  assert.ok(lines.some((l) => l.includes('ECONNREFUSED') && l.includes('not a permissions problem')), JSON.stringify(lines));
});

test(`[${consumer.flavour}] a host logger whose methods return rejected promises loses those lines, never the verdict, and leaves no unhandled rejection`, { timeout: 20_000 }, async (t) => {
  // An async logger writing to a closed transport: each call returns a
  // rejected promise. Unhandled, Node's default (--unhandled-rejections=throw)
  // ends the hook process after the verdict (a red-team finding).
  const { kc, cacheDir } = await setup(t);
  const unhandled = [];
  const onUnhandled = (reason) => unhandled.push(reason);
  process.on('unhandledRejection', onUnhandled);
  t.after(() => process.off('unhandledRejection', onUnhandled));
  const calls = [];
  const rejecting = (level) => async () => {
    calls.push(level);
    throw new Error(`transport closed (${level})`);
  };
  const logger = { debug: rejecting('debug'), info: rejecting('info'), warning: rejecting('warning'), error: rejecting('error') };
  const check = preflight.createAuthPreflight({ kubeConfig: kc, namespace: 'ci', cacheDir, env: fastEnv({ JITTER: 'wobbly' }), logger });
  assert.equal(await check.isAuthPermissionsOK(), true);
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.ok(calls.includes('warning') && calls.includes('debug'), calls.join(' '));
  assert.deepEqual(unhandled.map(String), []);
});

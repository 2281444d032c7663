'use strict';
// The command line of bench/chaos.js (its header lists the options), read
// into one settings object.
//
// --scale multiplies the policy's time settings (base delay 1000 ms, max
// delay 8000 ms, request timeout 10000 ms, deadline 90000 ms); the scenario
// times default to the incident's (start spread 180 s, stall at 120 s for
// 25 s, 403s for 3 s, step work 5-40 s) times the same scale. 0.2 by
// default (5x compressed, ~50 s): at 0.1 the 40 jobs' processes need more
// CPU than 2 cores have in the shorter window, start-up stretches 3-8x, a
// scaled 1 s request timeout starts to fire under contention, and the real
// run no longer measures the policy alone.

const { die } = require('./control');

const HARD_CAP_PROCESSES = 200;
const HARD_CAP_JOBS = 200;
const HARD_CAP_SCRIPT_STEPS = 20;

// The policy's defaults that --scale compresses (src/config.rs).
const DEFAULTS = {
  ACTIONS_RUNNER_PREFLIGHT_BASE_DELAY_MS: 1000,
  ACTIONS_RUNNER_PREFLIGHT_MAX_DELAY_MS: 8000,
  ACTIONS_RUNNER_PREFLIGHT_REQUEST_TIMEOUT_MS: 10000,
  ACTIONS_RUNNER_PREFLIGHT_DEADLINE_MS: 90000,
};
// The incident's fleet and timeline at full scale (examples/replay/sim.rs).
const INCIDENT = { startSpreadMs: 180_000, stallAtMs: 120_000, stallMs: 25_000, forbiddenMs: 3_000, stepWorkMs: [5_000, 40_000] };

const FLAGS = new Set(['--write', '--prepare', '--no-sim', '--keep']);
const VALUED = new Set([
  '--processes',
  '--jobs',
  '--script-steps',
  '--stall-ms',
  '--forbidden-ms',
  '--forbidden-share',
  '--scale',
  '--start-spread-ms',
  '--stall-at-ms',
  '--step-work-ms',
  '--seed',
  '--limit-s',
]);

/** The given options by name (true for a flag); dies on an unknown one. */
function readOptions(argv) {
  const given = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (FLAGS.has(a)) given[a] = true;
    else if (VALUED.has(a)) {
      if (i + 1 >= argv.length) die(`${a} needs a value`);
      given[a] = argv[++i];
    } else die(`unknown argument ${a} (see the header of bench/chaos.js)`);
  }
  return given;
}

/** The run's settings from the command line, with the scaled defaults. */
function parseArgs(argv) {
  const given = readOptions(argv);
  const num = (name, fallback, { min, max, integer = true }) => {
    if (given[name] === undefined) return fallback;
    const n = Number(given[name]);
    if (!Number.isFinite(n) || (integer && !Number.isInteger(n)) || n < min || n > max) {
      die(`${name} takes ${integer ? 'a whole number' : 'a number'} from ${min} to ${max}, not ${given[name]}`);
    }
    return n;
  };
  const scale = num('--scale', 0.2, { min: 0.02, max: 1, integer: false });
  const processes = num('--processes', 40, { min: 1, max: HARD_CAP_PROCESSES });
  const o = {
    processes,
    jobs: num('--jobs', Math.min(processes, HARD_CAP_JOBS), { min: 1, max: HARD_CAP_JOBS }),
    scriptSteps: num('--script-steps', 1, { min: 0, max: HARD_CAP_SCRIPT_STEPS }),
    stallMs: num('--stall-ms', Math.round(INCIDENT.stallMs * scale), { min: 0, max: 600_000 }),
    forbiddenMs: num('--forbidden-ms', Math.round(INCIDENT.forbiddenMs * scale), { min: 0, max: 600_000 }),
    forbiddenShare: num('--forbidden-share', 0.5, { min: 0, max: 1, integer: false }),
    scale,
    startSpreadMs: num('--start-spread-ms', Math.round(INCIDENT.startSpreadMs * scale), { min: 0, max: 600_000 }),
    stallAtMs: num('--stall-at-ms', Math.round(INCIDENT.stallAtMs * scale), { min: 0, max: 600_000 }),
    seed: num('--seed', 1, { min: 0, max: Number.MAX_SAFE_INTEGER }),
    limitS: num('--limit-s', 120, { min: 10, max: 1800 }),
    write: Boolean(given['--write']),
    prepare: Boolean(given['--prepare']),
    sim: !given['--no-sim'],
    keep: Boolean(given['--keep']),
  };
  if (given['--step-work-ms'] === undefined) {
    o.stepWorkMs = INCIDENT.stepWorkMs.map((ms) => Math.round(ms * scale));
  } else {
    const m = /^(\d+)-(\d+)$/.exec(given['--step-work-ms']);
    if (!m || Number(m[1]) > Number(m[2]) || Number(m[2]) > 600_000) die('--step-work-ms takes LOW-HIGH in ms (HIGH <= 600000)');
    o.stepWorkMs = [Number(m[1]), Number(m[2])];
  }
  o.settings = {};
  for (const [name, ms] of Object.entries(DEFAULTS)) o.settings[name] = Math.round(ms * scale);
  return o;
}

module.exports = { parseArgs };

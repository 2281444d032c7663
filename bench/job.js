'use strict';
// Whole jobs through a refused stall: prepare_job, 3 run_script_step,
// cleanup_job, each a fresh hook process (the ncc bundle of
// tests/consumer/src/job.ts, the hooks' calls unmodified), against the
// loopback apiserver (tests/support/apiserver.js: pods, secrets, exec over
// WebSocket), with one refused stall per job that starts at one place at a
// time: before prepare, at the pod create, during the phase polling, at an
// exec set-up, between steps, before cleanup. Prints one row per job:
// ok or failed, the failed step and its message, API calls, each script's
// exec count (exactly 1 when the job succeeded), what was left behind.
//
//   node bench/job.js [--stalls 10,25] [--places all|<place>,...]
//       [--no-healthy] [--limit-s 360] [--step-timeout-s 120]
//       [--pod-running-after-ms 2000] [--prepare] [--write]
//
// PREFLIGHT_CLIENT (1x on Node 20, 2x on Node 22+) picks the installed
// consumer. --write writes bench/results/job-stall-baseline.md.
// The parts are in bench/job/: bundle.js (the ncc bundle of src/job.ts),
// server.js (the apiserver), stalls.js (where a stall starts), job.js (one
// job), table.js, main.js (the wiring).

require('./job/main');

'use strict';
// Whole jobs through a refused stall: prepare_job, 3 run_script_step,
// cleanup_job, each a fresh hook process (the ncc bundle of
// tests/consumer/src/job.ts), against a loopback apiserver of its own
// (tests/support/apiserver.js: pods, secrets, exec over WebSocket), with one
// refused stall per job that starts at one place at a time: before prepare,
// at the pod create, during the phase polling, at an exec set-up, between
// steps, before cleanup. The job makes its Kubernetes clients one of three
// ways (--clients; JOB_CLIENTS in tests/consumer/src/job/clients.ts): plain
// (the hooks today), retry-proxy (the pending retry proxy's policy for the
// hooks, written in tests/consumer/src/job/retry-proxy.ts), resilient (this
// package's wrappers). Prints a summary per (clients, stall length): jobs
// failed and the median API calls per job; then one row per job: ok or
// failed, the failed step and its message, API calls, each script's exec
// count (exactly 1 when the job succeeded), what was left behind.
//
//   node bench/job.js [--clients plain,retry-proxy,resilient]
//       [--stalls 10,25,60,90] [--places all|<place>,...] [--no-healthy]
//       [--concurrency 3] [--limit-s 7200] [--step-timeout-s 300]
//       [--pod-running-after-ms 2000] [--prepare] [--write]
//
// PREFLIGHT_CLIENT (1x on Node 20, 2x on Node 22+) picks the installed
// consumer. --write writes bench/results/job-stall.md
// (bench/results/job-stall-baseline.md is the earlier run of the plain
// clients alone, kept as it was).
// The parts are in bench/job/: bundle.js (the ncc bundle of src/job.ts),
// server.js (one apiserver per job), stalls.js (where a stall starts),
// job.js (one job), table.js, main.js (the wiring).
//
//   node bench/job.js --mid-script [--faults ...] [--durations ...] [--modes ...]
//       [--concurrency 6] [--healthy-runs 15] [--write]
// is the other bench: one job per (fault, duration, mode) with a real
// network fault (REJECT, tcp-reset, DROP) in the middle of a long script, in
// network namespaces, and what a durable exec costs a healthy step: see the
// header of bench/job/mid-script.js.

if (process.argv.includes('--mid-script')) require('./job/mid-script');
else require('./job/main');

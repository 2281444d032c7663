'use strict';
// The real chaos run: real hook processes (the hooks-shaped TypeScript
// consumer of tests/consumer, bundled with @vercel/ncc into one index.js plus
// the .wasm) against the loopback apiserver (tests/support/apiserver.js, run
// as its own process), through a compressed replay of the 2026-10-21
// incident: healthy, connections refused, transient 403s for a share of
// requests, healthy again. Prints the simulator's columns, computed from the
// apiserver's own request log and what each process reported, next to the
// simulator (examples/replay) run on the very same fleet schedule, and says
// whether the two agree.
//
//   node bench/chaos.js [--processes 40] [--jobs N] [--script-steps 1]
//       [--scale 0.2] [--stall-ms 5000] [--forbidden-ms 600]
//       [--forbidden-share 0.5] [--start-spread-ms 36000] [--stall-at-ms 24000]
//       [--step-work-ms 1000-8000] [--seed 1] [--limit-s 120]
//       [--prepare] [--no-sim] [--keep] [--write]
//
// --keep leaves the run folder (the apiserver's request log, every hook
// process's output, the simulator's plan) and prints where it is.
//
// The parts are in bench/chaos/: arguments.js (the options, --scale),
// install.js and bundle.js (the installed package and its ncc bundle),
// plan.js (the seeded fleet plan), apiserver.js and incident.js (the chaos
// phase), jobs.js and hook-process.js (the model of a job and of one hook
// process), measurement.js, simulator.js, report.js, control.js (how a run
// stops), main.js (the wiring).
//
// The simulator has to agree with the real run on steps failed, requests
// per job and, roughly, the recovery peak (tolerances are printed with the
// verdict).
//
// Bounds: at most --processes hook processes at a time (hard cap 200), and
// --jobs <= 200; each process is killed after its deadline + request timeout
// + 15 s; the chaos phase (apiserver + processes) is stopped after --limit-s
// (default 120 s): children killed, apiserver stopped, a partial report
// printed and exit code 3; the apiserver also stops itself (maxRunMs). The
// bundle build (ncc), `tests/js/support/prepare.js` and the simulator run
// have their own timeouts.
//
// Needs: `bash scripts/build.sh` and `node tests/js/support/prepare.js`
// (done automatically when .tools/consumer-1x is missing; --prepare re-runs
// it when the installed package differs from the working tree), and cargo
// for the simulator. Only 127.0.0.1 is used.

require('./chaos/main.js');

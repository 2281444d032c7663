#!/usr/bin/env bash
# The main job: set-up, build, the incident replay table, a short real chaos
# run checked against the simulator, then one job's steps through a
# control-plane stall against a loopback apiserver, printing the timeline a
# user would see.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
echo
echo "== 1. The incident replayed for 300 simulated jobs (examples/replay): upstream, both seed PRs, this package"
# Also draws the run as a chart (requests per second and failed steps over
# time); the replay prints where it wrote it.
cargo run --release --quiet --example replay -- --chart bench/results/replay.svg
echo
echo "== 2. A short real chaos run: 8 jobs of real hook processes (ncc bundle) through a 5x-compressed stall, next to the simulator on the same schedule"
node bench/chaos.js --prepare --jobs 8 --start-spread-ms 6000 --stall-at-ms 2000 --limit-s 90
echo
echo "== 3. One real job through a compressed stall: every step a fresh Node process, real @kubernetes/client-node, loopback apiserver"
node demo/demo.js
echo
echo "== 4. The whole job (prepare, 3 script steps, cleanup) through a 25 s refused stall between two steps: the hooks' clients as they are, then through this package's call wrappers"
node bench/job.js --clients plain,resilient --stalls 25 --places "between steps" --no-healthy

#!/usr/bin/env bash
# The main job: set-up, build, then a job's steps through a control-plane
# stall against a loopback apiserver, printing the timeline a user would see.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
echo
echo "== 1. The incident replayed for 300 simulated jobs (examples/replay): upstream, both seed PRs, this package"
cargo run --release --quiet --example replay
echo
echo "== 2. One real job through a compressed stall: every step a fresh Node process, real @kubernetes/client-node, loopback apiserver"
node demo/demo.js

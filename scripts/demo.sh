#!/usr/bin/env bash
# The main job: set-up, build, then a job's steps through a control-plane
# stall against a loopback apiserver, printing the timeline a user would see.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
node demo/demo.js

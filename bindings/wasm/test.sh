#!/usr/bin/env bash
# Builds ember for WebAssembly with Emscripten and tests it in Node.js:
#   1. emcmake cmake + ninja: <build-dir>/ember.js and ember.wasm (incremental)
#   2. export_test.py: a small model and the committed nanoGPT, with eager
#      PyTorch's outputs and greedy text (again only when the exporter, the
#      ember package or the checkpoint changed)
#   3. test_node.js: runs both in Node.js and compares
#   4. examples/web/test_browser.py (where chromium is installed): the web
#      page generates the same greedy text in headless Chromium, and its
#      screenshot is not blank
#
# usage: bindings/wasm/test.sh [build-dir] [--build-only]   (default: build-wasm)
#        --build-only stops after step 1
# Environment: EMBER_VENV (default .venv), JOBS.
set -euo pipefail
cd "$(dirname "$0")/../.."

dir="${1:-build-wasm}"
VENV="${EMBER_VENV:-.venv}"
JOBS="${JOBS:-$(nproc 2>/dev/null || echo 2)}"
# Debian's emcc runs its JavaScript optimizer with node and Debian's acorn
# (node-acorn); a node from elsewhere does not look in /usr/share/nodejs.
export NODE_PATH="/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}"

if [[ ! -f "$dir/CMakeCache.txt" ]]; then
  emcmake cmake -S bindings/wasm -B "$dir" -G Ninja -Wno-dev >/dev/null
fi
start=$SECONDS
cmake --build "$dir" --parallel "$JOBS"
echo "wasm: build took $((SECONDS - start)) s; $(stat -c %s "$dir/ember.wasm") bytes of ember.wasm, $(stat -c %s "$dir/ember.js") of ember.js"
[[ "${2:-}" == "--build-only" ]] && exit 0

stamp="$dir/test/.exported"
if [[ ! -f "$stamp" || -n $(find bindings/wasm/export_test.py python/ember examples/nanogpt/*.py \
      examples/nanogpt/ckpt.pt examples/nanogpt/tokenizer -newer "$stamp" -print -quit) ]]; then
  PYTHONWARNINGS=ignore "$VENV/bin/python" bindings/wasm/export_test.py --out-dir "$dir/test"
  touch "$stamp"
fi

node bindings/wasm/test_node.js "$dir" "$dir/test" examples/nanogpt/tokenizer

if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
  "$VENV/bin/python" examples/web/test_browser.py "$dir"
else
  echo "no chromium (scripts/bootstrap.sh installs it); the browser test of examples/web is skipped"
fi

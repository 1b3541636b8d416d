#!/usr/bin/env bash
# Installs the benchmark-only peers into the project venv (never needed to
# build, test or use ember; scripts/bootstrap.sh does not run this):
#   gguf              writes the llama.cpp model file from the benchmark's weights
#   llama-cpp-python  llama.cpp, built from its source distribution (which
#                     vendors llama.cpp) for this CPU; its Python API drives
#                     the llama.cpp rows of bench/llm/bench_llm.py
#   llama-bench       llama.cpp's own benchmark tool, built from the same
#                     vendored sources in the kept build directory, so that
#                     the ggml and llama objects are compiled once
# Idempotent: what is already installed is kept.
#
# usage: scripts/bench_peers.sh [DIR]     (DIR: build-bench/peers by default)
# Environment: EMBER_VENV (default .venv), LLAMA_CPP_PYTHON_VERSION
#   (default 0.3.36), JOBS (default: number of cores).
set -euo pipefail
cd "$(dirname "$0")/.."

VENV="${EMBER_VENV:-.venv}"
DIR="${1:-build-bench/peers}"
VERSION="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
JOBS="${JOBS:-$(nproc 2>/dev/null || echo 2)}"
PY="$VENV/bin/python"
say() { echo "bench-peers: $*"; }

[[ -x "$PY" ]] || { echo "bench-peers: no $VENV; run scripts/bootstrap.sh first" >&2; exit 1; }
mkdir -p "$DIR"
DIR="$(cd "$DIR" && pwd)"

if ! "$PY" -c 'import gguf' >/dev/null 2>&1; then
  say "pip install gguf"
  "$PY" -m pip install -q gguf
fi

SDIST="$DIR/llama_cpp_python-$VERSION.tar.gz"
SRC="$DIR/llama_cpp_python-$VERSION"
BUILD="$DIR/llama-cpp-build"
if [[ ! -f "$SDIST" ]]; then
  say "pip download llama-cpp-python==$VERSION (source distribution)"
  "$PY" -m pip download -q --no-binary :all: --no-deps -d "$DIR" "llama-cpp-python==$VERSION"
fi
if [[ ! -d "$SRC" ]]; then
  tar -xzf "$SDIST" -C "$DIR"
fi

if ! "$PY" -c 'import llama_cpp' >/dev/null 2>&1; then
  # CPU only, tuned for this machine (-march=native), no multimodal library.
  say "pip install llama-cpp-python==$VERSION from source (several minutes)"
  CMAKE_ARGS="-DGGML_NATIVE=ON -DLLAVA_BUILD=OFF -DCMAKE_BUILD_TYPE=Release" \
  CMAKE_BUILD_PARALLEL_LEVEL="$JOBS" \
    "$PY" -m pip install -q --no-build-isolation -C "build-dir=$BUILD" "$SRC"
fi

BENCH_BIN="$BUILD/bin/llama-bench"
if [[ ! -x "$BENCH_BIN" ]]; then
  say "building llama-bench in $BUILD"
  cmake -S "$SRC" -B "$BUILD" -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF >/dev/null
  cmake --build "$BUILD" --parallel "$JOBS" --target llama-bench
fi
say "gguf $("$PY" -c 'import importlib.metadata as m; print(m.version("gguf"))'), \
llama-cpp-python $("$PY" -c 'import llama_cpp; print(llama_cpp.__version__)'), llama-bench: $BENCH_BIN"

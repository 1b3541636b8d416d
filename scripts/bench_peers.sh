#!/usr/bin/env bash
# Installs the benchmark-only peers into the project venv (never needed to
# build, test or use ember; scripts/bootstrap.sh does not run this):
#   gguf              writes the llama.cpp model file from the benchmark's weights
#   llama-cpp-python  llama.cpp, built from its source distribution (which
#                     vendors llama.cpp) for this CPU's instruction sets (AMX
#                     left out; see ggml_isa_args); its Python API drives
#                     the llama.cpp rows of bench/llm/bench_llm.py
#   llama-bench       llama.cpp's own benchmark tool, built from the same
#                     vendored sources in the kept build directory, so that
#                     the ggml and llama objects are compiled once
# Idempotent: what is already installed is kept.
#
# With --vulkan it builds only llama-bench with -DGGML_VULKAN=ON, from the
# same sources, in DIR/llama-vulkan-build (for bench/vulkan/bench_vulkan.py;
# needs glslc, spirv-headers and Vulkan headers 1.3.261 or later, from the
# system or $VULKAN_SDK). Where it cannot be built, DIR/llama-vulkan-build.failed
# says why, and the benchmark's rows quote it.
#
# usage: scripts/bench_peers.sh [--vulkan] [DIR]     (DIR: build-bench/peers by default)
# Environment: EMBER_VENV (default .venv), LLAMA_CPP_PYTHON_VERSION
#   (default 0.3.36), JOBS (default: number of cores).
set -euo pipefail
cd "$(dirname "$0")/.."

VULKAN=0
if [[ "${1:-}" == --vulkan ]]; then VULKAN=1; shift; fi
VENV="${EMBER_VENV:-.venv}"
DIR="${1:-build-bench/peers}"
VERSION="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
JOBS="${JOBS:-$(nproc 2>/dev/null || echo 2)}"
PY="$VENV/bin/python"
say() { echo "bench-peers: $*"; }

[[ -x "$PY" ]] || { echo "bench-peers: no $VENV; run scripts/bootstrap.sh first" >&2; exit 1; }
mkdir -p "$DIR"
DIR="$(cd "$DIR" && pwd)"

if [[ $VULKAN == 0 ]] && ! "$PY" -c 'import gguf' >/dev/null 2>&1; then
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

# The instruction sets ggml is built for. On x86-64: each extension this CPU
# lists, named one by one, and never AMX (-march=native would turn AMX on, and
# some virtual machines list AMX yet fault on its tile instructions, which
# llama.cpp's int8 matrix products use). Elsewhere: -march=native.
ggml_isa_args() {
  if [[ $(uname -m) != x86_64 ]]; then
    echo "-DGGML_NATIVE=ON"
    return
  fi
  local flags pair args=(-DGGML_NATIVE=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF)
  flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
  for pair in sse4_2:SSE42 avx:AVX avx2:AVX2 bmi2:BMI2 fma:FMA f16c:F16C avx_vnni:AVX_VNNI \
              avx512f:AVX512 avx512vbmi:AVX512_VBMI avx512_vnni:AVX512_VNNI avx512_bf16:AVX512_BF16; do
    if [[ $flags == *" ${pair%%:*} "* ]]; then args+=("-DGGML_${pair#*:}=ON"); else args+=("-DGGML_${pair#*:}=OFF"); fi
  done
  echo "${args[*]}"
}
CMAKE_ARGS_LLAMA="$(ggml_isa_args) -DLLAVA_BUILD=OFF -DCMAKE_BUILD_TYPE=Release"

if [[ $VULKAN == 1 ]]; then
  VK_BUILD="$DIR/llama-vulkan-build"
  VK_BIN="$VK_BUILD/bin/llama-bench"
  VK_FAILED="$DIR/llama-vulkan-build.failed"
  fail() { echo "$1" > "$VK_FAILED"; say "$1"; exit 1; }
  if [[ ! -x "$VK_BIN" ]]; then
    # ggml-vulkan sets validation-layer options through VK_EXT_layer_settings
    # (Vulkan headers 1.3.261); older headers fail deep in its compile.
    hdr="${VULKAN_SDK:-/usr}/include/vulkan/vulkan_core.h"
    have="$(awk '/^#define VK_HEADER_VERSION /{print $3}' "$hdr" 2>/dev/null || true)"
    if [[ -z "$have" || "$have" -lt 261 ]]; then
      fail "llama.cpp's Vulkan backend needs Vulkan headers 1.3.261 or later; ${hdr} is 1.3.${have:-?} (set VULKAN_SDK to a newer SDK)"
    fi
    command -v glslc >/dev/null 2>&1 || fail "llama.cpp's Vulkan backend needs glslc (apt-get install glslc)"
    say "building llama-bench with GGML_VULKAN in $VK_BUILD (its shaders take minutes)"
    # shellcheck disable=SC2086 # the ISA arguments are separate words
    cmake -S "$SRC/vendor/llama.cpp" -B "$VK_BUILD" $CMAKE_ARGS_LLAMA -DGGML_VULKAN=ON \
      -DLLAMA_CURL=OFF -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_TESTS=OFF \
      -DLLAMA_BUILD_EXAMPLES=OFF > "$VK_BUILD.log" 2>&1 ||
      fail "llama.cpp's Vulkan configure failed: $(grep -m1 -A2 'CMake Error' "$VK_BUILD.log" | tr '\n' ' ' | cut -c1-300)"
    cmake --build "$VK_BUILD" --parallel "$JOBS" --target llama-bench >> "$VK_BUILD.log" 2>&1 ||
      fail "llama.cpp's Vulkan build failed: $(grep -m1 'error:' "$VK_BUILD.log" | cut -c1-300)"
  fi
  rm -f "$VK_FAILED"
  say "llama-bench (Vulkan): $VK_BIN"
  exit 0
fi
STAMP="$DIR/llama-cpp-build.args"
if [[ -f "$STAMP" && "$(cat "$STAMP")" != "$CMAKE_ARGS_LLAMA" ]] ||
   { [[ ! -f "$STAMP" ]] && "$PY" -c 'import llama_cpp' >/dev/null 2>&1; }; then
  # built for other instruction sets (or by an earlier version of this script)
  say "rebuilding llama.cpp for: $CMAKE_ARGS_LLAMA"
  "$PY" -m pip uninstall -q -y llama-cpp-python
  rm -rf "$BUILD"
fi

if ! "$PY" -c 'import llama_cpp' >/dev/null 2>&1; then
  # CPU only, no multimodal library.
  say "pip install llama-cpp-python==$VERSION from source (several minutes)"
  CMAKE_ARGS="$CMAKE_ARGS_LLAMA" CMAKE_BUILD_PARALLEL_LEVEL="$JOBS" \
    "$PY" -m pip install -q --no-build-isolation -C "build-dir=$BUILD" "$SRC"
  echo "$CMAKE_ARGS_LLAMA" > "$STAMP"
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

#!/usr/bin/env bash
# Configures (once) and builds one CMake build directory.
#
# usage: scripts/build.sh DIR [CMAKE_ARGS...] [-- BUILD_TARGETS...]
#   Uses Ninja when it is installed (or the generator DIR was configured
#   with). Environment: CC picks the compiler on first configure;
#   JOBS (default: number of cores).
set -euo pipefail
cd "$(dirname "$0")/.."

dir="${1:?usage: scripts/build.sh DIR [CMAKE_ARGS...] [-- TARGETS...]}"
shift
cmake_args=()
targets=()
while (($# > 0)); do
  if [[ "$1" == "--" ]]; then shift; targets=("$@"); break; fi
  cmake_args+=("$1"); shift
done
jobs="${JOBS:-$(nproc 2>/dev/null || echo 2)}"

gen_args=()
if [[ ! -f "$dir/CMakeCache.txt" ]]; then
  if command -v ninja >/dev/null 2>&1; then gen_args=(-G Ninja); fi
fi

cmake -S . -B "$dir" "${gen_args[@]}" "${cmake_args[@]}" >/dev/null
build_args=(--build "$dir" --parallel "$jobs")
if ((${#targets[@]} > 0)); then build_args+=(--target "${targets[@]}"); fi
cmake "${build_args[@]}"

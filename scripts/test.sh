#!/usr/bin/env bash
# Everything `make test` does, from a fresh machine to green:
#   1. scripts/bootstrap.sh (Debian packages, .venv with torch + executorch)
#   2. build/ (gcc, RelWithDebInfo) and its ctest
#   3. pytest tests/python (when it has tests)
#   4. build-asan/ (ASan + UBSan; clang when installed) and its ctest
#   5. build-aarch64/ (cross-compiled, NEON kernels) and its C tests (all but
#      the package check and test_corruption) under user-mode QEMU
#   6. the Java binding's JUnit tests (bindings/java/run_tests.sh; skipped
#      without a JDK)
#   7. build-baremetal/: the Cortex-M example (examples/baremetal) built with
#      arm-none-eabi-gcc, run on QEMU's mps2-an500 board, its outputs compared
#      with eager PyTorch
#   8. build-wasm/: ember for WebAssembly (emscripten), a small model and the
#      nanoGPT run in Node.js, and the nanoGPT web page (examples/web) in
#      headless Chromium, compared with eager PyTorch
#   9. the core ATen op coverage summary of the pytest run (scripts/op_coverage.py)
set -euo pipefail
cd "$(dirname "$0")/.."

VENV="${EMBER_VENV:-.venv}"
JOBS="${JOBS:-$(nproc 2>/dev/null || echo 2)}"
export JOBS

step() { printf '\n=== %s (at %d s) ===\n' "$*" "$SECONDS"; }
count_ctest() { (cd "$1" && ctest -N | sed -n 's/^Total Tests: *//p'); }
passed=0

step "bootstrap"
scripts/bootstrap.sh

step "build (build/)"
scripts/build.sh build
step "ctest (build/)"
(cd build && ctest --output-on-failure --no-tests=error -j "$JOBS")
passed=$((passed + $(count_ctest build)))

# The sanitizer, aarch64 and WebAssembly builds need no Python: they start
# now, beside pytest, at the lowest priority (nice 19), one after another in
# one background job. They take the CPU time pytest's workers leave idle (a
# worker done with its modules while the other runs its last, tests waiting
# on a subprocess), and the steps after pytest find them built (their build
# commands run again there: an up-to-date build is a no-op, and a build that
# failed here fails there with its messages). Their output goes to
# build/prebuild.log.
asan_cc="${ASAN_CC:-}"
if [[ -z "$asan_cc" && ! -f build-asan/CMakeCache.txt ]] && command -v clang >/dev/null 2>&1; then
  asan_cc=clang
fi
build_asan() {
  CC="${asan_cc:-${CC:-cc}}" scripts/build.sh build-asan -DEMBER_SANITIZE=ON \
    -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_C_FLAGS_DEBUG=-g -O1"
}
have_aarch64() { command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 && command -v qemu-aarch64 >/dev/null 2>&1; }
build_aarch64() {
  cmake -S . -B build-aarch64 -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake \
    -DCMAKE_BUILD_TYPE=Release -DEMBER_BUILD_TOOLS=OFF >/dev/null
  cmake --build build-aarch64 --parallel "$JOBS"
}
have_wasm() { command -v emcc >/dev/null 2>&1 && command -v node >/dev/null 2>&1; }
set -m  # the job gets its own process group, so that an early exit stops all of it
(
  renice -n 19 "$BASHPID" >/dev/null 2>&1 || true
  start=$SECONDS
  build_asan && echo "prebuild: build-asan in $((SECONDS - start)) s" || echo "prebuild: build-asan failed"
  if have_aarch64; then
    build_aarch64 && echo "prebuild: build-aarch64 done at $((SECONDS - start)) s" || echo "prebuild: build-aarch64 failed"
  fi
  if have_wasm; then
    bindings/wasm/test.sh build-wasm --build-only && echo "prebuild: build-wasm done at $((SECONDS - start)) s" || echo "prebuild: build-wasm failed"
  fi
) > build/prebuild.log 2>&1 &
prebuild_pid=$!
set +m
trap 'if [[ -n "${prebuild_pid:-}" ]]; then kill -- "-$prebuild_pid" 2>/dev/null || true; fi' EXIT
wait_prebuild() {
  if [[ -n "${prebuild_pid:-}" ]]; then
    wait "$prebuild_pid" || true
    prebuild_pid=
    grep '^prebuild:' build/prebuild.log || true
  fi
}

step "pytest (tests/python)"
mapfile -t pyfiles < <(find tests/python -name 'test_*.py' -o -name '*_test.py' 2>/dev/null | sort)
if ((${#pyfiles[@]} == 0)); then
  echo "tests/python has no test files; skipping pytest"
else
  log=$(mktemp)
  # one pytest worker per core (pytest-xdist): the tests are single-threaded
  # Python (tracing, exporting) far more than they are kernels. --dist
  # loadfile keeps a module's tests on one worker, so a module fixture (the
  # op-samples run, a selective build) is set up once.
  workers=()
  if ((JOBS > 1)); then workers=(-n "$JOBS" --dist loadfile); fi
  EMBER_BUILD_DIR="$PWD/build" "$VENV/bin/python" -m pytest tests/python -q --durations=15 "${workers[@]}" 2>&1 | tee "$log"
  n=$(grep -Eo '[0-9]+ passed' "$log" | tail -n1 | grep -Eo '[0-9]+' || echo 0)
  rm -f "$log"
  passed=$((passed + n))
fi

step "build with ASan + UBSan (build-asan/)"
wait_prebuild
build_asan
step "ctest (build-asan/)"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}"
(cd build-asan && ctest --output-on-failure --no-tests=error -j "$JOBS")
passed=$((passed + $(count_ctest build-asan)))

step "aarch64: cross build, the C tests under user-mode QEMU (build-aarch64/)"
# Every C test but two: package/install (it installs the build and links a
# consumer with the host's tools) and test_corruption (about 28,000 cases per
# fixture, and its jump-loop cases run past their 30 s limit under QEMU; it
# runs in build/ and build-asan/). The rest, kernels, fixtures, core, loaders,
# devtools, LLM and the NEON kernels, runs on the aarch64 build.
if have_aarch64; then
  build_aarch64
  a64_filter=(-LE '^package$' -E '^test_corruption$')
  (cd build-aarch64 && ctest --output-on-failure --no-tests=error "${a64_filter[@]}" -j "$JOBS")
  passed=$((passed + $(cd build-aarch64 && ctest -N "${a64_filter[@]}" | sed -n 's/^Total Tests: *//p')))
else
  echo "no aarch64-linux-gnu-gcc or qemu-aarch64 (scripts/bootstrap.sh installs them); skipped"
fi

step "Java binding: JUnit tests (bindings/java/run_tests.sh)"
java_log=$(mktemp)
bindings/java/run_tests.sh build 2>&1 | tee "$java_log"
n=$(sed -n 's/^OK (\([0-9]*\) tests)$/\1/p' "$java_log" | tail -n1)
rm -f "$java_log"
passed=$((passed + ${n:-0}))

step "Cortex-M bare metal: examples/baremetal on QEMU mps2-an500 (build-baremetal/)"
if command -v arm-none-eabi-gcc >/dev/null 2>&1 && command -v qemu-system-arm >/dev/null 2>&1; then
  examples/baremetal/test.sh build-baremetal
  passed=$((passed + 1))
else
  echo "no arm-none-eabi-gcc or qemu-system-arm (scripts/bootstrap.sh installs them); skipped"
fi

step "WebAssembly: emscripten build, Node.js and headless Chromium tests (build-wasm/)"
if have_wasm; then
  bindings/wasm/test.sh build-wasm
  passed=$((passed + 1))
else
  echo "no emcc or node (scripts/bootstrap.sh installs them); skipped"
fi

step "core ATen op coverage (from the pytest run's results; table: scripts/op_coverage.py)"
"$VENV/bin/python" scripts/op_coverage.py --summary-only

step "make test: all steps passed (ctest build/, pytest, ctest build-asan/, ctest build-aarch64/)"
echo "summary: $passed passed, 0 failed"

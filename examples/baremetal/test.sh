#!/usr/bin/env bash
# Builds the bare-metal example for QEMU's mps2-an500 (Cortex-M7 with FPU),
# runs it there and compares its outputs with eager PyTorch:
#   1. export.py: the model, its .pte as a C array, eager PyTorch's outputs
#      (again only when export.py or the ember package changed)
#   2. every operator of the program must have a portable kernel
#   3. cmake + ninja with cmake/toolchains/arm-none-eabi.cmake (incremental);
#      the kernel table is generated from model.pte (a selective build)
#   4. qemu-system-arm runs firmware.elf; its UART output is the log
#   5. check.py compares the outputs; size_report.py prints flash and RAM use
#
# usage: examples/baremetal/test.sh [build-dir]     (default: build-baremetal)
# Environment: EMBER_VENV (default .venv), JOBS.
set -euo pipefail
cd "$(dirname "$0")/../.."

dir="${1:-build-baremetal}"
VENV="${EMBER_VENV:-.venv}"
JOBS="${JOBS:-$(nproc 2>/dev/null || echo 2)}"
ex=examples/baremetal

stamp="$dir/model/.exported"
if [[ ! -f "$stamp" || -n $(find "$ex/export.py" python/ember -newer "$stamp" -print -quit) ]]; then
  PYTHONWARNINGS=ignore "$VENV/bin/python" "$ex/export.py" --out-dir "$dir/model"
  touch "$stamp"
fi

missing=()
while read -r op; do
  grep -q "EK_OP(\"$op\"" src/kernels/portable/ops.def || missing+=("$op")
done < "$dir/model/operators.txt"
if ((${#missing[@]} > 0)); then
  echo "baremetal: the program uses operators without a portable kernel: ${missing[*]}" >&2
  exit 1
fi

if [[ ! -f "$dir/fw/CMakeCache.txt" ]]; then
  cmake -S "$ex" -B "$dir/fw" -G Ninja -DCMAKE_TOOLCHAIN_FILE="$PWD/cmake/toolchains/arm-none-eabi.cmake" \
    -DMODEL_DIR="$PWD/$dir/model" >/dev/null
fi
cmake --build "$dir/fw" --parallel "$JOBS"

# -nographic: UART0 on stdout; semihosting: the firmware's exit status.
timeout 120 qemu-system-arm -M mps2-an500 -nographic -semihosting-config enable=on,target=native \
  -kernel "$dir/fw/firmware.elf" </dev/null | tee "$dir/uart.log"
"$VENV/bin/python" "$ex/check.py" "$dir/uart.log" "$dir/model/expected.txt"
"$VENV/bin/python" "$ex/size_report.py" "$dir/fw/firmware.elf" "$dir/fw/firmware.map"

#!/usr/bin/env bash
# Sets up everything `make test` needs on a Debian machine, idempotently:
#   Debian packages: gcc, make, cmake, ninja, binutils, clang and its fuzzer
#     runtime, Python 3.11 with venv and headers, the aarch64 cross compiler
#     and user-mode QEMU, a JDK and JUnit 4 (the Java binding's tests), the
#     Arm bare-metal compiler (newlib) and QEMU's Arm boards, emscripten,
#     Node.js and Chromium (apt-get update runs once, and only when something
#     is missing);
#   .venv (Python 3.11) with torch==2.13.0, executorch==1.5.1, pytest (and
#     pytest-xdist, which spreads the tests over the cores), numpy,
#     scikit-build-core, and pandas + matplotlib (the Inspector's tables and plots);
#   the ember package itself, editable (pip install -e .: the C extension
#     ember._runtime, ember-run in .venv/bin), rebuilt only when a C source,
#     CMake file or pyproject.toml is newer than the last install.
# When everything is in place it checks and returns in about a second.
#
# usage: scripts/bootstrap.sh [--system-only] [--train]
#   --system-only   only the Debian packages needed to build the C library
#   --train         also fetch the nanoGPT example's training corpus (Jane
#                   Austen's novels from Debian's r-cran-janeaustenr, unpacked
#                   into examples/nanogpt/data/ without installing R)
#
# Environment: EMBER_VENV (default .venv).
set -euo pipefail
cd "$(dirname "$0")/.."

SYSTEM_ONLY=0
TRAIN=0
for arg in "$@"; do
  case "$arg" in
    --system-only) SYSTEM_ONLY=1 ;;
    --train) TRAIN=1 ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bootstrap: unknown argument '$arg'" >&2; exit 2 ;;
  esac
done

VENV="${EMBER_VENV:-.venv}"
PY_REQS=(torch==2.13.0 executorch==1.5.1 pytest pytest-xdist numpy scikit-build-core tokenizers sentencepiece tiktoken jinja2 transformers==5.24.0 regex tqdm pandas matplotlib)
# What `pip install -e .` builds from: a newer file here means a rebuild.
PKG_INPUTS=(pyproject.toml CMakeLists.txt cmake include src extension tools python/ember/_runtime.c python/ember/_llm.c)

say() { echo "bootstrap: $*"; }
die() { echo "bootstrap: error: $*" >&2; exit 1; }
have() { command -v "$1" >/dev/null 2>&1; }

# --- Debian packages -------------------------------------------------------

SUDO=()
if [[ $(id -u) -ne 0 ]]; then
  if have sudo; then SUDO=(sudo); fi
fi

APT_UPDATED=0
apt_install() {
  (($# > 0)) || return 0
  if ! have apt-get; then
    die "missing: $* (no apt-get here; install them with your package manager)"
  fi
  if [[ $(id -u) -ne 0 && ${#SUDO[@]} -eq 0 ]]; then
    die "missing: $* (run as root or install sudo)"
  fi
  if ((APT_UPDATED == 0)); then
    say "apt-get update"
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    APT_UPDATED=1
  fi
  say "apt-get install $*"
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

python311_ok() {
  have python3.11 && python3.11 -c 'import venv, ensurepip' >/dev/null 2>&1
}

# Python.h, for the C extension.
python311_dev_ok() {
  have python3.11 && python3.11 -c '
import os, sys, sysconfig
sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' >/dev/null 2>&1
}

clang_major() {
  clang --version 2>/dev/null | sed -n 's/.*clang version \([0-9][0-9]*\).*/\1/p' | head -n1
}

fuzzer_ok() {
  local tmp rc
  tmp=$(mktemp -d)
  printf '%s\n' '#include <stddef.h>' '#include <stdint.h>' \
    'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }' \
    > "$tmp/f.c"
  clang -fsanitize=fuzzer,address,undefined "$tmp/f.c" -o "$tmp/f" >/dev/null 2>&1 && rc=0 || rc=1
  rm -rf "$tmp"
  return $rc
}

# The aarch64 cross compiler links a program (it needs the target's C library).
aarch64_cc_ok() {
  have aarch64-linux-gnu-gcc &&
    printf 'int main(void) { return 0; }\n' |
      aarch64-linux-gnu-gcc -x c - -o /dev/null >/dev/null 2>&1
}

# The Arm bare-metal compiler finds newlib (a package of its own).
arm_none_eabi_ok() {
  have arm-none-eabi-gcc &&
    printf '#include <string.h>\nint f(void) { return (int)strlen(""); }\n' |
      arm-none-eabi-gcc -mcpu=cortex-m7 -mthumb -x c -c - -o /dev/null >/dev/null 2>&1
}

missing=()
have cc || have gcc || missing+=(gcc)
have gcc || missing+=(gcc)
have make || missing+=(make)
have cmake || missing+=(cmake)
have ninja || missing+=(ninja-build)
have strip && have size || missing+=(binutils)
if ((SYSTEM_ONLY == 0)); then
  have clang || missing+=(clang)
  python311_ok || missing+=(python3.11 python3.11-venv)
  python311_dev_ok || missing+=(python3.11-dev)
  # the aarch64 cross build of the optimized kernels, run under user-mode QEMU
  # (the C library's development files come in a package of their own, which
  # the compiler only recommends)
  aarch64_cc_ok || missing+=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross)
  have qemu-aarch64 || missing+=(qemu-user)
  # the Java binding (bindings/java): JNI headers and javac, and JUnit 4
  have javac || missing+=(default-jdk-headless)
  [[ -f /usr/share/java/junit4.jar ]] || missing+=(junit4)
  # the Cortex-M example (examples/baremetal), run on QEMU's mps2-an500 board
  arm_none_eabi_ok || missing+=(gcc-arm-none-eabi libnewlib-arm-none-eabi)
  have qemu-system-arm || missing+=(qemu-system-arm)
  # the WebAssembly build (emcc), its Node test and the web page's browser test
  have emcc || missing+=(emscripten)
  have node || missing+=(nodejs)
  have chromium || missing+=(chromium)
  # VulkanBackend: the headers and loader, the GLSL compiler, and Mesa's CPU
  # driver (lavapipe) that its tests run on where there is no GPU
  [[ -f /usr/include/vulkan/vulkan.h ]] || missing+=(libvulkan-dev)
  have glslc || missing+=(glslc)
  have vulkaninfo || missing+=(vulkan-tools)
  compgen -G "/usr/share/vulkan/icd.d/lvp_icd*.json" >/dev/null || missing+=(mesa-vulkan-drivers)
fi
# De-duplicate.
if ((${#missing[@]} > 0)); then
  mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
  # The JDK's install script links its man pages into /usr/share/man/man1,
  # which Debian's slim images leave out.
  if [[ " ${missing[*]} " == *" default-jdk-headless "* ]]; then
    "${SUDO[@]}" mkdir -p /usr/share/man/man1 2>/dev/null || true
  fi
  apt_install "${missing[@]}"
fi

if ((SYSTEM_ONLY == 0)); then
  # clang's sanitizer and libFuzzer runtimes come in a separate package.
  if ! fuzzer_ok; then
    v=$(clang_major)
    [[ -n "$v" ]] || die "cannot tell clang's version"
    apt_install "libclang-rt-$v-dev"
    fuzzer_ok || die "clang cannot link -fsanitize=fuzzer,address,undefined after installing libclang-rt-$v-dev"
  fi
fi

for tool in gcc make cmake strip size; do
  have "$tool" || die "$tool is still missing"
done

((SYSTEM_ONLY == 0)) || { say "system packages ready"; exit 0; }

# --- Python virtual environment --------------------------------------------

python311_ok || die "python3.11 with venv is still missing"

venv_is_311() {
  [[ -x "$VENV/bin/python" ]] &&
    "$VENV/bin/python" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' >/dev/null 2>&1
}

if ! venv_is_311; then
  if [[ -e "$VENV" ]]; then
    say "$VENV is not a Python 3.11 venv; recreating it"
    rm -rf "$VENV"
  fi
  say "creating $VENV (python3.11 -m venv)"
  python3.11 -m venv "$VENV"
fi

# Checks installed versions from package metadata (no imports: fast).
reqs_ok() {
  "$VENV/bin/python" - "$@" <<'PY'
import sys
from importlib import metadata
for req in sys.argv[1:]:
    name, _, want = req.partition("==")
    try:
        have = metadata.version(name)
    except metadata.PackageNotFoundError:
        sys.exit(1)
    # torch reports a local build tag: 2.13.0+cpu satisfies ==2.13.0.
    if want and have.split("+")[0] != want:
        sys.exit(1)
PY
}

if ! reqs_ok "${PY_REQS[@]}"; then
  say "pip install ${PY_REQS[*]}"
  "$VENV/bin/python" -m pip install --quiet "${PY_REQS[@]}"
  reqs_ok "${PY_REQS[@]}" || die "pip did not install ${PY_REQS[*]}"
fi

# --- the ember package (editable) ------------------------------------------

# Installed editable from this checkout, with ember-run, and not older than
# any of PKG_INPUTS. Reads package metadata only (importing ember would
# import torch: seconds).
STAMP="$VENV/.ember-install-stamp"
ember_installed() {
  [[ -x "$VENV/bin/ember-run" && -f "$STAMP" ]] || return 1
  [[ -z $(find "${PKG_INPUTS[@]}" -newer "$STAMP" -print -quit 2>/dev/null) ]] || return 1
  "$VENV/bin/python" - "$PWD" <<'PY'
import json, os, sys
from importlib import metadata
from urllib.parse import unquote, urlparse
try:
    dist = metadata.distribution("ember")
    info = json.loads(dist.read_text("direct_url.json") or "{}")
except (metadata.PackageNotFoundError, ValueError):
    sys.exit(1)
path = unquote(urlparse(info.get("url", "")).path)
ok = info.get("dir_info", {}).get("editable") and os.path.realpath(path) == os.path.realpath(sys.argv[1])
sys.exit(0 if ok else 1)
PY
}

if ! ember_installed; then
  say "pip install -e . (builds ember._runtime and ember-run)"
  touch "$STAMP.new"   # edits made during the build are newer: rebuilt next time
  "$VENV/bin/python" -m pip install --quiet --no-build-isolation -e . ||
    die "pip install -e . failed"
  mv "$STAMP.new" "$STAMP"
  ember_installed || die "ember is still not installed in $VENV after pip install -e ."
fi

# --- nanoGPT training corpus (--train only) ---------------------------------

# The .deb is only unpacked: prepare.py reads R's data files itself, so R is
# not needed.
if ((TRAIN == 1)); then
  CORPUS_DIR=examples/nanogpt/data/janeaustenr
  if [[ ! -f "$CORPUS_DIR/usr/lib/R/site-library/janeaustenr/data/Rdata.rdb" ]]; then
    have apt-get && have dpkg-deb || die "--train needs apt-get and dpkg-deb (Debian)"
    mkdir -p "$CORPUS_DIR"
    if ! (cd "$CORPUS_DIR" && apt-get download r-cran-janeaustenr >/dev/null 2>&1); then
      say "apt-get update"
      "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
      (cd "$CORPUS_DIR" && apt-get download r-cran-janeaustenr >/dev/null) ||
        die "apt-get download r-cran-janeaustenr failed"
    fi
    dpkg-deb -x "$CORPUS_DIR"/r-cran-janeaustenr_*.deb "$CORPUS_DIR"
    say "corpus unpacked in $CORPUS_DIR"
  fi
fi

say "ready ($VENV: ${PY_REQS[*]}, ember editable)"

#!/usr/bin/env bash
# Builds the libFuzzer target with clang (build-fuzz/) and runs it for
# FUZZ_SECONDS (default 600) on tests/fuzz/corpus, seeded with the .pte
# fixtures. New inputs go to build-fuzz/corpus; crashes to build-fuzz/crashes.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${FUZZ_SECONDS:-600}"
dir="${FUZZ_DIR:-build-fuzz}"
if [[ ! -f tests/fuzz/fuzz_program.c ]]; then
  echo "fuzz: tests/fuzz/fuzz_program.c does not exist yet; nothing to fuzz" >&2
  exit 1
fi
command -v clang >/dev/null 2>&1 || scripts/bootstrap.sh
CC=clang scripts/build.sh "$dir" -DEMBER_FUZZ=ON -DEMBER_BUILD_TESTS=OFF \
  -DEMBER_BUILD_TOOLS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo -- fuzz_program

mkdir -p "$dir/corpus" "$dir/crashes"
cp -n tests/fixtures/*.pte "$dir/corpus/" 2>/dev/null || true
corpora=("$dir/corpus")
[[ -d tests/fuzz/corpus ]] && corpora+=(tests/fuzz/corpus)
echo "fuzz: running $dir/fuzz_program for ${seconds}s on ${corpora[*]}"
exec "$dir/fuzz_program" "${corpora[@]}" \
  -max_total_time="$seconds" -artifact_prefix="$dir/crashes/" -print_final_stats=1

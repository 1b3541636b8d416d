#!/usr/bin/env bash
# Builds a libFuzzer target with clang (build-fuzz/) and runs it for
# FUZZ_SECONDS (default 600). FUZZ_TARGET picks it (default fuzz_program):
#   fuzz_program   .pte programs; seeds: tests/fixtures/*.pte, tests/fuzz/corpus
#   fuzz_data_map  .ptd data maps; seeds: tests/fixtures/*.ptd
#   fuzz_xnnpack   XNNPACK payloads; seeds: tests/fuzz/corpus_xnnpack
#   fuzz_tokenizer tokenizer files, text, chat templates, JSON and regex
#                  patterns (the first byte picks which); seeds made from
#                  tests/fixtures/llm (tokenizer.json, templates, corpus)
# New inputs go to build-fuzz/corpus (fuzz_program) or
# build-fuzz/corpus_<target>; crashes to build-fuzz/crashes.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${FUZZ_SECONDS:-600}"
dir="${FUZZ_DIR:-build-fuzz}"
target="${FUZZ_TARGET:-fuzz_program}"
if [[ ! -f "tests/fuzz/$target.c" ]]; then
  echo "fuzz: tests/fuzz/$target.c does not exist; nothing to fuzz" >&2
  exit 1
fi
command -v clang >/dev/null 2>&1 || scripts/bootstrap.sh
CC=clang scripts/build.sh "$dir" -DEMBER_FUZZ=ON -DEMBER_BUILD_TESTS=OFF \
  -DEMBER_BUILD_TOOLS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo -- "$target"

corpus="$dir/corpus"
[[ "$target" == fuzz_program ]] || corpus="$dir/corpus_${target#fuzz_}"
mkdir -p "$corpus" "$dir/crashes"
corpora=("$corpus")
case "$target" in
  fuzz_program)
    cp -n tests/fixtures/*.pte "$corpus/" 2>/dev/null || true
    [[ -d tests/fuzz/corpus ]] && corpora+=(tests/fuzz/corpus) ;;
  fuzz_data_map)
    cp -n tests/fixtures/*.ptd "$corpus/" 2>/dev/null || true ;;
  fuzz_xnnpack)
    [[ -d tests/fuzz/corpus_xnnpack ]] && corpora+=(tests/fuzz/corpus_xnnpack) ;;
  fuzz_tokenizer)
    # One seed per mode: the mode byte, then its input.
    seed() { { printf "\\x$1"; cat; } > "$corpus/seed_$2"; }
    fx=tests/fixtures/llm
    seed 00 tokenizer_json < "$fx/json/tokenizer_small.json"
    seed 03 json < "$fx/json/tokenizer_small.json"
    head -c 4096 "$fx/corpus.jsonl" | seed 01 text
    for t in "$fx"/chat_templates/*.jinja; do seed 02 "template_$(basename "$t" .jinja)" < "$t"; done
    printf "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+\\x00Hello, world! It's 2026.\\n\\n  tabs\\tand 12345" |
      seed 04 regex ;;
esac
echo "fuzz: running $dir/$target for ${seconds}s on ${corpora[*]}"
exec "$dir/$target" "${corpora[@]}" \
  -max_total_time="$seconds" -artifact_prefix="$dir/crashes/" -print_final_stats=1

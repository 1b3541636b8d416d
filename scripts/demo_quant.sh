#!/usr/bin/env bash
# The quantized half of `make demo`: the same prompt and sampling through
# each given program, its text, then one table of file size, speed and memory
# (--table-only before a program: its row without its text).
#
# usage: scripts/demo_quant.sh LLM TOKENIZER PROMPT [--table-only] LABEL=FILE.pte ...
set -euo pipefail

llm=$1 tokenizer=$2 prompt=$3
shift 3
rows=()
show_text=1
for spec in "$@"; do
  if [[ $spec == --table-only ]]; then show_text=0; continue; fi
  label=${spec%%=*} pte=${spec#*=}
  err=$(mktemp)
  if ! text=$("$llm" --model "$pte" --tokenizer "$tokenizer" --prompt "$prompt" \
    --max-new-tokens 120 --temperature 0.8 --top-k 40 --seed 42 --stats 2>"$err"); then
    cat "$err" >&2
    rm -f "$err"
    exit 1
  fi
  field() { sed -n "s/^$1: *//p" "$err" | head -n1; }
  prefill=$(field prefill | sed -n 's/.*(\([0-9.]*\) tok\/s).*/\1/p')
  decode=$(field decode | sed -n 's/.*(\([0-9.]*\) tok\/s).*/\1/p')
  rss=$(field 'peak RSS')
  rm -f "$err"
  size=$(awk -v b="$(stat -c %s "$pte")" 'BEGIN { printf "%.1f MB", b / 1e6 }')
  if ((show_text)); then printf '%s:\n%s\n\n' "$label" "$text" | fold -s -w 100; fi
  show_text=1
  rows+=("$(printf '%-18s %9s %14s %13s %12s' "$label" "$size" "$prefill" "$decode" "$rss")")
done
printf '%-18s %9s %14s %13s %12s\n' model file "prefill tok/s" "decode tok/s" "peak RSS"
printf '%s\n' "${rows[@]}"

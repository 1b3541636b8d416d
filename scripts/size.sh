#!/usr/bin/env bash
# Prints the size of the core runtime: src/{core,format,executor,loaders,
# platform}, without kernels, backends or extensions, built MinSizeRel with
# -ffunction-sections -fdata-sections.
#
# Two measures, both counting only .text + .rodata + .data (+ .data.rel.ro),
# the bytes that end up in a device image (no symbols, debug info, unwind
# tables or relocations):
#   1. objects:  the stripped object files, summed, per layer and in total;
#   2. linked:   a probe program that references every public entry point,
#                linked with --gc-sections and stripped, minus the same
#                program without ember.
set -euo pipefail
cd "$(dirname "$0")/.."

dir="${SIZE_DIR:-build-size}"
if ! log=$(CC="${CC:-cc}" scripts/build.sh "$dir" -DCMAKE_BUILD_TYPE=MinSizeRel -DEMBER_SECTIONS=ON \
  -DEMBER_BUILD_TESTS=OFF -DEMBER_BUILD_TOOLS=OFF -- ember_core 2>&1); then
  echo "$log" >&2
  echo "size: the MinSizeRel build of the core failed" >&2
  exit 1
fi

cc_bin=$(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "$dir/CMakeCache.txt")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Sum of .text*, .rodata*, .data* sections (SysV `size -A` output).
section_bytes() {
  size -A "$@" | awk '$1 ~ /^\.(text|rodata|data)(\.|$)/ { s += $2 } END { print s + 0 }'
}
# 31234 -> 31,234
fmt() { echo "$1" | sed -e ':a' -e 's/\B[0-9]\{3\}\>/,&/' -e 'ta'; }

objdir="$dir/CMakeFiles/ember_core_obj.dir/src"
total=0
printf 'ember core runtime, MinSizeRel (%s), stripped\n' "$("$cc_bin" --version | head -n1)"
printf '  %-10s %10s\n' layer bytes
for layer in core format executor loaders platform; do
  mapfile -t objs < <(find "$objdir/$layer" -name '*.o' 2>/dev/null | sort)
  n=0
  if ((${#objs[@]} > 0)); then
    mkdir -p "$tmp/$layer"
    for o in "${objs[@]}"; do
      strip --strip-unneeded -o "$tmp/$layer/$(basename "$o")" "$o"
    done
    n=$(section_bytes "$tmp/$layer"/*.o)
  fi
  total=$((total + n))
  printf '  %-10s %10s\n' "$layer" "$(fmt "$n")"
done
printf 'core runtime: %s bytes (objects: stripped .text+.rodata+.data, summed)\n' "$(fmt "$total")"

# Linked measure.
flags=(-std=c11 -Os -ffunction-sections -fdata-sections -Iinclude)
"$cc_bin" "${flags[@]}" scripts/size_probe.c -o "$tmp/base" -Wl,--gc-sections -s
if "$cc_bin" "${flags[@]}" -DEMBER_SIZE_FULL scripts/size_probe.c "$dir/libember_core.a" -lm \
     -o "$tmp/full" -Wl,--gc-sections -s 2>"$tmp/link.log"; then
  linked=$(( $(section_bytes "$tmp/full") - $(section_bytes "$tmp/base") ))
  printf 'core runtime: %s bytes (linked: all public entry points, --gc-sections, stripped; .text+.rodata+.data over an empty program)\n' "$(fmt "$linked")"
else
  echo "linked measure unavailable: the probe did not link against the core:"
  grep -o "undefined reference to \`[^']*'" "$tmp/link.log" | sort -u | sed 's/^/  /' || head -n5 "$tmp/link.log"
fi

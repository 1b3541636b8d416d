#!/usr/bin/env python3
"""Flash and RAM use of the firmware, by component, from the linker map.

Flash is what the image occupies in the FLASH region (vectors, code,
read-only data, the model, and the initial values of .data); RAM is .data,
.bss (the static arena, planned buffers and scratch) and the stack.

usage: size_report.py firmware.elf firmware.map
"""
from __future__ import annotations

import re
import subprocess
import sys
from collections import defaultdict

# Output section -> where it lives.
FLASH = {".vectors", ".text", ".ARM.exidx"}
RAM = {".bss", ".stack"}
BOTH = {".data"}  # its initial values are in flash, the variables in RAM


def component(origin: str, section: str) -> str:
    if "libember_core.a" in origin:
        return "ember core runtime"
    if "libember_kernels_portable.a" in origin:
        return "ember kernels (selected from model.pte)"
    if "model_data.c" in origin:
        return "model (.pte) and input" if section.startswith(".rodata") else "model data"
    if re.search(r"lib(c_nano|c|m|gcc|nosys)\.a", origin):
        return "C library (newlib-nano, libm, libgcc)"
    if origin.startswith("*fill*") or not origin:
        return "alignment"
    if "main.c" in origin and section.startswith(".bss"):
        return "static arena, planned buffers, scratch"
    return "example (main, startup, board, kernel table)"


def main() -> int:
    elf, map_path = sys.argv[1:3]
    with open(map_path) as f:
        lines = f.read().split("\n")
    start = next(i for i, l in enumerate(lines) if l.startswith("Linker script and memory map"))
    flash = defaultdict(int)
    ram = defaultdict(int)
    out_sec = None
    pending = None  # an input section name on a line of its own
    for line in lines[start + 1:]:
        m = re.match(r"^(\.[\w.]+)(\s+0x[0-9a-f]+\s+0x[0-9a-f]+.*)?$", line)
        if m:
            out_sec = m.group(1)
            continue
        if out_sec is None:
            continue
        m = re.match(r"^ (\S+)\s*$", line)
        if m and not m.group(1).startswith("*"):
            pending = m.group(1)
            continue
        m = re.match(r"^ (\S+)?\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+(.+)$", line)
        if not m:
            pending = None
            continue
        name = m.group(1) or pending or ""
        pending = None
        size = int(m.group(3), 16)
        origin = m.group(4).strip()
        if name == "*fill*":
            origin = "*fill*"
        comp = component(origin, name)
        if out_sec in FLASH:
            flash[comp] += size
        elif out_sec in RAM:
            ram[comp] += size
        elif out_sec in BOTH:
            flash[comp] += size
            ram[comp] += size
    # Totals from the section headers; what the map does not attribute
    # (alignment between sections) is "other". The parts are input sections
    # as the map lists them, before the linker merges duplicate strings, so
    # they may add up to a few hundred bytes more than the total.
    sizes = {}
    out = subprocess.run(["arm-none-eabi-size", "-A", elf], check=True, capture_output=True,
                         text=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0].startswith(".") and parts[1].isdigit():
            sizes[parts[0]] = int(parts[1])
    flash_total = sum(sizes.get(s, 0) for s in FLASH | BOTH)
    ram_total = sum(sizes.get(s, 0) for s in RAM | BOTH)
    ram["stack"] = sizes.get(".stack", 0)
    flash["other (alignment)"] = flash_total - sum(flash.values())
    ram["other (alignment)"] = ram_total - sum(ram.values())

    print(f"flash: {flash_total:,} bytes (FLASH region: vectors, code, read-only data, .data's initial values)")
    for name, n in sorted(flash.items(), key=lambda kv: -kv[1]):
        if n > 0:
            print(f"  {name:<44} {n:>9,}")
    print(f"RAM: {ram_total:,} bytes (.data, .bss, stack; no heap)")
    for name, n in sorted(ram.items(), key=lambda kv: -kv[1]):
        if n > 0:
            print(f"  {name:<44} {n:>9,}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

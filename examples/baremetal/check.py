#!/usr/bin/env python3
"""Compares the firmware's UART output with eager PyTorch's outputs.

The firmware prints each output element as its float bits
(`out[i] = 0x3da1bdd4`); export.py wrote eager PyTorch's values to
expected.txt. fp32 tolerance: rel 1e-5, abs 1e-6.

usage: check.py <uart log> <expected.txt>
"""
from __future__ import annotations

import math
import re
import struct
import sys


def main() -> int:
    log_path, expected_path = sys.argv[1:3]
    with open(log_path, encoding="utf-8", errors="replace") as f:
        log = f.read()
    with open(expected_path) as f:
        expected = [float(line) for line in f if line.strip()]
    got = {}
    for m in re.finditer(r"^out\[(\d+)\] = 0x([0-9a-f]{8})\s*$", log, re.M):
        got[int(m.group(1))] = struct.unpack("<f", bytes.fromhex(m.group(2))[::-1])[0]
    if "\nok" not in "\n" + log:
        print("check: the firmware did not finish (no 'ok' line)")
        return 1
    if sorted(got) != list(range(len(expected))):
        print(f"check: expected {len(expected)} outputs, the firmware printed {len(got)}")
        return 1
    worst = 0.0
    bad = 0
    for i, want in enumerate(expected):
        have = got[i]
        err = abs(have - want)
        worst = max(worst, err)
        if not math.isfinite(have) or err > 1e-6 + 1e-5 * abs(want):
            print(f"check: out[{i}] = {have!r}, eager PyTorch gives {want!r}")
            bad += 1
    if bad:
        return 1
    print(f"check: {len(expected)} outputs match eager PyTorch (max abs error {worst:.3g})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

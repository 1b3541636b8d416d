#!/usr/bin/env python3
"""The machine's roofline: read bandwidth and fp32 FMA peak on 1 and 2 threads.

Builds and runs bench/roofline/roofline.c (see its header for the method) and
writes the figures as their own section of bench/RESULTS.md. The other
benchmarks measure the same figures again in their own runs and print them
beside their tables.

usage: .venv/bin/python bench/roofline/bench_roofline.py [--quick] [--write bench/RESULTS.md]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from machine import measure_roofline, quote_command, roofline_line, write_section  # noqa: E402

SECTION = "## Roofline"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="256 MiB, 3 passes")
    ap.add_argument("--threads", default="1,2", help="thread counts (comma-separated)")
    ap.add_argument("--write", metavar="FILE", help="put the section into FILE")
    args = ap.parse_args()
    threads = [int(t) for t in args.threads.split(",")]
    r = measure_roofline(threads, quick=args.quick)
    line = roofline_line(r)
    print(line)
    rows = ["| threads | read GB/s | fp32 FMA GFLOP/s |", "|---|---|---|"]
    rows += [f"| {t} | {r['read_gbs'][t]:.1f} | {r['fma_gflops'][t]:.1f} |" for t in threads]
    print("\n".join(rows))
    if args.write:
        cmd = quote_command(sys.argv, "make bench-roofline")
        body = (f"{SECTION}\n\n`{cmd}`\n\n{line}\n\n"
                "Read: each thread streams its share of one buffer with "
                f"{'512' if r['isa'] == 'avx512f' else '256'}-bit loads into 8 accumulators"
                f"{' (huge pages)' if r.get('huge_pages') else ''}. FMA: {r['fma_chains']} "
                "independent chains per thread in registers, an FMA counted as 2 FLOPs. "
                "The LLM and CNN tables divide their rates by these ceilings.\n\n"
                + "\n".join(rows) + "\n")
        write_section(Path(args.write), SECTION, body, first=True)
        print(f"wrote {args.write}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""ember-inspect: the Inspector's table and plots from the command line.

    ember-inspect --etdump model.etdp --etrecord model.etrecord --plots out/
"""

from __future__ import annotations

import argparse
import sys
from typing import List, Optional

from .etdump_reader import ETDumpError
from .etrecord import ETRecordError
from .inspector import Inspector


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(
        prog="ember-inspect",
        description="Print an ETDump's events with their statistics, operators and source "
                    "lines, and write plots.")
    p.add_argument("--etdump", required=True, help="the trace (ember-run / ember-llm --etdump)")
    p.add_argument("--etrecord", help="the program's ETRecord (generate_etrecord)")
    p.add_argument("--debug-buffer", help="the recorded tensors (FILE.etdp.debug)")
    p.add_argument("--method", default="forward", help="the method the ETRecord maps")
    p.add_argument("--block", help="print only the runs with this name (e.g. forward)")
    p.add_argument("--plots", metavar="DIR", help="write op_times.png, timeline.png and "
                   "memory_plan.png into DIR")
    p.add_argument("--slowest", type=int, default=5, metavar="N",
                   help="list the N slowest operator events with their source (default 5)")
    p.add_argument("--csv", help="write the table (one row per event) as CSV")
    a = p.parse_args(argv)
    try:
        insp = Inspector(etdump_path=a.etdump, etrecord=a.etrecord,
                         debug_buffer_path=a.debug_buffer, method=a.method)
    except (ETDumpError, ETRecordError) as e:
        print(f"ember-inspect: {e}", file=sys.stderr)
        return 1
    insp.print_data_tabular(block=a.block)
    names = [b.name for b in insp.event_blocks]
    if a.slowest and a.method in names:
        print(f"\nslowest {a.slowest} events of {a.method}:")
        for e in insp.slowest(a.slowest):
            where = ""
            if e.nodes:
                where = e.nodes[0].source
            print(f"  {e.perf_data.avg:9.4f} ms  {e.name}  handles {e.debug_handles}  {where}")
    if a.csv:
        insp.to_dataframe().to_csv(a.csv, index=False)
    if a.plots:
        from .plots import write_plots
        for f in write_plots(insp, a.plots, ""):
            print(f"wrote {f}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

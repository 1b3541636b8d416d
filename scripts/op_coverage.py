#!/usr/bin/env python3
"""Core ATen operator coverage of ember's portable kernels: summary and docs/ops.md.

Reads the results that the OpInfo sample tests wrote
(tests/python/ops/test_op_samples.py -> build/op-samples/results.json) and
the operator list derived from torch (ember.ops_coverage), prints a compact
summary and writes a table op x dtype to docs/ops.md. It runs nothing
itself, so `make test` prints it right after the tests at no cost.

usage: .venv/bin/python scripts/op_coverage.py [--results FILE...] [--markdown FILE | --summary-only]

Several results files (the shards of one run, EMBER_OPS_SHARD) are merged.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Dict, List, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))

from tabulate import tabulate  # noqa: E402

DTYPE_SHORT = {"float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16",
               "int8": "i8", "uint8": "u8", "int16": "i16", "int32": "i32", "int64": "i64",
               "bool": "bool"}

LEGEND = """\
| cell | meaning |
|---|---|
| `pass n` | all n samples of this dtype match eager PyTorch |
| `FAIL k/n` | k of n samples differ from eager or fail in the runtime |
| `no kernel` | torch supports the dtype, the runtime has no kernel for the op |
| `skip` | torch supports the dtype but no sample could be exported or none was captured |
| `-` | torch does not support this dtype for the op: its OpInfos do not list it, or eager refuses it at this overload |
"""


def default_results() -> str:
    d = os.environ.get("EMBER_OP_SAMPLES", os.path.join("build", "op-samples"))
    return os.path.join(d if os.path.isabs(d) else os.path.join(ROOT, d), "results.json")


def merge_results(paths: List[str]) -> Dict[str, Any]:
    """One results dict from the results.json of each shard of a run."""
    merged: Dict[str, Any] = {}
    for path in paths:
        with open(path) as f:
            part = json.load(f)
        if not merged:
            merged = dict(part, ops=dict(part.get("ops", {})))
            continue
        merged["ops"].update(part.get("ops", {}))
        merged["seconds"] = round(merged.get("seconds", 0) + part.get("seconds", 0), 1)
    return merged


def cell(d: Dict[str, Any]) -> str:
    status = d.get("status")
    if status == "pass":
        return f"pass {d['pass']}"
    if status == "fail":
        return f"FAIL {d['fail']}/{d['pass'] + d['fail']}"
    if status == "no-kernel":
        return "no kernel"
    if status == "skipped":
        return "skip"
    return "-"


def op_complete(rec: Dict[str, Any]) -> bool:
    """Kernel present and every dtype torch supports passes."""
    if not rec.get("implemented"):
        return False
    if rec["status"] == "symbolic":
        return True
    if rec["status"] != "tested":
        return False
    states = [d["status"] for d in rec["dtypes"].values() if d["status"] != "unsupported"]
    return bool(states) and all(s == "pass" for s in states)


def summarize(results: Dict[str, Any], entries: List[Any], edge: List[Any]
              ) -> Tuple[List[str], Dict[str, Any]]:
    ops = results.get("ops", {})
    dtypes = results.get("dtypes", list(DTYPE_SHORT))
    total = len(entries)
    implemented = sum(e.implemented for e in entries)
    recs = [ops.get(e.name) for e in entries]
    complete = sum(1 for r in recs if r is not None and op_complete(r))
    tested = sum(1 for r in recs if r is not None and r["status"] == "tested")
    failing = sorted(e.name for e, r in zip(entries, recs) if r is not None and any(
        d["status"] == "fail" for d in r["dtypes"].values()))
    s_pass = s_fail = s_skip = s_total = 0
    per_dtype = []
    for dt in dtypes:
        c = {"pass": 0, "fail": 0, "samples": 0, "passed": 0, "nokernel": 0}
        for r in recs:
            if r is None or dt not in r["dtypes"]:
                continue
            d = r["dtypes"][dt]
            c["samples"] += d.get("total", 0)
            c["passed"] += d.get("pass", 0)
            c["pass"] += d["status"] == "pass"
            c["fail"] += d["status"] == "fail"
            c["nokernel"] += d["status"] == "no-kernel"
        per_dtype.append([dt, c["pass"], c["fail"], c["nokernel"], f"{c['passed']}/{c['samples']}"])
    for r in recs:
        if r is None:
            continue
        for d in r["dtypes"].values():
            s_pass += d.get("pass", 0)
            s_fail += d.get("fail", 0)
            s_skip += d.get("skip", 0) + d.get("no-kernel", 0)
            s_total += d.get("total", 0)
    dim_order = [e for e in edge if e.kind == "dim_order"]
    quant = [e for e in edge if e.kind == "quantized"]
    lines = [
        f"core ATen ops (torch {results.get('torch', '?')}): {total}; kernel present "
        f"{implemented}/{total}; complete (every dtype torch supports passes) {complete}/{total}; "
        f"tested on samples {tested}",
        f"samples ({results.get('mode', '?')} mode, {results.get('seconds', '?')} s): passed "
        f"{s_pass}/{s_total}, failed {s_fail}, skipped {s_skip}",
        f"edge dialect: dim_order_ops {sum(e.implemented for e in dim_order)}/{len(dim_order)}, "
        f"quantized_decomposed {sum(e.implemented for e in quant)}/{len(quant)}",
    ]
    table = tabulate(per_dtype, headers=["dtype", "ops pass", "ops fail", "no kernel",
                                         "samples passed"], tablefmt="simple")
    lines += table.splitlines()
    if failing:
        lines.append(f"ops with failing samples ({len(failing)}): " + ", ".join(failing))
    stats = {"total": total, "implemented": implemented, "complete": complete,
             "samples_passed": s_pass, "samples_total": s_total, "per_dtype": per_dtype,
             "failing": failing}
    return lines, stats


def markdown(results: Dict[str, Any], entries: List[Any], edge: List[Any],
             summary_lines: List[str], stats: Dict[str, Any]) -> str:
    ops = results.get("ops", {})
    dtypes = results.get("dtypes", list(DTYPE_SHORT))
    rows = []
    for e in entries:
        r = ops.get(e.name)
        keys = ", ".join(f"`{k}`" for k in e.kernel_keys) or "none"
        if r is None:
            cells = ["not run"] * len(dtypes)
            note = "" if e.implemented else "no kernel"
        elif r["status"] == "tested" or (r["status"] == "no-kernel" and r["dtypes"]):
            cells = [cell(r["dtypes"].get(dt, {})) for dt in dtypes]
            note = r.get("note", "")
            for d in r["dtypes"].values():
                if d["status"] == "fail" and d.get("failures"):
                    note = d["failures"][0].replace("|", "\\|")[:140]
                    break
                if d["status"] == "skipped" and d.get("skip_reasons") and not note:
                    note = "skipped: " + next(iter(d["skip_reasons"])).replace("|", "\\|")[:120]
        else:
            label = {"symbolic": "prim (no tensor data)", "no-opinfo": "no OpInfo",
                     "no-kernel": "no kernel"}.get(r["status"], r["status"])
            cells = [label] + [""] * (len(dtypes) - 1)
            note = r.get("note", "")
        mark = "yes" if e.implemented else "**no**"
        rows.append([f"`{e.name}`", keys, mark] + cells + [note])
    head = ["op", "kernel", "has kernel"] + [DTYPE_SHORT.get(dt, dt) for dt in dtypes] + ["note"]
    table = tabulate(rows, headers=head, tablefmt="github")
    edge_rows = [[f"`{e.name}`", ", ".join(f"`{k}`" for k in e.kernel_keys),
                  "yes" if e.implemented else "**no**"] for e in edge]
    edge_table = tabulate(edge_rows, headers=["op", "kernel", "has kernel"], tablefmt="github")
    failing = ("\nOps with failing samples: " + ", ".join(f"`{n}`" for n in stats["failing"])
               + ".\n") if stats["failing"] else ""
    dtype_table = tabulate(stats["per_dtype"], headers=["dtype", "ops pass", "ops fail",
                                                        "no kernel", "samples passed"],
                           tablefmt="github")
    return f"""# Core ATen operators in ember's portable kernels

Generated by `scripts/op_coverage.py` from the results of
`tests/python/ops/test_op_samples.py` ({results.get('mode', '?')} mode: at most
{results.get('cap') or 'every'} samples per op and dtype), torch {results.get('torch', '?')}.
`make test` runs both; `EMBER_OPS_FULL=1` runs every OpInfo sample
(about 190,000 with torch 2.13; `EMBER_OPS_SHARD=k/n` splits such a run over
processes or machines, and `--results` merges their results).

The operator list is derived from torch, never kept by hand: every
`torch.ops.aten` overload tagged `core`, each mapped to the kernel key a program
names for it (out variant; `_copy` form of a view; dim-order op for `_to_copy`,
`clone` and `empty`; prim kernel for symbolic-size ops). Samples are PyTorch's
own OpInfo sample inputs, captured at the exact ATen call, exported with ember,
run in libember and compared with eager (float32 1e-5, float64 1e-7, float16 and
bfloat16 ~1e-2, integers and bool exact; NaN positions must match; a float16,
bfloat16 or float32 result may instead match the op computed one float type
wider and rounded; sort and topk indices of tied values must pick the returned
values).

- Each sample is exported with the op under test in `preserve_ops`, so that
  the program calls its own kernel: torch decomposes some core ops above the
  dispatcher (`squeeze.dim`, `upsample_nearest2d.vec`) or in its decomposition
  table (`reflection_pad2d`, `native_layer_norm_backward`).
- A dtype an OpInfo lists but whose samples never reach the ATen op in it
  (softmax on integers computes in float) gets the float32 samples with their
  tensors converted; eager decides: what it runs is compared, and a dtype it
  refuses at this overload ("not implemented for 'Int'") counts as unsupported.
- Ops that no OpInfo reaches (backward ops, Scalar overloads, random ops) run
  hand-written samples (`tests/python/ops/manual_samples.py`) in every dtype
  eager accepts for them. A few ops get hand-written samples besides their
  OpInfo ones, for cases the capped OpInfo samples miss (`convolution`: 3-d
  inputs, plain and transposed); the note column says so.
- Prim ops on symbolic sizes (`sym_size`, `sym_stride`, ...) have no tensor data
  to sample; `tests/c/kernels/test_kernels.c` checks them against torch's answers.

Out-of-range indices are tested separately
(`tests/python/ops/test_op_index_errors.py`), and
`tests/c/kernels/test_op_samples.c` runs every sample program again from C, also
under ASan + UBSan.

## Totals

```
{chr(10).join(summary_lines[:3])}
```

{dtype_table}
{failing}
## Operators

{LEGEND}
{table}

## Edge dialect operators

{edge_table}
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", nargs="+", default=[default_results()],
                    help="results.json of the sample tests (several: the shards of one run)")
    ap.add_argument("--markdown", default=os.path.join(ROOT, "docs", "ops.md"),
                    help="table to write (default docs/ops.md)")
    ap.add_argument("--summary-only", action="store_true", help="print the summary, write nothing")
    args = ap.parse_args()
    missing = [p for p in args.results if not os.path.exists(p)]
    if missing:
        print(f"op coverage: no results at {os.path.relpath(missing[0], ROOT)}; run "
              "pytest tests/python/ops first")
        return 0 if args.summary_only else 1
    results = merge_results(args.results)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from ember import ops_coverage

        entries = ops_coverage.core_ops()
        edge = ops_coverage.edge_dialect_ops()
    lines, stats = summarize(results, entries, edge)
    print("\n".join(lines))
    if not args.summary_only:
        os.makedirs(os.path.dirname(os.path.abspath(args.markdown)), exist_ok=True)
        with open(args.markdown, "w") as f:
            f.write(markdown(results, entries, edge, lines, stats))
        print(f"wrote {os.path.relpath(args.markdown, ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

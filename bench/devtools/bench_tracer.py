"""Event tracer overhead: the committed nanoGPT (KV cache, XNNPACK-delegated)
decoding with `ember-llm`, without a tracer and with `--etdump` (every
instruction and every delegate node of every step timed and recorded), in
alternating runs on 1 and 2 threads; the median of each, and the overhead.

    make bench-tracer        # or: .venv/bin/python bench/devtools/bench_tracer.py

Writes its table to bench/RESULTS.md (section "Event tracer overhead").
Exports build/nanogpt_kv.pte first if it is missing (as `make demo` does).
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from machine import measure_roofline, quote_command, roofline_line, write_section  # noqa: E402

SECTION = "## Event tracer overhead"
TOKENIZER = ROOT / "examples" / "nanogpt" / "tokenizer"
PROMPT = "It is a truth universally acknowledged, that"


def ensure_model(path: Path) -> None:
    if path.exists():
        return
    subprocess.run([sys.executable, str(ROOT / "examples" / "nanogpt" / "export.py"), "--kind",
                    "kv", "--backend", "xnnpack", "--out", str(path)], check=True)


def run_once(exe: Path, model: Path, threads: int, tokens: int, etdump: Path = None) -> Dict:
    cmd = [str(exe), "--model", str(model), "--tokenizer", str(TOKENIZER), "--prompt", PROMPT,
           "--max-new-tokens", str(tokens), "--temperature", "0", "--threads", str(threads),
           "--stats"]
    if etdump is not None:
        cmd += ["--etdump", str(etdump)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
    m = re.search(r"decode:.*\(([\d.]+) tok/s\)", proc.stderr)
    p = re.search(r"prefill:.*\(([\d.]+) tok/s\)", proc.stderr)
    if not m or not p:
        raise RuntimeError(f"no timings in:\n{proc.stderr}")
    out = {"decode": float(m.group(1)), "prefill": float(p.group(1))}
    if etdump is not None:
        out["etdump_kib"] = etdump.stat().st_size / 1024
    return out


def main(argv: List[str] = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ember-llm", default=str(ROOT / "build" / "ember-llm"))
    ap.add_argument("--model", default=str(ROOT / "build" / "nanogpt_kv.pte"))
    ap.add_argument("--runs", type=int, default=7, help="runs of each kind per thread count")
    ap.add_argument("--tokens", type=int, default=120, help="new tokens per run")
    ap.add_argument("--out", default=str(ROOT / "bench" / "RESULTS.md"), help="'' to skip")
    args = ap.parse_args(argv)

    model, exe = Path(args.model), Path(args.ember_llm)
    ensure_model(model)
    roof = measure_roofline((1, 2))
    print(roofline_line(roof), flush=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "trace.etdp"
        for threads in (1, 2):
            off: List[Dict] = []
            on: List[Dict] = []
            for _ in range(args.runs):  # alternate, so drift hits both alike
                off.append(run_once(exe, model, threads, args.tokens))
                on.append(run_once(exe, model, threads, args.tokens, trace))
            d_off = statistics.median(r["decode"] for r in off)
            d_on = statistics.median(r["decode"] for r in on)
            p_off = statistics.median(r["prefill"] for r in off)
            p_on = statistics.median(r["prefill"] for r in on)
            rows.append((threads, d_off, d_on, p_off, p_on, on[-1]["etdump_kib"]))
            print(f"  {threads} thread(s): decode {d_off:.1f} -> {d_on:.1f} tok/s, "
                  f"prefill {p_off:.1f} -> {p_on:.1f} tok/s", flush=True)

    lines = ["| threads | decode tok/s, no tracer | decode tok/s, --etdump | decode overhead "
             "| prefill tok/s, no tracer | prefill tok/s, --etdump | ETDump KiB |",
             "|---|---|---|---|---|---|---|"]
    for t, d_off, d_on, p_off, p_on, kib in rows:
        lines.append(f"| {t} | {d_off:.1f} | {d_on:.1f} | {100 * (d_off / d_on - 1):+.1f}% "
                     f"| {p_off:.1f} | {p_on:.1f} | {kib:.0f} |")
    table = "\n".join(lines)
    print("\n" + table)
    if args.out:
        cmd = quote_command([__file__] + (argv if argv is not None else sys.argv[1:]),
                            "make bench-tracer")
        body = (f"{SECTION}\n\nCommand: `{cmd}`\n\n{roofline_line(roof)}\n\n"
                f"The committed nanoGPT (`examples/nanogpt/ckpt.pt`, KV cache, XNNPACK-delegated, "
                f"as `make demo` exports it), {args.tokens} new tokens after a "
                f"{len(PROMPT.split())}-word prompt, greedy; the median of {args.runs} runs each, "
                f"alternating. With `--etdump` every instruction and every XNNPACK node of every "
                f"prefill and decode step is timed and recorded (a run's whole trace is kept in "
                f"memory, then written); overhead is the time per token added.\n\n{table}\n")
        write_section(Path(args.out), SECTION, body)
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

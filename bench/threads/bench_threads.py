"""Thread scaling: ember and ExecuTorch from 1 thread to every core.

    .venv/bin/python bench/threads/bench_threads.py              # the table into bench/RESULTS.md
    .venv/bin/python bench/threads/bench_threads.py --quick      # fewer steps, to check the script
    .venv/bin/python bench/threads/bench_threads.py --threads 1,2,3,4 --models nanogpt_fp32

Models and what is timed:
- nanogpt_fp32, nanogpt_8da4w: the nanoGPT example's checkpoint
  (examples/nanogpt/ckpt.pt) with its KV cache, XNNPACK-delegated, float32
  and 8da4w (4-bit weights in groups of 32, int8 activations): decode tok/s
  after a 16-token prompt;
- gpt2_8da4w: GPT-2 124M shapes (random weights, seed 1234), 8da4w, decode
  tok/s after a 16-token prompt;
- mobilenet_v2, resnet50: 1x3x224x224 float32 (examples/vision), latency.

Peers on the same machine in the same run: ExecuTorch's runtime (pip
`executorch`, its process-wide pool sized with `_unsafe_reset_threadpool`).
For the CNNs both runtimes run ExecuTorch's XnnpackPartitioner file. For the
LLMs ExecuTorch runs its own KV-cache LLM export (bench/llm/et_llm_export.py:
its llama export path at the same sizes, the same quantization scheme; for
nanoGPT from the same checkpoint's shapes, random weights), because ember's
files call ember's fused attention kernel; both are driven step by step from
Python, so both pay the same per-call overhead.

Each (model, runtime, threads) runs in its own process. A decode rate is
the number of decode steps over their total time; a latency is the median
of timed runs. The table gives each thread count's figure, and, for each
row, the largest slowdown of a thread count against the best figure of any
smaller count ("worst drop": 1.00 means adding threads never made it
slower). The ISA is the best level the CPU reports.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "bench" / "llm"))
NANOGPT = ROOT / "examples" / "nanogpt"
VISION = ROOT / "examples" / "vision"

SECTION = "## Threads: scaling from 1 thread to every core"
MODELS = ["nanogpt_fp32", "nanogpt_8da4w", "gpt2_8da4w", "mobilenet_v2", "resnet50"]
RUNTIMES = ["ember", "executorch"]
PROMPT = 16
GPT2 = dict(n_layer=12, n_head=12, n_embd=768, block_size=1024, vocab_size=50257)
SEED = 1234


def _is_llm(model: str) -> bool:
    return model.startswith(("nanogpt", "gpt2"))


def _gpt(model: str) -> Any:
    sys.path.insert(0, str(NANOGPT))
    import torch
    from model import GPT, GPTConfig

    if model.startswith("nanogpt"):
        return GPT.from_checkpoint(str(NANOGPT / "ckpt.pt")).eval()
    torch.manual_seed(SEED)
    return GPT(GPTConfig(**GPT2, dropout=0.0, bias=True)).eval()


# --------------------------------------------------------------------------- #
# Files
# --------------------------------------------------------------------------- #

def _file(work: Path, model: str, runtime: str) -> Path:
    if not _is_llm(model):
        runtime = "executorch"  # both runtimes run ExecuTorch's file
    return work / f"{model}_{runtime}.pte"


def export(work: Path, model: str, runtimes: List[str]) -> None:
    """Writes the files `model`'s rows run (kept between runs: delete the
    work folder to export again)."""
    import torch

    for rt in runtimes:
        path = _file(work, model, rt)
        if path.exists():
            continue
        t = time.time()
        if _is_llm(model):
            quant = "8da4w" if model.endswith("8da4w") else "none"
            gpt = _gpt(model)
            if rt == "ember":
                sys.path.insert(0, str(NANOGPT))
                from kv_cache import export_kv

                path.write_bytes(export_kv(copy.deepcopy(gpt), backend="xnnpack", quant=quant,
                                           group_size=32).buffer)
            else:
                import et_llm_export

                et_llm_export.export_executorch_llm(
                    gpt, path, qmode=None if quant == "none" else quant, group_size=32,
                    max_context=min(256, gpt.config.block_size))
        else:
            sys.path.insert(0, str(VISION))
            from executorch.backends.xnnpack.partition.xnnpack_partitioner import \
                XnnpackPartitioner
            from executorch.exir import to_edge_transform_and_lower
            from models import build

            net = build(model)
            x = torch.randn(1, 3, 224, 224, generator=torch.Generator().manual_seed(SEED))
            prog = to_edge_transform_and_lower(torch.export.export(net, (x,)),
                                               partitioner=[XnnpackPartitioner()])
            path.write_bytes(prog.to_executorch().buffer)
        print(f"  exported {path.name} in {time.time() - t:.0f} s", flush=True)


# --------------------------------------------------------------------------- #
# One row, in a child process
# --------------------------------------------------------------------------- #

def _method(runtime: str, path: Path, threads: int) -> Any:
    if runtime == "ember":
        import ember.runtime as er

        return er.Runtime.get().load_program(path.read_bytes()).load_method(
            "forward", num_threads=threads)
    from executorch.extension.pybindings.portable_lib import (_threadpool_get_thread_count,
                                                               _unsafe_reset_threadpool)
    from executorch.runtime import Runtime

    _unsafe_reset_threadpool(threads)
    if _threadpool_get_thread_count() != threads:
        raise RuntimeError(f"ExecuTorch kept {_threadpool_get_thread_count()} threads")
    import et_llm_export

    et_llm_export.load_runtime_ops()
    return Runtime.get().load_program(str(path)).load_method("forward")


def run_row(model: str, runtime: str, threads: int, work: Path, quick: bool) -> Dict[str, Any]:
    import torch

    torch.set_num_threads(1)  # this process's own tensors; the runtimes have their pools
    method = _method(runtime, _file(work, model, runtime), threads)
    if _is_llm(model):
        steps = 16 if quick else 96  # within nanoGPT's 128 positions
        g = torch.Generator().manual_seed(SEED)
        vocab = 4096 if model.startswith("nanogpt") else GPT2["vocab_size"]
        prompt = torch.randint(0, vocab, (1, PROMPT), generator=g)
        out = method.execute([prompt, torch.tensor([0])])[0]
        token = int(out.reshape(-1, out.shape[-1])[-1].argmax())
        times = []
        for pos in range(PROMPT, PROMPT + steps):
            t0 = time.perf_counter()
            out = method.execute([torch.tensor([[token]]), torch.tensor([pos])])[0]
            times.append(time.perf_counter() - t0)
            token = int(out.reshape(-1, out.shape[-1])[-1].argmax())
        return {"value": len(times) / sum(times), "unit": "tok/s"}
    x = torch.randn(1, 3, 224, 224, generator=torch.Generator().manual_seed(SEED))
    for _ in range(2 if quick else 5):
        method.execute([x])
    times = []
    for _ in range(5 if quick else 30):
        t0 = time.perf_counter()
        method.execute([x])
        times.append(time.perf_counter() - t0)
    return {"value": statistics.median(times) * 1e3, "unit": "ms"}


# --------------------------------------------------------------------------- #
# Driver and table
# --------------------------------------------------------------------------- #

def _child(model: str, runtime: str, threads: int, work: Path, quick: bool) -> Dict[str, Any]:
    cmd = [sys.executable, __file__, "--row", f"{model}:{runtime}:{threads}",
           "--workdir", str(work)] + (["--quick"] if quick else [])
    proc = subprocess.run(cmd, capture_output=True, text=True)
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode != 0 or not line:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": tail[:200]}
    return json.loads(line[-1][len("RESULT "):])


def worst_drop(values: List[Optional[float]], higher_better: bool) -> Optional[float]:
    """The largest slowdown of a thread count against the best of the
    smaller counts (1.0: never slower); None with fewer than two figures."""
    best: Optional[float] = None
    worst = 1.0
    seen = 0
    for v in values:
        if v is None:
            continue
        seen += 1
        if best is not None:
            drop = best / v if higher_better else v / best
            worst = max(worst, drop)
            best = max(best, v) if higher_better else min(best, v)
        else:
            best = v
    return worst if seen >= 2 else None


def format_table(results: Dict[Tuple[str, str], Dict[int, Dict[str, Any]]],
                 threads: List[int], isa: str) -> str:
    head = ["model", "runtime", "unit"] + [f"{t} thr" for t in threads] + ["worst drop", "ISA"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (model, runtime), by_t in results.items():
        unit = next((r["unit"] for r in by_t.values() if "unit" in r), "")
        cells, values = [], []
        for t in threads:
            r = by_t.get(t, {})
            if "value" in r:
                cells.append(f"{r['value']:.0f}" if unit == "tok/s" else f"{r['value']:.2f}")
                values.append(r["value"])
            else:
                cells.append("error: " + r.get("error", "not run") if r else "-")
                values.append(None)
        drop = worst_drop(values, unit == "tok/s")
        lines.append("| " + " | ".join([model, runtime, unit] + cells +
                                       [f"{drop:.2f}" if drop else "-", isa]) + " |")
    return "\n".join(lines)


def _isa() -> str:
    from machine import cpu_flags

    flags = cpu_flags()
    for f in ("amx_tile", "avx512_vnni", "avx512f", "avx_vnni", "avx2", "asimd", "neon"):
        if f in flags:
            return {"amx_tile": "AVX-512 + AMX", "avx512_vnni": "AVX-512 VNNI",
                    "avx512f": "AVX-512", "avx_vnni": "AVX2 VNNI", "avx2": "AVX2",
                    "asimd": "NEON", "neon": "NEON"}[f]
    return "scalar"


def default_threads() -> List[int]:
    from machine import cpu_count_usable

    n = cpu_count_usable()
    out = [t for t in (1, 2, 4, 8, 16, 32, 64) if t <= n]
    return out + ([n] if n not in out else [])


def main(argv: Optional[List[str]] = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer steps and runs")
    ap.add_argument("--threads", help="thread counts (default 1, 2, 4, ... up to every core)")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--runtimes", default=",".join(RUNTIMES))
    ap.add_argument("--workdir", default=str(ROOT / "build-bench" / "bench-threads"))
    ap.add_argument("--out", default=str(ROOT / "bench" / "RESULTS.md"),
                    help="results file ('' to skip; --quick never writes)")
    ap.add_argument("--row", help=argparse.SUPPRESS)  # child mode: model:runtime:threads
    args = ap.parse_args(argv)
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    if args.row:
        model, runtime, t = args.row.split(":")
        print("RESULT " + json.dumps(run_row(model, runtime, int(t), work, args.quick)))
        return

    from machine import machine_line, quote_command, write_section

    models = [m for m in args.models.split(",") if m]
    runtimes = [r for r in args.runtimes.split(",") if r]
    threads = [int(t) for t in args.threads.split(",")] if args.threads else default_threads()
    isa = _isa()
    print(f"machine: {machine_line()}; threads {threads}", flush=True)
    results: Dict[Tuple[str, str], Dict[int, Dict[str, Any]]] = {}
    for model in models:
        try:
            export(work, model, runtimes)
        except Exception as e:  # a model that cannot be made gets a row saying why
            for rt in runtimes:
                results[(model, rt)] = {t: {"error": f"export: {e}"[:200]} for t in threads}
            continue
        for rt in runtimes:
            results[(model, rt)] = {}
            for t in threads:
                r = _child(model, rt, t, work, args.quick)
                results[(model, rt)][t] = r
                shown = f"{r['value']:.2f} {r['unit']}" if "value" in r else r["error"]
                print(f"  {model} {rt} {t} threads: {shown}", flush=True)
    table = format_table(results, threads, isa)
    print("\n" + table)
    if args.out and not args.quick:
        cmd = quote_command([__file__] + (argv if argv is not None else sys.argv[1:]),
                            "make bench-threads")
        body = (f"Command: `{cmd}`\n\nMachine: {machine_line()}.\n\n"
                "Decode tok/s (higher is better) or latency ms (lower is better) at each "
                "thread count, each in its own process; worst drop: the largest slowdown "
                "of a thread count against the best smaller count (1.00: more threads were "
                "never slower). ExecuTorch runs its own LLM export (same sizes and scheme) "
                "and, for the CNNs, the same file as ember.\n\n" + table + "\n")
        write_section(Path(args.out), SECTION, body)
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

"""CNN benchmark: twelve torchvision classifiers, 1x3x224x224, float32 and
static int8, ember vs ExecuTorch (XNNPACK) vs PyTorch eager, on 1 and 2 threads.

    .venv/bin/python bench/cnn/bench_cnn.py            # the full tables into bench/RESULTS.md
    .venv/bin/python bench/cnn/bench_cnn.py --quick --models resnet18,mobilenet_v3_small
                                                       # fewer runs, to check the script
    ... --threads 1 --precisions int8                  # a subset of the rows

A model's first run lowers it four ways (float32 and int8, each partitioner:
about a minute in all on an idle core, most of it ExecuTorch's partitioner;
`--jobs 2` lowers two models at once, `--export-only` stops there). The files are kept in the work directory and
each is redone when what it depends on changes: the lowering code, the models,
torch and executorch, and for ember's files ember's Python sources. Each row
then costs a process start and its timed runs.

The models come from examples/vision/models.py: torchvision's architectures
written out (torchvision does not install beside this torch), random weights
from a fixed seed, batch norms with random statistics, in eval mode. Rows, for
each model and thread count:

- float32
  - ember: ember's XnnpackPartitioner, ember's runtime (`ember.runtime`,
    `load_method(..., num_threads=N)`);
  - executorch: ExecuTorch's XnnpackPartitioner and runtime (pip `executorch`,
    its thread pool sized with `_unsafe_reset_threadpool(N)`);
  - ember on executorch's file: the ExecuTorch-lowered .pte run by ember;
  - eager: PyTorch eager (`torch.set_num_threads(N)`).
- static int8: the model quantized by ExecuTorch's `XNNPACKQuantizer`
  (symmetric, per-channel weights, static activations) calibrated on a few
  seeded random images, then the same three rows as float32 with that
  quantized graph (ember's partitioner where it takes it). No eager row:
  PyTorch runs the quantized graph as float32 with fake quantization, which
  says nothing about int8 speed.

Each (row, threads) runs in its own process on the same saved input: a few
warm-up runs, then the median latency of timed runs. A program that a
partitioner cannot produce or a runtime cannot load is a row with the first
line of its error. Float32 outputs are compared with eager's; int8 outputs
with ExecuTorch's runtime on its own file, in steps of the output's
quantization, and with float32 eager (the quantization error). The ratio is
latency / executorch's at the same thread count and precision (below 1:
faster than ExecuTorch); under each table, the ember / executorch ratio per
model, with its geometric mean and maximum over the models. GFLOP/s counts
the convolutions' and linear layers' multiply-adds (2 FLOPs each) and is also
given as a share of the FMA peak that bench/roofline/roofline.c measures in
the same run.
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "examples" / "vision"))

import models as vision  # noqa: E402  (examples/vision/models.py)

SECTION = "## CNN: torchvision classifiers, 1x3x224x224, float32 and static int8"
SEED = vision.SEED
CALIBRATION_IMAGES = 4
PRECISIONS = ["fp32", "int8"]
ROWS = {"fp32": ["executorch", "ember", "ember on executorch's file", "eager"],
        "int8": ["executorch", "ember", "ember on executorch's file"]}
REF_ROW = "executorch"
# --before PYTHON: ember's rows again, run by another checkout's ember
BEFORE = " (before)"


def base_row(row: str) -> str:
    return row[:-len(BEFORE)] if row.endswith(BEFORE) else row

# (precision, row) -> which lowering's file it runs
FILES = {("fp32", "ember"): "ember_fp32", ("fp32", "executorch"): "executorch_fp32",
         ("fp32", "ember on executorch's file"): "executorch_fp32",
         ("int8", "ember"): "ember_int8", ("int8", "executorch"): "executorch_int8",
         ("int8", "ember on executorch's file"): "executorch_int8"}
LOWERINGS = sorted(set(FILES.values()))


def first_line(text: str) -> str:
    lines = [ln.strip() for ln in str(text).strip().splitlines() if ln.strip()]
    return lines[0][:200] if lines else "(no message)"


# --------------------------------------------------------------------------- #
# Which instruction set runs
# --------------------------------------------------------------------------- #

def isa_name(int8: bool, runtime: str) -> str:
    """The kernel level this CPU's flags select. ember's runtime does not report
    its choice, so this follows its rules (src/kernels/optimized/cpu.c): AVX-512
    with F/DQ/BW/VL, else AVX2 with FMA and F16C, else NEON on AArch64, else
    scalar, lowered by EMBER_ISA; int8 products add VNNI (AVX-512 VNNI, or
    AVX-VNNI at the AVX2 level) or the NEON dot product where the CPU has them.
    XNNPACK (ExecuTorch) picks its kernels from the same flags; the name given
    for it is the same machine's level."""
    from machine import all_cpu_flags

    f = all_cpu_flags()
    levels = ["scalar"]
    if {"avx", "avx2", "fma", "f16c"} <= f:
        levels.append("avx2")
        if {"avx512f", "avx512dq", "avx512bw", "avx512vl"} <= f:
            levels.append("avx512")
    if "asimd" in f:
        levels.append("neon")
    level = levels[-1]
    env = os.environ.get("EMBER_ISA")
    if runtime == "ember" and env in levels:
        level = env
    if int8:
        dot = {"avx512": "avx512_vnni", "avx2": "avx_vnni", "neon": "asimddp"}.get(level)
        if dot in f:
            level += "+" + {"asimddp": "dot"}.get(dot, "vnni")
    return level


# --------------------------------------------------------------------------- #
# FLOPs
# --------------------------------------------------------------------------- #

def count_flops(model, x) -> float:
    """2 x the multiply-adds of every convolution and linear layer."""
    import torch
    import torch.nn as nn

    total = [0.0]

    def conv_hook(m: nn.Conv2d, _inp: Any, out: torch.Tensor) -> None:
        k = m.kernel_size[0] * m.kernel_size[1] * (m.in_channels // m.groups)
        total[0] += 2.0 * out.numel() * k

    def linear_hook(m: nn.Linear, _inp: Any, out: torch.Tensor) -> None:
        total[0] += 2.0 * out.numel() * m.in_features

    hooks = [m.register_forward_hook(conv_hook if isinstance(m, nn.Conv2d) else linear_hook)
             for m in model.modules() if isinstance(m, (nn.Conv2d, nn.Linear))]
    with torch.no_grad():
        model(x)
    for h in hooks:
        h.remove()
    return total[0]


# --------------------------------------------------------------------------- #
# Exports (cached per model, redone when their sources change)
# --------------------------------------------------------------------------- #

def _sources_key(lowering: str) -> str:
    """What a lowering's file depends on: how this script lowers and quantizes,
    the models, the installed torch and executorch, and for ember's lowerings
    ember's Python sources (so a change to ember's partitioner redoes only
    ember's files)."""
    import importlib.metadata as md

    h = hashlib.sha256(f"{SEED} {CALIBRATION_IMAGES}".encode())
    h.update(_RECIPE.encode())
    h.update(Path(vision.__file__).read_bytes())
    if lowering.startswith("ember"):
        for f in sorted((ROOT / "python" / "ember").rglob("*.py")):
            h.update(str(f.relative_to(ROOT)).encode())
            h.update(f.read_bytes())
    h.update(f"executorch={md.version('executorch')} torch={md.version('torch')}".encode())
    return h.hexdigest()[:16]


def pte_path(work: Path, name: str, lowering: str) -> Path:
    return work / f"{name}_{lowering}.pte"


def export_error(work: Path, name: str, lowering: str) -> Optional[str]:
    """The first line of the error that stopped this lowering, if it failed."""
    err = work / f"{name}_{lowering}.err"
    return err.read_text() if err.exists() else None


def _lower(work: Path, name: str, lowering: str, make: Callable[[], bytes]) -> None:
    t = time.time()
    (work / f"{name}_{lowering}.err").unlink(missing_ok=True)
    try:
        pte_path(work, name, lowering).write_bytes(make())
        print(f"  {name}: {lowering} lowered in {time.time() - t:.0f} s", flush=True)
    except Exception as e:  # a partitioner that cannot take the model is a result
        pte_path(work, name, lowering).unlink(missing_ok=True)
        msg = f"{type(e).__name__}: {first_line(str(e))}"
        (work / f"{name}_{lowering}.err").write_text(msg)
        print(f"  {name}: {lowering} failed: {msg}", flush=True)


def quantize(model, x):
    """model quantized by ExecuTorch's XNNPACKQuantizer (static int8, per-channel
    weights), calibrated on CALIBRATION_IMAGES seeded random images."""
    import torch
    from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
        XNNPACKQuantizer, get_symmetric_quantization_config)
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    quantizer = XNNPACKQuantizer().set_global(
        get_symmetric_quantization_config(is_per_channel=True, is_dynamic=False))
    prepared = prepare_pt2e(torch.export.export(model, (x,)).module(), quantizer)
    g = torch.Generator().manual_seed(SEED + 100)
    with torch.no_grad():
        for _ in range(CALIBRATION_IMAGES):
            prepared(torch.randn(1, 3, 224, 224, generator=g))
    return convert_pt2e(prepared)


def export_model(work: Path, name: str) -> None:
    """Writes the model's four files (or their errors) where their key changed."""
    keys = {lw: _sources_key(lw) for lw in LOWERINGS}

    def stale(lowering: str) -> bool:
        stamp = work / f"{name}_{lowering}.key"
        return not (stamp.exists() and stamp.read_text() == keys[lowering])

    todo = [lw for lw in LOWERINGS if stale(lw)]
    if not todo:
        return
    import torch
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import \
        XnnpackPartitioner as EtXnnpack
    from executorch.exir import to_edge_transform_and_lower as et_lower

    from ember import to_edge_transform_and_lower as ember_lower
    from ember.backends.xnnpack import XnnpackPartitioner as EmberXnnpack

    def done(lowering: str) -> None:
        (work / f"{name}_{lowering}.key").write_text(keys[lowering])

    x = torch.load(work / "input.pt")
    model = vision.build(name)
    if "ember_fp32" in todo:
        _lower(work, name, "ember_fp32", lambda: ember_lower(
            torch.export.export(model, (x,)), partitioner=[EmberXnnpack()]).to_executorch().buffer)
        done("ember_fp32")
    if "executorch_fp32" in todo:
        _lower(work, name, "executorch_fp32", lambda: et_lower(
            torch.export.export(model, (x,)), partitioner=[EtXnnpack()]).to_executorch().buffer)
        done("executorch_fp32")
    int8 = [lw for lw in todo if lw.endswith("_int8")]
    if not int8:
        return

    t = time.time()
    try:
        converted = quantize(model, x)
    except Exception as e:  # as a lowering that fails: both int8 rows say why
        msg = f"quantizing: {type(e).__name__}: {first_line(str(e))}"
        for lowering in int8:
            pte_path(work, name, lowering).unlink(missing_ok=True)
            (work / f"{name}_{lowering}.err").write_text(msg)
            done(lowering)
        (work / f"{name}_int8.json").write_text(json.dumps({"output_step": None}))
        print(f"  {name}: {msg}", flush=True)
        return
    out = converted.graph.output_node().args[0]
    out = out[0] if isinstance(out, (list, tuple)) else out
    # one output quantization step: the scale of the dequantize that ends the graph
    step = float(out.args[1]) \
        if out.target == torch.ops.quantized_decomposed.dequantize_per_tensor.default else None
    (work / f"{name}_int8.json").write_text(json.dumps({"output_step": step}))
    print(f"  {name}: quantized and calibrated in {time.time() - t:.0f} s", flush=True)
    if "ember_int8" in int8:
        _lower(work, name, "ember_int8", lambda: ember_lower(
            torch.export.export(converted, (x,)), partitioner=[EmberXnnpack()]).to_executorch().buffer)
        done("ember_int8")
    if "executorch_int8" in int8:
        _lower(work, name, "executorch_int8", lambda: et_lower(
            torch.export.export(converted, (x,)), partitioner=[EtXnnpack()]).to_executorch().buffer)
        done("executorch_int8")


# how the files are made, read once at import (the file may change while a run goes on)
_RECIPE = inspect.getsource(quantize) + inspect.getsource(export_model)


def export_all(work: Path, names: List[str], jobs: int) -> None:
    """export_model for each model, `jobs` models at a time in child processes
    (lowering is mostly one thread of Python)."""
    if jobs <= 1:
        for name in names:
            export_model(work, name)
        return
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for _ in pool.map(export_model, [work] * len(names), names):
            pass


# --------------------------------------------------------------------------- #
# One row in a child process
# --------------------------------------------------------------------------- #

def _time(fn: Callable[[], Any], warmup: int, runs: int, min_s: float) -> List[float]:
    """Milliseconds of each timed run (at least `runs`, and at least min_s in all)."""
    for _ in range(warmup):
        fn()
    out: List[float] = []
    start = time.perf_counter()
    while len(out) < runs or time.perf_counter() - start < min_s:
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1e3)
        if len(out) >= 10 * runs:
            break
    return out


def out_path(work: Path, name: str, prec: str, row: str, threads: int) -> Path:
    return work / f"out_{name}_{prec}_{row.replace(' ', '_').replace(chr(39), '')}_{threads}.pt"


def run_row(name: str, prec: str, row: str, threads: int, work: Path,
            quick: bool) -> Dict[str, Any]:
    import torch

    x = torch.load(work / "input.pt")
    warmup, runs, min_s = (2, 5, 0.0) if quick else (3, 20, 2.0)
    if row == "eager":
        torch.set_num_threads(threads)
        model = vision.build(name)

        @torch.no_grad()
        def call() -> torch.Tensor:
            return model(x)
    elif row == "executorch":
        from executorch.extension.pybindings.portable_lib import (
            _threadpool_get_thread_count, _unsafe_reset_threadpool)
        from executorch.runtime import Runtime

        # ExecuTorch 1.5.1 sizes its process-wide thread pool with this
        # experimental call (there is no per-method option)
        _unsafe_reset_threadpool(threads)
        if _threadpool_get_thread_count() != threads:
            raise RuntimeError(f"ExecuTorch kept {_threadpool_get_thread_count()} threads")
        method = Runtime.get().load_program(
            str(pte_path(work, name, FILES[prec, row]))).load_method("forward")

        def call() -> torch.Tensor:
            return method.execute([x])[0]
    else:
        from ember.runtime import Runtime as EmberRuntime

        method = EmberRuntime.get().load_program(
            str(pte_path(work, name, FILES[prec, base_row(row)]))).load_method(
                "forward", num_threads=threads)

        def call() -> torch.Tensor:
            return method.execute([x])[0]

    out = call()
    times = _time(call, warmup, runs, min_s)
    torch.save(out, out_path(work, name, prec, row, threads))
    return {"median_ms": statistics.median(times), "min_ms": min(times), "runs": len(times)}


def child(spec: str, work: Path, quick: bool) -> None:
    """Runs one row; prints RESULT {json}, or ERROR <first line> and exits 1."""
    name, prec, row, threads = spec.split("|")
    try:
        res = run_row(name, prec, row, int(threads), work, quick)
    except Exception as e:
        print(f"ERROR {type(e).__name__}: {first_line(str(e))}", flush=True)
        sys.exit(1)
    print("RESULT " + json.dumps(res), flush=True)


def spawn(name: str, prec: str, row: str, threads: int, work: Path,
          quick: bool, python: str = sys.executable) -> Dict[str, Any]:
    """One row in a child process of `python` (another checkout's interpreter
    runs that checkout's ember: the rows marked BEFORE)."""
    lowering = FILES.get((prec, base_row(row)))
    err = export_error(work, name, lowering) if lowering else None
    if err:
        return {"error": f"not lowered: {err}"}
    proc = subprocess.run([python, __file__, "--row", f"{name}|{prec}|{row}|{threads}",
                           "--workdir", str(work)] + (["--quick"] if quick else []),
                          capture_output=True, text=True)
    for ln in proc.stdout.splitlines():
        if ln.startswith("RESULT "):
            return json.loads(ln[len("RESULT "):])
        if ln.startswith("ERROR "):
            return {"error": ln[len("ERROR "):]}
    # a crash: no line of ours; the signal or the last line of stderr
    why = f"signal {-proc.returncode}" if proc.returncode < 0 else f"exit {proc.returncode}"
    tail = proc.stderr.strip().splitlines()[-1:] or [""]
    return {"error": f"crashed ({why}) {tail[0][:160]}".strip()}


# --------------------------------------------------------------------------- #
# Driver
# --------------------------------------------------------------------------- #

Result = Tuple[str, str, str, int, Dict[str, Any]]  # model, precision, row, threads, figures


def main(argv: Optional[List[str]] = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="5 timed runs instead of >= 20 and >= 2 s; never writes the results")
    ap.add_argument("--workdir", default=str(ROOT / "build-bench" / "bench-cnn"))
    ap.add_argument("--models", default=",".join(vision.MODELS),
                    help=f"comma-separated, of: {', '.join(vision.MODELS)}")
    ap.add_argument("--threads", default="1,2", help="thread counts (comma-separated)")
    ap.add_argument("--precisions", default=",".join(PRECISIONS), help="fp32, int8 or both")
    ap.add_argument("--out", default=str(ROOT / "bench" / "RESULTS.md"),
                    help="results file to update ('' to skip; --quick never writes)")
    ap.add_argument("--jobs", type=int, default=1,
                    help="models lowered at once, each in its own process (default 1)")
    ap.add_argument("--export-only", action="store_true",
                    help="write the programs into the work directory and stop")
    ap.add_argument("--before", metavar="PYTHON",
                    help="also run ember's rows with this interpreter (another checkout's "
                         ".venv/bin/python, so its ember): rows marked (before), same files")
    ap.add_argument("--row", help=argparse.SUPPRESS)  # child mode: MODEL|PRECISION|ROW|THREADS
    args = ap.parse_args(argv)
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)

    if args.row:
        child(args.row, work, args.quick)
        return

    import torch
    from machine import measure_roofline, quote_command, roofline_line, write_section

    threads = [int(t) for t in args.threads.split(",")]
    names = [m.strip() for m in args.models.split(",") if m.strip()]
    precs = [p.strip() for p in args.precisions.split(",") if p.strip()]
    for m in names:
        if m not in vision.MODELS:
            ap.error(f"unknown model {m!r}; known: {', '.join(vision.MODELS)}")
    for p in precs:
        if p not in PRECISIONS:
            ap.error(f"unknown precision {p!r}; known: {', '.join(PRECISIONS)}")
    start = time.time()
    if not (work / "input.pt").exists():
        torch.save(torch.randn(1, 3, 224, 224, generator=torch.Generator().manual_seed(SEED)),
                   work / "input.pt")
    export_all(work, names, args.jobs)
    if args.export_only:
        print(f"{len(names)} model(s) lowered in {time.time() - start:.0f} s", flush=True)
        return
    roof = measure_roofline(threads, quick=args.quick)
    print(roofline_line(roof), flush=True)
    x = torch.load(work / "input.pt")
    from ember.runtime import Runtime as EmberRuntime

    results: List[Result] = []
    flops: Dict[str, float] = {}
    for name in names:
        t0 = time.time()
        model = vision.build(name)
        with torch.no_grad():
            want = model(x)
        flops[name] = count_flops(model, x)
        step = json.loads((work / f"{name}_int8.json").read_text())["output_step"]
        print(f"{name}: {flops[name] / 1e9:.2f} GFLOP per image", flush=True)
        for prec in precs:
            rows = [(r, sys.executable) for r in ROWS[prec]]
            if args.before:
                rows += [(r + BEFORE, args.before) for r in ROWS[prec] if r.startswith("ember")]
            for row, python in rows:
                for t in threads:
                    res = spawn(name, prec, row, t, work, args.quick, python)
                    if "error" in res:
                        print(f"  {prec} {row}, {t} threads: {res['error']}", flush=True)
                        results.append((name, prec, row, t, res))
                        continue
                    got = torch.load(out_path(work, name, prec, row, t))
                    res["isa"] = "-" if row == "eager" else \
                        isa_name(prec == "int8", "ember" if row.startswith("ember") else row)
                    res["max_abs_diff"] = float((got - want).abs().max())
                    res["max_abs_ref"] = float(want.abs().max())
                    res["gflops"] = flops[name] / (res["median_ms"] * 1e-3) / 1e9
                    ref = out_path(work, name, prec, REF_ROW, t)
                    if prec == "int8" and row != REF_ROW and ref.exists():
                        diff = float((got - torch.load(ref)).abs().max())
                        # in output steps; absolute where the graph does not end
                        # in a dequantize (no single output scale)
                        res["vs_ref"] = f"{diff / step:.1f}" if step else f"{diff:.1e} abs"
                    if (prec, base_row(row)) in FILES:
                        try:
                            meta = EmberRuntime.get().load_program(str(pte_path(
                                work, name, FILES[prec, base_row(row)]))).metadata("forward")
                            res["plan"] = f"{meta.num_instructions} / {meta.num_delegates}"
                        except Exception:
                            res["plan"] = "?"
                    print(f"  {prec} {row:<37} {t} thread{'s' if t > 1 else ' '}  "
                          f"{res['median_ms']:8.2f} ms  max |diff| {res['max_abs_diff']:.2e}"
                          + (f" ({res['vs_ref']} vs executorch, in steps)" if "vs_ref" in res
                             else ""), flush=True)
                    results.append((name, prec, row, t, res))
        print(f"  {name} took {time.time() - t0:.0f} s", flush=True)

    tables = {p: format_table([r for r in results if r[1] == p], roof, p) + "\n\n"
              + format_summary([r for r in results if r[1] == p], threads) for p in precs}
    for p in precs:
        print(f"\n{p}\n\n{tables[p]}")
    print(f"\n{len(names)} model(s) in {time.time() - start:.0f} s", flush=True)
    if args.out and not args.quick:
        args_line = list(argv if argv is not None else sys.argv[1:])
        if args.before:  # where another checkout lives says nothing: name what it is
            args_line = [a if a != args.before else "<checkout>/.venv/bin/python"
                         for a in args_line]
        cmd = quote_command([__file__] + args_line, "make bench-cnn")
        flops_note = ", ".join(f"{m} {flops[m] / 1e9:.2f}" for m in names)
        before_note = ""
        if args.before:
            # the interpreter's checkout: <checkout>/.venv/bin/python
            checkout = Path(args.before).absolute().parents[2]
            commit = subprocess.run(["git", "-C", str(checkout), "log", "-1", "--format=%h"],
                                    capture_output=True, text=True).stdout.strip()
            before_note = (f"Rows marked (before): ember's runtime at commit {commit or '?'}, "
                           "run by that checkout's own interpreter on the same files. ")
        body = (f"{SECTION}\n\nCommand: `{cmd}`\n\n{roofline_line(roof)}\n\n"
                "Models: examples/vision/models.py (torchvision's architectures, random weights "
                f"from seed {SEED}, batch norms with random statistics folded by each "
                f"partitioner); torch {torch.__version__}. Median latency of timed runs after "
                "warm-up, each (row, threads) in its own process. vs executorch: latency / "
                "executorch's at the same thread count and precision (below 1: faster). "
                "ISA: the kernel level the CPU's flags select (ember's rules in "
                "src/kernels/optimized/cpu.c; XNNPACK reads the same flags). max |diff|: largest "
                "absolute difference from float32 eager's output (the largest |output| beside "
                "it). GFLOP/s counts the convolutions' and linear layers' multiply-adds as 2 "
                f"FLOPs (GFLOP per image: {flops_note}); % peak is of the fp32 FMA peak at that "
                "thread count. Instructions / delegates: the program's instruction count and "
                "how many are delegate calls (1 / 1: the whole model in one XNNPACK delegate). "
                f"{before_note}\n\n"
                f"### float32\n\n{tables.get('fp32', '(not run)')}\n\n"
                "### static int8\n\nExecuTorch's XNNPACKQuantizer, "
                "get_symmetric_quantization_config(is_per_channel=True) (static activations), "
                f"calibrated on {CALIBRATION_IMAGES} seeded random images. steps vs executorch: "
                "largest difference from ExecuTorch's runtime on its own file, in steps of the "
                "output's quantization (\"abs\": absolute, where the output has no single "
                "scale). A row with an error: the lowering or the load failed; the first line "
                f"of its message.\n\n{tables.get('int8', '(not run)')}\n")
        write_section(Path(args.out), SECTION, body)
        print(f"wrote {args.out}")


def format_table(results: List[Result], roof: Dict[str, Any], prec: str) -> str:
    from tabulate import tabulate

    ref = {(m, t): r for m, _, row, t, r in results if row == REF_ROW and "median_ms" in r}
    out = []
    for m, _, row, t, r in results:
        if "median_ms" not in r:
            # the message goes last, so that it does not widen the figures' columns
            out.append([m, row, t, "failed"] + [""] * 5 + [r["error"]])
            continue
        rr = ref.get((m, t))
        cells = [m, row, t, f"{r['median_ms']:.2f}",
                 f"{r['median_ms'] / rr['median_ms']:.2f}" if rr else "-", r.get("isa", "-"),
                 f"{r['gflops']:.1f}"]
        if prec == "fp32":
            cells.append(f"{100 * r['gflops'] / roof['fma_gflops'][t]:.0f}%")
        else:
            cells.append(r.get("vs_ref", "-"))
        cells += [f"{r['max_abs_diff']:.1e} (of {r['max_abs_ref']:.2g})", r.get("plan", "-")]
        out.append(cells)
    head = ["model", "row", "threads", "median ms", "vs executorch", "ISA"]
    head += ["GFLOP/s", "% FMA peak"] if prec == "fp32" else ["GOP/s", "steps vs executorch"]
    head += ["max |diff| vs fp32 eager", "instructions / delegates, or the error"]
    return tabulate(out, headers=head, tablefmt="github", disable_numparse=True)


def format_summary(results: List[Result], threads: List[int]) -> str:
    """ember / executorch latency per model and thread count (and ember
    (before) / executorch where those rows ran), then the geometric mean and the
    maximum over the models where both ran."""
    from tabulate import tabulate

    ms = {(m, row, t): r["median_ms"] for m, _, row, t, r in results if "median_ms" in r}
    names = list(dict.fromkeys(m for m, *_ in results))
    rows = ["ember"] + (["ember" + BEFORE] if any(r == "ember" + BEFORE for _, _, r, _, _ in results)
                        else [])
    cols = [(row, t) for t in threads for row in reversed(rows)]
    ratios: Dict[Tuple[str, int], List[float]] = {c: [] for c in cols}
    out = []
    for m in names:
        cells: List[str] = [m]
        for row, t in cols:
            if (m, row, t) in ms and (m, REF_ROW, t) in ms:
                ratios[row, t].append(ms[m, row, t] / ms[m, REF_ROW, t])
                cells.append(f"{ratios[row, t][-1]:.2f}")
            else:
                cells.append("-")
        out.append(cells)
    for label, fn in [("geomean", lambda v: math.exp(statistics.fmean(map(math.log, v)))),
                      ("max", max)]:
        out.append([f"**{label}**"] + [f"{fn(ratios[c]):.2f} (of {len(ratios[c])})"
                                       if ratios[c] else "-" for c in cols])
    head = ["ember / executorch"] + [
        f"{t} thread{'s' if t > 1 else ''}" + (", before" if row.endswith(BEFORE) else "")
        for row, t in cols]
    return tabulate(out, headers=head, tablefmt="github", disable_numparse=True)


if __name__ == "__main__":
    main()

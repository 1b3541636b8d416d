"""CNN benchmark: MobileNetV2- and ResNet-18-shaped models, 1x3x224x224 fp32,
ember vs ExecuTorch (XNNPACK) vs PyTorch eager, on 1 and 2 threads.

    .venv/bin/python bench/cnn/bench_cnn.py            # the full table into bench/RESULTS.md
    .venv/bin/python bench/cnn/bench_cnn.py --quick    # fewer runs, to check the script

The two models are written here (torchvision does not install beside this
torch), with torchvision's layer shapes, random weights (fixed seed) and batch
norms with random statistics, in eval mode: both partitioners fold each batch
norm into its convolution. Rows, for each model and thread count:

- ember: ember's XnnpackPartitioner, ember's runtime (`ember.runtime`,
  `load_method(..., num_threads=N)`);
- executorch: ExecuTorch's XnnpackPartitioner and runtime (pip `executorch`,
  its thread pool sized with `_unsafe_reset_threadpool(N)`);
- ember on executorch's file: the ExecuTorch-lowered .pte run by ember;
- eager: PyTorch eager (`torch.set_num_threads(N)`).

Each (row, threads) runs in its own process on the same saved input: a few
warm-up runs, then the median latency of timed runs. Every row's output is
compared with eager's (max abs diff, beside the largest |output|), so a fast
wrong answer cannot hide. The ratio is latency / executorch's at the same
thread count (below 1: faster than ExecuTorch). GFLOP/s counts the
convolutions' and the classifier's multiply-adds (2 FLOPs each) and is also
given as a share of the FMA peak that bench/roofline/roofline.c measures in
the same run.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

SECTION = "## CNN: MobileNetV2 and ResNet-18 shapes, 1x3x224x224"
SEED = 1234
MODELS = ["mobilenet_v2", "resnet18"]
ROWS = ["ember", "executorch", "ember on executorch's file", "eager"]
REF_ROW = "executorch"
FILES = {"ember": "ember_xnnpack", "executorch": "executorch_xnnpack",
         "ember on executorch's file": "executorch_xnnpack"}


# --------------------------------------------------------------------------- #
# The models (torchvision's shapes, written out)
# --------------------------------------------------------------------------- #

def _build(name: str):
    import torch
    import torch.nn as nn

    def conv_bn(cin: int, cout: int, k: int, stride: int = 1, groups: int = 1,
                act: Optional[Callable[[], nn.Module]] = None) -> nn.Sequential:
        layers: List[nn.Module] = [nn.Conv2d(cin, cout, k, stride, (k - 1) // 2, groups=groups,
                                             bias=False), nn.BatchNorm2d(cout)]
        if act is not None:
            layers.append(act())
        return nn.Sequential(*layers)

    class InvertedResidual(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int, expand: int) -> None:
            super().__init__()
            hidden = cin * expand
            layers: List[nn.Module] = []
            if expand != 1:
                layers.append(conv_bn(cin, hidden, 1, act=nn.ReLU6))
            layers += [conv_bn(hidden, hidden, 3, stride, groups=hidden, act=nn.ReLU6),
                       conv_bn(hidden, cout, 1)]
            self.conv = nn.Sequential(*layers)
            self.residual = stride == 1 and cin == cout

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + self.conv(x) if self.residual else self.conv(x)

    class MobileNetV2(nn.Module):
        # (expansion, out channels, repeats, first stride), as torchvision's
        SETTINGS = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                    (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]

        def __init__(self, classes: int = 1000) -> None:
            super().__init__()
            layers: List[nn.Module] = [conv_bn(3, 32, 3, 2, act=nn.ReLU6)]
            cin = 32
            for t, c, n, s in self.SETTINGS:
                for i in range(n):
                    layers.append(InvertedResidual(cin, c, s if i == 0 else 1, t))
                    cin = c
            layers.append(conv_bn(cin, 1280, 1, act=nn.ReLU6))
            self.features = nn.Sequential(*layers)
            self.classifier = nn.Linear(1280, classes)  # dropout: identity in eval

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = self.features(x)
            x = torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1)
            return self.classifier(x)

    class BasicBlock(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int) -> None:
            super().__init__()
            self.body = nn.Sequential(conv_bn(cin, cout, 3, stride, act=nn.ReLU),
                                      conv_bn(cout, cout, 3))
            self.down = conv_bn(cin, cout, 1, stride) if stride != 1 or cin != cout else None
            self.relu = nn.ReLU()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            skip = x if self.down is None else self.down(x)
            return self.relu(self.body(x) + skip)

    class ResNet18(nn.Module):
        def __init__(self, classes: int = 1000) -> None:
            super().__init__()
            self.stem = conv_bn(3, 64, 7, 2, act=nn.ReLU)
            self.pool = nn.MaxPool2d(3, 2, 1)
            blocks: List[nn.Module] = []
            cin = 64
            for i, c in enumerate([64, 128, 256, 512]):
                blocks += [BasicBlock(cin, c, 1 if i == 0 else 2), BasicBlock(c, c, 1)]
                cin = c
            self.layers = nn.Sequential(*blocks)
            self.fc = nn.Linear(512, classes)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = self.layers(self.pool(self.stem(x)))
            x = torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1)
            return self.fc(x)

    torch.manual_seed(SEED)
    model = {"mobilenet_v2": MobileNetV2, "resnet18": ResNet18}[name]()
    # Batch norms with statistics and affine parameters that are not the
    # identity, so that folding them is exercised; the scales keep the
    # activations of the deep network in a sane range.
    g = torch.Generator().manual_seed(SEED + 1)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            c = m.num_features
            m.running_mean.copy_(0.1 * torch.randn(c, generator=g))
            m.running_var.copy_(0.5 + torch.rand(c, generator=g))
            m.weight.data.copy_(0.5 + 0.5 * torch.rand(c, generator=g))
            m.bias.data.copy_(0.1 * torch.randn(c, generator=g))
    return model.eval()


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
# Exports (cached, redone when their sources change)
# --------------------------------------------------------------------------- #

def _sources_key() -> str:
    import importlib.metadata as md

    h = hashlib.sha256(Path(__file__).read_bytes())
    for f in sorted((ROOT / "python" / "ember").rglob("*.py")):
        h.update(str(f.relative_to(ROOT)).encode())
        h.update(f.read_bytes())
    h.update(f"executorch={md.version('executorch')} torch={md.version('torch')}".encode())
    return h.hexdigest()[:16]


def export_all(work: Path) -> None:
    import torch

    stamp = work / "exports.key"
    key = _sources_key()
    if stamp.exists() and stamp.read_text() == key and \
            all((work / f"{m}_{f}.pte").exists() for m in MODELS for f in set(FILES.values())):
        return
    stamp.unlink(missing_ok=True)
    x = torch.load(work / "input.pt")
    for name in MODELS:
        model = _build(name)
        ep = torch.export.export(model, (x,))
        t = time.time()
        from ember import to_edge_transform_and_lower as ember_lower
        from ember.backends.xnnpack import XnnpackPartitioner as EmberXnnpack

        prog = ember_lower(ep, partitioner=[EmberXnnpack()]).to_executorch()
        (work / f"{name}_ember_xnnpack.pte").write_bytes(prog.buffer)
        print(f"  exported {name} with ember in {time.time() - t:.0f} s", flush=True)
        t = time.time()
        from executorch.backends.xnnpack.partition.xnnpack_partitioner import \
            XnnpackPartitioner as EtXnnpack
        from executorch.exir import to_edge_transform_and_lower as et_lower

        prog = et_lower(torch.export.export(model, (x,)), partitioner=[EtXnnpack()]).to_executorch()
        (work / f"{name}_executorch_xnnpack.pte").write_bytes(prog.buffer)
        print(f"  exported {name} with executorch in {time.time() - t:.0f} s", flush=True)
    stamp.write_text(key)


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


def run_row(model_name: str, row: str, threads: int, work: Path, quick: bool) -> Dict[str, Any]:
    import torch

    x = torch.load(work / "input.pt")
    warmup, runs, min_s = (2, 5, 0.0) if quick else (3, 20, 2.0)
    if row == "eager":
        torch.set_num_threads(threads)
        model = _build(model_name)

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
            str(work / f"{model_name}_{FILES[row]}.pte")).load_method("forward")

        def call() -> torch.Tensor:
            return method.execute([x])[0]
    else:
        from ember.runtime import Runtime as EmberRuntime

        method = EmberRuntime.get().load_program(
            str(work / f"{model_name}_{FILES[row]}.pte")).load_method("forward", num_threads=threads)

        def call() -> torch.Tensor:
            return method.execute([x])[0]

    out = call()
    times = _time(call, warmup, runs, min_s)
    torch.save(out, work / f"out_{model_name}_{row.replace(' ', '_')}_{threads}.pt")
    return {"median_ms": statistics.median(times), "min_ms": min(times), "runs": len(times)}


# --------------------------------------------------------------------------- #
# Driver
# --------------------------------------------------------------------------- #

def main(argv: Optional[List[str]] = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="5 timed runs instead of 20 and >= 2 s")
    ap.add_argument("--workdir", default=str(ROOT / "build-bench" / "bench-cnn"))
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--threads", default="1,2", help="thread counts (comma-separated)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "RESULTS.md"),
                    help="results file to update ('' to skip; --quick never writes)")
    ap.add_argument("--row", help=argparse.SUPPRESS)  # child mode: MODEL:ROW:THREADS
    args = ap.parse_args(argv)
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)

    if args.row:
        model_name, row, threads = args.row.split(":")
        print("RESULT " + json.dumps(run_row(model_name, row, int(threads), work, args.quick)))
        return

    import torch
    from machine import measure_roofline, quote_command, roofline_line, write_section

    threads = [int(t) for t in args.threads.split(",")]
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    roof = measure_roofline(threads, quick=args.quick)
    print(roofline_line(roof), flush=True)
    if not (work / "input.pt").exists():
        torch.save(torch.randn(1, 3, 224, 224, generator=torch.Generator().manual_seed(SEED)),
                   work / "input.pt")
    export_all(work)
    x = torch.load(work / "input.pt")

    from ember.runtime import Runtime as EmberRuntime

    results: List[Tuple[str, str, int, Dict[str, Any]]] = []
    for name in models:
        model = _build(name)
        with torch.no_grad():
            want = model(x)
        flops = count_flops(model, x)
        print(f"{name}: {flops / 1e9:.2f} GFLOP per image", flush=True)
        for row in ROWS:
            for t in threads:
                proc = subprocess.run([sys.executable, __file__, "--row", f"{name}:{row}:{t}",
                                       "--workdir", str(work)] + (["--quick"] if args.quick else []),
                                      capture_output=True, text=True)
                line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
                if proc.returncode != 0 or not line:
                    res: Dict[str, Any] = {"error": proc.stderr.strip().splitlines()[-1:]}
                    print(f"  {row}, {t} threads: failed: {proc.stderr[-2000:]}", flush=True)
                else:
                    res = json.loads(line[-1][len("RESULT "):])
                    got = torch.load(work / f"out_{name}_{row.replace(' ', '_')}_{t}.pt")
                    res["max_abs_diff"] = float((got - want).abs().max())
                    res["max_abs_ref"] = float(want.abs().max())
                    res["gflops"] = flops / (res["median_ms"] * 1e-3) / 1e9
                    if row in FILES:
                        meta = EmberRuntime.get().load_program(
                            str(work / f"{name}_{FILES[row]}.pte")).metadata("forward")
                        res["plan"] = f"{meta.num_instructions} / {meta.num_delegates}"
                    print(f"  {row:<28} {t} thread{'s' if t > 1 else ' '}  "
                          f"{res['median_ms']:8.2f} ms  max |diff| {res['max_abs_diff']:.2e}",
                          flush=True)
                results.append((name, row, t, res))

    table = format_table(results, roof)
    print("\n" + table)
    if args.out and not args.quick:
        cmd = quote_command([__file__] + (argv if argv is not None else sys.argv[1:]),
                            "make bench-cnn")
        flops_note = ", ".join(f"{m} {count_flops(_build(m), x) / 1e9:.2f}" for m in models)
        body = (f"{SECTION}\n\nCommand: `{cmd}`\n\n{roofline_line(roof)}\n\n"
                f"Random weights (seed {SEED}), batch norms with random statistics folded by "
                "each partitioner; torch "
                f"{torch.__version__}. Median latency of timed runs after warm-up, each (row, "
                "threads) in its own process. Ratio: latency / executorch's at the same thread "
                "count (below 1: faster). max |diff|: largest absolute difference from eager's "
                "output (the largest |output| is given beside it). GFLOP/s counts the "
                f"convolutions' and classifier's multiply-adds as 2 FLOPs (GFLOP per image: "
                f"{flops_note}); % peak is of the FMA peak at that thread count. Instructions / "
                "delegates: the program's instruction count and how many are delegate calls "
                "(1 / 1: the whole model in one XNNPACK delegate).\n\n"
                f"{table}\n")
        write_section(Path(args.out), SECTION, body)
        print(f"wrote {args.out}")


def format_table(results: List[Tuple[str, str, int, Dict[str, Any]]], roof: Dict[str, Any]) -> str:
    from tabulate import tabulate

    ref = {(m, t): r for m, row, t, r in results if row == REF_ROW and "median_ms" in r}
    out = []
    for m, row, t, r in results:
        if "median_ms" not in r:
            out.append([m, row, t, "failed: " + " ".join(r.get("error", [])), "", "", "", "", ""])
            continue
        rr = ref.get((m, t))
        out.append([m, row, t, f"{r['median_ms']:.2f}",
                    f"{r['median_ms'] / rr['median_ms']:.2f}" if rr else "-",
                    f"{r['gflops']:.1f}", f"{100 * r['gflops'] / roof['fma_gflops'][t]:.0f}%",
                    f"{r['max_abs_diff']:.1e} (of {r['max_abs_ref']:.2g})", r.get("plan", "-")])
    return tabulate(out, headers=["model", "row", "threads", "median ms", "vs executorch",
                                  "GFLOP/s", "% FMA peak", "max |diff| vs eager",
                                  "instructions / delegates"],
                    tablefmt="github", disable_numparse=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Portable kernels vs PyTorch eager, one op at a time, single-threaded.

Each case is a one-op program exported with ember and loaded once in
libember through the Python bindings; the timed loop calls the compiled
method's execute on the same inputs. Inputs are not memory-planned
(`MemoryPlanningPass(alloc_graph_input=False)`), so execute binds them
without a copy, as an application passing its own buffers would; load and
the Python wrapper's tensor conversions are excluded, copying the output out
is included. PyTorch eager runs the same call with
torch.set_num_threads(1). Both report the median of several timed repeats;
the ratio is ember / eager (below 1: ember is faster). Outputs are checked
against eager before anything is timed.

usage: .venv/bin/python bench/kernels/bench_kernels.py [--quick] [--filter NAME]
                                                      [--write bench/RESULTS.md]
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import statistics
import sys
import time
import warnings
from typing import Callable, List, Sequence, Tuple

import torch
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))

import ember  # noqa: E402
from ember.memory_planning import MemoryPlanningPass  # noqa: E402
from ember.runtime import Runtime  # noqa: E402
from tabulate import tabulate  # noqa: E402

SECTION = "## Portable kernels vs eager"


class Op(torch.nn.Module):
    def __init__(self, fn: Callable[..., torch.Tensor]) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *xs: torch.Tensor) -> torch.Tensor:
        return self.fn(*xs)


def g(*shape: int) -> torch.Tensor:
    return torch.randn(*shape)


def cases() -> List[Tuple[str, str, Callable[..., torch.Tensor], Tuple[torch.Tensor, ...]]]:
    """(op, shape description, function, inputs)."""
    torch.manual_seed(0)
    return [
        ("mm", "(64,64) @ (64,64)", torch.mm, (g(64, 64), g(64, 64))),
        ("mm", "(256,256) @ (256,256)", torch.mm, (g(256, 256), g(256, 256))),
        ("mm", "(8,768) @ (768,768)", torch.mm, (g(8, 768), g(768, 768))),
        ("conv2d", "(1,3,64,64) * (16,3,3,3) pad 1", lambda x, w: F.conv2d(x, w, padding=1),
         (g(1, 3, 64, 64), g(16, 3, 3, 3))),
        ("conv2d", "(1,32,32,32) * (32,32,3,3) pad 1", lambda x, w: F.conv2d(x, w, padding=1),
         (g(1, 32, 32, 32), g(32, 32, 3, 3))),
        ("conv2d", "(1,64,16,16) * (64,64,1,1)", lambda x, w: F.conv2d(x, w),
         (g(1, 64, 16, 16), g(64, 64, 1, 1))),
        ("conv3d", "(1,8,8,28,28) * (16,8,3,3,3) pad 1", lambda x, w: F.conv3d(x, w, padding=1),
         (g(1, 8, 8, 28, 28), g(16, 8, 3, 3, 3))),
        ("softmax", "(32,1000) dim -1", lambda x: torch.softmax(x, -1), (g(32, 1000),)),
        ("softmax", "(8,12,64,64) dim -1", lambda x: torch.softmax(x, -1), (g(8, 12, 64, 64),)),
        ("softmax", "(64,256) dim 0", lambda x: torch.softmax(x, 0), (g(64, 256),)),
        ("layer_norm", "(32,768)", lambda x, w, b: F.layer_norm(x, (768,), w, b),
         (g(32, 768), g(768), g(768))),
        ("layer_norm", "(4,128,768)", lambda x, w, b: F.layer_norm(x, (768,), w, b),
         (g(4, 128, 768), g(768), g(768))),
        ("add", "(64,128,128) + (128,)", torch.add, (g(64, 128, 128), g(128))),
        ("add", "(32,1,256) + (1,64,256)", torch.add, (g(32, 1, 256), g(1, 64, 256))),
        ("add", "(256,256) + (256,1)", torch.add, (g(256, 256), g(256, 1))),
        ("gather", "(1000,256) dim 0, index (512,256)", lambda x, i: torch.gather(x, 0, i),
         (g(1000, 256), torch.randint(0, 1000, (512, 256)))),
        ("gather", "(64,1024) dim 1, index (64,128)", lambda x, i: torch.gather(x, 1, i),
         (g(64, 1024), torch.randint(0, 1024, (64, 128)))),
        ("sum", "(1024,1024) dim -1", lambda x: x.sum(-1), (g(1024, 1024),)),
        ("sum", "(1024,1024) dim 0", lambda x: x.sum(0), (g(1024, 1024),)),
        ("sum", "(64,256,64) dims (0,2)", lambda x: x.sum((0, 2)), (g(64, 256, 64),)),
    ]


def timeit(fn: Callable[[], object], min_time: float, repeats: int) -> float:
    """Median seconds per call over `repeats` runs of at least min_time each."""
    fn()
    n = 1
    while True:  # calibrate the iteration count
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        dt = time.perf_counter() - t0
        if dt >= min_time / 4 or n >= 1 << 20:
            break
        n *= 2
    n = max(1, int(n * min_time / max(dt, 1e-9)))
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        samples.append((time.perf_counter() - t0) / n)
    return statistics.median(samples)


def ember_call(method, inputs: Sequence[torch.Tensor]):
    """(the compiled method, its inputs in the extension's form): Method.execute
    without the per-call tensor conversions of the Python wrapper."""
    from ember.runtime import _convert_input

    metas = method.metadata.inputs
    return method._impl, [_convert_input(x, metas[i], i) for i, x in enumerate(inputs)]


def run(selected: Sequence, min_time: float, repeats: int) -> List[List[object]]:
    rows = []
    rt = Runtime.get()
    for name, shape, fn, inputs in selected:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ep = torch.export.export(Op(fn), inputs, strict=False)
            config = ember.ExecutorchBackendConfig(
                memory_planning_pass=MemoryPlanningPass(alloc_graph_input=False))
            buf = ember.to_edge(ep).to_executorch(config).buffer
        # one thread, as eager: no pool to hand the kernel to
        method = rt.load_program(buf).load_method("forward", num_threads=1)
        want = fn(*inputs)
        got = method.execute(list(inputs))[0]
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
        # The timed call is the extension's execute on inputs converted once:
        # it binds the inputs, runs the kernel and copies the output out.
        impl, converted = ember_call(method, inputs)
        t_ember = timeit(lambda: impl.execute(converted), min_time, repeats)
        with torch.no_grad():
            t_eager = timeit(lambda: fn(*inputs), min_time, repeats)
        rows.append([name, shape, t_ember * 1e6, t_eager * 1e6, t_ember / t_eager])
        print(f"  {name:<10} {shape:<36} ember {t_ember * 1e6:9.1f} us   eager "
              f"{t_eager * 1e6:9.1f} us   ratio {t_ember / t_eager:5.2f}", flush=True)
    return rows


def table(rows: List[List[object]], fmt: str) -> str:
    geo = math.exp(sum(math.log(r[4]) for r in rows) / len(rows))
    body = [[r[0], r[1], f"{r[2]:.1f}", f"{r[3]:.1f}", f"{r[4]:.2f}"] for r in rows]
    body.append(["geomean", "", "", "", f"{geo:.2f}"])
    return tabulate(body, headers=["op", "shape (float32)", "ember us", "eager us",
                                   "ember / eager"], tablefmt=fmt, disable_numparse=True)


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="shorter timing (noisier)")
    ap.add_argument("--filter", default="", help="only ops whose name contains this")
    ap.add_argument("--write", metavar="FILE", help="put the table into FILE (bench/RESULTS.md)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    selected = [c for c in cases() if args.filter in c[0]]
    min_time, repeats = (0.05, 3) if args.quick else (0.2, 5)
    print(f"portable kernels vs eager (torch {torch.__version__}, 1 thread, {cpu_name()})")
    rows = run(selected, min_time, repeats)
    print(table(rows, "simple"))
    if args.write:
        sys.path.insert(0, os.path.join(ROOT, "bench"))
        from machine import measure_roofline, roofline_line, write_section

        roof = roofline_line(measure_roofline((1, 2), quick=args.quick))
        cmd = "make bench-kernels" if not (args.quick or args.filter) else (
            "python bench/kernels/bench_kernels.py " + " ".join(sys.argv[1:]))
        text = (f"{SECTION}\n\n`{cmd}` — each op a one-op program in libember (portable "
                f"kernels, through the Python bindings; load excluded; inputs bound "
                f"without a copy, the output copied out) vs PyTorch "
                f"{torch.__version__} eager, both on one thread; median of {repeats} runs of "
                f"at least {min_time:g} s each. Ratio below 1: ember is faster. The portable "
                f"kernels are plain C built without `-march`; eager runs vectorized "
                f"library kernels.\n\n{roof}\n\n{table(rows, 'github')}\n")
        write_section(args.write, SECTION, text)
        print(f"wrote {args.write}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

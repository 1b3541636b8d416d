"""Results do not depend on the number of threads.

Each program runs at 1, 2, 3 and 16 threads (a pool may outnumber the
machine's cores, and here it does), each with every parallel call split as
far as its tiles allow (EMBER_PARALLEL_GRAIN=1, which a method's thread pool
reads when it is made) and with the default grain, which gives small calls
fewer threads. Every output must be bitwise identical to the output of one
thread: each output element is computed by one task, in the same order,
whichever thread runs it and however the work is cut.

Programs, covering the kernels that split work:
- nanoGPT with its KV cache, XNNPACK float32 and 8da4w (4-bit weights in
  groups, int8 activations): a 7-token prefill, then decode steps (products,
  the quantization of activations, layer norms, the attention kernel);
- a small CNN lowered whole by ember's XnnpackPartitioner (3x3, strided and
  1x1 convolutions, depthwise, residual add, pooling, linear), float32 and
  statically quantized int8;
- a transformer block on the optimized portable kernels, not delegated
  (embedding, layer norm, bmm, where, softmax, GELU, elementwise, log-softmax).
"""

from __future__ import annotations

import copy
import os
import sys
from typing import Callable, Dict, List

import pytest
import torch

from conftest import ROOT

ember_runtime = pytest.importorskip("ember.runtime")
pytest.importorskip("executorch.backends.xnnpack")

sys.path.insert(0, os.path.join(ROOT, "examples", "nanogpt"))

THREADS = [1, 2, 3, 16]
GRAINS = ["1", None]  # split everything; the default

Run = Callable[[int], List[torch.Tensor]]


def _load(buffer: bytes, threads: int, grain: str | None) -> object:
    """The program's forward method on a pool of `threads`, made with `grain`."""
    old = os.environ.pop("EMBER_PARALLEL_GRAIN", None)
    if grain is not None:
        os.environ["EMBER_PARALLEL_GRAIN"] = grain
    try:
        program = ember_runtime.Runtime.get().load_program(buffer)
        return program.load_method("forward", num_threads=threads)
    finally:
        os.environ.pop("EMBER_PARALLEL_GRAIN", None)
        if old is not None:
            os.environ["EMBER_PARALLEL_GRAIN"] = old


def _outputs(buffer: bytes, inputs: List[list], threads: int, grain: str | None) -> List[torch.Tensor]:
    method = _load(buffer, threads, grain)
    out: List[torch.Tensor] = []
    for args in inputs:  # in order: a stateful program carries its cache along
        out += [t.clone() for t in method.execute([a.clone() for a in args])]
    return out


def _nanogpt(quant: str) -> tuple:
    from kv_cache import export_kv
    from model import GPT

    gpt = GPT.from_checkpoint(os.path.join(ROOT, "examples", "nanogpt", "ckpt.pt")).eval()
    buffer = export_kv(copy.deepcopy(gpt), backend="xnnpack", quant=quant).buffer
    g = torch.Generator().manual_seed(3)
    tokens = torch.randint(0, gpt.config.vocab_size, (12,), generator=g).tolist()
    steps = [(tokens[:7], 0)] + [([tokens[p]], p) for p in range(7, len(tokens))]
    return buffer, [[torch.tensor([t]), torch.tensor([p])] for t, p in steps]


def _cnn(quantized: bool) -> tuple:
    from test_xnnpack_quantized import SmallCnn, quantize_and_lower

    if quantized:
        _, buffer, runs = quantize_and_lower("cnn", "ember", {"is_per_channel": True})
        return buffer, [list(r) for r in runs]
    from ember import to_edge_transform_and_lower
    from ember.backends.xnnpack import XnnpackPartitioner

    torch.manual_seed(5)
    model = SmallCnn().eval()
    x = torch.randn(2, 3, 24, 24)
    ep = torch.export.export(model, (x,))
    buffer = to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()]).to_executorch().buffer
    return buffer, [[x], [torch.randn(2, 3, 24, 24)]]


def _block() -> tuple:
    from aot_util import export
    from test_optimized_kernels import Block

    torch.manual_seed(1)
    model = Block().eval()
    ids, bias = torch.randint(0, 50, (2, 9)), torch.randn(48)
    return export(model, (ids, bias)).buffer, [[ids, bias]]


PROGRAMS: Dict[str, Callable[[], tuple]] = {
    "nanogpt_fp32": lambda: _nanogpt("none"),
    "nanogpt_8da4w": lambda: _nanogpt("8da4w"),
    "cnn_fp32": lambda: _cnn(False),
    "cnn_int8": lambda: _cnn(True),
    "block_portable": _block,
}


@pytest.fixture(scope="module")
def programs() -> Dict[str, tuple]:
    return {}


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_same_bits_at_every_thread_count(name: str, programs: Dict[str, tuple]) -> None:
    if name not in programs:
        programs[name] = PROGRAMS[name]()
    buffer, inputs = programs[name]
    want = _outputs(buffer, inputs, 1, None)
    for grain in GRAINS:
        for threads in THREADS:
            got = _outputs(buffer, inputs, threads, grain)
            assert len(got) == len(want)
            for i, (g, w) in enumerate(zip(got, want)):
                assert g.dtype == w.dtype and g.shape == w.shape, (threads, grain, i)
                diff = (g.double() - w.double()).abs().max().item() if g.numel() else 0.0
                assert torch.equal(g, w), \
                    f"{name}: output {i} at {threads} threads (grain {grain or 'default'}) " \
                    f"differs from 1 thread by up to {diff:.3g}"


def test_grain_must_be_a_positive_number() -> None:
    """A malformed EMBER_PARALLEL_GRAIN is ignored (the default applies), and
    the program still runs and gives the same bits."""
    buffer, inputs = _cnn(False)
    want = _outputs(buffer, inputs, 1, None)
    for bad in ["0", "-5", "12abc", ""]:
        got = _outputs(buffer, inputs, 2, bad)
        assert all(torch.equal(g, w) for g, w in zip(got, want)), bad

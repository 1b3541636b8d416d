"""Quantized embedding tables, end to end.

- ExecuTorch's programs: its pt2e fusion pass (to_executorch with
  do_quant_fusion_and_const_prop) on torchao's EmbeddingQuantizer, and its
  LLM source transform (--embedding-quantize 8,0 / 4,32 / 4,64 / 2,32), run in
  ember's runtime, equal to ExecuTorch's runtime and to the eager op;
- ember's programs: its fusion pass (dequantize_per_channel[_group] of a
  constant table + embedding -> embedding_byte / embedding_4bit /
  embedding_2bit) and ember.llm.quantize, run in both runtimes, equal to the
  reference (the table dequantized in float32, then looked up);
- a small GPT (the nanoGPT example's model) with a 4-bit token embedding and
  8da4w linear layers: ember's and ExecuTorch's runtimes pick the same greedy
  tokens;
- float16 and bfloat16 tables (the `.dtype` overloads' other outputs);
- an index out of range: a clean error naming it, the method usable after.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from typing import List, Optional

import pytest
import torch
import torch.nn as nn

from conftest import ROOT

ember_runtime = pytest.importorskip("ember.runtime")

import ember  # noqa: E402
from ember import quantized_embedding_ops as qe  # noqa: E402
from ember.llm.quantize import QuantizedEmbedding, quantize_embeddings  # noqa: E402

from aot_util import kernel_names, read_program  # noqa: E402


def _et_available() -> bool:
    try:
        import executorch.runtime  # noqa: F401
    except Exception:
        return False
    return True


needs_et = pytest.mark.skipif(not _et_available(), reason="executorch is not installed")


class Lookup(nn.Module):
    """An embedding whose rows are the output (so outputs compare exactly)."""

    def __init__(self, vocab: int = 40, dim: int = 64) -> None:
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        return self.emb(idx)


def _ember(buf: bytes):
    return ember_runtime.Runtime.get().load_program(buf).load_method("forward")


def _et(buf: bytes):
    from executorch.runtime import Runtime

    return Runtime.get().load_program(buf).load_method("forward")


def _ops(buf: bytes) -> List[str]:
    return kernel_names(read_program(buf).execution_plan[0])


def _indices(vocab: int) -> List[torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    return [torch.randint(0, vocab, (2, 7), generator=g), torch.tensor([[0, vocab - 1, 3]]),
            torch.randint(0, vocab, (1, 1), generator=g)]


def _indices_2x7(vocab: int) -> List[torch.Tensor]:
    """Index tensors of the example's shape (a converted pt2e module keeps its
    export's static shapes), the first and last rows included."""
    g = torch.Generator().manual_seed(2)
    first = torch.randint(0, vocab, (2, 7), generator=g)
    first[0, 0], first[1, 6] = 0, vocab - 1
    return [first, torch.randint(0, vocab, (2, 7), generator=g)]


def _both_runtimes(buf: bytes, runs: List[torch.Tensor], want_fn, rtol: float = 0.0,
                   atol: float = 0.0) -> None:
    """ember == ExecuTorch (to float rounding), and both == want_fn(idx)."""
    ours = _ember(buf)
    ref = _et(buf) if _et_available() else None
    for idx in runs:
        want = want_fn(idx)
        (got,) = ours.execute([idx])
        assert got.shape == want.shape and got.dtype == want.dtype
        torch.testing.assert_close(got, want, rtol=rtol, atol=atol)
        if ref is not None:
            (theirs,) = ref.execute([idx])
            torch.testing.assert_close(got, theirs, rtol=1e-6, atol=1e-7)


# --------------------------------------------------------------------------- #
# ExecuTorch's exports
# --------------------------------------------------------------------------- #


def _pt2e_embedding(model: nn.Module, example: tuple, extra_quantizers=()):
    """torchao's EmbeddingQuantizer (uint8 per row, float zero points), composed
    with further quantizers, through prepare / calibrate / convert."""
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    from torchao.quantization.pt2e.quantizer.composable_quantizer import ComposableQuantizer
    from torchao.quantization.pt2e.quantizer.embedding_quantizer import EmbeddingQuantizer

    graph = torch.export.export(model, example).module()
    quantizer = ComposableQuantizer([EmbeddingQuantizer(), *extra_quantizers])
    prepared = prepare_pt2e(graph, quantizer)
    prepared(*example)
    return convert_pt2e(prepared)


@needs_et
def test_executorch_fusion_pass_program() -> None:
    from executorch.exir import ExecutorchBackendConfig as EtConfig
    from executorch.exir import to_edge as et_to_edge

    torch.manual_seed(0)
    model = Lookup().eval()
    example = (torch.randint(0, 40, (2, 7)),)
    converted = _pt2e_embedding(model, example)
    ep = torch.export.export(converted, example)
    buf = et_to_edge(ep).to_executorch(EtConfig(do_quant_fusion_and_const_prop=True)).buffer
    assert _ops(buf) == ["quantized_decomposed::embedding_byte.out"]
    # the eager converted graph dequantizes the whole table in float32, then looks up
    _both_runtimes(buf, _indices_2x7(40), lambda idx: converted(idx), atol=1e-6, rtol=1e-6)


@needs_et
@pytest.mark.parametrize("spec,op", [("8,0", "embedding_byte"), ("8,32", "embedding_byte"),
                                     ("4,32", "embedding_4bit"), ("4,64", "embedding_4bit"),
                                     ("2,32", "embedding_2bit")])
def test_executorch_llm_source_transform(spec: str, op: str) -> None:
    """ExecuTorch's --embedding-quantize transform (its QuantizedGroupEmbedding:
    float16 scales, `.dtype` ops), exported by ExecuTorch."""
    from executorch.examples.models.llama.source_transformation.quantize import \
        get_quant_embedding_transform
    from executorch.exir import to_edge as et_to_edge

    torch.manual_seed(0)
    model = get_quant_embedding_transform(spec)(Lookup(vocab=48, dim=128)).eval()
    example = (torch.randint(0, 48, (2, 7)),)
    ep = torch.export.export(model, example, dynamic_shapes=_dynamic(example))
    buf = et_to_edge(ep).to_executorch().buffer
    assert _ops(buf) == [f"quantized_decomposed::{op}.dtype_out"]
    emb = model.emb

    def want(idx):
        # the runtimes compute (q - 0) * scale in float32; ExecuTorch's eager op
        # multiplies in the scales' float16 first (checked below, to its rounding)
        return nn.functional.embedding(idx, qe.dequantize_table(
            emb.weight, emb.scales, None, qe.BITS[op], torch.float32))

    _both_runtimes(buf, _indices(48), want)
    idx = _indices(48)[0]
    (got,) = _ember(buf).execute([idx])
    with torch.no_grad():
        eager = model(idx)
    torch.testing.assert_close(got, eager, rtol=2e-3, atol=2e-3 * float(eager.abs().max()))


# --------------------------------------------------------------------------- #
# ember's exports
# --------------------------------------------------------------------------- #


def _dynamic(example: tuple):
    """Rows and columns of the indices dynamic (1..4, 1..16)."""
    if example[0].dim() != 2:
        return None
    return ({0: torch.export.Dim("b", max=4), 1: torch.export.Dim("t", max=16)},)


def _lower(model: nn.Module, example: tuple, partitioner: bool = False, static: bool = False,
           config: Optional[ember.ExecutorchBackendConfig] = None) -> bytes:
    ep = torch.export.export(model, example, dynamic_shapes=None if static else _dynamic(example))
    if partitioner:
        from ember.backends.xnnpack import XnnpackPartitioner

        edge = ember.to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()])
    else:
        edge = ember.to_edge(ep)
    return edge.to_executorch(config).buffer


class EmbLinear(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(40, 32)
        self.fc = nn.Linear(32, 16)

    def forward(self, idx: torch.Tensor):
        e = self.emb(idx)
        return e, self.fc(e)


def test_ember_fuses_pt2e_embedding() -> None:
    """torchao's EmbeddingQuantizer composed with ember's XNNPACKQuantizer
    (dynamic int8 linears): the linear goes to XnnpackBackend, the embedding
    becomes one embedding_byte lookup (no dequantize of the table left)."""
    from ember.backends.xnnpack.quantizer import (XNNPACKQuantizer,
                                                  get_symmetric_quantization_config)

    torch.manual_seed(0)
    model = EmbLinear().eval()
    example = (torch.randint(0, 40, (2, 7)),)
    xnn = XNNPACKQuantizer().set_global(
        get_symmetric_quantization_config(is_per_channel=True, is_dynamic=True))
    converted = _pt2e_embedding(model, example, [xnn])
    buf = _lower(converted, example, partitioner=True, static=True)
    assert _ops(buf) == ["quantized_decomposed::embedding_byte.out"]
    ours = _ember(buf)
    ref = _et(buf) if _et_available() else None
    for idx in _indices_2x7(40):
        e_want, _ = converted(idx)
        e_got, y_got = ours.execute([idx])
        torch.testing.assert_close(e_got, e_want, rtol=1e-6, atol=1e-6)
        if ref is not None:
            e_ref, y_ref = ref.execute([idx])
            torch.testing.assert_close(e_got, e_ref, rtol=0, atol=0)
            torch.testing.assert_close(y_got, y_ref, rtol=1e-5, atol=1e-5)
    # the fusion can be turned off: the dequantize and the float lookup stay
    plain = _lower(converted, example, partitioner=True, static=True,
                   config=ember.ExecutorchBackendConfig(fuse_quantized_embeddings=False))
    assert _ops(plain) == ["quantized_decomposed::dequantize_per_channel.out",
                           "aten::embedding.out"]


class DequantTable(nn.Module):
    """embedding(dequantize_per_channel[_group](table)): the pattern pt2e leaves."""

    def __init__(self, q: torch.Tensor, scales: torch.Tensor, zps: Optional[torch.Tensor],
                 qmin: int, qmax: int, group: int, tied: bool = False) -> None:
        super().__init__()
        self.register_buffer("q", q)
        self.register_buffer("scales", scales)
        self.register_buffer("zps", zps)
        self.qmin, self.qmax, self.group, self.tied = qmin, qmax, group, tied

    def table(self) -> torch.Tensor:
        qd = torch.ops.quantized_decomposed
        if self.group:
            return qd.dequantize_per_channel_group(self.q, self.scales, self.zps, self.qmin,
                                                   self.qmax, self.q.dtype, self.group,
                                                   torch.float32)
        return qd.dequantize_per_channel(self.q, self.scales, self.zps, 0, self.qmin, self.qmax,
                                         self.q.dtype)

    def forward(self, idx: torch.Tensor):
        t = self.table()
        e = nn.functional.embedding(idx, t)
        if self.tied:  # the table also feeds an output projection
            return e, e @ t.t()
        return e


@pytest.mark.parametrize("case", ["int8-row", "int8-row-zp", "uint8-row-zp", "int4-g32",
                                  "int4-g16-zp", "int4-row", "int2-g32", "int8-g32"])
def test_ember_fuses_dequantized_tables(case: str) -> None:
    torch.manual_seed(sum(map(ord, case)))
    vocab, dim = 36, 64
    kind, layout = case.split("-")[0], case.split("-")[1]
    qmin, qmax, dtype = {"int8": (-128, 127, torch.int8), "uint8": (0, 255, torch.uint8),
                         "int4": (-8, 7, torch.int8), "int2": (-2, 1, torch.int8)}[kind]
    group = 0 if layout == "row" else int(layout[1:])
    groups = 1 if group == 0 else dim // group
    q = torch.randint(qmin, qmax + 1, (vocab, dim)).to(dtype)
    scales = torch.rand(vocab, groups) * 0.1 + 0.01
    zps = None
    if case.endswith("zp"):
        zps = torch.randint(-3, 4, (vocab, groups)) + (128 if kind == "uint8" else 0)
    if group == 0:
        scales = scales.reshape(vocab)
        zps = zps.reshape(vocab) if zps is not None else None
    model = DequantTable(q, scales, zps, qmin, qmax, group).eval()
    example = (torch.randint(0, vocab, (2, 7)),)
    buf = _lower(model, example)
    op = {"int8": "embedding_byte", "uint8": "embedding_byte", "int4": "embedding_4bit",
          "int2": "embedding_2bit"}[kind]
    assert _ops(buf) == [f"quantized_decomposed::{op}.out"]
    # the table stored packed: 4 / 2 bits a value instead of 8
    if kind in ("int4", "int2"):
        plain = _lower(model, example,
                       config=ember.ExecutorchBackendConfig(fuse_quantized_embeddings=False))
        assert _ops(plain) == [f"quantized_decomposed::dequantize_per_channel{'_group' if group else ''}.out",
                               "aten::embedding.out"]
        assert len(buf) < len(plain) - vocab * dim // 4, (len(buf), len(plain))
    with torch.no_grad():
        table = model.table()
    _both_runtimes(buf, _indices(vocab), lambda idx: nn.functional.embedding(idx, table),
                   rtol=1e-6, atol=1e-6)


def test_ember_fusion_keeps_the_dequantize_for_other_users() -> None:
    torch.manual_seed(5)
    q = torch.randint(-8, 8, (24, 32), dtype=torch.int8)
    model = DequantTable(q, torch.rand(24, 1) * 0.1 + 0.01, None, -8, 7, 32, tied=True).eval()
    example = (torch.randint(0, 24, (2, 5)),)
    buf = _lower(model, example)
    ops = _ops(buf)
    assert "quantized_decomposed::embedding_4bit.out" in ops
    assert "quantized_decomposed::dequantize_per_channel_group.out" in ops
    ours = _ember(buf)
    for idx in _indices(24):
        with torch.no_grad():
            want = model(idx)
        got = ours.execute([idx])
        for g, w in zip(got, want):
            torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("bits,group", [(8, 0), (8, 32), (4, 32), (4, 64), (4, 128), (2, 32)])
def test_ember_llm_transform(bits: int, group: int) -> None:
    torch.manual_seed(bits * 1000 + group)
    model = Lookup(vocab=50, dim=128).eval()
    float_table = model.emb.weight.detach().clone()
    quantize_embeddings(model, bits, group)
    emb = model.emb
    assert isinstance(emb, QuantizedEmbedding)
    assert emb.weight.shape == (50, 128 * bits // 8)
    assert emb.scales.shape == ((50,) if group in (0, 128) else (50, 128 // group))
    example = (torch.randint(0, 50, (2, 7)),)
    buf = _lower(model, example)
    assert _ops(buf) == [f"quantized_decomposed::{qe.OP_OF_BITS[bits]}.dtype_out"]
    table = emb.dequantized()
    _both_runtimes(buf, _indices(50), lambda idx: nn.functional.embedding(idx, table))
    # within half a quantization step (plus the float16 scale's rounding) of the float table
    qmax = {8: 127.5, 4: 7.5, 2: 1.5}[bits]
    gs = 128 if group in (0, 128) else group
    amax = float_table.reshape(50, -1, gs).abs().amax(-1, keepdim=True)
    step = (amax / qmax).expand(-1, -1, gs).reshape(50, 128)
    err = (table - float_table).abs()
    # values beyond qmax * scale clamp by up to half a step more
    assert bool((err <= step * (1.0 + 1e-2)).all()), float((err / step).max())


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_ember_llm_transform_half_tables(dtype: torch.dtype) -> None:
    """A float16 / bfloat16 model: the lookup writes its dtype (computed in
    float32, rounded once), in ember's runtime, and in ExecuTorch's for float16."""
    torch.manual_seed(7)
    model = quantize_embeddings(Lookup(vocab=30, dim=64).to(dtype).eval(), 4, 32)
    assert model.emb.dtype == dtype
    buf = _lower(model, (torch.randint(0, 30, (2, 7)),))
    assert _ops(buf) == ["quantized_decomposed::embedding_4bit.dtype_out"]
    table = model.emb.dequantized()
    assert table.dtype == dtype
    ours = _ember(buf)
    ref = _et(buf) if _et_available() and dtype == torch.float16 else None
    for idx in _indices(30):
        (got,) = ours.execute([idx])
        torch.testing.assert_close(got, nn.functional.embedding(idx, table), rtol=0, atol=0)
        if ref is not None:
            torch.testing.assert_close(got, ref.execute([idx])[0], rtol=0, atol=0)


def test_out_of_range_index_is_a_clean_error() -> None:
    model = quantize_embeddings(Lookup(vocab=10, dim=32).eval(), 4, 32)
    buf = _lower(model, (torch.tensor([[1, 2], [3, 4]]),))
    method = _ember(buf)
    method.execute([torch.tensor([[0, 9]])])
    for bad in (10, -1, 1 << 40):
        with pytest.raises(ember_runtime.EmberError, match="out of range"):
            method.execute([torch.tensor([[1, bad]])])
    # still usable afterwards
    (got,) = method.execute([torch.tensor([[3, 4]])])
    torch.testing.assert_close(got, nn.functional.embedding(torch.tensor([[3, 4]]),
                                                            model.emb.dequantized()))


def test_bad_tables_fail_at_export_time() -> None:
    emb = nn.Embedding(10, 30)
    with pytest.raises(ValueError, match="group size 16 does not divide"):
        quantize_embeddings(emb, 4, 16)
    with pytest.raises(ValueError, match="bits must be 8, 4 or 2"):
        quantize_embeddings(emb, 3, 0)
    with pytest.raises(ValueError, match="multiple of 4"):
        quantize_embeddings(nn.Embedding(10, 30), 2, 0)
    with pytest.raises(ValueError, match=r"\[-8, 7\]"):
        qe.pack(torch.full((2, 4), 9, dtype=torch.int8), 4)


# --------------------------------------------------------------------------- #
# A small transformer: 4-bit embedding and 8da4w linears
# --------------------------------------------------------------------------- #


@needs_et
def test_nanogpt_quantized_embedding_and_8da4w_greedy_tokens() -> None:
    sys.path.insert(0, os.path.join(ROOT, "examples", "nanogpt"))
    from export import export_seq
    from model import GPT, GPTConfig

    torch.manual_seed(0)
    cfg = GPTConfig(block_size=32, vocab_size=128, n_layer=2, n_head=2, n_embd=64, dropout=0.0,
                    bias=True)
    gpt = GPT(cfg).eval()
    with torch.no_grad():  # weights of some size, so tokens depend on them
        for p in gpt.parameters():
            if p.dim() == 2:
                p.normal_(0, 0.2)
    buf = export_seq(gpt, backend="xnnpack", quant="8da4w", group_size=32,
                     embedding_quant="4,32").buffer
    ops = _ops(buf)
    assert "quantized_decomposed::embedding_4bit.dtype_out" in ops
    assert isinstance(gpt.transformer.wte, QuantizedEmbedding)
    methods = {"ember": _ember(buf), "executorch": _et(buf)}
    tokens = {name: [5, 17, 99, 3] for name in methods}
    for _ in range(12):
        logits = {}
        for name, m in methods.items():
            (out,) = m.execute([torch.tensor([tokens[name]])])[:1]
            logits[name] = out
            tokens[name].append(int(out[0, -1].argmax()))
        torch.testing.assert_close(logits["ember"], logits["executorch"], rtol=1e-4, atol=1e-4)
        assert float(logits["ember"].abs().max()) > 0.5
    assert tokens["ember"] == tokens["executorch"]
    assert len(set(tokens["ember"][4:])) > 1  # not one token repeated


# --------------------------------------------------------------------------- #
# Registration: with and without the executorch package, either import order
# --------------------------------------------------------------------------- #


def _python(code: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "python"),
                                         os.path.join(ROOT, "tests", "python")]
                                        + env.get("PYTHONPATH", "").split(os.pathsep))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, env=env, timeout=600)


def test_ember_definitions_without_executorch() -> None:
    proc = _python("""
        import sys
        sys.modules["executorch"] = None  # import executorch fails
        import torch
        import ember
        from ember import quantized_embedding_ops as qe
        from ember.llm.quantize import quantize_embeddings
        import test_quantized_embedding as t
        assert qe.register() == "ember", qe.register()
        for bits, group in ((8, 0), (4, 32), (2, 32)):
            torch.manual_seed(bits)
            model = quantize_embeddings(t.Lookup(vocab=20, dim=64).eval(), bits, group)
            buf = t._lower(model, (torch.tensor([[1, 2], [3, 4]]),))
            table = model.emb.dequantized()
            t._both_runtimes(buf, t._indices(20),
                             lambda idx: torch.nn.functional.embedding(idx, table))
            idx = torch.tensor([[3, 19, 0]])
            torch.testing.assert_close(model(idx), torch.nn.functional.embedding(idx, table),
                                       rtol=0, atol=0)
        print("ok")
    """)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stderr[-3000:]


@needs_et
@pytest.mark.parametrize("order", ["ember-first", "executorch-first"])
def test_import_order(order: str) -> None:
    first, second = (("import ember.llm.quantize as m; m.quantize_embeddings(torch.nn.Embedding(4, 8), 4, 8)",
                      "import executorch.exir; from executorch.exir.passes import _quant_patterns_and_replacements")
                     if order == "ember-first" else
                     ("import executorch.exir; from executorch.exir.passes import _quant_patterns_and_replacements",
                      "import ember.llm.quantize as m; m.quantize_embeddings(torch.nn.Embedding(4, 8), 4, 8)"))
    proc = _python(f"""
        import torch
        {first}
        {second}
        from ember import quantized_embedding_ops as qe
        assert qe.register() == "executorch", qe.register()
        print("ok")
    """)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stderr[-3000:]

"""The KV-cache export of nanoGPT and the fused ember::sdpa_with_kv_cache operator.

- the operator's eager implementation equals torch's SDPA (math backend) on the
  same data, and it writes exactly the new rows of the caches;
- the reinplace pass: a cache that nothing reads afterwards is updated in place
  (no copy of it anywhere in the program), a mutated value that is read again
  later is cloned first, and either way libember computes what eager does;
- the "kv" export runs in libember: prefill and one-token decode logits match
  eager GPT, greedy generation of 100 tokens matches eager token for token and
  matches the "seq" export (the whole window re-run every step);
- start positions past the cache end fail with a clean error.

The model is the committed checkpoint examples/nanogpt/ckpt.pt when it is
there, else a small GPT with random weights.
"""

from __future__ import annotations

import os
import sys
from typing import List

import pytest
import torch
import torch.nn.functional as F

from conftest import ROOT

import ember.llm.custom_ops as custom_ops
from ember import ExecutorchBackendConfig, to_edge
from ember import runtime as ember_runtime
from ember import schema as S

sys.path.insert(0, os.path.join(ROOT, "examples", "nanogpt"))

from kv_cache import KVCacheGPT, export_kv, generate_kv  # noqa: E402
from model import GPT, GPTConfig  # noqa: E402

CKPT = os.path.join(ROOT, "examples", "nanogpt", "ckpt.pt")
OP = "ember::sdpa_with_kv_cache.out"
NEW_TOKENS = 100


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    """Eager generation is hundreds of tiny ops: one thread is fastest, and keeps
    the test quick on a busy machine."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


# --------------------------------------------------------------------------- #
# The operator in eager PyTorch
# --------------------------------------------------------------------------- #


def _sdpa_math(q, k_cache, v_cache, pos, scale=None):
    """torch's SDPA (math backend) of q (B, T, H, D) over the cache rows [0, pos + T)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    t = q.shape[1]
    end = pos + t
    mask = torch.ones(t, end, dtype=torch.bool).tril(pos)
    with sdpa_kernel(SDPBackend.MATH):
        y = F.scaled_dot_product_attention(q.transpose(1, 2), k_cache[:, :, :end],
                                           v_cache[:, :, :end], attn_mask=mask, scale=scale)
    return y.transpose(1, 2)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("b,t,h,d,length,pos,scale", [
    (1, 5, 2, 8, 16, 0, None),     # prefill at the start
    (2, 3, 3, 4, 16, 6, None),     # prefill after cached rows, batch 2
    (1, 1, 4, 16, 12, 11, None),   # decode into the last position
    (1, 4, 2, 8, 10, 2, 0.25),     # explicit scale
])
def test_op_matches_sdpa_math(dtype, b, t, h, d, length, pos, scale) -> None:
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(b, t, h, d, generator=g, dtype=dtype) for _ in range(3))
    k_cache = torch.randn(b, h, length, d, generator=g, dtype=dtype)
    v_cache = torch.randn(b, h, length, d, generator=g, dtype=dtype)
    k_want, v_want = k_cache.clone(), v_cache.clone()
    k_want[:, :, pos:pos + t] = k.transpose(1, 2)
    v_want[:, :, pos:pos + t] = v.transpose(1, 2)

    y = torch.ops.ember.sdpa_with_kv_cache(q, k, v, k_cache, v_cache, torch.tensor([pos]), scale)

    assert y.shape == q.shape and y.dtype == dtype
    assert torch.equal(k_cache, k_want) and torch.equal(v_cache, v_want)
    tol = 1e-5 if dtype == torch.float32 else 1e-10
    torch.testing.assert_close(y, _sdpa_math(q, k_want, v_want, pos, scale), rtol=tol, atol=tol)


def test_op_out_variant_and_errors() -> None:
    q = torch.randn(1, 2, 2, 4)
    kc, vc = torch.zeros(1, 2, 5, 4), torch.zeros(1, 2, 5, 4)
    out = torch.empty(1, 2, 2, 4)
    custom_ops.sdpa_with_kv_cache_out(q, q, q, kc, vc, torch.tensor([3]), out=out)
    torch.testing.assert_close(out, _sdpa_math(q, kc, vc, 3))
    with pytest.raises(IndexError, match="start_pos 4"):
        torch.ops.ember.sdpa_with_kv_cache(q, q, q, kc, vc, torch.tensor([4]))
    with pytest.raises(ValueError, match="k_cache must be"):
        torch.ops.ember.sdpa_with_kv_cache(q, q, q, torch.zeros(1, 3, 5, 4), vc, torch.tensor([0]))


# --------------------------------------------------------------------------- #
# The reinplace pass on small modules
# --------------------------------------------------------------------------- #


class _Attend(torch.nn.Module):
    """Attention over a cache buffer. `read_after` takes a copy of the cache before
    the op and reads it after (the edge program's no-op removal turns that copy
    into the cache itself, so the op must not update the cache in place);
    `twice` runs the op twice on the cache."""

    def __init__(self, read_after: bool = False, twice: bool = False) -> None:
        super().__init__()
        self.read_after = read_after
        self.twice = twice
        self.proj = torch.nn.Linear(8, 24)
        self.register_buffer("kc", torch.zeros(1, 2, 16, 4))
        self.register_buffer("vc", torch.zeros(1, 2, 16, 4))

    def forward(self, x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        q, k, v = (t.view(1, -1, 2, 4) for t in self.proj(x).split(8, dim=2))
        before = self.kc.to(torch.float32, copy=True)
        y = torch.ops.ember.sdpa_with_kv_cache(q, k, v, self.kc, self.vc, pos)
        if self.twice:
            y = y + torch.ops.ember.sdpa_with_kv_cache(q, k, v, self.kc, self.vc, pos + x.size(1))
        if self.read_after:
            return y.reshape(1, -1, 8) + before[0, :, :8].sum()
        return y.reshape(1, -1, 8)


def _lower(model: torch.nn.Module, example) -> "ember.ExecutorchProgramManager":  # noqa: F821
    seq = torch.export.Dim("T", min=1, max=8)
    ep = torch.export.export(model, example, dynamic_shapes=({1: seq}, None), strict=False)
    return to_edge(ep).to_executorch(ExecutorchBackendConfig())


def _kernel_calls(prog) -> List[tuple]:
    """(operator key, argument value indices) of every instruction of forward."""
    plan = prog.program.execution_plan[0]
    calls = []
    for ins in plan.chains[0].instructions:
        if isinstance(ins.instr_args, S.KernelCall):
            op = plan.operators[ins.instr_args.op_index]
            key = f"{op.name}.{op.overload}" if op.overload else op.name
            calls.append((key, list(ins.instr_args.args)))
    return calls


@pytest.mark.parametrize("read_after,twice", [(False, False), (True, False), (False, True)])
def test_reinplace_in_ember_runtime(read_after: bool, twice: bool) -> None:
    torch.manual_seed(0)
    model = _Attend(read_after, twice).eval()
    eager = _Attend(read_after, twice).eval()
    eager.load_state_dict(model.state_dict())
    prog = _lower(model, (torch.randn(1, 3, 8), torch.tensor([0])))
    calls = _kernel_calls(prog)
    keys = [k for k, _ in calls]
    assert keys.count(OP) == (2 if twice else 1)
    if read_after:
        # the old cache is read after the op: the op mutates a clone, written back at the end
        assert "dim_order_ops::_clone_dim_order.out" in keys and "aten::copy_" in keys
    else:
        assert "aten::copy_" not in keys and "dim_order_ops::_clone_dim_order.out" not in keys

    method = ember_runtime.Runtime.get().load_program(prog.buffer).load_method("forward")
    pos = 0
    for t in (3, 1, 1, 2):
        x = torch.randn(1, t, 8)
        with torch.no_grad():
            want = eager(x, torch.tensor([pos]))
        got = method.execute([x, torch.tensor([pos])])[0]
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
        pos += 2 * t if twice else t


# --------------------------------------------------------------------------- #
# nanoGPT with a KV cache
# --------------------------------------------------------------------------- #


@pytest.fixture(scope="module")
def gpt() -> GPT:
    if os.path.exists(CKPT):
        return GPT.from_checkpoint(CKPT).eval()
    torch.manual_seed(0)
    model = GPT(GPTConfig(block_size=128, vocab_size=97, n_layer=2, n_head=4, n_embd=32))
    with torch.no_grad():  # larger weights than GPT-2's init: clear argmax margins
        for p in model.parameters():
            p.normal_(0.0, 0.3)
    return model.eval()


@pytest.fixture(scope="module")
def kv_prog(gpt: GPT):
    return export_kv(gpt)


@pytest.fixture(scope="module")
def kv_method(kv_prog):
    return ember_runtime.Runtime.get().load_program(kv_prog.buffer).load_method("forward")


def _prompt(gpt: GPT, n: int) -> List[int]:
    g = torch.Generator().manual_seed(1)
    return torch.randint(0, gpt.config.vocab_size, (n,), generator=g).tolist()


def test_kv_method_contract(gpt: GPT, kv_method) -> None:
    meta = kv_method.metadata
    assert meta.num_inputs() == 2 and meta.num_outputs() == 1
    tokens, start = meta.input_tensor_meta(0), meta.input_tensor_meta(1)
    assert tokens.dtype == torch.int64 and tuple(tokens.sizes) == (1, gpt.config.block_size)
    assert tokens.dynamism == "dynamic_bound"
    assert start.dtype == torch.int64 and tuple(start.sizes) == (1,)
    logits = meta.output_tensor_meta(0)
    assert logits.dtype == torch.float32
    assert tuple(logits.sizes) == (1, 1, gpt.config.vocab_size)


def test_caches_are_planned_and_updated_in_place(gpt: GPT, kv_prog) -> None:
    plan = kv_prog.program.execution_plan[0]
    cfg = gpt.config
    cache_shape = [1, cfg.n_head, cfg.block_size, cfg.n_embd // cfg.n_head]
    calls = _kernel_calls(kv_prog)
    sdpa = [args for key, args in calls if key == OP]
    assert len(sdpa) == cfg.n_layer
    caches = set()
    for args in sdpa:
        for idx in args[3:5]:  # k_cache, v_cache
            t = plan.values[idx].val
            assert isinstance(t, S.Tensor) and list(t.sizes) == cache_shape
            assert t.allocation_info is not None, "cache is not in planned memory"
            caches.add(idx)
    assert len(caches) == 2 * cfg.n_layer
    # Nothing copies a cache: no instruction but the fused op touches one.
    for key, args in calls:
        if key != OP:
            assert not caches & set(args), f"{key} uses a cache tensor"
    assert not any(key.startswith("aten::copy") for key, _ in calls)
    # Each cache is a slot of its own in the plan (live for the whole method).
    nbytes = 4 * cache_shape[1] * cache_shape[2] * cache_shape[3]
    slots = sorted(plan.values[i].val.allocation_info.offset for i in caches)
    assert all(b - a >= nbytes for a, b in zip(slots, slots[1:]))
    assert sum(kv_prog.memory_plans["forward"].buffer_sizes) >= len(caches) * nbytes


def test_kv_prefill_and_decode_match_eager(gpt: GPT, kv_method) -> None:
    tokens = _prompt(gpt, 12)
    prefill = 7
    got = kv_method.execute([torch.tensor([tokens[:prefill]]), torch.tensor([0])])[0]
    with torch.no_grad():
        want, _ = gpt(torch.tensor([tokens[:prefill]]))
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    for pos in range(prefill, len(tokens)):
        got = kv_method.execute([torch.tensor([[tokens[pos]]]), torch.tensor([pos])])[0]
        with torch.no_grad():
            want, _ = gpt(torch.tensor([tokens[:pos + 1]]))
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4, msg=f"position {pos}")


def test_kv_start_pos_out_of_range_is_a_clean_error(gpt: GPT, kv_method) -> None:
    end = gpt.config.block_size
    with pytest.raises(ember_runtime.EmberError) as err:
        kv_method.execute([torch.tensor([[1, 2]]), torch.tensor([end - 1])])
    assert err.value.status_name == "DATA_OUT_OF_BOUNDS"
    # the method still works afterwards
    kv_method.execute([torch.tensor([[1]]), torch.tensor([0])])


def _greedy_kv(method, prompt: List[int], n: int, max_len: int) -> List[int]:
    """Greedy tokens from the kv method, with the same window policy as generate_kv."""
    tokens, out, pos, pending = list(prompt), [], 0, list(prompt[-max_len:])
    for _ in range(n):
        if pos + len(pending) > max_len:
            pending, pos = tokens[-max_len:], 0
        logits = method.execute([torch.tensor([pending]), torch.tensor([pos])])[0]
        pos += len(pending)
        nxt = int(logits[0, -1].argmax())
        out.append(nxt)
        tokens.append(nxt)
        pending = [nxt]
    return out


def _greedy_seq(method, prompt: List[int], n: int, max_len: int) -> List[int]:
    """Greedy tokens from the seq method: the last max_len tokens, re-run each step."""
    tokens, out = list(prompt), []
    for _ in range(n):
        logits = method.execute([torch.tensor([tokens[-max_len:]])])[0]
        nxt = int(logits[0, -1].argmax())
        out.append(nxt)
        tokens.append(nxt)
    return out


def _export_seq(gpt: GPT):
    """Export (a): forward(tokens [1, T]) -> logits of the last position; the
    example's own exporter (export.py) when it is there."""
    try:
        from export import export_seq
    except ImportError:
        export_seq = None
    if export_seq is not None:
        return export_seq(gpt)

    class Logits(torch.nn.Module):
        def __init__(self, m: GPT) -> None:
            super().__init__()
            self.m = m

        def forward(self, idx: torch.Tensor) -> torch.Tensor:
            return self.m(idx)[0]

    seq = torch.export.Dim("T", min=1, max=gpt.config.block_size)
    with torch.no_grad():
        ep = torch.export.export(Logits(gpt), (torch.zeros(1, 2, dtype=torch.long),),
                                 dynamic_shapes=({1: seq},), strict=False)
    return to_edge(ep).to_executorch(ExecutorchBackendConfig(fold_constants=True))


def test_greedy_100_tokens_match_eager_and_seq_export(gpt: GPT, kv_method) -> None:
    block = gpt.config.block_size
    prompt = _prompt(gpt, 8)
    with torch.no_grad():
        eager = gpt.generate(torch.tensor([prompt]), NEW_TOKENS, temperature=0)[0, len(prompt):]
    eager = eager.tolist()
    assert generate_kv(KVCacheGPT(gpt).eval(), prompt, NEW_TOKENS) == eager
    assert _greedy_kv(kv_method, prompt, NEW_TOKENS, block) == eager
    seq_method = ember_runtime.Runtime.get().load_program(
        _export_seq(gpt).buffer).load_method("forward")
    assert _greedy_seq(seq_method, prompt, NEW_TOKENS, block) == eager


def test_reference_runtime_lacks_the_operator(kv_prog) -> None:
    """The file is a valid ExecuTorch program; only the custom kernel is missing there."""
    rt = pytest.importorskip("executorch.runtime")
    program = rt.Runtime.get().load_program(kv_prog.buffer)
    assert "forward" in program.method_names
    with pytest.raises(RuntimeError, match="load method forward"):  # OperatorMissing
        program.load_method("forward")

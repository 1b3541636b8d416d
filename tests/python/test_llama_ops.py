"""ExecuTorch's LLM operators (llama::custom_sdpa, sdpa_with_kv_cache, update_cache)
in ember: exported by ExecuTorch's tooling and by ember, run by both runtimes.

- libember has kernels for the four `.out` ops, so ember's export-time kernel
  check accepts them;
- ember's own definitions of the ops (used when the executorch package is not
  there) compute what ExecuTorch's ahead-of-time library computes;
- a small model calling torch.ops.llama.* directly (custom KV cache +
  custom SDPA, causal and not, with a mask, the fused sdpa_with_kv_cache,
  grouped-query attention), exported by ember's exporter and by ExecuTorch's,
  runs in libember and in ExecuTorch's runtime and matches eager over a
  prefill and several decode steps; start positions past the cache fail
  cleanly;
- the same model exports and runs with ember's own definitions when
  executorch cannot be imported (a fresh interpreter);
- ExecuTorch's own llama export path (bench/llm/et_llm_export.py: its
  LlmConfig, source transforms, XNNPACK), at a small size, runs in libember
  and matches ExecuTorch's runtime and eager step by step.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from typing import Dict, List, Optional

import pytest
import torch

from conftest import ROOT

import ember.llm.llama_ops as llama_ops
from ember import ExecutorchBackendConfig, to_edge
from ember import runtime as ember_runtime

KEYS = ("llama::custom_sdpa.out", "llama::sdpa_with_kv_cache.out", "llama::update_cache.out",
        "llama::update_cache_with_indices.out")
H, HKV, D, L, DIM = 4, 2, 8, 16, 32
STEPS = (3, 1, 1, 2, 1)


def _et_available() -> bool:
    return llama_ops.register() == "executorch"


needs_et = pytest.mark.skipif(not _et_available(), reason="executorch's llama ops not loadable")


def test_kernels_registered() -> None:
    from ember.program import _runtime_kernels  # type: ignore[attr-defined]

    registry = _runtime_kernels()
    for key in KEYS:
        assert ember_runtime.has_kernel(key), key
        assert key in registry, key


# --------------------------------------------------------------------------- #
# ember's definitions against ExecuTorch's library
# --------------------------------------------------------------------------- #


@needs_et
@pytest.mark.parametrize("s,pos,causal,mask,h,hkv", [
    (1, 0, True, False, 4, 4), (1, 9, True, False, 4, 2), (5, 0, True, False, 6, 3),
    (5, 7, True, False, 4, 1), (5, 7, False, False, 4, 4), (3, 0, False, True, 4, 2)])
def test_reference_matches_executorch(s: int, pos: int, causal: bool, mask: bool, h: int,
                                      hkv: int) -> None:
    g = torch.Generator().manual_seed(s * 100 + pos)
    q = torch.randn(2, s, h, D, generator=g)
    kc = torch.randn(2, L, hkv, D, generator=g)
    vc = torch.randn(2, L, hkv, D, generator=g)
    m = None
    if mask:
        m = torch.randn(s, L, generator=g)
        m[:, L // 2:] = float("-inf")
    want = torch.ops.llama.custom_sdpa(q, kc, vc, pos, m, 0.0, causal, None)
    got = llama_ops.custom_sdpa_reference(q, kc, vc, pos, m, 0.0, causal, None)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)

    k, v = torch.randn(2, s, hkv, D, generator=g), torch.randn(2, s, hkv, D, generator=g)
    caches = [(kc.clone(), vc.clone()) for _ in range(2)]
    want = torch.ops.llama.sdpa_with_kv_cache(q, k, v, *caches[0], pos, s, m, 0.0, causal, 0.5)
    got = llama_ops.sdpa_with_kv_cache_reference(q, k, v, *caches[1], pos, s, m, 0.0, causal,
                                                 0.5)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    for a, b in zip(caches[0], caches[1]):
        assert torch.equal(a, b)

    c1, c2 = kc.clone(), kc.clone()
    torch.ops.llama.update_cache(k, c1, pos)
    llama_ops.update_cache_reference(k, c2, pos)
    assert torch.equal(c1, c2)


# --------------------------------------------------------------------------- #
# A model calling torch.ops.llama.* directly
# --------------------------------------------------------------------------- #


class TinyAttention(torch.nn.Module):
    """One attention layer over ExecuTorch-layout caches (1, L, HKV, D).

    variant: "causal" / "full" (update_cache twice, then custom_sdpa with
    is_causal true / false), "fused" (sdpa_with_kv_cache), "mask" (update_cache,
    then custom_sdpa with an additive mask input, all L positions read)."""

    def __init__(self, variant: str) -> None:
        super().__init__()
        self.variant = variant
        self.proj = torch.nn.Linear(DIM, (H + 2 * HKV) * D)
        self.register_buffer("kc", torch.zeros(1, L, HKV, D))
        self.register_buffer("vc", torch.zeros(1, L, HKV, D))

    def forward(self, x: torch.Tensor, input_pos: torch.Tensor,
                mask: Optional[torch.Tensor] = None) -> torch.Tensor:
        s = x.size(1)
        q, k, v = self.proj(x).split([H * D, HKV * D, HKV * D], dim=-1)
        q, k, v = q.view(1, s, H, D), k.view(1, s, HKV, D), v.view(1, s, HKV, D)
        pos = input_pos[0].item()
        torch._check(pos >= 0)
        torch._check(pos + s <= L)
        if self.variant == "fused":
            y = torch.ops.llama.sdpa_with_kv_cache(q, k, v, self.kc, self.vc, pos, s, None, 0.0,
                                                   True)
        else:
            torch.ops.llama.update_cache(k, self.kc, pos)
            torch.ops.llama.update_cache(v, self.vc, pos)
            if self.variant == "mask":
                y = torch.ops.llama.custom_sdpa(q, self.kc, self.vc, 0, mask, 0.0, False)
            else:
                y = torch.ops.llama.custom_sdpa(q, self.kc, self.vc, pos, None, 0.0,
                                                self.variant == "causal")
        return y.reshape(1, s, H * D)


def _mask(pos: int, s: int) -> torch.Tensor:
    """Causal over the filled rows, -inf beyond, plus a bias the op must add."""
    m = torch.full((s, L), float("-inf"))
    for t in range(s):
        m[t, :pos + t + 1] = 0.0
    return m + torch.linspace(0, 0.5, L)


def _export(model: TinyAttention, exporter: str) -> bytes:
    model = model.eval()
    T = torch.export.Dim("T", min=1, max=8)
    args = [torch.randn(1, 3, DIM), torch.tensor([0])]
    shapes: List[Optional[Dict[int, object]]] = [{1: T}, None]
    if model.variant == "mask":
        args.append(_mask(0, 3))
        shapes.append({0: T})
    ep = torch.export.export(model, tuple(args), dynamic_shapes=tuple(shapes), strict=False)
    if exporter == "ember":
        return to_edge(ep).to_executorch(ExecutorchBackendConfig()).buffer
    from executorch.exir import EdgeCompileConfig
    from executorch.exir import to_edge as et_to_edge

    return et_to_edge(ep, compile_config=EdgeCompileConfig(
        _check_ir_validity=False)).to_executorch().buffer


def _run_steps(model: TinyAttention, methods: Dict[str, object]) -> None:
    eager = TinyAttention(model.variant).eval()
    eager.load_state_dict(model.state_dict())
    g = torch.Generator().manual_seed(7)
    pos = 0
    for s in STEPS:
        args = [torch.randn(1, s, DIM, generator=g), torch.tensor([pos])]
        if model.variant == "mask":
            args.append(_mask(pos, s))
        with torch.no_grad():
            want = eager(*args)
        for name, method in methods.items():
            got = method.execute(list(args))[0]
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6,
                                       msg=lambda m: f"{name} at pos {pos}: {m}")
        pos += s


@pytest.mark.parametrize("variant", ["causal", "full", "fused", "mask"])
@pytest.mark.parametrize("exporter", ["ember", pytest.param("executorch", marks=needs_et)])
def test_direct_model(variant: str, exporter: str) -> None:
    torch.manual_seed(0)
    model = TinyAttention(variant)
    buf = _export(model, exporter)
    methods = {"ember": ember_runtime.Runtime.get().load_program(buf).load_method("forward")}
    if _et_available():
        from executorch.runtime import Runtime

        methods["executorch"] = Runtime.get().load_program(buf).load_method("forward")
    _run_steps(model, methods)


def test_start_pos_past_the_cache() -> None:
    torch.manual_seed(0)
    model = TinyAttention("fused")
    buf = _export(model, "ember")
    method = ember_runtime.Runtime.get().load_program(buf).load_method("forward")
    method.execute([torch.randn(1, 2, DIM), torch.tensor([L - 2])])
    for pos in (L - 1, L, -1):
        with pytest.raises(ember_runtime.EmberError, match="start_pos"):
            method.execute([torch.randn(1, 2, DIM), torch.tensor([pos])])


def test_ember_definitions_without_executorch() -> None:
    """In an interpreter where executorch cannot be imported, ember defines the
    ops itself, and a model calling them exports and runs."""
    code = textwrap.dedent(f"""
        import sys
        sys.modules["executorch"] = None  # import executorch fails
        sys.path.insert(0, {os.path.join(ROOT, "tests", "python")!r})
        import torch
        import ember.llm.llama_ops as llama_ops
        assert llama_ops.register() == "ember", llama_ops.register()
        import test_llama_ops as t
        for variant in ("causal", "full", "fused", "mask"):
            torch.manual_seed(0)
            model = t.TinyAttention(variant)
            buf = t._export(model, "ember")
            m = t.ember_runtime.Runtime.get().load_program(buf).load_method("forward")
            t._run_steps(model, {{"ember": m}})
        print("ok")
    """)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.join(ROOT, "tests", "python")] + env.get("PYTHONPATH", "").split(os.pathsep))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          timeout=600)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stderr[-3000:]


# --------------------------------------------------------------------------- #
# ExecuTorch's own llama export path
# --------------------------------------------------------------------------- #

SMALL = dict(n_layer=2, n_head=4, n_kv_head=2, n_embd=64, vocab_size=256, block_size=32)


def _export_et_llm(tmp_path_factory, name: str, sizes: Dict[str, int], **options):
    """ExecuTorch's LLM export of a small random llama into a temporary
    file: (the eager model it exported, the file's path)."""
    if not _et_available():
        pytest.skip("executorch's llama ops not loadable")
    sys.path.insert(0, os.path.join(ROOT, "bench", "llm"))
    from et_llm_export import export_executorch_llm

    path = tmp_path_factory.mktemp(name) / f"{name}.pte"
    return export_executorch_llm(sizes, path, weight_std=0.2, **options), path


def _steps_match_eager(eager, buf: bytes, chunks, seed: int) -> None:
    """ember's runtime and ExecuTorch's on the program `buf`, fed random
    chunks of tokens (prefill, then decode steps): at every step both give
    the eager model's logits."""
    from executorch.runtime import Runtime

    methods = {"ember": ember_runtime.Runtime.get().load_program(buf).load_method("forward"),
               "executorch": Runtime.get().load_program(buf).load_method("forward")}
    g = torch.Generator().manual_seed(seed)
    pos = 0
    for s in chunks:
        tokens = torch.randint(0, SMALL["vocab_size"], (1, s), generator=g)
        with torch.no_grad():
            want = eager(tokens, {"input_pos": torch.tensor([pos])})
        want = want[0] if isinstance(want, tuple) else want
        outs = {name: m.execute([tokens, torch.tensor([pos])])[0] for name, m in methods.items()}
        assert want.abs().max() > 0.1  # logits of some size, so the comparison means something
        for name, got in outs.items():
            torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4,
                                       msg=lambda m: f"{name} at pos {pos}: {m}")
        torch.testing.assert_close(outs["ember"], outs["executorch"], rtol=1e-4, atol=1e-4)
        pos += s


def _executorch_greedy(path, prompt, n_new: int) -> list:
    """The n_new greedy tokens ExecuTorch's runtime picks after prompt."""
    from executorch.runtime import Runtime

    method = Runtime.get().load_program(str(path)).load_method("forward")
    pending, pos, ids = list(prompt), 0, []
    for _ in range(n_new):
        logits = method.execute([torch.tensor([pending]), torch.tensor([pos])])[0]
        pos += len(pending)
        pending = [int(logits.reshape(-1, logits.shape[-1])[-1].argmax())]
        ids += pending
    return ids


@pytest.fixture(scope="module")
def et_llm(tmp_path_factory):
    eager, path = _export_et_llm(tmp_path_factory, "llama_small", SMALL)
    return eager, path.read_bytes()


def test_executorch_llm_export(et_llm) -> None:
    from executorch.exir._serialize._program import deserialize_pte_binary

    eager, buf = et_llm
    pte = deserialize_pte_binary(buf)
    plan = getattr(pte, "program", pte).execution_plan[0]
    ops = {f"{o.name}.{o.overload}" for o in plan.operators}
    assert {"llama::custom_sdpa.out", "llama::update_cache.out"} <= ops
    assert any(d.id == "XnnpackBackend" for d in plan.delegates)

    _steps_match_eager(eager, buf, (5, 1, 1, 1, 1, 1, 4, 1), seed=3)


# ExecuTorch's LLM export with 8da4w linear layers (its qmode 8da4w: torchao's
# dynamic int8 activations, 4-bit weights in groups of 32), which lowers them
# to quantized XnnpackBackend payloads, and --embedding-quantize 4,32 (the
# token embedding an embedding_4bit lookup, a portable kernel in both
# runtimes), as its Llama 3.2 recipes export: ember runs ExecuTorch's own
# file. One export serves the tests below (each takes minutes).
SMALL_Q = dict(SMALL, hidden_dim=128)  # every linear's input width a multiple of 32


@pytest.fixture(scope="module")
def et_llm_8da4w(tmp_path_factory):
    return _export_et_llm(tmp_path_factory, "llama_small_8da4w", SMALL_Q, qmode="8da4w",
                          group_size=32, embedding_quantize="4,32")[1]


def _ember_llm() -> Optional[str]:
    env = os.environ.get("EMBER_LLM")
    if env:
        return env if os.path.isabs(env) else os.path.join(ROOT, env)
    build = os.environ.get("EMBER_BUILD_DIR", os.path.join(ROOT, "build"))
    for exe in (os.path.join(build, "ember-llm"),
                os.path.join(os.path.dirname(sys.executable), "ember-llm")):
        if os.access(exe, os.X_OK):
            return exe
    return None


def test_executorch_llm_export_8da4w(et_llm_8da4w) -> None:
    """Both runtimes on ExecuTorch's quantized payloads, step by step: the same
    dynamic quantization and integer products, so the logits agree to float
    rounding (seen: 1.5e-6 of logits around 5), far inside one quantization
    step of the output."""
    from executorch.exir._serialize._program import deserialize_pte_binary
    from executorch.runtime import Runtime

    buf = et_llm_8da4w.read_bytes()
    pte = deserialize_pte_binary(buf)
    program = getattr(pte, "program", pte)
    plan = program.execution_plan[0]
    assert any(d.id == "XnnpackBackend" for d in plan.delegates)
    assert {"get_max_seq_len", "use_kv_cache"} <= {p.name for p in program.execution_plan}

    methods = {"ember": ember_runtime.Runtime.get().load_program(buf).load_method("forward"),
               "executorch": Runtime.get().load_program(buf).load_method("forward")}
    g = torch.Generator().manual_seed(3)
    pos = 0
    for s in (5, 1, 1, 1, 1, 1, 4, 1):
        tokens = torch.randint(0, SMALL_Q["vocab_size"], (1, s), generator=g)
        outs = {name: m.execute([tokens, torch.tensor([pos])])[0] for name, m in methods.items()}
        assert outs["executorch"].abs().max() > 0.5
        torch.testing.assert_close(outs["ember"], outs["executorch"], rtol=1e-4, atol=1e-4,
                                   msg=lambda m: f"at pos {pos}: {m}")
        pos += s


def test_executorch_llm_export_embedding_4bit(et_llm_8da4w) -> None:
    """The same file's token embedding is an embedding_4bit lookup; over a
    greedy continuation the logits agree step by step and ember-llm picks
    ExecuTorch's greedy tokens."""
    from executorch.exir._serialize._program import deserialize_pte_binary
    from executorch.runtime import Runtime

    buf = et_llm_8da4w.read_bytes()
    pte = deserialize_pte_binary(buf)
    plan = getattr(pte, "program", pte).execution_plan[0]
    assert "quantized_decomposed::embedding_4bit.dtype_out" in {
        f"{o.name}.{o.overload}" for o in plan.operators}
    methods = {"ember": ember_runtime.Runtime.get().load_program(buf).load_method("forward"),
               "executorch": Runtime.get().load_program(buf).load_method("forward")}
    prompt, n_new = [1, 17, 42, 99, 7, 3], 12
    pending, pos, want = list(prompt), 0, []
    for _ in range(n_new):
        outs = {name: m.execute([torch.tensor([pending]), torch.tensor([pos])])[0]
                for name, m in methods.items()}
        torch.testing.assert_close(outs["ember"], outs["executorch"], rtol=1e-4, atol=1e-4,
                                   msg=lambda m: f"at pos {pos}: {m}")
        pos += len(pending)
        nxt = int(outs["executorch"].reshape(-1, outs["executorch"].shape[-1])[-1].argmax())
        want.append(nxt)
        pending = [nxt]
    exe = _ember_llm()
    if exe is None:
        pytest.skip("ember-llm is not built")
    res = subprocess.run([exe, "--model", str(et_llm_8da4w), "--prompt-ids",
                          " ".join(map(str, prompt)), "--max-new-tokens", str(n_new),
                          "--temperature", "0", "--threads", "1"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert [int(t) for t in res.stdout.split()] == want


def test_executorch_llm_export_8da4w_in_ember_llm(et_llm_8da4w) -> None:
    """ember-llm on ExecuTorch's quantized export, token ids in and out (no
    tokenizer fits its random vocabulary): the same greedy tokens as
    ExecuTorch's runtime, and the file's own limits (get_max_seq_len)."""
    exe = _ember_llm()
    if exe is None:
        pytest.skip("ember-llm is not built")
    prompt = [1, 17, 42, 99, 7, 3]
    n_new = 20
    want = _executorch_greedy(et_llm_8da4w, prompt, n_new)
    res = subprocess.run([exe, "--model", str(et_llm_8da4w), "--prompt-ids",
                          " ".join(map(str, prompt)), "--max-new-tokens", str(n_new),
                          "--temperature", "0", "--threads", "1"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    got = [int(t) for t in res.stdout.split()]
    # the file names no end token among these ids, so all n_new come out
    assert got == want

    too_long = " ".join(["5"] * (SMALL_Q["block_size"] + 1))
    res = subprocess.run([exe, "--model", str(et_llm_8da4w), "--prompt-ids", too_long,
                          "--max-new-tokens", "1"], capture_output=True, text=True, timeout=120)
    assert res.returncode != 0 and "takes at most" in res.stderr, res.stderr


# ExecuTorch's export with --quantize_kv_cache: the caches int8 with per-token
# scales and zero points (QuantizedKVCache), attention in
# llama::custom_quantized_sdpa on the int8 rows (QuantizedSDPA).
@pytest.fixture(scope="module")
def et_llm_int8_kv(tmp_path_factory):
    return _export_et_llm(tmp_path_factory, "llama_small_int8_kv", SMALL, quantize_kv_cache=True)


def test_executorch_llm_export_int8_kv_cache(et_llm_int8_kv) -> None:
    """ember runs ExecuTorch's int8 KV cache: its program holds
    custom_quantized_sdpa and the per-token quantization ops, and at every
    step ember's logits equal ExecuTorch's runtime's and the eager model's
    (the same integer products; seen: 6e-6 of logits around 5); ember-llm
    picks ExecuTorch's greedy tokens."""
    from executorch.exir._serialize._program import deserialize_pte_binary

    eager, path = et_llm_int8_kv
    buf = path.read_bytes()
    pte = deserialize_pte_binary(buf)
    ops = {f"{o.name}.{o.overload}"
           for o in getattr(pte, "program", pte).execution_plan[0].operators}
    assert {"llama::custom_quantized_sdpa.out",
            "quantized_decomposed::quantize_per_token.out"} <= ops, ops
    _steps_match_eager(eager, buf, (5, 1, 1, 1, 4, 1, 1, 1), seed=5)

    exe = _ember_llm()
    if exe is None:
        pytest.skip("ember-llm is not built")
    prompt, n_new = [1, 17, 42, 99, 7, 3], 16
    want_ids = _executorch_greedy(path, prompt, n_new)
    res = subprocess.run([exe, "--model", str(path), "--prompt-ids", " ".join(map(str, prompt)),
                          "--max-new-tokens", str(n_new), "--temperature", "0", "--stats"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert [int(t) for t in res.stdout.split()] == want_ids


@pytest.mark.parametrize("pos,causal,mask,seq_at_2", [(0, True, False, False),
                                                      (5, True, False, False),
                                                      (5, False, False, True),
                                                      (0, False, True, False)])
def test_quantized_reference_matches_executorch(pos, causal, mask, seq_at_2) -> None:
    """ember's eager custom_quantized_sdpa (the definition used without the
    executorch package) gives ExecuTorch's op's numbers."""
    if not _et_available():
        pytest.skip("executorch's llama ops not loadable")
    from ember.llm.llama_ops import custom_quantized_sdpa_reference

    g = torch.Generator().manual_seed(pos * 4 + causal * 2 + mask)
    b, s, h, hkv, d, length = 1, 3, 4, 2, 16, 12

    def rows(*shape):
        x = torch.randint(-128, 128, shape, generator=g, dtype=torch.int8)
        sc = torch.rand(*shape[:-1], 1, generator=g) * 0.02 + 0.001
        zp = torch.randint(-20, 20, (*shape[:-1], 1), generator=g, dtype=torch.int8)
        return x, sc, zp

    def lay(t):
        return t.transpose(1, 2).contiguous() if seq_at_2 else t

    (q, qs, qz), (k, ks, kz), (v, vs, vz) = rows(b, s, h, d), rows(b, length, hkv, d), \
        rows(b, length, hkv, d)
    m = torch.where(torch.rand(s, length, generator=g) < 0.3, float("-inf"), 0.0) if mask else None
    if m is not None:
        m[:, 0] = 0.0
    args = (lay(q), lay(k), lay(v), pos, m, 0.0, causal, None, lay(qz), lay(qs), lay(kz),
            lay(ks), lay(vz), lay(vs), seq_at_2)
    ours = custom_quantized_sdpa_reference(*args)
    theirs = torch.ops.llama.custom_quantized_sdpa(*args)
    torch.testing.assert_close(ours, theirs, rtol=1e-5, atol=1e-5)

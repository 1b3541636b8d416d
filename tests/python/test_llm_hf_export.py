"""ember's LLM exporter (ember.llm.export) on Hugging Face model directories
written here by transformers (config.json + model.safetensors, random
weights, small sizes), per family:

- Llama 3 (grouped-query attention, llama3 rope scaling, untied output),
- SmolLM2 (the Llama layout, tied embeddings, no rope scaling),
- Qwen 2.5 (q/k/v biases), Qwen 3 (q/k RMSNorm, head_dim x heads wider than
  the model),
- Phi-4-mini (fused qkv and gate/up, rotary on 3/4 of each head, LongRoPE
  short factors and attention scaling, tied embeddings),
- Gemma 3 (two sliding-window layers of 8 positions, which the prompt and
  decode steps cross, and a global one with linear rope scaling; q/k norms,
  query_pre_attn_scalar, the embedding scale, GELU-tanh, four norms a layer).

float32 (xnnpack recipe): logits within 1e-4 of transformers' model built
from the same directory at a prefill and 16 decode steps, and greedy tokens
equal, in ember's runtime and through ember-llm; ExecuTorch's runtime runs
the same file to the same logits. The vulkan recipe: the same, on the GPU
(lavapipe in CI). 8da4w (with 4-bit embeddings): logits
close to the same quantization in eager PyTorch, no further from
transformers' than the quantization itself takes them, and equal to
ExecuTorch's runtime on the same file. The metadata methods, the
command line (progress, errors) and refused families.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional

import pytest
import torch

from conftest import ROOT

transformers = pytest.importorskip("transformers")

from ember import runtime as ember_runtime  # noqa: E402
from ember.llm.export import export_hf  # noqa: E402

CONTEXT = 96
PROMPT = [5, 17, 42, 99, 7, 3, 250]
STEPS = 16

LLAMA3_ROPE = {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
               "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}

FAMILIES: Dict[str, dict] = {
    "llama3": dict(cls="Llama", vocab_size=320, hidden_size=64, intermediate_size=128,
                   num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                   rms_norm_eps=1e-5, tie_word_embeddings=False, rope_parameters=LLAMA3_ROPE,
                   bos_token_id=1, eos_token_id=[2, 3]),
    "smollm2": dict(cls="Llama", vocab_size=320, hidden_size=64, intermediate_size=160,
                    num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4,
                    rms_norm_eps=1e-5, tie_word_embeddings=True,
                    rope_parameters={"rope_type": "default", "rope_theta": 100000.0},
                    bos_token_id=1, eos_token_id=2),
    "qwen2": dict(cls="Qwen2", vocab_size=320, hidden_size=64, intermediate_size=128,
                  num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                  rms_norm_eps=1e-6, tie_word_embeddings=True,
                  rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
                  eos_token_id=2),
    "qwen3": dict(cls="Qwen3", vocab_size=320, hidden_size=64, intermediate_size=128,
                  num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=32,
                  rms_norm_eps=1e-6, tie_word_embeddings=True,
                  rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
                  eos_token_id=2),
    "phi4_mini": dict(cls="Phi3", vocab_size=320, hidden_size=64, intermediate_size=128,
                      num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                      rms_norm_eps=1e-5, tie_word_embeddings=True, pad_token_id=0,
                      max_position_embeddings=4 * CONTEXT, original_max_position_embeddings=CONTEXT,
                      rope_parameters={"rope_type": "longrope", "rope_theta": 10000.0,
                                       "partial_rotary_factor": 0.75,
                                       "short_factor": [1.0, 1.1, 1.3, 1.6, 2.0, 2.5],
                                       "long_factor": [1.0, 2.0, 4.0, 8.0, 16.0, 32.0],
                                       "original_max_position_embeddings": CONTEXT},
                      bos_token_id=1, eos_token_id=[2, 3]),
    "gemma3": dict(cls=("Gemma3Text", "Gemma3"), vocab_size=320, hidden_size=64, intermediate_size=128,
                   num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2, head_dim=32,
                   query_pre_attn_scalar=24, rms_norm_eps=1e-6, tie_word_embeddings=True,
                   sliding_window=8, pad_token_id=0, hidden_activation="gelu_pytorch_tanh",
                   layer_types=["sliding_attention", "sliding_attention", "full_attention"],
                   rope_parameters={"full_attention": {"rope_type": "linear", "factor": 8.0,
                                                       "rope_theta": 1000000.0},
                                    "sliding_attention": {"rope_type": "default",
                                                          "rope_theta": 10000.0}},
                   bos_token_id=2, eos_token_id=[1, 3]),
}


def _hf_model(family: str, std: float = 0.2):
    spec = dict(FAMILIES[family])
    cls = spec.pop("cls")
    config_name, model_name = cls if isinstance(cls, tuple) else (cls, cls)
    spec.setdefault("max_position_embeddings", CONTEXT)
    config = getattr(transformers, f"{config_name}Config")(**spec)
    model = getattr(transformers, f"{model_name}ForCausalLM")(config).eval()
    g = torch.Generator().manual_seed(sum(map(ord, family)))
    with torch.no_grad():
        for pname, p in model.named_parameters():
            if p.dim() > 1:
                p.copy_(torch.randn(p.shape, generator=g) * std)
            elif pname.endswith(".bias"):
                p.copy_(torch.randn(p.shape, generator=g) * 0.1)
            else:
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=g))
    if spec.get("tie_word_embeddings"):
        model.tie_weights()
    return model


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def family(request, tmp_path_factory):
    """(name, transformers model, its directory, {"fp32": pte path})."""
    name = request.param
    model = _hf_model(name)
    d = tmp_path_factory.mktemp(name)
    model.save_pretrained(str(d))
    pte = d / "model_fp32.pte"
    export_hf(str(d), pte, recipe="xnnpack", max_seq_len=CONTEXT)
    return name, model, d, {"fp32": pte}


@torch.no_grad()
def hf_logits(model, tokens: List[int]) -> torch.Tensor:
    return model(torch.tensor([tokens])).logits[0, -1]


def run_steps(method, model, tokens: List[int], steps: int):
    """Prefill tokens, then decode greedily for `steps` tokens, comparing
    with transformers' logits over the whole sequence at each step. Yields
    (ours, theirs) logits; returns the tokens."""
    seq = list(tokens)
    pending, pos = list(tokens), 0
    pairs = []
    for _ in range(steps + 1):
        got = method.execute([torch.tensor([pending]), torch.tensor([pos])])[0].reshape(-1)
        want = hf_logits(model, seq)
        pairs.append((got, want))
        pos += len(pending)
        nxt = int(want.argmax())
        seq.append(nxt)
        pending = [nxt]
    return seq, pairs


def _load(path: Path):
    return ember_runtime.Runtime.get().load_program(path.read_bytes()).load_method("forward")


def test_float32_logits_and_tokens_match_transformers(family) -> None:
    name, model, _, ptes = family
    seq, pairs = run_steps(_load(ptes["fp32"]), model, PROMPT, STEPS)
    for k, (got, want) in enumerate(pairs):
        assert want.abs().max() > 1.0  # logits far from flat: a real comparison
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4,
                                   msg=lambda m: f"{name} step {k}: {m}")
        assert int(got.argmax()) == int(want.argmax()), f"{name} step {k}"
    # greedy generation in transformers equals the sequence followed above
    with torch.no_grad():
        gen = model.generate(torch.tensor([PROMPT]), max_new_tokens=STEPS + 1, do_sample=False,
                             eos_token_id=None, pad_token_id=0)
    assert gen[0].tolist() == seq


def _exe() -> Optional[str]:
    built = os.path.join(os.environ.get("EMBER_BUILD_DIR", os.path.join(ROOT, "build")), "ember-llm")
    return built if os.access(built, os.X_OK) else shutil.which("ember-llm")


def test_ember_llm_greedy_tokens(family) -> None:
    name, model, _, ptes = family
    exe = _exe()
    if exe is None:
        pytest.skip("ember-llm is not built")
    n = 24
    res = subprocess.run([exe, "--model", str(ptes["fp32"]), "--prompt-ids",
                          " ".join(map(str, PROMPT)), "--max-new-tokens", str(n),
                          "--temperature", "0"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    got = [int(t) for t in res.stdout.split()]
    eos = FAMILIES[name]["eos_token_id"]
    eos = set(eos if isinstance(eos, list) else [eos])
    with torch.no_grad():
        gen = model.generate(torch.tensor([PROMPT]), max_new_tokens=n, do_sample=False,
                             eos_token_id=sorted(eos), pad_token_id=0)
    want = gen[0, len(PROMPT):].tolist()
    while want and want[-1] in eos:  # ember-llm prints no stop token
        want.pop()
    assert got == want, f"{name}: ember-llm {got}, transformers {want}"


def test_metadata_methods(family) -> None:
    name, _, _, ptes = family
    program = ember_runtime.Runtime.get().load_program(ptes["fp32"].read_bytes())
    value = {m: program.load_method(m).execute([]) for m in (
        "get_max_seq_len", "get_max_context_len", "get_vocab_size", "get_n_layers",
        "use_kv_cache", "enable_dynamic_shape", "get_eos_ids")}
    assert value["get_max_seq_len"] == [CONTEXT] and value["get_max_context_len"] == [CONTEXT]
    assert value["get_vocab_size"] == [FAMILIES[name]["vocab_size"]]
    assert value["get_n_layers"] == [FAMILIES[name]["num_hidden_layers"]]
    assert value["use_kv_cache"] == [True] and value["enable_dynamic_shape"] == [True]
    eos = FAMILIES[name]["eos_token_id"]
    assert value["get_eos_ids"] == (eos if isinstance(eos, list) else [eos])


def _executorch_method(path: Path):
    try:
        from executorch.extension.llm.custom_ops import custom_ops  # noqa: F401
        from executorch.runtime import Runtime
    except ImportError as e:
        pytest.skip(f"ExecuTorch's runtime with its LLM ops: {e}")
    return Runtime.get().load_program(str(path)).load_method("forward")


def test_executorch_runs_the_file(family) -> None:
    name, _, _, ptes = family
    ours, theirs = _load(ptes["fp32"]), _executorch_method(ptes["fp32"])
    pending, pos = list(PROMPT), 0
    for _ in range(4):
        args = [torch.tensor([pending]), torch.tensor([pos])]
        a, b = ours.execute(args)[0], theirs.execute(args)[0]
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4, msg=lambda m: f"{name}: {m}")
        pos += len(pending)
        pending = [int(b.reshape(-1).argmax())]


def test_vulkan_recipe_matches_transformers(family, tmp_path) -> None:
    """--recipe vulkan: the layers run in VulkanBackend (the KV cache and
    attention stay on the CPU) at a prefill and 16 decode steps, float32."""
    if not ember_runtime.backend_available("VulkanBackend"):
        pytest.skip("no Vulkan device")
    name, model, d, _ = family
    pte = tmp_path / "model_vulkan.pte"
    export_hf(str(d), pte, recipe="vulkan", max_seq_len=CONTEXT)
    assert b"VulkanBackend" in pte.read_bytes()
    seq, pairs = run_steps(_load(pte), model, PROMPT, STEPS)
    for k, (got, want) in enumerate(pairs):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4,
                                   msg=lambda m: f"{name} step {k}: {m}")
        assert int(got.argmax()) == int(want.argmax()), f"{name} step {k}"


@pytest.mark.parametrize("name", ["llama3", "qwen3"])
def test_8da4w_within_quantization_error(name, tmp_path) -> None:
    """8da4w with 4-bit embeddings: at every step ember's logits are within
    5% (relative L2) of the same quantization done in eager PyTorch
    (torchao's arithmetic on ember.llm.hf's model; XNNPACK's dynamic
    activation quantization rounds some values the other way), and no
    further from transformers' float32 logits than the eager quantized
    model is (the quantization's own error, 24-45% for 4-bit weights and
    embeddings of a model this small). ExecuTorch's runtime gives ember's
    logits on the same file."""
    from ember.llm.export import quantize_linears
    from ember.llm.hf import load_model
    from ember.llm.quantize import QuantizedEmbedding

    model = _hf_model(name, std=0.08)
    model.save_pretrained(str(tmp_path))
    pte = tmp_path / "model_8da4w.pte"
    info = export_hf(str(tmp_path), pte, recipe="xnnpack", quant="8da4w", group_size=32,
                     embedding_quant="4,32", max_seq_len=CONTEXT)
    assert info["bytes"] == pte.stat().st_size
    eager = load_model(str(tmp_path), max_seq_len=CONTEXT)
    eager.model.embed_tokens = QuantizedEmbedding.from_float(eager.model.embed_tokens, 4, 32)
    eager = quantize_linears(eager, (torch.zeros(1, 2, dtype=torch.long), torch.tensor([0])),
                             None, "8da4w", 32)
    ours = _load(pte)
    seq, pending, pos = list(PROMPT), list(PROMPT), 0
    for k in range(9):
        args = [torch.tensor([pending]), torch.tensor([pos])]
        got = ours.execute(args)[0].reshape(-1)
        with torch.no_grad():
            q = eager(*args).reshape(-1)
        want = hf_logits(model, seq)
        to_eager = float((got - q).norm() / q.norm())
        quant_error = float((q - want).norm() / want.norm())
        ours_error = float((got - want).norm() / want.norm())
        # seen: 1.5-2.5% from eager, quantization errors 24-45%
        assert to_eager < 0.05, f"{name} step {k}: {to_eager:.4f} from the eager quantized model"
        assert ours_error < 1.1 * quant_error + 0.02, (name, k, ours_error, quant_error)
        assert quant_error < 0.6  # 4-bit weights and embeddings of a tiny random model
        pos += len(pending)
        pending = [int(q.argmax())]
        seq += pending
    # the quantized arithmetic is the file's: ExecuTorch's runtime gives the same logits
    theirs = _executorch_method(pte)
    ours = _load(pte)
    args = [torch.tensor([PROMPT]), torch.tensor([0])]
    torch.testing.assert_close(ours.execute(args)[0], theirs.execute(args)[0], rtol=1e-4,
                               atol=1e-4)


def test_command_line(tmp_path, capsys) -> None:
    """python -m ember.llm.export writes the file and shows its stages; bad
    directories end with one error line (main() in process, for speed)."""
    from ember.llm.export import main

    model = _hf_model("smollm2")
    model.save_pretrained(str(tmp_path / "smol"))
    out = tmp_path / "smol.pte"
    res = subprocess.run([sys.executable, "-m", "ember.llm.export", "--model", str(tmp_path / "smol"),
                          "--out", str(out), "--recipe", "portable", "--max-seq-len", "32"],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    for stage in ("loading", "exporting", "lowering (portable)", "writing"):
        assert stage in res.stderr, res.stderr
    assert out.stat().st_size > 0

    def fails(d: Path, *words: str) -> None:
        capsys.readouterr()
        assert main(["--model", str(d), "--out", str(tmp_path / "x.pte")]) == 1
        last = capsys.readouterr().err.strip().splitlines()[-1]
        assert last.startswith("ember.llm.export: error: "), last
        for w in words:
            assert w in last, last

    # a family not written yet, a directory without config.json, weights
    # that do not fit the config (the tensor is named)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "config.json").write_text('{"model_type": "mamba"}')
    fails(tmp_path / "other", "mamba")
    (tmp_path / "empty").mkdir()
    fails(tmp_path / "empty", "config.json")
    cfg = json.loads((tmp_path / "smol" / "config.json").read_text())
    cfg["intermediate_size"] = 96
    (tmp_path / "smol" / "config.json").write_text(json.dumps(cfg))
    fails(tmp_path / "smol", "mlp", "the config makes it")


def test_weights_read_in_slices(tmp_path, monkeypatch) -> None:
    """The safetensors reader: read a few values at a time, every weight
    equals what the safetensors package reads, a tied head shares the
    embedding's storage, the 4-bit embedding quantized a few rows at a time
    equals the whole table at once; damaged files end with an error that
    names the file."""
    from safetensors.torch import load_file

    from ember.llm import hf, quantize

    model = _hf_model("smollm2")
    model.save_pretrained(str(tmp_path))
    [path] = list(tmp_path.glob("*.safetensors"))
    monkeypatch.setattr(hf, "_CHUNK_BYTES", 100)  # 50 bfloat16 / 25 float32 values a read
    ours = hf.load_model(str(tmp_path), max_seq_len=CONTEXT)
    theirs = load_file(str(path))
    params = ours.state_dict()
    assert theirs and set(theirs) <= set(params)
    for name, t in theirs.items():
        assert torch.equal(params[name], t.to(params[name].dtype)), name
    assert ours.lm_head.weight.data_ptr() == ours.model.embed_tokens.weight.data_ptr()

    emb = ours.model.embed_tokens
    whole = quantize.QuantizedEmbedding.from_float(emb, 4, 32)
    monkeypatch.setattr(quantize, "_BLOCK_BYTES", 3 * emb.weight.shape[1] * 4)
    rows = quantize.QuantizedEmbedding.from_float(emb, 4, 32)
    assert torch.equal(whole.weight, rows.weight) and torch.equal(whole.scales, rows.scales)

    data = path.read_bytes()
    for damaged, words in ((data[:-7], "does not fit"), (data[:5], "not a safetensors file"),
                           (data[:8] + b"#" + data[9:], "not JSON"),
                           ((2**40).to_bytes(8, "little") + data[8:], "header length")):
        path.write_bytes(damaged)
        with pytest.raises(ValueError, match=words) as e:
            hf.load_model(str(tmp_path), max_seq_len=CONTEXT)
        assert str(path) in str(e.value)


def test_external_weights_and_weight_cache(tmp_path, capsys) -> None:
    """--external-weights: the program keeps only its graph, the weights go
    to <stem>.ptd, and ember-llm --data gives transformers' greedy tokens;
    without the data file it fails with a clear error. The weight cache:
    the first run packs and keeps the weights, the second maps them, and the
    tokens are the same."""
    from ember.llm.export import main

    exe = _exe()
    if exe is None:
        pytest.skip("ember-llm is not built")
    model = _hf_model("llama3")
    model.save_pretrained(str(tmp_path / "hf"))
    pte, ptd = tmp_path / "llama.pte", tmp_path / "llama.ptd"
    assert main(["--model", str(tmp_path / "hf"), "--out", str(pte), "--quant", "none",
                 "--max-seq-len", str(CONTEXT), "--external-weights"]) == 0
    assert "llama.ptd" in capsys.readouterr().err
    # every linear weight (and the embedding) is in the data file
    assert ptd.stat().st_size > 5 * pte.stat().st_size, (pte.stat().st_size, ptd.stat().st_size)

    n = 12
    with torch.no_grad():
        gen = model.generate(torch.tensor([PROMPT]), max_new_tokens=n, do_sample=False,
                             eos_token_id=[2, 3], pad_token_id=0)
    want = gen[0, len(PROMPT):].tolist()
    while want and want[-1] in (2, 3):
        want.pop()

    def ember_llm(*extra: str) -> subprocess.CompletedProcess:
        return subprocess.run([exe, "--model", str(pte), "--prompt-ids", " ".join(map(str, PROMPT)),
                               "--max-new-tokens", str(n), "--temperature", "0", "--stats",
                               *extra], capture_output=True, text=True, timeout=120)

    cache = tmp_path / "cache"
    runs = [ember_llm("--data", str(ptd), "--weight-cache", str(cache)) for _ in range(2)]
    for res in runs:
        assert res.returncode == 0, res.stderr
        assert [int(t) for t in res.stdout.split()] == want, (res.stdout, want)
        assert "load + first token:" in res.stderr
    assert "kept in " + str(cache) in runs[0].stderr, runs[0].stderr
    assert "mapped" in runs[1].stderr and "not there" not in runs[1].stderr, runs[1].stderr
    assert len(list(cache.iterdir())) == 1
    off = ember_llm("--data", str(ptd), "--weight-cache", "off")
    assert off.returncode == 0 and "weight cache" not in off.stderr, off.stderr

    missing = ember_llm("--weight-cache", "off")
    assert missing.returncode != 0
    assert "named data" in missing.stderr or "not found" in missing.stderr, missing.stderr


@pytest.mark.parametrize("name", ["llama3", "gemma3"])
def test_int8_kv_cache(name, tmp_path) -> None:
    """--kv-cache int8 (ExecuTorch's --quantize_kv_cache form; gemma3 also
    runs its sliding-window mask through llama::custom_quantized_sdpa): at a
    prefill and 12 decode steps ember's logits equal the eager model with
    the same int8 cache and ExecuTorch's runtime on the same file, and stay
    within 10% (relative L2) of transformers' float model; the program plans
    less memory than the float32 cache's, as ember-llm --stats reports."""
    model = _hf_model(name)
    model.save_pretrained(str(tmp_path))
    from ember.llm.hf import load_model

    ptes = {}
    for kv in ("float", "int8"):
        ptes[kv] = tmp_path / f"model_{kv}.pte"
        export_hf(str(tmp_path), ptes[kv], recipe="xnnpack", max_seq_len=CONTEXT, kv_cache=kv)
    eager = load_model(str(tmp_path), max_seq_len=CONTEXT).quantize_kv_cache()
    ours, theirs = _load(ptes["int8"]), _executorch_method(ptes["int8"])
    seq, pending, pos = list(PROMPT), list(PROMPT), 0
    for step in range(13):
        args = [torch.tensor([pending]), torch.tensor([pos])]
        got = ours.execute(args)[0].reshape(-1)
        with torch.no_grad():
            want = eager(*args).reshape(-1)
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4,
                                   msg=lambda m: f"{name} step {step} vs eager: {m}")
        torch.testing.assert_close(got, theirs.execute(args)[0].reshape(-1), rtol=1e-4,
                                   atol=1e-4, msg=lambda m: f"{name} step {step} vs ET: {m}")
        hf = hf_logits(model, seq)
        err = float((got - hf).norm() / hf.norm())
        # the int8 rows' own error, on random weights this large (std 0.2): seen 0.2-5.4%
        assert err < 0.1, f"{name} step {step}: {err:.4f} from transformers"
        pos += len(pending)
        pending = [int(hf.argmax())]
        seq += pending

    exe = _exe()
    if exe is None:
        pytest.skip("ember-llm is not built")
    planned = {}
    for kv, pte in ptes.items():
        res = subprocess.run([exe, "--model", str(pte), "--prompt-ids", "5 6 7",
                              "--max-new-tokens", "2", "--temperature", "0", "--stats"],
                             capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, res.stderr
        line = next(l for l in res.stderr.splitlines() if l.startswith("planned memory:"))
        value, unit = line.split()[2:4]
        planned[kv] = float(value) * (1024.0 if unit == "MiB" else 1.0)  # KiB
    assert planned["int8"] < planned["float"], planned

"""The benchmarks' reader of `ember-llm --stats` (bench/llm/ember_llm_stats.py)
and the bytes-per-token arithmetic of bench/vulkan/bench_vulkan.py: on
printed text, and on what the built ember-llm prints for a portable and a
Vulkan-delegated nanoGPT."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, "bench", "llm"))
from ember_llm_stats import parse_stats  # noqa: E402

STATS = """\
ember-llm: note: something else
load:                90.29 ms
prompt tokens:       64
prefill:             219.25 ms (291.9 tok/s)
time to first token: 219.25 ms
load + first token:  309.54 ms
generated tokens:    32
decode:              852.72 ms for 31 steps (36.4 tok/s)
vulkan device:       llvmpipe (LLVM 15.0.6, 256 bits) (float16 storage yes, weights 7.2 MiB)
planned memory:      17.0 KiB (KV cache and activations)
peak RSS:            87.5 MiB
"""


def test_parse_stats_reads_every_line() -> None:
    st = parse_stats(STATS)
    assert st["load_ms"] == 90.29 and st["prompt_tokens"] == 64
    assert st["prefill_ms"] == 219.25 and st["prefill_tps"] == 291.9
    assert st["ttft_ms"] == 219.25 and st["load_ttft_ms"] == 309.54
    assert st["generated_tokens"] == 32 and st["decode_steps"] == 31
    assert st["decode_ms"] == 852.72 and st["decode_tps"] == 36.4
    assert st["peak_rss_mib"] == 87.5
    assert st["vulkan_device"] == "llvmpipe (LLVM 15.0.6, 256 bits)"
    assert st["vulkan_float16"] is True and st["vulkan_weights_mib"] == 7.2


def test_parse_stats_without_vulkan_or_first_token_line() -> None:
    text = "\n".join(ln for ln in STATS.splitlines()
                     if not ln.startswith(("vulkan device", "load + first")))
    st = parse_stats(text)
    assert "vulkan_device" not in st and st["load_ttft_ms"] is None
    # "load:" must not be read from "load + first token:"
    assert st["load_ms"] == 90.29


@pytest.mark.parametrize("drop", ["load:", "prefill:", "decode:", "peak RSS:", "prompt tokens:"])
def test_parse_stats_names_a_missing_line(drop: str) -> None:
    text = "\n".join(ln for ln in STATS.splitlines() if not ln.startswith(drop))
    with pytest.raises(ValueError, match="ember-llm's stats"):
        parse_stats(text)


def test_weight_bytes_per_variant() -> None:
    sys.path.insert(0, os.path.join(ROOT, "bench", "vulkan"))
    from bench_vulkan import GROUP, weight_bytes

    cfg = dict(n_layer=2, n_head=2, n_embd=64, block_size=32, vocab_size=100)
    mats = 2 * 12 * 64 * 64 + 100 * 64
    small = 2 * 13 * 64 + 4 * 64
    assert weight_bytes(cfg, "vulkan_fp16") == 2 * mats + 2 * small
    assert weight_bytes(cfg, "xnnpack_fp32") == 4 * mats + 4 * small
    assert weight_bytes(cfg, "vulkan_int8") == mats + 2 * (2 * 9 * 64 + 100) + 2 * small
    assert weight_bytes(cfg, "vulkan_q4") == 0.5 * mats + 2 * mats / GROUP + 2 * small
    assert weight_bytes(cfg, "xnnpack_8da4w") == 0.5 * mats + 2 * mats / GROUP + 4 * small


def _exe() -> str:
    exe = os.environ.get("EMBER_LLM") or os.path.join(ROOT, "build", "ember-llm")
    if not os.access(exe, os.X_OK):
        pytest.skip("ember-llm is not built")
    return exe


@pytest.mark.parametrize("backend", ["portable", "vulkan-fp16"])
def test_parse_stats_of_ember_llm(tmp_path, backend: str) -> None:
    """The built ember-llm's --stats parse; the Vulkan line is there only
    when the program has a VulkanBackend delegate."""
    torch = pytest.importorskip("torch")
    exe = _exe()
    if backend.startswith("vulkan"):
        rt = pytest.importorskip("ember.runtime")
        if not rt.backend_available("VulkanBackend"):
            pytest.skip("no Vulkan device (or ember built without Vulkan)")
    sys.path.insert(0, os.path.join(ROOT, "examples", "nanogpt"))
    from kv_cache import export_kv
    from model import GPT, GPTConfig

    torch.manual_seed(0)
    model = GPT(GPTConfig(block_size=16, vocab_size=64, n_layer=1, n_head=2, n_embd=32)).eval()
    pte = tmp_path / "m.pte"
    pte.write_bytes(export_kv(model, backend=backend).buffer)
    proc = subprocess.run([exe, "--model", str(pte), "--prompt-ids", "1,2,3,4",
                           "--max-new-tokens", "5", "--temperature", "0", "--stats"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    st = parse_stats(proc.stderr)
    assert st["prompt_tokens"] == 4 and st["generated_tokens"] == 5 and st["decode_steps"] == 4
    assert st["decode_tps"] > 0 and st["prefill_tps"] > 0
    assert ("vulkan_device" in st) == backend.startswith("vulkan")
    if "vulkan_device" in st:
        assert st["vulkan_device"] == rt.vulkan_device_name()
        assert st["vulkan_weights_mib"] >= 0.0  # a tiny model prints 0.0 MiB

#!/usr/bin/env python3
"""1B-class LLMs where the cache cannot help: ember vs ExecuTorch vs llama.cpp.

Two architectures people deploy, at their real sizes, with random weights
from a fixed seed written once as a Hugging Face directory (config.json and
bfloat16 safetensors, as the hub ships them), so every runtime reads the
same weights:

- Llama 3.2 1B (16 layers, width 2048, GQA 32/8, vocabulary 128,256, tied
  head, llama3 rope scaling);
- Qwen 3 0.6B (28 layers, width 1024, 16/8 heads of 128, q/k norms,
  vocabulary 151,936, tied head).

Files, each from that directory:

- ember: `python -m ember.llm.export --recipe xnnpack --quant 8da4w
  --group-size 32 --embedding-quant 4,32` (the command a user types);
- ExecuTorch: its own LLM export path (`_export_llama`: KV cache, custom
  SDPA, dynamic shapes, XNNPACK, 8da4w group 32, `--embedding-quantize
  4,32`), on the same weights in its checkpoint layout;
- llama.cpp: GGUF files written here from the same weights (f16, then
  llama.cpp's own quantizer to Q4_0 and Q8_0; it keeps the tied
  embedding/head at Q6_K in Q4_0 files, as it does for every user).

Measured, on 1 and 2 threads: prefill of a 512-token prompt, decode at 128
and 4096 tokens of context (after a prompt of that length), time to first
token (load + an 8-token prompt + the first token) on a cold start (page
cache dropped; ember's packed-weight cache file already written) and a warm
one, ember's first load ever (no packed-weight cache), peak RSS, file size,
and bytes read per decoded token (counted from each file, plus the KV cache
at that context), with the DRAM read roofline measured in the same run.
Then ember's Llama alone, exported with max-seq-len 8192 (float32 and int8
KV cache): decode at 128, 1k, 4k and 8k tokens of context.

Runners: ember through `ember-llm --stats`; ExecuTorch through its Python
runtime (`executorch.runtime`; the time counted starts at load_program);
llama.cpp through `llama-bench` (prefill and decode, its default f16 KV
cache) and `llama-cpp-python` (start-up and peak RSS). Peers need `make
bench-peers` once; a row that cannot run says why in the table.

usage: bench/llm/bench_llm_1b.py [--models llama3.2-1b,qwen3-0.6b]
           [--threads 1,2] [--runtimes ...] [--merge] [--reps 3] [--quick]
           [--no-sweep] [--no-write]
(`make bench-llm-1b`; --quick: two layers of each model, one rep, no 4k rows
and no sweep; --merge --runtimes '' measures only the sweep)
"""

from __future__ import annotations

import argparse
import ctypes
import hashlib
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(HERE))

from ember_llm_stats import parse_stats  # noqa: E402
from machine import drop_page_cache  # noqa: E402

SEED = 1
GROUP = 32
CONTEXT = 4608          # max-seq-len of every export: 4096 of prompt, then decode
PREFILL = 512
SHORT, LONG = 128, 4096
STEPS = {SHORT: 64, LONG: 32}
TTFT_PROMPT = 8
# the context sweep: ember's Llama decode at these contexts, files exported
# with max-seq-len SWEEP_LEN (the last prompt ends SWEEP_STEPS + 1 short of it)
SWEEP_MODEL, SWEEP_LEN, SWEEP_STEPS = "llama3.2-1b", 8192, 32
SWEEP = (128, 1024, 4096, 8192)
SWEEP_RUNTIMES = {"ember": "ember max-seq-len 8192",
                  "ember int8 kv": "ember int8 kv max-seq-len 8192"}
WORK = ROOT / "build-bench" / "llm-1b"
TOKENIZER = ROOT / "examples" / "nanogpt" / "tokenizer"   # GGUF's vocabulary table

LLAMA_ROPE = {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
              "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}
MODELS: Dict[str, Dict[str, Any]] = {
    "llama3.2-1b": dict(
        architectures=["LlamaForCausalLM"], model_type="llama", vocab_size=128256,
        hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
        num_attention_heads=32, num_key_value_heads=8, head_dim=64, hidden_act="silu",
        rms_norm_eps=1e-5, rope_theta=500000.0, rope_scaling=LLAMA_ROPE,
        max_position_embeddings=131072, tie_word_embeddings=True, bos_token_id=128000,
        eos_token_id=[128001, 128008, 128009], torch_dtype="bfloat16"),
    "qwen3-0.6b": dict(
        architectures=["Qwen3ForCausalLM"], model_type="qwen3", vocab_size=151936,
        hidden_size=1024, intermediate_size=3072, num_hidden_layers=28,
        num_attention_heads=16, num_key_value_heads=8, head_dim=128, hidden_act="silu",
        rms_norm_eps=1e-6, rope_theta=1000000.0, max_position_embeddings=40960,
        tie_word_embeddings=True, bos_token_id=151643, eos_token_id=151645,
        torch_dtype="bfloat16"),
}


RUNTIMES = ["ember", "ember int8 kv", "executorch", "llama.cpp q4_0", "llama.cpp q8_0"]


class Unavailable(Exception):
    """A row that cannot run here; the message says why (it goes in the table)."""


def _status_mib(field: str) -> float:
    """A memory line of /proc/self/status (VmHWM: peak RSS, VmRSS: now) in MiB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def _peak_rss_mib() -> float:
    return _status_mib("VmHWM")


def _rss_mib() -> float:
    return _status_mib("VmRSS")


def prompt_ids(cfg: Dict[str, Any], n: int, salt: int = 0) -> List[int]:
    """n token ids below the special tokens, the same for every runtime."""
    import random

    rng = random.Random(SEED * 1000 + salt)
    top = min(cfg["vocab_size"], int(cfg.get("bos_token_id") or cfg["vocab_size"]))
    return [rng.randrange(0, top) for _ in range(n)]


# --------------------------------------------------------------------------- #
# Files
# --------------------------------------------------------------------------- #

def model_config(name: str, quick: bool) -> Dict[str, Any]:
    cfg = dict(MODELS[name])
    if quick:
        cfg["num_hidden_layers"] = 2
    return cfg


def key_of(cfg: Dict[str, Any], *extra: Any) -> str:
    text = json.dumps([cfg, SEED, CONTEXT, GROUP, *extra], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def write_hf_dir(cfg: Dict[str, Any], out: Path) -> None:
    """config.json and bfloat16 safetensors of ember's seeded random weights
    (matrices N(0, 0.02), norms 1)."""
    import torch
    from safetensors.torch import save_file

    from ember.llm.hf import load_model

    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(cfg, indent=1))
    model = load_model(cfg, max_seq_len=16, seed=SEED)
    state = {k: v.detach().to(torch.bfloat16).contiguous()
             for k, v in model.state_dict().items()
             if not (cfg["tie_word_embeddings"] and k == "lm_head.weight")
             and not k.startswith(("rope", "cache")) and v.is_floating_point()}
    names = {n for n, _ in model.named_parameters()}
    state = {k: v for k, v in state.items() if k in names}
    save_file(state, str(out / "model.safetensors"), metadata={"format": "pt"})


def hf_state(hf_dir: Path) -> Dict[str, Any]:
    from safetensors.torch import load_file

    return {k: v.float() for k, v in load_file(str(hf_dir / "model.safetensors")).items()}


def export_ember(hf_dir: Path, out: Path, kv_cache: str = "float",
                 max_seq_len: int = CONTEXT) -> Dict[str, Any]:
    cmd = [sys.executable, "-m", "ember.llm.export", "--model", str(hf_dir), "--recipe",
           "xnnpack", "--quant", "8da4w", "--group-size", str(GROUP), "--embedding-quant",
           f"4,{GROUP}", "--max-seq-len", str(max_seq_len), "--kv-cache", kv_cache,
           "--out", str(out)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(ROOT / "python")))
    if proc.returncode != 0:
        raise RuntimeError(f"ember export failed:\n{proc.stderr[-3000:]}")
    m = re.search(r"peak RSS (\d+) MiB", proc.stderr)
    return {"export_s": time.perf_counter() - t0, "export_rss_mib": float(m.group(1)) if m else None}


def et_params(cfg: Dict[str, Any]) -> Dict[str, Any]:
    p = dict(dim=cfg["hidden_size"], n_layers=cfg["num_hidden_layers"],
             n_heads=cfg["num_attention_heads"], n_kv_heads=cfg["num_key_value_heads"],
             head_dim=cfg["head_dim"], hidden_dim=cfg["intermediate_size"],
             vocab_size=cfg["vocab_size"], norm_eps=cfg["rms_norm_eps"],
             rope_freq_base=cfg["rope_theta"])
    if cfg["model_type"] == "llama":
        p.update(use_scaled_rope=True, rope_scale_factor=int(cfg["rope_scaling"]["factor"]))
    else:
        p.update(use_hf_rope=True, use_qk_norm=True, qk_norm_before_rope=True)
    return p


def export_et_child(hf_dir: Path, out: Path) -> None:
    """(In a child process.) ExecuTorch's LLM export of the directory's weights."""
    from et_llm_export import checkpoint_from_hf, export_executorch_checkpoint

    cfg = json.loads((hf_dir / "config.json").read_text())
    llama = cfg["model_type"] == "llama"
    state = checkpoint_from_hf(hf_state(hf_dir), cfg["num_hidden_layers"],
                               cfg["num_attention_heads"], cfg["num_key_value_heads"],
                               permute=llama)
    eos = cfg["eos_token_id"]
    meta = {"get_bos_id": cfg["bos_token_id"],
            "get_eos_ids": eos if isinstance(eos, list) else [eos]}
    export_executorch_checkpoint(et_params(cfg), state, out, context=CONTEXT, qmode="8da4w",
                                 group_size=GROUP, embedding_quantize=f"4,{GROUP}",
                                 metadata=meta)


def export_et(hf_dir: Path, out: Path) -> Dict[str, Any]:
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, __file__, "--child", "export-et", str(hf_dir),
                           str(out)], capture_output=True, text=True)
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode != 0 or not line:
        raise RuntimeError(f"ExecuTorch export failed:\n{proc.stderr[-3000:]}")
    res = json.loads(line[-1][len("RESULT "):])
    return {"export_s": time.perf_counter() - t0, "export_rss_mib": res["peak_rss_mib"]}


def _rope_factors(cfg: Dict[str, Any]):
    """llama.cpp's rope_freqs tensor for the llama3 scaling: the divisor of
    each rotary frequency."""
    import math

    import numpy as np

    s = cfg["rope_scaling"]
    d = cfg["head_dim"]
    freqs = 1.0 / (cfg["rope_theta"] ** (np.arange(0, d, 2, dtype=np.float64) / d))
    low_wl = s["original_max_position_embeddings"] / s["low_freq_factor"]
    high_wl = s["original_max_position_embeddings"] / s["high_freq_factor"]
    out = []
    for f in freqs:
        wl = 2 * math.pi / f
        if wl < high_wl:
            out.append(1.0)
        elif wl > low_wl:
            out.append(s["factor"])
        else:
            smooth = (s["original_max_position_embeddings"] / wl - s["low_freq_factor"]) / \
                (s["high_freq_factor"] - s["low_freq_factor"])
            out.append(1.0 / ((1 - smooth) / s["factor"] + smooth))
    return np.asarray(out, dtype=np.float32)


def write_gguf_f16(hf_dir: Path, out: Path) -> None:
    """The directory's model as llama.cpp's "llama" or "qwen3" GGUF, f16
    matrices and f32 norms. Llama's q/k rows go to the interleaved rotary
    layout llama.cpp's llama graph uses (as its converter does); the
    vocabulary is the committed byte-level one padded with unused tokens."""
    import gguf
    import torch

    from et_llm_export import interleave_rotary

    cfg = json.loads((hf_dir / "config.json").read_text())
    arch = "llama" if cfg["model_type"] == "llama" else "qwen3"
    sd = hf_state(hf_dir)
    n_layers, heads, kv = (cfg["num_hidden_layers"], cfg["num_attention_heads"],
                           cfg["num_key_value_heads"])

    def permute(w, n):
        return interleave_rotary(w, n) if arch == "llama" else w

    vocab = json.loads((TOKENIZER / "vocab.json").read_text(encoding="utf-8"))
    tokens = [f"<|unused_{i}|>" for i in range(cfg["vocab_size"])]
    for tok, idx in vocab.items():
        tokens[idx] = tok
    merges = [ln for ln in (TOKENIZER / "merges.txt").read_text(encoding="utf-8").splitlines()
              if ln and not ln.startswith("#version")]
    types = [gguf.TokenType.NORMAL if i < len(vocab) else gguf.TokenType.UNUSED
             for i in range(cfg["vocab_size"])]
    eos = cfg["eos_token_id"]
    eos = eos[0] if isinstance(eos, list) else eos
    types[eos] = types[cfg["bos_token_id"]] = gguf.TokenType.CONTROL

    w = gguf.GGUFWriter(str(out), arch)
    w.add_name(f"{cfg['model_type']} benchmark model (random weights)")
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_embedding_length(cfg["hidden_size"])
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_block_count(n_layers)
    w.add_head_count(heads)
    w.add_head_count_kv(kv)
    w.add_key_length(cfg["head_dim"])
    w.add_value_length(cfg["head_dim"])
    w.add_rope_dimension_count(cfg["head_dim"])
    w.add_rope_freq_base(cfg["rope_theta"])
    w.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
    w.add_vocab_size(cfg["vocab_size"])
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("gpt-2")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(cfg["bos_token_id"])
    w.add_eos_token_id(eos)

    def f16(t):
        return t.to(torch.float16).numpy()

    w.add_tensor("token_embd.weight", f16(sd["model.embed_tokens.weight"]))
    w.add_tensor("output_norm.weight", sd["model.norm.weight"].numpy())
    if arch == "llama":
        w.add_tensor("rope_freqs.weight", _rope_factors(cfg))
    if "lm_head.weight" in sd:
        w.add_tensor("output.weight", f16(sd["lm_head.weight"]))
    for i in range(n_layers):
        h, b = f"model.layers.{i}.", f"blk.{i}."
        w.add_tensor(b + "attn_norm.weight", sd[h + "input_layernorm.weight"].numpy())
        w.add_tensor(b + "attn_q.weight", f16(permute(sd[h + "self_attn.q_proj.weight"], heads)))
        w.add_tensor(b + "attn_k.weight", f16(permute(sd[h + "self_attn.k_proj.weight"], kv)))
        w.add_tensor(b + "attn_v.weight", f16(sd[h + "self_attn.v_proj.weight"]))
        w.add_tensor(b + "attn_output.weight", f16(sd[h + "self_attn.o_proj.weight"]))
        if h + "self_attn.q_norm.weight" in sd:
            w.add_tensor(b + "attn_q_norm.weight", sd[h + "self_attn.q_norm.weight"].numpy())
            w.add_tensor(b + "attn_k_norm.weight", sd[h + "self_attn.k_norm.weight"].numpy())
        w.add_tensor(b + "ffn_norm.weight", sd[h + "post_attention_layernorm.weight"].numpy())
        w.add_tensor(b + "ffn_gate.weight", f16(sd[h + "mlp.gate_proj.weight"]))
        w.add_tensor(b + "ffn_up.weight", f16(sd[h + "mlp.up_proj.weight"]))
        w.add_tensor(b + "ffn_down.weight", f16(sd[h + "mlp.down_proj.weight"]))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def quantize_gguf(src: Path, out: Path, kind: str) -> None:
    """llama.cpp's own quantizer (llama-cpp-python's binding), as a user runs it."""
    import llama_cpp

    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = {"f16": llama_cpp.LLAMA_FTYPE_MOSTLY_F16,
                    "q4_0": llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_0,
                    "q8_0": llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0}[kind]
    params.nthread = os.cpu_count() or 1
    rc = llama_cpp.llama_model_quantize(str(src).encode(), str(out).encode(),
                                        ctypes.byref(params))
    if rc != 0 or not out.exists():
        raise RuntimeError(f"llama.cpp's quantizer failed ({rc}) for {out.name}")


def prepare(name: str, quick: bool, log: Callable[[str], None],
            sweep: bool = False) -> Dict[str, Any]:
    """Writes (or finds) the model's directory and every runtime's file
    (with sweep, also the context sweep's files).
    Returns {"dir", "files": {runtime: path}, "export": {runtime: info},
    "failed": {runtime: why}}."""
    cfg = model_config(name, quick)
    work = WORK / f"{name}-{key_of(cfg)}"
    hf_dir = work / "hf"
    info_path = work / "exports.json"
    done: Dict[str, Any] = json.loads(info_path.read_text()) if info_path.exists() else {}
    if not (hf_dir / "model.safetensors").exists():
        log(f"{name}: writing random weights (seed {SEED}) to {hf_dir}")
        write_hf_dir(cfg, hf_dir)
    files = {"ember": work / "ember_8da4w.pte", "ember int8 kv": work / "ember_8da4w_kv8.pte",
             "executorch": work / "executorch_8da4w.pte",
             "llama.cpp q4_0": work / "q4_0.gguf", "llama.cpp q8_0": work / "q8_0.gguf"}
    failed: Dict[str, str] = {}

    def step(key: str, fn: Callable[[], Optional[Dict[str, Any]]]) -> None:
        if files[key].exists() and key in done:
            return
        log(f"{name}: {key} file")
        t0 = time.perf_counter()
        try:
            res = fn() or {}
        except Unavailable as e:
            failed[key] = str(e)
            return
        except Exception as e:  # noqa: BLE001 - one runtime's failure is a table note
            failed[key] = f"its file could not be made: {str(e).strip().splitlines()[-1]}"
            log(f"{name}: {key} failed: {e}")
            return
        res.setdefault("export_s", time.perf_counter() - t0)
        done[key] = res
        info_path.write_text(json.dumps(done, indent=1))

    step("ember", lambda: export_ember(hf_dir, files["ember"]))
    step("ember int8 kv", lambda: export_ember(hf_dir, files["ember int8 kv"], "int8"))
    if name == SWEEP_MODEL and not quick:
        for rt, key in SWEEP_RUNTIMES.items():
            files[key] = work / f"{files[rt].stem}_{SWEEP_LEN}.pte"
            if sweep:
                step(key, lambda rt=rt, key=key: export_ember(
                    hf_dir, files[key], "int8" if "int8" in rt else "float", SWEEP_LEN))
    step("executorch", lambda: export_et(hf_dir, files["executorch"]))

    def gguf(kind: str) -> Dict[str, Any]:
        try:
            import gguf  # noqa: F401  (installed?)
            import llama_cpp  # noqa: F401
        except ImportError:
            raise Unavailable("gguf and llama-cpp-python are not installed (make bench-peers)")
        f16 = work / "f16.gguf"
        if not f16.exists():
            write_gguf_f16(hf_dir, f16)
        quantize_gguf(f16, files[f"llama.cpp {kind}"], kind)
        return {}

    step("llama.cpp q4_0", lambda: gguf("q4_0"))
    step("llama.cpp q8_0", lambda: gguf("q8_0"))
    (work / "f16.gguf").unlink(missing_ok=True)
    return {"cfg": cfg, "dir": work, "files": files, "export": done, "failed": failed}


# --------------------------------------------------------------------------- #
# Bytes per token
# --------------------------------------------------------------------------- #

def weight_bytes_per_token(kind: str, path: Path, cfg: Dict[str, Any]) -> float:
    """Bytes of weights one decode step reads: the file but the embedding
    table, which is only looked up (one row). ember's and ExecuTorch's 4-bit
    tables (group 32, float32 scales) are counted from their shape; the head,
    untied by quantization, is a matrix of its own in the file. A GGUF with a
    tied head has no output matrix: its token embedding is read whole."""
    v, c = cfg["vocab_size"], cfg["hidden_size"]
    if kind.startswith("llama.cpp"):
        from gguf import GGUFReader

        tensors = {t.name: int(t.n_bytes) for t in GGUFReader(str(path)).tensors}
        total = sum(tensors.values())
        if "output.weight" in tensors:
            emb = tensors["token_embd.weight"]
            total += emb // v - emb
        return float(total)
    table = v * c // 2 + v * (c // GROUP) * 4
    return float(path.stat().st_size - table + table // v)


def ember_kv_elem(runtime: str, cfg: Dict[str, Any]) -> float:
    """Bytes per cached value in ember's KV cache: float32, or int8 with a
    float32 scale and an int8 zero point per row."""
    return 1 + 5 / cfg["head_dim"] if "int8" in runtime else 4


def kv_bytes(cfg: Dict[str, Any], positions: int, elem: int) -> float:
    return float(cfg["num_hidden_layers"] * 2 * cfg["num_key_value_heads"] * cfg["head_dim"]
                 * positions * elem)


# --------------------------------------------------------------------------- #
# Runners
# --------------------------------------------------------------------------- #

def ember_exe() -> str:
    exe = os.environ.get("EMBER_LLM") or str(ROOT / os.environ.get("BUILD", "build") / "ember-llm")
    if not os.access(exe, os.X_OK):
        raise Unavailable(f"{exe} is not built")
    return exe


def run_ember(path: Path, ids: List[int], new: int, threads: int,
              cache_dir: Path) -> Dict[str, float]:
    cmd = [ember_exe(), "--model", str(path), "--prompt-ids", ",".join(map(str, ids)),
           "--max-new-tokens", str(new), "--temperature", "0", "--threads", str(threads),
           "--weight-cache", str(cache_dir), "--stats"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"ember-llm failed: {proc.stderr.strip()[-2000:]}")
    st = parse_stats(proc.stderr)
    return {"prefill_tps": st["prefill_tps"], "decode_tps": st["decode_tps"],
            "decode_steps": st["decode_steps"], "ttft_s": st["load_ttft_ms"] / 1e3,
            "load_s": st["load_ms"] / 1e3, "peak_rss_mib": st["peak_rss_mib"]}


def child_et(path: str, threads: int, plan: Dict[str, Any]) -> Dict[str, Any]:
    """(In a child process.) ExecuTorch's runtime on its program: load, then
    each job of the plan from an empty cache."""
    import torch
    from executorch.extension.pybindings.portable_lib import (_threadpool_get_thread_count,
                                                               _unsafe_reset_threadpool)
    from executorch.runtime import Runtime

    from et_llm_export import load_runtime_ops

    load_runtime_ops()
    _unsafe_reset_threadpool(threads)
    if _threadpool_get_thread_count() != threads:
        raise RuntimeError(f"ExecuTorch kept {_threadpool_get_thread_count()} threads")
    base = _rss_mib()
    t0 = time.perf_counter()
    program = Runtime.get().load_program(path)
    method = program.load_method("forward")
    load_s = time.perf_counter() - t0

    def run(tokens: List[int], pos: int) -> int:
        out = method.execute([torch.tensor([tokens], dtype=torch.long),
                              torch.tensor([pos], dtype=torch.long)])[0]
        return int(out.reshape(-1, out.shape[-1])[-1].argmax())

    res: Dict[str, Any] = {"load_s": load_s}
    first = plan.get("ttft")
    if first:
        run(first, 0)
        res["ttft_s"] = time.perf_counter() - t0
    if plan.get("prefill"):
        ids = plan["prefill"]
        t = time.perf_counter()
        run(ids, 0)
        res["prefill_tps"] = len(ids) / (time.perf_counter() - t)
    if plan.get("decode"):
        ids, steps = plan["decode"], plan["steps"]
        pos = 0
        for i in range(0, len(ids), PREFILL):  # the prompt in chunks (not timed)
            tok = run(ids[i:i + PREFILL], pos)
            pos += len(ids[i:i + PREFILL])
        t = time.perf_counter()
        for _ in range(steps):
            tok = run([tok], pos)
            pos += 1
        res["decode_tps"] = steps / (time.perf_counter() - t)
    res["peak_rss_mib"] = _peak_rss_mib() - base
    return res


def child_llama_cpp(path: str, threads: int, plan: Dict[str, Any]) -> Dict[str, Any]:
    """(In a child process.) llama-cpp-python: load and the first token."""
    import llama_cpp
    import numpy as np

    base = _rss_mib()
    t0 = time.perf_counter()
    llm = llama_cpp.Llama(model_path=path, n_ctx=CONTEXT, n_batch=PREFILL, n_threads=threads,
                          n_threads_batch=threads, verbose=False)
    load_s = time.perf_counter() - t0
    llm.eval(plan["ttft"])
    logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm.ctx, -1),
                                   shape=(llm.n_vocab(),))
    int(logits.argmax())
    return {"load_s": load_s, "ttft_s": time.perf_counter() - t0,
            "peak_rss_mib": _peak_rss_mib() - base}


def run_child(kind: str, path: Path, threads: int, plan: Dict[str, Any]) -> Dict[str, Any]:
    proc = subprocess.run([sys.executable, __file__, "--child", kind, str(path), str(threads),
                           json.dumps(plan)], capture_output=True, text=True)
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode != 0 or not line:
        raise RuntimeError(f"{kind} failed:\n{proc.stderr[-3000:]}")
    return json.loads(line[-1][len("RESULT "):])


def llama_bench_exe() -> Path:
    from bench_llm import llama_bench_exe as built  # where bench-peers puts it

    exe = built()
    if exe is None or not exe.exists():
        raise Unavailable("llama-bench was not built (make bench-peers)")
    return exe


def llama_bench(path: Path, threads: int, reps: int, *test: str) -> Dict[str, float]:
    proc = subprocess.run([str(llama_bench_exe()), "-m", str(path), *test, "-t", str(threads),
                           "-r", str(reps), "-o", "json"], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"llama-bench failed: {proc.stderr[-2000:]}")
    runs = json.loads(proc.stdout)
    if len(runs) != 1:
        raise RuntimeError(f"llama-bench printed {len(runs)} results")
    return {"tps": float(runs[0]["avg_ts"]), "samples": [float(s) for s in runs[0]["samples_ts"]]}


def long_reps(reps: int) -> int:
    """Runs at 4k of context: each fills the cache with a 4096-token prompt
    first, tens of seconds on one thread; their spread is that of the @128
    runs' weights plus the cache."""
    return max(reps // 2, 1)


def _spread(values: Sequence[float]) -> float:
    return (max(values) - min(values)) / statistics.median(values) if len(values) > 1 else 0.0


def measure(runtime: str, path: Path, cfg: Dict[str, Any], threads: int, reps: int,
            long: bool, log: Callable[[str], None]) -> Dict[str, Any]:
    """One row: every figure of `runtime` on `threads` threads."""
    short_ids, long_ids = prompt_ids(cfg, SHORT, 1), prompt_ids(cfg, LONG, 2)
    pre_ids, first_ids = prompt_ids(cfg, PREFILL, 3), prompt_ids(cfg, TTFT_PROMPT, 4)
    r: Dict[str, Any] = {"file_bytes": path.stat().st_size}
    if runtime.startswith("ember"):
        cache = path.parent / f"weight-cache-{path.stem}-{threads}"
        for f in cache.glob("*"):
            f.unlink()
        cache.mkdir(exist_ok=True)
        drop_page_cache()
        r["first_load_ttft_s"] = run_ember(path, first_ids, 1, threads, cache)["ttft_s"]
        r["cold"] = drop_page_cache()
        r["ttft_cold_s"] = run_ember(path, first_ids, 1, threads, cache)["ttft_s"]
        r["ttft_warm_s"] = min(run_ember(path, first_ids, 1, threads, cache)["ttft_s"]
                               for _ in range(2))
        pre = [run_ember(path, pre_ids, 1, threads, cache)["prefill_tps"] for _ in range(reps)]
        dec = [run_ember(path, short_ids, STEPS[SHORT] + 1, threads, cache) for _ in range(reps)]
        r["prefill"], r["decode_short"] = pre, [d["decode_tps"] for d in dec]
        r["peak_rss_mib"] = max(d["peak_rss_mib"] for d in dec)
        if long:
            r["decode_long"] = [run_ember(path, long_ids, STEPS[LONG] + 1, threads,
                                          cache)["decode_tps"] for _ in range(long_reps(reps))]
        # int8 cache: a byte an element, and a float32 scale and an int8
        # zero point a row
        r["kv_elem"] = ember_kv_elem(runtime, cfg)
    elif runtime == "executorch":
        r["cold"] = drop_page_cache()
        r["ttft_cold_s"] = run_child("et", path, threads, {"ttft": first_ids})["ttft_s"]
        r["ttft_warm_s"] = min(run_child("et", path, threads, {"ttft": first_ids})["ttft_s"]
                               for _ in range(2))
        pre = [run_child("et", path, threads, {"prefill": pre_ids}) for _ in range(reps)]
        dec = [run_child("et", path, threads, {"decode": short_ids, "steps": STEPS[SHORT]})
               for _ in range(reps)]
        r["prefill"] = [p["prefill_tps"] for p in pre]
        r["decode_short"] = [d["decode_tps"] for d in dec]
        r["peak_rss_mib"] = max(d["peak_rss_mib"] for d in dec)
        if long:
            r["decode_long"] = [run_child("et", path, threads, {"decode": long_ids,
                                                                "steps": STEPS[LONG]})
                                ["decode_tps"] for _ in range(long_reps(reps))]
        r["kv_elem"] = 4
    else:
        r["cold"] = drop_page_cache()
        r["ttft_cold_s"] = run_child("llama", path, threads, {"ttft": first_ids})["ttft_s"]
        warm = [run_child("llama", path, threads, {"ttft": first_ids}) for _ in range(2)]
        r["ttft_warm_s"] = min(w["ttft_s"] for w in warm)
        r["peak_rss_mib"] = max(w["peak_rss_mib"] for w in warm)
        r["prefill"] = llama_bench(path, threads, reps, "-p", str(PREFILL), "-n", "0")["samples"]
        r["decode_short"] = llama_bench(path, threads, reps, "-p", "0", "-n", str(STEPS[SHORT]),
                                        "-d", str(SHORT))["samples"]
        if long:
            r["decode_long"] = llama_bench(path, threads, long_reps(reps), "-p", "0", "-n",
                                           str(STEPS[LONG]), "-d", str(LONG))["samples"]
        r["kv_elem"] = 2
    return r


# --------------------------------------------------------------------------- #
# Table
# --------------------------------------------------------------------------- #

def roofline_pct(tps: float, bytes_per_token: float, read_bytes_per_s: float) -> str:
    """A decode rate as a share of the read roofline."""
    return f"{100 * tps * bytes_per_token / read_bytes_per_s:.0f}%"


def measure_sweep(prep: Dict[str, Any], threads: Sequence[int],
                  log: Callable[[str], None]) -> List[Dict[str, Any]]:
    """The context sweep: ember's decode rate at each context of SWEEP (one
    run each, SWEEP_STEPS greedy steps after a prompt of that length), on
    the max-seq-len SWEEP_LEN files, float and int8 KV cache."""
    cfg, rows = prep["cfg"], []
    for t in threads:
        for rt, key in SWEEP_RUNTIMES.items():
            path = prep["files"].get(key)
            if key in prep["failed"] or path is None or not path.exists():
                continue
            cache = path.parent / f"weight-cache-{path.stem}-{t}"
            cache.mkdir(exist_ok=True)
            tps = {}
            for ctx in SWEEP:
                n = min(ctx, SWEEP_LEN - SWEEP_STEPS - 1)
                tps[str(ctx)] = run_ember(path, prompt_ids(cfg, n, 5), SWEEP_STEPS + 1, t,
                                          cache)["decode_tps"]
            log(f"{SWEEP_MODEL}: sweep {rt} {t}t: {json.dumps(tps)}")
            rows.append({"runtime": rt, "threads": t, "decode_tps": tps})
    return rows


def format_sweep(prep: Dict[str, Any], rows: List[Dict[str, Any]], roof: Dict[str, Any]) -> str:
    from tabulate import tabulate

    cfg = prep["cfg"]
    head = ["runtime", "threads"]
    for ctx in SWEEP:
        head += [f"decode @{ctx // 1024}k tok/s" if ctx >= 1024 else f"decode @{ctx} tok/s",
                 "% roofline"]
    out = []
    for r in rows:
        bw = (r.get("read_gbs") or roof["read_gbs"][r["threads"]]) * 1e9
        wb = weight_bytes_per_token(r["runtime"], prep["files"][SWEEP_RUNTIMES[r["runtime"]]],
                                    cfg)
        elem = ember_kv_elem(r["runtime"], cfg)
        line = [r["runtime"], r["threads"]]
        for ctx in SWEEP:
            tps = r["decode_tps"][str(ctx)]
            line += [f"{tps:.1f}", roofline_pct(tps, wb + kv_bytes(cfg, ctx, elem), bw)]
        out.append(line)
    return tabulate(out, headers=head, tablefmt="github")


def sweep_section(prep: Dict[str, Any], rows: List[Dict[str, Any]], roof: Dict[str, Any]) -> str:
    runs = sorted({r.get("run", "") for r in rows})
    gbs = ", ".join(f"{r['read_gbs']:.1f} GB/s on {r['threads']}" for r in rows
                    if r["runtime"] == "ember" and r.get("read_gbs"))
    return (f"### {SWEEP_MODEL}: decode against context\n\n"
            f"ember's files exported with max-seq-len {SWEEP_LEN} (float32 and int8 KV cache); "
            f"{SWEEP_STEPS} greedy steps after a prompt of each length, one run each (the 8k "
            f"prompt is {SWEEP_LEN - SWEEP_STEPS - 1} tokens, so that its steps end at the "
            "limit). % roofline as above, the KV cache counted at the context. Measured in the "
            f"run of {', '.join(runs)} (read bandwidth {gbs}).\n\n"
            f"{format_sweep(prep, rows, roof)}\n")


def format_table(model: str, prep: Dict[str, Any], rows: List[Dict[str, Any]],
                 roof: Dict[str, Any]) -> str:
    from tabulate import tabulate

    cfg = prep["cfg"]
    head = ["runtime", "threads", "file MB", "MB/token", "prefill 512 tok/s",
            "decode @128 tok/s", "% roofline", "spread", "decode @4k tok/s", "% roofline",
            "TTFT cold s", "TTFT warm s", "peak RSS MiB"]
    out = []
    for row in rows:
        r = row["result"]
        if "unavailable" in r:
            out.append([row["runtime"], row["threads"], r["unavailable"]] + [""] * (len(head) - 3))
            continue
        # the roofline of the run that measured the row (an earlier one for
        # rows kept by --merge)
        bw = (row.get("read_gbs") or roof["read_gbs"][row["threads"]]) * 1e9
        wb = weight_bytes_per_token(row["runtime"], prep["files"][row["runtime"]], cfg)

        def pct(tps_list: Optional[List[float]], ctx: int) -> str:
            if not tps_list:
                return ""
            tps = statistics.median(tps_list)
            return roofline_pct(tps, wb + kv_bytes(cfg, ctx, r["kv_elem"]), bw)

        med = (lambda v: f"{statistics.median(v):.1f}" if v else "")
        ttft_cold = f"{r['ttft_cold_s']:.2f}" + ("" if r.get("cold") else " (not dropped)")
        if "first_load_ttft_s" in r:
            ttft_cold += f" (first {r['first_load_ttft_s']:.2f})"
        out.append([row["runtime"], row["threads"], f"{r['file_bytes'] / 1e6:.0f}",
                    f"{wb / 1e6:.0f}", med(r["prefill"]), med(r["decode_short"]),
                    pct(r["decode_short"], SHORT), f"{100 * _spread(r['decode_short']):.1f}%",
                    med(r.get("decode_long")), pct(r.get("decode_long"), LONG), ttft_cold,
                    f"{r['ttft_warm_s']:.2f}", f"{r['peak_rss_mib']:.0f}"])
    return tabulate(out, headers=head, tablefmt="github")


def runs_line(rows: Sequence[Dict[str, Any]]) -> str:
    """For a table merged from several runs: each run's rows and roofline."""
    runs: Dict[str, Dict[str, Any]] = {}
    for r in rows:
        run = runs.setdefault(r.get("run", "earlier"), {"runtimes": [], "gbs": {}})
        if r["runtime"] not in run["runtimes"]:
            run["runtimes"].append(r["runtime"])
        if r.get("read_gbs"):
            run["gbs"][r["threads"]] = r["read_gbs"]
    if len(runs) < 2:
        return ""
    parts = [f"{', '.join(v['runtimes'])} in the run of {k} (read bandwidth "
             + ", ".join(f"{g:.1f} GB/s on {t}" for t, g in sorted(v["gbs"].items())) + ")"
             for k, v in sorted(runs.items())]
    return " Rows from two runs (`--merge`), each against its own run's roofline: " + \
        "; ".join(parts) + "."


def section(tables: Dict[str, str], preps: Dict[str, Dict[str, Any]], roof: Dict[str, Any],
            cmd: str, reps: int, all_rows: Dict[str, List[Dict[str, Any]]]) -> str:
    from machine import roofline_line

    parts = ["## 1B-class LLMs: ember vs ExecuTorch vs llama.cpp (`make bench-llm-1b`)\n",
             f"Command: `{cmd}`. {roofline_line(roof)}\n",
             "Random weights (seed 1, bfloat16 safetensors) at the architectures' real sizes, "
             "the same for every runtime; ember's and ExecuTorch's files are 8da4w (int8 "
             "dynamic activations, 4-bit weights in groups of 32) with 4-bit embeddings, "
             f"max-seq-len {CONTEXT}, float32 KV cache (\"ember int8 kv\": the int8 cache of "
             "`--kv-cache int8`, ExecuTorch's quantize_kv_cache form); llama.cpp's are its own quantizer's "
             "Q4_0 (the tied embedding and head at Q6_K) and Q8_0, with its default f16 KV "
             f"cache. Prefill: a {PREFILL}-token prompt from an empty cache. Decode @128 and "
             f"@4k: {STEPS[SHORT]} and {STEPS[LONG]} greedy steps after a prompt of {SHORT} "
             f"and {LONG} tokens (median of {reps} and {long_reps(reps)} runs; spread = "
             "(max - min) / median of the @128 runs). % roofline: decode tok/s x (weight bytes "
             "per token, counted from the file as stored, the embedding table as one row + the "
             "KV cache at that context) / the read bandwidth on as many threads. TTFT: "
             f"process load to the first token of an {TTFT_PROMPT}-token prompt; cold with "
             "the page cache dropped (ember's packed-weight cache file already written; "
             "\"first\": ember's very first load, which writes it), warm the best of two "
             "runs after. ExecuTorch (`executorch.runtime`) and llama.cpp "
             "(`llama-cpp-python`) run in Python: their TTFT starts at load and their peak "
             "RSS is what loading and running added to the process; ember's is "
             "`ember-llm --stats`' whole process. llama.cpp's prefill and decode are "
             "`llama-bench`'s (pp512; tg64 at -d 128, tg32 at -d 4096).\n"]
    for model, table in tables.items():
        if model == "sweep":
            parts.append(table)
            continue
        exp = preps[model]["export"]
        ex = "; ".join(f"{k}: {v['export_s']:.0f} s" +
                       (f", peak RSS {v['export_rss_mib']:.0f} MiB" if v.get("export_rss_mib")
                        else "") for k, v in exp.items())
        fails = "; ".join(f"{k}: {v}" for k, v in preps[model]["failed"].items())
        parts.append(f"### {model}\n\nFiles made in: {ex}." +
                     (f" Not made: {fails}." if fails else "") + runs_line(all_rows[model]) +
                     f"\n\n{table}\n")
    return "\n".join(parts)


def main(argv: Optional[List[str]] = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--runtimes", default=",".join(RUNTIMES))
    ap.add_argument("--merge", action="store_true",
                    help="keep the other rows of the last run (each with its own run's "
                         "roofline) and re-measure only these runtimes")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--no-sweep", action="store_true",
                    help="keep the last context sweep instead of measuring it again")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        kind, path = args.child[0], args.child[1]
        if kind == "export-et":
            export_et_child(Path(path), Path(args.child[2]))
            res: Dict[str, Any] = {"peak_rss_mib": _peak_rss_mib()}
        else:
            fn = child_et if kind == "et" else child_llama_cpp
            res = fn(path, int(args.child[2]), json.loads(args.child[3]))
        print("RESULT " + json.dumps(res), flush=True)
        return

    from machine import measure_roofline, quote_command, write_section

    def log(s: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {s}", file=sys.stderr, flush=True)

    threads = [int(t) for t in args.threads.split(",")]
    run_id = time.strftime("%Y-%m-%d %H:%M")
    reps = 1 if args.quick else args.reps
    roof = measure_roofline(threads, quick=args.quick)
    log(f"read bandwidth {roof['read_gbs']} GB/s")
    tables: Dict[str, str] = {}
    preps: Dict[str, Dict[str, Any]] = {}
    all_rows: Dict[str, List[Dict[str, Any]]] = {}
    sweep_table = ""
    runtimes = [rt for rt in args.runtimes.split(",") if rt]
    for model in args.models.split(","):
        prep = preps[model] = prepare(model, args.quick, log,
                                      sweep=not args.quick and not args.no_sweep)
        rows: List[Dict[str, Any]] = []
        results = prep["dir"] / "results.json"
        again = {(rt, t) for rt in runtimes for t in threads}
        if args.merge and results.exists():  # rows of an earlier run, not re-measured
            rows = [r for r in json.loads(results.read_text())
                    if (r["runtime"], r["threads"]) not in again]
        for t in threads:
            for rt in runtimes:
                log(f"{model}: {rt} on {t} thread{'s' if t > 1 else ''}")
                try:
                    if rt in prep["failed"]:
                        raise Unavailable(prep["failed"][rt])
                    res = measure(rt, prep["files"][rt], prep["cfg"], t, reps, not args.quick,
                                  log)
                except Unavailable as e:
                    res = {"unavailable": str(e)}
                except Exception as e:  # noqa: BLE001
                    res = {"unavailable": f"failed: {str(e).strip().splitlines()[-1][:200]}"}
                    log(f"{model}: {rt} failed: {e}")
                log(f"{model}: {rt} {t}t: {json.dumps(res)}")
                rows.append({"runtime": rt, "threads": t, "result": res, "run": run_id,
                             "read_gbs": roof["read_gbs"][t]})
                results.write_text(json.dumps(rows, indent=1))
        order = {rt: i for i, rt in enumerate(RUNTIMES)}
        rows.sort(key=lambda r: (r["threads"], order.get(r["runtime"], len(order))))
        tables[model] = format_table(model, prep, rows, roof)
        all_rows[model] = rows
        print(f"\n{model}\n{tables[model]}\n", flush=True)
        if model == SWEEP_MODEL and not args.quick:
            saved = prep["dir"] / "sweep.json"
            if not args.no_sweep:
                sweep = measure_sweep(prep, threads, log)
                for r in sweep:
                    r.update(run=run_id, read_gbs=roof["read_gbs"][r["threads"]])
                saved.write_text(json.dumps(sweep, indent=1))
            if saved.exists():
                sweep_table = sweep_section(prep, json.loads(saved.read_text()), roof)
                print(sweep_table, flush=True)
    if sweep_table:
        tables["sweep"] = sweep_table  # after the models' tables
    if not args.no_write and not args.quick:
        cmd = quote_command([sys.argv[0]] + [shlex.quote(a) for a in sys.argv[1:]],
                            "make bench-llm-1b")
        if args.merge:
            cmd = f"make bench-llm-1b`, then `{cmd}"
        write_section(ROOT / "bench" / "RESULTS.md",
                      "## 1B-class LLMs: ember vs ExecuTorch vs llama.cpp (`make bench-llm-1b`)",
                      section(tables, preps, roof, cmd, reps, all_rows))


if __name__ == "__main__":
    main()

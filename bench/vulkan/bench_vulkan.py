"""VulkanBackend benchmark: nanoGPT and GPT-2 124M on the GPU, beside
ember's CPU path, PyTorch eager, llama.cpp's Vulkan backend and the
bandwidth floor.

    .venv/bin/python bench/vulkan/bench_vulkan.py                  # the table into bench/RESULTS.md
    .venv/bin/python bench/vulkan/bench_vulkan.py --export-only DIR  # write every file to carry
    .venv/bin/python bench/vulkan/bench_vulkan.py --pte-dir DIR      # measure files written elsewhere
    scripts/bench_peers.sh --vulkan                                # once: llama-bench with GGML_VULKAN

Models (KV-cache exports, examples/nanogpt/kv_cache.py): the committed
nanoGPT checkpoint and GPT-2 124M with random weights (seed 1234, as
bench/llm/bench_llm.py makes it). Each is exported three ways for
VulkanBackend, all with float16 tensors on the GPU (``force_fp16``):
float16 weights; int8 weights per output channel (export.py --quant int8wo:
``aten._weight_int8pack_mm``); 4-bit weights in groups of 32 (torchao's
IntxWeightOnlyConfig, which ember's partitioner fuses into
``et_vk.linear_q4gsw``). A variant the exporter cannot make is a row that
says why. Beside them, on the same machine and in the same run:

- ember's CPU path: the same model exported for XnnpackBackend (float32,
  and int8 / 8da4w group 32 for the same bits);
- PyTorch eager with the same KV-cache model code, on CUDA in float16 when
  torch sees a GPU, else on the CPU in float32 (the row says which);
- llama.cpp's Vulkan backend: `llama-bench -ngl 99` built with
  -DGGML_VULKAN=ON (scripts/bench_peers.sh --vulkan) on GGUF files written
  from the same weights (f16, q8_0, q4_0); "not built" where it is missing;
- the bandwidth floor: the bytes one decode step reads (weights as stored
  plus the KV cache at the average position) over the device's read
  bandwidth, as a ceiling on decode tok/s. On a CPU Vulkan device (Mesa's
  lavapipe) and for the CPU rows that is the host's read bandwidth measured
  by bench/roofline in this run; on a GPU, a device-to-device copy measured
  with torch.cuda where it can, else the vendor's figure for the device's
  name; the note says which.

Measured per row: prefill tok/s (a 64-token prompt) and decode tok/s
(`ember-llm --stats`, greedy); for Vulkan rows the GPU ms and host ms of a
decode step from a second, traced run (`ember-llm --etdump`: the sum of the
delegate's per-node GPU timestamps, and Method::execute's wall time; see
vk_profile.py); load time (program, method and delegate init, ember-llm's
"load") on a cold start (an empty shader cache and weight cache, the page
cache dropped where the user may) and a warm one (the same caches again).

To run on a machine without network or package index (for example a GPU
host with an older torch): `--export-only DIR` here writes every .pte and
GGUF file and a manifest.json; copy DIR and the built tree there and run
`--pte-dir DIR`, which exports nothing (eager still needs torch).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
NANOGPT = ROOT / "examples" / "nanogpt"
TOKENIZER = NANOGPT / "tokenizer"
PEERS = ROOT / "build-bench" / "peers"   # scripts/bench_peers.sh's directory
for p in (ROOT / "bench", ROOT / "bench" / "llm", HERE):
    sys.path.insert(0, str(p))

from bench_llm import PROMPT_TEXT, PROMPT_TOKENS, SEED  # noqa: E402
from ember_llm_stats import parse_stats  # noqa: E402
from machine import drop_page_cache  # noqa: E402

SECTION = "## Vulkan: nanoGPT and GPT-2 124M on VulkanBackend, 64-token prompt"
GROUP = 32
NEW_TOKENS = 32
MODELS = {"nanogpt": "nanoGPT (examples/nanogpt/ckpt.pt)",
          "gpt2": f"GPT-2 124M (random weights, seed {SEED})"}


class Unavailable(Exception):
    """A row that cannot run here; the message says why (it goes in the table)."""


# --------------------------------------------------------------------------- #
# What runs: ember programs and GGUF files, one set per model
# --------------------------------------------------------------------------- #

# key -> (runtime, weights label, backend, quant, bits for "same bits" ratios)
PROGRAMS: Dict[str, Tuple[str, str, str, str, str]] = {
    "vulkan_fp16": ("ember vulkan", "float16", "vulkan-fp16", "none", "16"),
    "vulkan_int8": ("ember vulkan", "int8 per channel", "vulkan-fp16", "int8wo", "8"),
    "vulkan_q4": ("ember vulkan", f"4-bit, group {GROUP} (q4gsw)", "vulkan-fp16", "q4gsw", "4"),
    "xnnpack_fp32": ("ember xnnpack (CPU)", "float32", "xnnpack", "none", "32"),
    "xnnpack_int8": ("ember xnnpack (CPU)", "int8 per channel, int8 act.", "xnnpack", "int8", "8"),
    "xnnpack_8da4w": ("ember xnnpack (CPU)", f"4-bit, group {GROUP}, int8 act. (8da4w)",
                      "xnnpack", "8da4w", "4"),
}
# key -> (weights label, llama.cpp file type, bits)
GGUFS: Dict[str, Tuple[str, str, str]] = {
    "gguf_f16": ("f16", "f16", "16"),
    "gguf_q8_0": ("q8_0 (blocks of 32)", "q8_0", "8"),
    "gguf_q4_0": ("q4_0 (blocks of 32)", "q4_0", "4"),
}


def file_name(model: str, key: str) -> str:
    return f"{model}_{key}.{'gguf' if key.startswith('gguf') else 'pte'}"


def load_model(model: str) -> Any:
    sys.path.insert(0, str(NANOGPT))
    import export as nanogpt_export

    if model == "gpt2":
        return nanogpt_export.load_model(random_gpt2="gpt2", seed=SEED).eval()
    return nanogpt_export.load_model().eval()


def model_config(m: Any) -> Dict[str, int]:
    c = m.config
    return dict(n_layer=c.n_layer, n_head=c.n_head, n_embd=c.n_embd, block_size=c.block_size,
                vocab_size=c.vocab_size)


def quantize_q4(m: Any) -> Any:
    """The linears 4-bit, symmetric, per group, as ExecuTorch's Vulkan flow
    quantizes them (docs/vulkan.md); ember's partitioner then makes each one
    et_vk.linear_q4gsw. In place; returns m."""
    import torch
    from torchao.quantization.granularity import PerGroup
    from torchao.quantization.quant_api import IntxWeightOnlyConfig, quantize_
    from torchao.utils import unwrap_tensor_subclass

    quantize_(m, IntxWeightOnlyConfig(weight_dtype=torch.int4, granularity=PerGroup(GROUP)))
    unwrap_tensor_subclass(m)
    return m


def export_program(m: Any, key: str, path: Path) -> None:
    sys.path.insert(0, str(NANOGPT))
    import export as nanogpt_export

    _, _, backend, quant, _ = PROGRAMS[key]
    m = copy.deepcopy(m)
    if quant == "q4gsw":
        m, quant = quantize_q4(m), "none"
    prog = nanogpt_export.export_kv(m, backend=backend, quant=quant, group_size=GROUP)
    path.write_bytes(prog.buffer)


def write_gguf(m: Any, key: str, path: Path) -> None:
    try:
        import gguf  # noqa: F401
        import llama_cpp  # noqa: F401
    except ImportError as e:
        raise Unavailable(f"{e.name} is not installed (scripts/bench_peers.sh)")
    from bench_llm_1b import quantize_gguf
    from gguf_gpt2 import write_gpt2_gguf

    with tempfile.TemporaryDirectory(dir=path.parent) as tmp:
        f32 = Path(tmp) / "f32.gguf"
        write_gpt2_gguf(m, TOKENIZER, f32)
        # llama.cpp's quantizer logs every tensor to the process's stderr
        saved = os.dup(2)
        try:
            with open(os.devnull, "w") as null:
                os.dup2(null.fileno(), 2)
                quantize_gguf(f32, path, GGUFS[key][1])
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def sources_key() -> str:
    """A hash of what the files depend on: ember's Python package, the
    nanoGPT example, the GGUF writer, and the versions of torch, torchao,
    gguf and llama-cpp-python (not this script: --reexport after changing
    how it exports)."""
    import hashlib
    import importlib.metadata as md

    h = hashlib.sha256()
    files = sorted((ROOT / "python" / "ember").rglob("*.py")) + sorted(NANOGPT.glob("*.py")) + \
        [ROOT / "bench" / "llm" / "gguf_gpt2.py"]
    for f in files:
        h.update(str(f.relative_to(ROOT)).encode())
        h.update(f.read_bytes())
    for pkg in ("torch", "torchao", "gguf", "llama_cpp_python"):
        try:
            h.update(f"{pkg}={md.version(pkg)}".encode())
        except md.PackageNotFoundError:
            pass
    return h.hexdigest()[:16]


def export_all(out: Path, models: Sequence[str], keys: Sequence[str],
               log: Callable[[str], None]) -> Dict[str, Any]:
    """Writes every file of the models into out, with manifest.json:
    {"key": sources_key(), "models": {model: config}, "failed": {file: why}}.
    Files already there are kept when the manifest's key is the same."""
    out.mkdir(parents=True, exist_ok=True)
    man_path = out / "manifest.json"
    man = json.loads(man_path.read_text()) if man_path.exists() else {}
    key_now = sources_key()
    if man.get("key") != key_now:
        man = {"key": key_now}
    man.setdefault("models", {})
    man.setdefault("failed", {})
    for model in models:
        m = None
        for key in keys:
            name = file_name(model, key)
            done = name in man["failed"] or (
                (out / name).exists() and key in man.get("made", {}).get(model, []))
            if done and model in man["models"]:
                continue
            if m is None:
                m = load_model(model)
                man["models"][model] = model_config(m)
            log(f"  {model}: writing {name}")
            t0 = time.perf_counter()
            try:
                (write_gguf if key.startswith("gguf") else export_program)(m, key, out / name)
                man["failed"].pop(name, None)
                man.setdefault("made", {}).setdefault(model, []).append(key)
                log(f"    {time.perf_counter() - t0:.0f} s")
            except Exception as e:  # noqa: BLE001 - an unsupported variant is a row saying so
                why = str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__
                man["failed"][name] = why[:200]
                log(f"    not made: {why}")
        man_path.write_text(json.dumps(man, indent=1))
    return man


# --------------------------------------------------------------------------- #
# Bytes one decode step reads
# --------------------------------------------------------------------------- #

def weight_bytes(cfg: Dict[str, int], key: str) -> float:
    """Bytes of weights one decode step reads in an ember program, from the
    model's shapes and how the variant stores them: every linear once (the
    head, tied to the token embedding in float, is a matrix of its own once
    quantized, and read whole), the layer norms and biases, and one row each
    of the token and position tables (lookups). Quantized matrices: 1 or
    0.5 bytes a weight plus their scales (float16 on the GPU and in 8da4w's
    groups, float32 per channel for XNNPACK's int8)."""
    c, layers, v = cfg["n_embd"], cfg["n_layer"], cfg["vocab_size"]
    mats = layers * 12 * c * c + v * c           # block linears + head
    out_channels = layers * 9 * c + v            # rows of those matrices
    small = layers * 13 * c + 4 * c              # biases, norms, ln_f, two looked-up rows
    float_bytes = 4 if key.startswith("xnnpack") else 2
    per_weight, scales = {
        "fp16": (2.0, 0.0), "fp32": (4.0, 0.0),
        "int8": (1.0, (4.0 if key.startswith("xnnpack") else 2.0) * out_channels),
        "q4": (0.5, 2.0 * mats / GROUP), "8da4w": (0.5, 2.0 * mats / GROUP),
    }[key.split("_", 1)[1]]
    return per_weight * mats + scales + float_bytes * small


def gguf_bytes(path: Path, cfg: Dict[str, int]) -> Optional[float]:
    """Bytes of a GGUF file's tensors one decode step reads: all of them
    (the tied token table is llama.cpp's head, read whole) but the position
    table, of which one row."""
    try:
        from gguf import GGUFReader
    except ImportError:
        return None
    tensors = {t.name: int(t.n_bytes) for t in GGUFReader(str(path)).tensors}
    pos = tensors.get("position_embd.weight", 0)
    return float(sum(tensors.values()) - pos + pos // cfg["block_size"])


def kv_bytes(cfg: Dict[str, int], positions: int, elem: int) -> float:
    return float(cfg["n_layer"] * 2 * positions * cfg["n_embd"] * elem)


# --------------------------------------------------------------------------- #
# The machine: CPU ISA, Vulkan device, bandwidth
# --------------------------------------------------------------------------- #

def cpu_isa() -> str:
    """'x86_64 AVX-512 (VNNI, BF16)', 'x86_64 AVX2', 'aarch64 NEON', ..."""
    from machine import cpu_flags

    f = set(cpu_flags())
    arch = platform.machine()
    if "avx512f" in f:
        extra = [n for k, n in (("avx512_vnni", "VNNI"), ("avx512_bf16", "BF16")) if k in f]
        return f"{arch} AVX-512" + (f" ({', '.join(extra)})" if extra else "")
    if "avx2" in f:
        return f"{arch} AVX2" + (" (VNNI)" if "avx_vnni" in f else "")
    if f & {"sve"}:
        return f"{arch} SVE"
    if f & {"neon", "asimd"}:
        return f"{arch} NEON"
    return arch


def vulkan_device_from_vulkaninfo() -> Optional[str]:
    exe = shutil.which("vulkaninfo")
    if not exe:
        return None
    try:
        out = subprocess.run([exe, "--summary"], capture_output=True, text=True,
                             timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    for line in out.splitlines():
        if line.strip().startswith("deviceName"):
            return line.split("=", 1)[1].strip()
    return None


def is_cpu_device(name: str) -> bool:
    return any(k in name.lower() for k in ("llvmpipe", "lavapipe", "swiftshader"))


# Vendors' peak memory bandwidth (GB/s) by device name, for a GPU whose
# bandwidth cannot be measured here; longest match first.
GPU_BANDWIDTH_GBS = [("H200", 4800.0), ("H100 PCIe", 2000.0), ("H100 NVL", 3900.0),
                     ("H100", 3350.0), ("A100-SXM4-80GB", 2039.0), ("A100 80GB PCIe", 1935.0),
                     ("A100", 1555.0), ("L40S", 864.0), ("L4", 300.0), ("A10G", 600.0),
                     ("A10", 600.0), ("T4", 320.0), ("RTX 4090", 1008.0), ("RTX 3090", 936.0)]


def cuda_copy_gbs() -> Optional[float]:
    """Device read bandwidth from a 1 GiB device-to-device copy (read + write
    counted, best of 10), or None without CUDA."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    n = 1 << 30
    a = torch.empty(n, dtype=torch.uint8, device="cuda")
    b = torch.empty_like(a)
    b.copy_(a)
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(10):
        t0 = time.perf_counter()
        b.copy_(a)
        torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t0)
    return 2 * n / best / 1e9


def gpu_bandwidth(device: str) -> Tuple[Optional[float], str]:
    """(GB/s, how it was found) for a GPU Vulkan device."""
    gbs = cuda_copy_gbs()
    if gbs is not None:
        import torch

        return gbs, (f"measured: 1 GiB device-to-device copy with torch.cuda on "
                     f"{torch.cuda.get_device_name()}")
    for key, v in GPU_BANDWIDTH_GBS:
        if key.lower() in device.lower():
            return v, f"the vendor's peak for {key} (not measured: torch has no CUDA here)"
    return None, "unknown (no CUDA to measure with, and not a device this script knows)"


# --------------------------------------------------------------------------- #
# Runners
# --------------------------------------------------------------------------- #

def ember_exe(arg: Optional[str]) -> str:
    exe = arg or os.environ.get("EMBER_LLM") or str(ROOT / "build" / "ember-llm")
    if not os.access(exe, os.X_OK):
        raise SystemExit(f"{exe} is not built (cmake --build build --target ember-llm)")
    return exe


def prompt_ids(exe: str) -> List[int]:
    """The prompt's first 64 token ids (bench_llm.py's text, the committed
    tokenizer), through ember-llm --encode: no Python tokenizer needed."""
    out = subprocess.run([exe, "--tokenizer", str(TOKENIZER), "--encode", PROMPT_TEXT],
                         check=True, capture_output=True, text=True).stdout
    ids = [int(t) for t in out.replace(",", " ").split()]
    if len(ids) < PROMPT_TOKENS:
        raise SystemExit(f"the prompt encodes to {len(ids)} tokens, fewer than {PROMPT_TOKENS}")
    return ids[:PROMPT_TOKENS]


def run_ember(exe: str, path: Path, ids: Sequence[int], new: int, threads: int,
              caches: Path) -> Dict[str, Any]:
    """One `ember-llm --stats` run with its shader and weight caches in caches."""
    env = dict(os.environ, MESA_SHADER_CACHE_DIR=str(caches / "shaders"),
               __GL_SHADER_DISK_CACHE_PATH=str(caches / "shaders"))
    cmd = [exe, "--model", str(path), "--prompt-ids", ",".join(map(str, ids)),
           "--max-new-tokens", str(new), "--temperature", "0", "--threads", str(threads),
           "--weight-cache", str(caches / "weights"), "--stats"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"ember-llm failed on {path.name}: {proc.stderr.strip()[-1500:]}")
    st = parse_stats(proc.stderr)
    st["env"] = env
    return st


def measure_ember(exe: str, path: Path, ids: Sequence[int], new: int, threads: int,
                  reps: int, vulkan: bool) -> Dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        caches = Path(tmp)
        (caches / "shaders").mkdir()
        (caches / "weights").mkdir()
        dropped = drop_page_cache()
        cold = run_ember(exe, path, ids, new, threads, caches)
        warm = [run_ember(exe, path, ids, new, threads, caches) for _ in range(reps)]
        res = {"decode_tps": max(w["decode_tps"] for w in warm),
               "prefill_tps": max(w["prefill_tps"] for w in warm),
               "load_cold_ms": cold["load_ms"], "load_warm_ms": min(w["load_ms"] for w in warm),
               "page_cache_dropped": dropped, "device": warm[0].get("vulkan_device"),
               "float16_storage": warm[0].get("vulkan_float16"),
               "device_weights_mib": warm[0].get("vulkan_weights_mib")}
        if vulkan:
            try:  # the ETDump reader is ember's Python package (the tree's, if not installed)
                import ember.devtools.etdump_reader  # noqa: F401
            except ImportError:
                sys.path.insert(0, str(ROOT / "python"))
            from vk_profile import step_times_us, traced_runs

            runs = traced_runs(exe, str(path), new, prompt_ids=ids, threads=threads,
                               env=cold["env"])
            if len(runs) > 1:
                gpu_us, host_us = step_times_us(runs[1:])
                res["gpu_ms"], res["host_ms"] = gpu_us / 1e3, host_us / 1e3
    return res


def llama_bench_vulkan_exe() -> Optional[Path]:
    """llama-bench built with GGML_VULKAN by scripts/bench_peers.sh --vulkan
    (LLAMA_BENCH_VULKAN overrides)."""
    env = os.environ.get("LLAMA_BENCH_VULKAN")
    if env:
        return Path(env)
    exe = PEERS / "llama-vulkan-build" / "bin" / "llama-bench"
    return exe if exe.exists() else None


def measure_llama_bench(path: Path, new: int, reps: int) -> Dict[str, Any]:
    """llama-bench on the Vulkan device (-ngl 99): pp64 from an empty cache
    and tg{new} after 64 cached tokens, mean of reps; f16 KV cache."""
    exe = llama_bench_vulkan_exe()
    if exe is None:
        why = PEERS / "llama-vulkan-build.failed"
        raise Unavailable("not built" + (f": {why.read_text().strip()}" if why.exists() else "")
                          + " (scripts/bench_peers.sh --vulkan)")

    def bench(*test: str) -> Dict[str, Any]:
        proc = subprocess.run([str(exe), "-m", str(path), "-ngl", "99", *test, "-r", str(reps),
                               "-o", "json"], capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"llama-bench failed: {proc.stderr.strip()[-1500:]}")
        runs = json.loads(proc.stdout)
        if len(runs) != 1 or "avg_ts" not in runs[0]:
            raise RuntimeError(f"llama-bench printed no single result:\n{proc.stdout[-1500:]}")
        return runs[0]

    pp = bench("-p", str(PROMPT_TOKENS), "-n", "0")
    tg = bench("-p", "0", "-n", str(new), "-d", str(PROMPT_TOKENS))
    if "vulkan" not in str(pp.get("backends", "")).lower():
        raise Unavailable(f"llama-bench ran on {pp.get('backends')!r}, not Vulkan")
    return {"prefill_tps": float(pp["avg_ts"]), "decode_tps": float(tg["avg_ts"]),
            "device": str(pp.get("gpu_info") or "?")}


def measure_eager(model: str, ids: Sequence[int], new: int, threads: int) -> Dict[str, Any]:
    """PyTorch eager on the KV-cache model: CUDA float16 when torch has a GPU,
    else CPU float32."""
    import torch

    sys.path.insert(0, str(NANOGPT))
    from kv_cache import KVCacheGPT

    cuda = torch.cuda.is_available()
    dev, dtype = ("cuda", torch.float16) if cuda else ("cpu", torch.float32)
    torch.set_num_threads(threads)
    kv = KVCacheGPT(load_model(model)).eval().to(device=dev, dtype=dtype)

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize()

    @torch.no_grad()
    def generate(n_new: int) -> Tuple[float, float]:
        kv.reset()
        t0 = time.perf_counter()
        logits = kv(torch.tensor([list(ids)], device=dev), torch.tensor([0], device=dev))
        tok = int(logits[0, -1].argmax())
        sync()
        t1 = time.perf_counter()
        pos = len(ids)
        for _ in range(n_new - 1):
            logits = kv(torch.tensor([[tok]], device=dev), torch.tensor([pos], device=dev))
            tok = int(logits[0, -1].argmax())
            pos += 1
        sync()
        t2 = time.perf_counter()
        return len(ids) / (t1 - t0), (n_new - 1) / (t2 - t1)

    # the first generations of a fresh model run slower (allocator, thread
    # pool and page faults settling): one untimed, then the best of two
    generate(new)
    runs = [generate(new) for _ in range(2)]
    pre, dec = max(r[0] for r in runs), max(r[1] for r in runs)
    device = (f"CUDA {torch.cuda.get_device_name()}, float16" if cuda
              else f"CPU, float32, {threads} threads")
    return {"prefill_tps": pre, "decode_tps": dec, "device": device, "cuda": cuda}


# --------------------------------------------------------------------------- #
# Driver
# --------------------------------------------------------------------------- #

def measure_all(args: argparse.Namespace, files: Path, man: Dict[str, Any], exe: str,
                log: Callable[[str], None]) -> List[Dict[str, Any]]:
    ids = prompt_ids(exe)
    threads = args.threads or os.cpu_count() or 1
    rows: List[Dict[str, Any]] = []
    for model in args.models:
        cfg = man["models"].get(model)
        if cfg is None:
            raise SystemExit(f"{files}/manifest.json has no model {model!r} "
                             f"(write it with --export-only)")
        new = min(args.new_tokens, cfg["block_size"] - PROMPT_TOKENS)
        for key in args.keys:
            name = file_name(model, key)
            gguf = key.startswith("gguf")
            runtime, weights, bits = (("llama.cpp vulkan", GGUFS[key][0], GGUFS[key][2]) if gguf
                                      else (PROGRAMS[key][0], PROGRAMS[key][1], PROGRAMS[key][4]))
            row: Dict[str, Any] = {"model": model, "key": key, "runtime": runtime,
                                   "weights": weights, "bits": bits, "new": new, "cfg": cfg}
            rows.append(row)
            log(f"  {model}: {runtime}, {weights} ...")
            t0 = time.perf_counter()
            try:
                if name in man["failed"]:
                    raise Unavailable(("not made: " if gguf else "not supported: ")
                                      + man["failed"][name])
                path = files / name
                if not path.exists():
                    raise Unavailable(f"no {name} in {files}")
                if gguf:
                    row.update(measure_llama_bench(path, new, args.reps))
                    row["bytes"] = gguf_bytes(path, cfg)
                    row["kv_elem"] = 2
                else:
                    row.update(measure_ember(exe, path, ids, new, threads, args.reps,
                                             key.startswith("vulkan")))
                    row["bytes"] = weight_bytes(cfg, key)
                    row["kv_elem"] = 2 if key.startswith("vulkan") else 4
                    if not key.startswith("vulkan"):
                        row["device"] = f"CPU, {threads} threads"
            except Unavailable as e:
                row["unavailable"] = str(e)
            except RuntimeError as e:
                row["unavailable"] = "failed: " + str(e).strip().splitlines()[-1][:200]
            said = row.get("unavailable") or (f"decode {row['decode_tps']:.1f} tok/s, "
                                              f"prefill {row['prefill_tps']:.1f} tok/s")
            log(f"    {said} ({time.perf_counter() - t0:.0f} s)")
        if not args.no_eager:
            row = {"model": model, "key": "eager", "runtime": "PyTorch eager", "new": new,
                   "cfg": cfg, "bits": "16"}
            log(f"  {model}: PyTorch eager ...")
            try:
                row.update(measure_eager(model, ids, new, threads))
                row["weights"] = "float16" if row["cuda"] else "float32"
                row["bits"] = "16" if row["cuda"] else "32"
                row["bytes"] = weight_bytes(cfg, "xnnpack_fp32") / (2 if row["cuda"] else 1)
                row["kv_elem"] = 2 if row["cuda"] else 4
            except Exception as e:  # noqa: BLE001 - no torch, no model: the row says so
                row["weights"] = "-"
                row["unavailable"] = f"failed: {e}"
            said = row.get("unavailable") or (f"decode {row['decode_tps']:.1f} tok/s, "
                                              f"prefill {row['prefill_tps']:.1f} tok/s")
            log(f"    {said}")
            rows.append(row)
    return rows


def fmt(v: Optional[float], spec: str = ".1f") -> str:
    return "-" if v is None else format(v, spec)


def format_table(rows: List[Dict[str, Any]], bw: Dict[str, Optional[float]], isa: str) -> str:
    """The markdown table; bw: GB/s of "vulkan" (the Vulkan device), "cpu"
    (the host) and "cuda" (torch's GPU), None where unknown."""
    from tabulate import tabulate

    ref = {r["model"]: r for r in rows if r["key"] == "vulkan_fp16" and "unavailable" not in r}
    llama = {(r["model"], r["bits"]): r for r in rows
             if r["key"].startswith("gguf") and "unavailable" not in r}
    out = []
    missing: Dict[Tuple[str, str], List[str]] = {}  # (runtime, why) -> "model weights"
    for r in rows:
        head = [MODELS[r["model"]].split(" (")[0], r["runtime"], r["weights"]]
        if "unavailable" in r:
            why = r["unavailable"]
            out.append(head + [r.get("device") or "-", isa,
                               "not built" if why.startswith("not built") else "n/a (below)"]
                       + [""] * 10)
            missing.setdefault((r["runtime"], why), []).append(f"{head[0]} {r['weights']}")
            continue
        pos = PROMPT_TOKENS + r["new"] // 2
        per_token = None if r.get("bytes") is None else \
            r["bytes"] + kv_bytes(r["cfg"], pos, r["kv_elem"])
        gbs = bw["cuda"] if r.get("cuda") else bw["cpu"] if r["runtime"].startswith(
            ("ember xnnpack", "PyTorch")) else bw["vulkan"]
        floor = None if per_token is None or gbs is None else gbs * 1e9 / per_token
        rr = ref.get(r["model"])
        peer = llama.get((r["model"], r["bits"]))
        load = ("-" if r.get("load_cold_ms") is None
                else f"{r['load_cold_ms']:.0f} / {r['load_warm_ms']:.0f}")
        out.append(head + [
            r.get("device") or "-", isa, fmt(r["decode_tps"]), fmt(r["prefill_tps"]),
            fmt(r.get("gpu_ms"), ".2f"), fmt(r.get("host_ms"), ".2f"), load,
            fmt(None if per_token is None else per_token / 1e6), fmt(floor),
            "-" if floor is None else f"{100 * r['decode_tps'] / floor:.0f}%",
            "-" if rr is None else f"{r['decode_tps'] / rr['decode_tps']:.2f}",
            "-" if peer is None or r["key"].startswith("gguf") or r["key"] == "eager"
            else f"{r['decode_tps'] / peer['decode_tps']:.2f}"])
    table = tabulate(out, headers=[
        "model", "runtime", "weights", "device", "CPU ISA", "decode tok/s", "prefill tok/s",
        "GPU ms / step", "host ms / step", "load ms cold / warm", "MB read / token",
        "floor tok/s", "% of floor", "decode vs ember vulkan float16",
        "decode vs llama.cpp vulkan (same bits)"],
        tablefmt="github", disable_numparse=True)
    notes = [f"- {rt} ({', '.join(which)}): {why}." for (rt, why), which in missing.items()]
    return table + ("\n\n" + "\n".join(notes) if notes else "")


def section(cmd: str, table: str, notes: List[str], rows: List[Dict[str, Any]],
            man: Dict[str, Any]) -> str:
    cfgs = "; ".join(f"{MODELS[m]}: {c}" for m, c in man["models"].items())
    new = sorted({r["new"] for r in rows})
    return (
        f"{SECTION}\n\nCommand: `{cmd}`\n\n" + " ".join(notes) + "\n\n"
        f"Models: {cfgs}. KV-cache exports (examples/nanogpt/kv_cache.py); a 64-token prompt "
        f"(bench_llm.py's text), then {'/'.join(map(str, new))} new tokens, greedy "
        "(nanoGPT's window is 128). ember vulkan: VulkanBackend with float16 tensors on the "
        "device (`force_fp16`); int8 per channel is export.py's `--quant int8wo` "
        "(`aten._weight_int8pack_mm`), 4-bit is torchao's IntxWeightOnlyConfig(int4, group "
        f"{GROUP}) lowered to `et_vk.linear_q4gsw`. ember xnnpack (CPU): the same model "
        "exported for XnnpackBackend, run by the same ember-llm on the CPU. Columns: decode "
        "and prefill tok/s from `ember-llm --stats` (best of the warm runs; llama-bench: its "
        "mean, pp64 and tg after 64 cached tokens, f16 KV cache); GPU ms / step and host ms / "
        "step: a decode step's summed per-node GPU timestamps of the Vulkan delegate and "
        "Method::execute's wall time, from a separate traced run (`ember-llm --etdump`, as "
        "bench/vulkan/vk_profile.py reads it); load ms: ember-llm's load (program, method, "
        "delegate init: device, shaders, weight upload) on a cold start (empty Mesa/NVIDIA "
        "shader cache and ember weight cache, page cache dropped when allowed) and then warm "
        "(the same caches); MB read / token: the weights a decode step reads as stored (from "
        "the shapes; llama.cpp's from its GGUF) plus the KV cache at the average position "
        "(float16 on Vulkan and in llama.cpp, float32 on the CPU); floor tok/s: the "
        "bandwidth above over those bytes, the ceiling decode cannot pass when it is "
        "memory-bound (a model the CPU's caches hold, nanoGPT's 4 to 15 MB, can pass a "
        "floor set by memory bandwidth); % of floor: decode tok/s over it. The ratio columns divide decode "
        "tok/s by the same model's ember vulkan float16 row, and by llama.cpp's Vulkan row "
        "with the same weight bits.\n\n"
        f"{table}\n")


def main(argv: Optional[List[str]] = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="nanogpt,gpt2", help="comma-separated: nanogpt, gpt2")
    ap.add_argument("--rows", default=",".join(list(PROGRAMS) + list(GGUFS)),
                    help="comma-separated files to measure: " + ", ".join(list(PROGRAMS) + list(GGUFS)))
    ap.add_argument("--new-tokens", type=int, default=NEW_TOKENS,
                    help="tokens generated after the prompt (nanoGPT: at most 64)")
    ap.add_argument("--reps", type=int, default=2, help="warm runs after the cold one (the best is kept)")
    ap.add_argument("--threads", type=int, default=0, help="ember-llm --threads (default: all cores)")
    ap.add_argument("--no-eager", action="store_true", help="leave out PyTorch eager")
    ap.add_argument("--ember-llm", help="ember-llm to run (default: $EMBER_LLM, else build/ember-llm)")
    ap.add_argument("--workdir", default=str(ROOT / "build-bench" / "vulkan"),
                    help="where files are exported to (kept between runs)")
    ap.add_argument("--reexport", action="store_true", help="export every file again")
    grp = ap.add_mutually_exclusive_group()
    grp.add_argument("--pte-dir", help="measure the files of DIR (from --export-only); export nothing")
    grp.add_argument("--export-only", metavar="DIR", help="write every .pte and GGUF file to DIR, then stop")
    ap.add_argument("--out", default=str(ROOT / "bench" / "RESULTS.md"),
                    help="results file to update ('' to skip)")
    args = ap.parse_args(argv)
    args.models = [m for m in args.models.split(",") if m]
    args.keys = [k for k in args.rows.split(",") if k]
    bad = [m for m in args.models if m not in MODELS] + \
        [k for k in args.keys if k not in PROGRAMS and k not in GGUFS]
    if bad:
        raise SystemExit(f"unknown models or rows: {bad}")

    def log(s: str) -> None:
        print(s, flush=True)

    start = time.perf_counter()
    if args.pte_dir:
        files = Path(args.pte_dir)
        man = json.loads((files / "manifest.json").read_text())
    else:
        files = Path(args.export_only or args.workdir)
        if args.reexport and (files / "manifest.json").exists():
            (files / "manifest.json").unlink()
        log(f"exporting into {files}")
        man = export_all(files, args.models, args.keys, log)
        if args.export_only:
            log(f"wrote {files} ({time.perf_counter() - start:.0f} s); measure with --pte-dir")
            return

    from machine import machine_line, measure_roofline

    exe = ember_exe(args.ember_llm)
    load_start = os.getloadavg()[1] if hasattr(os, "getloadavg") else 0.0
    threads = args.threads or os.cpu_count() or 1
    isa = cpu_isa()
    roof = measure_roofline([threads])
    cpu_gbs = roof["read_gbs"][threads]
    notes = [f"Machine: {machine_line()}; host read bandwidth {cpu_gbs:.1f} GB/s on {threads} "
             f"threads (bench/roofline/roofline.c, {roof['buffer_bytes'] >> 20} MiB buffer, "
             "measured in this run)."]
    log(notes[0])

    rows = measure_all(args, files, man, exe, log)
    # the device ember-llm ran on (vulkaninfo's first device where no row ran)
    vk = next((r["device"] for r in rows if r["key"].startswith("vulkan") and r.get("device")),
              None) or vulkan_device_from_vulkaninfo() or "unknown"
    if is_cpu_device(vk):
        vk_gbs = cpu_gbs
        notes.append(f"Vulkan device: {vk}, Mesa's lavapipe, which runs the shaders on this "
                     "CPU: every Vulkan number here (GPU ms included) is the CPU's, and its "
                     "floor is the host's read bandwidth.")
    else:
        vk_gbs, how = gpu_bandwidth(vk)
        notes.append(f"Vulkan device: {vk}; its bandwidth {fmt(vk_gbs)} GB/s ({how}).")
    cuda_gbs = cuda_copy_gbs() if any(r.get("cuda") for r in rows) else None
    if cuda_gbs is not None:
        notes.append(f"PyTorch eager's GPU: {cuda_gbs:.0f} GB/s (a 1 GiB device-to-device "
                     "copy, measured).")
    table = format_table(rows, {"vulkan": vk_gbs, "cpu": cpu_gbs, "cuda": cuda_gbs}, isa)
    secs = time.perf_counter() - start
    notes.append(f"The run took {secs / 60:.0f} minutes ({secs:.0f} s) here.")
    if hasattr(os, "getloadavg"):  # other work on the machine shows here, and in the figures
        load_end = os.getloadavg()[1]
        notes.append(f"Load average over 5 minutes: {load_start:.1f} at the start, "
                     f"{load_end:.1f} at the end, on {os.cpu_count()} CPUs"
                     + (" (other work ran on the machine: figures are noisy)."
                        if max(load_start, load_end) > 1.5 * (os.cpu_count() or 1) else "."))
    print("\n" + table)
    if args.out:
        from machine import quote_command, write_section

        cmd = quote_command([__file__] + (argv if argv is not None else sys.argv[1:]),
                            "make bench-vulkan")
        write_section(Path(args.out), SECTION, section(cmd, table, notes, rows, man))
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

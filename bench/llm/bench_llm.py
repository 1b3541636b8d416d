"""LLM benchmark: GPT-2 124M (random weights, fixed seed) in ember and its peers,
each row on 1 and 2 threads, with its share of the machine's roofline.

    .venv/bin/python bench/llm/bench_llm.py            # the full table into bench/RESULTS.md
    .venv/bin/python bench/llm/bench_llm.py --quick    # a 2-layer model, to check the script
    scripts/bench_peers.sh                             # once: gguf + llama.cpp (benchmark only)

One prompt of 64 tokens, 128 new tokens, greedy. Rows:

- ember xnnpack (a) seq: the seeds' export (dynamic token dim, the whole window
  re-run for every token) delegated to XnnpackBackend, run by `ember-llm`;
- ember xnnpack (b) kv: the KV-cache export (fused SDPA over a cache in planned
  memory), XNNPACK-delegated, run by `ember-llm`;
- ember portable (b) kv: the same KV-cache export on ember's portable kernels;
- eager (kv cache): PyTorch eager, the same KV-cache model code;
- executorch xnnpack (a): the reference ExecuTorch runtime (pip `executorch`,
  Python bindings) on the seeds' export with ExecuTorch's XNNPACK partitioner;
- executorch llm (b) kv: ExecuTorch's own KV-cache LLM export
  (bench/llm/et_llm_export.py: its llama export path, XNNPACK, custom SDPA and
  cache ops) run by ExecuTorch's runtime. Its model is ExecuTorch's llama
  architecture at GPT-2's sizes (the same matrix shapes per layer, an untied
  head, random weights of its own), so it reads and computes the same per
  token within 0.1%, but its tokens cannot be compared;
- llama.cpp f32: the same weights as an f32 GGUF (written with `gguf`), run by
  llama.cpp through `llama-cpp-python` (its Python API; f32 KV cache), and
  `llama-bench` from the same sources when it was built (pp64, and tg128 after
  64 cached tokens; f16 KV cache, the only float type it takes);
- with --slow: ember portable (a) seq, eager (no cache), executorch portable (a)
  (minutes each, and they add little).

Each row runs in its own process (peak RSS is that process's high-water mark;
for the rows driven from Python it includes the interpreter, and torch where
the row imports it). Prefill tok/s is prompt tokens over the time to the
first token's logits; decode tok/s is the remaining new tokens over their
time. Ratios are to ember xnnpack (b) at the same thread count; greedy tokens
are compared with eager (kv cache) on the first thread count.

Roofline (bench/roofline/roofline.c, measured in the same run): decode
% = decode tok/s / the tok/s that the read bandwidth (and, where the step
recomputes a window, the FMA peak) allows at that thread count; prefill % =
prefill GFLOP/s / FMA peak at that thread count. How bytes and FLOPs are
counted: see `Costs` below and the note written beside the table.
"""

from __future__ import annotations

import argparse
import copy
import ctypes
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
NANOGPT = ROOT / "examples" / "nanogpt"
TOKENIZER = NANOGPT / "tokenizer"
PROMPT_TOKENS = 64
NEW_TOKENS = 128
SEED = 1234
SECTION = "## LLM: GPT-2 124M, 64-token prompt, 128 new tokens"
# English text whose first 64 tokens (the committed tokenizer's) are every prompt
PROMPT_TEXT = ("It is a truth universally acknowledged, that a single man in possession of a "
               "good fortune, must be in want of a wife. However little known the feelings or "
               "views of such a man may be on his first entering a neighbourhood, this truth is "
               "so well fixed in the minds of the surrounding families, that he is considered "
               "the rightful property of some one or other of their daughters.")

sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(HERE))

from ember_llm_stats import parse_stats  # noqa: E402


@dataclass(frozen=True)
class Row:
    name: str
    runner: str          # "ember" (ember-llm), "python" (a child), "llama-bench"
    export: Optional[str]  # the file it runs (key of export_paths), None for eager
    window: bool         # True: each decode step re-runs the whole window (no cache)
    slow: bool = False
    same_model: bool = True  # False: another model of the same sizes (tokens not comparable)
    quant: str = "f32"   # weights: "f32", "int8" or "int4" (--quant runs the quantized rows)


ROWS = [
    Row("ember xnnpack (a) seq", "ember", "ember_xnn_seq", True),
    Row("ember xnnpack (b) kv", "ember", "ember_xnn_kv", False),
    Row("ember portable (b) kv", "ember", "ember_kv", False),
    Row("eager (kv cache)", "python", None, False),
    Row("executorch xnnpack (a)", "python", "et_xnnpack", True),
    Row("executorch llm (b) kv", "python", "et_llm", False, same_model=False),
    Row("llama.cpp f32", "python", "gguf", False),
    Row("llama.cpp f32 (llama-bench)", "llama-bench", "gguf", False),
    Row("ember xnnpack (b) kv int8", "ember", "ember_xnn_kv_int8", False, quant="int8"),
    Row("llama.cpp q8_0", "python", "gguf_q8_0", False, quant="int8"),
    Row("llama.cpp q8_0 (llama-bench)", "llama-bench", "gguf_q8_0", False, quant="int8"),
    Row("ember xnnpack (b) kv 8da4w", "ember", "ember_xnn_kv_8da4w", False, quant="int4"),
    Row("executorch llm (b) kv 8da4w", "python", "et_llm_8da4w", False, same_model=False,
        quant="int4"),
    Row("llama.cpp q4_0", "python", "gguf_q4_0", False, quant="int4"),
    Row("llama.cpp q4_0 (llama-bench)", "llama-bench", "gguf_q4_0", False, quant="int4"),
    Row("ember portable (a) seq", "ember", "ember_seq", True, slow=True),
    Row("eager (no cache)", "python", None, True, slow=True),
    Row("executorch portable (a)", "python", "et_portable", True, slow=True),
]
ROW_BY_NAME = {r.name: r for r in ROWS}
REF_ROW = "ember xnnpack (b) kv"
TOKENS_REF_ROW = "eager (kv cache)"
EXPORT_FILES = {"ember_xnn_seq": "ember_xnnpack_seq.pte", "ember_xnn_kv": "ember_xnnpack_kv.pte",
                "ember_kv": "ember_portable_kv.pte", "ember_seq": "ember_portable_seq.pte",
                "et_xnnpack": "executorch_xnnpack_seq.pte", "et_portable": "executorch_portable_seq.pte",
                "et_llm": "executorch_llm_kv.pte", "gguf": "gpt2-f32.gguf",
                "ember_xnn_kv_int8": "ember_xnnpack_kv_int8.pte",
                "ember_xnn_kv_8da4w": "ember_xnnpack_kv_8da4w.pte",
                "et_llm_8da4w": "executorch_llm_kv_8da4w.pte",
                "gguf_q8_0": "gpt2-q8_0.gguf", "gguf_q4_0": "gpt2-q4_0.gguf"}
# The quantized rows' table: its own section, its rows' weights as stored
QUANT_SECTION = "## LLM quantized: GPT-2 124M with int8 and 4-bit weights"
QUANT_GROUP = 32  # 8da4w group size (llama.cpp's q4_0 blocks hold 32 weights too)
# The second read-bandwidth probe of the quantized table: a buffer about the
# int8 model's bytes per token (124 MB)
CACHED_MIB = 128


class Unavailable(Exception):
    """A row that cannot run here; the message says why (it goes in the table)."""


def _config(quick: bool) -> Dict[str, int]:
    if quick:
        return dict(n_layer=2, n_head=4, n_embd=128, block_size=256, vocab_size=50257)
    return dict(n_layer=12, n_head=12, n_embd=768, block_size=1024, vocab_size=50257)


def _model(cfg: Dict[str, int]):
    sys.path.insert(0, str(NANOGPT))
    from model import GPT, GPTConfig

    torch = __import__("torch")
    torch.manual_seed(SEED)
    return GPT(GPTConfig(**cfg, dropout=0.0, bias=True)).eval()


def _prompt_ids() -> List[int]:
    """64 token ids of English text, as the committed tokenizer encodes it."""
    from tokenizers import ByteLevelBPETokenizer

    tok = ByteLevelBPETokenizer(str(TOKENIZER / "vocab.json"), str(TOKENIZER / "merges.txt"))
    ids = tok.encode(PROMPT_TEXT).ids
    if len(ids) < PROMPT_TOKENS:
        raise SystemExit("the prompt text is too short for 64 tokens")
    return ids[:PROMPT_TOKENS]


# --------------------------------------------------------------------------- #
# What a token costs: bytes read and FLOPs, from the model's shapes
# --------------------------------------------------------------------------- #

@dataclass(frozen=True)
class Costs:
    """Work of GPT-2-shaped model, in f32. Every weight is read once per forward
    (the GEMMs of a window re-use each weight across its rows); the tied
    embedding / head matrix is read whole once, as the head (the embedding
    lookup reads one row per token, as does the position embedding). The KV
    cache read by attention is counted too. FLOPs are those of the matrix
    products (2 per multiply-add): the linear layers on every new token,
    attention's QK^T and AV over the causal positions only, and the head on
    the last position only (every export here returns the last logits only).
    Layer norms, GELU, softmax and adds are left out (under 1%)."""

    n_layer: int
    n_embd: int
    vocab: int

    @property
    def block_matmul_params(self) -> int:  # c_attn, attn.c_proj, c_fc, mlp.c_proj
        c = self.n_embd
        return self.n_layer * (3 * c * c + c * c + 4 * c * c + 4 * c * c)

    @property
    def small_params(self) -> int:  # biases, layer norms, ln_f, one wte row, one wpe row
        c = self.n_embd
        return self.n_layer * (3 * c + c + 4 * c + c + 4 * c) + 2 * c + 2 * c

    @property
    def weight_bytes(self) -> int:
        return 4 * (self.block_matmul_params + self.small_params + self.vocab * self.n_embd)

    def kv_bytes(self, positions: int) -> int:
        return 4 * self.n_layer * 2 * positions * self.n_embd

    def flops(self, new: int, past: int) -> float:
        """FLOPs of one forward over `new` tokens after `past` cached ones."""
        attended = new * past + new * (new + 1) // 2   # sum over new tokens of positions seen
        return (2.0 * new * self.block_matmul_params
                + self.n_layer * 2 * 2 * self.n_embd * attended
                + 2.0 * self.vocab * self.n_embd)

    def decode_steps(self, prompt: int, steps: int, window: bool) -> List[Tuple[float, float]]:
        """(bytes, FLOPs) of each decode step: with a KV cache one token after
        prompt + s - 1 cached; without, the whole window of prompt + s tokens."""
        out = []
        for s in range(1, steps + 1):
            ctx = prompt + s
            if window:
                out.append((float(self.weight_bytes), self.flops(ctx, 0)))
            else:
                out.append((float(self.weight_bytes + self.kv_bytes(ctx)), self.flops(1, ctx - 1)))
        return out

    def decode_roofline_tps(self, prompt: int, steps: int, window: bool, bw_gbs: float,
                            peak_gflops: float) -> float:
        """Tokens/s if every step took max(bytes / bandwidth, FLOPs / peak)."""
        t = sum(max(b / (bw_gbs * 1e9), f / (peak_gflops * 1e9))
                for b, f in self.decode_steps(prompt, steps, window))
        return steps / t


# --------------------------------------------------------------------------- #
# Exports (cached in the work directory, each redone when its sources change)
# --------------------------------------------------------------------------- #

def _export_key(cfg: Dict[str, int], export: str) -> str:
    """A hash of what one exported file depends on: the config, the model code,
    and the exporter's sources (ember's Python package for ember's files, the
    executorch version for ExecuTorch's, gguf and gguf_gpt2.py for the GGUF).
    The export code of this script is not in it: --reexport after changing it."""
    import importlib.metadata as md

    h = hashlib.sha256(json.dumps([cfg, export], sort_keys=True).encode())
    files = [NANOGPT / "model.py"]
    pkgs: List[str] = []
    if export.startswith("ember"):
        files += sorted((ROOT / "python" / "ember").rglob("*.py")) + sorted(NANOGPT.glob("*.py"))
    elif export.startswith("et"):
        pkgs.append("executorch")
        files += [HERE / "et_llm_export.py"] if export.startswith("et_llm") else []
    else:
        pkgs += ["gguf"] + (["llama_cpp_python"] if export != "gguf" else [])
        files.append(HERE / "gguf_gpt2.py")
    for f in files:
        if f.exists():
            h.update(str(f.relative_to(ROOT)).encode())
            h.update(f.read_bytes())
    for pkg in pkgs:
        try:
            h.update(f"{pkg}={md.version(pkg)}".encode())
        except md.PackageNotFoundError:
            pass
    return h.hexdigest()[:16]


def export_paths(work: Path) -> Dict[str, Path]:
    return {k: work / v for k, v in EXPORT_FILES.items()}


def _et_llm_module():
    """bench/llm/et_llm_export.py, or Unavailable saying why not."""
    if not (HERE / "et_llm_export.py").exists():
        raise Unavailable("bench/llm/et_llm_export.py is not in this tree")
    import et_llm_export

    if not hasattr(et_llm_export, "export_executorch_llm"):
        raise Unavailable("bench/llm/et_llm_export.py has no export_executorch_llm()")
    return et_llm_export


def export_all(cfg: Dict[str, int], work: Path, needed: Sequence[str],
               reexport: bool = False) -> Dict[str, str]:
    """Writes the files the selected rows need; returns {export: reason} for
    those that could not be made (their rows say so)."""
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    files = export_paths(work)
    keys = {k: _export_key(cfg, k) for k in needed}

    def stamp(k: str) -> Path:
        return files[k].with_name(files[k].name + ".key")

    for k in needed:  # a file whose sources changed is made again
        if reexport or not stamp(k).exists() or stamp(k).read_text() != keys[k]:
            files[k].unlink(missing_ok=True)
    failed: Dict[str, str] = {}
    todo = [k for k in needed if not files[k].exists()]
    if not todo:
        return failed
    model = _model(cfg)
    sys.path.insert(0, str(NANOGPT))
    import export as nanogpt_export

    def timed(what: str, fn: Callable[[], None]) -> None:
        t = time.time()
        try:
            fn()
        except Unavailable as e:
            failed[what] = str(e)
            print(f"  {what}: not available: {e}", flush=True)
            return
        stamp(what).write_text(keys[what])
        print(f"  exported {what} in {time.time() - t:.0f} s", flush=True)

    def seq_program() -> Any:
        bs = model.config.block_size
        example = (torch.randint(0, 100, (1, bs), dtype=torch.long),)
        dyn = ({1: torch.export.Dim("token_dim", max=bs)},)
        with sdpa_kernel([SDPBackend.MATH]), torch.no_grad():
            return torch.export.export(model, example, dynamic_shapes=dyn)

    for k in todo:
        path = files[k]
        if k == "ember_xnn_seq":
            timed(k, lambda: path.write_bytes(nanogpt_export.export_seq(model, backend="xnnpack").buffer))
        elif k == "ember_seq":
            timed(k, lambda: path.write_bytes(nanogpt_export.export_seq(model, backend="portable").buffer))
        elif k == "ember_xnn_kv":
            timed(k, lambda: path.write_bytes(nanogpt_export.export_kv(model, backend="xnnpack").buffer))
        elif k == "ember_kv":
            timed(k, lambda: path.write_bytes(nanogpt_export.export_kv(model, backend="portable").buffer))
        elif k == "et_xnnpack":
            def et_xnnpack() -> None:
                from executorch.backends.xnnpack.partition.xnnpack_partitioner import \
                    XnnpackPartitioner
                from executorch.exir import EdgeCompileConfig, to_edge_transform_and_lower

                prog = to_edge_transform_and_lower(
                    seq_program(), partitioner=[XnnpackPartitioner()],
                    compile_config=EdgeCompileConfig(_check_ir_validity=False))
                path.write_bytes(prog.to_executorch().buffer)
            timed(k, et_xnnpack)
        elif k == "et_portable":
            def et_portable() -> None:
                from executorch.exir import EdgeCompileConfig, to_edge

                prog = to_edge(seq_program(), compile_config=EdgeCompileConfig(_check_ir_validity=False))
                path.write_bytes(prog.to_executorch().buffer)
            timed(k, et_portable)
        elif k == "et_llm":
            def et_llm() -> None:
                _et_llm_module().export_executorch_llm(model, path)
            timed(k, et_llm)
        elif k in ("ember_xnn_kv_int8", "ember_xnn_kv_8da4w"):
            scheme = "int8" if k.endswith("int8") else "8da4w"
            # 8da4w quantizes the linear layers of the model it is given in place
            timed(k, lambda: path.write_bytes(nanogpt_export.export_kv(
                copy.deepcopy(model), backend="xnnpack", quant=scheme,
                group_size=QUANT_GROUP).buffer))
        elif k == "et_llm_8da4w":
            def et_llm_8da4w() -> None:
                _et_llm_module().export_executorch_llm(model, path, qmode="8da4w",
                                                       group_size=QUANT_GROUP)
            timed(k, et_llm_8da4w)
        elif k == "gguf":
            timed(k, lambda: _write_f32_gguf(model, path))
        elif k in ("gguf_q8_0", "gguf_q4_0"):
            def to_quantized_gguf() -> None:
                try:
                    import llama_cpp
                except ImportError:
                    raise Unavailable("llama-cpp-python is not installed (scripts/bench_peers.sh)")
                ftype = {"gguf_q8_0": llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0,
                         "gguf_q4_0": llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_0}[k]
                with tempfile.TemporaryDirectory(dir=work) as tmp:
                    src = Path(tmp) / "f32.gguf"
                    _write_f32_gguf(model, src)
                    params = llama_cpp.llama_model_quantize_default_params()
                    params.ftype = ftype
                    params.nthread = os.cpu_count() or 1
                    rc = llama_cpp.llama_model_quantize(str(src).encode(), str(path).encode(),
                                                        ctypes.byref(params))
                    if rc != 0 or not path.exists():
                        raise RuntimeError(f"llama.cpp's quantizer failed ({rc}) for {path.name}")
            timed(k, to_quantized_gguf)
    return failed


def _write_f32_gguf(model: Any, path: Path) -> None:
    try:
        from gguf_gpt2 import write_gpt2_gguf
        import gguf  # noqa: F401
    except ImportError:
        raise Unavailable("the gguf package is not installed (scripts/bench_peers.sh)")
    write_gpt2_gguf(model, TOKENIZER, path)


# --------------------------------------------------------------------------- #
# Rows (each in a child process: `--row NAME --threads N`)
# --------------------------------------------------------------------------- #

def _peak_rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def _generate(step: Callable[[List[int], int], int], prompt: List[int], n_new: int,
              budget_s: float) -> Dict[str, Any]:
    """step(tokens so far, n_new_tokens_to_feed) -> next token; timed prefill then decode.
    Decoding stops early once it has run for budget_s (the row then says how many
    tokens its decode rate was measured over)."""
    tokens = list(prompt)
    t0 = time.perf_counter()
    tokens.append(step(tokens, len(prompt)))
    t1 = time.perf_counter()
    steps = 0
    for _ in range(n_new - 1):
        tokens.append(step(tokens, 1))
        steps += 1
        if time.perf_counter() - t1 > budget_s:
            break
    t2 = time.perf_counter()
    return {"prefill_tps": len(prompt) / (t1 - t0),
            "decode_tps": steps / (t2 - t1) if steps else 0.0, "decode_steps": steps,
            "tokens": tokens[len(prompt):], "peak_rss_mib": _peak_rss_mib()}


def _row_llama_cpp(gguf_path: Path, prompt: List[int], threads: int,
                   budget_s: float, bs: int) -> Dict[str, Any]:
    try:
        import llama_cpp
    except ImportError:
        raise Unavailable("llama-cpp-python is not installed (scripts/bench_peers.sh)")
    import numpy as np

    if not gguf_path.exists():
        raise Unavailable("no GGUF file (the gguf package is not installed: scripts/bench_peers.sh)")
    f32 = llama_cpp.GGML_TYPE_F32
    llm = llama_cpp.Llama(model_path=str(gguf_path), n_ctx=bs, n_batch=PROMPT_TOKENS,
                          n_threads=threads, n_threads_batch=threads, type_k=f32, type_v=f32,
                          logits_all=False, verbose=False)
    n_vocab = llm.n_vocab()

    def step(tokens: List[int], n: int) -> int:
        llm.eval(tokens[-n:])
        logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm.ctx, -1),
                                       shape=(n_vocab,))
        return int(logits.argmax())

    llm.reset()
    res = _generate(step, prompt, NEW_TOKENS, budget_s)
    res["note"] = f"llama-cpp-python {llama_cpp.__version__}"
    return res


def run_python_row(row: str, cfg: Dict[str, int], files: Dict[str, Path],
                   prompt: List[int], threads: int, budget_s: float) -> Dict[str, Any]:
    bs = cfg["block_size"]
    if row.startswith("llama.cpp"):  # no torch in this process
        return _row_llama_cpp(files[ROW_BY_NAME[row].export], prompt, threads, budget_s, bs)

    import torch

    torch.set_num_threads(threads)
    if row.startswith("eager"):
        model = _model(cfg)
        if row == "eager (no cache)":
            @torch.no_grad()
            def step(tokens: List[int], _: int) -> int:
                logits, _ = model(torch.tensor([tokens[-bs:]]))
                return int(logits[0, -1].argmax())
        else:
            sys.path.insert(0, str(NANOGPT))
            from kv_cache import KVCacheGPT

            kv = KVCacheGPT(model).eval()
            state = {"pos": 0}

            @torch.no_grad()
            def step(tokens: List[int], n: int) -> int:
                logits = kv(torch.tensor([tokens[-n:]]), torch.tensor([state["pos"]]))
                state["pos"] += n
                return int(logits[0, -1].argmax())
        return _generate(step, prompt, NEW_TOKENS, budget_s)

    from executorch.extension.pybindings.portable_lib import (_threadpool_get_thread_count,
                                                               _unsafe_reset_threadpool)
    from executorch.runtime import Runtime

    # ExecuTorch 1.5.1 sizes its one process-wide thread pool (XNNPACK's and
    # the optimized kernels') through this experimental call.
    _unsafe_reset_threadpool(threads)
    if _threadpool_get_thread_count() != threads:
        raise RuntimeError(f"ExecuTorch kept {_threadpool_get_thread_count()} threads")
    if row.startswith("executorch llm"):
        et = _et_llm_module()
        path = files[ROW_BY_NAME[row].export]
        if not path.exists():
            raise Unavailable("its export failed (see the export step)")
        if hasattr(et, "load_runtime_ops"):
            et.load_runtime_ops()
        method = Runtime.get().load_program(str(path)).load_method("forward")
        state = {"pos": 0}

        def step(tokens: List[int], n: int) -> int:
            out = method.execute([torch.tensor([tokens[-n:]], dtype=torch.long),
                                  torch.tensor([state["pos"]], dtype=torch.long)])[0]
            state["pos"] += n
            return int(out.reshape(-1, out.shape[-1])[-1].argmax())

        return _generate(step, prompt, NEW_TOKENS, budget_s)

    path = files["et_portable" if "portable" in row else "et_xnnpack"]
    method = Runtime.get().load_program(str(path)).load_method("forward")

    def step(tokens: List[int], _: int) -> int:
        logits = method.execute([torch.tensor([tokens[-bs:]], dtype=torch.long)])[0]
        return int(logits[0, -1].argmax())

    return _generate(step, prompt, NEW_TOKENS, budget_s)


def run_ember_row(row: Row, exe: str, files: Dict[str, Path], prompt: List[int],
                  threads: int) -> Dict[str, Any]:
    path = files[row.export]
    text = subprocess.run([exe, "--tokenizer", str(TOKENIZER), "--decode",
                           " ".join(map(str, prompt))], check=True, capture_output=True,
                          text=True).stdout
    proc = subprocess.run(
        [exe, "--model", str(path), "--tokenizer", str(TOKENIZER), "--prompt", text,
         "--max-new-tokens", str(NEW_TOKENS), "--temperature", "0", "--ids",
         "--threads", str(threads), "--stats"], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{row.name}: ember-llm failed: {proc.stderr.strip()}")
    try:
        st = parse_stats(proc.stderr)
    except ValueError as e:
        raise RuntimeError(f"{row.name}: {e}")
    if st["prompt_tokens"] != len(prompt):
        raise RuntimeError(f"{row.name}: the prompt encodes to {st['prompt_tokens']} tokens, "
                           f"not {len(prompt)}")
    tokens = [int(t) for t in proc.stdout.split()]
    return {"prefill_tps": st["prefill_tps"], "decode_tps": st["decode_tps"],
            "decode_steps": max(len(tokens) - 1, 0),
            "peak_rss_mib": st["peak_rss_mib"], "tokens": tokens}


def llama_bench_exe() -> Optional[Path]:
    """llama-bench as scripts/bench_peers.sh builds it (LLAMA_BENCH overrides)."""
    env = os.environ.get("LLAMA_BENCH")
    if env:
        return Path(env)
    exe = ROOT / "build-bench" / "peers" / "llama-cpp-build" / "bin" / "llama-bench"
    return exe if exe.exists() else None


def run_llama_bench(gguf_path: Path, threads: int, reps: int) -> Dict[str, Any]:
    """llama-bench's pp64 (from an empty cache) and tg128 after 64 cached
    tokens (-d 64), as the other rows decode after the prompt; mean of reps.
    Its KV cache is f16: llama-bench takes no f32 cache type."""
    exe = llama_bench_exe()
    if exe is None:
        raise Unavailable("llama-bench was not built (scripts/bench_peers.sh)")
    if not gguf_path.exists():
        raise Unavailable("no GGUF file (the gguf package is not installed: scripts/bench_peers.sh)")

    def bench(*test: str) -> float:
        proc = subprocess.run([str(exe), "-m", str(gguf_path), *test, "-t", str(threads),
                               "-r", str(reps), "-o", "json"], capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"llama-bench failed: {proc.stderr[-2000:]}")
        runs = json.loads(proc.stdout)
        if len(runs) != 1 or "avg_ts" not in runs[0]:
            raise RuntimeError(f"llama-bench printed no single result:\n{proc.stdout[-2000:]}")
        return float(runs[0]["avg_ts"])

    return {"prefill_tps": bench("-p", str(PROMPT_TOKENS), "-n", "0"),
            "decode_tps": bench("-p", "0", "-n", str(NEW_TOKENS), "-d", str(PROMPT_TOKENS)),
            "tokens": None, "peak_rss_mib": None, "decode_steps": NEW_TOKENS - 1}


# --------------------------------------------------------------------------- #
# Driver
# --------------------------------------------------------------------------- #

def _child(args: argparse.Namespace, cfg: Dict[str, int], work: Path) -> None:
    prompt = json.loads((work / "prompt.json").read_text())
    try:
        res = run_python_row(args.row, cfg, export_paths(work), prompt, args.threads_one,
                             args.budget)
    except Unavailable as e:
        res = {"unavailable": str(e)}
    print("RESULT " + json.dumps(res))


def _run_row(row: Row, threads: int, args: argparse.Namespace, work: Path,
             files: Dict[str, Path], prompt: List[int], failed: Dict[str, str]) -> Dict[str, Any]:
    if row.export and row.export in failed:
        raise Unavailable(failed[row.export])
    if row.runner == "ember":
        return run_ember_row(row, args.ember_llm, files, prompt, threads)
    if row.runner == "llama-bench":
        return run_llama_bench(files[row.export], threads, 2 if args.quick else 5)
    cmd = [sys.executable, __file__, "--row", row.name, "--threads-one", str(threads),
           "--workdir", args.workdir, "--budget", str(args.budget)]
    proc = subprocess.run(cmd + (["--quick"] if args.quick else []), capture_output=True,
                          text=True)
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode != 0 or not line:
        raise RuntimeError(f"{row.name} failed:\n{proc.stderr[-3000:]}")
    res = json.loads(line[-1][len("RESULT "):])
    if "unavailable" in res:
        raise Unavailable(res["unavailable"])
    return res


def main(argv: Optional[List[str]] = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="a 2-layer model (checks the script)")
    ap.add_argument("--workdir", default=str(ROOT / "build-bench" / "bench-llm"))
    ap.add_argument("--rows", help="comma-separated subset of rows (default: all but the slow)")
    ap.add_argument("--quant", action="store_true",
                    help="the quantized rows (int8 and 4-bit weights, with eager float32 as a "
                         "reference) instead of the float32 ones; their own section")
    ap.add_argument("--slow", action="store_true",
                    help="also the slow rows: " + ", ".join(r.name for r in ROWS if r.slow))
    ap.add_argument("--threads", default="1,2", help="thread counts (comma-separated)")
    ap.add_argument("--ember-llm", default=str(ROOT / ".venv" / "bin" / "ember-llm"),
                    help="the ember-llm to run (default: the one pip install -e . built)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "RESULTS.md"),
                    help="results file to update ('' to skip; --quick never writes)")
    ap.add_argument("--budget", type=float, default=600.0,
                    help="seconds of decoding after which a Python-driven row stops early "
                         "(its decode rate is then over fewer tokens; the table says so)")
    ap.add_argument("--reexport", action="store_true",
                    help="export every file again (they are cached in --workdir and redone "
                         "only when the model, ember, executorch or gguf change)")
    ap.add_argument("--row", help=argparse.SUPPRESS)  # child mode
    ap.add_argument("--threads-one", type=int, default=1, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    cfg = _config(args.quick)
    work = Path(args.workdir) / ("quick" if args.quick else "gpt2")
    work.mkdir(parents=True, exist_ok=True)
    if args.row:
        _child(args, cfg, work)
        return

    from machine import (last_level_cache_bytes, measure_roofline, quote_command, roofline_line,
                         write_section)

    if args.rows:
        names = [r.strip() for r in args.rows.split(",") if r.strip()]
        unknown = [n for n in names if n not in ROW_BY_NAME]
        if unknown:
            raise SystemExit(f"unknown rows {unknown}; rows: {[r.name for r in ROWS]}")
        rows = [ROW_BY_NAME[n] for n in names]
    else:
        rows = [r for r in ROWS if (args.slow or not r.slow) and (r.quant != "f32") == args.quant]
        if args.quant:
            rows.insert(0, ROW_BY_NAME[TOKENS_REF_ROW])
    threads = [int(t) for t in args.threads.split(",")]

    print(f"model: GPT-2 config {cfg} (random weights, seed {SEED}); prompt {PROMPT_TOKENS} "
          f"tokens, {NEW_TOKENS} new tokens, greedy; threads {threads}", flush=True)
    roof = measure_roofline(threads, quick=args.quick)
    print(roofline_line(roof), flush=True)
    cached = None
    if args.quant:  # the quantized models' working set, which a large cache holds in part
        cached = measure_roofline(threads, quick=args.quick, mib=CACHED_MIB)
        cached["llc_bytes"] = last_level_cache_bytes()
        print(cached_line(cached), flush=True)
    files = export_paths(work)
    failed = export_all(cfg, work, sorted({r.export for r in rows if r.export}), args.reexport)
    prompt = _prompt_ids()
    (work / "prompt.json").write_text(json.dumps(prompt))

    results: List[Tuple[Row, int, Dict[str, Any]]] = []
    for row in rows:
        for t in threads:
            print(f"  running {row.name}, {t} thread{'s' if t > 1 else ''} ...", flush=True)
            start = time.time()
            try:
                res = _run_row(row, t, args, work, files, prompt, failed)
            except Unavailable as e:
                print(f"    not available: {e}", flush=True)
                results.append((row, t, {"unavailable": str(e)}))
                break  # the same reason holds for every thread count
            res["seconds"] = time.time() - start
            results.append((row, t, res))
            print(f"    prefill {res['prefill_tps']:.1f} tok/s, decode {res['decode_tps']:.2f} "
                  f"tok/s ({res['seconds']:.0f} s)", flush=True)

    costs = Costs(cfg["n_layer"], cfg["n_embd"], cfg["vocab_size"])
    if args.quant:
        table = format_quant_table(results, costs, roof, cached, files, cfg)
    else:
        table = format_table(results, costs, roof)
    print("\n" + table)
    if args.out and not args.quick:
        cmd = quote_command([__file__] + (argv if argv is not None else sys.argv[1:]),
                            "make bench-llm-quant" if args.quant else "make bench-llm")
        if args.quant:
            write_section(Path(args.out), QUANT_SECTION,
                          quant_section(cmd, table, cfg,
                                        roofline_line(roof) + " " + cached_line(cached)))
        else:
            write_section(Path(args.out), SECTION,
                          results_section(cmd, table, cfg, costs, roof, roofline_line(roof)))
        print(f"wrote {args.out}")


def format_table(results: List[Tuple[Row, int, Dict[str, Any]]], costs: Costs,
                 roof: Dict[str, Any]) -> str:
    from tabulate import tabulate

    ref = {t: r for row, t, r in results if row.name == REF_ROW and "unavailable" not in r}
    tok_ref = next((r["tokens"] for row, _, r in results
                    if row.name == TOKENS_REF_ROW and r.get("tokens")), None)
    prefill_flops = costs.flops(PROMPT_TOKENS, 0)
    out = []
    missing = []
    for row, t, r in results:
        if "unavailable" in r:
            missing.append(f"- {row.name}: not available: {r['unavailable']}.")
            out.append([row.name, "-", "n/a (below)"] + [""] * 8)
            continue
        bw, peak = roof["read_gbs"][t], roof["fma_gflops"][t]
        steps = r.get("decode_steps") or NEW_TOKENS - 1
        roof_tps = costs.decode_roofline_tps(PROMPT_TOKENS, steps, row.window, bw, peak)
        gflops = prefill_flops * r["prefill_tps"] / PROMPT_TOKENS / 1e9
        rr = ref.get(t)
        toks = r.get("tokens")
        if not row.same_model:
            same = "other model"
        elif not toks:
            same = "-"
        elif tok_ref is None:
            same = "(no reference)"
        else:
            n = min(len(toks), len(tok_ref))
            p = _common_prefix(toks, tok_ref)
            same = "yes" if p >= n else f"first {p} of {n}"
        out.append([
            row.name, t, f"{r['prefill_tps']:.1f}", f"{gflops:.1f}", f"{100 * gflops / peak:.0f}%",
            f"{r['decode_tps']:.2f}", f"{100 * r['decode_tps'] / roof_tps:.0f}%",
            str(len(toks)) if toks else str(steps + 1),
            "-" if r.get("peak_rss_mib") is None else f"{r['peak_rss_mib']:.0f}",
            "-" if not rr else f"{r['prefill_tps'] / rr['prefill_tps']:.2f} / "
                               f"{r['decode_tps'] / rr['decode_tps']:.2f}",
            same])
    table = tabulate(out, headers=["row", "threads", "prefill tok/s", "prefill GFLOP/s",
                                   "% FMA peak", "decode tok/s", "% roofline", "new tokens",
                                   "peak RSS MiB", f"vs {REF_ROW} (prefill / decode)",
                                   f"same tokens as {TOKENS_REF_ROW}"],
                     tablefmt="github", disable_numparse=True)
    return table + ("\n\n" + "\n".join(missing) if missing else "")


def results_section(cmd: str, table: str, cfg: Dict[str, int], costs: Costs,
                    roof: Dict[str, Any], roof_line: str) -> str:
    wb = costs.weight_bytes / 1e6
    kv_avg = costs.kv_bytes(PROMPT_TOKENS + NEW_TOKENS // 2) / 1e6
    pf = costs.flops(PROMPT_TOKENS, 0) / 1e9
    kv_bound = {t: roof["read_gbs"][t] * 1e9 / (costs.weight_bytes
                                                + costs.kv_bytes(PROMPT_TOKENS + NEW_TOKENS // 2))
                for t in sorted(roof["read_gbs"])}
    bound = ", ".join(f"{v:.1f} tok/s on {t} thread{'s' if t > 1 else ''}"
                      for t, v in kv_bound.items())
    return (
        f"{SECTION}\n\nCommand: `{cmd}`\n\n{roof_line}\n\n"
        f"Model {cfg} with random weights (seed {SEED}); greedy decoding. Ratios are to "
        f"{REF_ROW} at the same thread count (higher is faster); greedy tokens are compared "
        f"with {TOKENS_REF_ROW}. Rows driven from Python stop decoding after --budget seconds "
        "(600 by default): their new tokens column says how many tokens the decode rate "
        "covers. Peak RSS of those rows includes the interpreter (and torch, about 270 MiB, "
        "except in the llama.cpp rows). ExecuTorch's thread count is set with its "
        "`_unsafe_reset_threadpool`. llama.cpp f32 is llama.cpp driven through "
        "llama-cpp-python's API (n_threads and n_threads_batch = threads, f32 KV cache, "
        "greedy on its logits); llama.cpp f32 (llama-bench) is llama.cpp's own benchmark "
        "tool built from the same sources.\n\n"
        f"Roofline counting: a decode step reads every weight once, {wb:.1f} MB in f32 (the "
        f"tied embedding is read whole once per token, as the head; the lookups read one row "
        f"each), plus the KV cache read so far ({kv_avg:.1f} MB at the average position), so "
        f"the bandwidth bound for the KV-cache rows is {bound}. Rows marked (a) re-run the "
        "whole window for every token: their bound per step is the larger of bytes / "
        "bandwidth and FLOPs / FMA peak, which makes them compute-bound. Prefill FLOPs "
        f"({pf:.2f} GFLOP for the 64-token prompt) count the matrix products only: the "
        "linear layers on every token, attention's QK^T and AV over causal positions, and "
        "the head on the last position only (every export returns the last logits only). "
        "llama-bench's rows: pp64 from an empty cache, tg128 after 64 cached tokens (-d 64), "
        "with an f16 KV cache (it takes no f32 cache type; the roofline still counts f32), "
        "and no tokens to compare. executorch llm (b) kv is ExecuTorch's llama export "
        "(bench/llm/et_llm_export.py): a llama-architecture model at GPT-2's sizes (RMSNorm, "
        "rotary positions, SwiGLU with hidden 2048, untied head), the same matrix bytes and "
        "FLOPs per token within 0.1%, other weights, so its tokens are not compared.\n\n"
        f"{table}\n")


# --------------------------------------------------------------------------- #
# The quantized rows' table
# --------------------------------------------------------------------------- #

def weights_read_per_token(row: Row, files: Dict[str, Path], cfg: Dict[str, int],
                           costs: Costs) -> float:
    """Bytes of weights one decode step reads, from the file as stored: all of
    it but the tables only looked up (one row each per token). A float32 row
    counts as Costs does. ember's and ExecuTorch's quantized programs keep the
    token embedding in float32 for the lookup (the head, untied by
    quantization, is a quantized matrix of its own), and ember's the position
    embedding too; llama.cpp's GGUF has no output matrix, so its token
    embedding, quantized, is read whole as the head and only the position
    embedding is a lookup."""
    if row.quant == "f32":
        return float(costs.weight_bytes)
    path = files[row.export]
    c, v, bs = cfg["n_embd"], cfg["vocab_size"], cfg["block_size"]
    if row.export.startswith("gguf"):
        from gguf import GGUFReader

        tensors = {t.name: int(t.n_bytes) for t in GGUFReader(str(path)).tensors}
        pos = tensors.get("position_embd.weight", 0)
        return float(sum(tensors.values()) - pos + pos // bs)
    lookups = v * c * 4 + (bs * c * 4 if row.export.startswith("ember") else 0)
    rows_read = c * 4 * (2 if row.export.startswith("ember") else 1)
    return float(path.stat().st_size - lookups + rows_read)


def cached_line(cached: Dict[str, Any]) -> str:
    """The working-set probe, for beside the quantized table."""
    ts = sorted(cached["read_gbs"])
    bw = ", ".join(f"{cached['read_gbs'][t]:.1f} GB/s on {t} thread{'s' if t > 1 else ''}"
                   for t in ts)
    llc = cached.get("llc_bytes")
    where = f"this CPU's last-level cache is {llc >> 20} MiB" if llc else \
        "this CPU's last-level cache size is unknown"
    return (f"Read bandwidth over a {cached['buffer_bytes'] >> 20} MiB buffer, about the "
            f"quantized models' bytes per token ({where}): {bw}.")


def format_quant_table(results: List[Tuple[Row, int, Dict[str, Any]]], costs: Costs,
                       roof: Dict[str, Any], cached: Dict[str, Any], files: Dict[str, Path],
                       cfg: Dict[str, int]) -> str:
    from tabulate import tabulate

    kv = costs.kv_bytes(PROMPT_TOKENS + NEW_TOKENS // 2)
    peers = {("int8", t): r for row, t, r in results
             if row.name == "llama.cpp q8_0" and "unavailable" not in r}
    peers.update({("int4", t): r for row, t, r in results
                  if row.name == "llama.cpp q4_0" and "unavailable" not in r})
    et4 = {t: r for row, t, r in results
           if row.name == "executorch llm (b) kv 8da4w" and "unavailable" not in r}
    prefill_flops = costs.flops(PROMPT_TOKENS, 0)
    out, missing = [], []
    for row, t, r in results:
        if "unavailable" in r:
            missing.append(f"- {row.name}: not available: {r['unavailable']}.")
            out.append([row.name, "-", "n/a (below)"] + [""] * 10)
            continue
        bw, peak = roof["read_gbs"][t], roof["fma_gflops"][t]
        weights = weights_read_per_token(row, files, cfg, costs)
        roof_tps = bw * 1e9 / (weights + kv)
        cached_tps = cached["read_gbs"][t] * 1e9 / (weights + kv)
        gflops = prefill_flops * r["prefill_tps"] / PROMPT_TOKENS / 1e9
        size = files[row.export].stat().st_size / 1e6 if row.export else costs.weight_bytes / 1e6
        peer = peers.get((row.quant, t))
        out.append([
            row.name, t, f"{size:.0f}", f"{weights / 1e6:.0f}",
            f"{r['prefill_tps']:.1f}", f"{100 * gflops / peak:.0f}%",
            f"{r['decode_tps']:.2f}", f"{100 * r['decode_tps'] / roof_tps:.0f}%",
            f"{100 * r['decode_tps'] / cached_tps:.0f}%",
            "-" if r.get("peak_rss_mib") is None else f"{r['peak_rss_mib']:.0f}",
            "-" if not peer or row.quant == "f32" else f"{r['decode_tps'] / peer['decode_tps']:.2f}",
            "-" if t not in et4 or row.quant != "int4" else
            f"{r['prefill_tps'] / et4[t]['prefill_tps']:.2f}"])
    table = tabulate(out, headers=["row", "threads", "file MB", "weights read MB/token",
                                   "prefill tok/s", "% FMA peak", "decode tok/s", "% roofline",
                                   f"% {cached['buffer_bytes'] >> 20} MiB roofline",
                                   "peak RSS MiB", "decode vs llama.cpp (same bits)",
                                   "prefill vs executorch 8da4w"],
                     tablefmt="github", disable_numparse=True)
    return table + ("\n\n" + "\n".join(missing) if missing else "")


def quant_section(cmd: str, table: str, cfg: Dict[str, int], roof_line: str) -> str:
    return (
        f"{QUANT_SECTION}\n\nCommand: `{cmd}`\n\n{roof_line}\n\n"
        f"Model {cfg} with random weights (seed {SEED}), the same weights in every row "
        "except ExecuTorch's (its llama architecture at GPT-2's sizes, as in the float32 "
        "table); 64-token prompt, 128 new tokens, greedy. ember int8: dynamic int8 "
        "activations per token, int8 weights per output channel (export.py --quant int8: "
        "ember's XNNPACKQuantizer through pt2e). ember 8da4w and ExecuTorch 8da4w: dynamic "
        f"int8 activations, 4-bit weights with a bf16 scale per group of {QUANT_GROUP} "
        "(torchao's quantize_; ExecuTorch's through its LLM export's qmode 8da4w). llama.cpp "
        "q8_0 / q4_0: the float32 GGUF quantized by llama.cpp's own quantizer (blocks of 32 "
        "weights with an f16 scale), run through llama-cpp-python (f32 KV cache) and by "
        "llama-bench (f16 KV cache). Weights read per token: the bytes of every matrix as "
        "stored, read once per token, without the tables that are only looked up (one row "
        "each); the % roofline is decode tok/s over read bandwidth / (those bytes + the f32 "
        "KV cache at the average position), with the bandwidth of memory (the large buffer) "
        f"and, in the next column, of a {CACHED_MIB} MiB working set: where the last-level "
        "cache holds much of a model between tokens, decode can pass the memory roofline, "
        "and the second column is the ceiling that then applies. The quantized rows' tokens "
        "are not compared: "
        "each quantizer rounds its own way. Eager (kv cache) runs the float32 model.\n\n"
        f"{table}\n")


def _common_prefix(a: List[int], b: List[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


if __name__ == "__main__":
    main()

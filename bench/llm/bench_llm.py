"""LLM benchmark: GPT-2 124M (random weights, fixed seed) in ember and its peers.

    .venv/bin/python bench/llm/bench_llm.py            # the full table into bench/RESULTS.md
    .venv/bin/python bench/llm/bench_llm.py --quick    # a 2-layer model, to check the script

One prompt of 64 tokens, 128 new tokens, greedy. Rows:

- ember (a): the seeds' export (dynamic token dim, the whole window every step)
  run by `ember-llm`;
- ember (b): the KV-cache export (fused SDPA with KV cache) run by `ember-llm`;
- PyTorch eager, without and with a KV cache (the same model code);
- the reference ExecuTorch runtime (pip `executorch`, its Python bindings) on the
  seeds' export, portable kernels and XNNPACK-delegated.

Each row runs in its own process (peak RSS is that process's high-water mark;
for the rows driven from Python it includes the interpreter and torch, about
270 MiB before any model);
PyTorch and XNNPACK use 2 threads, ember's portable kernels one. Prefill tok/s
is prompt tokens over the time to the first token's logits; decode tok/s is the
remaining new tokens over their time. The ratio column is decode tok/s
relative to ember (b). Every row's greedy tokens are compared with ember (b)'s.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

ROOT = Path(__file__).resolve().parents[2]
NANOGPT = ROOT / "examples" / "nanogpt"
TOKENIZER = NANOGPT / "tokenizer"
PROMPT_TOKENS = 64
NEW_TOKENS = 128
SEED = 1234

ROWS = ["ember (a) seq", "ember (b) kv", "eager (no cache)", "eager (kv cache)",
        "executorch portable (a)", "executorch xnnpack (a)"]


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
    text = ("It is a truth universally acknowledged, that a single man in possession of a good "
            "fortune, must be in want of a wife. However little known the feelings or views of "
            "such a man may be on his first entering a neighbourhood, this truth is so well fixed "
            "in the minds of the surrounding families, that he is considered the rightful "
            "property of some one or other of their daughters.")
    ids = tok.encode(text).ids
    if len(ids) < PROMPT_TOKENS:
        raise SystemExit("the prompt text is too short for 64 tokens")
    return ids[:PROMPT_TOKENS]


# --------------------------------------------------------------------------- #
# Exports (cached in the work directory)
# --------------------------------------------------------------------------- #

def _export_seq_inputs(model: Any):
    import torch

    bs = model.config.block_size
    example = (torch.randint(0, 100, (1, bs), dtype=torch.long),)
    dyn = ({1: torch.export.Dim("token_dim", max=bs)},)
    return example, dyn


def export_all(cfg: Dict[str, int], work: Path) -> Dict[str, Path]:
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    files = {k: work / f"{k}.pte" for k in ("ember_seq", "ember_kv", "et_portable", "et_xnnpack")}
    if all(f.exists() for f in files.values()):
        return files
    model = _model(cfg)
    example, dyn = _export_seq_inputs(model)
    with sdpa_kernel([SDPBackend.MATH]), torch.no_grad():
        ep = torch.export.export(model, example, dynamic_shapes=dyn)
    if not files["ember_seq"].exists():
        from ember import EdgeCompileConfig, to_edge

        t = time.time()
        prog = to_edge(ep, compile_config=EdgeCompileConfig(_check_ir_validity=False))
        files["ember_seq"].write_bytes(prog.to_executorch().buffer)
        print(f"  exported ember (a) in {time.time() - t:.0f} s", flush=True)
    if not files["ember_kv"].exists():
        sys.path.insert(0, str(NANOGPT))
        from kv_cache import export_kv

        t = time.time()
        files["ember_kv"].write_bytes(export_kv(model).buffer)
        print(f"  exported ember (b) in {time.time() - t:.0f} s", flush=True)
    if not files["et_portable"].exists():
        from executorch.exir import EdgeCompileConfig, to_edge

        t = time.time()
        prog = to_edge(ep, compile_config=EdgeCompileConfig(_check_ir_validity=False))
        files["et_portable"].write_bytes(prog.to_executorch().buffer)
        print(f"  exported executorch portable in {time.time() - t:.0f} s", flush=True)
    if not files["et_xnnpack"].exists():
        from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
        from executorch.exir import EdgeCompileConfig, to_edge_transform_and_lower

        t = time.time()
        prog = to_edge_transform_and_lower(
            ep, partitioner=[XnnpackPartitioner()],
            compile_config=EdgeCompileConfig(_check_ir_validity=False))
        files["et_xnnpack"].write_bytes(prog.to_executorch().buffer)
        print(f"  exported executorch xnnpack in {time.time() - t:.0f} s", flush=True)
    return files


# --------------------------------------------------------------------------- #
# Rows (each in a child process: `--row NAME`)
# --------------------------------------------------------------------------- #

def _peak_rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def _generate(step, prompt: List[int], n_new: int, budget_s: float) -> Dict[str, Any]:
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
            "decode_tps": steps / (t2 - t1) if steps else 0.0,
            "tokens": tokens[len(prompt):], "peak_rss_mib": _peak_rss_mib()}


def run_python_row(row: str, cfg: Dict[str, int], files: Dict[str, Path],
                   prompt: List[int], budget_s: float) -> Dict[str, Any]:
    import torch

    torch.set_num_threads(2)
    bs = cfg["block_size"]
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

    from executorch.runtime import Runtime

    path = files["et_portable" if "portable" in row else "et_xnnpack"]
    method = Runtime.get().load_program(str(path)).load_method("forward")

    def step(tokens: List[int], _: int) -> int:
        logits = method.execute([torch.tensor([tokens[-bs:]], dtype=torch.long)])[0]
        return int(logits[0, -1].argmax())

    return _generate(step, prompt, NEW_TOKENS, budget_s)


def run_ember_row(row: str, files: Dict[str, Path], prompt: List[int]) -> Dict[str, Any]:
    exe = shutil.which("ember-llm", path=str(ROOT / ".venv" / "bin")) or \
        str(ROOT / "build" / "ember-llm")
    path = files["ember_seq" if "(a)" in row else "ember_kv"]
    text = subprocess.run([exe, "--tokenizer", str(TOKENIZER), "--decode",
                           " ".join(map(str, prompt))], check=True, capture_output=True,
                          text=True).stdout
    proc = subprocess.run(
        [exe, "--model", str(path), "--tokenizer", str(TOKENIZER), "--prompt", text,
         "--max-new-tokens", str(NEW_TOKENS), "--temperature", "0", "--ids",
         "--stats"], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{row}: ember-llm failed: {proc.stderr.strip()}")
    err = proc.stderr

    def num(pattern: str) -> float:
        m = re.search(pattern, err)
        if not m:
            raise RuntimeError(f"{row}: no match for {pattern!r} in:\n{err}")
        return float(m.group(1))

    prompt_tokens = int(num(r"prompt tokens:\s+(\d+)"))
    if prompt_tokens != len(prompt):
        raise RuntimeError(f"{row}: the prompt encodes to {prompt_tokens} tokens, not {len(prompt)}")
    return {"prefill_tps": num(r"prefill:.*\(([\d.]+) tok/s\)"),
            "decode_tps": num(r"decode:.*\(([\d.]+) tok/s\)"),
            "peak_rss_mib": num(r"peak RSS:\s+([\d.]+) MiB"),
            "tokens": [int(t) for t in proc.stdout.split()]}


# --------------------------------------------------------------------------- #
# Driver
# --------------------------------------------------------------------------- #

def main(argv: Optional[List[str]] = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="a 2-layer model (checks the script)")
    ap.add_argument("--workdir", default=str(ROOT / "build" / "bench-llm"))
    ap.add_argument("--rows", default=",".join(ROWS), help="comma-separated subset of rows")
    ap.add_argument("--out", default=str(ROOT / "bench" / "RESULTS.md"),
                    help="results file to update ('' to skip)")
    ap.add_argument("--budget", type=float, default=600.0,
                    help="seconds of decoding after which a Python-driven row stops early "
                         "(its decode rate is then over fewer tokens; the table says so)")
    ap.add_argument("--row", help=argparse.SUPPRESS)  # child mode
    args = ap.parse_args(argv)

    cfg = _config(args.quick)
    work = Path(args.workdir) / ("quick" if args.quick else "gpt2")
    work.mkdir(parents=True, exist_ok=True)
    files = {k: work / f"{k}.pte" for k in ("ember_seq", "ember_kv", "et_portable", "et_xnnpack")}
    if args.row:
        prompt = json.loads((work / "prompt.json").read_text())
        res = run_python_row(args.row, cfg, files, prompt, args.budget)
        print("RESULT " + json.dumps(res))
        return

    print(f"model: GPT-2 config {cfg} (random weights, seed {SEED}); prompt {PROMPT_TOKENS} "
          f"tokens, {NEW_TOKENS} new tokens, greedy", flush=True)
    files = export_all(cfg, work)
    prompt = _prompt_ids()
    (work / "prompt.json").write_text(json.dumps(prompt))

    results: Dict[str, Dict[str, Any]] = {}
    for row in [r.strip() for r in args.rows.split(",") if r.strip()]:
        print(f"  running {row} ...", flush=True)
        t = time.time()
        if row.startswith("ember"):
            res = run_ember_row(row, files, prompt)
        else:
            proc = subprocess.run([sys.executable, __file__, "--row", row, "--workdir",
                                   args.workdir, "--budget", str(args.budget)]
                                  + (["--quick"] if args.quick else []),
                                  capture_output=True, text=True)
            line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
            if proc.returncode != 0 or not line:
                raise RuntimeError(f"{row} failed:\n{proc.stderr[-3000:]}")
            res = json.loads(line[-1][len("RESULT "):])
        res["seconds"] = time.time() - t
        results[row] = res
        print(f"    prefill {res['prefill_tps']:.1f} tok/s, decode {res['decode_tps']:.2f} tok/s, "
              f"peak RSS {res['peak_rss_mib']:.0f} MiB ({res['seconds']:.0f} s)", flush=True)

    table = format_table(results)
    print("\n" + table)
    if args.out and not args.quick:
        write_results(Path(args.out), table, cfg)


def format_table(results: Dict[str, Dict[str, Any]]) -> str:
    from tabulate import tabulate

    ref = results.get("ember (b) kv")
    rows = []
    for name, r in results.items():
        ratio = r["decode_tps"] / ref["decode_tps"] if ref else float("nan")
        pre_ratio = r["prefill_tps"] / ref["prefill_tps"] if ref else float("nan")
        n = min(len(r["tokens"]), len(ref["tokens"])) if ref else 0
        same = "-" if not ref else ("yes" if r["tokens"][:n] == ref["tokens"][:n] else
                                    f"first {_common_prefix(r['tokens'], ref['tokens'])}")
        rows.append([name, f"{r['prefill_tps']:.1f}", f"{r['decode_tps']:.2f}",
                     len(r["tokens"]), f"{r['peak_rss_mib']:.0f}", f"{pre_ratio:.2f}",
                     f"{ratio:.2f}", same])
    return tabulate(rows, headers=["row", "prefill tok/s", "decode tok/s", "new tokens",
                                   "peak RSS MiB", "prefill vs ember (b)", "decode vs ember (b)",
                                   "same tokens as ember (b)"], tablefmt="github")


def _common_prefix(a: List[int], b: List[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def write_results(path: Path, table: str, cfg: Dict[str, int]) -> None:
    import platform

    section = "## LLM: GPT-2 124M, 64-token prompt, 128 new tokens"
    body = (f"{section}\n\nCommand: `.venv/bin/python bench/llm/bench_llm.py`\n\n"
            f"Machine: {platform.machine()}, {os.cpu_count()} CPUs; model {cfg} with random "
            f"weights (seed {SEED}); greedy decoding. Ratios are to ember (b) (higher is "
            "faster). ember's portable kernels run on one thread; PyTorch and XNNPACK on two. "
            "Rows driven from Python stop decoding after --budget seconds (600 by default): "
            "their new tokens column says how many tokens the decode rate covers. Peak RSS of "
            "those rows includes the interpreter and torch (about 270 MiB).\n\n"
            f"{table}\n")
    old = path.read_text() if path.exists() else "# Benchmark results\n"
    if section in old:
        start = old.index(section)
        nxt = old.find("\n## ", start + len(section))
        old = old[:start] + body + (old[nxt + 1:] if nxt >= 0 else "")
        path.write_text(old)
    else:
        path.write_text(old.rstrip() + "\n\n" + body)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

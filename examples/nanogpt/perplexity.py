"""Perplexity of the nanoGPT example on its held-out text, as ember runs it:
float32, int8 (dynamic) and 8da4w, and float32 and 8da4w with the token
embedding quantized too (--embedding-quant, default 4,32), each exported
with a KV cache and delegated to XnnpackBackend, run through ember's runtime
token by token, beside PyTorch eager in float32 on the same windows.

The held-out text is data/val.bin (prepare.py: the last 5% of each novel,
tokenized with the committed tokenizer). It is cut into windows of the
model's block size; each window starts from an empty cache, and every token
after the first is scored from the tokens before it in its window.

usage: python examples/nanogpt/perplexity.py [--max-tokens N] [--group-size 32]
                                             [--embedding-quant 4,32]
                                             [--write docs/nanogpt_perplexity.md]
(first: scripts/bootstrap.sh --train && python examples/nanogpt/prepare.py --keep-tokenizer)
"""

from __future__ import annotations

import argparse
import copy
import math
import os
import sys
import time
from typing import Dict, List, Optional

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from model import GPT  # noqa: E402

VAL = os.path.join(HERE, "data", "val.bin")
CKPT = os.path.join(HERE, "ckpt.pt")


def windows(ids: np.ndarray, block: int) -> List[np.ndarray]:
    """Consecutive windows of block + 1 tokens sharing their edge token: each
    scores its last block tokens."""
    return [ids[s:s + block + 1] for s in range(0, len(ids) - 1, block) if len(ids[s:s + block + 1]) > 1]


@torch.no_grad()
def nll_eager(model: GPT, wins: List[np.ndarray]) -> float:
    total = 0.0
    for w in wins:
        x = torch.from_numpy(w[:-1].astype(np.int64))[None]
        y = torch.from_numpy(w[1:].astype(np.int64))[None]
        _, loss = model(x, y)
        total += float(loss) * y.numel()
    return total


def nll_ember(pte: bytes, wins: List[np.ndarray], threads: int) -> float:
    from ember import runtime as ember_runtime

    method = ember_runtime.Runtime.get().load_program(pte).load_method("forward",
                                                                      num_threads=threads)
    total = 0.0
    for w in wins:
        for pos in range(len(w) - 1):
            logits = method.execute([torch.tensor([[int(w[pos])]]), torch.tensor([pos])])[0]
            total -= float(F.log_softmax(logits[0, -1].double(), dim=-1)[int(w[pos + 1])])
    return total


def main(argv: Optional[List[str]] = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--max-tokens", type=int, default=0, help="score only the first N tokens (0: all)")
    ap.add_argument("--group-size", type=int, default=32, help="8da4w group size")
    ap.add_argument("--embedding-quant", default="4,32",
                    help="token-embedding rows: BITS,GROUP as export.py takes it ('none': no rows)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--write", help="also write the table as Markdown to this file")
    a = ap.parse_args(argv)
    if not os.path.exists(VAL):
        raise SystemExit(f"perplexity: {VAL} is missing; run scripts/bootstrap.sh --train, then "
                         "python examples/nanogpt/prepare.py --keep-tokenizer")
    from kv_cache import export_kv

    gpt = GPT.from_checkpoint(CKPT).eval()
    ids = np.fromfile(VAL, dtype=np.uint16)
    if a.max_tokens:
        ids = ids[:a.max_tokens + 1]
    wins = windows(ids, gpt.config.block_size)
    scored = sum(len(w) - 1 for w in wins)
    print(f"perplexity: {scored} held-out tokens in {len(wins)} windows of "
          f"{gpt.config.block_size}")

    rows: List[Dict[str, str]] = []
    t = time.time()
    ref = nll_eager(gpt, wins) / scored
    rows.append({"model": "PyTorch eager, float32", "file MB": "-",
                 "perplexity": f"{math.exp(ref):.3f}", "vs float32": "1.000"})
    print(f"  eager float32: {math.exp(ref):.3f} ({time.time() - t:.0f} s)")
    runs = [("none", "none"), ("int8", "none"), ("8da4w", "none")]
    if a.embedding_quant not in ("", "none"):
        runs += [("none", a.embedding_quant), ("8da4w", a.embedding_quant)]
    for scheme, emb in runs:
        t = time.time()
        prog = export_kv(copy.deepcopy(gpt), backend="xnnpack", quant=scheme,
                         group_size=a.group_size, embedding_quant=emb)
        nll = nll_ember(prog.buffer, wins, a.threads) / scored
        name = {"none": "float32", "int8": "int8 (dynamic, per channel)",
                "8da4w": f"8da4w (group {a.group_size})"}[scheme]
        if emb != "none":
            name += f", embedding {emb}"
        rows.append({"model": f"ember, {name}", "file MB": f"{len(prog.buffer) / 1e6:.1f}",
                     "perplexity": f"{math.exp(nll):.3f}",
                     "vs float32": f"{math.exp(nll - ref):.3f}"})
        print(f"  ember {name}: {math.exp(nll):.3f} ({time.time() - t:.0f} s)")

    head = list(rows[0])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r[h] for h in head) + " |" for r in rows]
    table = "\n".join(lines)
    print("\n" + table)
    if a.write:
        cmd = "python examples/nanogpt/perplexity.py" + \
            (f" --max-tokens {a.max_tokens}" if a.max_tokens else "") + \
            (f" --group-size {a.group_size}" if a.group_size != 32 else "") + \
            (f" --embedding-quant {a.embedding_quant}" if a.embedding_quant != "4,32" else "")
        with open(a.write, "w") as f:
            f.write(f"""# nanoGPT: perplexity of the quantized exports

The committed nanoGPT checkpoint (examples/nanogpt/ckpt.pt: 6 layers, n_embd
192, 4096-token BPE) on its held-out text: the last 5% of each of Jane
Austen's novels, {scored} tokens in windows of {gpt.config.block_size}. Each
ember row is the KV-cache export delegated to XnnpackBackend, run by ember's
runtime one token at a time; "vs float32" is the ratio of its perplexity to
eager float32's. int8: dynamic int8 activations (per token) and int8 weights
per output channel (ember's XNNPACKQuantizer, pt2e). 8da4w: dynamic int8
activations and 4-bit weights with one bf16 scale per group of input
channels (torchao's quantize_). "embedding {a.embedding_quant}": the token
embedding table stored quantized as well (bits,group; 4,32 is 4-bit
values with one float16 scale per group of 32, looked up by
quantized_decomposed::embedding_4bit; lm_head, tied to it in nanoGPT, keeps
its own weight). Layer norms and attention stay float32.

Command: `{cmd}`

{table}
""")
        print(f"wrote {a.write}")


if __name__ == "__main__":
    main()

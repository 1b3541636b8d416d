"""Generates text with eager PyTorch from a nanoGPT checkpoint (default: the
committed ckpt.pt) and the example's tokenizer.

usage: python examples/nanogpt/sample.py [--prompt TEXT] [--tokens N]
                                         [--temperature T] [--top-k K] [--seed S]
                                         [--checkpoint ckpt.pt]
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Optional

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from model import GPT  # noqa: E402
from prepare import load_tokenizer  # noqa: E402


def sample_text(model: GPT, prompt: str, max_new_tokens: int, temperature: float = 0.8,
                top_k: Optional[int] = 40, seed: int = 1337) -> str:
    tok = load_tokenizer()
    ids = tok.encode(prompt).ids
    if not ids:
        raise ValueError("the prompt encodes to no tokens")
    gen = torch.Generator().manual_seed(seed)
    out = model.generate(torch.tensor([ids]), max_new_tokens, temperature=temperature, top_k=top_k, generator=gen)
    return tok.decode(out[0].tolist(), skip_special_tokens=False)


def main(argv: Optional[list] = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkpoint", default=os.path.join(HERE, "ckpt.pt"))
    ap.add_argument("--prompt", default="It was")
    ap.add_argument("--tokens", type=int, default=200)
    ap.add_argument("--temperature", type=float, default=0.8, help="0 means greedy")
    ap.add_argument("--top-k", type=int, default=40)
    ap.add_argument("--seed", type=int, default=1337)
    a = ap.parse_args(argv)
    torch.set_num_threads(min(2, torch.get_num_threads()))
    model = GPT.from_checkpoint(a.checkpoint).eval()
    print(sample_text(model, a.prompt, a.tokens, a.temperature, a.top_k or None, a.seed))


if __name__ == "__main__":
    main()

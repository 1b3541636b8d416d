#!/usr/bin/env python3
"""Exports what the WebAssembly tests run, with eager PyTorch's answers.

Writes into --out-dir:
  mixed.pte, mixed.json   a small model with a float and an int64 input and two
                          outputs (embedding, conv1d, layer norm, GELU, linear,
                          softmax), its inputs and eager PyTorch's outputs
  nanogpt.pte             the committed nanoGPT (examples/nanogpt), KV-cache
                          export, through examples/nanogpt/export.py's exporter
  greedy.json             the prompt, and eager PyTorch's greedy continuation
                          (token ids and text) of --tokens new tokens
Files whose bytes do not change are left alone.

usage: export_test.py --out-dir build-wasm/test [--backend xnnpack] [--tokens 24]
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import torch
from torch import nn

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
NANOGPT = os.path.join(ROOT, "examples", "nanogpt")
PROMPT = "It is a truth universally acknowledged, that"


class Mixed(nn.Module):
    """Token ids and a feature frame in; class probabilities and features out."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(50, 16)
        self.conv = nn.Conv1d(16, 16, kernel_size=3, padding=1)
        self.norm = nn.LayerNorm(16)
        self.fc = nn.Linear(16 + 8, 10)

    def forward(self, ids: torch.Tensor, x: torch.Tensor):
        h = self.emb(ids).transpose(1, 2)                  # (1, 16, T)
        h = self.norm(self.conv(h).transpose(1, 2))        # (1, T, 16)
        h = torch.nn.functional.gelu(h).mean(dim=1)        # (1, 16)
        z = self.fc(torch.cat([h, x], dim=-1))             # (1, 10)
        return torch.softmax(z, dim=-1), h


def write_if_changed(path: str, data: bytes) -> None:
    try:
        with open(path, "rb") as f:
            if f.read() == data:
                return
    except FileNotFoundError:
        pass
    with open(path, "wb") as f:
        f.write(data)


def tensor_json(t: torch.Tensor) -> dict:
    names = {torch.float32: "float32", torch.int64: "int64"}
    return {"dtype": names[t.dtype], "shape": list(t.shape), "data": t.flatten().tolist()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--backend", choices=["portable", "xnnpack"], default="xnnpack")
    ap.add_argument("--tokens", type=int, default=24)
    a = ap.parse_args()
    os.makedirs(a.out_dir, exist_ok=True)

    from ember import EdgeCompileConfig, to_edge

    torch.manual_seed(0)
    model = Mixed().eval()
    ids = torch.randint(0, 50, (1, 12))
    x = torch.randn(1, 8)
    with torch.no_grad():
        outs = model(ids, x)
    ep = torch.export.export(model, (ids, x))
    prog = to_edge(ep, compile_config=EdgeCompileConfig(_check_ir_validity=False)).to_executorch()
    write_if_changed(os.path.join(a.out_dir, "mixed.pte"), bytes(prog.buffer))
    write_if_changed(os.path.join(a.out_dir, "mixed.json"), json.dumps({
        "inputs": [tensor_json(ids), tensor_json(x)],
        "expected": [tensor_json(o) for o in outs]}).encode())

    sys.path.insert(0, NANOGPT)
    from export import EXPORTERS, load_model  # examples/nanogpt/export.py
    from prepare import load_tokenizer

    gpt = load_model().eval()
    prog = EXPORTERS["kv"](gpt, backend=a.backend)
    write_if_changed(os.path.join(a.out_dir, "nanogpt.pte"), bytes(prog.buffer))

    tok = load_tokenizer()
    prompt_ids = tok.encode(PROMPT).ids
    with torch.no_grad():
        out = gpt.generate(torch.tensor([prompt_ids]), a.tokens, temperature=0)
    new_ids = out[0, len(prompt_ids):].tolist()
    write_if_changed(os.path.join(a.out_dir, "greedy.json"), json.dumps({
        "prompt": PROMPT, "max_new_tokens": a.tokens, "ids": new_ids,
        "text": tok.decode(new_ids, skip_special_tokens=False)}).encode())
    print(f"export_test: mixed.pte, nanogpt.pte ({a.backend}), greedy: {PROMPT!r} ->"
          f" {tok.decode(new_ids, skip_special_tokens=False)!r}")


if __name__ == "__main__":
    main()

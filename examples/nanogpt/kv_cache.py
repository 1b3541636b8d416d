"""The GPT forward with a KV cache, and its export (kind "kv").

:class:`KVCacheGPT` wraps a :class:`model.GPT` (sharing its modules and
weights) and keeps, per layer, the keys and values of every position seen so
far in two buffers of shape ``(1, n_head, max_len, head_size)``.
``forward(idx, start_pos)`` takes the T new tokens ``idx`` (1, T) that sit at
positions ``start_pos .. start_pos + T - 1``: a prompt at once (prefill, T > 1)
or one token at a time (decode, T = 1). Each layer's attention is one call of
the fused ``ember::sdpa_with_kv_cache`` operator, which appends the new keys
and values to that layer's caches and attends over everything cached so far.
It returns the logits of the last new position, ``(1, 1, vocab_size)``.
It is for inference only: dropout, the identity then, is left out.

:func:`export_kv` exports it with a dynamic T (1 .. block_size) as method
``forward`` with inputs ``(tokens int64 [1, T], start_pos int64 [1])``. The
caches become planned mutable buffers that the operator updates in place (no
copy of a cache per step); they need no initial contents, since attention only
ever reads positions written before, so the program does not store them.
"""

from __future__ import annotations

import os
import sys
from typing import Any, List, Optional

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from model import GPT  # noqa: E402

import ember.llm.custom_ops  # noqa: E402,F401  (registers ember::sdpa_with_kv_cache)


class KVCache(nn.Module):
    """Keys and values of one layer, ``(1, n_head, max_len, head_size)`` each."""

    def __init__(self, n_head: int, max_len: int, head_size: int,
                 dtype: torch.dtype = torch.float32) -> None:
        super().__init__()
        self.register_buffer("k", torch.zeros(1, n_head, max_len, head_size, dtype=dtype))
        self.register_buffer("v", torch.zeros(1, n_head, max_len, head_size, dtype=dtype))


class KVCacheGPT(nn.Module):
    """A GPT that attends over a cache of past keys and values (see the module doc)."""

    def __init__(self, gpt: GPT, max_len: Optional[int] = None) -> None:
        super().__init__()
        cfg = gpt.config
        self.gpt = gpt
        self.n_head = cfg.n_head
        self.head_size = cfg.n_embd // cfg.n_head
        self.max_len = cfg.block_size if max_len is None else int(max_len)
        if not 1 <= self.max_len <= cfg.block_size:
            raise ValueError(f"max_len must be in 1..block_size ({cfg.block_size}), "
                             f"got {self.max_len}")
        dtype = gpt.lm_head.weight.dtype
        self.caches = nn.ModuleList(
            [KVCache(cfg.n_head, self.max_len, self.head_size, dtype) for _ in range(cfg.n_layer)])

    def reset(self) -> None:
        """Forgets every cached position (not needed for correctness: a new
        sequence starting at position 0 overwrites what it reads)."""
        for c in self.caches:
            c.k.zero_()
            c.v.zero_()

    def _attention(self, attn: nn.Module, x: torch.Tensor, cache: KVCache,
                   start_pos: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = attn.c_attn(x).split(c, dim=2)
        # (B, T, H, D): the operator's layout, so no transposes are needed
        q = q.view(b, t, self.n_head, self.head_size)
        k = k.view(b, t, self.n_head, self.head_size)
        v = v.view(b, t, self.n_head, self.head_size)
        y = torch.ops.ember.sdpa_with_kv_cache(q, k, v, cache.k, cache.v, start_pos)
        return attn.c_proj(y.view(b, t, c))

    def forward(self, idx: torch.Tensor, start_pos: torch.Tensor) -> torch.Tensor:
        """Logits (1, 1, vocab_size) of the last of the tokens idx (1, T), which
        sit at positions start_pos (int64 [1]) onwards."""
        tr = self.gpt.transformer
        t = idx.size(1)
        pos = start_pos + torch.arange(t, dtype=torch.long, device=idx.device)  # (T,)
        x = tr.wte(idx) + tr.wpe(pos)
        for block, cache in zip(tr.h, self.caches):
            x = x + self._attention(block.attn, block.ln_1(x), cache, start_pos)
            mlp = block.mlp
            x = x + mlp.c_proj(mlp.gelu(mlp.c_fc(block.ln_2(x))))
        x = tr.ln_f(x)
        return self.gpt.lm_head(x[:, -1:, :])


@torch.no_grad()
def generate_kv(model: KVCacheGPT, prompt: List[int], max_new_tokens: int) -> List[int]:
    """Greedy tokens after prompt, in eager PyTorch, with the cache: prefill the
    prompt (its last max_len tokens), then decode one token per step. Once the
    cache is full, each step prefills the last max_len tokens again, so every
    token is predicted from the same context as GPT.generate would use."""
    tokens = list(prompt)
    out: List[int] = []
    pos = 0  # positions cached
    pending = tokens[-model.max_len:]
    for _ in range(max_new_tokens):
        if pos + len(pending) > model.max_len:  # full: slide the window
            pending = tokens[-model.max_len:]
            pos = 0
        logits = model(torch.tensor([pending]), torch.tensor([pos]))
        pos += len(pending)
        nxt = int(logits[0, -1].argmax())
        out.append(nxt)
        tokens.append(nxt)
        pending = [nxt]
    return out


def export_kv(model: GPT, max_len: Optional[int] = None, config: Any = None,
              backend: str = "portable", quant: str = "none", group_size: int = 32,
              embedding_quant: str = "none") -> Any:
    """Exports ``model`` with a KV cache as an ember program (an
    ExecutorchProgramManager: ``.buffer`` holds the .pte bytes).

    Method ``forward``: input 0 tokens int64 [1, T], T dynamic in 1..max_len;
    input 1 start position int64 [1]; output 0 logits float32 [1, 1, vocab].
    ``config`` is an ``ember.ExecutorchBackendConfig``; the default stores no
    initial cache contents and folds the weight transposes into constants.
    ``backend`` "xnnpack" delegates what the XNNPACK payload can state (the
    matrix products, layer norms' neighbours, GELU, ...) to XnnpackBackend;
    attention with its cache stays the fused ember::sdpa_with_kv_cache kernel.
    ``backend`` "vulkan" / "vulkan-fp16" delegate the whole model to
    VulkanBackend, which keeps the caches on the GPU (the program then holds
    no cache buffers).
    ``quant`` (quantize.py: none, int8, 8da4w with ``group_size``) quantizes
    the linear layers first; quantized programs need the xnnpack backend (8da4w
    changes ``model``'s linear layers in place). ``embedding_quant`` (quantize.py:
    quantize_token_embedding: "none", "8", "4", "bits,group") stores the token
    embedding quantized, on any backend (changes ``model`` in place).
    """
    from ember import ExecutorchBackendConfig, to_edge, to_edge_transform_and_lower
    from quantize import quantize_for_export, quantize_token_embedding

    kv = KVCacheGPT(quantize_token_embedding(model, embedding_quant), max_len).eval()
    seq = torch.export.Dim("T", min=1, max=kv.max_len)
    example = (torch.zeros(1, 2, dtype=torch.long), torch.tensor([0], dtype=torch.long))
    dynamic_shapes = ({1: seq}, None)
    quantized = quantize_for_export(kv, example, dynamic_shapes, quant, group_size, backend)
    with torch.no_grad():
        ep = torch.export.export(quantized, example, dynamic_shapes=dynamic_shapes, strict=False)
    if config is None:
        config = ExecutorchBackendConfig(init_mutable_buffers=False, fold_constants=True)
    from export import partitioners

    parts = partitioners(backend)
    if parts:
        return to_edge_transform_and_lower(ep, partitioner=parts).to_executorch(config)
    return to_edge(ep).to_executorch(config)

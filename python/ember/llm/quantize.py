"""Quantized embedding tables for language models: a source transform.

    from ember.llm.quantize import quantize_embeddings
    quantize_embeddings(model, bits=4, group_size=32)   # in place, every nn.Embedding
    # or ExecuTorch's spelling (its --embedding-quantize option):
    get_quant_embedding_transform("4,32")(model)

Each `nn.Embedding` (V, D) becomes a `QuantizedEmbedding` whose forward calls
the same operator ExecuTorch's LLM export calls (its QuantizedGroupEmbedding):

    8 bits: quantized_decomposed.embedding_byte.dtype(weight int8 (V, D), ...)
    4 bits: quantized_decomposed.embedding_4bit.dtype(weight uint8 (V, D / 2), ...)
    2 bits: quantized_decomposed.embedding_2bit.dtype(weight uint8 (V, D / 4), ...)

with scales (V) per row (group_size 0) or (V, D / group_size) per group,
no zero points, and the original weight's dtype out. Quantization is
symmetric: each row or group gets scale = max|w| / ((qmax - qmin) / 2)
(torchao's symmetric rule), rounded to the scales' dtype first (float16 by
default, as ExecuTorch stores them), then q = clamp(round(w / scale), qmin,
qmax). Both runtimes (ember's, ExecuTorch's) run the resulting programs.

Table size for V x D float32 (4 bytes a value): 8 bits per row: 1 byte a value
+ 2 bytes a row; 4 bits in groups of G: 0.5 byte a value + 2 bytes a group
(4,32: 0.5625 byte a value, 7.1x smaller).

A model whose output projection shares the embedding's weight (tied
embeddings, as nanoGPT and GPT-2) keeps its float weight for the projection:
only the lookup table is quantized, so the program stores both unless the
projection is quantized too.
"""

from __future__ import annotations

from typing import Callable, Optional, Tuple

import torch
import torch.nn as nn

from .. import quantized_embedding_ops as qe

_QRANGE = {8: (-128, 127), 4: (-8, 7), 2: (-2, 1)}


def quantize_rows(weight: torch.Tensor, bits: int, group_size: int = 0,
                  scales_dtype: torch.dtype = torch.float16
                  ) -> Tuple[torch.Tensor, torch.Tensor]:
    """Symmetric quantization of a table (V, D) per row (group_size 0) or per
    group of group_size values: (q int8 (V, D), scales (V) or (V, D / group_size))."""
    if bits not in _QRANGE:
        raise ValueError(f"embedding quantization: bits must be 8, 4 or 2, got {bits}")
    if weight.dim() != 2:
        raise ValueError(f"embedding quantization: the table must be 2-d, got {tuple(weight.shape)}")
    v, d = weight.shape
    gs = d if group_size in (0, None) or group_size >= d else int(group_size)
    if gs <= 0 or d % gs:
        raise ValueError(f"embedding quantization: group size {group_size} does not divide rows "
                         f"of {d} values; use a divisor of {d}, or 0 for one scale per row")
    qmin, qmax = _QRANGE[bits]
    w = weight.detach().to(torch.float32).reshape(v, d // gs, gs)
    amax = w.abs().amax(dim=-1, keepdim=True)
    scales = (amax / ((qmax - qmin) / 2)).to(scales_dtype)
    # an all-zero group (or one whose scale underflows) quantizes to zeros
    scales = torch.where(scales > 0, scales, torch.ones_like(scales))
    q = torch.clamp(torch.round(w / scales.to(torch.float32)), qmin, qmax).to(torch.int8)
    scales = scales.reshape(v, d // gs)
    return q.reshape(v, d), (scales.reshape(v) if gs == d else scales)


_BLOCK_BYTES = 16 << 20


class QuantizedEmbedding(nn.Module):
    """An embedding table stored quantized (see the module doc); inference only."""

    def __init__(self, num_embeddings: int, embedding_dim: int, bits: int = 8,
                 group_size: int = 0, dtype: torch.dtype = torch.float32,
                 scales_dtype: torch.dtype = torch.float16) -> None:
        super().__init__()
        if bits not in _QRANGE:
            raise ValueError(f"QuantizedEmbedding: bits must be 8, 4 or 2, got {bits}")
        per_byte = 8 // bits
        if embedding_dim % per_byte:
            raise ValueError(f"QuantizedEmbedding: {bits}-bit rows need a multiple of "
                             f"{per_byte} values, got {embedding_dim}")
        qe.register()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.bits, self.dtype = bits, dtype
        self.group_size = 0 if group_size in (0, None) or group_size >= embedding_dim \
            else int(group_size)
        groups = embedding_dim // self.group_size if self.group_size else 1
        wdtype = torch.int8 if bits == 8 else torch.uint8
        self.register_buffer("weight", torch.zeros(num_embeddings, embedding_dim // per_byte,
                                                   dtype=wdtype))
        shape = (num_embeddings, groups) if groups > 1 else (num_embeddings,)
        self.register_buffer("scales", torch.ones(shape, dtype=scales_dtype))

    @classmethod
    def from_float(cls, emb: nn.Embedding, bits: int, group_size: int = 0,
                   scales_dtype: torch.dtype = torch.float16) -> "QuantizedEmbedding":
        v, d = emb.weight.shape
        m = cls(v, d, bits, group_size, emb.weight.dtype, scales_dtype)
        # rows are quantized on their own: a block at a time, so that a
        # large table's temporaries stay small
        step = max(1, _BLOCK_BYTES // max(1, d * 4))
        with torch.no_grad():
            for a in range(0, v, step):
                b = min(v, a + step)
                q, scales = quantize_rows(emb.weight[a:b], bits, m.group_size, scales_dtype)
                m.weight[a:b].copy_(qe.pack(q, bits))
                m.scales[a:b].copy_(scales.reshape((b - a,) + tuple(m.scales.shape[1:])))
        return m

    def dequantized(self) -> torch.Tensor:
        """The float table this module looks rows up in, (V, D)."""
        return qe.dequantize_table(self.weight, self.scales, None, self.bits, self.dtype)

    def forward(self, indices: torch.Tensor) -> torch.Tensor:
        qmin, qmax = _QRANGE[self.bits]
        op = qe.op_for_bits(self.bits, with_dtype=True)
        return op(self.weight, self.scales, None, qmin, qmax, indices, dtype=self.dtype)

    def extra_repr(self) -> str:
        g = f"group_size={self.group_size}" if self.group_size else "per row"
        return f"{self.num_embeddings}, {self.embedding_dim}, bits={self.bits}, {g}"


def quantize_embeddings(model: nn.Module, bits: int = 8, group_size: int = 0,
                        scales_dtype: torch.dtype = torch.float16,
                        filter_fn: Optional[Callable[[nn.Module, str], bool]] = None) -> nn.Module:
    """Replaces every nn.Embedding of model (or those filter_fn(module, fqn)
    accepts) with a QuantizedEmbedding, in place; returns model. A bare
    nn.Embedding comes back as its replacement."""
    if isinstance(model, nn.Embedding):
        return QuantizedEmbedding.from_float(model, bits, group_size, scales_dtype)
    with torch.no_grad():
        for fqn, mod in list(model.named_modules()):
            for name, child in list(mod.named_children()):
                full = f"{fqn}.{name}" if fqn else name
                if isinstance(child, nn.Embedding) and (filter_fn is None or filter_fn(child, full)):
                    setattr(mod, name, QuantizedEmbedding.from_float(child, bits, group_size,
                                                                     scales_dtype))
    return model


def parse_embedding_quantize(spec: Optional[str]) -> Optional[Tuple[int, int]]:
    """ExecuTorch's `--embedding-quantize` form, "bits,group_size" ("4,32",
    "8,0"; group "0" or "none": one scale per row), or bits alone ("8": per
    row; "4", "2": groups of 32); "none" or empty -> None."""
    if spec is None or spec.strip().lower() in ("", "none", "no", "off"):
        return None
    parts = [p.strip() for p in spec.split(",")]
    try:
        bits = int(parts[0])
        if len(parts) == 1:
            group = 0 if bits == 8 else 32
        elif len(parts) == 2:
            group = 0 if parts[1].lower() in ("none", "0", "") else int(parts[1])
        else:
            raise ValueError
    except ValueError:
        raise ValueError(f"embedding quantization {spec!r}: expected BITS[,GROUP] such as "
                         "8, 8,0, 4,32 or 4,64") from None
    if bits not in _QRANGE or group < 0:
        raise ValueError(f"embedding quantization {spec!r}: bits must be 8, 4 or 2 and the "
                         "group size 0 (per row) or positive")
    return bits, group


def get_quant_embedding_transform(embedding_quantize: str,
                                  scales_dtype: torch.dtype = torch.float16
                                  ) -> Callable[[nn.Module], nn.Module]:
    """A model -> model transform for ExecuTorch's `--embedding-quantize` value."""
    parsed = parse_embedding_quantize(embedding_quantize)
    if parsed is None:
        return lambda model: model
    bits, group = parsed
    return lambda model: quantize_embeddings(model, bits, group, scales_dtype)


__all__ = ["QuantizedEmbedding", "quantize_embeddings", "quantize_rows",
           "parse_embedding_quantize", "get_quant_embedding_transform"]

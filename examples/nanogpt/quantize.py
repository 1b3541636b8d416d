"""Quantization schemes for the nanoGPT exports (export.py --quant).

  none   float32 weights and activations.
  int8   dynamic int8: each linear layer's activations are quantized per row
         (token) at run time, its weights per output channel to int8
         (symmetric, [-127, 127]). pt2e flow with ember's XNNPACKQuantizer:
         export -> prepare_pt2e -> calibrate -> convert_pt2e, the way
         ExecuTorch's LLM manual quantizes nanoGPT.
  8da4w  int8 dynamic activations, 4-bit weights in groups of --group-size
         input channels, each group with its own scale: torchao's quantize_
         source transform, as ExecuTorch's LLM export does it.

Both run in XnnpackBackend: its partitioner lowers the quantized linear
layers to qdint8 x qcint8 / qbint4 fully connected nodes. The layer norms
and attention stay float32.

  int8wo int8 weight-only, for VulkanBackend: each linear layer's weight per
         output channel to int8 (symmetric), float activations;
         ember.backends.vulkan.quantize.int8_weight_only, which the payload
         runs as aten._weight_int8pack_mm (the weight stays int8 on the GPU).

The token embedding is quantized separately (export.py --embedding-quant,
``quantize_token_embedding``): 8 bits per value with one scale per row, or
4 bits in groups of --group-size-like "bits,group" values (ExecuTorch's
--embedding-quantize form: "8,0", "4,32"), looked up by
quantized_decomposed::embedding_byte / embedding_4bit (any backend: the
kernels are portable). nanoGPT ties the embedding to lm_head; quantizing
the table leaves lm_head its own float weight (or the one --quant gives it),
and the program stores the quantized table where it stored the float one.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import torch

SCHEMES = ("none", "int8", "8da4w", "int8wo")
#: --embedding-quant choices listed in the help (any "bits,group" is accepted too)
EMBEDDING_SCHEMES = ("none", "8", "4")


def quantize_token_embedding(model: torch.nn.Module, spec: Optional[str]) -> torch.nn.Module:
    """Replaces the token embedding (``transformer.wte``) of a nanoGPT model
    with a quantized table (ember.llm.quantize.QuantizedEmbedding), in place:
    spec "none", "8" (int8, one scale per row), "4" (4-bit, groups of 32) or
    ExecuTorch's "bits,group" ("8,0", "4,64"). The position embedding stays
    float32; lm_head keeps its own weight (the tie is broken). Returns model."""
    from ember.llm.quantize import QuantizedEmbedding, parse_embedding_quantize

    parsed = parse_embedding_quantize(spec)
    if parsed is None:
        return model
    bits, group = parsed
    tr = model.transformer
    with torch.no_grad():
        tr.wte = QuantizedEmbedding.from_float(tr.wte, bits, group)
    return model


def quantize_for_export(model: torch.nn.Module, example: Sequence[Any], dynamic_shapes: Any,
                        scheme: str, group_size: int = 32, backend: str = "xnnpack",
                        calibration: Optional[Sequence[Sequence[Any]]] = None) -> torch.nn.Module:
    """``model`` quantized with ``scheme``, ready for torch.export with the same
    example inputs and dynamic shapes: the module itself for "none", torchao's
    quantized module for "8da4w" (changed in place), and the converted pt2e
    graph module for "int8". Dynamic quantization needs no calibration data;
    ``calibration`` (default: the example) only exercises the prepared graph.
    A quantized scheme needs ``backend`` "xnnpack", where its layers run
    (int8wo: "vulkan" or "vulkan-fp16")."""
    if scheme == "none":
        return model
    if scheme == "int8wo":
        if not backend.startswith("vulkan"):
            raise ValueError(f"quantization int8wo needs the vulkan backend, not {backend!r}")
        from ember.backends.vulkan.quantize import int8_weight_only

        return int8_weight_only(model)
    if backend != "xnnpack":
        raise ValueError(f"quantization {scheme} needs the xnnpack backend, not {backend!r}: "
                         "the quantized linear layers run in XnnpackBackend")
    if scheme in ("8da4w", "int8"):
        from ember.llm.export import quantize_linears

        return quantize_linears(model, example, dynamic_shapes, scheme, group_size, calibration)
    raise ValueError(f"unknown quantization scheme {scheme!r}; one of {', '.join(SCHEMES)}")

"""Exports the nanoGPT example to an ember / ExecuTorch program (.pte).

Two kinds, both with method ``forward`` and output 0 the logits of the last
position, float32 [1, 1, vocab]:

  seq  input 0: tokens int64 [1, T], T dynamic in 1..block_size. The whole
       window is re-run for every new token. Exported as ExecuTorch's LLM
       manual exports nanoGPT: a dynamic token dimension up to block_size,
       the math SDPA backend, no_grad.
  kv   input 0: tokens int64 [1, T] (prompt, or one new token), input 1: start
       position int64 [1]. Keys and values live in planned mutable buffers;
       see kv_cache.py.

The weights come from the committed checkpoint (default), another nanoGPT
checkpoint, GPT-2 weights in a local directory (--gpt2, with EMBER_GPT2_DIR),
or are random with a GPT-2 architecture (--random-gpt2, for benchmarks).

usage: python examples/nanogpt/export.py --kind seq|kv [--backend portable|xnnpack|vulkan [--fp16]]
                                         [--quant none|int8|8da4w|int8wo [--group-size 32]]
                                         [--embedding-quant none|8|4|BITS,GROUP]
                                         [--checkpoint ckpt.pt]
                                         [--gpt2 NAME | --random-gpt2 NAME] [--out model.pte]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any, Callable, Dict, Optional

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from model import GPT, GPT2_SIZES, GPTConfig  # noqa: E402
from quantize import EMBEDDING_SCHEMES, SCHEMES  # noqa: E402

CKPT_PATH = os.path.join(HERE, "ckpt.pt")


BACKENDS = ("portable", "xnnpack", "vulkan", "vulkan-fp16")


def partitioners(backend: str) -> list:
    """The partitioners of a backend name: "xnnpack" (XnnpackBackend), "vulkan"
    (VulkanBackend, float32 on the GPU) or "vulkan-fp16" (VulkanBackend with
    float32 tensors stored as float16); "portable" has none."""
    if backend == "xnnpack":
        from ember.backends.xnnpack import XnnpackPartitioner

        return [XnnpackPartitioner()]
    if backend in ("vulkan", "vulkan-fp16"):
        from ember.backends.vulkan import VulkanPartitioner

        return [VulkanPartitioner({"force_fp16": backend == "vulkan-fp16"})]
    if backend == "portable":
        return []
    raise ValueError(f"unknown backend {backend!r} ({', '.join(BACKENDS)})")


def export_seq(model: GPT, config: Any = None, backend: str = "portable", quant: str = "none",
               group_size: int = 32, embedding_quant: str = "none") -> Any:
    """Export (a): ``forward(tokens [1, T]) -> (logits [1, 1, vocab], None)``,
    T dynamic in 1..block_size. Returns an ExecutorchProgramManager
    (``.buffer`` holds the .pte bytes). ``config`` is an
    ``ember.ExecutorchBackendConfig``; the default folds the weight transposes
    into constants. ``backend`` "xnnpack" delegates to XnnpackBackend what its
    payload can state; "vulkan" / "vulkan-fp16" delegate to VulkanBackend (see
    partitioners()). ``quant`` (quantize.py: none, int8, 8da4w with
    ``group_size``) quantizes the linear layers first; quantized programs need
    the xnnpack backend. ``embedding_quant`` (quantize.py:
    quantize_token_embedding) stores the token embedding quantized, on any
    backend (changes ``model`` in place)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from ember import (EdgeCompileConfig, ExecutorchBackendConfig, to_edge,
                       to_edge_transform_and_lower)
    from quantize import quantize_for_export, quantize_token_embedding

    model = quantize_token_embedding(model.eval(), embedding_quant)
    block = model.config.block_size
    example = (torch.randint(0, model.config.vocab_size, (1, block), dtype=torch.long),)
    dynamic_shape = ({1: torch.export.Dim("token_dim", max=block)},)
    with sdpa_kernel([SDPBackend.MATH]), torch.no_grad():
        quantized = quantize_for_export(model, example, dynamic_shape, quant, group_size, backend)
        ep = torch.export.export(quantized, example, dynamic_shapes=dynamic_shape)
    if backend == "portable":
        edge = to_edge(ep, compile_config=EdgeCompileConfig(_check_ir_validity=False))
    else:
        edge = to_edge_transform_and_lower(ep, partitioner=partitioners(backend),
                                           compile_config=EdgeCompileConfig(_check_ir_validity=False))
    if config is None:
        config = ExecutorchBackendConfig(fold_constants=True)
    return edge.to_executorch(config)


def export_kv(model: GPT, config: Any = None, backend: str = "portable", quant: str = "none",
              group_size: int = 32, embedding_quant: str = "none") -> Any:
    """Export (b), with a KV cache: implemented in kv_cache.py."""
    from kv_cache import export_kv as _export_kv

    return _export_kv(model, config=config, backend=backend, quant=quant, group_size=group_size,
                      embedding_quant=embedding_quant)


EXPORTERS: Dict[str, Callable[..., Any]] = {"seq": export_seq, "kv": export_kv}


def load_model(checkpoint: Optional[str] = None, gpt2: Optional[str] = None,
               random_gpt2: Optional[str] = None, seed: int = 0) -> GPT:
    """The model to export: GPT-2 weights from a local directory, a random
    GPT-2-sized model, or a nanoGPT checkpoint (default: the committed one)."""
    if gpt2:
        return GPT.from_pretrained(gpt2)
    if random_gpt2:
        if random_gpt2 not in GPT2_SIZES:
            raise SystemExit(f"export: unknown GPT-2 size {random_gpt2!r}; one of {sorted(GPT2_SIZES)}")
        torch.manual_seed(seed)
        return GPT(GPTConfig(vocab_size=50257, block_size=1024, **GPT2_SIZES[random_gpt2]))
    return GPT.from_checkpoint(checkpoint or CKPT_PATH)


def main(argv: Optional[list] = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kind", choices=sorted(EXPORTERS), default="seq")
    src = ap.add_mutually_exclusive_group()
    src.add_argument("--checkpoint", help="nanoGPT checkpoint (default: the committed ckpt.pt)")
    src.add_argument("--gpt2", metavar="NAME", help=f"GPT-2 weights from $EMBER_GPT2_DIR ({', '.join(GPT2_SIZES)})")
    src.add_argument("--random-gpt2", metavar="NAME", help="random weights, GPT-2 architecture")
    ap.add_argument("--block-size", type=int, help="crop the context to this many tokens")
    ap.add_argument("--backend", choices=["portable", "xnnpack", "vulkan"], default="portable",
                    help="xnnpack: delegate to XnnpackBackend (ember's fast CPU path); "
                         "vulkan: delegate to VulkanBackend (the GPU)")
    ap.add_argument("--fp16", action="store_true",
                    help="vulkan: store float32 tensors as float16 on the GPU")
    ap.add_argument("--quant", choices=SCHEMES, default="none",
                    help="int8: dynamic int8 activations, int8 weights per channel; 8da4w: "
                         "dynamic int8 activations, 4-bit weights per group (both need --backend "
                         "xnnpack); int8wo: int8 weights per channel, float activations (needs "
                         "--backend vulkan; see quantize.py)")
    ap.add_argument("--group-size", type=int, default=32, help="8da4w: input channels per group")
    ap.add_argument("--embedding-quant", default="none", metavar="{" + ",".join(EMBEDDING_SCHEMES)
                    + ",BITS,GROUP}",
                    help="store the token embedding quantized (any backend): 8 = int8 with one "
                         "scale per row (the table 4x smaller), 4 = 4-bit in groups of 32 (7x "
                         "smaller), or ExecuTorch's --embedding-quantize form BITS,GROUP (8,0 "
                         "4,64 ...; 2-bit too). nanoGPT ties the embedding to lm_head: lm_head "
                         "keeps its own weight (float32, or --quant's) and only the lookup table "
                         "is stored quantized, in place of the float table (4 bytes a value -> "
                         "about 1 at 8 bits, 0.56 at 4,32). Committed checkpoint: "
                         "seq 17.1 -> 14.4 MB with 4; kv --quant 8da4w 5.3 -> 2.6 MB with 4,32")
    ap.add_argument("--out", default="model.pte")
    a = ap.parse_args(argv)
    if a.quant == "int8wo" and a.backend != "vulkan":
        ap.error("--quant int8wo needs --backend vulkan (its int8 weights stay int8 on the GPU)")
    if a.quant not in ("none", "int8wo") and a.backend != "xnnpack":
        ap.error(f"--quant {a.quant} needs --backend xnnpack (the quantized layers run there)")
    if a.fp16 and a.backend != "vulkan":
        ap.error("--fp16 needs --backend vulkan")
    backend = "vulkan-fp16" if a.fp16 else a.backend

    model = load_model(a.checkpoint, a.gpt2, a.random_gpt2).eval()
    if a.block_size:
        model.crop_block_size(a.block_size)
    cfg = model.config
    quant = "" if a.quant == "none" else f", {a.quant}"
    if a.embedding_quant not in ("none", ""):
        try:
            from ember.llm.quantize import parse_embedding_quantize

            parse_embedding_quantize(a.embedding_quant)
        except ValueError as e:
            ap.error(str(e))
        quant += f", embedding {a.embedding_quant}"
    print(f"export: {a.kind} ({backend}{quant}), {model.get_num_params(False) / 1e6:.1f} M parameters, "
          f"{cfg.n_layer} layers, n_embd {cfg.n_embd}, block_size {cfg.block_size}, vocab {cfg.vocab_size}")
    t0 = time.time()
    prog = EXPORTERS[a.kind](model, backend=backend, quant=a.quant, group_size=a.group_size,
                             embedding_quant=a.embedding_quant)
    with open(a.out, "wb") as f:
        prog.write_to_file(f)
    print(f"export: wrote {a.out} ({os.path.getsize(a.out) / 1e6:.1f} MB) in {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()

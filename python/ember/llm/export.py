"""Export a Hugging Face model directory to a .pte program.

    python -m ember.llm.export --model DIR --recipe xnnpack --quant 8da4w \\
        --embedding-quant 4,32 --max-seq-len 2048 --out model.pte

    from ember.llm.export import export_hf
    info = export_hf("DIR", "model.pte", recipe="xnnpack", quant="8da4w")

The model (ember.llm.hf: Llama 3.x, SmolLM2, Qwen 2.5, Qwen 3, Phi-4-mini,
Gemma 3 text) is
read from config.json and its safetensors weights (without weights, or with
--seed, random weights from the seed). The program has one method, ``forward(tokens
int64 [1, T], input_pos int64 [1])`` with T dynamic in 1..max_seq_len, for
prefill and decode alike, returning the last position's logits (1, vocab),
and ExecuTorch's metadata methods: get_max_seq_len, get_max_context_len,
get_bos_id, get_eos_ids, get_vocab_size, get_n_layers, use_kv_cache,
use_sdpa_with_kv_cache, enable_dynamic_shape. It runs in ember's runtime,
ember-llm, and ExecuTorch's runtime.

Recipes: ``portable`` (every op a portable kernel), ``xnnpack`` (the
matrix products and what surrounds them in XnnpackBackend) and ``vulkan``
(float32; the layers between one attention and the next in VulkanBackend,
on the GPU). In each, the KV cache and attention (llama::update_cache,
llama::custom_sdpa) run on the CPU. Quantization (xnnpack):
``int8`` (dynamic int8 activations per token, int8 weights per channel; the
pt2e flow with ember's XNNPACKQuantizer), ``8da4w`` (dynamic int8
activations, 4-bit weights in groups of --group-size; torchao's quantize_
as ExecuTorch's LLM export uses it), ``none``. --embedding-quant ("8",
"4", "bits,group") stores the token embedding quantized (any recipe).

--kv-cache int8 keeps the KV cache in int8, as ExecuTorch's
--quantize_kv_cache does (per-token scales and zero points,
llama::custom_quantized_sdpa): a quarter of the float32 cache's memory.

--external-weights keeps the weights out of the program, in "<stem>.ptd"
beside it (the .pte's name without ".pte"); run it with ``ember-llm --model
stem.pte --data stem.ptd``, or ExecuTorch's runner with the same data path.
The program then holds only the graph, and a new program can be exported
for the same weights without rewriting them.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
import warnings
from typing import Any, Callable, Dict, Optional, Sequence, Union

import torch

from .hf import Decoder, load_model

RECIPES = ("portable", "xnnpack", "vulkan")
QUANTS = ("none", "int8", "8da4w")
KV_CACHES = ("float", "int8")


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def quantize_linears(model: torch.nn.Module, example: Sequence[Any], dynamic_shapes: Any,
                     scheme: str, group_size: int = 32,
                     calibration: Optional[Sequence[Sequence[Any]]] = None) -> torch.nn.Module:
    """The model with its linear layers quantized for XnnpackBackend: "none"
    (as it is), "8da4w" (torchao's Int8DynamicActivationIntxWeightConfig,
    int4 weights in groups of group_size; in place) or "int8" (pt2e with
    ember's XNNPACKQuantizer, dynamic per-token activations and per-channel
    weights: returns the converted graph module; dynamic quantization needs
    no calibration, and ``calibration`` (default: the example) only
    exercises the prepared graph)."""
    if scheme == "none":
        return model
    if scheme == "8da4w":
        from torchao.quantization.granularity import PerGroup
        from torchao.quantization.quant_api import (Int8DynamicActivationIntxWeightConfig,
                                                    quantize_)

        if group_size <= 0:
            raise ValueError(f"group size must be positive, not {group_size}")
        for name, m in model.named_modules():
            if isinstance(m, torch.nn.Linear) and m.in_features % group_size:
                raise ValueError(f"8da4w: {name} has {m.in_features} input features, not a "
                                 f"multiple of the group size {group_size}; pick a group size "
                                 "that divides every linear layer's input width")
        quantize_(model, Int8DynamicActivationIntxWeightConfig(
            weight_dtype=torch.int4, weight_granularity=PerGroup(group_size)))
        return model
    if scheme == "int8":
        from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

        from ..backends.transforms.duplicate_dynamic_quant_chain import \
            DuplicateDynamicQuantChainPass
        from ..backends.xnnpack.quantizer import (XNNPACKQuantizer,
                                                  get_symmetric_quantization_config)

        quantizer = XNNPACKQuantizer().set_global(
            get_symmetric_quantization_config(is_per_channel=True, is_dynamic=True))
        with torch.no_grad():
            traced = torch.export.export(model, tuple(example), dynamic_shapes=dynamic_shapes,
                                         strict=False).module()
            prepared = prepare_pt2e(traced, quantizer)
            for args in calibration or [example]:
                prepared(*args)
            converted = convert_pt2e(prepared)
        DuplicateDynamicQuantChainPass()(converted)
        return converted
    raise ValueError(f"unknown quantization {scheme!r}; one of {', '.join(QUANTS)}")


def metadata(model: Decoder) -> Dict[str, Any]:
    """ExecuTorch's LLM metadata methods for model."""
    cfg = model.config
    meta: Dict[str, Any] = {
        "get_max_seq_len": model.max_seq_len,
        "get_max_context_len": model.max_seq_len,
        "get_vocab_size": cfg.vocab_size,
        "get_n_layers": cfg.num_layers,
        "use_kv_cache": True,
        "use_sdpa_with_kv_cache": True,
        "enable_dynamic_shape": True,
    }
    if cfg.bos_token_id is not None:
        meta["get_bos_id"] = cfg.bos_token_id
    if cfg.eos_token_ids:
        meta["get_eos_ids"] = list(cfg.eos_token_ids)
    return meta


def export_model(model: Decoder, *, recipe: str = "xnnpack", quant: str = "none",
                 group_size: int = 32, embedding_quant: Optional[str] = None,
                 external_tag: Optional[str] = None, kv_cache: str = "float",
                 progress: Callable[[str], None] = lambda s: None) -> Any:
    """Exports a Decoder (changed in place by quantization) and returns the
    ExecutorchProgramManager (``.buffer`` is the .pte). With external_tag,
    every weight goes to the data file "<external_tag>.ptd" instead
    (``.data_files[external_tag]``, or ``write_tensor_data_to_file(dir)``).
    kv_cache "int8" keeps the KV cache in int8 (Decoder.quantize_kv_cache:
    ExecuTorch's --quantize_kv_cache form)."""
    from .. import ExecutorchBackendConfig, to_edge_transform_and_lower
    from .quantize import QuantizedEmbedding, parse_embedding_quantize

    if recipe not in RECIPES:
        raise ValueError(f"unknown recipe {recipe!r}; one of {', '.join(RECIPES)}")
    if quant != "none" and recipe != "xnnpack":
        raise ValueError(f"quantization {quant} needs the xnnpack recipe: the quantized linear "
                         "layers run in XnnpackBackend")
    if kv_cache not in KV_CACHES:
        raise ValueError(f"unknown KV cache type {kv_cache!r}; one of {', '.join(KV_CACHES)}")
    meta = metadata(model)
    if kv_cache == "int8":
        progress("the KV cache in int8")
        model.quantize_kv_cache()
    parsed = parse_embedding_quantize(embedding_quant)
    if parsed is not None:
        progress(f"quantizing the token embedding ({embedding_quant})")
        with torch.no_grad():
            model.model.embed_tokens = QuantizedEmbedding.from_float(model.model.embed_tokens,
                                                                     *parsed)
    seq = torch.export.Dim("T", min=1, max=model.max_seq_len)
    example = (torch.zeros(1, 2, dtype=torch.long), torch.tensor([0], dtype=torch.long))
    shapes = ({1: seq}, None)
    if quant != "none":
        progress(f"quantizing the linear layers ({quant})")
    module = quantize_linears(model, example, shapes, quant, group_size)
    progress("exporting (torch.export)")
    with torch.no_grad():
        ep = torch.export.export(module, example, dynamic_shapes=shapes, strict=False)
        if external_tag is not None:
            # ExecuTorch's way: tag the unlifted module's weights, export again
            from ..passes.external_constants import delegate_external_constants_pass_unlifted

            unlifted = ep.module()
            delegate_external_constants_pass_unlifted(unlifted, lambda node: external_tag)
            ep = torch.export.export(unlifted, example, dynamic_shapes=shapes, strict=False)
    progress(f"lowering ({recipe})")
    parts = []
    if recipe == "xnnpack":
        from ..backends.xnnpack import XnnpackPartitioner

        parts = [XnnpackPartitioner()]
    elif recipe == "vulkan":
        from ..backends.vulkan import VulkanPartitioner

        parts = [VulkanPartitioner({"require_dynamic_shapes": True})]
    edge = to_edge_transform_and_lower(ep, partitioner=parts, constant_methods=meta)
    external: Any = False if external_tag is None else (lambda node: external_tag)
    return edge.to_executorch(ExecutorchBackendConfig(init_mutable_buffers=False,
                                                      fold_constants=True,
                                                      external_constants=external))


def export_hf(source: Union[str, os.PathLike, Dict[str, Any]], out: Union[str, os.PathLike], *,
              recipe: str = "xnnpack", quant: str = "none", group_size: int = 32,
              embedding_quant: Optional[str] = None, max_seq_len: Optional[int] = None,
              seed: Optional[int] = None, external_weights: bool = False,
              kv_cache: str = "float",
              progress: Callable[[str], None] = lambda s: None) -> Dict[str, Any]:
    """Reads the model (a directory or a config dict), exports it and writes
    the .pte to out (with external_weights, the weights to the .ptd beside
    it: out without ".pte", plus ".ptd"). Returns what it did: the files'
    sizes and paths, the metadata, the seconds each stage took and the peak
    RSS."""
    t0 = time.perf_counter()
    progress("loading")
    model = load_model(source, max_seq_len=max_seq_len, seed=seed)
    meta = metadata(model)
    t1 = time.perf_counter()
    out = os.fspath(out)
    stem = os.path.basename(out)[:-4] if out.endswith(".pte") else os.path.basename(out)
    prog = export_model(model, recipe=recipe, quant=quant, group_size=group_size,
                        embedding_quant=embedding_quant,
                        external_tag=stem if external_weights else None, kv_cache=kv_cache,
                        progress=progress)
    t2 = time.perf_counter()
    progress(f"writing {out}")
    data = prog.buffer
    with open(out, "wb") as f:
        f.write(data)
    info: Dict[str, Any] = {"bytes": len(data), "metadata": meta}
    if external_weights:
        ptd = os.path.join(os.path.dirname(out), stem + ".ptd")
        blob = prog.data_files.get(stem, b"")
        progress(f"writing {ptd}")
        with open(ptd, "wb") as f:
            f.write(blob)
        info.update(data_path=ptd, data_bytes=len(blob))
    t3 = time.perf_counter()
    info.update(load_s=t1 - t0, export_s=t2 - t1, write_s=t3 - t2, peak_rss_mib=_peak_rss_mib())
    return info


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ember.llm.export",
                                 description="Export a Hugging Face model directory to a .pte.")
    ap.add_argument("--model", required=True, help="directory with config.json and *.safetensors")
    ap.add_argument("--out", required=True, help="the .pte to write")
    ap.add_argument("--recipe", choices=RECIPES, default="xnnpack")
    ap.add_argument("--quant", choices=QUANTS, default="none")
    ap.add_argument("--group-size", type=int, default=32, help="8da4w weight group size")
    ap.add_argument("--embedding-quant", default=None,
                    help='token embedding: "8", "4" or "bits,group" (ExecuTorch\'s form)')
    ap.add_argument("--max-seq-len", type=int, default=None,
                    help="cache length and longest prompt (default: max_position_embeddings)")
    ap.add_argument("--seed", type=int, default=None,
                    help="random weights from this seed instead of the directory's")
    ap.add_argument("--kv-cache", choices=KV_CACHES, default="float",
                    help="int8: the KV cache quantized per token (ExecuTorch's "
                         "--quantize_kv_cache), a quarter of float32's memory")
    ap.add_argument("--external-weights", action="store_true",
                    help="write the weights to <out stem>.ptd beside the .pte (ember-llm --data)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    # ExecuTorch's custom_sdpa meta function calls a torch API that torch
    # has deprecated; the warning is theirs and says nothing about the model
    warnings.filterwarnings("ignore", message=r".*_check_is_size will be removed")

    def progress(stage: str) -> None:
        print(f"[{time.perf_counter() - t0:6.1f} s, {_peak_rss_mib():7.0f} MiB] {stage}",
              file=sys.stderr, flush=True)

    try:
        info = export_hf(args.model, args.out, recipe=args.recipe, quant=args.quant,
                         group_size=args.group_size, embedding_quant=args.embedding_quant,
                         max_seq_len=args.max_seq_len, seed=args.seed,
                         external_weights=args.external_weights, kv_cache=args.kv_cache,
                         progress=progress)
    except (OSError, ValueError, NotImplementedError) as e:
        print(f"ember.llm.export: error: {e}", file=sys.stderr)
        return 1
    data = f" and {info['data_path']}: {info['data_bytes'] / 1e6:.1f} MB" \
        if "data_path" in info else ""
    print(f"wrote {args.out}: {info['bytes'] / 1e6:.1f} MB{data} in "
          f"{time.perf_counter() - t0:.1f} s, peak RSS {info['peak_rss_mib']:.0f} MiB",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""ExecuTorch's own KV-cache LLM export, at GPT-2 sizes, for the LLM benchmark.

The installed executorch package ships its llama export path
(`executorch.examples.models.llama.export_llama_lib`, driven by an
`LlmConfig`, lowered by `LLMEdgeManager`). With `use_kv_cache` and
`use_sdpa_with_kv_cache` its source transforms put the caches in
`CustomKVCache` modules (`llama::update_cache`) and attention in
`SDPACustom` (`llama::custom_sdpa`); with `enable_dynamic_shape` one method
takes (tokens (1, T), input_pos (1,)) for prefill and decode alike; the
XNNPACK partitioner delegates the linear layers and most of the rest. That is
the program ExecuTorch's own LLM runner executes, and ember runs it too.

The model is ExecuTorch's llama architecture (RMSNorm, rotary positions,
SwiGLU), not GPT-2's, at GPT-2's sizes: layers, width, heads, vocabulary and
context from the config given. The SwiGLU hidden size is 2/3 of GPT-2's 4x
MLP (2048 for width 768), so the feed-forward block has GPT-2's parameter
count and FLOPs; the output layer is not tied to the embedding (38.6M more
parameters at GPT-2's vocabulary). Weights are random from a fixed seed and
given to the exporter as a checkpoint (without one, ExecuTorch builds the
model on the meta device and leaves norms and other non-Linear weights
uninitialized). Its tokens are therefore not comparable with GPT-2's.

    from et_llm_export import export_executorch_llm, load_runtime_ops
    eager = export_executorch_llm(gpt_model, "executorch_llm_kv.pte")
    load_runtime_ops()   # before ExecuTorch's runtime loads the file
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Dict, Mapping, Optional, Union

SEED = 0


def llama_params(cfg: Mapping[str, int]) -> Dict[str, Any]:
    """ExecuTorch ModelArgs (params.json) for GPT-2-style sizes (nanoGPT's
    n_layer, n_head, n_embd, vocab_size)."""
    dim = int(cfg["n_embd"])
    return dict(dim=dim, n_layers=int(cfg["n_layer"]), n_heads=int(cfg["n_head"]),
                n_kv_heads=int(cfg.get("n_kv_head", cfg["n_head"])),
                vocab_size=int(cfg["vocab_size"]), hidden_dim=int(cfg.get("hidden_dim",
                                                                          8 * dim // 3)),
                norm_eps=1e-5, rope_freq_base=10000.0)


def _sizes(model_or_config: Any) -> Dict[str, int]:
    if isinstance(model_or_config, Mapping):
        return dict(model_or_config)
    c = getattr(model_or_config, "config", model_or_config)
    keys = ("n_layer", "n_head", "n_embd", "vocab_size", "block_size")
    return {k: int(getattr(c, k)) for k in keys if hasattr(c, k)}


def load_runtime_ops() -> None:
    """Registers ExecuTorch's llama::* kernels with its runtime (and the ops
    with torch): loading its ahead-of-time library does both; and its
    quantized_decomposed kernels (the 4-bit embedding of
    --embedding-quantize), which its Python runtime lacks until the quantized
    ops library is loaded."""
    from executorch.extension.llm.custom_ops import custom_ops  # noqa: F401
    import executorch.kernels.quantized  # noqa: F401


def export_executorch_llm(model_or_config: Any, path: Union[str, os.PathLike], *,
                          xnnpack: bool = True, seed: int = SEED,
                          max_context: Optional[int] = None, weight_std: float = 0.02,
                          qmode: Optional[str] = None, group_size: int = 32,
                          embedding_quantize: Optional[str] = None,
                          quantize_kv_cache: bool = False):
    """Writes ExecuTorch's KV-cache LLM export of a llama-architecture model at
    the sizes of model_or_config (a nanoGPT GPT, its config, or a dict with
    n_layer, n_head, n_embd, vocab_size, block_size) to path, with random
    weights from `seed`: matrices N(0, weight_std), norm weights 1 + N(0, 0.1).
    The context (cache length and longest prompt) is max_context or block_size.
    qmode (e.g. "8da4w", with group_size) quantizes the linear layers with
    ExecuTorch's torchao source transform, as its LLM export does;
    embedding_quantize ("bits,group", e.g. "4,32") quantizes the token
    embedding with its --embedding-quantize transform; quantize_kv_cache
    keeps the KV cache in int8 (its --quantize_kv_cache: per-token scales
    and zero points, llama::custom_quantized_sdpa).
    Returns the eager model ExecuTorch exported (source transforms applied, same
    weights), called as model(tokens (1, T), {"input_pos": tensor([pos])})."""
    import torch
    from executorch.examples.models.llama.llama_transformer import construct_transformer
    from executorch.examples.models.llama.model_args import ModelArgs

    sizes = _sizes(model_or_config)
    context = int(max_context or sizes.get("block_size", 1024))
    params = llama_params(sizes)
    gen = torch.Generator().manual_seed(seed)
    ref = construct_transformer(ModelArgs(max_seq_len=context, max_context_len=context, **params))
    with torch.no_grad():
        for name, p in ref.named_parameters():
            if p.dim() > 1:
                p.copy_(torch.randn(p.shape, generator=gen) * weight_std)
            else:  # norm weights
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=gen))
    state = ref.state_dict()
    del ref
    return export_executorch_checkpoint(params, state, path, context=context, xnnpack=xnnpack,
                                        qmode=qmode, group_size=group_size,
                                        embedding_quantize=embedding_quantize,
                                        quantize_kv_cache=quantize_kv_cache)


def interleave_rotary(w: Any, n: int) -> Any:
    """The rows of a q or k projection of n heads (a tensor) from Hugging
    Face's rotary layout (each head's two halves) to Meta's (interleaved
    pairs), which ExecuTorch's Llama and llama.cpp's llama graph use."""
    rows, cols = w.shape
    return w.view(n, 2, rows // n // 2, cols).transpose(1, 2).reshape(rows, cols)


def checkpoint_from_hf(hf_state: Mapping[str, Any], layers: int, heads: int, kv_heads: int,
                       permute: bool) -> Dict[str, Any]:
    """A transformers Llama/Qwen 3 state dict (name -> tensor) in
    ExecuTorch's checkpoint layout. With `permute`, q/k rows go to the
    interleaved rotary layout (interleave_rotary)."""
    unpermute = interleave_rotary

    out = {"tok_embeddings.weight": hf_state["model.embed_tokens.weight"],
           "norm.weight": hf_state["model.norm.weight"],
           "output.weight": hf_state.get("lm_head.weight", hf_state["model.embed_tokens.weight"])}
    for i in range(layers):
        h = f"model.layers.{i}."
        q, k = hf_state[h + "self_attn.q_proj.weight"], hf_state[h + "self_attn.k_proj.weight"]
        out.update({
            f"layers.{i}.attention.wq.weight": unpermute(q, heads) if permute else q,
            f"layers.{i}.attention.wk.weight": unpermute(k, kv_heads) if permute else k,
            f"layers.{i}.attention.wv.weight": hf_state[h + "self_attn.v_proj.weight"],
            f"layers.{i}.attention.wo.weight": hf_state[h + "self_attn.o_proj.weight"],
            f"layers.{i}.attention_norm.weight": hf_state[h + "input_layernorm.weight"],
            f"layers.{i}.ffn_norm.weight": hf_state[h + "post_attention_layernorm.weight"],
            f"layers.{i}.feed_forward.w1.weight": hf_state[h + "mlp.gate_proj.weight"],
            f"layers.{i}.feed_forward.w2.weight": hf_state[h + "mlp.down_proj.weight"],
            f"layers.{i}.feed_forward.w3.weight": hf_state[h + "mlp.up_proj.weight"],
        })
        if h + "self_attn.q_norm.weight" in hf_state:
            out[f"layers.{i}.attention.q_norm_fn.weight"] = hf_state[h + "self_attn.q_norm.weight"]
            out[f"layers.{i}.attention.k_norm_fn.weight"] = hf_state[h + "self_attn.k_norm.weight"]
    return {k: v.detach().clone().contiguous() for k, v in out.items()}


def export_executorch_checkpoint(params: Mapping[str, Any], state_dict: Mapping[str, Any],
                                 path: Union[str, os.PathLike], *, context: int,
                                 xnnpack: bool = True, qmode: Optional[str] = None,
                                 group_size: int = 32, embedding_quantize: Optional[str] = None,
                                 quantize_kv_cache: bool = False,
                                 metadata: Optional[Mapping[str, Any]] = None):
    """Writes ExecuTorch's KV-cache LLM export of the model that `params`
    (its ModelArgs, as a params.json holds them: Llama 3's rope scaling, Qwen
    3's q/k norms and head_dim, ...) and `state_dict` (in its checkpoint
    layout: layers.N.attention.wq.weight, ...) describe, to path; `metadata`
    adds to the program's metadata methods (get_bos_id, get_eos_ids, ...).
    Quantization as export_executorch_llm. Returns the eager model ExecuTorch
    exported."""
    import torch
    from executorch.examples.models.llama.export_llama_lib import _export_llama
    from executorch.extension.llm.export.config.llm_config import LlmConfig

    path = Path(path).resolve()
    with tempfile.TemporaryDirectory(prefix="et_llm_") as tmp:
        params_path = os.path.join(tmp, "params.json")
        ckpt_path = os.path.join(tmp, "checkpoint.pth")
        with open(params_path, "w") as f:
            json.dump(dict(params), f)
        torch.save(dict(state_dict), ckpt_path)

        cfg = LlmConfig()
        cfg.base.checkpoint = ckpt_path
        cfg.base.params = params_path
        if metadata:
            cfg.base.metadata = json.dumps(dict(metadata))
        cfg.model.use_kv_cache = True
        cfg.model.use_sdpa_with_kv_cache = True
        cfg.model.enable_dynamic_shape = True
        cfg.export.max_seq_length = context
        cfg.export.max_context_length = context
        cfg.export.output_dir = tmp
        cfg.export.output_name = str(path)
        cfg.backend.xnnpack.enabled = xnnpack
        if qmode:
            cfg.quantization.qmode = qmode
            cfg.quantization.group_size = group_size
        if embedding_quantize:
            cfg.quantization.embedding_quantize = embedding_quantize
        cfg.model.quantize_kv_cache = quantize_kv_cache
        builder = _export_llama(cfg)
    if not path.exists():
        raise RuntimeError(f"ExecuTorch's llama export wrote no file at {path}")
    return builder.model.eval()

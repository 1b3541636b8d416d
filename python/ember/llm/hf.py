"""Decoder-only language models from Hugging Face model directories, written
for export: one ``forward(tokens [1, T], input_pos [1])`` with a KV cache
that serves prefill (T > 1) and decode (T = 1), returning the logits of the
last position, as ExecuTorch's LLM exports do.

    from ember.llm.hf import load_model
    model = load_model("path/to/model_dir", max_seq_len=2048)   # config.json + *.safetensors
    model = load_model(config_dict, seed=0)                     # random weights

Families (``model_type`` in config.json):

- ``llama``: Llama 3.x (grouped-query attention, rope with the ``llama3``
  frequency scaling, tied or untied output), SmolLM2 (the same layout);
- ``qwen2``: Qwen 2.5 (biases on q, k and v);
- ``qwen3``: Qwen 3 (RMSNorm over each head of q and k before the rotation,
  ``head_dim`` x heads wider than the model);
- ``phi3``: Phi-4-mini (fused qkv and gate/up projections, rotary on the
  first part of each head, LongRoPE frequencies: the short factors, up to
  the original context length);
- ``gemma3_text``: Gemma 3 (sliding-window and global layers with their
  own rotary bases, RMSNorm over each head of q and k, the embedding scaled
  by sqrt(hidden), GELU-tanh, norms before and after attention and the
  MLP, norm weights stored as w - 1, query_pre_attn_scalar).

Other families are refused with a clear error until they are written here.

The modules carry Hugging Face's parameter names (``model.layers.N.
self_attn.q_proj.weight``, ...), so a checkpoint's state dict loads as it
is. Rotary embeddings use Hugging Face's layout (halves rotated, not
interleaved pairs). Attention calls ExecuTorch's LLM operators,
``llama::update_cache`` and ``llama::custom_sdpa`` (ember.llm.llama_ops), on
caches of shape (1, max_seq_len, kv_heads, head_dim): both runtimes have
kernels for them, and the caches become mutable buffers the program updates
in place.
"""

from __future__ import annotations

import glob
import json
import math
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

import torch
import torch.ao.quantization.fx._decomposed  # noqa: F401  (quantized_decomposed ops)
import torch.nn as nn

from . import llama_ops  # noqa: F401  (registers torch.ops.llama.*)

FAMILIES = ("llama", "qwen2", "qwen3", "phi3", "gemma3_text")
FULL, SLIDING = "full_attention", "sliding_attention"


@dataclass
class DecoderConfig:
    """What the decoder needs from a Hugging Face config.json."""

    family: str
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    rms_norm_eps: float
    rope_theta: float
    rope_scaling: Optional[Dict[str, Any]]
    tie_word_embeddings: bool
    qkv_bias: bool
    qk_norm: bool
    max_position_embeddings: int
    rotary_dim: int = 0  # the leading dims of each head that rotate (0: all)
    fused: bool = False  # qkv_proj and gate_up_proj (Phi-3 / Phi-4)
    o_bias: bool = False  # a bias on o_proj (attention_bias, where the family has it there)
    sliding_window: Optional[int] = None
    layer_types: List[str] = field(default_factory=list)  # FULL or SLIDING per layer
    local_rope_theta: Optional[float] = None  # SLIDING layers' base (Gemma 3)
    gemma: bool = False  # Gemma's norms (1 + w), embedding scale, sandwich norms, GELU-tanh
    attn_scale: Optional[float] = None  # None: 1 / sqrt(head_dim)
    final_logit_softcapping: Optional[float] = None
    bos_token_id: Optional[int] = None
    eos_token_ids: List[int] = field(default_factory=list)

    @staticmethod
    def from_hf(cfg: Mapping[str, Any]) -> "DecoderConfig":
        family = cfg.get("model_type")
        if family not in FAMILIES:
            raise NotImplementedError(
                f"model_type {family!r} is not supported by ember's exporter yet "
                f"(it has {', '.join(FAMILIES)})")

        def need(key: str) -> Any:
            if key not in cfg:
                raise ValueError(f"config.json has no {key!r}, which a {family} model needs")
            return cfg[key]

        heads = int(need("num_attention_heads"))
        hidden = int(need("hidden_size"))
        head_dim = int(cfg.get("head_dim") or hidden // heads)
        rope = dict(cfg.get("rope_parameters") or {})  # transformers 5 spelling
        local_rope: Dict[str, Any] = {}
        if FULL in rope:  # one set of parameters per layer type (Gemma 3)
            local_rope = dict(rope.get(SLIDING) or {})
            rope = dict(rope[FULL] or {})
        scaling = cfg.get("rope_scaling") or (rope if rope.get("rope_type", "default") != "default"
                                              else None)
        theta = float(cfg.get("rope_theta", rope.get("rope_theta", 10000.0)))
        if scaling is not None:
            scaling = dict(scaling)
            kind = scaling.get("rope_type", scaling.get("type"))
            if kind not in ("llama3", "longrope", "linear", "default", None):
                raise NotImplementedError(f"rope scaling {kind!r} is not supported yet "
                                          "(ember has llama3, longrope and linear)")
            if kind in ("default", None):
                scaling = None
            else:
                scaling["rope_type"] = kind
                scaling.setdefault("original_max_position_embeddings",
                                   cfg.get("original_max_position_embeddings"))
        partial = float(cfg.get("partial_rotary_factor", rope.get("partial_rotary_factor", 1.0)))
        rotary_dim = int(head_dim * partial)
        if rotary_dim % 2 or not 0 < rotary_dim <= head_dim:
            raise ValueError(f"partial_rotary_factor {partial} gives {rotary_dim} rotary dims of "
                             f"a head of {head_dim}: not a positive even number")
        window = cfg.get("sliding_window")
        if family in ("qwen2", "qwen3"):
            if cfg.get("use_sliding_window", False):
                raise NotImplementedError("Qwen's use_sliding_window is not supported yet")
            window = None
        layers = int(need("num_hidden_layers"))
        gemma = family == "gemma3_text"
        if gemma:
            types = cfg.get("layer_types") or [
                SLIDING if (i + 1) % int(cfg.get("sliding_window_pattern", 6)) else FULL
                for i in range(layers)]
            if cfg.get("attn_logit_softcapping") is not None:
                raise NotImplementedError("attention logit soft-capping is not supported yet")
            act = cfg.get("hidden_activation", cfg.get("hidden_act"))
            if act not in ("gelu_pytorch_tanh", "gelu_tanh"):
                raise NotImplementedError(f"Gemma 3 with activation {act!r} is not supported")
        else:
            types = [SLIDING if window is not None else FULL] * layers
        if len(types) != layers or set(types) - {FULL, SLIDING}:
            raise ValueError(f"layer_types must give {FULL!r} or {SLIDING!r} for each of the "
                             f"{layers} layers")
        local_theta = local_rope.get("rope_theta", cfg.get("rope_local_base_freq"))
        if local_rope.get("rope_type", "default") != "default":
            raise NotImplementedError("rope scaling on sliding-window layers is not supported yet")
        eos = cfg.get("eos_token_id")
        eos_ids = [int(e) for e in (eos if isinstance(eos, list) else [eos]) if e is not None]
        bos = cfg.get("bos_token_id")
        return DecoderConfig(
            family=family, vocab_size=int(need("vocab_size")), hidden_size=hidden,
            intermediate_size=int(need("intermediate_size")),
            num_layers=layers, num_heads=heads,
            num_kv_heads=int(cfg.get("num_key_value_heads") or heads), head_dim=head_dim,
            rms_norm_eps=float(cfg.get("rms_norm_eps", 1e-6)), rope_theta=theta,
            rope_scaling=dict(scaling) if scaling else None,
            tie_word_embeddings=bool(cfg.get("tie_word_embeddings", gemma)),
            qkv_bias=family == "qwen2" or bool(cfg.get("attention_bias", False)),
            qk_norm=family in ("qwen3", "gemma3_text"),
            max_position_embeddings=int(cfg.get("max_position_embeddings", 2048)),
            rotary_dim=rotary_dim, fused=family == "phi3",
            o_bias=family in ("llama", "qwen3", "gemma3_text") and bool(cfg.get("attention_bias")),
            sliding_window=None if window is None else int(window), layer_types=list(types),
            local_rope_theta=None if local_theta is None else float(local_theta), gemma=gemma,
            attn_scale=float(cfg["query_pre_attn_scalar"]) ** -0.5
            if gemma and cfg.get("query_pre_attn_scalar") else None,
            final_logit_softcapping=cfg.get("final_logit_softcapping"),
            bos_token_id=None if bos is None else int(bos), eos_token_ids=eos_ids)


def rope_inv_freq(cfg: DecoderConfig, max_seq_len: int,
                  kind: str = FULL) -> Tuple[torch.Tensor, float]:
    """The rotary frequencies (rotary_dim / 2) and the factor cos and sin
    are scaled by, for the layers of a kind (Gemma 3's sliding-window layers
    have their own base and no scaling).

    linear scaling: every frequency divided by factor.
    llama3 scaling: wavelengths longer than original_context /
    low_freq_factor are slowed by factor, shorter than original_context /
    high_freq_factor kept, and those between blended smoothly. longrope:
    each frequency divided by its short factor (contexts up to the original
    length; the long factors apply beyond it, which a fixed program cannot
    switch to), cos and sin scaled by sqrt(1 + ln(factor) / ln(original)),
    factor being max_position_embeddings / original unless given."""
    d = cfg.rotary_dim or cfg.head_dim
    local = kind == SLIDING and cfg.local_rope_theta is not None
    theta = cfg.local_rope_theta if local else cfg.rope_theta
    inv = 1.0 / (theta ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    s = None if local else cfg.rope_scaling
    if s is None:
        return inv.float(), 1.0
    if s["rope_type"] == "linear":
        return (inv / float(s["factor"])).float(), 1.0
    if s["rope_type"] == "longrope":
        original = int(s.get("original_max_position_embeddings") or cfg.max_position_embeddings)
        if max_seq_len > original:
            raise NotImplementedError(
                f"longrope past the original context ({original} positions) is not supported "
                f"yet: export with max_seq_len <= {original}")
        short = torch.tensor(s["short_factor"], dtype=torch.float64)
        if short.numel() != d // 2:
            raise ValueError(f"longrope short_factor has {short.numel()} values, not {d // 2}")
        factor = float(s.get("factor") or cfg.max_position_embeddings / original)
        attention = s.get("attention_factor")
        if attention is None:
            attention = 1.0 if factor <= 1.0 else math.sqrt(1 + math.log(factor) / math.log(original))
        return (inv / short).float(), float(attention)
    factor = float(s["factor"])
    low, high = float(s.get("low_freq_factor", 1.0)), float(s.get("high_freq_factor", 4.0))
    old = float(s.get("original_max_position_embeddings", 8192))
    wavelen = 2 * math.pi / inv
    smooth = ((old / wavelen - low) / (high - low)).clamp(0.0, 1.0)
    scaled = (1 - smooth) * inv / factor + smooth * inv
    out = torch.where(wavelen > old / low, inv / factor, torch.where(wavelen < old / high, inv,
                                                                    scaled))
    return out.float(), 1.0


class RMSNorm(nn.Module):
    """x / rms(x) * w; Gemma stores w - 1 (``offset``) and scales in float32."""

    def __init__(self, dim: int, eps: float, offset: bool = False) -> None:
        super().__init__()
        self.eps = eps
        self.offset = offset
        self.weight = nn.Parameter(torch.zeros(dim) if offset else torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xf = x.float()
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        if self.offset:
            return (xf * (1.0 + self.weight.float())).to(x.dtype)
        return self.weight * xf.to(x.dtype)


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x (1, T, H, D) rotated by the angles of its positions (cos, sin: (T, R));
    only the first R dims of each head rotate when R < D."""
    r = cos.shape[-1]
    part = x[..., :r] if r < x.shape[-1] else x
    half = r // 2
    rotated = torch.cat((-part[..., half:], part[..., :half]), dim=-1)
    out = part * cos[None, :, None, :] + rotated * sin[None, :, None, :]
    return torch.cat((out, x[..., r:]), dim=-1) if r < x.shape[-1] else out


def _quantize_rows(x: torch.Tensor):
    """x quantized to int8 per token (per last-dim row, asymmetric), with its
    float32 scales and int8 zero points, as ExecuTorch's QuantizedKVCache
    quantizes: (int8 x, scales, zero points), the last two of x's shape with
    a last dimension of 1."""
    scales, zeros = torch.ops.quantized_decomposed.choose_qparams_per_token_asymmetric.default(
        x, torch.int8)
    xq = torch.ops.quantized_decomposed.quantize_per_token(x, scales, zeros, -128, 127, torch.int8)
    return xq, scales.to(torch.float32), zeros.to(torch.int8)


class Attention(nn.Module):
    def __init__(self, cfg: DecoderConfig, max_seq_len: int) -> None:
        super().__init__()
        h, hkv, d = cfg.num_heads, cfg.num_kv_heads, cfg.head_dim
        self.h, self.hkv, self.d = h, hkv, d
        self.scale = cfg.attn_scale
        self.max_seq_len = max_seq_len
        if cfg.fused:
            self.qkv_proj = nn.Linear(cfg.hidden_size, (h + 2 * hkv) * d, bias=cfg.qkv_bias)
        else:
            self.q_proj = nn.Linear(cfg.hidden_size, h * d, bias=cfg.qkv_bias)
            self.k_proj = nn.Linear(cfg.hidden_size, hkv * d, bias=cfg.qkv_bias)
            self.v_proj = nn.Linear(cfg.hidden_size, hkv * d, bias=cfg.qkv_bias)
        self.o_proj = nn.Linear(h * d, cfg.hidden_size, bias=cfg.o_bias)
        if cfg.qk_norm:
            self.q_norm = RMSNorm(d, cfg.rms_norm_eps, cfg.gemma)
            self.k_norm = RMSNorm(d, cfg.rms_norm_eps, cfg.gemma)
        self.register_buffer("k_cache", torch.zeros(1, max_seq_len, hkv, d), persistent=False)
        self.register_buffer("v_cache", torch.zeros(1, max_seq_len, hkv, d), persistent=False)

    def quantize_cache(self) -> None:
        """Keeps the cache in int8, as ExecuTorch's --quantize_kv_cache does
        (its QuantizedKVCache with QuantizedSDPA, the same buffers and ops):
        each new key and value row is quantized per token (asymmetric, a
        float32 scale and an int8 zero point a row, kept in caches of their
        own), and attention runs on the int8 rows in
        ``llama::custom_quantized_sdpa``, the query quantized the same way."""
        shape = (1, self.max_seq_len, self.hkv, self.d)
        rows = (1, self.max_seq_len, self.hkv, 1)
        for name in ("k", "v"):
            self.register_buffer(f"{name}_cache", torch.zeros(shape, dtype=torch.int8),
                                 persistent=False)
            self.register_buffer(f"{name}_cache_scales", torch.ones(rows), persistent=False)
            self.register_buffer(f"{name}_cache_zero_points", torch.ones(rows, dtype=torch.int8),
                                 persistent=False)
        self.int8_cache = True

    def _int8_attention(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, start_pos: int,
                        mask: Optional[torch.Tensor]) -> torch.Tensor:
        kq, ks, kz = _quantize_rows(k)
        vq, vs, vz = _quantize_rows(v)
        for value, cache in ((kq, self.k_cache), (ks, self.k_cache_scales),
                             (kz, self.k_cache_zero_points), (vq, self.v_cache),
                             (vs, self.v_cache_scales), (vz, self.v_cache_zero_points)):
            torch.ops.llama.update_cache(value, cache, start_pos)
        qq, qs, qz = _quantize_rows(q)
        return torch.ops.llama.custom_quantized_sdpa(
            qq, self.k_cache, self.v_cache, 0 if mask is not None else start_pos, mask, 0.0,
            mask is None, self.scale, qz, qs, self.k_cache_zero_points, self.k_cache_scales,
            self.v_cache_zero_points, self.v_cache_scales)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, start_pos: int,
                mask: Optional[torch.Tensor] = None) -> torch.Tensor:
        """mask: None for causal attention over the cache, else the additive
        (T, max_seq_len) mask of a sliding window."""
        t = x.shape[1]
        if hasattr(self, "qkv_proj"):
            q, k, v = self.qkv_proj(x).split(
                [self.h * self.d, self.hkv * self.d, self.hkv * self.d], dim=-1)
        else:
            q, k, v = self.q_proj(x), self.k_proj(x), self.v_proj(x)
        q = q.view(1, t, self.h, self.d)
        k = k.view(1, t, self.hkv, self.d)
        v = v.view(1, t, self.hkv, self.d)
        if hasattr(self, "q_norm"):
            q, k = self.q_norm(q), self.k_norm(k)
        q, k = _rotate(q, cos, sin), _rotate(k, cos, sin)
        if getattr(self, "int8_cache", False):
            y = self._int8_attention(q, k, v, start_pos, mask)
            return self.o_proj(y.reshape(1, t, self.h * self.d))
        torch.ops.llama.update_cache(k, self.k_cache, start_pos)
        torch.ops.llama.update_cache(v, self.v_cache, start_pos)
        if mask is None:
            y = torch.ops.llama.custom_sdpa(q, self.k_cache, self.v_cache, start_pos, None, 0.0,
                                            True, self.scale)
        else:
            y = torch.ops.llama.custom_sdpa(q, self.k_cache, self.v_cache, start_pos, mask, 0.0,
                                            False, self.scale)
        return self.o_proj(y.reshape(1, t, self.h * self.d))


class MLP(nn.Module):
    def __init__(self, cfg: DecoderConfig) -> None:
        super().__init__()
        if cfg.fused:
            self.gate_up_proj = nn.Linear(cfg.hidden_size, 2 * cfg.intermediate_size, bias=False)
        else:
            self.gate_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
            self.up_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.down_proj = nn.Linear(cfg.intermediate_size, cfg.hidden_size, bias=False)
        self.gelu = cfg.gemma

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if hasattr(self, "gate_up_proj"):
            gate, up = self.gate_up_proj(x).chunk(2, dim=-1)
        else:
            gate, up = self.gate_proj(x), self.up_proj(x)
        if self.gelu:
            act = torch.nn.functional.gelu(gate, approximate="tanh")
        else:
            act = torch.nn.functional.silu(gate)
        return self.down_proj(act * up)


class Layer(nn.Module):
    """One block. Llama's layout: x + attn(norm(x)), then x + mlp(norm(x))
    (post_attention_layernorm is the MLP's input norm). Gemma's: norms on
    both sides of each, x + norm(attn(norm(x))), x + norm(mlp(norm(x)))."""

    def __init__(self, cfg: DecoderConfig, max_seq_len: int, kind: str) -> None:
        super().__init__()
        self.kind = kind
        self.gemma = cfg.gemma
        self.self_attn = Attention(cfg, max_seq_len)
        self.mlp = MLP(cfg)
        n, eps = cfg.hidden_size, cfg.rms_norm_eps
        self.input_layernorm = RMSNorm(n, eps, cfg.gemma)
        self.post_attention_layernorm = RMSNorm(n, eps, cfg.gemma)
        if cfg.gemma:
            self.pre_feedforward_layernorm = RMSNorm(n, eps, True)
            self.post_feedforward_layernorm = RMSNorm(n, eps, True)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, start_pos: int,
                mask: Optional[torch.Tensor]) -> torch.Tensor:
        a = self.self_attn(self.input_layernorm(x), cos, sin, start_pos, mask)
        if self.gemma:
            x = x + self.post_attention_layernorm(a)
            return x + self.post_feedforward_layernorm(self.mlp(self.pre_feedforward_layernorm(x)))
        x = x + a
        return x + self.mlp(self.post_attention_layernorm(x))


class Body(nn.Module):
    """Hugging Face's ``model.*``: embeddings, layers, final norm."""

    def __init__(self, cfg: DecoderConfig, max_seq_len: int) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.layers = nn.ModuleList([Layer(cfg, max_seq_len, kind) for kind in cfg.layer_types])
        self.norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps, cfg.gemma)


class Decoder(nn.Module):
    """The model: ``forward(tokens (1, T), input_pos (1,))`` -> logits (1, vocab)
    of the last of the T tokens, which sit at positions input_pos ..
    input_pos + T - 1 (see the module doc)."""

    def __init__(self, cfg: DecoderConfig, max_seq_len: int) -> None:
        super().__init__()
        if not 1 <= max_seq_len:
            raise ValueError(f"max_seq_len must be positive, got {max_seq_len}")
        self.config = cfg
        self.max_seq_len = max_seq_len
        self.model = Body(cfg, max_seq_len)
        # a tied head shares the embedding's table (never allocates its own:
        # 1 GB in float32 for a 128k vocabulary)
        tied = cfg.tie_word_embeddings
        self.lm_head = nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False,
                                 device="meta" if tied else None)
        if tied:
            self.lm_head.weight = self.model.embed_tokens.weight
        # one rotary table per kind of layer; a window as long as the context
        # is no window
        self.window = cfg.sliding_window if cfg.sliding_window is not None and \
            cfg.sliding_window < max_seq_len else None
        self.embed_scale = math.sqrt(cfg.hidden_size) if cfg.gemma else None
        for kind in sorted(set(cfg.layer_types)):
            inv_freq, scale = rope_inv_freq(cfg, max_seq_len, kind)
            angles = torch.outer(torch.arange(max_seq_len, dtype=torch.float32), inv_freq)
            angles = torch.cat((angles, angles), dim=-1)
            self.register_buffer(f"rope_cos_{kind}", angles.cos() * scale, persistent=False)
            self.register_buffer(f"rope_sin_{kind}", angles.sin() * scale, persistent=False)

    def forward(self, tokens: torch.Tensor, input_pos: torch.Tensor) -> torch.Tensor:
        t = tokens.shape[1]
        start = input_pos[0].item()
        torch._check(start >= 0)
        torch._check(start + t <= self.max_seq_len)
        tables = {kind: (getattr(self, f"rope_cos_{kind}").narrow(0, start, t),
                         getattr(self, f"rope_sin_{kind}").narrow(0, start, t))
                  for kind in sorted(set(self.config.layer_types))}
        mask = None
        if self.window is not None:
            # row r (position start + r) sees cache rows j with
            # start + r - window < j <= start + r
            rows = (torch.arange(t) + start).unsqueeze(1)
            cols = torch.arange(self.max_seq_len).unsqueeze(0)
            seen = (cols <= rows) & (cols > rows - self.window)
            mask = torch.where(seen, 0.0, float("-inf"))
        x = self.model.embed_tokens(tokens)
        if self.embed_scale is not None:
            x = x * torch.tensor(self.embed_scale, dtype=x.dtype)
        for layer in self.model.layers:
            cos, sin = tables[layer.kind]
            x = layer(x, cos, sin, start, mask if layer.kind == SLIDING else None)
        logits = self.lm_head(self.model.norm(x[:, -1, :]))
        cap = self.config.final_logit_softcapping
        if cap:
            logits = torch.tanh(logits / cap) * cap
        return logits

    def quantize_kv_cache(self) -> "Decoder":
        """Every layer's cache in int8 (Attention.quantize_cache); returns self."""
        for layer in self.model.layers:
            layer.self_attn.quantize_cache()
        return self

    def reset_cache(self) -> None:
        for layer in self.model.layers:
            for name, buf in layer.self_attn.named_buffers():
                if "cache" in name:
                    buf.fill_(0 if buf.dtype == torch.int8 or not name.endswith("scales") else 1)


def read_config(source: Union[str, os.PathLike, Mapping[str, Any]]) -> Dict[str, Any]:
    if isinstance(source, Mapping):
        return dict(source)
    path = os.path.join(os.fspath(source), "config.json")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{os.fspath(source)} has no config.json")
    with open(path, encoding="utf-8") as f:
        return json.load(f)


_CHUNK_BYTES = 32 << 20

# safetensors' dtype names (the format: an 8-byte little-endian header
# length, a JSON header naming each tensor's dtype, shape and byte range,
# then the data, little-endian)
_ST_DTYPES = {"F64": torch.float64, "F32": torch.float32, "F16": torch.float16,
              "BF16": torch.bfloat16, "I64": torch.int64, "I32": torch.int32,
              "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8, "BOOL": torch.bool}


def _safetensors_index(path: str) -> Dict[str, Tuple[torch.dtype, Tuple[int, ...], int, int]]:
    """name -> (dtype, shape, first byte, end byte) of each tensor in a
    .safetensors file, checked against the file's size."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        head = f.read(8)
        n = int.from_bytes(head, "little") if len(head) == 8 else -1
        if n < 2 or n > size - 8:
            raise ValueError(f"{path}: not a safetensors file (header length {n}, "
                             f"file {size} bytes)")
        try:
            meta = json.loads(f.read(n))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise ValueError(f"{path}: the safetensors header is not JSON ({e})") from None
    if not isinstance(meta, dict):
        raise ValueError(f"{path}: the safetensors header is not a JSON object")
    index = {}
    for name, spec in meta.items():
        if name == "__metadata__":
            continue
        try:
            dtype = _ST_DTYPES[spec["dtype"]]
            shape = tuple(int(d) for d in spec["shape"])
            a, b = (int(x) for x in spec["data_offsets"])
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"{path}: tensor {name}: a dtype, shape and data_offsets "
                             f"safetensors knows, got {spec!r}") from None
        nbytes = math.prod(shape) * dtype.itemsize
        if min(shape, default=0) < 0 or a < 0 or b - a != nbytes or 8 + n + b > size:
            raise ValueError(f"{path}: tensor {name}: {shape} {spec['dtype']} does not fit "
                             f"bytes {a}..{b} of the data ({size - 8 - n} bytes)")
        index[name] = (dtype, shape, 8 + n + a, 8 + n + b)
    return index


def _read_into(param: torch.Tensor, f: Any, entry: Tuple[torch.dtype, Tuple[int, ...], int, int],
               name: str, path: str) -> None:
    """Reads one tensor of an open .safetensors file into param, a slice at
    a time, converting as it goes: the weights never lie in memory twice (a
    1B model's embedding is 1 GB in bfloat16), nor are the file's pages
    mapped into the process."""
    dtype, shape, start, _ = entry
    if shape != tuple(param.shape):
        raise ValueError(f"{path}: {name} is {shape}, the config makes it {tuple(param.shape)}")
    item = dtype.itemsize
    flat = param.view(-1)
    step = max(1, _CHUNK_BYTES // item)
    buf = torch.empty(min(flat.numel(), step) * item, dtype=torch.uint8)
    f.seek(start)
    for a in range(0, flat.numel(), step):
        count = min(step, flat.numel() - a)
        view = buf[:count * item]
        if f.readinto(memoryview(view.numpy())) != count * item:
            raise ValueError(f"{path}: {name}: the file ends inside the tensor")
        flat[a:a + count].copy_(view.view(dtype))


def load_model(source: Union[str, os.PathLike, Mapping[str, Any]], max_seq_len: Optional[int] = None,
               seed: Optional[int] = None, dtype: torch.dtype = torch.float32) -> Decoder:
    """A Decoder from a model directory (config.json and its *.safetensors
    weights) or a config dict. Without weights files (or with ``seed``
    given), weights are random from the seed: matrices N(0, 0.02), norms 1,
    biases 0.
    max_seq_len defaults to the config's max_position_embeddings."""
    hf = read_config(source)
    cfg = DecoderConfig.from_hf(hf)
    model = Decoder(cfg, int(max_seq_len or cfg.max_position_embeddings))
    files = [] if isinstance(source, Mapping) or seed is not None else sorted(
        glob.glob(os.path.join(os.fspath(source), "*.safetensors")))
    if files:
        # slice by slice into the model's own storage: no second copy of
        # the weights in memory
        params = model.state_dict()
        expected = set(params)
        if cfg.tie_word_embeddings:
            expected.discard("lm_head.weight")
        seen = set()
        with torch.no_grad():
            for f in files:
                index = _safetensors_index(f)
                with open(f, "rb") as fh:
                    for name, entry in index.items():
                        if name not in expected:
                            if name == "lm_head.weight" and cfg.tie_word_embeddings:
                                continue
                            raise ValueError(f"{f}: {name} is not a weight of a {cfg.family} "
                                             "model with this config")
                        _read_into(params[name], fh, entry, name, f)
                        seen.add(name)
        missing = sorted(expected - seen)
        if missing:
            raise ValueError(f"the weights in {os.fspath(source)} lack {len(missing)} tensors of "
                             f"a {cfg.family} model: {', '.join(missing[:5])}")
    else:
        g = torch.Generator().manual_seed(0 if seed is None else seed)
        with torch.no_grad():
            for name, p in model.named_parameters():
                if name.endswith("norm.weight"):
                    p.fill_(0.0 if cfg.gemma else 1.0)
                elif name.endswith(".bias"):
                    p.zero_()
                else:
                    p.copy_(torch.randn(p.shape, generator=g) * 0.02)
    return model.to(dtype).eval()

"""A GPT language model with nanoGPT's configuration and parameter names.

The module tree matches nanoGPT (``transformer.wte``, ``transformer.wpe``,
``transformer.h.N.{ln_1,attn.c_attn,attn.c_proj,ln_2,mlp.c_fc,mlp.c_proj}``,
``transformer.ln_f``, ``lm_head`` tied to ``wte``), so nanoGPT checkpoints load
as they are. GPT-2 weights in the Hugging Face layout load from a local
directory with :meth:`GPT.from_pretrained`; nothing here downloads anything.

``forward(idx, targets=None)`` returns ``(logits, loss)``. Without targets it
returns the logits of the last position only, shape ``(B, 1, vocab_size)``,
which is what generation (and the exported programs) need.
"""

from __future__ import annotations

import inspect
import json
import math
import os
from dataclasses import dataclass, fields
from typing import Any, Dict, Iterable, Mapping, Optional, Tuple

import torch
import torch.nn as nn
from torch.nn import functional as F

GPT2_DIR_ENV = "EMBER_GPT2_DIR"


@dataclass
class GPTConfig:
    block_size: int = 1024
    vocab_size: int = 50304  # GPT-2's 50257 rounded up to a multiple of 64
    n_layer: int = 12
    n_head: int = 12
    n_embd: int = 768
    dropout: float = 0.0
    bias: bool = True  # biases in Linear and LayerNorm layers, as in GPT-2


class LayerNorm(nn.Module):
    """LayerNorm whose bias can be switched off (nn.LayerNorm's bias flag is newer
    than nanoGPT's checkpoints; the parameter names stay ``weight``/``bias``)."""

    def __init__(self, ndim: int, bias: bool) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(ndim))
        self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)


class CausalSelfAttention(nn.Module):
    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        if config.n_embd % config.n_head != 0:
            raise ValueError(f"n_embd ({config.n_embd}) must be a multiple of n_head ({config.n_head})")
        self.n_head = config.n_head
        self.n_embd = config.n_embd
        self.dropout = config.dropout
        # q, k and v projections of every head in one matrix
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.attn_dropout = nn.Dropout(config.dropout)
        self.resid_dropout = nn.Dropout(config.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.size()
        hs = C // self.n_head
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        q = q.view(B, T, self.n_head, hs).transpose(1, 2)  # (B, nh, T, hs)
        k = k.view(B, T, self.n_head, hs).transpose(1, 2)
        v = v.view(B, T, self.n_head, hs).transpose(1, 2)
        y = F.scaled_dot_product_attention(
            q, k, v, attn_mask=None, dropout_p=self.dropout if self.training else 0.0, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # heads side by side again
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.ln_1 = LayerNorm(config.n_embd, bias=config.bias)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = LayerNorm(config.n_embd, bias=config.bias)
        self.mlp = MLP(config)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


# GPT-2 sizes by Hugging Face model name (all: vocab 50257, 1024 positions).
GPT2_SIZES: Dict[str, Dict[str, int]] = {
    "gpt2": dict(n_layer=12, n_head=12, n_embd=768),
    "gpt2-medium": dict(n_layer=24, n_head=16, n_embd=1024),
    "gpt2-large": dict(n_layer=36, n_head=20, n_embd=1280),
    "gpt2-xl": dict(n_layer=48, n_head=25, n_embd=1600),
}

# Hugging Face GPT-2 stores these as Conv1D weights, (in, out): transposed to nn.Linear's (out, in).
_CONV1D_SUFFIXES = ("attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight")


class GPT(nn.Module):
    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        if config.vocab_size <= 0 or config.block_size <= 0:
            raise ValueError("vocab_size and block_size must be positive")
        self.config = config
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(config.vocab_size, config.n_embd),
            wpe=nn.Embedding(config.block_size, config.n_embd),
            drop=nn.Dropout(config.dropout),
            h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
            ln_f=LayerNorm(config.n_embd, bias=config.bias),
        ))
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        # weight tying: the output projection is the token embedding
        self.transformer.wte.weight = self.lm_head.weight

        self.apply(self._init_weights)
        # GPT-2's scaled init of the projections that feed the residual stream
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def get_num_params(self, non_embedding: bool = True) -> int:
        """Parameter count; the tied lm_head counts once. Position embeddings are
        left out by default, as nanoGPT reports it."""
        n = sum(p.numel() for p in self.parameters())
        if non_embedding:
            n -= self.transformer.wpe.weight.numel()
        return n

    def forward(self, idx: torch.Tensor, targets: Optional[torch.Tensor] = None
                ) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        b, t = idx.size()
        torch._check(t <= self.config.block_size,
                     lambda: f"sequence of length {t} is longer than block_size {self.config.block_size}")
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)  # (t,)
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        if targets is not None:
            logits = self.lm_head(x)
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1), ignore_index=-1)
            return logits, loss
        # inference: only the last position's logits are needed
        return self.lm_head(x[:, -1:, :]), None

    def crop_block_size(self, block_size: int) -> None:
        """Shrinks the context (e.g. GPT-2's 1024 to a smaller one)."""
        if block_size > self.config.block_size:
            raise ValueError(f"cannot grow block_size {self.config.block_size} to {block_size}")
        self.config.block_size = block_size
        self.transformer.wpe.weight = nn.Parameter(self.transformer.wpe.weight[:block_size])

    # ---- loading -------------------------------------------------------------

    @classmethod
    def from_checkpoint(cls, path: str | os.PathLike, map_location: str = "cpu") -> "GPT":
        """Loads a nanoGPT checkpoint: a dict with ``model_args`` and ``model``
        (a state dict, keys possibly prefixed ``_orig_mod.`` by torch.compile)."""
        ckpt = torch.load(path, map_location=map_location, weights_only=True)
        if not isinstance(ckpt, Mapping) or "model_args" not in ckpt or "model" not in ckpt:
            raise ValueError(f"{path}: not a nanoGPT checkpoint (expected a dict with 'model_args' and 'model')")
        model = cls(config_from_dict(ckpt["model_args"]))
        model.load_nanogpt_state_dict(ckpt["model"])
        return model

    def load_nanogpt_state_dict(self, state: Mapping[str, torch.Tensor]) -> None:
        prefix = "_orig_mod."
        clean = {(k[len(prefix):] if k.startswith(prefix) else k): v for k, v in state.items()}
        # older nanoGPT versions stored the causal mask as attn.bias: not a parameter here
        clean = {k: v for k, v in clean.items() if not k.endswith(".attn.bias")}
        if "lm_head.weight" not in clean and "transformer.wte.weight" in clean:
            clean["lm_head.weight"] = clean["transformer.wte.weight"]
        if "transformer.wte.weight" not in clean and "lm_head.weight" in clean:
            clean["transformer.wte.weight"] = clean["lm_head.weight"]
        _load_exact(self, clean, "nanoGPT checkpoint")

    @classmethod
    def from_pretrained(cls, model_type: str = "gpt2", override_args: Optional[Dict[str, Any]] = None,
                        local_dir: Optional[str | os.PathLike] = None) -> "GPT":
        """Builds a GPT from GPT-2 weights in the Hugging Face layout, read only from
        a local directory: ``local_dir``, or else the directory named by the
        environment variable EMBER_GPT2_DIR. The directory holds
        ``model.safetensors`` (needs the ``safetensors`` package) or
        ``pytorch_model.bin``, and optionally ``config.json``, whose n_layer,
        n_head, n_embd, n_positions and vocab_size override the table for
        ``model_type``. Only ``dropout`` may be overridden by ``override_args``.
        """
        override_args = dict(override_args or {})
        bad = set(override_args) - {"dropout"}
        if bad:
            raise ValueError(f"only 'dropout' can be overridden, not {sorted(bad)}")
        if model_type not in GPT2_SIZES:
            raise ValueError(f"unknown model_type {model_type!r}; expected one of {sorted(GPT2_SIZES)}")
        directory = local_dir if local_dir is not None else os.environ.get(GPT2_DIR_ENV)
        if not directory:
            raise FileNotFoundError(
                f"no local {model_type} weights: pass local_dir= or set {GPT2_DIR_ENV} to a directory "
                "holding the Hugging Face files (config.json and model.safetensors or pytorch_model.bin); "
                "nothing is downloaded")
        if not os.path.isdir(directory):
            raise FileNotFoundError(f"{GPT2_DIR_ENV}/local_dir {str(directory)!r} is not a directory")

        args: Dict[str, Any] = dict(GPT2_SIZES[model_type], vocab_size=50257, block_size=1024, bias=True)
        cfg_path = os.path.join(directory, "config.json")
        if os.path.exists(cfg_path):
            with open(cfg_path) as f:
                hf = json.load(f)
            for ours, theirs in (("n_layer", "n_layer"), ("n_head", "n_head"), ("n_embd", "n_embd"),
                                 ("block_size", "n_positions"), ("vocab_size", "vocab_size")):
                if theirs in hf:
                    args[ours] = int(hf[theirs])
        args["dropout"] = float(override_args.get("dropout", 0.0))
        weights = _read_hf_weights(directory)  # before building the model: a missing file fails fast
        model = cls(GPTConfig(**args))
        model.load_hf_state_dict(weights)
        return model

    def load_hf_state_dict(self, hf_state: Mapping[str, torch.Tensor]) -> None:
        """Loads a Hugging Face GPT-2 state dict (keys with or without the
        ``transformer.`` prefix; Conv1D weights transposed here)."""
        state: Dict[str, torch.Tensor] = {}
        for key, value in hf_state.items():
            if key.endswith(".attn.bias") or key.endswith(".attn.masked_bias"):
                continue  # causal-mask buffers, not weights
            if key == "lm_head.weight":
                state[key] = value
                continue
            name = key if key.startswith("transformer.") else "transformer." + key
            if name.endswith(_CONV1D_SUFFIXES):
                value = value.t()
            state[name] = value
        if "lm_head.weight" not in state and "transformer.wte.weight" in state:
            state["lm_head.weight"] = state["transformer.wte.weight"]
        _load_exact(self, state, "GPT-2 weights")

    # ---- training and sampling ---------------------------------------------

    def configure_optimizers(self, weight_decay: float, learning_rate: float,
                             betas: Tuple[float, float], device_type: str = "cpu") -> torch.optim.Optimizer:
        """AdamW with weight decay on matrices (2-D and up) only."""
        params = [p for p in self.parameters() if p.requires_grad]
        groups = [
            {"params": [p for p in params if p.dim() >= 2], "weight_decay": weight_decay},
            {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
        ]
        extra = {}
        if device_type == "cuda" and "fused" in inspect.signature(torch.optim.AdamW).parameters:
            extra["fused"] = True
        return torch.optim.AdamW(groups, lr=learning_rate, betas=betas, **extra)

    @torch.no_grad()
    def generate(self, idx: torch.Tensor, max_new_tokens: int, temperature: float = 1.0,
                 top_k: Optional[int] = None, generator: Optional[torch.Generator] = None) -> torch.Tensor:
        """Appends ``max_new_tokens`` tokens to ``idx`` (B, T), feeding at most the
        last block_size tokens each step. ``temperature == 0`` means greedy."""
        for _ in range(max_new_tokens):
            cond = idx if idx.size(1) <= self.config.block_size else idx[:, -self.config.block_size:]
            logits, _ = self(cond)
            logits = logits[:, -1, :]
            if temperature == 0:
                nxt = logits.argmax(dim=-1, keepdim=True)
            else:
                logits = logits / temperature
                if top_k is not None:
                    v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                    logits[logits < v[:, [-1]]] = -float("inf")
                probs = F.softmax(logits, dim=-1)
                nxt = torch.multinomial(probs, num_samples=1, generator=generator)
            idx = torch.cat((idx, nxt), dim=1)
        return idx


def config_from_dict(args: Mapping[str, Any]) -> GPTConfig:
    """GPTConfig from a checkpoint's ``model_args``, ignoring unknown keys."""
    known = {f.name for f in fields(GPTConfig)}
    return GPTConfig(**{k: v for k, v in args.items() if k in known})


def _read_hf_weights(directory: str | os.PathLike) -> Dict[str, torch.Tensor]:
    st = os.path.join(directory, "model.safetensors")
    pt = os.path.join(directory, "pytorch_model.bin")
    if os.path.exists(st):
        try:
            from safetensors.torch import load_file
        except ImportError as e:
            if not os.path.exists(pt):
                raise ImportError(f"{st} needs the 'safetensors' package (pip install safetensors)") from e
        else:
            return load_file(st)
    if os.path.exists(pt):
        return torch.load(pt, map_location="cpu", weights_only=True)
    raise FileNotFoundError(f"{directory}: no model.safetensors or pytorch_model.bin")


def _load_exact(model: nn.Module, state: Dict[str, torch.Tensor], what: str) -> None:
    """Copies ``state`` into ``model``, failing on missing, unexpected or misshapen keys."""
    own = model.state_dict()
    missing = sorted(set(own) - set(state))
    unexpected = sorted(set(state) - set(own))
    if missing or unexpected:
        raise ValueError(f"{what} do not match the model: missing {_short(missing)}, "
                         f"unexpected {_short(unexpected)}")
    for k, v in state.items():
        if tuple(v.shape) != tuple(own[k].shape):
            raise ValueError(f"{what}: {k} has shape {tuple(v.shape)}, the model expects {tuple(own[k].shape)}")
    with torch.no_grad():
        for k, v in state.items():
            own[k].copy_(v)


def _short(keys: Iterable[str], n: int = 5) -> str:
    keys = list(keys)
    if not keys:
        return "none"
    more = f" and {len(keys) - n} more" if len(keys) > n else ""
    return ", ".join(keys[:n]) + more

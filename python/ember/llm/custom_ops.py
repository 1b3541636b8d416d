"""Custom operators for language models (namespace `ember`).

    ember::sdpa_with_kv_cache(Tensor q, Tensor k, Tensor v, Tensor(a!) k_cache,
        Tensor(b!) v_cache, Tensor start_pos, float? scale=None) -> Tensor

One attention step of a decoder with a KV cache, fused:

1. the new keys and values are written into the caches at positions
   [start_pos, start_pos + T);
2. each of the T queries, at absolute position start_pos + t, attends
   causally over cache positions [0, start_pos + t];
3. the result has q's shape.

Layouts (B batch, T new tokens, H heads, D head size, L cache length):

- q, k, v: (B, T, H, D), as a fused qkv projection split and viewed per head
  gives them, so no transposes are needed around the op;
- k_cache, v_cache: (B, H, L, D): each head's cache is one contiguous block,
  which a one-token decode step streams through once;
- start_pos: an int64 tensor with one element (a model input), checked at run
  time: 0 <= start_pos and start_pos + T <= L;
- the result: (B, T, H, D); `scale` defaults to 1 / sqrt(D).

The `.out` overload is what the runtime calls (kernel
`ember::sdpa_with_kv_cache.out`); torch.export sees the functional op mutate
its two cache arguments (as `auto_functionalized`), and ember's lowering turns
that back into an in-place call on the planned cache buffers
(`ember.passes.reinplace`).

Importing this module registers the ops with torch.
"""

from __future__ import annotations

import math
from typing import Optional

import torch

NAMESPACE = "ember"

_SCHEMAS = {
    "sdpa_with_kv_cache": (
        "sdpa_with_kv_cache(Tensor q, Tensor k, Tensor v, Tensor(a!) k_cache, "
        "Tensor(b!) v_cache, Tensor start_pos, float? scale=None) -> Tensor"),
    "sdpa_with_kv_cache.out": (
        "sdpa_with_kv_cache.out(Tensor q, Tensor k, Tensor v, Tensor(a!) k_cache, "
        "Tensor(b!) v_cache, Tensor start_pos, float? scale=None, *, Tensor(c!) out) "
        "-> Tensor(c!)"),
}


def _check_shapes(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, k_cache: torch.Tensor,
                  v_cache: torch.Tensor, start_pos: torch.Tensor) -> None:
    """Shape and dtype rules shared by the eager and the fake implementation."""
    name = "ember::sdpa_with_kv_cache"
    if q.dim() != 4:
        raise ValueError(f"{name}: q must be (B, T, H, D), got shape {tuple(q.shape)}")
    for what, t in (("k", k), ("v", v)):
        if t.shape != q.shape:
            raise ValueError(f"{name}: {what} has shape {tuple(t.shape)}, q has {tuple(q.shape)}")
    b, _, h, d = q.shape
    for what, t in (("k_cache", k_cache), ("v_cache", v_cache)):
        if t.dim() != 4 or t.shape[0] != b or t.shape[1] != h or t.shape[3] != d:
            raise ValueError(f"{name}: {what} must be (B, H, L, D) = ({b}, {h}, L, {d}), "
                             f"got shape {tuple(t.shape)}")
    if v_cache.shape[2] != k_cache.shape[2]:
        raise ValueError(f"{name}: k_cache and v_cache lengths differ "
                         f"({k_cache.shape[2]} and {v_cache.shape[2]})")
    for what, t in (("k", k), ("v", v), ("k_cache", k_cache), ("v_cache", v_cache)):
        if t.dtype != q.dtype:
            raise ValueError(f"{name}: {what} is {t.dtype}, q is {q.dtype}")
    if not q.dtype.is_floating_point:
        raise ValueError(f"{name}: q must be a floating tensor, got {q.dtype}")
    if start_pos.dtype not in (torch.int64, torch.int32) or start_pos.numel() != 1:
        raise ValueError(f"{name}: start_pos must be an int64 tensor with one element, got "
                         f"{start_pos.dtype} of shape {tuple(start_pos.shape)}")


def sdpa_with_kv_cache_reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                                 k_cache: torch.Tensor, v_cache: torch.Tensor,
                                 start_pos: torch.Tensor,
                                 scale: Optional[float] = None) -> torch.Tensor:
    """The op's eager semantics (updates the caches in place, returns the attention)."""
    _check_shapes(q, k, v, k_cache, v_cache, start_pos)
    t_new = q.shape[1]
    length = k_cache.shape[2]
    pos = int(start_pos.reshape(-1)[0])
    if pos < 0 or pos + t_new > length:
        raise IndexError(f"ember::sdpa_with_kv_cache: start_pos {pos} + {t_new} new tokens "
                         f"do not fit in a cache of length {length}")
    with torch.no_grad():
        k_cache[:, :, pos:pos + t_new] = k.transpose(1, 2)
        v_cache[:, :, pos:pos + t_new] = v.transpose(1, 2)
    end = pos + t_new
    # Half types compute in float32, as the runtime kernel does.
    ct = torch.float64 if q.dtype == torch.float64 else torch.float32
    qh = q.transpose(1, 2).to(ct)  # (B, H, T, D)
    keys = k_cache[:, :, :end].to(ct)  # (B, H, end, D)
    values = v_cache[:, :, :end].to(ct)
    s = scale if scale is not None else 1.0 / math.sqrt(q.shape[-1])
    scores = (qh @ keys.transpose(-1, -2)) * s  # (B, H, T, end)
    # query t sits at absolute position pos + t and sees keys 0..pos + t
    visible = torch.ones(t_new, end, dtype=torch.bool, device=q.device).tril(pos)
    scores = scores.masked_fill(~visible, float("-inf"))
    att = torch.softmax(scores, dim=-1)
    return (att @ values).transpose(1, 2).to(q.dtype).contiguous()  # (B, T, H, D)


def _out_impl(q, k, v, k_cache, v_cache, start_pos, scale=None, *, out):
    res = sdpa_with_kv_cache_reference(q, k, v, k_cache, v_cache, start_pos, scale)
    out.resize_(res.shape)
    out.copy_(res)
    return out


def _fake(q, k, v, k_cache, v_cache, start_pos, scale=None):
    _check_shapes(q, k, v, k_cache, v_cache, start_pos)
    return q.new_empty(q.shape)


def _fake_out(q, k, v, k_cache, v_cache, start_pos, scale=None, *, out):
    _check_shapes(q, k, v, k_cache, v_cache, start_pos)
    return out


_library: Optional[torch.library.Library] = None


def register() -> None:
    """Defines the ops with torch (once per process)."""
    global _library
    if _library is not None:
        return
    lib = torch.library.Library(NAMESPACE, "FRAGMENT")
    for schema in _SCHEMAS.values():
        lib.define(schema)
    lib.impl("sdpa_with_kv_cache", sdpa_with_kv_cache_reference, "CompositeExplicitAutograd")
    lib.impl("sdpa_with_kv_cache.out", _out_impl, "CompositeExplicitAutograd")
    torch.library.register_fake(f"{NAMESPACE}::sdpa_with_kv_cache", _fake, lib=lib)
    torch.library.register_fake(f"{NAMESPACE}::sdpa_with_kv_cache.out", _fake_out, lib=lib)
    _library = lib


register()

sdpa_with_kv_cache = torch.ops.ember.sdpa_with_kv_cache.default
sdpa_with_kv_cache_out = torch.ops.ember.sdpa_with_kv_cache.out

__all__ = ["sdpa_with_kv_cache", "sdpa_with_kv_cache_out", "sdpa_with_kv_cache_reference",
           "register"]

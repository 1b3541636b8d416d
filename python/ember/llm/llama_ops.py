"""ExecuTorch's LLM operators (namespace `llama`), for models that call them.

ExecuTorch's language-model exports (its llama export path, its custom KV
cache and custom SDPA source transforms) call

    llama::custom_sdpa(Tensor query, Tensor key, Tensor value, SymInt start_pos,
        Tensor? attn_mask=None, float drpout_p=0., bool is_causal=False,
        float? scale=None) -> Tensor
    llama::sdpa_with_kv_cache(Tensor query, Tensor key, Tensor value,
        Tensor(a!) key_cache, Tensor(b!) value_cache, SymInt start_pos,
        SymInt seq_len, Tensor? attn_mask=None, float drpout_p=0.,
        bool is_causal=False, float? scale=None) -> Tensor
    llama::custom_quantized_sdpa(Tensor query, Tensor key, Tensor value,
        SymInt start_pos, Tensor? attn_mask=None, float drpout_p=0.,
        bool is_causal=False, float? scale=None, Tensor? q_zero_points=None,
        Tensor? q_scales=None, Tensor? k_zero_points=None, Tensor? k_scales=None,
        Tensor? v_zero_points=None, Tensor? v_scales=None,
        bool is_seq_at_dim_2=False) -> Tensor
    llama::update_cache(Tensor value, Tensor(a!) cache, SymInt start_pos) -> Tensor
    llama::update_cache_with_indices(Tensor value, Tensor(a!) cache,
        SymInt start_pos, Tensor indices) -> Tensor

(and their `.out` overloads, which libember has kernels for). Layouts, with
B batch, S new rows, H query heads, Hkv key/value heads, D head size, L
cache positions: query (B, S, H, D); caches (B, L, Hkv, D), sequence at dim
1; new keys and values (B, S, Hkv, D). custom_sdpa attends over cache rows
[0, start_pos + S) (causally with is_causal: row t over [0, start_pos + t]),
or, given a float attn_mask (S, L) added to the scaled scores, over all L
rows. sdpa_with_kv_cache writes key and value into the caches at
[start_pos, start_pos + S) first. update_cache returns a placeholder.

`register()` makes `torch.ops.llama.*` exist: it loads ExecuTorch's own
ahead-of-time library when the executorch package is installed (so models
and exports behave exactly as in ExecuTorch), and otherwise defines the
same schemas here, with eager implementations (the functions `*_reference`
below) and fake kernels for export. Importing this module registers them.
"""

from __future__ import annotations

import math
from typing import Optional

import torch

NAMESPACE = "llama"

_SCHEMAS = (
    "custom_sdpa(Tensor query, Tensor key, Tensor value, SymInt start_pos, "
    "Tensor? attn_mask=None, float drpout_p=0., bool is_causal=False, float? scale=None) "
    "-> Tensor",
    "custom_sdpa.out(Tensor query, Tensor key, Tensor value, SymInt start_pos, "
    "Tensor? attn_mask=None, float drpout_p=0., bool is_causal=False, float? scale=None, *, "
    "Tensor(a!) out) -> Tensor(a!)",
    "sdpa_with_kv_cache(Tensor query, Tensor key, Tensor value, Tensor(a!) key_cache, "
    "Tensor(b!) value_cache, SymInt start_pos, SymInt seq_len, Tensor? attn_mask=None, "
    "float drpout_p=0., bool is_causal=False, float? scale=None) -> Tensor",
    "sdpa_with_kv_cache.out(Tensor query, Tensor key, Tensor value, Tensor(a!) key_cache, "
    "Tensor(b!) value_cache, SymInt start_pos, SymInt seq_len, Tensor? attn_mask=None, "
    "float drpout_p=0., bool is_causal=False, float? scale=None, *, Tensor(c!) out) "
    "-> Tensor(c!)",
    "custom_quantized_sdpa(Tensor query, Tensor key, Tensor value, SymInt start_pos, "
    "Tensor? attn_mask=None, float drpout_p=0., bool is_causal=False, float? scale=None, "
    "Tensor? q_zero_points=None, Tensor? q_scales=None, Tensor? k_zero_points=None, "
    "Tensor? k_scales=None, Tensor? v_zero_points=None, Tensor? v_scales=None, "
    "bool is_seq_at_dim_2=False) -> Tensor",
    "custom_quantized_sdpa.out(Tensor query, Tensor key, Tensor value, SymInt start_pos, "
    "Tensor? attn_mask=None, float drpout_p=0., bool is_causal=False, float? scale=None, "
    "Tensor? q_zero_points=None, Tensor? q_scales=None, Tensor? k_zero_points=None, "
    "Tensor? k_scales=None, Tensor? v_zero_points=None, Tensor? v_scales=None, "
    "bool is_seq_at_dim_2=False, *, Tensor(a!) out) -> Tensor(a!)",
    "update_cache(Tensor value, Tensor(a!) cache, SymInt start_pos) -> Tensor",
    "update_cache.out(Tensor value, Tensor(a!) cache, SymInt start_pos, *, Tensor(b!) out) "
    "-> Tensor(b!)",
    "update_cache_with_indices(Tensor value, Tensor(a!) cache, SymInt start_pos, "
    "Tensor indices) -> Tensor",
    "update_cache_with_indices.out(Tensor value, Tensor(a!) cache, SymInt start_pos, "
    "Tensor indices, *, Tensor(b!) out) -> Tensor(b!)",
)

_FLOATS = (torch.float32, torch.float16, torch.bfloat16, torch.float64)


def _check_attention(name: str, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                     attn_mask: Optional[torch.Tensor], drpout_p: float,
                     is_causal: bool) -> None:
    if query.dim() != 4 or key.dim() != 4 or value.dim() != 4:
        raise ValueError(f"{name}: query, key and value must be 4-d, got "
                         f"{query.dim()}, {key.dim()} and {value.dim()} dims")
    if query.dtype not in _FLOATS:
        raise ValueError(f"{name}: query must be a float tensor, got {query.dtype}")
    for what, t in (("key", key), ("value", value)):
        if t.dtype != query.dtype:
            raise ValueError(f"{name}: {what} is {t.dtype}, query is {query.dtype}")
    if key.shape[0] != query.shape[0] or key.shape[3] != query.shape[3]:
        raise ValueError(f"{name}: key {tuple(key.shape)} does not match query "
                         f"{tuple(query.shape)} in batch and head size")
    if value.shape != key.shape:
        raise ValueError(f"{name}: value {tuple(value.shape)} and key {tuple(key.shape)} differ")
    if key.shape[2] == 0 or query.shape[2] % key.shape[2] != 0:
        raise ValueError(f"{name}: {query.shape[2]} query heads are not a multiple of "
                         f"{key.shape[2]} key/value heads")
    if drpout_p != 0:
        raise ValueError(f"{name}: drpout_p is {drpout_p}; only 0 (inference) is supported")
    if attn_mask is not None:
        if is_causal:
            raise ValueError(f"{name}: attn_mask and is_causal cannot both be set")
        if attn_mask.dim() != 2 or not attn_mask.dtype.is_floating_point:
            raise ValueError(f"{name}: attn_mask must be a 2-d float tensor, got "
                             f"{attn_mask.dtype} of shape {tuple(attn_mask.shape)}")


def custom_sdpa_reference(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                          start_pos: int, attn_mask: Optional[torch.Tensor] = None,
                          drpout_p: float = 0.0, is_causal: bool = False,
                          scale: Optional[float] = None) -> torch.Tensor:
    """llama::custom_sdpa in eager PyTorch (float types compute in float32 or float64)."""
    name = "llama::custom_sdpa"
    _check_attention(name, query, key, value, attn_mask, drpout_p, is_causal)
    s, h, d = query.shape[1], query.shape[2], query.shape[3]
    length, hkv = key.shape[1], key.shape[2]
    pos = int(start_pos)
    if attn_mask is not None:
        if tuple(attn_mask.shape) != (s, length):
            raise ValueError(f"{name}: attn_mask must be ({s}, {length}), got "
                             f"{tuple(attn_mask.shape)}")
        n = length
    else:
        if pos < 0 or pos + s > length:
            raise IndexError(f"{name}: start_pos {pos} with {s} query rows does not fit in "
                             f"the cache of {length} positions")
        n = pos + s
    ct = torch.float64 if query.dtype == torch.float64 else torch.float32
    q = query.transpose(1, 2).to(ct)  # (B, H, S, D)
    k = key[:, :n].transpose(1, 2).to(ct).repeat_interleave(h // hkv, dim=1)  # (B, H, n, D)
    v = value[:, :n].transpose(1, 2).to(ct).repeat_interleave(h // hkv, dim=1)
    sc = scale if scale is not None else 1.0 / math.sqrt(d)
    scores = (q @ k.transpose(-1, -2)) * sc  # (B, H, S, n)
    if attn_mask is not None:
        scores = scores + attn_mask.to(ct)
    elif is_causal:
        # row t sits at position pos + t and sees rows 0..pos + t
        visible = torch.ones(s, n, dtype=torch.bool, device=query.device).tril(pos)
        scores = scores.masked_fill(~visible, float("-inf"))
    att = torch.softmax(scores, dim=-1)
    return (att @ v).transpose(1, 2).to(query.dtype).contiguous()  # (B, S, H, D)


def custom_quantized_sdpa_reference(query: torch.Tensor, key: torch.Tensor,
                                    value: torch.Tensor, start_pos: int,
                                    attn_mask: Optional[torch.Tensor] = None,
                                    drpout_p: float = 0.0, is_causal: bool = False,
                                    scale: Optional[float] = None,
                                    q_zero_points: Optional[torch.Tensor] = None,
                                    q_scales: Optional[torch.Tensor] = None,
                                    k_zero_points: Optional[torch.Tensor] = None,
                                    k_scales: Optional[torch.Tensor] = None,
                                    v_zero_points: Optional[torch.Tensor] = None,
                                    v_scales: Optional[torch.Tensor] = None,
                                    is_seq_at_dim_2: bool = False) -> torch.Tensor:
    """llama::custom_quantized_sdpa in eager PyTorch: int8 query, key and
    value rows with per-row float32 scales and int8 zero points; the scores
    from the int32 products of the rows less their zero points, times both
    scales and `scale`; softmax as custom_sdpa; the weighted sum of the
    dequantized values. float32 out, in query's layout."""
    name = "llama::custom_quantized_sdpa"
    params = (q_zero_points, q_scales, k_zero_points, k_scales, v_zero_points, v_scales)
    if any(p is None for p in params):
        raise ValueError(f"{name}: every scale and zero point must be given")
    for what, t in (("query", query), ("key", key), ("value", value)):
        if t.dtype != torch.int8 or t.dim() != 4:
            raise ValueError(f"{name}: {what} must be 4-d int8, got {t.dim()}-d {t.dtype}")
    if drpout_p != 0.0:
        raise ValueError(f"{name}: drpout_p must be 0")
    if attn_mask is not None and is_causal:
        raise ValueError(f"{name}: attn_mask and is_causal cannot both be set")

    def seq_first(t: torch.Tensor) -> torch.Tensor:  # (B, S, H, X)
        return t.transpose(1, 2) if is_seq_at_dim_2 else t

    q, k, v = seq_first(query), seq_first(key), seq_first(value)
    qz, qs, kz, ks, vz, vs = (seq_first(p) for p in params)  # type: ignore[arg-type]
    s, h, d = q.shape[1], q.shape[2], q.shape[3]
    length, hkv = k.shape[1], k.shape[2]
    pos = 0 if attn_mask is not None else int(start_pos)
    n = length if attn_mask is not None else pos + s
    if n > length or pos < 0:
        raise IndexError(f"{name}: start_pos {pos} with {s} query rows does not fit in the "
                         f"cache of {length} positions")
    rep = h // hkv
    qi = (q.to(torch.int64) - qz.to(torch.int64)).transpose(1, 2)  # (B, H, S, D)
    ki = (k[:, :n].to(torch.int64) - kz[:, :n].to(torch.int64)).transpose(1, 2)
    ki = ki.repeat_interleave(rep, dim=1)  # (B, H, n, D)
    dots = (qi @ ki.transpose(-1, -2)).to(torch.float32)  # exact integers
    qsc = qs.transpose(1, 2)  # (B, H, S, 1)
    ksc = ks[:, :n].transpose(1, 2).repeat_interleave(rep, dim=1).transpose(-1, -2)  # (B, H, 1, n)
    sc = scale if scale is not None else 1.0 / math.sqrt(d)
    scores = dots * (qsc * ksc) * sc
    if attn_mask is not None:
        scores = scores + attn_mask.to(torch.float32)
    elif is_causal:
        visible = torch.ones(s, n, dtype=torch.bool, device=query.device).tril(pos)
        scores = scores.masked_fill(~visible, float("-inf"))
    att = torch.softmax(scores, dim=-1)
    vf = (v[:, :n].to(torch.float32) - vz[:, :n].to(torch.float32)) * vs[:, :n]
    vf = vf.transpose(1, 2).repeat_interleave(rep, dim=1)  # (B, H, n, D)
    out = (att @ vf).transpose(1, 2)  # (B, S, H, D)
    return (out.transpose(1, 2) if is_seq_at_dim_2 else out).contiguous()


def update_cache_reference(value: torch.Tensor, cache: torch.Tensor,
                           start_pos: int) -> torch.Tensor:
    """llama::update_cache in eager PyTorch: cache[:, start_pos:start_pos + S] = value."""
    _check_cache("llama::update_cache", value, cache)
    pos, s, length = int(start_pos), value.shape[1], cache.shape[1]
    if pos < 0 or pos >= length or pos + s > length:
        raise IndexError(f"llama::update_cache: start_pos {pos} with {s} new rows does not "
                         f"fit in the cache of {length} positions")
    with torch.no_grad():
        cache[:, pos:pos + s] = value
    return torch.empty((1,), dtype=value.dtype, device=value.device)


def update_cache_with_indices_reference(value: torch.Tensor, cache: torch.Tensor,
                                        start_pos: int, indices: torch.Tensor) -> torch.Tensor:
    """llama::update_cache_with_indices: cache[b, indices[b, t]] = value[b, t]."""
    name = "llama::update_cache_with_indices"
    _check_cache(name, value, cache)
    if indices.dtype != torch.int64 or tuple(indices.shape) != tuple(value.shape[:2]):
        raise ValueError(f"{name}: indices must be int64 of shape {tuple(value.shape[:2])}")
    if indices.numel() and (int(indices.min()) < 0 or int(indices.max()) >= cache.shape[1]):
        raise IndexError(f"{name}: an index is outside the cache of {cache.shape[1]} positions")
    with torch.no_grad():
        for b in range(value.shape[0]):
            for t in range(value.shape[1]):
                cache[b, int(indices[b, t])] = value[b, t]
    return torch.empty((1,), dtype=value.dtype, device=value.device)


def sdpa_with_kv_cache_reference(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                                 key_cache: torch.Tensor, value_cache: torch.Tensor,
                                 start_pos: int, seq_len: int,
                                 attn_mask: Optional[torch.Tensor] = None,
                                 drpout_p: float = 0.0, is_causal: bool = False,
                                 scale: Optional[float] = None) -> torch.Tensor:
    """llama::sdpa_with_kv_cache: update both caches, then custom_sdpa over them."""
    name = "llama::sdpa_with_kv_cache"
    length = key_cache.shape[1]
    if int(start_pos) < 0 or int(start_pos) + int(seq_len) > length:
        raise IndexError(f"{name}: start_pos {int(start_pos)} with seq_len {int(seq_len)} does "
                         f"not fit in the cache of {length} positions")
    _check_attention(name, query, key_cache, value_cache, attn_mask, drpout_p, is_causal)
    update_cache_reference(key, key_cache, start_pos)
    update_cache_reference(value, value_cache, start_pos)
    return custom_sdpa_reference(query, key_cache, value_cache, start_pos, attn_mask, drpout_p,
                                 is_causal, scale)


def _check_cache(name: str, value: torch.Tensor, cache: torch.Tensor) -> None:
    if value.dim() != 4 or cache.dim() != 4:
        raise ValueError(f"{name}: value and cache must be 4-d")
    if value.dtype != cache.dtype:
        raise ValueError(f"{name}: value is {value.dtype}, cache is {cache.dtype}")
    for i in (0, 2, 3):
        if value.shape[i] != cache.shape[i]:
            raise ValueError(f"{name}: value {tuple(value.shape)} and cache "
                             f"{tuple(cache.shape)} differ in dim {i}")


def _fake_update(value, cache, start_pos, *rest):
    _check_cache("llama::update_cache", value, cache)
    if not rest:  # with indices, start_pos is not used
        torch._check(start_pos >= 0)
        torch._check(start_pos < cache.size(1))
        torch._check(start_pos + value.size(1) <= cache.size(1))
    return value.new_empty((1,))


def _fake_sdpa(query, key, value, *rest, **kwargs):
    return query.new_empty(query.shape)


def _fake_quantized_sdpa(query, key, value, *rest, **kwargs):
    return query.new_empty(query.shape, dtype=torch.float32)


def _out(fn):
    def impl(*args, out, **kwargs):
        res = fn(*args, **kwargs)
        out.resize_(res.shape)
        out.copy_(res)
        return out
    return impl


def _fake_out(*args, out, **kwargs):
    return out


_library: Optional[torch.library.Library] = None
_source: Optional[str] = None


def _executorch_available() -> bool:
    try:
        from executorch.extension.llm.custom_ops import custom_ops  # noqa: F401
    except Exception:  # not installed, or its library does not load here
        return False
    return hasattr(torch.ops.llama, "custom_sdpa") and hasattr(torch.ops.llama, "update_cache")


def register() -> str:
    """Makes torch.ops.llama.* available (once per process); returns who defined
    them: "executorch" (its ahead-of-time library) or "ember" (this module)."""
    global _library, _source
    if _source is not None:
        return _source
    if _executorch_available():
        _source = "executorch"
        return _source
    lib = torch.library.Library(NAMESPACE, "FRAGMENT")
    for schema in _SCHEMAS:
        lib.define(schema)
    impls = {
        "custom_sdpa": custom_sdpa_reference,
        "custom_quantized_sdpa": custom_quantized_sdpa_reference,
        "sdpa_with_kv_cache": sdpa_with_kv_cache_reference,
        "update_cache": update_cache_reference,
        "update_cache_with_indices": update_cache_with_indices_reference,
    }
    fakes = {"custom_sdpa": _fake_sdpa, "custom_quantized_sdpa": _fake_quantized_sdpa,
             "sdpa_with_kv_cache": _fake_sdpa,
             "update_cache": _fake_update, "update_cache_with_indices": _fake_update}
    for name, fn in impls.items():
        lib.impl(name, fn, "CompositeExplicitAutograd")
        lib.impl(f"{name}.out", _out(fn), "CompositeExplicitAutograd")
        torch.library.register_fake(f"{NAMESPACE}::{name}", fakes[name], lib=lib)
        torch.library.register_fake(f"{NAMESPACE}::{name}.out", _fake_out, lib=lib)
    _library = lib
    _source = "ember"
    return _source


register()

__all__ = ["register", "custom_sdpa_reference", "custom_quantized_sdpa_reference",
           "sdpa_with_kv_cache_reference",
           "update_cache_reference", "update_cache_with_indices_reference"]

"""ExecuTorch's quantized embedding operators, and the table formats they read.

    quantized_decomposed::embedding_byte(Tensor weight, Tensor weight_scales,
        Tensor? weight_zero_points, int weight_quant_min, int weight_quant_max,
        Tensor indices) -> Tensor
    quantized_decomposed::embedding_byte.dtype(..., Tensor indices, *,
        ScalarType? dtype=None) -> Tensor

and the same for embedding_4bit and embedding_2bit, each with `.out` and
`.dtype_out` overloads (the kernel keys libember and ExecuTorch's runtime
register). A table of V rows of D values is stored as

- embedding_byte: weight (V, D), int8 or uint8, one value per byte;
- embedding_4bit: weight (V, D / 2), uint8; value 2k in the high nibble of
  byte k and value 2k + 1 in the low one, each stored as q + 8 (q in [-8, 7]);
- embedding_2bit: weight (V, D / 4), uint8; value 4k + i in bits 2i..2i+1 of
  byte k, each stored as q + 2 (q in [-2, 1]);

with weight_scales (V) (one per row) or (V, G) (one per group of D / G
values of a row) and optional zero points of the same shape and a float
dtype. Row r, value j is (q - zero_point) * scale of its group; the
output's dtype is `dtype`, or the scales' dtype.

`register()` makes the ops exist in torch: it loads ExecuTorch's own
definitions when the executorch package is installed (its Python module
defines them, so defining them here first would break that module's import),
and otherwise defines the same schemas here, with eager implementations
(float32 arithmetic, as both runtimes compute) and fake kernels for export.
It is called where the ops are needed (the embedding fusion pass, the LLM
source transform), not when `ember` is imported: ExecuTorch's module pulls in
its whole exporter.
"""

from __future__ import annotations

import sys
from typing import Optional, Tuple

import torch

NAMESPACE = "quantized_decomposed"
#: op name -> bits per value
BITS = {"embedding_byte": 8, "embedding_4bit": 4, "embedding_2bit": 2}
#: bits -> op name
OP_OF_BITS = {b: name for name, b in BITS.items()}
#: bits -> the quant range the packed formats hold
QRANGE = {4: (-8, 7), 2: (-2, 1)}

_ARGS = ("Tensor weight, Tensor weight_scales, Tensor? weight_zero_points, "
         "int weight_quant_min, int weight_quant_max, Tensor indices")

_REFERENCE_MODULE = "executorch.exir.passes._quant_patterns_and_replacements"

_library: Optional[torch.library.Library] = None
_source: Optional[str] = None


# --------------------------------------------------------------------------- #
# Formats
# --------------------------------------------------------------------------- #


def pack(q: torch.Tensor, bits: int) -> torch.Tensor:
    """Integer values q (V, D) in the range of `bits` -> the weight tensor of
    the op for `bits` (8: q itself, int8 or uint8; 4 and 2: uint8 (V, D * bits / 8))."""
    if q.dim() != 2:
        raise ValueError(f"pack: values must be 2-d (rows, values), got {tuple(q.shape)}")
    if bits == 8:
        if q.dtype not in (torch.int8, torch.uint8):
            raise ValueError(f"pack: 8-bit values must be int8 or uint8, got {q.dtype}")
        return q.contiguous()
    if bits not in QRANGE:
        raise ValueError(f"pack: bits must be 8, 4 or 2, got {bits}")
    lo, hi = QRANGE[bits]
    per_byte = 8 // bits
    v, d = q.shape
    if d % per_byte:
        raise ValueError(f"pack: {bits}-bit rows need a multiple of {per_byte} values, got {d}")
    qi = q.to(torch.int32)
    if qi.numel() and (int(qi.min()) < lo or int(qi.max()) > hi):
        raise ValueError(f"pack: {bits}-bit values must lie in [{lo}, {hi}]")
    u = (qi - lo).reshape(v, d // per_byte, per_byte)
    if bits == 4:
        packed = (u[:, :, 0] << 4) | u[:, :, 1]
    else:
        packed = u[:, :, 0] | (u[:, :, 1] << 2) | (u[:, :, 2] << 4) | (u[:, :, 3] << 6)
    return packed.to(torch.uint8).contiguous()


def unpack(weight: torch.Tensor, bits: int) -> torch.Tensor:
    """The op's weight tensor -> its integer values (V, D), int32."""
    if bits == 8:
        return weight.to(torch.int32)
    lo, _ = QRANGE[bits]
    w = weight.to(torch.int32)
    if bits == 4:
        parts = (w >> 4, w & 0x0F)
    else:
        parts = tuple((w >> (2 * i)) & 0x03 for i in range(4))
    return torch.stack(parts, dim=-1).reshape(w.shape[0], -1) + lo


def dequantize_table(weight: torch.Tensor, scales: torch.Tensor,
                     zero_points: Optional[torch.Tensor], bits: int,
                     dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    """The whole float table (V, D): (q - zero_point) * scale in float32, cast
    to dtype (default: the scales' dtype)."""
    q = unpack(weight, bits)
    v, d = q.shape
    groups = scales.shape[1] if scales.dim() == 2 else 1
    if d % groups:
        raise ValueError(f"{groups} groups do not divide rows of {d} values")
    s = scales.reshape(v, groups, 1).to(torch.float32)
    z = (zero_points.reshape(v, groups, 1).to(torch.float32) if zero_points is not None
         else torch.zeros((), dtype=torch.float32))
    table = ((q.reshape(v, groups, d // groups).to(torch.float32) - z) * s).reshape(v, d)
    return table.to(dtype or scales.dtype)


def embedding_reference(weight: torch.Tensor, scales: torch.Tensor,
                        zero_points: Optional[torch.Tensor], quant_min: int, quant_max: int,
                        indices: torch.Tensor, bits: int,
                        dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    """What the op computes: rows `indices` of the dequantized table."""
    _check(weight, scales, zero_points, quant_min, quant_max, bits)
    return torch.nn.functional.embedding(indices, dequantize_table(weight, scales, zero_points,
                                                                   bits, dtype))


def _check(weight, scales, zero_points, quant_min, quant_max, bits) -> None:
    name = OP_OF_BITS[bits]
    ok_dtypes = (torch.int8, torch.uint8) if bits == 8 else (torch.uint8,)
    if weight.dtype not in ok_dtypes or weight.dim() != 2:
        raise ValueError(f"{name}: weight must be 2-d {' or '.join(map(str, ok_dtypes))}, got "
                         f"{weight.dtype} {tuple(weight.shape)}")
    if scales.dim() not in (1, 2) or scales.shape[0] != weight.shape[0]:
        raise ValueError(f"{name}: weight_scales must be (V) or (V, G) with V = "
                         f"{weight.shape[0]}, got {tuple(scales.shape)}")
    if zero_points is not None and zero_points.shape != scales.shape:
        raise ValueError(f"{name}: weight_zero_points {tuple(zero_points.shape)} differ from "
                         f"weight_scales {tuple(scales.shape)}")
    lo, hi = QRANGE.get(bits, (-128, 255))
    if not lo <= quant_min <= quant_max <= hi:
        raise ValueError(f"{name}: quant range [{quant_min}, {quant_max}] is not inside "
                         f"[{lo}, {hi}]")


# --------------------------------------------------------------------------- #
# Registration
# --------------------------------------------------------------------------- #


def _defined(overload: str) -> bool:
    base, ov = overload.split(".") if "." in overload else (overload, "")
    return any(s.overload_name == ov
               for s in torch._C._jit_get_schemas_for_operator(f"{NAMESPACE}::{base}"))


def _all_defined() -> bool:
    return all(_defined(f"{op}.{ov}") if ov else _defined(op)
               for op in BITS for ov in ("", "dtype", "out", "dtype_out"))


def _load_reference() -> bool:
    if _REFERENCE_MODULE in sys.modules:
        return True
    try:
        import importlib

        importlib.import_module(_REFERENCE_MODULE)
    except Exception:  # not installed, or it does not import here
        return False
    return True


def _fake_shape(weight: torch.Tensor, indices: torch.Tensor, bits: int) -> Tuple[int, ...]:
    return tuple(indices.shape) + (weight.shape[1] * (8 // bits),)


def _define(lib: torch.library.Library, op: str, bits: int) -> None:
    lib.define(f"{op}({_ARGS}) -> Tensor")
    lib.define(f"{op}.dtype({_ARGS}, *, ScalarType? dtype=None) -> Tensor")
    lib.define(f"{op}.out({_ARGS}, *, Tensor(a!) out) -> Tensor(a!)", tags=(torch.Tag.out,))
    lib.define(f"{op}.dtype_out({_ARGS}, *, ScalarType? dtype=None, Tensor(a!) out) "
               "-> Tensor(a!)", tags=(torch.Tag.out,))

    def functional(w, s, z, lo, hi, idx):
        return embedding_reference(w, s, z, lo, hi, idx, bits)

    def with_dtype(w, s, z, lo, hi, idx, *, dtype=None):
        return embedding_reference(w, s, z, lo, hi, idx, bits, dtype)

    def out_variant(w, s, z, lo, hi, idx, *, out):
        r = functional(w, s, z, lo, hi, idx)
        out.resize_(r.shape)
        return out.copy_(r)

    def dtype_out_variant(w, s, z, lo, hi, idx, *, dtype=None, out):
        r = with_dtype(w, s, z, lo, hi, idx, dtype=dtype)
        out.resize_(r.shape)
        return out.copy_(r)

    def fake(w, s, z, lo, hi, idx):
        return s.new_empty(_fake_shape(w, idx, bits))

    def fake_dtype(w, s, z, lo, hi, idx, *, dtype=None):
        return s.new_empty(_fake_shape(w, idx, bits), dtype=dtype or s.dtype)

    def fake_out(w, s, z, lo, hi, idx, *, out):
        return out

    def fake_dtype_out(w, s, z, lo, hi, idx, *, dtype=None, out):
        return out

    for ov, impl, fk in (("", functional, fake), (".dtype", with_dtype, fake_dtype),
                         (".out", out_variant, fake_out),
                         (".dtype_out", dtype_out_variant, fake_dtype_out)):
        lib.impl(op + ov, impl, "CompositeExplicitAutograd")
        torch.library.register_fake(f"{NAMESPACE}::{op}{ov}", fk, lib=lib)


def register() -> str:
    """Makes torch.ops.quantized_decomposed.embedding_{byte,4bit,2bit} exist
    (once per process); returns who defined them: "executorch" or "ember"."""
    global _library, _source
    if _source is not None:
        return _source
    if _load_reference() and _all_defined():
        _source = "executorch"
        return _source
    if _all_defined():  # defined by someone else before us
        _source = "other"
        return _source
    lib = torch.library.Library(NAMESPACE, "FRAGMENT")
    for op, bits in BITS.items():
        _define(lib, op, bits)
    for op in BITS:
        torch._ops._refresh_packet(getattr(getattr(torch.ops, NAMESPACE), op))
    _library = lib
    _source = "ember"
    return _source


def op_for_bits(bits: int, with_dtype: bool) -> torch._ops.OpOverload:
    """The functional overload for a table of `bits` (registering the ops first)."""
    register()
    packet = getattr(getattr(torch.ops, NAMESPACE), OP_OF_BITS[bits])
    return packet.dtype if with_dtype else packet.default


__all__ = ["register", "pack", "unpack", "dequantize_table", "embedding_reference", "op_for_bits",
           "BITS", "QRANGE"]

"""Out variants of torch's `quantized_decomposed` ops, for pt2e-quantized programs.

`convert_pt2e` leaves `quantized_decomposed::quantize_per_tensor` and friends in
the graph (torch defines them in `torch.ao.quantization.fx._decomposed`). The
out-variant pass needs a `.out` overload of each, with the names and schemas
that ExecuTorch's programs use as kernel keys (`quantize_per_tensor.out`,
`quantize_per_tensor.Tensor_out`, `choose_qparams.Tensor_out`, ...), so a
program from either exporter runs on the same kernels.

ExecuTorch's package defines most of these in a native library of its own;
defining one of them a second time aborts the process when that library
loads. So, when the reference package is installed, its library is loaded
first, and this module defines only the overloads still missing (those of the
per-channel-group ops, and all of them without the reference package).
Importing `ember` and `executorch` in either order is then safe.
"""

from __future__ import annotations

import importlib.util
import logging
from typing import Dict, List

import torch
import torch.ao.quantization.fx._decomposed  # noqa: F401  (defines the functional ops)

_NS = "quantized_decomposed"

#: out overload -> (its schema, the functional overload it writes out).
OUT_VARIANTS: Dict[str, tuple] = {
    "quantize_per_tensor.out": (
        "quantize_per_tensor.out(Tensor input, float scale, int zero_point, int quant_min, "
        "int quant_max, ScalarType dtype, *, Tensor(a!) out) -> Tensor(a!)",
        "quantize_per_tensor.default"),
    "quantize_per_tensor.Tensor_out": (
        "quantize_per_tensor.Tensor_out(Tensor input, Tensor scale, Tensor zero_point, "
        "int quant_min, int quant_max, ScalarType dtype, *, Tensor(a!) out) -> Tensor(a!)",
        "quantize_per_tensor.tensor"),
    "dequantize_per_tensor.out": (
        "dequantize_per_tensor.out(Tensor input, float scale, int zero_point, int quant_min, "
        "int quant_max, ScalarType dtype, *, ScalarType? out_dtype=None, Tensor(a!) out) "
        "-> Tensor(a!)",
        "dequantize_per_tensor.default"),
    "dequantize_per_tensor.Tensor_out": (
        "dequantize_per_tensor.Tensor_out(Tensor input, Tensor scale, Tensor zero_point, "
        "int quant_min, int quant_max, ScalarType dtype, *, ScalarType? out_dtype=None, "
        "Tensor(a!) out) -> Tensor(a!)",
        "dequantize_per_tensor.tensor"),
    "quantize_per_channel.out": (
        "quantize_per_channel.out(Tensor input, Tensor scales, Tensor zero_points, int axis, "
        "int quant_min, int quant_max, ScalarType dtype, *, Tensor(a!) out) -> Tensor(a!)",
        "quantize_per_channel.default"),
    "dequantize_per_channel.out": (
        "dequantize_per_channel.out(Tensor input, Tensor scales, Tensor? zero_points, int axis, "
        "int quant_min, int quant_max, ScalarType dtype, *, ScalarType? out_dtype=None, "
        "Tensor(a!) out) -> Tensor(a!)",
        "dequantize_per_channel.default"),
    "quantize_per_token.out": (
        "quantize_per_token.out(Tensor input, Tensor scales, Tensor zero_points, int quant_min, "
        "int quant_max, ScalarType dtype, *, Tensor(a!) out) -> Tensor(a!)",
        "quantize_per_token.default"),
    "dequantize_per_token.out": (
        "dequantize_per_token.out(Tensor input, Tensor scales, Tensor zero_points, "
        "int quant_min, int quant_max, ScalarType dtype, ScalarType output_dtype, *, "
        "Tensor(a!) out) -> Tensor(a!)",
        "dequantize_per_token.default"),
    "quantize_per_channel_group.out": (
        "quantize_per_channel_group.out(Tensor input, Tensor scales, Tensor zero_points, "
        "int quant_min, int quant_max, ScalarType dtype, int group_size, *, Tensor(a!) out) "
        "-> Tensor(a!)",
        "quantize_per_channel_group.default"),
    "dequantize_per_channel_group.out": (
        "dequantize_per_channel_group.out(Tensor input, Tensor scales, Tensor? zero_points, "
        "int quant_min, int quant_max, ScalarType dtype, int group_size, "
        "ScalarType output_dtype, *, Tensor(a!) out) -> Tensor(a!)",
        "dequantize_per_channel_group.default"),
    "choose_qparams.Tensor_out": (
        "choose_qparams.Tensor_out(Tensor input, int quant_min, int quant_max, float eps, "
        "ScalarType dtype, *, Tensor(a!) scale_out, Tensor(b!) zero_point_out) "
        "-> (Tensor(a!), Tensor(b!))",
        "choose_qparams.tensor"),
    "choose_qparams_per_token_asymmetric.out": (
        "choose_qparams_per_token_asymmetric.out(Tensor input, ScalarType dtype, *, "
        "Tensor(a!) scale_out, Tensor(b!) zero_point_out) -> (Tensor(a!), Tensor(b!))",
        "choose_qparams_per_token_asymmetric.default"),
}

# Kept alive for the life of the process: dropping a Library removes its ops.
_lib = None
#: The out overloads this module defined (the others came from elsewhere).
DEFINED: List[str] = []


def _is_defined(name: str) -> bool:
    base, overload = name.split(".")
    return any(s.overload_name == overload
               for s in torch._C._jit_get_schemas_for_operator(f"{_NS}::{base}"))


def _load_reference_library() -> None:
    """Loads ExecuTorch's native quantized-op library when the package is installed."""
    try:
        found = importlib.util.find_spec("executorch.kernels.quantized") is not None
    except (ImportError, ValueError):
        found = False
    if found:
        try:
            importlib.import_module("executorch.kernels.quantized")
        except Exception as e:  # a broken install must not break ember
            logging.getLogger(__name__).info("executorch quantized ops not loaded: %s", e)


def _functional(name: str):
    base, overload = name.split(".")
    return getattr(getattr(getattr(torch.ops, _NS), base), overload)


def _make_impl(func_name: str, out_names: tuple):
    functional = _functional(func_name)

    def impl(*args, **kwargs):
        outs = [kwargs.pop(n) for n in out_names]
        result = functional(*args, **kwargs)
        results = result if isinstance(result, (tuple, list)) else (result,)
        for out, r in zip(outs, results):
            out.resize_(r.shape)
            out.copy_(r)
        return outs[0] if len(outs) == 1 else tuple(outs)

    return impl


def _define_missing() -> None:
    global _lib
    for name, (schema, func_name) in OUT_VARIANTS.items():
        if _is_defined(name):
            continue
        if _lib is None:
            _lib = torch.library.Library(_NS, "FRAGMENT")
        _lib.define(schema, tags=(torch.Tag.out,))
        outs = ("scale_out", "zero_point_out") if "scale_out" in schema else ("out",)
        _lib.impl(name, _make_impl(func_name, outs), "CompositeExplicitAutograd")
        DEFINED.append(name)
    # Packets made before a native library added overloads list stale names.
    for name in OUT_VARIANTS:
        packet = getattr(getattr(torch.ops, _NS), name.split(".")[0])
        torch._ops._refresh_packet(packet)


_load_reference_library()
_define_missing()

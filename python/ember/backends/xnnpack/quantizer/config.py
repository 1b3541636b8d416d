"""Quantization configurations for XNNPACK: which dtype, range and observer
each tensor of a quantized operator gets.

`get_symmetric_quantization_config` has the signature and the defaults that
ExecuTorch's XNNPACK quantizer gives it, and builds the same specs, so a
model quantized with either quantizer gets the same q/dq nodes and qparams:

- activations: int8, per tensor (affine), observed by a histogram (static),
  by a placeholder observer (dynamic: the scale is chosen at run time), or
  fake-quantized with moving averages (QAT);
- weights: int8 in [-127, 127], symmetric, per tensor or per output channel
  (axis 0);
- bias: left in float32 (the backend quantizes it from the input and weight
  scales).

A dynamic configuration quantizes inputs only (no output activation).
"""

from __future__ import annotations

import functools
from typing import Any, Dict

import torch
from torchao.quantization.pt2e import (
    FakeQuantize,
    FusedMovingAvgObsFakeQuantize,
    HistogramObserver,
    MinMaxObserver,
    MovingAverageMinMaxObserver,
    MovingAveragePerChannelMinMaxObserver,
    PerChannelMinMaxObserver,
    PlaceholderObserver,
)
from torchao.quantization.pt2e.quantizer import QuantizationConfig, QuantizationSpec

#: The smallest scale an observer may choose (as ExecuTorch's configs set it).
EPS = 2 ** -12

_INT8 = (-128, 127)


def _check_range(what: str, lo: int, hi: int) -> None:
    if not (_INT8[0] <= lo < hi <= _INT8[1]):
        raise ValueError(
            f"get_symmetric_quantization_config: {what} range [{lo}, {hi}] is not a non-empty "
            f"range inside int8's [-128, 127]; pass {what}_qmin < {what}_qmax within it")


def _activation_observer(is_qat: bool, is_dynamic: bool) -> Any:
    kw: Dict[str, Any] = {"eps": EPS}
    if is_qat and is_dynamic:
        kw["observer"] = MovingAverageMinMaxObserver.with_args(averaging_constant=1)
        return FakeQuantize.with_args(**kw)
    if is_qat:
        return FusedMovingAvgObsFakeQuantize.with_args(**kw)
    if is_dynamic:
        return PlaceholderObserver.with_args(**kw)
    return HistogramObserver.with_args(**kw)


def _weight_observer(is_qat: bool, is_per_channel: bool) -> Any:
    kw: Dict[str, Any] = {"eps": EPS}
    if is_qat:
        kw["observer"] = (MovingAveragePerChannelMinMaxObserver if is_per_channel
                          else MovingAverageMinMaxObserver)
        return FusedMovingAvgObsFakeQuantize.with_args(**kw)
    if is_per_channel:
        return PerChannelMinMaxObserver.with_args(**kw)
    return MinMaxObserver.with_args(**kw)


@functools.lru_cache
def get_symmetric_quantization_config(
    is_per_channel: bool = False,
    is_qat: bool = False,
    is_dynamic: bool = False,
    act_qmin: int = -128,
    act_qmax: int = 127,
    weight_qmin: int = -127,
    weight_qmax: int = 127,
) -> QuantizationConfig:
    """An int8 configuration for XNNPACKQuantizer.set_global (and the other
    set_* methods).

    is_per_channel: one weight scale per output channel (else one per tensor).
    is_qat: fake quantization for quantization-aware training.
    is_dynamic: activations quantized at run time, per row (linear and 2-d
    convolution inputs only; outputs stay float32).
    act_qmin/act_qmax, weight_qmin/weight_qmax: the integer ranges, inside int8.

    Equal arguments return the same object (configs compare by identity of
    their observers).
    """
    _check_range("act", act_qmin, act_qmax)
    _check_range("weight", weight_qmin, weight_qmax)
    act = QuantizationSpec(
        dtype=torch.int8, quant_min=act_qmin, quant_max=act_qmax,
        qscheme=torch.per_tensor_affine, is_dynamic=is_dynamic,
        observer_or_fake_quant_ctr=_activation_observer(is_qat, is_dynamic))
    weight = QuantizationSpec(
        dtype=torch.int8, quant_min=weight_qmin, quant_max=weight_qmax,
        qscheme=torch.per_channel_symmetric if is_per_channel else torch.per_tensor_symmetric,
        ch_axis=0, is_dynamic=False,
        observer_or_fake_quant_ctr=_weight_observer(is_qat, is_per_channel))
    return QuantizationConfig(act, None if is_dynamic else act, weight, None, is_qat)


def get_weight_only_quantization_config(is_per_channel: bool = True) -> QuantizationConfig:
    """Weight-only int8: weights are stored int8 (per output channel by
    default) and dequantized before the float32 operator; activations stay
    float32. XNNPACK has no weight-only node, so these operators run on the
    portable kernels (the weights still shrink four times)."""
    full = get_symmetric_quantization_config(is_per_channel=is_per_channel)
    return QuantizationConfig(None, None, full.weight, None, False)

"""Hand-written samples for the core ATen ops that no OpInfo in torch reaches.

Backward ops, the Scalar overloads of bitwise and comparison ops, random ops
and a few others have no OpInfo whose samples dispatch them. For each one,
`SAMPLES[name](dtype)` returns calls `(args, kwargs)` of the ATen overload in
that dtype. The harness runs them exactly like OpInfo samples: eager gives
the expected outputs, and a dtype that eager refuses ("not implemented for
'Int'") counts as one torch does not support for the op. So the dtypes
tested here are the ones torch itself accepts, found by asking it.

Inputs are made with torch.testing.make_tensor from a fixed seed; shapes
cover 0-d, empty and non-trivial cases where the op allows them.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Tuple

import torch
from torch.testing import make_tensor

aten = torch.ops.aten
Call = Tuple[Tuple[Any, ...], Dict[str, Any]]

def _t(shape: Tuple[int, ...], dtype: torch.dtype, low: float = None, high: float = None,
       **kw: Any) -> torch.Tensor:
    if dtype == torch.bool:
        return make_tensor(shape, dtype=dtype, device="cpu")
    if dtype == torch.uint8 and low is not None and low < 0:
        low = 0
    return make_tensor(shape, dtype=dtype, device="cpu", low=low, high=high, **kw)


def _scalar(dtype: torch.dtype, value: float) -> Any:
    """A Python scalar of the kind a call in `dtype` would pass."""
    if dtype == torch.bool:
        return bool(value)
    if dtype.is_floating_point:
        return float(value)
    return int(value)


def _bitwise(dt: torch.dtype) -> List[Call]:
    other = True if dt == torch.bool else 5
    return [((_t((3, 4), dt), other), {}), ((_t((), dt), other), {}),
            ((_t((0, 2), dt), other), {})]


def _gt_scalar(dt: torch.dtype) -> List[Call]:
    x = _t((4, 5), dt)
    if dt.is_floating_point:
        x[0, 0], x[0, 1] = float("nan"), float("inf")
    return [((x, _scalar(dt, 1)), {}), ((_t((), dt), 0.5), {}), ((_t((2, 0), dt), 0), {})]


def _fmod_scalar(dt: torch.dtype) -> List[Call]:
    x = _t((3, 5), dt, low=-9, high=9)
    return [((x, _scalar(dt, 3)), {}), ((_t((6,), dt, low=-9, high=9), -2.5 if
                                         dt.is_floating_point else -4), {}),
            ((_t((), dt, low=-9, high=9), 2), {})]


def _pow_scalar(dt: torch.dtype) -> List[Call]:
    # pow.Scalar(Scalar self, Tensor exponent): exponents >= 0 so integers stay defined.
    e = _t((3, 4), dt, low=0, high=5)
    return [((2, e), {}), ((_scalar(dt, 3), _t((5,), dt, low=0, high=4)), {}),
            ((1.5, _t((), dt, low=0, high=3)), {})]


def _div_scalar_mode(dt: torch.dtype) -> List[Call]:
    x = _t((3, 5), dt, low=-9, high=9)
    return [((x, _scalar(dt, 3)), {"rounding_mode": "trunc"}),
            ((x, _scalar(dt, -2)), {"rounding_mode": "floor"}),
            ((_t((), dt, low=-9, high=9), 2), {"rounding_mode": "floor"})]


def _atan2_out(dt: torch.dtype) -> List[Call]:
    return [((_t((3, 4), dt), _t((3, 4), dt)), {}), ((_t((2, 1, 3), dt), _t((4, 1), dt)), {}),
            ((_t((), dt), _t((5,), dt)), {})]


def _atan2_into_new(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """atan2.out into a fresh tensor: a program input cannot be an op's out=,
    and the exporter turns this call into the atan2.out kernel itself."""
    out = torch.empty(torch.broadcast_shapes(a.shape, b.shape),
                      dtype=torch.result_type(a, b) if a.is_floating_point()
                      else torch.get_default_dtype())
    return aten.atan2.out(a, b, out=out)


def _any_dims(dt: torch.dtype) -> List[Call]:
    x = _t((2, 3, 4), dt)
    return [((x, [0, 2], False), {}), ((x, [1], True), {}), ((_t((2, 0), dt), [1]), {})]


def _copy(dt: torch.dtype) -> List[Call]:
    dst = _t((2, 3), dt)
    return [((dst, _t((2, 3), torch.float32, low=-5, high=5)), {}),
            ((dst, _t((3,), dt)), {}), ((_t((4,), dt), _t((), torch.int64, low=0, high=9)), {})]


def _scatter_value(dt: torch.dtype) -> List[Call]:
    x = _t((3, 5), dt)
    idx = torch.tensor([[0, 4, 2], [1, 0, 3]])
    return [((x, 1, idx, _scalar(dt, 1)), {}),
            ((x, 0, torch.tensor([[2, 1, 0, 2, 1]]), _scalar(dt, 0)), {})]


def _reflection_pad(nd: int) -> Callable[[torch.dtype], List[Call]]:
    def gen(dt: torch.dtype) -> List[Call]:
        shape = (2, 3) + (4,) * nd
        pad = [1, 2] * nd
        return [((_t(shape, dt), pad), {}), ((_t(shape[1:], dt), [0, 3] * nd), {})]
    return gen


def _replication_pad3d(dt: torch.dtype) -> List[Call]:
    return [((_t((1, 2, 3, 3, 4), dt), [1, 2, 0, 1, 2, 0]), {}),
            ((_t((2, 2, 3, 4), dt), [3, 0, 1, 1, 0, 2]), {})]


def _col2im(dt: torch.dtype) -> List[Call]:
    # input (N, C*kh*kw, L) for output 5x6, kernel 2x3, dilation 1, padding 1, stride 2
    # L = ((5 + 2 - 2) // 2 + 1) * ((6 + 2 - 3) // 2 + 1) = 3 * 3
    return [((_t((2, 12, 9), dt), [5, 6], [2, 3], [1, 1], [1, 1], [2, 2]), {}),
            ((_t((8, 4), dt), [3, 3], [2, 2], [1, 1], [0, 0], [1, 1]), {})]


def _embedding_bag(dt: torch.dtype) -> List[Call]:
    w = _t((10, 3), dt)
    idx = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9])
    off = torch.tensor([0, 3, 3, 6])
    psw = _t((8,), dt)
    return [((w, idx, off, False, 0, False, None, False, -1), {}),
            ((w, idx, off, False, 1, False, None, False, -1), {}),
            ((w, idx, off, False, 2, False, None, False, -1), {}),
            ((w, idx, off, False, 0, False, psw, True, 2), {})]


def _bn_no_stats(dt: torch.dtype) -> List[Call]:
    x = _t((2, 3, 4, 5), dt)
    return [((x, _t((3,), dt), _t((3,), dt), True, 0.1, 1e-5), {}),
            ((_t((4, 3), dt), None, None, True, 0.1, 1e-3), {})]


def _bn_no_training(dt: torch.dtype) -> List[Call]:
    x = _t((2, 3, 4, 5), dt)
    rm, rv = _t((3,), dt), _t((3,), dt, low=0.5, high=2)
    return [((x, _t((3,), dt), _t((3,), dt), rm, rv, 0.1, 1e-5), {}),
            ((_t((4, 3), dt), None, None, rm, rv, 0.1, 1e-3), {})]


def _native_dropout(dt: torch.dtype) -> List[Call]:
    return [((_t((8, 9), dt), 0.3, True), {}), ((_t((5,), dt), 0.5, False), {})]


def _randperm(dt: torch.dtype) -> List[Call]:
    return [((7,), {"dtype": dt}), ((0,), {"dtype": dt})]


def _adaptive_avg_pool2d_backward(dt: torch.dtype) -> List[Call]:
    x = _t((2, 3, 7, 6), dt)
    return [((_t((2, 3, 3, 4), dt), x), {}), ((_t((3, 2, 2), dt), _t((3, 5, 5), dt)), {})]


def _avg_pool2d_backward(dt: torch.dtype) -> List[Call]:
    x = _t((2, 3, 7, 6), dt)
    # output of kernel 3, stride 2, padding 1: 4 x 3 (ceil_mode off), 4 x 4 (on)
    return [((_t((2, 3, 4, 3), dt), x, [3, 3], [2, 2], [1, 1], False, True, None), {}),
            ((_t((2, 3, 4, 4), dt), x, [3, 3], [2, 2], [1, 1], True, False, None), {}),
            ((_t((2, 3, 3, 3), dt), x, [2, 2], [2, 2], [0, 0], False, True, 3), {})]


def _convolution_backward(dt: torch.dtype) -> List[Call]:
    x, w = _t((2, 4, 6, 5), dt), _t((6, 2, 3, 3), dt)
    # groups 2, stride 1, padding 1 -> output (2, 6, 6, 5)
    g = _t((2, 6, 6, 5), dt)
    x1, w1 = _t((1, 3, 9), dt), _t((3, 2, 4), dt)
    # transposed 1-d, stride 2, padding 1, output_padding 1: (9-1)*2 - 2 + 4 + 1 = 19
    g1 = _t((1, 2, 19), dt)
    calls = [((g, x, w, [6], [1, 1], [1, 1], [1, 1], False, [0, 0], 2, [True, True, True]), {}),
             ((g1, x1, w1, [2], [2], [1], [1], True, [1], 1, [True, True, True]), {}),
             ((g, x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 2, [True, False, False]),
              {})]
    if dt.is_floating_point:  # eager's 3-d backward also takes int64; the kernel is float only
        x3, w3 = _t((2, 2, 4, 5, 3), dt), _t((4, 1, 2, 3, 2), dt)
        # 3-d, groups 2, stride (2, 1, 1), padding (1, 1, 0), dilation (1, 1, 2): (2, 4, 3, 5, 1)
        g3 = _t((2, 4, 3, 5, 1), dt)
        calls.append(((g3, x3, w3, [4], [2, 1, 1], [1, 1, 0], [1, 1, 2], False, [0, 0, 0], 2,
                       [True, True, True]), {}))
    return calls


def _convolution_3d(dt: torch.dtype) -> List[Call]:
    """3-d convolutions, which the capped OpInfo samples (1-d and 2-d first) miss."""
    x, w, b = _t((2, 4, 3, 5, 6), dt, -3, 3), _t((6, 2, 2, 3, 3), dt, -3, 3), _t((6,), dt, -3, 3)
    xt, wt = _t((1, 3, 2, 3, 4), dt, -3, 3), _t((3, 2, 3, 2, 3), dt, -3, 3)
    return [
        # groups 2, stride (1, 2, 1), padding (1, 2, 1) (over half the kernel), dilation (2, 1, 1)
        ((x, w, b, [1, 2, 1], [1, 2, 1], [2, 1, 1], False, [0, 0, 0], 2), {}),
        # depthwise-like transposed: groups 3, stride 2, output_padding (1, 0, 1)
        ((xt, wt, None, [2, 2, 2], [1, 0, 1], [1, 1, 1], True, [1, 0, 1], 3), {}),
    ]


def _embedding_dense_backward(dt: torch.dtype) -> List[Call]:
    idx = torch.tensor([[1, 3, 3], [0, 7, 1]])
    g = _t((2, 3, 4), dt)
    return [((g, idx, 8, -1, False), {}), ((g, idx, 8, 3, True), {})]


def _group_norm_backward(dt: torch.dtype) -> List[Call]:
    n, c, hw, group = 2, 6, 5, 3
    x, w = _t((n, c, hw), dt), _t((c,), dt)
    _, mean, rstd = aten.native_group_norm.default(x, w, None, n, c, hw, group, 1e-5)
    g = _t((n, c, hw), dt)
    return [((g, x, mean, rstd, w, n, c, hw, group, [True, True, True]), {}),
            ((g, x, mean, rstd, None, n, c, hw, group, [True, False, False]), {})]


def _layer_norm_backward(dt: torch.dtype) -> List[Call]:
    x, w, b = _t((3, 4, 5), dt), _t((5,), dt), _t((5,), dt)
    _, mean, rstd = aten.native_layer_norm.default(x, [5], w, b, 1e-5)
    g = _t((3, 4, 5), dt)
    return [((g, x, [5], mean, rstd, w, b, [True, True, True]), {}),
            ((g, x, [5], mean, rstd, None, None, [True, False, False]), {})]


SAMPLES: Dict[str, Callable[[torch.dtype], List[Call]]] = {
    "aten.bitwise_and.Scalar": _bitwise,
    "aten.bitwise_or.Scalar": _bitwise,
    "aten.bitwise_xor.Scalar": _bitwise,
    "aten.gt.Scalar": _gt_scalar,
    "aten.fmod.Scalar": _fmod_scalar,
    "aten.pow.Scalar": _pow_scalar,
    "aten.div.Scalar_mode": _div_scalar_mode,
    "aten.atan2.out": _atan2_out,
    "aten.any.dims": _any_dims,
    "aten.copy.default": _copy,
    "aten.scatter.value": _scatter_value,
    "aten.reflection_pad2d.default": _reflection_pad(2),
    "aten.reflection_pad3d.default": _reflection_pad(3),
    "aten.replication_pad3d.default": _replication_pad3d,
    "aten.col2im.default": _col2im,
    "aten._embedding_bag.default": _embedding_bag,
    "aten._native_batch_norm_legit.no_stats": _bn_no_stats,
    "aten._native_batch_norm_legit_no_training.default": _bn_no_training,
    "aten.native_dropout.default": _native_dropout,
    "aten.randperm.default": _randperm,
    "aten._adaptive_avg_pool2d_backward.default": _adaptive_avg_pool2d_backward,
    "aten.avg_pool2d_backward.default": _avg_pool2d_backward,
    "aten.convolution_backward.default": _convolution_backward,
    "aten.embedding_dense_backward.default": _embedding_dense_backward,
    "aten.native_group_norm_backward.default": _group_norm_backward,
    "aten.native_layer_norm_backward.default": _layer_norm_backward,
}


# Samples added to an op's OpInfo samples, for cases the capped OpInfo samples
# miss: name -> (function of the dtype, what they add).
EXTRA: Dict[str, Tuple[Callable[[torch.dtype], List[Call]], str]] = {
    "aten.convolution.default": (_convolution_3d, "3-d"),
}

# Ops whose samples call a function around the overload instead of the overload.
CALLERS: Dict[str, Callable[..., Any]] = {
    "aten.atan2.out": _atan2_into_new,
}

# Ops with outputs eager and the exporter disagree on: only the first N are
# compared. _embedding_bag's offset2bag, bag_size and max_indices are backward
# bookkeeping; PyTorch's CPU kernel returns offset2bag empty on its sum fast
# path while torch's shape function plans it full (bfloat16), so no program
# can match both.
CHECKED_OUTPUTS: Dict[str, int] = {
    "aten._embedding_bag.default": 1,
}


def samples(name: str, dtype: torch.dtype, extra: bool = False) -> List[Call]:
    """The hand-written calls of op `name` in `dtype` (seeded: the same every run);
    extra: those of EXTRA, added to its OpInfo samples."""
    torch.manual_seed(0)
    return EXTRA[name][0](dtype) if extra else SAMPLES[name](dtype)

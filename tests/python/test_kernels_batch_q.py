"""Backward-op and quantized_decomposed kernels in libember against eager PyTorch.

Each case is a one-op module calling the operator directly, exported with
ember and run in the C runtime; outputs are compared with eager at per-dtype
tolerances (quantized values exactly, dequantized ones within one step). A
pt2e-quantized model is also exported by the reference exporter and run in
ember, so the kernel keys of ExecuTorch's programs are covered.
"""

from __future__ import annotations

from typing import Callable, Sequence

import pytest
import torch

from aot_util import export, kernel_names, read_program
from ember import EdgeCompileConfig

runtime = pytest.importorskip("ember.runtime")
aten = torch.ops.aten
qd = torch.ops.quantized_decomposed

TOL = {torch.float32: 1e-5, torch.float64: 1e-9, torch.float16: 1e-2, torch.bfloat16: 2e-2}


class OneOp(torch.nn.Module):
    def __init__(self, fn: Callable) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


_last_buffer = [b""]


def run_in_ember(fn: Callable, args: Sequence, preserve=(), expect_kernel: str = ""):
    prog = export(OneOp(fn), tuple(args),
                  compile_config=EdgeCompileConfig(preserve_ops=list(preserve)))
    _last_buffer[0] = prog.buffer
    if expect_kernel:
        assert expect_kernel in kernel_names(read_program(prog.buffer).execution_plan[0])
    method = runtime.Runtime.get().load_program(prog.buffer).load_method("forward")
    return method.execute(list(args))


def compare(fn: Callable, args: Sequence, preserve=(), expect_kernel: str = "", tol=None) -> None:
    outs = run_in_ember(fn, args, preserve, expect_kernel)
    exp = fn(*args)
    exp = list(exp) if isinstance(exp, (tuple, list)) else [exp]
    assert len(outs) == len(exp)
    for i, (o, e) in enumerate(zip(outs, exp)):
        if e is None:  # an output the op's output_mask leaves out
            assert o is None
            continue
        assert o.dtype == e.dtype and o.shape == e.shape, (i, o.dtype, e.dtype, o.shape, e.shape)
        if e.dtype.is_floating_point:
            t = tol if tol is not None else TOL[e.dtype]
            torch.testing.assert_close(o, e, rtol=t, atol=t, msg=f"output {i}")
        else:
            assert torch.equal(o, e), f"output {i}"


FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]

# --------------------------------------------------------------------------- #
# Backward ops
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("dtype", FLOATS)
def test_pool_backward(dtype):
    torch.manual_seed(0)
    x = torch.randn(2, 3, 7, 9, dtype=dtype)
    ya = aten.avg_pool2d(x, [3, 2], [2, 1], [1, 1], True, False)
    yd = aten.avg_pool2d(x[0], [2, 2], [], [0, 0], False, True, 3)
    ym, idx = aten.max_pool2d_with_indices(x, [3, 3], [2, 1], [1, 0], [1, 2], True)

    def fn(x, ga, ga2, ga3, gm, i):
        return (aten._adaptive_avg_pool2d_backward(ga, x),
                aten.avg_pool2d_backward(ga2, x, [3, 2], [2, 1], [1, 1], True, False, None),
                aten.avg_pool2d_backward(ga3, x[0], [2, 2], [], [0, 0], False, True, 3),
                aten.max_pool2d_with_indices_backward(gm, x, [3, 3], [2, 1], [1, 0], [1, 2],
                                                      True, i))

    args = (x, torch.randn(2, 3, 3, 4, dtype=dtype), torch.randn_like(ya), torch.randn_like(yd),
            torch.randn_like(ym), idx)
    outs = run_in_ember(fn, args)
    names = set(kernel_names(read_program(_last_buffer[0]).execution_plan[0]))
    assert {"aten::_adaptive_avg_pool2d_backward.out", "aten::avg_pool2d_backward.grad_input",
            "aten::max_pool2d_with_indices_backward.grad_input"} <= names
    for o, e in zip(outs, fn(*args)):
        torch.testing.assert_close(o, e, rtol=TOL[dtype], atol=TOL[dtype])


CONV_CASES = [
    # transposed, stride, padding, dilation, output_padding, groups, weight shape
    (False, [2, 1], [1, 2], [1, 1], [0, 0], 1, (4, 3, 3, 3)),
    (False, [1, 2], [0, 1], [2, 1], [0, 0], 3, (6, 1, 2, 3)),
    (True, [2, 2], [1, 1], [1, 1], [1, 0], 1, (3, 2, 3, 3)),
    (True, [2, 1], [0, 1], [1, 2], [1, 0], 3, (3, 2, 2, 2)),
]


@pytest.mark.parametrize("case", CONV_CASES)
def test_convolution_backward(case):
    torch.manual_seed(1)
    tr, st, pd, dl, op, groups, wshape = case
    x = torch.randn(2, 3, 7, 8)
    w = torch.randn(*wshape)
    y = aten.convolution(x, w, None, st, pd, dl, tr, op, groups)
    cout = y.shape[1]

    def fn(g, x, w):
        return aten.convolution_backward(g, x, w, [cout], st, pd, dl, tr, op, groups,
                                         [True, True, True])

    compare(fn, (torch.randn_like(y), x, w), expect_kernel="aten::convolution_backward.out",
            tol=1e-4)


@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16])
def test_convolution_backward_dtypes_1d_and_mask(dtype):
    torch.manual_seed(2)
    x = torch.randn(2, 4, 9, dtype=dtype)
    w = torch.randn(6, 2, 3, dtype=dtype)
    y = aten.convolution(x, w, None, [2], [1], [1], False, [0], 2)

    def fn(g, x, w):
        return aten.convolution_backward(g, x, w, None, [2], [1], [1], False, [0], 2,
                                         [True, True, False])

    compare(fn, (torch.randn_like(y), x, w), tol=TOL[dtype] * 5)


@pytest.mark.parametrize("scale", [False, True])
def test_embedding_dense_backward(scale):
    torch.manual_seed(3)
    idx = torch.randint(0, 10, (3, 5))

    def fn(g, i):
        return aten.embedding_dense_backward(g, i, 10, 2, scale)

    if scale:  # float16 grads, int32 indices
        compare(fn, (torch.randn(3, 5, 6, dtype=torch.float16), idx.int()),
                preserve=[aten.embedding_dense_backward.default],
                expect_kernel="aten::embedding_dense_backward.out")
    else:
        compare(fn, (torch.randn(3, 5, 6), idx), preserve=[aten.embedding_dense_backward.default],
                expect_kernel="aten::embedding_dense_backward.out")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_norm_backward(dtype):
    torch.manual_seed(4)
    x = torch.randn(4, 5, 6, dtype=dtype)
    w, b = torch.randn(5, 6, dtype=dtype), torch.randn(5, 6, dtype=dtype)
    _, mean, rstd = aten.native_layer_norm(x, [5, 6], w, b, 1e-5)

    xg = torch.randn(2, 6, 4, 5, dtype=dtype)
    wg = torch.randn(6, dtype=dtype)
    _, mg, rg = aten.native_group_norm(xg, wg, None, 2, 6, 20, 3, 1e-5)

    def fn(g, x, mean, rstd, w, b, gg, xg, mg, rg, wg):
        return (*aten.native_layer_norm_backward(g, x, [5, 6], mean, rstd, w, b,
                                                 [True, True, True]),
                *aten.native_group_norm_backward(gg, xg, mg, rg, wg, 2, 6, 20, 3,
                                                 [True, True, True]))

    compare(fn, (torch.randn_like(x), x, mean, rstd, w, b, torch.randn_like(xg), xg, mg, rg, wg),
            preserve=[aten.native_layer_norm_backward.default,
                      aten.native_group_norm_backward.default],
            expect_kernel="aten::native_group_norm_backward.out", tol=TOL[dtype] * 10)
    assert "aten::native_layer_norm_backward.out" in kernel_names(
        read_program(_last_buffer[0]).execution_plan[0])


# --------------------------------------------------------------------------- #
# quantized_decomposed ops
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("qdtype,qmin,qmax,xdtype", [
    (torch.uint8, 0, 255, torch.float32),
    (torch.int8, -128, 127, torch.float16),
    (torch.int16, -32768, 32767, torch.bfloat16),
    (torch.int32, -(2**31), 2**31 - 1, torch.float32),
])
def test_quantize_per_tensor(qdtype, qmin, qmax, xdtype):
    torch.manual_seed(5)
    # half-way values (k + 0.5) * scale exercise round half to even; large ones clamp
    x = torch.cat([torch.randn(40) * 3, torch.arange(-6, 6) * 0.25 + 0.125,
                   torch.tensor([1e4, -1e4])]).to(xdtype)
    scale, zp = 0.25, 3

    def fn(x, s, z):
        q = qd.quantize_per_tensor(x, scale, zp, qmin, qmax, qdtype)
        qt = qd.quantize_per_tensor.tensor(x, s, z, qmin, qmax, qdtype)
        return (q, qd.dequantize_per_tensor(q, scale, zp, qmin, qmax, qdtype), qt,
                qd.dequantize_per_tensor.tensor(qt, s, z, qmin, qmax, qdtype,
                                                out_dtype=torch.float16))

    compare(fn, (x, torch.tensor([0.1]), torch.tensor([-2])),
            expect_kernel="quantized_decomposed::quantize_per_tensor.Tensor_out")
    names = kernel_names(read_program(_last_buffer[0]).execution_plan[0])
    for k in ("quantize_per_tensor.out", "dequantize_per_tensor.out",
              "dequantize_per_tensor.Tensor_out"):
        assert "quantized_decomposed::" + k in names


@pytest.mark.parametrize("sdtype", [torch.float32, torch.float64])
def test_quantize_per_channel_and_group(sdtype):
    torch.manual_seed(6)
    x = torch.randn(4, 6, 5)
    scales = (torch.rand(6) * 0.1 + 0.01).to(sdtype)
    zps = torch.randint(-10, 10, (6,))

    w = torch.randn(6, 16)
    gs = (torch.rand(6, 4) * 0.1 + 0.01).to(sdtype)
    gz = torch.randint(-8, 8, (6, 4), dtype=torch.int32)

    def fn(x, s, z, w, gs, gz):
        q = qd.quantize_per_channel(x, s, z, 1, -128, 127, torch.int8)
        qg = qd.quantize_per_channel_group(w, gs, gz, -8, 7, torch.int8, 4)
        return (q, qd.dequantize_per_channel(q, s, z, 1, -128, 127, torch.int8),
                qd.dequantize_per_channel(q, s, None, -2, -128, 127, torch.int8), qg,
                qd.dequantize_per_channel_group(qg, gs, gz, -8, 7, torch.int8, 4, torch.float32))

    compare(fn, (x, scales, zps, w, gs, gz),
            expect_kernel="quantized_decomposed::quantize_per_channel_group.out")
    names = kernel_names(read_program(_last_buffer[0]).execution_plan[0])
    for k in ("quantize_per_channel.out", "dequantize_per_channel.out",
              "dequantize_per_channel_group.out"):
        assert "quantized_decomposed::" + k in names


@pytest.mark.parametrize("xdtype", [torch.float32, torch.float16, torch.bfloat16])
def test_per_token_and_choose_qparams(xdtype):
    torch.manual_seed(7)
    x = (torch.randn(2, 3, 8) * 2).to(xdtype)
    x[0, 0] = x[0, 0].abs()  # a token with no negative values

    def fn(x):
        s, z = qd.choose_qparams_per_token_asymmetric(x, torch.int8)
        q = qd.quantize_per_token(x, s, z, -128, 127, torch.int8)
        s1, z1 = qd.choose_qparams.tensor(x, 0, 255, 1e-6, torch.uint8)
        return (s, z, q, qd.dequantize_per_token(q, s, z, -128, 127, torch.int8, xdtype), s1, z1)

    compare(fn, (x,), expect_kernel="quantized_decomposed::choose_qparams.Tensor_out")
    names = kernel_names(read_program(_last_buffer[0]).execution_plan[0])
    for k in ("choose_qparams_per_token_asymmetric.out", "quantize_per_token.out",
              "dequantize_per_token.out"):
        assert "quantized_decomposed::" + k in names


# --------------------------------------------------------------------------- #
# A pt2e-quantized model, through both exporters
# --------------------------------------------------------------------------- #


class _Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.fc = torch.nn.Linear(8 * 6 * 6, 10)

    def forward(self, x):
        return self.fc(torch.relu(self.conv(x)).flatten(1))


def test_pt2e_model_both_exporters():
    per_channel = True  # per-tensor activations, per-channel weights
    quantizer_mod = pytest.importorskip(
        "executorch.backends.xnnpack.quantizer.xnnpack_quantizer")
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    from executorch.exir import to_edge as ref_to_edge

    from ember import ExecutorchBackendConfig, to_edge

    torch.manual_seed(8)
    model = _Net().eval()
    x = torch.randn(2, 3, 6, 6)
    quantizer = quantizer_mod.XNNPACKQuantizer().set_global(
        quantizer_mod.get_symmetric_quantization_config(is_per_channel=per_channel))
    prepared = prepare_pt2e(torch.export.export(model, (x,)).module(), quantizer)
    for _ in range(4):
        prepared(torch.randn(2, 3, 6, 6))
    converted = convert_pt2e(prepared)
    expected = converted(x)
    # one quantization step of the output
    step = float((expected.max() - expected.min()) / 255)

    ours = to_edge(torch.export.export(converted, (x,))).to_executorch(ExecutorchBackendConfig())
    ref = ref_to_edge(torch.export.export(converted, (x,))).to_executorch()
    for buf in (ours.buffer, ref.buffer):
        names = kernel_names(read_program(buf).execution_plan[0])
        assert "quantized_decomposed::quantize_per_tensor.out" in names
        assert "quantized_decomposed::dequantize_per_channel.out" in names
        out = runtime.Runtime.get().load_program(buf).load_method("forward").execute([x])[0]
        torch.testing.assert_close(out, expected, rtol=0, atol=step)


def test_quantized_ops_module_defines_only_missing_overloads():
    from ember import quantized_ops

    for name in quantized_ops.OUT_VARIANTS:
        base, overload = name.split(".")
        assert overload in getattr(qd, base).overloads(), name
    # the reference package's native library defines the rest (when installed)
    assert set(quantized_ops.DEFINED) <= set(quantized_ops.OUT_VARIANTS)

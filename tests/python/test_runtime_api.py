"""The ember.runtime API beyond the fixtures: inputs and outputs, scalars,
unplanned tensors, kernel names, threads, lifetimes, and ember-run on PATH."""

from __future__ import annotations

import gc
import os
import shutil
import subprocess
import sys
import threading

import numpy as np
import pytest
import torch

from ember import runtime as ember_runtime
from ember.runtime import (EmberError, Runtime, Status, dtype_from_ember, dtype_to_ember,
                           has_kernel, kernel_names)
from runtime_util import assert_output, fixture, load_npy

MLP_IN = "mlp/forward.run0.in0.npy"
MLP_OUT = "mlp/forward.run0.out0.npy"


@pytest.fixture(scope="module")
def mlp():
    return Runtime.get().load_program(fixture("mlp.pte"))


# ---------------------------------------------------------------------------
# Kernels
# ---------------------------------------------------------------------------

def test_kernel_names() -> None:
    names = kernel_names()
    assert names == sorted(set(names))
    assert len(names) > 100
    for key in ("aten::add.out", "aten::mm.out", "aten::addmm.out", "aten::relu.out"):
        assert key in names
        assert has_kernel(key)
    assert all("::" in n for n in names), [n for n in names if "::" not in n]
    assert not has_kernel("aten::no_such_op.out")
    assert not has_kernel("aten::add")  # the functional overload has no kernel
    assert not has_kernel("")
    assert all(has_kernel(n) for n in names)


def test_operator_registry() -> None:
    registry = Runtime.get().operator_registry
    assert registry.operator_names == frozenset(kernel_names())
    assert registry.has("aten::mm.out")
    assert Runtime.get() is Runtime.get()


# ---------------------------------------------------------------------------
# Metadata and objects
# ---------------------------------------------------------------------------

def test_metadata_contents(mlp) -> None:
    meta = mlp.metadata("forward")
    assert meta.name == "forward"
    (x,), (y,) = meta.inputs, meta.outputs
    assert (x.kind, x.dtype, x.sizes, x.dim_order, x.dynamism, x.planned, x.nbytes) == \
        ("tensor", torch.float32, (4, 16), (0, 1), "static", True, 4 * 16 * 4)
    assert (y.dtype, y.sizes, y.nbytes) == (torch.float32, (4, 8), 4 * 8 * 4)
    assert x.is_tensor and meta.input_tensor_meta(0) == x and meta.output_tensor_meta(0) == y
    assert len(meta.planned_buffer_sizes) == 1 and meta.planned_buffer_sizes[0] >= x.nbytes + y.nbytes
    assert meta.memory_planned_buffer_size(0) == meta.planned_buffer_sizes[0]
    assert set(meta.operators) == {"aten::permute_copy.out", "aten::addmm.out", "aten::relu.out"}
    assert meta.num_instructions > 0 and meta.num_values > 0 and meta.num_delegates == 0
    method = mlp.load_method("forward")
    assert method.metadata == meta and method.name == "forward"
    assert "forward" in repr(mlp) and "forward" in repr(method)
    assert mlp.nbytes == os.path.getsize(fixture("mlp.pte"))


def test_dtype_codes() -> None:
    for dt, code in ((torch.uint8, 0), (torch.int64, 4), (torch.float16, 5), (torch.float32, 6),
                     (torch.bool, 11), (torch.bfloat16, 15)):
        assert dtype_to_ember(dt) == code and dtype_from_ember(code) == dt
    with pytest.raises(TypeError):
        dtype_to_ember(torch.complex64)
    with pytest.raises(TypeError):
        dtype_from_ember(99)


def test_method_outlives_program() -> None:
    program = Runtime.get().load_program(fixture("mlp.pte"))
    method = program.load_method("forward")
    del program
    gc.collect()
    (out,) = method.execute([load_npy(MLP_IN)])
    assert_output(out, load_npy(MLP_OUT), "after the program was dropped")


# ---------------------------------------------------------------------------
# Inputs and outputs
# ---------------------------------------------------------------------------

def test_input_kinds(mlp) -> None:
    """Non-contiguous, grad-requiring tensors and numpy arrays all work."""
    method = mlp.load_method("forward")
    x = load_npy(MLP_IN)
    expected = load_npy(MLP_OUT)
    transposed = x.t().contiguous().t()
    assert not transposed.is_contiguous()
    for variant in (x, transposed, x.clone().requires_grad_(True), x.numpy(), [x][0]):
        (out,) = method.execute([variant])
        assert_output(out, expected, type(variant).__name__)
    (out,) = method.execute(x)  # a lone tensor is taken as the one input
    assert_output(out, expected, "lone tensor")


def test_outputs_are_copies(mlp) -> None:
    method = mlp.load_method("forward")
    x = load_npy(MLP_IN)
    (a,) = method.execute([x])
    kept = a.clone()
    (b,) = method.execute([x * 2])
    assert torch.equal(a, kept)          # the second run did not touch the first output
    a.fill_(123.0)                       # writing an output does not reach the method
    (c,) = method.execute([x])
    assert torch.equal(c, kept)
    assert not torch.equal(b, kept)
    assert a.data_ptr() != c.data_ptr()


@pytest.fixture(scope="module")
def reference_exporter():
    exir = pytest.importorskip("executorch.exir")
    return exir


class _Scalars(torch.nn.Module):
    def forward(self, x: torch.Tensor, n: int, s: float, flag: bool) -> torch.Tensor:
        return x * n + s if flag else x


class _Affine(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.lin = torch.nn.Linear(5, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.lin(x))


def test_scalar_inputs(reference_exporter) -> None:
    """Specialized int / float / bool arguments are Int, Double and Bool inputs."""
    x = torch.randn(2, 3)
    ep = torch.export.export(_Scalars(), (x, 3, 0.5, True))
    buffer = reference_exporter.to_edge(ep).to_executorch().buffer
    program = Runtime.get().load_program(buffer)
    kinds = [v.kind for v in program.metadata("forward").inputs]
    assert kinds == ["tensor", "int", "double", "bool"]
    method = program.load_method("forward")
    expected = x * 3 + 0.5
    (out,) = method.execute([x, 3, 0.5, True])
    assert_output(out, expected, "scalars")
    (out,) = method.execute([x, np.int64(3), 1, torch.tensor(True)])  # int for a double, 0-d tensor for a bool
    assert out.shape == x.shape
    for bad, i in (([x, 3.0, 0.5, True], 1), ([x, 3, "0.5", True], 2), ([x, 3, 0.5, 1], 3),
                   ([3, 3, 0.5, True], 0), ([x, x, 0.5, True], 1)):
        with pytest.raises((EmberError, TypeError)) as e:
            method.execute(bad)
        if isinstance(e.value, EmberError):
            assert e.value.status == Status.TYPE_MISMATCH, e.value
            assert f"input {i}" in str(e.value)


def test_unplanned_inputs_and_outputs(reference_exporter) -> None:
    """Inputs and outputs left out of memory planning are bound by the bindings:
    inputs in place (copied when read-only or misaligned), outputs in buffers the
    method owns."""
    from executorch.exir.passes import MemoryPlanningPass

    model = _Affine().eval()
    x = torch.randn(4, 5)
    ep = torch.export.export(model, (x,))
    config = reference_exporter.ExecutorchBackendConfig(
        memory_planning_pass=MemoryPlanningPass(alloc_graph_input=False, alloc_graph_output=False))
    buffer = reference_exporter.to_edge(ep).to_executorch(config).buffer
    program = Runtime.get().load_program(buffer)
    meta = program.metadata("forward")
    assert not meta.inputs[0].planned and not meta.outputs[0].planned
    method = program.load_method("forward")
    with torch.no_grad():
        expected = model(x)
    raw = x.numpy().tobytes()
    readonly = np.frombuffer(raw, dtype=np.float32).reshape(4, 5)
    misaligned = np.frombuffer(b"\0" + raw, dtype=np.float32, offset=1).reshape(4, 5)
    assert not readonly.flags.writeable and not misaligned.flags.aligned
    outs = []
    for variant in (x, readonly, misaligned, x.clone()):
        (out,) = method.execute([variant])
        assert_output(out, expected, "unplanned")
        outs.append(out)
    assert len({o.data_ptr() for o in outs}) == len(outs)


# ---------------------------------------------------------------------------
# Threads
# ---------------------------------------------------------------------------

def test_one_method_per_thread(mlp) -> None:
    x = load_npy(MLP_IN)
    expected = load_npy(MLP_OUT)
    errors = []

    def worker() -> None:
        try:
            method = mlp.load_method("forward")
            for _ in range(50):
                (out,) = method.execute([x])
                assert torch.equal(out, expected) or torch.allclose(out, expected, rtol=1e-5, atol=1e-6)
        except BaseException as e:  # collected and re-raised below
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_shared_method_never_races(mlp) -> None:
    """Two threads on one method: each call either runs alone or is refused."""
    method = mlp.load_method("forward")
    x = load_npy(MLP_IN)
    expected = load_npy(MLP_OUT)
    problems = []

    def worker() -> None:
        for _ in range(100):
            try:
                (out,) = method.execute([x])
            except EmberError as e:
                if e.status != Status.INVALID_STATE:
                    problems.append(e)
                continue
            if not torch.allclose(out, expected, rtol=1e-5, atol=1e-6):
                problems.append("wrong output")

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not problems, problems[:3]


# ---------------------------------------------------------------------------
# ember-run in the environment
# ---------------------------------------------------------------------------

def test_ember_run_is_on_the_venv_path(tmp_path) -> None:
    bindir = os.path.dirname(sys.executable)
    exe = shutil.which("ember-run", path=bindir)
    assert exe is not None, f"ember-run is not in {bindir} (pip install -e . puts it there)"
    res = subprocess.run([exe, fixture("mlp.pte"), "--input", fixture(MLP_IN),
                          "--output-dir", str(tmp_path), "--iterations", "2"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert "output 0" in res.stdout
    got = torch.from_numpy(np.load(tmp_path / "out0.npy"))
    assert_output(got, load_npy(MLP_OUT), "ember-run")


def test_module_exports() -> None:
    for name in ember_runtime.__all__:
        assert hasattr(ember_runtime, name), name
    assert issubclass(EmberError, RuntimeError)


def test_manual_seed_repeats_random_kernels() -> None:
    import ember.runtime as rt
    from aot_util import export

    class Noise(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + torch.rand(3, 4)

    prog = export(Noise(), (torch.zeros(3, 4),))
    method = rt.Runtime.get().load_program(prog.buffer).load_method("forward")
    rt.manual_seed(7)
    (a,) = method.execute([torch.zeros(3, 4)])
    (b,) = method.execute([torch.zeros(3, 4)])
    rt.manual_seed(7)
    (c,) = method.execute([torch.zeros(3, 4)])
    assert torch.equal(a, c) and not torch.equal(a, b)
    assert bool(((a >= 0) & (a < 1)).all())


def test_channels_last_inputs_are_laid_out_in_the_programs_dim_order() -> None:
    import ember.runtime as rt
    from aot_util import export

    class Conv(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.relu(self.conv(x)) + 1.0

    model = Conv().eval()
    x = torch.randn(2, 3, 5, 6).to(memory_format=torch.channels_last)
    prog = export(model, (x,))
    method = rt.Runtime.get().load_program(prog.buffer).load_method("forward")
    assert method.metadata.inputs[0].dim_order == (0, 2, 3, 1)
    with torch.no_grad():
        want = model(x)
    for given in (x, x.contiguous(), x.contiguous().numpy()):
        (out,) = method.execute([given])
        torch.testing.assert_close(out, want, rtol=1e-5, atol=1e-5)

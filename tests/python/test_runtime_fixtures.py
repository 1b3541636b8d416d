"""ember.runtime runs every reference fixture and matches the reference outputs.

The fixtures (tests/fixtures/, made by the reference ExecuTorch exporter, with
expected outputs from its runtime) are the same ones the C tests run; here they go
through the Python bindings: load, metadata, execute, outputs as torch tensors.
"""

from __future__ import annotations

import pathlib

import numpy as np
import pytest
import torch

from ember.runtime import EmberError, Runtime, Status, dtype_to_ember, has_kernel
from runtime_util import assert_output, fixture, load_npy, manifest_cases

CASES = manifest_cases()


def _load(source: str, path: str):
    if source == "path":
        return Runtime.get().load_program(path)
    if source == "pathlib":
        return Runtime.get().load_program(pathlib.Path(path))
    data = pathlib.Path(path).read_bytes()
    if source == "bytearray":
        return Runtime.get().load_program(bytearray(data))
    if source == "memoryview":
        return Runtime.get().load_program(memoryview(data))
    if source == "file":
        with open(path, "rb") as f:
            return Runtime.get().load_program(f)
    return Runtime.get().load_program(data)


def test_manifest_has_cases() -> None:
    names = {c["name"] for c in CASES}
    assert {"mlp", "cnn", "transformer", "mutable_buffer", "two_methods_forward",
            "two_methods_decode", "cond"} <= names


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_fixture_case(case) -> None:
    """All runs of a case in order, on one loaded method (state carries over).
    Cases whose weights live in .ptd files load them as data files."""
    program = Runtime.get().load_program(fixture(case["program"]),
                                         data_files=[fixture(d) for d in case.get("data", [])])
    assert case["method"] in program.method_names
    method = program.load_method(case["method"])
    for r, run in enumerate(case["runs"]):
        inputs = [load_npy(p) for p in run["inputs"]]
        outputs = method.execute(inputs)
        assert len(outputs) == len(run["outputs"]), f"run {r}: output count"
        for o, (got, rel) in enumerate(zip(outputs, run["outputs"])):
            assert_output(got, load_npy(rel), f"{case['name']} run {r} output {o}",
                          atol=case.get("atol"))


@pytest.mark.parametrize("source", ["path", "pathlib", "bytes", "bytearray", "memoryview", "file"])
def test_load_sources(source) -> None:
    """A program loads from a path, bytes-like data or a file object alike."""
    program = _load(source, fixture("mlp.pte"))
    x = load_npy("mlp/forward.run0.in0.npy")
    (out,) = program.load_method("forward").execute([x])
    assert_output(out, load_npy("mlp/forward.run0.out0.npy"), source)


def test_program_owns_its_bytes() -> None:
    """The caller may overwrite its buffer after load_program."""
    data = bytearray(pathlib.Path(fixture("mlp.pte")).read_bytes())
    program = Runtime.get().load_program(data)
    data[:] = b"\0" * len(data)
    method = program.load_method("forward")
    (out,) = method.execute([load_npy("mlp/forward.run0.in0.npy")])
    assert_output(out, load_npy("mlp/forward.run0.out0.npy"), "after overwrite")


def test_mutable_state_persists_per_method() -> None:
    case = next(c for c in CASES if c["name"] == "mutable_buffer")
    runs = case["runs"]
    program = Runtime.get().load_program(fixture(case["program"]))
    first = program.load_method("forward")
    x0 = load_npy(runs[0]["inputs"][0])
    (a,) = first.execute([x0])
    assert_output(a, load_npy(runs[0]["outputs"][0]), "first call")
    # The same input again: the buffers moved on, so the output differs.
    (b,) = first.execute([x0])
    assert not torch.allclose(a, b)
    # A second loaded method starts from the program's initial state.
    second = program.load_method("forward")
    (c,) = second.execute([x0])
    assert_output(c, load_npy(runs[0]["outputs"][0]), "fresh method")
    # ... and loading it did not disturb the first one's state.
    (d,) = first.execute([load_npy(runs[2]["inputs"][0])])
    assert d.shape == a.shape


def test_dynamic_shapes_follow_the_input() -> None:
    program = Runtime.get().load_program(fixture("transformer.pte"))
    meta = program.metadata("forward")
    (inp,), (out,) = meta.inputs, meta.outputs
    assert inp.dynamism == "dynamic_bound" and inp.sizes == (1, 16, 32)
    assert out.dynamism == "dynamic_bound" and out.sizes == (1, 16, 32)
    method = program.load_method("forward")
    torch.manual_seed(0)
    for t in (16, 1, 7, 3, 16):
        (y,) = method.execute([torch.randn(1, t, 32)])
        assert tuple(y.shape) == (1, t, 32)
        assert torch.isfinite(y).all()
    with pytest.raises(EmberError) as e:
        method.execute([torch.randn(1, 17, 32)])
    assert e.value.status == Status.SHAPE_MISMATCH
    # A rejected input leaves the method usable.
    (y,) = method.execute([load_npy("transformer/forward.run1.in0.npy")])
    assert_output(y, load_npy("transformer/forward.run1.out0.npy"), "after rejection")


def test_two_methods_in_one_program() -> None:
    program = Runtime.get().load_program(fixture("two_methods.pte"))
    assert program.method_names == {"forward", "decode"}
    fwd, dec = program.load_method("forward"), program.load_method("decode")
    (y,) = fwd.execute([load_npy("two_methods_forward/forward.run0.in0.npy")])
    (z,) = dec.execute([load_npy("two_methods_decode/decode.run0.in0.npy")])
    assert_output(y, load_npy("two_methods_forward/forward.run0.out0.npy"), "forward")
    assert_output(z, load_npy("two_methods_decode/decode.run0.out0.npy"), "decode")


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_metadata_matches_fixture(case) -> None:
    """Inputs and outputs in the metadata agree with the fixture's arrays, and
    the runtime has a kernel for every operator the program names."""
    meta = Runtime.get().load_program(fixture(case["program"])).metadata(case["method"])
    assert meta.name == case["method"]
    run = case["runs"][0]
    assert meta.num_inputs() == len(run["inputs"])
    assert meta.num_outputs() == len(run["outputs"])
    for vm, rel in zip(meta.inputs + meta.outputs, run["inputs"] + run["outputs"]):
        arr = np.load(fixture(rel))
        assert vm.kind == "tensor" and vm.dtype == torch.from_numpy(arr).dtype
        assert len(vm.sizes) == arr.ndim and len(vm.dim_order) == arr.ndim
        assert all(s <= b for s, b in zip(arr.shape, vm.sizes)), (arr.shape, vm.sizes)
        if vm.dynamism == "static":
            assert tuple(vm.sizes) == arr.shape
        assert vm.nbytes == int(np.prod(vm.sizes)) * arr.itemsize
    assert meta.planned_buffer_sizes and all(b > 0 for b in meta.planned_buffer_sizes)
    assert meta.num_memory_planned_buffers() == len(meta.planned_buffer_sizes)
    # a program lowered whole to a delegate names no operator
    assert meta.operators or meta.num_delegates > 0
    assert all(has_kernel(op) for op in meta.operators), meta.operators
    assert meta.num_instructions >= len(meta.operators) - 1
    assert (meta.num_delegates > 0) == ("backend" in case)


def test_metadata_matches_reference_runtime() -> None:
    """Sizes, dtypes, bytes and planning agree with executorch.runtime's MethodMeta."""
    et_runtime = pytest.importorskip("executorch.runtime")
    for case in CASES:
        path = fixture(case["program"])
        ours = Runtime.get().load_program(path).metadata(case["method"])
        ref = et_runtime.Runtime.get().load_program(path).metadata(case["method"])
        assert ours.num_inputs() == ref.num_inputs()
        assert ours.num_outputs() == ref.num_outputs()
        pairs = [(ours.inputs[i], ref.input_tensor_meta(i)) for i in range(ref.num_inputs())]
        pairs += [(ours.outputs[i], ref.output_tensor_meta(i)) for i in range(ref.num_outputs())]
        for mine, theirs in pairs:
            assert mine.sizes == tuple(theirs.sizes()), case["name"]
            assert mine.nbytes == theirs.nbytes(), case["name"]
            assert mine.planned == theirs.is_memory_planned(), case["name"]
            assert dtype_to_ember(mine.dtype) == int(theirs.dtype()), case["name"]

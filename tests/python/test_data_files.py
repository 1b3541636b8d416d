"""Weights in `.ptd` data files, both directions.

Programs that keep their weights outside themselves, the two ways ExecuTorch
does it: constant tensors through `ExecutorchBackendConfig(external_constants=...)`
(EXTERNAL tensors found by fully qualified name), and an XNNPACK delegate's
weights through `delegate_external_constants_pass_unlifted` (named data keys
in the data file). Each model is exported by the reference exporter and by
ember; every program runs in ember's runtime and in the reference runtime
with its data file, and must match eager. A program without its data file,
or with the wrong or a corrupted one, must fail with a clean EmberError.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, Optional, Tuple

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

ember_runtime = pytest.importorskip("ember.runtime")
pytest.importorskip("executorch.backends.xnnpack")

from ember.runtime import EmberError, Runtime, Status  # noqa: E402

RTOL = ATOL = 1e-4


class Mlp(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 4)
        self.register_buffer("scale", torch.linspace(0.5, 1.5, 4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.relu(self.fc1(x))) * self.scale


class ConvNet(nn.Module):
    """Conv + BatchNorm (folded into the XNNPACK filter) + Linear in the delegate,
    a LayerNorm on portable kernels after it."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4, 6)
        self.ln = nn.LayerNorm(6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.relu(self.bn(self.conv(x))).mean(dim=(2, 3))
        return self.ln(self.fc(h))


def _models() -> Tuple[nn.Module, nn.Module]:
    torch.manual_seed(3)
    net = ConvNet().eval()
    with torch.no_grad():
        net.bn.running_mean.uniform_(-0.3, 0.3)
        net.bn.running_var.uniform_(0.5, 2.0)
        net.ln.weight.uniform_(0.5, 1.5)
        net.ln.bias.uniform_(-0.5, 0.5)
    return Mlp().eval(), net


MLP, NET = _models()
MLP_X = (torch.randn(2, 8),)
NET_X = (torch.randn(1, 3, 6, 6),)


def export(model: nn.Module, args: tuple, by: str, xnnpack: bool,
           external: Any = True, delegate_tag: Optional[str] = None) -> Any:
    """The program manager, exported by the reference exporter or by ember, with
    constants sent to data files by `external` and (for XNNPACK) the delegate's
    weights tagged `delegate_tag`."""
    ep = torch.export.export(model, args)
    if delegate_tag is not None:
        if by == "reference":
            from executorch.exir.passes.external_constants_pass import (
                delegate_external_constants_pass_unlifted)
        else:
            from ember.passes.external_constants import delegate_external_constants_pass_unlifted
        mod = ep.module()
        delegate_external_constants_pass_unlifted(module=mod, gen_tag_fn=lambda n: delegate_tag)
        ep = torch.export.export(mod, args)
    if by == "reference":
        from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
        from executorch.exir import ExecutorchBackendConfig, to_edge, to_edge_transform_and_lower
    else:
        from ember import ExecutorchBackendConfig, to_edge, to_edge_transform_and_lower
        from ember.backends.xnnpack import XnnpackPartitioner
    edge = to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()]) if xnnpack \
        else to_edge(ep)
    return edge.to_executorch(ExecutorchBackendConfig(external_constants=external))


def data_files(et: Any) -> Dict[str, bytes]:
    """Tag -> bytes of each data file (the reference's manager keeps them in
    `_tensor_data`; ember's has `data_files`, and `_tensor_data` too)."""
    files = et.data_files if hasattr(et, "data_files") else et._tensor_data
    return {tag: bytes(b) for tag, b in files.items()}


def write(tmp_path: Any, et: Any) -> Tuple[str, Dict[str, str]]:
    pte = os.path.join(tmp_path, "model.pte")
    with open(pte, "wb") as f:
        f.write(et.buffer)
    et.write_tensor_data_to_file(str(tmp_path))
    return pte, {tag: os.path.join(tmp_path, f"{tag}.ptd") for tag in data_files(et)}


def run_ember(pte: Any, ptds: Any, args: tuple) -> torch.Tensor:
    program = Runtime.get().load_program(pte, data_files=list(ptds))
    return program.load_method("forward").execute(list(args))[0]


def run_reference(pte: str, ptd: str, args: tuple) -> torch.Tensor:
    from executorch.runtime import Runtime as ReferenceRuntime

    program = ReferenceRuntime.get().load_program(pte, data_path=ptd)
    return program.load_method("forward").execute(list(args))[0]


def close(got: torch.Tensor, model: nn.Module, args: tuple, what: str) -> None:
    with torch.no_grad():
        want = model(*args)
    torch.testing.assert_close(got, want, rtol=RTOL, atol=ATOL, msg=lambda m: f"{what}: {m}")


CASES = {
    # name: (model, args, xnnpack, external_constants, delegate tag, data file tags)
    "mlp": (MLP, MLP_X, False, True, None, {"_default_external_constant"}),
    "mlp_named": (MLP, MLP_X, False, lambda n: "weights", None, {"weights"}),
    "xnnpack": (NET, NET_X, True, lambda n: "model", "model", {"model"}),
    "xnnpack_two_files": (NET, NET_X, True, lambda n: "constants", "delegate",
                          {"constants", "delegate"}),
}


@pytest.mark.parametrize("by", ["reference", "ember"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_runs_everywhere(tmp_path: Any, name: str, by: str) -> None:
    """Exported by `by`: ember and the reference runtime run it with its data
    files and match eager; the program itself holds no weights."""
    model, args, xnnpack, external, tag, tags = CASES[name]
    et = export(model, args, by, xnnpack, external, tag)
    pte, ptds = write(tmp_path, et)
    assert set(ptds) == tags
    got = run_ember(pte, ptds.values(), args)
    close(got, model, args, f"{by} program in ember")
    if len(ptds) == 1:  # executorch.runtime takes one data file
        got = run_reference(pte, next(iter(ptds.values())), args)
        close(got, model, args, f"{by} program in the reference runtime")
    # The weights left the program: no named data, nothing in the constant segment.
    from executorch.exir._serialize._program import deserialize_pte_binary

    prog = deserialize_pte_binary(et.buffer).program
    assert not prog.named_data
    assert len(prog.constant_segment.offsets) <= 1
    externals = [v.val for v in prog.execution_plan[0].values
                 if type(v.val).__name__ == "Tensor" and v.val.extra_tensor_info is not None
                 and int(v.val.extra_tensor_info.location) == 1]
    assert externals, "no EXTERNAL tensors"


@pytest.mark.parametrize("name", ["mlp", "xnnpack"])
def test_same_data_files_as_reference(name: str) -> None:
    """ember writes the external tensors the reference writes for the same model:
    the same names, layouts and bytes (the file layout may differ), as the
    reference's own reader sees them; ember leaves out constants nothing reads
    (a batch norm's num_batches_tracked). Delegate blobs are keyed by the hash
    of each backend's own packing, so only their form is compared."""
    from executorch.exir._serialize._cord import Cord
    from executorch.extension.flat_tensor.serialize.serialize import FlatTensorSerializer

    model, args, xnnpack, external, tag, _ = CASES[name]
    ours = data_files(export(model, args, "ember", xnnpack, external, tag))
    theirs = data_files(export(model, args, "reference", xnnpack, external, tag))
    assert set(ours) == set(theirs)
    for t in ours:
        a = FlatTensorSerializer().deserialize(Cord(ours[t]))
        b = FlatTensorSerializer().deserialize(Cord(theirs[t]))
        tensors_a = {k for k, e in a.named_data.items() if e.tensor_layout is not None}
        tensors_b = {k for k, e in b.named_data.items() if e.tensor_layout is not None}
        assert tensors_a, t
        assert tensors_a <= tensors_b, (t, tensors_a - tensors_b)
        assert all(k.endswith("num_batches_tracked") for k in tensors_b - tensors_a), t
        for key in tensors_a:
            mine, entry = a.named_data[key], b.named_data[key]
            assert bytes(a.buffers[mine.buffer_index]) == bytes(b.buffers[entry.buffer_index]), key
            assert int(mine.tensor_layout.scalar_type) == int(entry.tensor_layout.scalar_type)
            assert list(mine.tensor_layout.sizes) == list(entry.tensor_layout.sizes)
            assert list(mine.tensor_layout.dim_order) == list(entry.tensor_layout.dim_order)
        blobs_a = set(a.named_data) - tensors_a
        blobs_b = set(b.named_data) - tensors_b
        assert bool(blobs_a) == bool(blobs_b) == xnnpack, t
        assert all(len(k) == 64 for k in blobs_a | blobs_b), t


def test_programs_and_data_files_mix(tmp_path: Any) -> None:
    """A reference program runs in ember with ember's data file, and the other way round."""
    ours = export(MLP, MLP_X, "ember", False)
    theirs = export(MLP, MLP_X, "reference", False)
    ptd = "_default_external_constant"
    got = run_ember(theirs.buffer, [data_files(ours)[ptd]], MLP_X)
    close(got, MLP, MLP_X, "reference program, ember data file")
    got = run_ember(ours.buffer, [data_files(theirs)[ptd]], MLP_X)
    close(got, MLP, MLP_X, "ember program, reference data file")


def test_selected_constants(tmp_path: Any) -> None:
    """A tag function keeps the constants it returns None for in the program."""
    et = export(MLP, MLP_X, "ember", False,
                external=lambda n: "fc1" if "fc1" in n.name else None)
    (ptd,) = data_files(et).values()
    dm = Runtime.get().load_data_map(ptd)
    assert sorted(dm.keys()) == ["fc1.bias", "fc1.weight"]
    info = dm.info("fc1.weight")
    assert info["dtype"] == torch.float32 and info["sizes"] == (16, 8)
    assert info["dim_order"] == (0, 1) and info["nbytes"] == info["size"] == 16 * 8 * 4
    assert dm.load("fc1.bias") == MLP.fc1.bias.detach().numpy().tobytes()
    close(run_ember(et.buffer, [ptd], MLP_X), MLP, MLP_X, "fc1 external, the rest inside")


def _ember_files(name: str) -> Tuple[bytes, Dict[str, bytes]]:
    model, args, xnnpack, external, tag, _ = CASES[name]
    et = export(model, args, "ember", xnnpack, external, tag)
    return et.buffer, data_files(et)


def test_missing_data_file() -> None:
    pte, files = _ember_files("mlp")
    program = Runtime.get().load_program(pte)  # the program itself is valid
    with pytest.raises(EmberError) as e:
        program.load_method("forward")
    assert e.value.status == Status.NOT_FOUND
    assert "fc1.weight" in str(e.value) and "data map" in str(e.value)


def test_missing_delegate_data() -> None:
    """The delegate's weights in a file of their own, left out: its init names the key."""
    pte, files = _ember_files("xnnpack_two_files")
    program = Runtime.get().load_program(pte, data_files=[files["constants"]])
    with pytest.raises(EmberError) as e:
        program.load_method("forward")
    assert e.value.status == Status.NOT_FOUND
    assert "XnnpackBackend" in str(e.value)
    program = Runtime.get().load_program(pte, data_files=[files["delegate"]])
    with pytest.raises(EmberError, match="ln.weight") as e:
        program.load_method("forward")
    # Both, in either order.
    for order in (["constants", "delegate"], ["delegate", "constants"]):
        got = run_ember(pte, [files[t] for t in order], NET_X)
        close(got, NET, NET_X, f"data files {order}")


def test_mismatched_data_file() -> None:
    """Another model's data file with the same names but other shapes or dtypes."""
    pte, _ = _ember_files("mlp")

    class Wider(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc1 = nn.Linear(8, 32)
            self.fc2 = nn.Linear(32, 4)
            self.register_buffer("scale", torch.ones(4))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.fc2(self.fc1(x)) * self.scale

    (wider,) = data_files(export(Wider().eval(), MLP_X, "ember", False)).values()
    program = Runtime.get().load_program(pte, data_files=[wider])
    with pytest.raises(EmberError) as e:
        program.load_method("forward")
    assert e.value.status == Status.SHAPE_MISMATCH and "fc1.weight" in str(e.value)

    (doubles,) = data_files(export(Mlp().double().eval(), (MLP_X[0].double(),), "ember",
                                   False)).values()
    program = Runtime.get().load_program(pte, data_files=[doubles])
    with pytest.raises(EmberError) as e:
        program.load_method("forward")
    assert e.value.status == Status.TYPE_MISMATCH
    assert "float32 in the program but float64" in str(e.value)


def test_bad_data_files(tmp_path: Any) -> None:
    pte, files = _ember_files("mlp")
    (ptd,) = files.values()
    with pytest.raises(EmberError) as e:
        Runtime.get().load_program(pte, data_files=[pte])  # a program, not a data file
    assert e.value.status == Status.BAD_IDENTIFIER
    with pytest.raises(EmberError) as e:
        Runtime.get().load_program(pte, data_files=[ptd[: len(ptd) - 1]])
    assert e.value.status == Status.TRUNCATED
    with pytest.raises(EmberError) as e:
        Runtime.get().load_data_map(ptd[:30])
    assert e.value.status == Status.TRUNCATED
    with pytest.raises(FileNotFoundError):
        Runtime.get().load_program(pte, data_path=os.path.join(tmp_path, "nope.ptd"))
    with pytest.raises(TypeError):
        Runtime.get().load_program(pte, data_files=[12])
    # A data map can be opened once and given to several programs.
    dm = Runtime.get().load_data_map(ptd)
    for _ in range(2):
        close(run_ember(pte, [dm], MLP_X), MLP, MLP_X, "shared DataMap")


def test_external_planned_initial_contents(tmp_path: Any) -> None:
    """A memory-planned EXTERNAL tensor (the reference's external mutable
    weights) gets its starting contents from the data file, in ember and in
    the reference runtime alike; the state then evolves in planned memory.
    Neither exporter's public API writes one for a model without gradients,
    so the program is ember's export of a stateful module with that tensor
    marked EXTERNAL by hand."""
    from ember import schema as S
    from ember.flat_tensor import DataEntry, DataFile, TensorLayout, serialize_ptd
    from ember.serialize import serialize_pte

    class Acc(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("acc", torch.arange(4.0))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            self.acc.add_(x)
            return self.acc * 2

    et = export(Acc(), (torch.ones(4),), "ember", False, external=False)
    data = et.program_data
    marked = 0
    for v in data.program.execution_plan[0].values:
        t = v.val
        if isinstance(t, S.Tensor) and t.allocation_info is not None and t.data_buffer_idx > 0:
            t.extra_tensor_info = S.ExtraTensorInfo(fully_qualified_name="acc",
                                                    location=S.TensorDataLocation.EXTERNAL)
            t.data_buffer_idx = 0
            marked += 1
    assert marked == 1
    pte = os.path.join(tmp_path, "acc.pte")
    with open(pte, "wb") as f:
        f.write(serialize_pte(data))
    start = torch.tensor([10.0, 20.0, 30.0, 40.0])
    df = DataFile()
    df.add("acc", DataEntry(start.numpy().tobytes(), TensorLayout(6, (4,), (0,)), 16))
    ptd = os.path.join(tmp_path, "acc.ptd")
    with open(ptd, "wb") as f:
        f.write(serialize_ptd(df))
    from executorch.runtime import Runtime as ReferenceRuntime

    x = torch.ones(4)
    methods = {
        "ember": Runtime.get().load_program(pte, data_files=[ptd]).load_method("forward"),
        "reference": ReferenceRuntime.get().load_program(pte, data_path=ptd).load_method("forward"),
    }
    for who, method in methods.items():
        for k in (1, 2):
            (got,) = method.execute([x])
            torch.testing.assert_close(got, (start + k) * 2, msg=lambda m: f"{who} run {k}: {m}")
    with pytest.raises(EmberError, match="'acc'"):
        Runtime.get().load_program(pte).load_method("forward")

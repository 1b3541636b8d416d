"""Bundled programs (.bpte) in both directions with ExecuTorch.

- ember-written (ember.devtools.bundled_program) -> ember's runtime and
  ExecuTorch's runtime both pass every case; portable and XNNPACK-delegated.
- ExecuTorch-written (executorch.devtools.bundled_program) -> ember's runtime
  passes, and ember's reader gives back the same test cases.
- a wrong expected output fails in both, with ember's message naming the
  output, the element, the value got and the value expected.
- the AOT checks reject suites that do not fit the program.
- every truncation and every flipped byte of a small file ends in an error
  (or, for bytes that do not matter, a clean run), never a crash.
- `ember-run --bundled` prints pass/fail per case and its exit status says
  whether all passed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from typing import List, Tuple

import pytest
import torch
import torch.nn as nn
from torch.export import export

from ember.devtools.bundled_program import (BundledProgram, BundledProgramError, MethodTestCase,
                                           MethodTestSuite,
                                           deserialize_from_flatbuffer_to_bundled_program,
                                           serialize_from_bundled_program_to_flatbuffer)
from ember.flatbuffer import FlatbufferError
from ember.runtime import EmberError, Runtime, Status, is_bundled_program

RTOL, ATOL = 1e-5, 1e-6


class TwoOut(nn.Module):
    """Two inputs, two outputs of different shapes."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 6)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        h = torch.relu(self.fc(x)) + y
        return h, (x * 2.0).sum(-1)


class ConvNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.fc = nn.Linear(4, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.relu(self.conv(x)).mean((2, 3)))


def _model(kind: str) -> Tuple[nn.Module, List[tuple]]:
    torch.manual_seed(0)
    if kind == "conv":
        return ConvNet().eval(), [(torch.randn(1, 3, 8, 8),) for _ in range(3)]
    return TwoOut().eval(), [(torch.randn(2, 8), torch.randn(2, 6)) for _ in range(3)]


def _suites(model: nn.Module, runs: List[tuple], cls_case, cls_suite, wrong: bool = False):
    cases = []
    with torch.no_grad():
        for args in runs:
            out = model(*args)
            out = list(out) if isinstance(out, tuple) else [out]
            if wrong:
                out[0] = out[0].clone()
                out[0].view(-1)[1] += 0.5
            cases.append(cls_case(inputs=list(args), expected_outputs=out))
    return [cls_suite(method_name="forward", test_cases=cases)]


def ember_bundle(kind: str, delegated: bool, wrong: bool = False) -> bytes:
    from ember import to_edge, to_edge_transform_and_lower

    model, runs = _model(kind)
    ep = export(model, runs[0])
    if delegated:
        from ember.backends.xnnpack import XnnpackPartitioner
        prog = to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()]).to_executorch()
        assert any(p.delegates for p in prog.program.execution_plan)
    else:
        prog = to_edge(ep).to_executorch()
    bundled = BundledProgram(prog, _suites(model, runs, MethodTestCase, MethodTestSuite, wrong))
    return serialize_from_bundled_program_to_flatbuffer(bundled)


def et_bundle(kind: str, delegated: bool) -> Tuple[bytes, list]:
    from executorch.devtools.bundled_program.config import MethodTestCase as EtCase
    from executorch.devtools.bundled_program.config import MethodTestSuite as EtSuite
    from executorch.devtools.bundled_program.core import BundledProgram as EtBundled
    from executorch.devtools.bundled_program.serialize import \
        serialize_from_bundled_program_to_flatbuffer as et_serialize
    from executorch.exir import to_edge, to_edge_transform_and_lower

    model, runs = _model(kind)
    ep = export(model, runs[0])
    if delegated:
        from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
        prog = to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()]).to_executorch()
    else:
        prog = to_edge(ep).to_executorch()
    suites = _suites(model, runs, EtCase, EtSuite)
    return et_serialize(EtBundled(prog, suites)), suites


def et_verify(data: bytes, cases: int) -> None:
    from executorch.extension.pybindings.portable_lib import _load_bundled_program_from_buffer
    bundle = _load_bundled_program_from_buffer(data)
    for k in range(cases):
        bundle.verify_result_with_bundled_expected_output("forward", k, RTOL, ATOL)


CONFIGS = [("two_out", False), ("conv", False), ("two_out", True), ("conv", True)]
IDS = ["portable-two_out", "portable-conv", "xnnpack-two_out", "xnnpack-conv"]


@pytest.mark.parametrize("kind,delegated", CONFIGS, ids=IDS)
def test_ember_written_passes_in_ember_and_executorch(kind: str, delegated: bool) -> None:
    data = ember_bundle(kind, delegated)
    assert data[4:8] == b"BP08" and is_bundled_program(data)
    bundle = Runtime.get().load_bundled_program(data)
    assert bundle.version == 2
    assert bundle.method_test_suites == {"forward": 3}
    results = bundle.verify_all(RTOL, ATOL)
    assert len(results) == 3 and all(r.passed for r in results), results
    assert all(r.num_mismatches == 0 and r.max_abs_error <= ATOL for r in results)
    et_verify(data, 3)


@pytest.mark.parametrize("kind,delegated", CONFIGS, ids=IDS)
def test_executorch_written_passes_in_ember(kind: str, delegated: bool) -> None:
    data, suites = et_bundle(kind, delegated)
    results = Runtime.get().load_bundled_program(data).verify_all(RTOL, ATOL)
    assert len(results) == 3 and all(r.passed for r in results), results
    # ember's reader gives back the same cases.
    back = deserialize_from_flatbuffer_to_bundled_program(data)
    assert back.version == 2
    [suite] = back.method_test_suites
    assert suite.method_name == "forward" and len(suite.test_cases) == 3
    for got, want in zip(suite.test_cases, suites[0].test_cases):
        assert len(got.inputs) == len(want.inputs)
        for a, b in zip(got.inputs + got.expected_outputs, want.inputs + want.expected_outputs):
            assert a.dtype == b.dtype and torch.equal(a, b)


def test_round_trip_is_byte_identical() -> None:
    data = ember_bundle("two_out", False)
    back = deserialize_from_flatbuffer_to_bundled_program(data)
    assert serialize_from_bundled_program_to_flatbuffer(back) == data
    # The program inside is the .pte, unchanged, and runs on its own.
    program = Runtime.get().load_program(back.program_buffer)
    assert program.method_names == {"forward"}


@pytest.mark.parametrize("delegated", [False, True], ids=["portable", "xnnpack"])
def test_wrong_expected_output_fails_with_its_position(delegated: bool) -> None:
    data = ember_bundle("two_out", delegated, wrong=True)
    for r in Runtime.get().load_bundled_program(data).verify_all(RTOL, ATOL):
        assert not r.passed
        assert r.num_mismatches == 1 and r.first_output == 0 and r.first_element == 1
        assert "output 0 element 1: got " in r.message and ", expected " in r.message, r.message
        assert 0.49 < r.max_abs_error < 0.51
    # Loose enough, it passes.
    assert all(Runtime.get().load_bundled_program(data).verify_all(0.0, 0.6))
    with pytest.raises(Exception, match="(?i)mismatch|verification failed"):
        et_verify(data, 1)


def test_misuse_raises_ember_errors() -> None:
    bundle = Runtime.get().load_bundled_program(ember_bundle("two_out", False))
    with pytest.raises(EmberError) as e:
        bundle.verify("forward", 3)
    assert e.value.status == Status.INDEX_OUT_OF_RANGE
    with pytest.raises(EmberError) as e:
        bundle.verify("forward", 0, rtol=-1.0)
    assert e.value.status == Status.INVALID_ARGUMENT
    with pytest.raises(EmberError) as e:
        Runtime.get().load_bundled_program(b"\0" * 64)
    assert e.value.status == Status.BAD_IDENTIFIER


# ---------------------------------------------------------------------------
# AOT checks
# ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def two_out_program():
    from ember import to_edge
    model, runs = _model("two_out")
    return model, runs, to_edge(export(model, runs[0])).to_executorch()


def _one(inputs, outputs=None, method: str = "forward"):
    return [MethodTestSuite(method, [MethodTestCase(inputs, outputs)])]


def test_aot_checks_name_what_does_not_fit(two_out_program) -> None:
    model, runs, prog = two_out_program
    x, y = runs[0]
    out = list(model(x, y))
    with pytest.raises(BundledProgramError, match="method 'decode'.*does not have"):
        BundledProgram(prog, _one([x, y], out, method="decode"))
    with pytest.raises(BundledProgramError, match="has 2 inputs, 1 given"):
        BundledProgram(prog, _one([x], out))
    with pytest.raises(BundledProgramError, match="input 1 has dtype torch.float64"):
        BundledProgram(prog, _one([x, y.double()], out))
    with pytest.raises(BundledProgramError, match=r"input 0 has shape \(3, 8\)"):
        BundledProgram(prog, _one([torch.randn(3, 8), y], out))
    with pytest.raises(BundledProgramError, match="input 1 is a int, the method's is a tensor"):
        BundledProgram(prog, _one([x, 3], out))
    with pytest.raises(BundledProgramError, match="expected output 1 is a float"):
        BundledProgram(prog, _one([x, y], [out[0], 1.5]))
    with pytest.raises(BundledProgramError, match="has 2 outputs, 1 given"):
        BundledProgram(prog, _one([x, y], out[:1]))
    with pytest.raises(TypeError, match="str"):
        MethodTestCase([x, "y"])
    # A case without expected outputs only runs.
    data = serialize_from_bundled_program_to_flatbuffer(BundledProgram(prog, _one([x, y])))
    [r] = Runtime.get().load_bundled_program(data).verify_all()
    assert r.passed and r.num_outputs == 0


# ---------------------------------------------------------------------------
# Corrupted files
# ---------------------------------------------------------------------------

def _try_all(data: bytes) -> str:
    """'error' if loading or a case failed with EmberError, 'mismatch', or 'pass'."""
    try:
        bundle = Runtime.get().load_bundled_program(data)
        # A corrupted buffer size must not make the heap hand out gigabytes.
        for name in bundle.program.method_names:
            if any(n > (64 << 20) for n in bundle.program.metadata(name).planned_buffer_sizes):
                return "error"
        results = bundle.verify_all(RTOL, ATOL)
    except EmberError as e:
        assert e.message, "an error without a message"
        return "error"
    return "pass" if all(results) else "mismatch"


def test_truncated_at_every_position_fails_cleanly() -> None:
    data = ember_bundle("two_out", False)
    assert _try_all(data) == "pass"
    for n in range(len(data)):
        cut = data[:n]
        outcome = _try_all(cut)
        # Only dropping trailing zero padding may leave a working file.
        assert outcome == "error" or not any(data[n:]), (n, outcome)
        try:
            deserialize_from_flatbuffer_to_bundled_program(cut)
        except FlatbufferError:
            pass


def test_flipped_bytes_fail_cleanly() -> None:
    data = ember_bundle("two_out", False)
    outcomes = {"error": 0, "mismatch": 0, "pass": 0}
    for i in range(len(data)):
        bad = bytearray(data)
        bad[i] ^= 0xFF
        outcomes[_try_all(bytes(bad))] += 1
        try:
            deserialize_from_flatbuffer_to_bundled_program(bytes(bad))
        except (FlatbufferError, ValueError, RuntimeError, TypeError):
            pass
    # Flips in the expected data are caught as mismatches, in the structure as errors.
    assert outcomes["error"] > 0 and outcomes["mismatch"] > 0, outcomes


# ---------------------------------------------------------------------------
# ember-run --bundled
# ---------------------------------------------------------------------------

def _ember_run() -> str:
    exe = shutil.which("ember-run", path=os.path.dirname(sys.executable))
    assert exe is not None, "ember-run is not beside the interpreter (pip install -e .)"
    return exe


def test_ember_run_bundled(tmp_path) -> None:
    good = tmp_path / "good.bpte"
    bad = tmp_path / "bad.bpte"
    good.write_bytes(ember_bundle("two_out", True))
    bad.write_bytes(ember_bundle("two_out", False, wrong=True))
    res = subprocess.run([_ember_run(), "--bundled", str(good), "--atol", str(ATOL)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.count(": pass (") == 3 and "3 of 3 cases passed" in res.stdout, res.stdout
    assert "max abs error" in res.stdout and "max rel error" in res.stdout

    res = subprocess.run([_ember_run(), "--bundled", str(bad), "--atol", str(ATOL)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 1, res.stdout + res.stderr
    assert res.stdout.count(": FAIL") == 3 and "0 of 3 cases passed" in res.stdout
    assert "output 0 element 1: got " in res.stdout

    # --model on a bundled file runs the program inside it.
    res = subprocess.run([_ember_run(), "--model", str(good)], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0 and "(bundled, " in res.stdout and "output 1:" in res.stdout, \
        res.stdout + res.stderr

    # A corrupted file: one error line, exit status 1.
    broken = tmp_path / "broken.bpte"
    broken.write_bytes(good.read_bytes()[:200])
    res = subprocess.run([_ember_run(), "--bundled", str(broken)], capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 1 and res.stderr.startswith("ember-run: error: loading bundled")

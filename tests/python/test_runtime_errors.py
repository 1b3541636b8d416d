"""Bad input to ember.runtime raises EmberError with libember's status and message,
never crashes, and leaves loaded methods usable."""

from __future__ import annotations

import pathlib
import random

import pytest
import torch

from ember.runtime import EmberError, Runtime, Status
from runtime_util import assert_output, fixture, load_npy

MLP = pathlib.Path(fixture("mlp.pte")).read_bytes()
LOAD_ERRORS = {Status.TRUNCATED, Status.INVALID_PROGRAM, Status.BAD_IDENTIFIER}


def _raises(status: Status, fn, *args):
    with pytest.raises(EmberError) as e:
        fn(*args)
    err = e.value
    assert isinstance(err, RuntimeError)
    assert err.status == status, f"{err.status_name}: {err}"
    assert err.status_name == status.name
    assert err.message and err.message in str(err)
    return err


@pytest.mark.parametrize("size", [0, 4, 8, 32, 100, len(MLP) // 2, len(MLP) - 64])
def test_truncated_program(size) -> None:
    with pytest.raises(EmberError) as e:
        Runtime.get().load_program(MLP[:size])
    assert e.value.status in LOAD_ERRORS, e.value
    assert "loading program" in str(e.value)


def test_truncated_file(tmp_path) -> None:
    path = tmp_path / "truncated.pte"
    path.write_bytes(MLP[: len(MLP) // 3])
    err = _raises(Status.TRUNCATED, Runtime.get().load_program, path)
    assert "does not fit" in err.message or err.message


def test_not_a_program() -> None:
    _raises(Status.BAD_IDENTIFIER, Runtime.get().load_program, b"PK\3\4" + bytes(252))


def test_missing_file(tmp_path) -> None:
    with pytest.raises(FileNotFoundError):
        Runtime.get().load_program(tmp_path / "nope.pte")
    with pytest.raises(IsADirectoryError):
        Runtime.get().load_program(tmp_path)
    _raises(Status.TRUNCATED, Runtime.get().load_program, "/dev/null")


def test_flipped_bytes_never_crash() -> None:
    """Single corrupted bytes: load, load the method and run, or fail with EmberError."""
    rng = random.Random(1234)
    x = load_npy("mlp/forward.run0.in0.npy")
    outcomes = {"ok": 0, "error": 0}
    for _ in range(300):
        data = bytearray(MLP)
        data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        try:
            program = Runtime.get().load_program(data)
            method = program.load_method("forward")
            method.execute([x])
            outcomes["ok"] += 1
        except EmberError:
            outcomes["error"] += 1
    assert outcomes["error"] > 0 and sum(outcomes.values()) == 300


def test_unknown_method() -> None:
    program = Runtime.get().load_program(MLP)
    err = _raises(Status.NOT_FOUND, program.load_method, "nosuchmethod")
    assert "nosuchmethod" in str(err)
    _raises(Status.NOT_FOUND, program.metadata, "nosuchmethod")


def test_wrong_dtype() -> None:
    method = Runtime.get().load_program(MLP).load_method("forward")
    x = load_npy("mlp/forward.run0.in0.npy")
    err = _raises(Status.TYPE_MISMATCH, method.execute, [x.double()])
    assert "float32" in err.message and "float64" in err.message
    _raises(Status.TYPE_MISMATCH, method.execute, [x.to(torch.int64)])


def test_shape_above_bound() -> None:
    dynamic = Runtime.get().load_program(fixture("transformer.pte")).load_method("forward")
    err = _raises(Status.SHAPE_MISMATCH, dynamic.execute, [torch.randn(1, 17, 32)])
    assert "input 0" in str(err)
    _raises(Status.SHAPE_MISMATCH, dynamic.execute, [torch.randn(1, 4, 33)])
    static = Runtime.get().load_program(MLP).load_method("forward")
    _raises(Status.SHAPE_MISMATCH, static.execute, [torch.randn(5, 16)])
    _raises(Status.SHAPE_MISMATCH, static.execute, [torch.randn(4, 16, 1)])  # wrong rank
    _raises(Status.SHAPE_MISMATCH, static.execute, [torch.randn(*([1] * 17))])  # rank > EMBER_MAX_DIM


def test_wrong_input_count_and_kind() -> None:
    method = Runtime.get().load_program(MLP).load_method("forward")
    x = load_npy("mlp/forward.run0.in0.npy")
    err = _raises(Status.INVALID_ARGUMENT, method.execute, [])
    assert "1 input" in str(err)
    _raises(Status.INVALID_ARGUMENT, method.execute, [x, x])
    _raises(Status.TYPE_MISMATCH, method.execute, [1.5])
    _raises(Status.TYPE_MISMATCH, method.execute, [None])
    with pytest.raises(TypeError):
        method.execute(["not a tensor"])


def test_method_recovers_after_errors() -> None:
    method = Runtime.get().load_program(MLP).load_method("forward")
    for bad in ([torch.randn(5, 16)], [torch.randn(4, 16).double()], []):
        with pytest.raises(EmberError):
            method.execute(bad)
    (out,) = method.execute([load_npy("mlp/forward.run0.in0.npy")])
    assert_output(out, load_npy("mlp/forward.run0.out0.npy"), "after errors")


def test_error_is_raised_from_python_types() -> None:
    with pytest.raises(TypeError):
        Runtime.get().load_program(12345)  # not bytes-like, not a path

"""Bundled programs to and from bytes, in ExecuTorch's bundled format.

The file is one flatbuffer (identifier "BP08", extension .bpte):

    BundledProgram          version:uint, method_test_suites:[BundledMethodTestSuite],
                            program:[ubyte] (the whole .pte, aligned to 32)
    BundledMethodTestSuite  method_name:string, test_cases:[BundledMethodTestCase]
    BundledMethodTestCase   inputs:[Value], expected_outputs:[Value]
    Value                   val: union {Tensor = 1, Int = 2, Bool = 3, Double = 4}
    Tensor                  scalar_type:byte, sizes:[int], data:[ubyte] (aligned to 16),
                            dim_order:[ubyte]

A tensor's data holds its elements in its dim order (outermost first), so a
channels-last input is stored channels-last.
"""

from __future__ import annotations

import struct
from typing import Dict, List, Optional, Sequence

import torch

from ... import schema as S
from ...flatbuffer import (FlatbufferError, RefVector, Scalar, Table, TableView, Vector, build,
                           optional_scalar, read_root)
from ...tensor_spec import _SCALAR_TYPES, scalar_type
from .config import ConfigValue, MethodTestCase, MethodTestSuite
from .core import BUNDLED_PROGRAM_SCHEMA_VERSION, BundledProgram

FILE_IDENTIFIER = b"BP08"
PROGRAM_ALIGNMENT = 32
TENSOR_DATA_ALIGNMENT = 16

# ValueUnion tags.
_TENSOR, _INT, _BOOL, _DOUBLE = 1, 2, 3, 4

_DTYPES: Dict[int, torch.dtype] = {int(code): dt for dt, code in _SCALAR_TYPES.items()}


def _tensor_dim_order(t: torch.Tensor) -> List[int]:
    try:
        return [int(d) for d in t.dim_order()]
    except Exception:  # ambiguous strides (size-1 dims): take the contiguous order
        return list(range(t.dim()))


def _tensor_bytes(t: torch.Tensor, dim_order: Sequence[int]) -> bytes:
    """The elements of t laid out in dim_order, as bytes."""
    if t.numel() == 0:
        return b""
    if list(dim_order) != list(range(t.dim())):
        t = t.permute(tuple(dim_order))
    flat = t.contiguous().reshape(-1)
    if flat.is_quantized:
        raise TypeError("quantized tensors cannot be bundled; bundle their int_repr()")
    return flat.view(torch.uint8).numpy().tobytes()


def _tensor_table(t: torch.Tensor, dim_order: Optional[Sequence[int]]) -> Table:
    t = t.detach().cpu().resolve_conj().resolve_neg()
    order = list(dim_order) if dim_order is not None and len(dim_order) == t.dim() \
        else _tensor_dim_order(t)
    f: Dict = {}
    optional_scalar(f, 0, "b", int(scalar_type(t.dtype)))
    f[1] = Vector("i", [int(s) for s in t.shape])
    f[2] = Vector("B", _tensor_bytes(t, order), align=TENSOR_DATA_ALIGNMENT)
    f[3] = Vector("B", order)
    return Table(f)


def _value_table(x: ConfigValue, dim_order: Optional[Sequence[int]] = None) -> Table:
    f: Dict = {}
    if isinstance(x, torch.Tensor):
        return Table({0: Scalar("B", _TENSOR), 1: _tensor_table(x, dim_order)})
    if isinstance(x, bool):
        optional_scalar(f, 0, "?", x, False)
        return Table({0: Scalar("B", _BOOL), 1: Table(f)})
    if isinstance(x, int):
        optional_scalar(f, 0, "q", x)
        return Table({0: Scalar("B", _INT), 1: Table(f)})
    if isinstance(x, float):
        optional_scalar(f, 0, "d", x, 0.0)
        return Table({0: Scalar("B", _DOUBLE), 1: Table(f)})
    raise TypeError(f"a bundled program cannot hold a {type(x).__name__}")


def _input_orders(bundled: BundledProgram, method: str) -> List[Optional[List[int]]]:
    """The dim order of each tensor input of a method, from its plan (when known):
    inputs are stored in the layout the method takes them in."""
    plan = bundled.plan(method)
    if plan is None:
        return []
    out: List[Optional[List[int]]] = []
    for idx in plan.inputs:
        v = plan.values[idx].val
        out.append(list(v.dim_order) if isinstance(v, S.Tensor) else None)
    return out


def serialize_from_bundled_program_to_flatbuffer(bundled: BundledProgram) -> bytes:
    """The bytes of a `.bpte` file holding the program and its test suites."""
    suites = []
    for suite in bundled.method_test_suites:
        orders = _input_orders(bundled, suite.method_name)
        cases = []
        for case in suite.test_cases:
            inputs = [_value_table(x, orders[j] if j < len(orders) else None)
                      for j, x in enumerate(case.inputs)]
            outputs = [_value_table(x) for x in case.expected_outputs]
            cases.append(Table({0: RefVector(inputs), 1: RefVector(outputs)}))
        suites.append(Table({0: suite.method_name, 1: RefVector(cases)}))
    root = Table({
        0: Scalar("I", BUNDLED_PROGRAM_SCHEMA_VERSION),
        1: RefVector(suites),
        2: Vector("B", bundled.program_buffer, align=PROGRAM_ALIGNMENT),
    })
    return build(root, FILE_IDENTIFIER).data


# --------------------------------------------------------------------------- #
# Reading
# --------------------------------------------------------------------------- #


def _read_tensor(t: TableView, where: str) -> torch.Tensor:
    code = t.scalar(0, "b")
    dtype = _DTYPES.get(code)
    if dtype is None:
        raise FlatbufferError(f"{where}: unknown scalar type {code}")
    sizes = t.vector(1, "i") or []
    if any(s < 0 for s in sizes):
        raise FlatbufferError(f"{where}: negative size in {sizes}")
    order = t.vector(3, "B") or list(range(len(sizes)))
    if sorted(order) != list(range(len(sizes))):
        raise FlatbufferError(f"{where}: dim order {order} is not a permutation of its "
                              f"{len(sizes)} dims")
    data = t.bytes(2) or b""
    numel = 1
    for s in sizes:
        numel *= s
    nbytes = numel * torch.empty(0, dtype=dtype).element_size()
    if len(data) < nbytes:
        raise FlatbufferError(f"{where}: {len(data)} bytes of data, the tensor needs {nbytes}")
    physical = [sizes[d] for d in order]
    if numel == 0:
        flat = torch.empty(physical, dtype=dtype)
    else:
        flat = torch.frombuffer(bytearray(data[:nbytes]), dtype=dtype).reshape(physical)
    inverse = [order.index(d) for d in range(len(sizes))]
    return flat.permute(inverse) if inverse != list(range(len(sizes))) else flat


def _read_value(v: TableView, where: str) -> ConfigValue:
    kind = v.scalar(0, "B")
    val = v.table(1)
    if kind not in (_TENSOR, _INT, _BOOL, _DOUBLE) or val is None:
        raise FlatbufferError(f"{where}: value of unknown kind {kind} or without a table")
    if kind == _TENSOR:
        return _read_tensor(val, where)
    if kind == _INT:
        return int(val.scalar(0, "q"))
    if kind == _BOOL:
        return bool(val.scalar(0, "?", False))
    return float(val.scalar(0, "d", 0.0))


def deserialize_from_flatbuffer_to_bundled_program(buf: bytes) -> BundledProgram:
    """A BundledProgram (with `program_buffer` set) read from `.bpte` bytes.
    Raises FlatbufferError (a ValueError) if the bytes are malformed."""
    buf = bytes(buf)
    try:
        root = read_root(buf, FILE_IDENTIFIER)
        version = root.scalar(0, "I")
        program = root.bytes(2)
        if not program:
            raise FlatbufferError("the bundled program holds no program")
        suites: List[MethodTestSuite] = []
        for s, st in enumerate(root.tables(1) or []):
            name = st.string(0)
            if not name:
                raise FlatbufferError(f"suite {s} has no method name")
            cases = []
            for c, ct in enumerate(st.tables(1) or []):
                where = f"method '{name}' case {c}"
                inputs = [_read_value(v, f"{where} input {k}")
                          for k, v in enumerate(ct.tables(0) or [])]
                outputs = [_read_value(v, f"{where} expected output {k}")
                           for k, v in enumerate(ct.tables(1) or [])]
                cases.append(MethodTestCase(inputs=inputs, expected_outputs=outputs or None))
            suites.append(MethodTestSuite(method_name=name, test_cases=cases))
    except struct.error as e:  # pragma: no cover - the view checks bounds first
        raise FlatbufferError(str(e)) from None
    out = BundledProgram(program_buffer=program, method_test_suites=suites)
    out.version = version
    return out


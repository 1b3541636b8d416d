"""BundledProgram: a program and the test suites of its methods, checked against
the program's plans when it is built from a program manager."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

import torch

from ... import schema as S
from ...tensor_spec import scalar_type
from .config import ConfigValue, MethodTestCase, MethodTestSuite

#: Version of the bundled schema ember writes (the one ExecuTorch 1.x writes).
BUNDLED_PROGRAM_SCHEMA_VERSION = 2


class BundledProgramError(ValueError):
    """A test suite does not fit the program it is bundled with."""


def _kind(v: S.KernelTypes) -> str:
    return {S.Tensor: "tensor", S.Int: "int", S.Bool: "bool",
            S.Double: "float"}.get(type(v), type(v).__name__)


def _value_kind(x: ConfigValue) -> str:
    if isinstance(x, torch.Tensor):
        return "tensor"
    if isinstance(x, bool):
        return "bool"
    return "int" if isinstance(x, int) else "float"


class BundledProgram:
    """A program bundled with test cases for its methods.

    executorch_program: the program manager from ember's `to_executorch()`
    (its `.buffer` is bundled and its plans check the suites), or None with
    `pte_file_path` (a `.pte` file, bundled as is, unchecked) or
    `program_buffer` (`.pte` bytes, unchecked; what deserialization gives).
    Suites are kept sorted by method name, as the format expects.

    Checks made against the program: every suite names a method of it; every
    case gives as many inputs as the method takes, each of the input's kind
    (tensor, int, bool, float), tensors with the input's dtype and rank and
    sizes within its bounds; expected outputs are tensors (int, bool or float
    for scalar outputs), as many as the method returns, of the output's dtype
    and rank. A failed check raises BundledProgramError naming the method,
    case and value.
    """

    def __init__(self, executorch_program: Any = None,
                 method_test_suites: Sequence[MethodTestSuite] = (),
                 pte_file_path: Optional[str] = None, *,
                 program_buffer: Optional[bytes] = None) -> None:
        given = [x is not None for x in (executorch_program, pte_file_path, program_buffer)]
        if sum(given) != 1:
            raise ValueError("give exactly one of executorch_program, pte_file_path and "
                             "program_buffer")
        self.executorch_program = executorch_program
        self._pte_file_path = pte_file_path
        self._program_buffer = None if program_buffer is None else bytes(program_buffer)
        self.version = BUNDLED_PROGRAM_SCHEMA_VERSION
        self.method_test_suites: List[MethodTestSuite] = sorted(
            method_test_suites, key=lambda s: s.method_name)
        names = [s.method_name for s in self.method_test_suites]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise BundledProgramError(f"more than one test suite for method(s) {sorted(dup)}")
        for s in self.method_test_suites:
            for i, c in enumerate(s.test_cases):
                if not isinstance(c, MethodTestCase):
                    raise TypeError(f"test case {i} of method '{s.method_name}' is a "
                                    f"{type(c).__name__}, not a MethodTestCase")
        if executorch_program is not None:
            self._check(executorch_program.program)

    @property
    def program_buffer(self) -> bytes:
        """The `.pte` bytes that are bundled."""
        if self._program_buffer is None:
            if self.executorch_program is not None:
                self._program_buffer = bytes(self.executorch_program.buffer)
            else:
                with open(self._pte_file_path, "rb") as f:
                    self._program_buffer = f.read()
        return self._program_buffer

    def plan(self, method_name: str) -> Optional[S.ExecutionPlan]:
        """The program's plan for a method (None without a program manager)."""
        if self.executorch_program is None:
            return None
        for p in self.executorch_program.program.execution_plan:
            if p.name == method_name:
                return p
        return None

    # -- checks -------------------------------------------------------------

    def _check(self, program: S.Program) -> None:
        plans: Dict[str, S.ExecutionPlan] = {p.name: p for p in program.execution_plan}
        for suite in self.method_test_suites:
            plan = plans.get(suite.method_name)
            if plan is None:
                raise BundledProgramError(
                    f"test suite for method '{suite.method_name}', which the program does not "
                    f"have (its methods: {', '.join(sorted(plans)) or 'none'})")
            for i, case in enumerate(suite.test_cases):
                where = f"method '{suite.method_name}' test case {i}"
                self._check_values(plan, plan.inputs, case.inputs, f"{where} input", True)
                if case.expected_outputs:
                    self._check_values(plan, plan.outputs, case.expected_outputs,
                                       f"{where} expected output", False)

    @staticmethod
    def _check_values(plan: S.ExecutionPlan, indices: Sequence[int],
                      values: Sequence[ConfigValue], where: str, is_input: bool) -> None:
        noun = "inputs" if is_input else "outputs"
        if len(values) != len(indices):
            raise BundledProgramError(
                f"{where.rsplit(' ', 1)[0]}: the method has {len(indices)} {noun}, "
                f"{len(values)} given")
        for j, (idx, x) in enumerate(zip(indices, values)):
            want = plan.values[idx].val
            kind = _kind(want)
            if kind not in ("tensor", "int", "bool", "float"):
                raise BundledProgramError(
                    f"{where} {j}: the method's value is a {kind}, which a bundled program "
                    "cannot hold")
            if not is_input and not isinstance(x, torch.Tensor) and kind == "tensor":
                raise BundledProgramError(
                    f"{where} {j} is a {type(x).__name__}; give expected outputs as tensors")
            if _value_kind(x) != kind:
                raise BundledProgramError(
                    f"{where} {j} is a {_value_kind(x)}, the method's is a {kind}")
            if kind != "tensor":
                continue
            try:
                got = scalar_type(x.dtype)
            except Exception:
                raise BundledProgramError(f"{where} {j} has dtype {x.dtype}, which the format "
                                          "cannot hold") from None
            if got != want.scalar_type:
                raise BundledProgramError(
                    f"{where} {j} has dtype {x.dtype}, the method's is "
                    f"{S.ScalarType(want.scalar_type).name.lower()}")
            if x.dim() != len(want.sizes):
                raise BundledProgramError(
                    f"{where} {j} has shape {tuple(x.shape)}, the method's has rank "
                    f"{len(want.sizes)} (sizes {tuple(want.sizes)})")
            static = want.shape_dynamism == S.TensorShapeDynamism.STATIC
            for d, (s, b) in enumerate(zip(x.shape, want.sizes)):
                if (static and s != b) or s > b:
                    raise BundledProgramError(
                        f"{where} {j} has shape {tuple(x.shape)}, the method's is "
                        f"{'' if static else 'at most '}{tuple(want.sizes)} (dim {d})")

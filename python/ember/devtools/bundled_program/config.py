"""Test cases of a bundled program: inputs and the outputs expected from them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List, Optional, Sequence, Union

import torch
from torch.utils._pytree import tree_flatten

#: What a bundled value may be: a tensor, or an int, bool or float scalar.
ConfigValue = Union[torch.Tensor, int, bool, float]

_ALLOWED = (torch.Tensor, int, bool, float)


def _flatten(data: Any, what: str) -> List[ConfigValue]:
    """Flattens lists, tuples, dicts and named tuples into their leaves, each
    checked to be a tensor, int, bool or float."""
    if isinstance(data, _ALLOWED):
        data = [data]
    leaves, _ = tree_flatten(data)
    for i, x in enumerate(leaves):
        if x is None or not isinstance(x, _ALLOWED):
            raise TypeError(
                f"{what} {i} is a {type(x).__name__}; a bundled program holds only "
                "torch.Tensor, int, bool and float values")
    return list(leaves)


class MethodTestCase:
    """One run of a method: its inputs and, optionally, the outputs expected.

    inputs: every input of the method, in order (nested containers are flattened,
    as the method's own pytree flattens them). expected_outputs: the outputs as
    tensors (typically what eager PyTorch returns on the same inputs), or None
    for a case that only runs (e.g. for profiling).
    """

    def __init__(self, inputs: Sequence[ConfigValue],
                 expected_outputs: Optional[Sequence[torch.Tensor]] = None) -> None:
        self.inputs: List[ConfigValue] = _flatten(inputs, "input")
        self.expected_outputs: List[ConfigValue] = (
            [] if expected_outputs is None else _flatten(expected_outputs, "expected output"))

    def __repr__(self) -> str:
        return (f"MethodTestCase(inputs={len(self.inputs)}, "
                f"expected_outputs={len(self.expected_outputs)})")


@dataclass
class MethodTestSuite:
    """The test cases of one method, named as in the program ("forward")."""

    method_name: str
    test_cases: Sequence[MethodTestCase]

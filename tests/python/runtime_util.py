"""Shared helpers for the ember.runtime tests: the fixture manifest and tolerances."""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Optional

import numpy as np
import torch

from conftest import ROOT

FIXTURES = os.path.join(ROOT, "tests", "fixtures")
RTOL = {torch.float32: 1e-5, torch.float64: 1e-5, torch.float16: 1e-2, torch.bfloat16: 1e-2}
ATOL = {torch.float32: 1e-6, torch.float64: 1e-6, torch.float16: 1e-2, torch.bfloat16: 1e-2}


def fixture(*parts: str) -> str:
    return os.path.join(FIXTURES, *parts)


def manifest_cases() -> List[Dict[str, Any]]:
    """The cases of tests/fixtures/manifest.json whose backend (if any) ember.runtime
    has built in."""
    from ember.runtime import has_backend

    with open(fixture("manifest.json")) as f:
        cases = json.load(f)["cases"]
    return [c for c in cases if "backend" not in c or has_backend(c["backend"])]


def load_npy(rel: str) -> torch.Tensor:
    return torch.from_numpy(np.load(fixture(rel)))


def assert_output(got: Any, expected: torch.Tensor, what: str,
                  atol: Optional[float] = None) -> None:
    """atol: the case's own absolute tolerance (quantized programs: one output
    quantization step), in place of the dtype's."""
    assert isinstance(got, torch.Tensor), f"{what}: {type(got).__name__}, not a tensor"
    assert got.dtype == expected.dtype, f"{what}: dtype {got.dtype} != {expected.dtype}"
    assert tuple(got.shape) == tuple(expected.shape), f"{what}: shape {tuple(got.shape)} != {tuple(expected.shape)}"
    if expected.dtype.is_floating_point:
        torch.testing.assert_close(got, expected, rtol=RTOL[expected.dtype],
                                   atol=ATOL[expected.dtype] if atol is None else atol,
                                   msg=lambda m: f"{what}: {m}")
    else:
        assert torch.equal(got, expected), f"{what}: values differ"

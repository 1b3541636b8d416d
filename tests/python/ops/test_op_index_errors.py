"""Out-of-range indices in the ops whose indices are data: a clean error, never a crash.

Each op is exported with valid indices, checked against eager, then run with
an index one past the end and one before the start (after negative wrapping):
the runtime must raise EmberError (DATA_OUT_OF_BOUNDS, naming the kernel),
eager PyTorch must reject the same input, and the method must still give
the right answer afterwards.
"""

from __future__ import annotations

import warnings
from typing import Callable, List, Tuple

import pytest
import torch
import torch.nn.functional as F

import ember
from ember.runtime import EmberError, Runtime, Status, has_kernel

aten = torch.ops.aten


class _Op(torch.nn.Module):
    def __init__(self, fn: Callable[..., torch.Tensor]) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *xs: torch.Tensor) -> torch.Tensor:
        return self.fn(*xs)


def _idx(*v: int) -> torch.Tensor:
    return torch.tensor(v, dtype=torch.int64)


# (name, kernel key, fn, valid inputs, position of the index input, size it indexes)
X = torch.arange(24, dtype=torch.float32).reshape(6, 4)
CASES: List[Tuple[str, str, Callable[..., torch.Tensor], Tuple[torch.Tensor, ...], int, int]] = [
    ("embedding", "aten::embedding.out", lambda w, i: F.embedding(i, w), (X, _idx(0, 5, 2)), 1, 6),
    ("gather", "aten::gather.out", lambda x, i: torch.gather(x, 1, i),
     (X, torch.tensor([[0, 3]] * 6)), 1, 4),
    ("index.Tensor", "aten::index.Tensor_out", lambda x, i: x[i], (X, _idx(5, 0, 1)), 1, 6),
    ("index_select", "aten::index_select.out", lambda x, i: torch.index_select(x, 0, i),
     (X, _idx(1, 5)), 1, 6),
    ("scatter.src", "aten::scatter.src_out",
     lambda x, i, s: torch.scatter(x, 0, i, s), (X, _idx(0, 5).reshape(2, 1), -X[:2, :1]), 1, 6),
    ("scatter.value", "aten::scatter.value_out",
     lambda x, i: torch.scatter(x, 0, i, 7.0), (X, _idx(2, 4).reshape(2, 1)), 1, 6),
    ("scatter_add", "aten::scatter_add.out",
     lambda x, i, s: torch.scatter_add(x, 0, i, s),
     (X, _idx(0, 5).reshape(2, 1), -X[:2, :1]), 1, 6),
    ("scatter_reduce.two", "aten::scatter_reduce.two_out",
     lambda x, i, s: torch.scatter_reduce(x, 0, i, s, "amax"),
     (X, _idx(0, 5).reshape(2, 1), -X[:2, :1]), 1, 6),
    ("index_put", "aten::index_put.out",
     lambda x, i, v: torch.index_put(x, (i,), v), (X, _idx(1, 3), -X[:2]), 1, 6),
    ("index_put accumulate", "aten::index_put.out",
     lambda x, i, v: torch.index_put(x, (i,), v, accumulate=True), (X, _idx(1, 1), -X[:2]), 1, 6),
]


def _load(fn: Callable[..., torch.Tensor], inputs: Tuple[torch.Tensor, ...]):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ep = torch.export.export(_Op(fn), inputs, strict=False)
        buf = ember.to_edge(ep).to_executorch().buffer
    return Runtime.get().load_program(buf).load_method("forward")


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_out_of_range_index(case) -> None:
    name, key, fn, inputs, pos, size = case
    if not has_kernel(key):
        pytest.skip(f"no kernel {key}")
    method = _load(fn, inputs)
    torch.testing.assert_close(method.execute(list(inputs))[0], fn(*inputs))
    for bad_value in (size, -size - 1):
        bad = list(inputs)
        index = inputs[pos].clone()
        index.view(-1)[-1] = bad_value
        bad[pos] = index
        with pytest.raises((IndexError, RuntimeError)):  # eager rejects it too
            fn(*bad)
        with pytest.raises(EmberError) as e:
            method.execute(bad)
        err = e.value
        assert err.status == Status.DATA_OUT_OF_BOUNDS, f"{name}: {err.status_name}: {err}"
        assert key in err.message, f"{name}: the message does not name {key}: {err.message}"
        assert str(bad_value) in err.message, f"{name}: the message lacks the index: {err.message}"
    # The method is still good after the errors.
    torch.testing.assert_close(method.execute(list(inputs))[0], fn(*inputs))

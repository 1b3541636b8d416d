"""The custom operator my_ops::squared_relu and a small model that calls it.

Importing this module defines, with torch.library:

  my_ops::squared_relu(Tensor x, float scale=1.0) -> Tensor
      scale * relu(x)^2: the functional form the model calls. Its eager
      kernel runs it in PyTorch; its fake (meta) kernel gives torch.export the
      output's shape and dtype without running it.
  my_ops::squared_relu.out(Tensor x, float scale=1.0, *, Tensor(a!) out) -> Tensor(a!)
      the out variant: the form the runtime runs, writing into planned
      memory. ember's exporter finds it by name and signature; its C kernel
      is my_ops.c, registered by the application.
"""

from __future__ import annotations

import torch

_lib = torch.library.Library("my_ops", "DEF")
_lib.define("squared_relu(Tensor x, float scale=1.0) -> Tensor")
_lib.define("squared_relu.out(Tensor x, float scale=1.0, *, Tensor(a!) out) -> Tensor(a!)")


def _squared_relu(x: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
    return scale * torch.relu(x) ** 2


def _squared_relu_out(x: torch.Tensor, scale: float = 1.0, *, out: torch.Tensor) -> torch.Tensor:
    out.resize_(x.shape)
    return out.copy_(_squared_relu(x, scale))


_lib.impl("squared_relu", _squared_relu, "CompositeExplicitAutograd")
_lib.impl("squared_relu.out", _squared_relu_out, "CompositeExplicitAutograd")


@torch.library.register_fake("my_ops::squared_relu")
def _squared_relu_fake(x: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
    return torch.empty_like(x)


class Model(torch.nn.Module):
    """Linear(8, 16) -> my_ops.squared_relu(scale=0.5) -> Linear(16, 4)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.up = torch.nn.Linear(8, 16)
        self.down = torch.nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(torch.ops.my_ops.squared_relu(self.up(x), 0.5))


def example_input() -> torch.Tensor:
    """The input main.c feeds: x[i] = ((i % 17) - 8) / 4, shape [2, 8]."""
    i = torch.arange(16)
    return (((i % 17) - 8).to(torch.float32) / 4).reshape(2, 8)

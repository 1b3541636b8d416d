"""examples/vision/models.py: the classifiers have torchvision's architectures.

torchvision cannot be installed beside this torch, so each model is held to
the parameter count torchvision publishes for its architecture (the
`num_params` of its ImageNet weights' metadata): a missing or extra layer,
a wrong width, group count, kernel size or squeeze-excite width changes it.
A forward pass at a small resolution checks the shapes fit together and the
output is [1, 1000], for a few models that stand for the block types.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "vision"))

import models  # noqa: E402

TORCHVISION_PARAMS = {
    "mobilenet_v2": 3_504_872,
    "mobilenet_v3_small": 2_542_856,
    "mobilenet_v3_large": 5_483_032,
    "resnet18": 11_689_512,
    "resnet50": 25_557_032,
    "resnext50_32x4d": 25_028_904,
    "shufflenet_v2_x1_0": 2_278_604,
    "squeezenet1_1": 1_235_496,
    "efficientnet_b0": 5_288_548,
    "regnet_y_400mf": 4_344_144,
    "mnasnet1_0": 4_383_312,
    "convnext_tiny": 28_589_128,
}


def test_every_model_is_listed() -> None:
    assert sorted(models.MODELS) == sorted(TORCHVISION_PARAMS)
    with pytest.raises(KeyError, match="unknown model"):
        models.build("resnet19")


@pytest.mark.parametrize("name", sorted(TORCHVISION_PARAMS))
def test_parameter_count(name: str) -> None:
    model = models.build(name)
    assert not model.training
    assert sum(p.numel() for p in model.parameters()) == TORCHVISION_PARAMS[name]


def test_regnet_y_400mf_stages() -> None:
    """RegNetY-400MF's widths, depths and group widths as published."""
    assert models.regnet_widths(16, 48, 27.89, 2.09, 8) == \
        ([48, 104, 208, 440], [1, 3, 6, 6], [8, 8, 8, 8])


# one per block family: channel shuffle and split, fire modules with ceil-mode
# pooling, squeeze-excite with hardswish, ConvNeXt's permuted layer norms
@pytest.mark.parametrize("name,size", [("shufflenet_v2_x1_0", 64), ("squeezenet1_1", 64),
                                       ("mobilenet_v3_small", 64), ("convnext_tiny", 64)])
def test_forward(name: str, size: int) -> None:
    model = models.build(name)
    x = torch.randn(1, 3, size, size, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        y = model(x)
        again = models.build(name)(x)
    assert y.shape == (1, 1000)
    assert torch.isfinite(y).all() and float(y.std()) > 0
    assert torch.equal(y, again), "build() must be deterministic"

"""ember's exported programs run in ember's own C runtime (build/ember-run).

Skipped when the binary has not been built; set EMBER_RUN to use another
build (e.g. EMBER_RUN=build-asan/ember-run).
"""

from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest
import torch
from torch.export import Dim

from aot_models import MLP, AttentionBlock, Branchy, Stateful
from aot_util import ATOL, RTOL, export
from conftest import ROOT

EMBER_RUN = os.environ.get("EMBER_RUN") or os.path.join(ROOT, "build", "ember-run")
if not os.path.isabs(EMBER_RUN):
    EMBER_RUN = os.path.join(ROOT, EMBER_RUN)

pytestmark = pytest.mark.skipif(not os.access(EMBER_RUN, os.X_OK),
                                reason=f"{EMBER_RUN} is not built")


def _run(tmp_path, buffer: bytes, inputs, method: str = "forward"):
    pte = tmp_path / "model.pte"
    pte.write_bytes(buffer)
    cmd = [EMBER_RUN, str(pte), "--method", method, "--output-dir", str(tmp_path / "out")]
    for i, x in enumerate(inputs):
        path = tmp_path / f"in{i}.npy"
        np.save(path, x.numpy())
        cmd += ["--input", str(path)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    outs = []
    while (tmp_path / "out" / f"out{len(outs)}.npy").exists():
        outs.append(np.load(tmp_path / "out" / f"out{len(outs)}.npy"))
    return outs


def test_mlp_runs_in_ember_run(tmp_path) -> None:
    m = MLP().eval()
    x = torch.randn(4, 16)
    (out,) = _run(tmp_path, export(m, (x,)).buffer, [x])
    np.testing.assert_allclose(out, m(x).detach().numpy(), rtol=RTOL, atol=ATOL)


def test_dynamic_attention_block_runs_in_ember_run(tmp_path) -> None:
    m = AttentionBlock().eval()
    T = Dim("T", min=1, max=AttentionBlock.MAX_T)
    prog = export(m, (torch.randn(1, 8, 32),), dynamic_shapes={"x": {1: T}})
    x = torch.randn(1, 5, 32)
    (out,) = _run(tmp_path, prog.buffer, [x])
    np.testing.assert_allclose(out, m(x).detach().numpy(), rtol=RTOL, atol=ATOL)


def test_mutable_buffer_initial_state_in_ember_run(tmp_path) -> None:
    x = torch.randn(2, 4)
    (out,) = _run(tmp_path, export(Stateful(), (x,)).buffer, [x])
    np.testing.assert_allclose(out, Stateful()(x).numpy(), rtol=RTOL, atol=ATOL)


def test_cond_runs_in_ember_run(tmp_path) -> None:
    m = Branchy().eval()
    prog = export(m, (torch.randn(2, 4),))
    for x in (torch.ones(2, 4), -torch.ones(2, 4)):
        (out,) = _run(tmp_path, prog.buffer, [x])
        np.testing.assert_allclose(out, m(x).detach().numpy(), rtol=RTOL, atol=ATOL)

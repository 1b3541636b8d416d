"""Selective build: a runtime that registers only the kernels a model calls.

The committed nanoGPT is exported (KV cache, portable kernels, no delegate)
to <build>/select/nanogpt.pte, from which the build's on-demand target
ember-run-select-nanogpt generates its kernel table (cmake/EmberSelect.cmake,
tools/ember_select_kernels.py). That ember-run runs nanoGPT with the same
logits as the full ember-run and as eager PyTorch, and refuses a program
that needs a kernel outside its selection at method load, naming the
operator. `ember-run --list-ops`, the generator's own .pte reader and the
committed list examples/nanogpt/selected_ops.txt (which scripts/size.sh
measures) agree.
"""

from __future__ import annotations

import fcntl
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from conftest import ROOT

BUILD = Path(os.environ.get("EMBER_BUILD_DIR") or Path(ROOT) / "build")
EMBER_RUN = BUILD / "ember-run"
NANOGPT = Path(ROOT) / "examples" / "nanogpt"

pytestmark = [
    # One worker: the tests share one export and one build of the target.
    pytest.mark.xdist_group("selective_build"),
    pytest.mark.skipif(not (BUILD / "build.ninja").exists() and not (BUILD / "Makefile").exists(),
                       reason=f"{BUILD} is not a configured build"),
    pytest.mark.skipif(not os.access(EMBER_RUN, os.X_OK), reason=f"{EMBER_RUN} is not built"),
]


def _ops(lines: str) -> set:
    return {ln.split("#", 1)[0].strip() for ln in lines.splitlines()} - {""}


@pytest.fixture(scope="module")
def selected(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pte = BUILD / "select" / "nanogpt.pte"
    pte.parent.mkdir(exist_ok=True)
    tmp = tmp_path_factory.mktemp("select") / "nanogpt.pte"
    subprocess.run([sys.executable, "-W", "ignore", str(NANOGPT / "export.py"), "--kind", "kv",
                    "--backend", "portable", "--out", str(tmp)],
                   check=True, capture_output=True, text=True, timeout=600)
    # One build at a time: with pytest-xdist, each worker that runs a test of
    # this module sets the fixture up, and two ninjas in one build directory
    # would write the same archive at once.
    with open(pte.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        # Replaced only when it changed, so the generated table rebuilds only then.
        if not pte.exists() or pte.read_bytes() != tmp.read_bytes():
            os.replace(tmp, pte)
        res = subprocess.run(["cmake", "--build", str(BUILD), "--target",
                              "ember-run-select-nanogpt"],
                             capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    return pte


def _run(exe: Path, pte: Path, tmp: Path, inputs) -> np.ndarray:
    cmd = [str(exe), str(pte), "--threads", "1", "--output-dir", str(tmp)]
    for i, x in enumerate(inputs):
        np.save(tmp / f"in{i}.npy", x)
        cmd += ["--input", str(tmp / f"in{i}.npy")]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    return np.load(tmp / "out0.npy")


def test_list_ops_agrees_with_the_generator_and_the_committed_list(selected: Path) -> None:
    listed = subprocess.run([str(EMBER_RUN), "--list-ops", str(selected)], check=True,
                            capture_output=True, text=True).stdout
    assert listed.splitlines() == sorted(_ops(listed)), "sorted, one per line, no repeats"
    gen = subprocess.run([sys.executable, str(Path(ROOT) / "tools" / "ember_select_kernels.py"),
                          "--list", str(selected)], check=True, capture_output=True, text=True)
    assert _ops(gen.stdout) == _ops(listed)
    assert _ops((NANOGPT / "selected_ops.txt").read_text()) == _ops(listed), \
        "regenerate examples/nanogpt/selected_ops.txt with ember-run --list-ops"
    assert "aten::addmm.out" in _ops(listed) and "aten::convolution.out" not in _ops(listed)


def test_selected_build_runs_nanogpt(selected: Path, tmp_path: Path) -> None:
    sys.path.insert(0, str(NANOGPT))
    from model import GPT

    tokens = (np.arange(12, dtype=np.int64) * 37 % 4096).reshape(1, 12)
    pos = np.zeros(1, dtype=np.int64)
    (tmp_path / "sel").mkdir()
    (tmp_path / "full").mkdir()
    got = _run(BUILD / "ember-run-select-nanogpt", selected, tmp_path / "sel", [tokens, pos])
    full = _run(EMBER_RUN, selected, tmp_path / "full", [tokens, pos])
    np.testing.assert_array_equal(got, full)
    model = GPT.from_checkpoint(NANOGPT / "ckpt.pt").eval()
    with torch.no_grad():
        want = model(torch.from_numpy(tokens))[0]
    torch.testing.assert_close(torch.from_numpy(got).reshape(want.shape), want,
                               rtol=1e-4, atol=1e-4)


def test_selected_build_refuses_an_unselected_op(selected: Path) -> None:
    table = (BUILD / "ember_kernels_select_nanogpt_table.c").read_text()
    assert '"aten::addmm.out"' in table and '"aten::convolution.out"' not in table
    res = subprocess.run([str(BUILD / "ember-run-select-nanogpt"),
                          str(Path(ROOT) / "tests" / "fixtures" / "cnn.pte")],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 1
    assert re.search(r"^ember-run: error: loading method 'forward': operator missing: "
                     r".*without a kernel: .*aten::convolution\.out", res.stderr), res.stderr


def test_generator_reads_every_kernel_of_the_tables() -> None:
    import ember.runtime as rt

    sys.path.insert(0, str(Path(ROOT) / "tools"))
    import ember_select_kernels as gen

    tables = gen.read_tables([Path(ROOT) / "src/kernels/portable/ops.def",
                              Path(ROOT) / "src/kernels/optimized/ops.def"])
    assert {k for k, _ in tables["portable"]} == set(rt.kernel_names())
    assert {k for k, _ in tables["optimized"]} <= set(rt.kernel_names())


def test_generator_refuses_bad_input_cleanly(tmp_path: Path) -> None:
    script = str(Path(ROOT) / "tools" / "ember_select_kernels.py")
    good = (Path(ROOT) / "tests" / "fixtures" / "mlp.pte").read_bytes()
    cases = {"truncated.pte": good[:len(good) // 3], "text.pte": b"not a program at all",
             "flipped.pte": good[:8] + bytes(b ^ 0xFF for b in good[8:64]) + good[64:]}
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        res = subprocess.run([sys.executable, script, "--list", str(tmp_path / name)],
                             capture_output=True, text=True)
        assert res.returncode in (0, 1), res.stderr  # never a traceback
        if res.returncode == 1:
            assert res.stderr.startswith("ember_select_kernels: error: "), res.stderr
            assert "Traceback" not in res.stderr
    res = subprocess.run([sys.executable, script, "--list", str(tmp_path / "missing.txt")],
                         capture_output=True, text=True)
    assert res.returncode == 1 and "neither a file nor a kernel key" in res.stderr

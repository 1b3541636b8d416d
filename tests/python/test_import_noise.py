"""Importing ember and what its exporters pull in (torchao, ExecuTorch's LLM
ops) prints nothing: torchao's warnings about CUDA extensions a CPU-only
torch cannot load, and torch's pytree deprecation for torchao's enums, are
below the level ember leaves those loggers at (ember.__init__; an
application that sets those levels itself keeps them)."""

from __future__ import annotations

import subprocess
import sys

CODE = """
import logging, sys
import ember
import ember.llm.hf  # executorch's LLM ops, which import torchao
import torchao.quantization.quant_api  # noqa: F401
print(logging.getLogger("torchao").level, file=sys.stderr)
"""


def test_imports_print_nothing() -> None:
    res = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stderr
    assert res.stderr.strip() == str(40), res.stderr  # logging.ERROR, and no other line

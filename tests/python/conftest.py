"""pytest setup for ember's Python tests: make `python/ember` importable from the tree."""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYTHON_DIR = os.path.join(ROOT, "python")
if PYTHON_DIR not in sys.path:
    sys.path.insert(0, PYTHON_DIR)


def pytest_configure(config) -> None:
    # Warnings from torch and the reference package that these tests cannot act on.
    for line in (
        "ignore:.*isinstance\\(treespec, LeafSpec\\).*:FutureWarning",
        "ignore::DeprecationWarning",
        "ignore:This API is experimental:Warning",
        "ignore:Mutation on a buffer:UserWarning",
    ):
        config.addinivalue_line("filterwarnings", line)

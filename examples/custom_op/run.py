"""Runs the exported program in libember from Python, with the custom kernel
loaded from a shared library, and compares with eager PyTorch.

usage: python examples/custom_op/run.py --model model.pte --library libmy_ops.so

The library is my_ops.c built against the libember that ember.runtime uses
(see README.md); ember.runtime.load_library() calls its
ember_library_register(), which registers my_ops::squared_relu.out.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
# torch's own deprecation notice while exporting; nothing this script can act on
warnings.filterwarnings("ignore", message=".*LeafSpec.*", category=FutureWarning)
sys.path.insert(0, HERE)

from my_ops import Model, example_input  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="model.pte")
    ap.add_argument("--library", required=True, help="my_ops.c built as a shared library")
    args = ap.parse_args()
    import ember.runtime as rt

    rt.load_library(args.library)
    method = rt.Runtime.get().load_program(args.model).load_method("forward")
    x = example_input()
    got = method.execute([x])[0]
    want = Model().eval()(x).detach()
    err = (got - want).abs().max().item()
    print(f"ember: {got.flatten().tolist()}")
    print(f"eager: {want.flatten().tolist()}")
    print(f"max abs error {err:.3g}")
    sys.exit(0 if torch.allclose(got, want, rtol=1e-5, atol=1e-6) else 1)


if __name__ == "__main__":
    main()

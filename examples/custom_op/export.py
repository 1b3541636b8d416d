"""Exports the model of my_ops.py, which calls the custom operator
my_ops::squared_relu, to a .pte program.

usage: python examples/custom_op/export.py [--out model.pte] [--no-kernel-library]

The exporter checks that every operator outside delegates has a kernel in
the runtime. my_ops::squared_relu.out's kernel is registered by the
application (my_ops.c), so the exporter learns of it from my_ops.yaml.
With --no-kernel-library it does not, and export fails naming the operator
and its source line.
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


def export(kernel_library: bool = True):
    """The ExecutorchProgramManager of the example model."""
    from ember import ExecutorchBackendConfig, to_edge

    ep = torch.export.export(Model().eval(), (example_input(),))
    libraries = [os.path.join(HERE, "my_ops.yaml")] if kernel_library else []
    return to_edge(ep).to_executorch(ExecutorchBackendConfig(kernel_libraries=libraries))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="model.pte")
    ap.add_argument("--no-kernel-library", action="store_true",
                    help="do not tell the exporter about my_ops.yaml (export fails)")
    args = ap.parse_args()
    from ember import ExportError

    try:
        prog = export(kernel_library=not args.no_kernel_library)
    except ExportError as e:
        print(f"export failed: {e}", file=sys.stderr)
        sys.exit(1)
    with open(args.out, "wb") as f:
        prog.write_to_file(f)
    print(f"wrote {args.out} ({len(prog.buffer)} bytes)")


if __name__ == "__main__":
    main()

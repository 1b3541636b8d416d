"""Bundled programs: a program with test cases (inputs and expected outputs) for
its methods, in ExecuTorch's bundled format (`.bpte`), so a device can check
that it runs the model correctly.

    from ember.devtools.bundled_program import (
        BundledProgram, MethodTestCase, MethodTestSuite,
        serialize_from_bundled_program_to_flatbuffer)

    prog = to_edge(export(model, (x,))).to_executorch()
    suite = MethodTestSuite("forward", [MethodTestCase([x], [model(x)])])
    data = serialize_from_bundled_program_to_flatbuffer(BundledProgram(prog, [suite]))

On the device: `ember-run --bundled model.bpte`, the C API in
ember/bundled_program.h, or `ember.runtime.Runtime.load_bundled_program()`.
"""

from .config import ConfigValue, MethodTestCase, MethodTestSuite
from .core import BUNDLED_PROGRAM_SCHEMA_VERSION, BundledProgram, BundledProgramError
from .serialize import (FILE_IDENTIFIER, deserialize_from_flatbuffer_to_bundled_program,
                        serialize_from_bundled_program_to_flatbuffer)

__all__ = [
    "BUNDLED_PROGRAM_SCHEMA_VERSION",
    "BundledProgram",
    "BundledProgramError",
    "ConfigValue",
    "FILE_IDENTIFIER",
    "MethodTestCase",
    "MethodTestSuite",
    "deserialize_from_flatbuffer_to_bundled_program",
    "serialize_from_bundled_program_to_flatbuffer",
]

"""The `ember` package follows its pipeline: every module belongs to one stage,

    base -> capture -> edge -> backends -> emit -> serialize -> program

and imports (at module level or inside a function alike) only modules of its
own stage or of the stages before it, with no cycle among them. A module added
to the package must be given its stage here.
"""

from __future__ import annotations

import ast
import os
from typing import Dict, List, Set

from conftest import PYTHON_DIR

STAGES: List[List[str]] = [
    # base: facts and helpers every stage shares
    ["ember.errors", "ember.kernel_library", "ember.schema", "ember.flatbuffer", "ember.graph_utils",
     "ember.dialect",
     "ember.tensor_spec", "ember.quantized_ops", "ember.quantized_embedding_ops", "ember.llm", "ember.llm.custom_ops",
     "ember.llm.llama_ops", "ember.llm.quantize",
     "ember.runtime", "ember.llm.runtime", "ember.llm.hf"],
    # capture: what torch.export needs to trace ember's pieces
    ["ember.capture"],
    # edge: to_edge's passes
    ["ember.edge", "ember.passes", "ember.passes.noop", "ember.passes.reinplace",
     "ember.passes.debug_handles", "ember.passes.external_constants"],
    # backends: partitioners, preprocess, lowered modules
    ["ember.backend", "ember.backend.backend_details", "ember.backend.partitioner",
     "ember.backend.lowered", "ember.backend.lowering", "ember.backend.utils",
     "ember.backends", "ember.backends.xnnpack", "ember.backends.xnnpack.graph",
     "ember.backends.xnnpack.ops", "ember.backends.xnnpack.partitioner",
     "ember.backends.xnnpack.preprocess", "ember.backends.xnnpack.quant_patterns",
     "ember.backends.xnnpack.quant_lowering", "ember.backends.xnnpack.quant",
     "ember.backends.xnnpack.quantizer", "ember.backends.xnnpack.quantizer.config",
     "ember.backends.xnnpack.quantizer.annotators",
     "ember.backends.xnnpack.quantizer.xnnpack_quantizer",
     "ember.backends.transforms", "ember.backends.transforms.duplicate_dynamic_quant_chain",
     "ember.backends.vulkan", "ember.backends.vulkan.schema", "ember.backends.vulkan.ops",
     "ember.backends.vulkan.kv_cache", "ember.backends.vulkan.rope", "ember.backends.vulkan.q4",
     "ember.backends.vulkan.builder",
     "ember.backends.vulkan.partitioner", "ember.backends.vulkan.preprocess",
     "ember.backends.vulkan.quantize"],
    # emit: to_executorch's passes, memory planning, the emitter
    ["ember.config", "ember.memory_planning", "ember.passes.write_back",
     "ember.passes.spec_prop", "ember.passes.constant_folding", "ember.passes.views",
     "ember.passes.out_variants", "ember.passes.quantized_embedding", "ember.emit"],
    # serialize: the .pte bytes, the .ptd data files
    ["ember.serialize", "ember.flat_tensor"],
    # program: the entry points and the managers users hold, tools built on them
    ["ember.program", "ember", "ember.devtools", "ember.devtools.backend_debug",
     "ember.devtools.etdump", "ember.devtools.etdump_reader", "ember.devtools.etrecord",
     "ember.devtools.etrecord_program",
     "ember.devtools.inspector", "ember.devtools.numeric", "ember.devtools.plots",
     "ember.devtools.cli", "ember.devtools.bundled_program", "ember.devtools.bundled_program.config",
     "ember.devtools.bundled_program.core", "ember.devtools.bundled_program.serialize",
     "ember.ops_coverage", "ember.llm.export"],
]
STAGE_OF: Dict[str, int] = {m: i for i, ms in enumerate(STAGES) for m in ms}


def _modules() -> Dict[str, str]:
    root = os.path.join(PYTHON_DIR, "ember")
    out = {}
    for dirpath, _, files in os.walk(root):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(dirpath, f)
                name = os.path.relpath(path, PYTHON_DIR)[:-3].replace(os.sep, ".")
                out[name[: -len(".__init__")] if name.endswith(".__init__") else name] = path
    return out


def _is_extension(module: str) -> bool:
    """Whether module is a compiled extension of the package (ember._runtime, from _runtime.c)."""
    return os.path.exists(os.path.join(PYTHON_DIR, *module.split(".")) + ".c")


def _imports(name: str, path: str, modules: Set[str]) -> Set[str]:
    """The ember modules `name` imports anywhere in its source (compiled
    extensions aside: they import nothing of the package)."""
    package = name if path.endswith("__init__.py") else name.rsplit(".", 1)[0]
    found: Set[str] = set()

    def add(target: str) -> None:
        if _is_extension(target):
            return
        while target and target not in modules:  # `from .x import f`: f is no module
            target = target.rsplit(".", 1)[0] if "." in target else ""
        if target and target != name:
            found.add(target)

    for node in ast.walk(ast.parse(open(path).read(), path)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "ember":
                    add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - (node.level - 1)])
                mod = f"{base}.{node.module}" if node.module else base
            elif node.module and node.module.split(".")[0] == "ember":
                mod = node.module
            else:
                continue
            for alias in node.names:
                add(f"{mod}.{alias.name}")
    return found


def test_every_module_has_a_stage() -> None:
    missing = sorted(set(_modules()) - set(STAGE_OF))
    assert not missing, f"give these modules a stage in {__file__}: {missing}"


def test_imports_point_only_down_the_pipeline() -> None:
    modules = _modules()
    graph = {name: _imports(name, path, set(modules)) for name, path in modules.items()}
    upward = [f"{m} ({STAGE_OF[m]}) imports {t} ({STAGE_OF[t]})"
              for m, targets in graph.items() for t in sorted(targets)
              if m in STAGE_OF and t in STAGE_OF and STAGE_OF[t] > STAGE_OF[m]]
    assert not upward, "imports against the stage order:\n" + "\n".join(upward)

    # no cycles, even inside a stage
    state: Dict[str, int] = {}

    def visit(m: str, path: List[str]) -> None:
        state[m] = 1
        for t in sorted(graph[m]):
            assert state.get(t) != 1, "import cycle: " + " -> ".join(path + [m, t])
            if t not in state:
                visit(t, path + [m])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [])

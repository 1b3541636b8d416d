"""Descriptions of kernel libraries that the target runtime registers beside
libember's own kernels (custom operators, application overrides).

The export-time check (`ExecutorchBackendConfig.check_kernels`) asks
libember's registry whether every operator left outside delegates has a
kernel. A custom operator's kernel is registered by the application at run
time (`ember_kernels_register()`), so libember cannot know it: the exporter
reads it from a description file passed as
`ExecutorchBackendConfig(kernel_libraries=["my_ops.yaml"])`.

The file is a list of kernels, one per out-variant schema, as YAML (`.yaml`,
`.yml`, with PyYAML) or JSON (`.json`)::

    # kernels that my_ops.c registers with ember_kernels_register()
    - func: my_ops::squared_relu.out(Tensor x, float scale=1.0, *, Tensor(a!) out) -> Tensor(a!)
      kernel: squared_relu_out        # the C function (optional, for readers)

The kernel key the runtime looks up is the schema's name,
`my_ops::squared_relu.out`. When torch knows an operator of that name (the
model registered it with `torch.library`), its schema must equal `func`, so
a description that drifted from the operator is caught at export rather
than as wrong arguments at run time.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any, FrozenSet, Iterable, List, Optional, Sequence, Union

import torch

from .errors import ExportError


@dataclasses.dataclass(frozen=True)
class KernelEntry:
    """One kernel of a library: its key ("my_ops::foo.out"), schema and C name."""

    key: str
    func: str
    kernel: Optional[str] = None


def _parse(func: str) -> Any:
    """torch's parsed FunctionSchema of `func`, which must name namespace::name[.overload]."""
    try:
        schema = torch._C.parse_schema(func)
    except RuntimeError as e:
        raise ValueError(f"func {func!r} is not an operator schema: {e}") from None
    if "::" not in schema.name:
        raise ValueError(f"func {func!r} does not start with namespace::name[.overload](")
    return schema


def _key_of(func: str) -> str:
    """"ns::name.overload(args) -> ret" -> "ns::name.overload"."""
    schema = _parse(func)
    return f"{schema.name}.{schema.overload_name}" if schema.overload_name else schema.name


class KernelLibrary:
    """The kernels one description file lists; `key in library` tests a kernel key."""

    def __init__(self, entries: Sequence[KernelEntry], source: str = "<memory>") -> None:
        self.entries: List[KernelEntry] = list(entries)
        self.source = source

    @property
    def keys(self) -> FrozenSet[str]:
        return frozenset(e.key for e in self.entries)

    def __contains__(self, key: object) -> bool:
        return key in self.keys

    def __repr__(self) -> str:
        return f"KernelLibrary({self.source!r}, {sorted(self.keys)})"

    @staticmethod
    def from_rows(rows: Any, source: str = "<memory>") -> "KernelLibrary":
        """From the parsed file: a list of {"func": schema, "kernel": name}."""
        if isinstance(rows, dict) and "kernels" in rows:
            rows = rows["kernels"]
        if not isinstance(rows, list):
            raise ValueError(f"{source}: expected a list of kernels ({{func: ..., kernel: ...}})")
        entries = []
        for i, row in enumerate(rows):
            if not isinstance(row, dict) or not isinstance(row.get("func"), str):
                raise ValueError(f"{source}: entry {i} has no 'func' (the out-variant schema)")
            unknown = set(row) - {"func", "kernel"}
            if unknown:
                raise ValueError(f"{source}: entry {i} has unknown fields {sorted(unknown)}")
            kernel = row.get("kernel")
            if kernel is not None and not isinstance(kernel, str):
                raise ValueError(f"{source}: entry {i}: 'kernel' must be a string")
            try:
                key = _key_of(row["func"])
            except ValueError as e:
                raise ValueError(f"{source}: entry {i}: {e}") from None
            entries.append(KernelEntry(key, row["func"].strip(), kernel))
        return KernelLibrary(entries, source)

    @staticmethod
    def load(path: Union[str, "os.PathLike[str]"]) -> "KernelLibrary":
        """Reads a description file (.yaml / .yml / .json)."""
        p = Path(path)
        text = p.read_text()
        if p.suffix in (".yaml", ".yml"):
            try:
                import yaml
            except ImportError:
                raise ImportError(f"{p}: reading YAML needs PyYAML (pip install pyyaml); "
                                  "or write the description as .json") from None
            rows = yaml.safe_load(text)
        elif p.suffix == ".json":
            rows = json.loads(text)
        else:
            raise ValueError(f"{p}: a kernel library description is .yaml, .yml or .json")
        return KernelLibrary.from_rows(rows, str(p))

    def check_schemas(self) -> None:
        """Each func whose operator torch knows must match its registered schema."""
        for e in self.entries:
            ns, rest = e.key.split("::", 1)
            name, _, overload = rest.partition(".")
            packet = getattr(getattr(torch.ops, ns, None), name, None)
            try:
                op = getattr(packet, overload or "default") if packet is not None else None
            except (AttributeError, RuntimeError):
                op = None
            if op is None:
                continue
            if str(_parse(e.func)) != str(op._schema):
                raise ExportError(
                    f"{self.source}: the kernel {e.key} is described as\n  {e.func}\n"
                    f"but torch registers the operator as\n  {op._schema}\n"
                    "Make the description match the operator's torch.library schema.")


def load_libraries(libs: Iterable[Union[str, "os.PathLike[str]", KernelLibrary]]
                   ) -> List[KernelLibrary]:
    """KernelLibrary objects for paths and libraries, schemas checked."""
    if isinstance(libs, (str, os.PathLike, KernelLibrary)):
        libs = [libs]  # one library given on its own
    out = []
    for lib in libs:
        if not isinstance(lib, KernelLibrary):
            lib = KernelLibrary.load(lib)
        lib.check_schemas()
        out.append(lib)
    return out


class KernelSet:
    """Kernels available to the runtime: a base registry plus libraries."""

    def __init__(self, base: Any, libraries: Sequence[KernelLibrary]) -> None:
        self._base = base
        self._libraries = list(libraries)

    def __contains__(self, key: object) -> bool:
        return (self._base is not None and key in self._base) or \
            any(key in lib for lib in self._libraries)


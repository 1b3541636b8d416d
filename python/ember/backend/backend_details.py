"""What a backend implements ahead of time: `preprocess` a subgraph into a payload."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Type

from torch.export import ExportedProgram


@dataclass
class CompileSpec:
    """A backend option written into the program next to the payload."""

    key: str
    value: bytes


@dataclass
class PreprocessResult:
    processed_bytes: bytes = b""
    # Optional map from the backend's own identifiers to node debug handles.
    debug_handle_map: Optional[Dict[Any, Any]] = None
    # Blobs the payload names by key (weights): they go to the program's named
    # data, where the runtime backend loads them at init (ember_backend_get_data).
    named_data: Dict[str, bytes] = field(default_factory=dict)
    # Keys of named_data that go to a `.ptd` data file instead: key -> the
    # file's tag ("<tag>.ptd"); the runtime finds them in the method's data maps.
    external_tags: Dict[str, str] = field(default_factory=dict)


class BackendDetails(ABC):
    """Subclass this (the class name is the backend id the runtime looks up)."""

    @staticmethod
    @abstractmethod
    def preprocess(edge_program: ExportedProgram,
                   compile_specs: List[CompileSpec]) -> PreprocessResult:
        """Compiles the edge subgraph into the bytes the runtime backend receives at init."""


def find_backend(backend_id: str) -> Type[BackendDetails]:
    """The BackendDetails subclass named backend_id."""
    todo = list(BackendDetails.__subclasses__())
    while todo:
        cls = todo.pop()
        if cls.__name__ == backend_id:
            return cls
        todo.extend(cls.__subclasses__())
    raise KeyError(f"no BackendDetails subclass named {backend_id!r}; define one (its class "
                   "name is the backend id) and import it before lowering")

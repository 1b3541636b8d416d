"""Export errors that point at the user's source line."""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

import torch

_FRAME = re.compile(r'File "(.*?)", line (\d+), in (.*?)\n([^\n]*)')


class ExportError(RuntimeError):
    """The model cannot be exported as asked; the message says why and what to do."""


class IRValidityError(ExportError):
    """An operator is not allowed in an edge program."""


def stack_frames(stack_trace: Optional[str]) -> List[Tuple[str, int, str, str]]:
    """(filename, lineno, function, source line) for each frame of a node's stack trace."""
    if not stack_trace:
        return []
    return [(f, int(n), name, ctx.strip()) for f, n, name, ctx in _FRAME.findall(stack_trace)]


def _is_library_file(path: str) -> bool:
    return "site-packages" in path or "/torch/" in path or "dist-packages" in path


def source_location(node: torch.fx.Node) -> str:
    """'model.py:42 in forward: `y = x.foo()`' for the user frame that created node."""
    frames = stack_frames(node.meta.get("stack_trace"))
    if not frames:
        return "an unknown source line (the node has no stack trace)"
    user = [f for f in frames if not _is_library_file(f[0])]
    filename, lineno, name, context = (user or frames)[-1]
    where = f"{filename}:{lineno} in {name}"
    return f"{where}: `{context}`" if context else where

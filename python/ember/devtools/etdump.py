"""Traces from ember's runtime, read with ExecuTorch's own developer tools.

A method loaded with an event tracer records its load and every execute;
its ``etdump()`` is ExecuTorch's ETDump format, so ExecuTorch's Inspector
reads it, with an ETRecord of the same program or without one:

    from ember.runtime import Runtime, EventTracerConfig
    from ember.devtools import inspector_for

    program = Runtime.get().load_program("model.pte")
    method = program.load_method("forward", event_tracer=EventTracerConfig(debug_outputs="full"))
    method.execute([x])
    inspector = inspector_for(method, etrecord="model.etrecord")
    inspector.print_data_tabular()

The Inspector comes from the ``executorch`` package (``pip install executorch``);
nothing here is needed to record or write traces.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any, Optional, Union

PathLike = Union[str, "os.PathLike[str]"]


def read_etdump(data: bytes) -> Any:
    """Decodes ETDump bytes with ExecuTorch's reader (its flatc), returning
    its ``ETDumpFlatCC`` dataclass (``version``, ``run_data[...]``)."""
    try:
        from executorch.devtools.etdump.serialize import deserialize_from_etdump_flatcc
    except ImportError as e:  # pragma: no cover - depends on the installation
        raise ImportError("read_etdump needs the executorch package (pip install executorch)") from e
    return deserialize_from_etdump_flatcc(bytes(data))


def inspector_for(method: Any, etrecord: Optional[Any] = None, *,
                  debug_data: bool = True, **inspector_kwargs: Any) -> Any:
    """An ExecuTorch ``Inspector`` over what ``method`` (an ember.runtime.Method
    loaded with an event tracer) has recorded so far.

    etrecord: an ETRecord (object or path) from ExecuTorch's
        ``generate_etrecord`` for the same program, or None.
    debug_data: hand the Inspector the recorded tensors (debug_buffer_path),
        so events carry their outputs.
    Other keyword arguments go to the Inspector (``target_time_scale``, ...);
    ember's timestamps are nanoseconds (the default ``source_time_scale``).
    """
    try:
        from executorch.devtools import Inspector
    except ImportError as e:  # pragma: no cover - depends on the installation
        raise ImportError("inspector_for needs the executorch package (pip install executorch)") from e
    with tempfile.TemporaryDirectory(prefix="ember-etdump-") as d:
        etdump_path = os.path.join(d, "trace.etdp")
        debug_path = os.path.join(d, "trace.debug") if debug_data else None
        method.write_etdump(etdump_path, debug_path)
        return Inspector(etdump_path=etdump_path, etrecord=etrecord,
                         debug_buffer_path=debug_path, **inspector_kwargs)

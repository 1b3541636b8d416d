"""Run `.pte` programs in libember from Python, the way `executorch.runtime` does.

    import torch
    from ember.runtime import Runtime

    program = Runtime.get().load_program("model.pte")   # or bytes / bytearray / memoryview
    program.method_names                                  # {"forward"}
    meta = program.metadata("forward")                    # inputs, outputs, planned memory, operators
    method = program.load_method("forward")
    outputs = method.execute([torch.randn(4, 16)])        # list of torch.Tensor (copies)

    # weights kept outside the program, in .ptd files (ExecuTorch's data files):
    program = Runtime.get().load_program("model.pte", data_files=["model.ptd"])

    # a bundled program (.bpte): the program plus test cases, run and verified
    bundle = Runtime.get().load_bundled_program("model.bpte")
    result = bundle.verify("forward", 0, rtol=1e-5, atol=1e-8)   # result.passed, .message

Every program is verified when it loads; a failure in libember raises `EmberError`
with the runtime's status and message. `kernel_names()` and `has_kernel()` tell
which operators the runtime's portable kernel library implements.
"""

from __future__ import annotations

import enum
import errno
import io
import os
from dataclasses import dataclass
from typing import Any, Dict, FrozenSet, List, Optional, Sequence, Tuple, Union

import numpy as np
import torch

try:
    from . import _runtime
except ImportError as e:  # pragma: no cover - depends on the installation
    raise ImportError(
        "ember.runtime needs the compiled extension ember._runtime, which is built by "
        "`pip install -e .` (or scripts/bootstrap.sh) from the repository root"
    ) from e

__all__ = [
    "Runtime",
    "Program",
    "Method",
    "EventTracerConfig",
    "MethodMeta",
    "DataMap",
    "BundledProgramRunner",
    "BundledCaseResult",
    "is_bundled_program",
    "ValueMeta",
    "EmberError",
    "Status",
    "OperatorRegistry",
    "kernel_names",
    "has_kernel",
    "has_backend",
    "backend_available",
    "vulkan_device_name",
    "vulkan_info",
    "vulkan_device_release",
    "load_library",
    "manual_seed",
    "dtype_to_ember",
    "dtype_from_ember",
]

#: A libember call failed. ``status`` (int) is the ember_status code,
#: ``status_name`` its symbolic name ("NOT_FOUND", "TRUNCATED", ...),
#: ``message`` the runtime's last error message (``ember_last_error()``), and
#: ``debug_handle`` the handle of the node a failing delegate named (else
#: None): ``ExecutorchProgramManager.debug_handle_info(handle)`` leads from it
#: to the operator and its source line. A subclass of RuntimeError.
EmberError = _runtime.EmberError

#: ember_status codes by name (``Status.NOT_FOUND == 0x0102``).
Status = enum.IntEnum("Status", _runtime.status_codes())  # type: ignore[misc]
Status.__module__ = __name__

# ---------------------------------------------------------------------------
# dtypes: torch <-> ember (the file format's ScalarType codes)
# ---------------------------------------------------------------------------

_TORCH_TO_EMBER: Dict[torch.dtype, int] = {
    torch.uint8: 0,
    torch.int8: 1,
    torch.int16: 2,
    torch.int32: 3,
    torch.int64: 4,
    torch.float16: 5,
    torch.float32: 6,
    torch.float64: 7,
    torch.bool: 11,
    torch.qint8: 12,
    torch.quint8: 13,
    torch.qint32: 14,
    torch.bfloat16: 15,
    torch.quint4x2: 16,
    torch.quint2x4: 17,
    torch.uint16: 27,
    torch.uint32: 28,
    torch.uint64: 29,
}
for _name, _code in (("bits16", 22), ("float8_e5m2", 23), ("float8_e4m3fn", 24),
                     ("float8_e5m2fnuz", 25), ("float8_e4m3fnuz", 26)):
    if hasattr(torch, _name):
        _TORCH_TO_EMBER[getattr(torch, _name)] = _code
_EMBER_TO_TORCH: Dict[int, torch.dtype] = {code: dt for dt, code in _TORCH_TO_EMBER.items()}

# dtypes whose tensors numpy can view directly; the rest travel as raw bytes.
_NUMPY_OK = {torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16,
             torch.float32, torch.float64, torch.bool, torch.uint16, torch.uint32, torch.uint64}


def dtype_to_ember(dtype: torch.dtype) -> int:
    """The ember dtype code of a torch dtype (``torch.float32`` -> 6)."""
    try:
        return _TORCH_TO_EMBER[dtype]
    except KeyError:
        raise TypeError(f"ember has no dtype for {dtype}") from None


def dtype_from_ember(code: int) -> torch.dtype:
    """The torch dtype of an ember dtype code (6 -> ``torch.float32``)."""
    try:
        return _EMBER_TO_TORCH[code]
    except KeyError:
        raise TypeError(f"torch has no dtype for ember dtype code {code} "
                        f"({_runtime.dtype_name(code)})") from None


# ---------------------------------------------------------------------------
# Kernels
# ---------------------------------------------------------------------------

def kernel_names() -> List[str]:
    """Every kernel key in the runtime's portable kernel library, sorted
    (``["aten::_softmax.out", ..., "aten::add.out", ...]``). Keys are
    ``namespace::name.overload``, as in a program's operator table."""
    return sorted(set(_runtime.kernel_names()))


def has_kernel(name: str) -> bool:
    """True if the runtime has a kernel for this key (``"aten::add.out"``)."""
    return bool(_runtime.has_kernel(str(name)))


def manual_seed(seed: int) -> None:
    """Seeds the random generator of the portable kernels (rand, randn, randperm,
    native_dropout in training mode), so runs that follow repeat their values.
    Their streams are not PyTorch's: the same seed gives other numbers than
    torch.manual_seed."""
    _runtime.manual_seed(int(seed))


def has_backend(backend_id: str) -> bool:
    """True if a backend is registered under this id (the id a program names)."""
    return bool(_runtime.has_backend(str(backend_id)))


def backend_available(backend_id: str) -> bool:
    """True if a backend is registered under this id and can run here (e.g.
    VulkanBackend where a Vulkan device with a compute queue exists)."""
    return bool(_runtime.backend_available(str(backend_id)))


def vulkan_device_name() -> Optional[str]:
    """The name of the Vulkan device VulkanBackend runs on, or None where there
    is none (or ember was built without Vulkan)."""
    return _runtime.vulkan_device_name()


def vulkan_info() -> Optional[dict]:
    """What VulkanBackend holds on its device, or None where there is no device:
    {"device": name, "float16_storage": whether delegates loaded now keep
    float16 tensors as 16-bit floats (the device has 16-bit storage and
    EMBER_VULKAN_STORAGE is not "float32"), "weights_bytes" and
    "arena_bytes": the GPU buffers of the Vulkan delegates loaded now,
    "delegates": how many are loaded, "objects": the Vulkan objects
    VulkanBackend holds (its device context's and the delegates'),
    "pipelines": the compute pipelines cached, "instances_made": the Vulkan
    instances made in this process}."""
    return _runtime.vulkan_info()


def vulkan_device_release() -> None:
    """Destroys VulkanBackend's device context (instance, device, shaders,
    cached pipelines), which otherwise stays for the process once made, so
    that the next program does not load the driver again. Raises EmberError
    (INVALID_STATE) while a Vulkan delegate is loaded; the next Vulkan
    delegate makes the context anew."""
    _runtime.vulkan_device_release()


def load_library(path: Union[str, "os.PathLike[str]"]) -> None:
    """Loads a shared library of custom kernels and/or backends into the runtime.

    The library links libember.so (the one beside ``ember._runtime``; link
    with ``-L<ember package dir> -l:libember.so.0``) and exports
    ``ember_status ember_library_register(void)``, which registers its
    kernels (``ember_kernels_register``) and backends
    (``ember_backend_register``). Programs loaded afterwards can use them.
    The library stays loaded for the life of the process. Raises EmberError
    if it cannot be opened, has no entry point, or its registration fails.
    """
    _runtime.load_library(os.fspath(path))


def library_dir() -> str:
    """The directory holding libember.so for libraries passed to load_library()."""
    return os.path.dirname(os.path.abspath(_runtime.__file__))


class OperatorRegistry:
    """The kernels the runtime can run (as ``executorch.runtime`` names it)."""

    @property
    def operator_names(self) -> FrozenSet[str]:
        return frozenset(kernel_names())

    def has(self, name: str) -> bool:
        return has_kernel(name)


# ---------------------------------------------------------------------------
# Metadata
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class ValueMeta:
    """One input or output of a method.

    kind: "tensor", "int", "double", "bool", "none", ...; for tensors, dtype
    (a torch dtype), sizes (upper bounds when dynamic), dim_order, dynamism
    ("static", "dynamic_bound", "dynamic_unbound"), planned (the storage is
    memory-planned) and nbytes (at the upper-bound shape).
    """

    kind: str
    dtype: Optional[torch.dtype]
    sizes: Tuple[int, ...]
    dim_order: Tuple[int, ...]
    dynamism: str
    planned: bool
    nbytes: int

    @property
    def is_tensor(self) -> bool:
        return self.kind == "tensor"

    @staticmethod
    def _from_dict(d: Dict[str, Any]) -> "ValueMeta":
        code = d["dtype"]
        dtype = None if code is None else _EMBER_TO_TORCH.get(code)
        return ValueMeta(kind=d["kind"], dtype=dtype, sizes=tuple(d["sizes"]),
                         dim_order=tuple(d["dim_order"]), dynamism=d["dynamism"],
                         planned=bool(d["planned"]), nbytes=int(d["nbytes"]))


@dataclass(frozen=True)
class MethodMeta:
    """What a method takes, returns and needs, read without loading it."""

    name: str
    inputs: Tuple[ValueMeta, ...]
    outputs: Tuple[ValueMeta, ...]
    planned_buffer_sizes: Tuple[int, ...]  # bytes of the buffer for memory id i + 1
    operators: Tuple[str, ...]             # kernel keys, in the program's operator table order
    num_instructions: int
    num_delegates: int
    num_values: int

    # The executorch.runtime MethodMeta spellings.
    def num_inputs(self) -> int:
        return len(self.inputs)

    def num_outputs(self) -> int:
        return len(self.outputs)

    def input_tensor_meta(self, i: int) -> ValueMeta:
        return self.inputs[i]

    def output_tensor_meta(self, i: int) -> ValueMeta:
        return self.outputs[i]

    def num_memory_planned_buffers(self) -> int:
        return len(self.planned_buffer_sizes)

    def memory_planned_buffer_size(self, i: int) -> int:
        return self.planned_buffer_sizes[i]

    @staticmethod
    def _from_dict(d: Dict[str, Any]) -> "MethodMeta":
        return MethodMeta(
            name=d["name"],
            inputs=tuple(ValueMeta._from_dict(v) for v in d["inputs"]),
            outputs=tuple(ValueMeta._from_dict(v) for v in d["outputs"]),
            planned_buffer_sizes=tuple(d["planned_buffer_sizes"]),
            operators=tuple(d["operators"]),
            num_instructions=d["num_instructions"],
            num_delegates=d["num_delegates"],
            num_values=d["num_values"],
        )


# ---------------------------------------------------------------------------
# Inputs and outputs
# ---------------------------------------------------------------------------

def _permutes(dim_order: Optional[Sequence[int]], ndim: int) -> bool:
    """Whether a tensor of ndim dims with this dim order is laid out other than contiguously."""
    return dim_order is not None and len(dim_order) == ndim and \
        tuple(dim_order) != tuple(range(ndim))


def _tensor_input(t: torch.Tensor, dim_order: Optional[Sequence[int]] = None
                  ) -> Tuple[int, Tuple[int, ...], Any]:
    """(dtype code, shape, buffer) of a tensor, the buffer laid out in the program's
    dim order for that input (contiguous unless it says otherwise, e.g. channels
    last); shares the tensor's memory when it can."""
    code = dtype_to_ember(t.dtype)
    t = t.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    shape = tuple(t.shape)
    t = t.resolve_conj().resolve_neg()
    t = t.permute(tuple(dim_order)).contiguous() if _permutes(dim_order, t.dim()) \
        else t.contiguous()
    if t.dtype in _NUMPY_OK:
        data = t.numpy()
    else:  # bfloat16, float8, quantized: the raw bytes
        data = t.reshape(-1).view(torch.uint8).numpy() if t.numel() else b""
    return code, shape, data


def _array_input(a: np.ndarray, dim_order: Optional[Sequence[int]] = None
                 ) -> Tuple[int, Tuple[int, ...], Any]:
    shape = tuple(a.shape)
    a = np.ascontiguousarray(a.transpose(tuple(dim_order)) if _permutes(dim_order, a.ndim) else a)
    try:
        dtype = torch.from_numpy(np.empty(0, dtype=a.dtype)).dtype
    except TypeError:
        raise TypeError(f"ember cannot take a numpy array of dtype {a.dtype}") from None
    return dtype_to_ember(dtype), shape, a


def _convert_input(x: Any, meta: Optional[ValueMeta], i: int) -> Any:
    order = meta.dim_order if meta is not None and meta.is_tensor else None
    if isinstance(x, torch.Tensor):
        if meta is not None and meta.kind in ("int", "double", "bool") and x.numel() == 1:
            return x.item()  # a scalar input given as a one-element tensor
        return _tensor_input(x, order)
    if isinstance(x, np.ndarray):
        return _array_input(x, order)
    if isinstance(x, np.generic):
        return x.item()
    if x is None or isinstance(x, (bool, int, float)):
        return x
    raise TypeError(f"input {i}: ember cannot take a {type(x).__name__} "
                    f"(give a torch.Tensor, a numpy array, an int, float or bool, or None)")


def _tensor_output(code: int, shape: Sequence[int], data: bytearray) -> torch.Tensor:
    """The output as a contiguous torch tensor (the extension gathers the
    elements in row-major order whatever the program's dim order)."""
    dtype = dtype_from_ember(code)
    if len(data) == 0:
        return torch.empty(tuple(shape), dtype=dtype)
    # `data` is a fresh copy that only this tensor refers to.
    return torch.frombuffer(data, dtype=dtype).reshape(tuple(shape))


def _convert_output(x: Any) -> Any:
    if isinstance(x, tuple):
        return _tensor_output(*x)
    if isinstance(x, list):
        return [_convert_output(v) for v in x]
    return x


# ---------------------------------------------------------------------------
# Runtime, Program, Method
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class EventTracerConfig:
    """What a method's event tracer records (see docs/devtools.md).

    profile: the time of every instruction, of load/init/execute, and the
        delegates' own per-node events.
    allocations: the method allocator's and planned memory's allocations at
        load (ExecuTorch 1.5's Inspector cannot read these: leave it off for
        traces meant for it).
    debug_outputs: None, "full" (every instruction's output tensor, copied
        into the debug buffer) or "stats" (a float64 [hash, numel, min, max,
        mean] per tensor instead).
    program_outputs: the method's outputs after every execute.
    buffer_bytes / debug_buffer_bytes: sizes of the tracer's buffer and of
        the debug buffer; events that do not fit are dropped and counted
        (Method.trace_stats()).
    """

    profile: bool = True
    allocations: bool = False
    debug_outputs: Optional[str] = None
    program_outputs: bool = False
    buffer_bytes: int = 4 << 20
    debug_buffer_bytes: int = 64 << 20

    def flags(self) -> int:
        if self.debug_outputs not in (None, "full", "stats"):
            raise ValueError(f"debug_outputs must be None, 'full' or 'stats', not {self.debug_outputs!r}")
        f = 0
        if self.profile:
            f |= _runtime.TRACE_PROFILE
        if self.allocations:
            f |= _runtime.TRACE_ALLOCATIONS
        if self.debug_outputs == "full":
            f |= _runtime.TRACE_DEBUG_OUTPUTS
        if self.debug_outputs == "stats":
            f |= _runtime.TRACE_DEBUG_STATS
        if self.program_outputs:
            f |= _runtime.TRACE_PROGRAM_OUTPUTS
        if f == 0:
            raise ValueError("EventTracerConfig records nothing: enable at least one kind of event")
        return f


class Method:
    """A loaded method, ready to execute. Use it from one thread at a time;
    state in mutable buffers persists from one execute to the next."""

    def __init__(self, impl: Any, meta: MethodMeta) -> None:
        self._impl = impl
        self._meta = meta

    @property
    def name(self) -> str:
        return self._meta.name

    @property
    def metadata(self) -> MethodMeta:
        return self._meta

    def execute(self, inputs: Sequence[Any]) -> List[Any]:
        """Runs the method on inputs (torch tensors, numpy arrays, or int /
        float / bool for scalar inputs) and returns its outputs: torch
        tensors (copies, safe to keep) and Python scalars."""
        if isinstance(inputs, (torch.Tensor, np.ndarray)):
            inputs = [inputs]
        inputs = list(inputs)
        metas = self._meta.inputs
        # A count mismatch passes through unconverted: the extension raises
        # EmberError (INVALID_ARGUMENT) naming both counts.
        converted = [_convert_input(x, metas[i] if i < len(metas) else None, i)
                     for i, x in enumerate(inputs)]
        return [_convert_output(x) for x in self._impl.execute(converted)]

    # -- the event tracer (loaded with event_tracer=EventTracerConfig(...)) --

    def etdump(self) -> bytes:
        """The events recorded so far as an ETDump (ExecuTorch's .etdp format):
        a run "load:<method>" and one run per execute."""
        return bytes(self._impl.etdump())

    def debug_buffer(self) -> bytes:
        """The recorded tensor data that the ETDump's debug events refer to by
        offset (ExecuTorch Inspector's debug_buffer_path)."""
        return bytes(self._impl.debug_buffer())

    def trace_stats(self) -> Dict[str, Any]:
        """events, dropped, runs, bytes_used, bytes_total, debug_used, and
        status: "" while every event fit, else why some were dropped."""
        return dict(self._impl.trace_stats())

    def reset_trace(self) -> None:
        """Forgets every recorded event and tensor."""
        self._impl.trace_reset()

    def write_etdump(self, path: Union[str, "os.PathLike[str]"],
                     debug_buffer_path: Optional[Union[str, "os.PathLike[str]"]] = None) -> None:
        """Writes etdump() to path, and debug_buffer() to debug_buffer_path if given."""
        with open(path, "wb") as f:
            f.write(self.etdump())
        if debug_buffer_path is not None:
            with open(debug_buffer_path, "wb") as f:
                f.write(self.debug_buffer())

    def __repr__(self) -> str:
        return f"<ember.runtime.Method {self.name!r}>"


class Program:
    """A loaded and verified program. Immutable; methods loaded from it keep it alive."""

    def __init__(self, impl: Any) -> None:
        self._impl = impl
        self._names = tuple(impl.method_names())

    @property
    def method_names(self) -> FrozenSet[str]:
        """Names of the program's methods (a set, as in executorch.runtime)."""
        return frozenset(self._names)

    @property
    def nbytes(self) -> int:
        """Size of the program file in bytes."""
        return int(self._impl.nbytes)

    def metadata(self, method_name: str) -> MethodMeta:
        """Inputs, outputs, planned buffer sizes and operators of a method."""
        return MethodMeta._from_dict(self._impl.method_meta(method_name))

    def load_method(self, name: str, num_threads: int = 0, *,
                    event_tracer: Optional[EventTracerConfig] = None) -> Method:
        """Loads a method (platform-heap memory), with num_threads threads for its
        kernels and delegates (0: one per CPU core; 1: the calling thread only).
        With event_tracer, the method records its load and every execute
        (Method.etdump(), Method.debug_buffer()). Raises EmberError if the name
        is unknown or the runtime lacks one of its kernels or backends."""
        if event_tracer is None:
            impl = self._impl.load_method(name, int(num_threads))
        else:
            impl = self._impl.load_method(name, int(num_threads), event_tracer.flags(),
                                          int(event_tracer.buffer_bytes),
                                          int(event_tracer.debug_buffer_bytes))
        return Method(impl, self.metadata(name))

    def __repr__(self) -> str:
        return f"<ember.runtime.Program methods={list(self._names)} nbytes={self.nbytes}>"


PathOrData = Union[bytes, bytearray, memoryview, str, "os.PathLike[str]", io.BufferedIOBase]


class DataMap:
    """A verified `.ptd` data map (ExecuTorch's flat tensor file): blobs by key,
    the weights a program keeps outside itself. Immutable."""

    def __init__(self, impl: Any) -> None:
        self._impl = impl

    def keys(self) -> List[str]:
        """Every key, in file order."""
        return list(self._impl.keys())

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and key in self._impl.keys()

    def __len__(self) -> int:
        return len(self._impl.keys())

    def info(self, key: str) -> Dict[str, Any]:
        """size (bytes of the blob) and, for a tensor entry, dtype (a torch dtype),
        sizes, dim_order and nbytes (None for other blobs). Raises EmberError
        (NOT_FOUND) for an unknown key."""
        d = dict(self._impl.info(str(key)))
        if d["dtype"] is not None:
            d["dtype"] = _EMBER_TO_TORCH.get(d["dtype"])
        return d

    def load(self, key: str) -> bytes:
        """A copy of the blob of `key`."""
        return self._impl.load(str(key))

    @property
    def nbytes(self) -> int:
        """Size of the .ptd file in bytes."""
        return int(self._impl.nbytes)

    def __repr__(self) -> str:
        return f"<ember.runtime.DataMap keys={len(self)} nbytes={self.nbytes}>"


DataSource = Union[PathOrData, DataMap]


def _open_data_map(data: DataSource) -> Any:
    if isinstance(data, DataMap):
        return data._impl
    if isinstance(data, (str, os.PathLike)):
        path = os.fspath(data)
        if os.path.isdir(path):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
        return _runtime.load_data_map_file(path)
    if hasattr(data, "read") and not isinstance(data, (bytes, bytearray, memoryview)):
        data = data.read()
    return _runtime.load_data_map_bytes(data)


@dataclass(frozen=True)
class BundledCaseResult:
    """How one test case of a bundled program ran: ``passed``, ``message`` (the
    runtime's mismatch message naming output, element, got and expected; empty
    when it passed) and the comparison's statistics (``max_abs_error`` and
    ``max_rel_error`` over every element, ``num_mismatches``, ``first_output``
    and ``first_element`` of the first mismatch, -1 if none)."""

    method_name: str
    case: int
    passed: bool
    message: str
    num_outputs: int
    num_elements: int
    num_mismatches: int
    max_abs_error: float
    max_rel_error: float
    first_output: int
    first_element: int

    def __bool__(self) -> bool:
        return self.passed


class BundledProgramRunner:
    """A verified bundled program (``Runtime.load_bundled_program``): its
    program, loaded, and its test suites, run and checked by libember."""

    def __init__(self, bundled: Any, program: "Program", num_threads: int = 1) -> None:
        self._bundled = bundled
        self.program = program
        self._num_threads = num_threads
        self._methods: Dict[str, Method] = {}

    @property
    def version(self) -> int:
        """The bundled schema version the writer recorded."""
        return int(self._bundled.version)

    @property
    def method_test_suites(self) -> Dict[str, int]:
        """Number of test cases per method name, in file order."""
        return {name: n for name, n in self._bundled.suites()}

    def program_bytes(self) -> bytes:
        """A copy of the embedded `.pte`."""
        return self._bundled.program()

    def load_method(self, method_name: str) -> Method:
        """The method (loaded once, reused by verify)."""
        if method_name not in self._methods:
            self._methods[method_name] = self.program.load_method(method_name,
                                                                  self._num_threads)
        return self._methods[method_name]

    def verify(self, method_name: str = "forward", case: int = 0, rtol: float = 1e-5,
               atol: float = 1e-8) -> BundledCaseResult:
        """Sets the inputs of test case ``case`` of a method, executes it and
        compares the outputs with the expected ones. A mismatch gives a result
        with passed False; anything else that fails (no such suite or case,
        inputs that do not fit, execute errors) raises EmberError."""
        d = self.load_method(method_name)._impl.run_bundled(
            self._bundled, method_name, int(case), float(rtol), float(atol))
        return BundledCaseResult(method_name=method_name, case=int(case), **d)

    def verify_all(self, rtol: float = 1e-5, atol: float = 1e-8) -> List[BundledCaseResult]:
        """verify() on every case of every suite."""
        return [self.verify(name, k, rtol, atol)
                for name, n in self._bundled.suites() for k in range(n)]

    def __repr__(self) -> str:
        return f"<ember.runtime.BundledProgramRunner suites={self.method_test_suites}>"


def is_bundled_program(data: Union[bytes, bytearray, memoryview]) -> bool:
    """Whether data carries the bundled-program identifier ("BP08")."""
    return bool(_runtime.is_bundled(data))


class Runtime:
    """The process's ember runtime (``Runtime.get()``), as in executorch.runtime."""

    _instance: Optional["Runtime"] = None

    def __init__(self) -> None:
        self.operator_registry = OperatorRegistry()

    @staticmethod
    def get() -> "Runtime":
        if Runtime._instance is None:
            Runtime._instance = Runtime()
        return Runtime._instance

    def load_program(self, data: PathOrData, *, verification: Any = None,
                     data_files: Optional[Sequence[DataSource]] = None,
                     data_path: Optional[Union[str, "os.PathLike[str]"]] = None) -> Program:
        """Loads and fully verifies a program from a path (str or PathLike),
        from bytes-like data (copied: the caller may reuse its buffer), or from
        a binary file object. ``verification`` is accepted for compatibility;
        ember always verifies everything.

        ``data_files``: the `.ptd` files holding what the program keeps outside
        itself (weights exported with ``external_constants``, delegate data),
        each a path, bytes-like data, a file object or a DataMap; they are
        verified here and searched in order (after the program's own named
        data) when a method loads. ``data_path`` is executorch.runtime's
        spelling of one such file."""
        del verification
        sources: List[DataSource] = list(data_files or [])
        if data_path is not None:
            sources.append(data_path)
        maps = tuple(_open_data_map(d) for d in sources) or None
        if isinstance(data, (str, os.PathLike)):
            path = os.fspath(data)
            if os.path.isdir(path):
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
            return Program(_runtime.load_program_file(path, maps))
        if hasattr(data, "read") and not isinstance(data, (bytes, bytearray, memoryview)):
            data = data.read()
        return Program(_runtime.load_program_bytes(data, maps))

    def load_bundled_program(self, data: PathOrData, *, num_threads: int = 1
                             ) -> BundledProgramRunner:
        """Opens a bundled program (`.bpte`: a path, bytes-like data or a binary
        file object; copied), verifies all of it (the test cases and the
        embedded program) and loads its program. ``num_threads`` is for the
        methods it loads (1: the calling thread). Raises EmberError if any of
        it is malformed."""
        if isinstance(data, (str, os.PathLike)):
            with open(os.fspath(data), "rb") as f:
                data = f.read()
        elif hasattr(data, "read") and not isinstance(data, (bytes, bytearray, memoryview)):
            data = data.read()
        bundled = _runtime.open_bundled_bytes(data)
        program = Program(_runtime.load_program_bytes(bundled.program(), None))
        return BundledProgramRunner(bundled, program, num_threads)

    def load_data_map(self, data: PathOrData) -> DataMap:
        """Opens and fully verifies a `.ptd` data map (path, bytes-like data or a
        binary file object; bytes are copied). Raises EmberError if it is malformed."""
        return DataMap(_open_data_map(data))


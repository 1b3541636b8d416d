"""ETDump, read without ExecuTorch: a bounds-checked flatbuffer reader for
ExecuTorch's trace schema (`etdump_schema_flatcc.fbs`, identifier ``ED00``,
size-prefixed), and the tensors the debug buffer holds.

Every offset is checked against the buffer before it is followed, so a
truncated or corrupted file raises `ETDumpError` naming what was wrong,
never a struct or index error from inside the parser.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any, List, Optional

import torch


class ETDumpError(ValueError):
    """An ETDump file (or its debug buffer) that cannot be read."""


# ExecuTorch's ScalarType codes (they are ATen's).
_DTYPES = {0: torch.uint8, 1: torch.int8, 2: torch.int16, 3: torch.int32, 4: torch.int64,
           5: torch.float16, 6: torch.float32, 7: torch.float64, 11: torch.bool,
           15: torch.bfloat16}

# Value.val
VALUE_NULL, VALUE_INT, VALUE_BOOL, VALUE_FLOAT, VALUE_DOUBLE, VALUE_TENSOR, VALUE_TENSOR_LIST, \
    VALUE_STRING = range(8)


@dataclass
class TensorRef:
    """A tensor recorded in the debug buffer: dtype, sizes and byte offset."""

    dtype: torch.dtype
    sizes: List[int]
    offset: int

    def load(self, debug_buffer: Optional[bytes]) -> Optional[torch.Tensor]:
        if debug_buffer is None:
            return None
        numel = 1
        for s in self.sizes:
            numel *= s
        nbytes = numel * torch.empty((), dtype=self.dtype).element_size()
        if self.offset < 0 or self.offset + nbytes > len(debug_buffer):
            raise ETDumpError(f"a recorded tensor ({nbytes} bytes at offset {self.offset}) "
                              f"lies outside the debug buffer ({len(debug_buffer)} bytes)")
        if nbytes == 0:
            return torch.empty(self.sizes, dtype=self.dtype)
        raw = bytearray(debug_buffer[self.offset:self.offset + nbytes])
        return torch.frombuffer(raw, dtype=self.dtype).reshape(self.sizes).clone()


@dataclass
class ProfileEvent:
    name: str
    chain_index: int
    instruction_id: int
    delegate_debug_id_int: int
    delegate_debug_id_str: Optional[str]
    delegate_debug_metadata: bytes
    start_time: int
    end_time: int


@dataclass
class DebugEvent:
    chain_index: int
    instruction_id: int
    delegate_debug_id_int: int
    delegate_debug_id_str: Optional[str]
    name: Optional[str]
    value_type: int
    value: Any  # TensorRef, [TensorRef], int, float, bool or None
    output: bool


@dataclass
class AllocationEvent:
    allocator_id: int
    allocation_size: int


@dataclass
class RunData:
    name: str
    bundled_input_index: int
    allocators: List[str] = field(default_factory=list)
    profile_events: List[ProfileEvent] = field(default_factory=list)
    debug_events: List[DebugEvent] = field(default_factory=list)
    allocation_events: List[AllocationEvent] = field(default_factory=list)


@dataclass
class ETDump:
    version: int
    run_data: List[RunData]


class _Buf:
    def __init__(self, data: bytes, base: int) -> None:
        self.d = data
        self.base = base  # offsets inside the flatbuffer are relative to this

    def _need(self, pos: int, n: int, what: str) -> None:
        if pos < self.base or pos + n > len(self.d):
            raise ETDumpError(f"corrupted ETDump: {what} at byte {pos - self.base} lies outside "
                              f"the file ({len(self.d) - self.base} bytes)")

    def u(self, fmt: str, pos: int, what: str) -> Any:
        self._need(pos, struct.calcsize(fmt), what)
        return struct.unpack_from("<" + fmt, self.d, pos)[0]

    def table(self, pos: int, what: str) -> "_Table":
        soff = self.u("i", pos, what)
        vt = pos - soff
        vt_len = self.u("H", vt, what + " vtable")
        if vt_len < 4 or vt_len % 2:
            raise ETDumpError(f"corrupted ETDump: {what} has a bad vtable")
        self._need(vt, vt_len, what + " vtable")
        tbl_len = self.u("H", vt + 2, what + " vtable")
        self._need(pos, tbl_len, what)
        return _Table(self, pos, vt, vt_len, what)

    def ref(self, pos: int, what: str) -> int:
        return pos + self.u("I", pos, what)

    def vector(self, pos: int, elem: int, what: str) -> List[int]:
        start = self.ref(pos, what)
        n = self.u("I", start, what + " length")
        self._need(start + 4, n * elem, what)
        return [start + 4 + i * elem for i in range(n)]

    def string(self, pos: int, what: str) -> str:
        start = self.ref(pos, what)
        n = self.u("I", start, what + " length")
        self._need(start + 4, n, what)
        try:
            return bytes(self.d[start + 4:start + 4 + n]).decode("utf-8")
        except UnicodeDecodeError as e:
            raise ETDumpError(f"corrupted ETDump: {what} is not UTF-8") from e


class _Table:
    def __init__(self, b: _Buf, pos: int, vt: int, vt_len: int, what: str) -> None:
        self.b, self.pos, self.vt, self.vt_len, self.what = b, pos, vt, vt_len, what

    def _field(self, slot: int) -> Optional[int]:
        o = 4 + 2 * slot
        if o + 2 > self.vt_len:
            return None
        off = self.b.u("H", self.vt + o, self.what)
        return self.pos + off if off else None

    def scalar(self, slot: int, fmt: str, default: Any = 0) -> Any:
        p = self._field(slot)
        return default if p is None else self.b.u(fmt, p, f"{self.what} field {slot}")

    def table(self, slot: int, what: str) -> Optional[_Table]:
        p = self._field(slot)
        return None if p is None else self.b.table(self.b.ref(p, what), what)

    def string(self, slot: int, what: str) -> Optional[str]:
        p = self._field(slot)
        return None if p is None else self.b.string(p, what)

    def tables(self, slot: int, what: str) -> List[_Table]:
        p = self._field(slot)
        if p is None:
            return []
        return [self.b.table(self.b.ref(e, what), what) for e in self.b.vector(p, 4, what)]

    def scalars(self, slot: int, fmt: str, what: str) -> List[Any]:
        p = self._field(slot)
        if p is None:
            return []
        return [self.b.u(fmt, e, what) for e in self.b.vector(p, struct.calcsize(fmt), what)]

    def raw(self, slot: int, what: str) -> bytes:
        p = self._field(slot)
        if p is None:
            return b""
        elems = self.b.vector(p, 1, what)
        return bytes(self.b.d[elems[0]:elems[-1] + 1]) if elems else b""


def _tensor(t: _Table) -> TensorRef:
    code = t.scalar(0, "b")
    if code not in _DTYPES:
        raise ETDumpError(f"corrupted ETDump: a recorded tensor has unknown scalar type {code}")
    sizes = t.scalars(1, "q", "tensor sizes")
    if any(s < 0 for s in sizes):
        raise ETDumpError(f"corrupted ETDump: a recorded tensor has negative sizes {sizes}")
    return TensorRef(_DTYPES[code], sizes, t.scalar(3, "q"))


def _value(v: Optional[_Table]) -> tuple:
    if v is None:
        return VALUE_NULL, None, False
    kind = v.scalar(0, "b")
    out_t = v.table(7, "Value.output")
    output = bool(out_t.scalar(0, "?", False)) if out_t else False
    val: Any = None
    if kind == VALUE_TENSOR:
        t = v.table(1, "Value.tensor")
        val = _tensor(t) if t else None
    elif kind == VALUE_TENSOR_LIST:
        tl = v.table(2, "Value.tensor_list")
        val = [_tensor(t) for t in tl.tables(0, "TensorList.tensors")] if tl else []
    elif kind == VALUE_INT:
        t = v.table(3, "Value.int_value")
        val = t.scalar(0, "q") if t else None
    elif kind == VALUE_FLOAT:
        t = v.table(4, "Value.float_value")
        val = t.scalar(0, "f", 0.0) if t else None
    elif kind == VALUE_DOUBLE:
        t = v.table(5, "Value.double_value")
        val = t.scalar(0, "d", 0.0) if t else None
    elif kind == VALUE_BOOL:
        t = v.table(6, "Value.bool_value")
        val = bool(t.scalar(0, "?", False)) if t else None
    return kind, val, output


def parse_etdump(data: bytes) -> ETDump:
    """Decodes ETDump bytes (size-prefixed, or a plain flatbuffer) into `ETDump`.

    Raises ETDumpError when the bytes are not an ETDump or are damaged.
    """
    data = bytes(data)
    if len(data) < 12:
        raise ETDumpError(f"not an ETDump: {len(data)} bytes is too short")
    if data[8:12] == b"ED00":
        base = 4  # size prefix
        size = struct.unpack_from("<I", data, 0)[0]
        if size + 4 > len(data):
            raise ETDumpError(f"truncated ETDump: the header says {size + 4} bytes, "
                              f"the file has {len(data)}")
    elif data[4:8] == b"ED00":
        base = 0
    else:
        raise ETDumpError("not an ETDump: file identifier 'ED00' not found")
    b = _Buf(data, base)
    root = b.table(b.ref(base, "root"), "ETDump")
    runs: List[RunData] = []
    for r in root.tables(1, "RunData"):
        run = RunData(r.string(0, "RunData.name") or "", r.scalar(1, "i", -1))
        run.allocators = [a.string(0, "Allocator.name") or "" for a in r.tables(2, "Allocator")]
        for ev in r.tables(3, "Event"):
            p = ev.table(0, "ProfileEvent")
            if p is not None:
                run.profile_events.append(ProfileEvent(
                    p.string(0, "ProfileEvent.name") or "", p.scalar(1, "i"),
                    p.scalar(2, "i", -1), p.scalar(3, "i", -1),
                    p.string(4, "ProfileEvent.delegate_debug_id_str"),
                    p.raw(5, "ProfileEvent.delegate_debug_metadata"),
                    p.scalar(6, "Q"), p.scalar(7, "Q")))
            a = ev.table(1, "AllocationEvent")
            if a is not None:
                run.allocation_events.append(AllocationEvent(a.scalar(0, "i"), a.scalar(1, "Q")))
            d = ev.table(2, "DebugEvent")
            if d is not None:
                kind, val, output = _value(d.table(2, "DebugEvent.debug_entry"))
                run.debug_events.append(DebugEvent(
                    d.scalar(0, "Q"), d.scalar(1, "i", -1), d.scalar(3, "i", -1),
                    d.string(4, "DebugEvent.delegate_debug_id_str"),
                    d.string(5, "DebugEvent.name"), kind, val, output))
        runs.append(run)
    return ETDump(root.scalar(0, "I"), runs)

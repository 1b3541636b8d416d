"""A small flatbuffer writer: tables, vtables, vectors, strings and unions.

Objects are described with the four classes below and written front to back:
the root table first, then every object it references, breadth first. Each
reference is a placeholder that is patched once its target has been written,
so every offset points forward, as the flatbuffer format requires of uoffsets.
Alignment follows the format's rules: a scalar sits at a multiple of its size,
a vector's elements at a multiple of their size (or of the schema's
force_align), the length word of a vector or string 4 bytes before them, and a
table at a multiple of its widest field. Identical vtables are shared.

The writer knows nothing about the program schema; `serialize.py` maps the
schema onto these objects.
"""

from __future__ import annotations

import struct
from collections import deque
from dataclasses import dataclass, field
from typing import Deque, Dict, Optional, Sequence, Tuple, Union

# Scalar struct formats (little-endian) and their sizes.
_SIZES = {"b": 1, "B": 1, "?": 1, "h": 2, "H": 2, "i": 4, "I": 4, "q": 8, "Q": 8, "f": 4, "d": 8}


@dataclass
class Scalar:
    """An inline scalar field; `fmt` is a struct format letter ('b', 'I', 'q', 'd', ...)."""

    fmt: str
    value: Union[int, float, bool]


@dataclass
class Vector:
    """A vector of scalars, optionally aligned beyond the element size (force_align)."""

    fmt: str
    items: Union[Sequence[Union[int, float, bool]], bytes]
    align: int = 1


@dataclass
class RefVector:
    """A vector of references to tables or strings."""

    items: Sequence["Object"]


@dataclass
class Table:
    """A table: `fields` maps a field id (its slot) to its value."""

    fields: Dict[int, "Field"] = field(default_factory=dict)


Object = Union[Table, Vector, RefVector, str]
Field = Union[Scalar, Object]


def _pad(buf: bytearray, align: int, extra: int = 0) -> None:
    """Zero-pads buf so that len(buf) + extra is a multiple of align."""
    buf.extend(b"\0" * (-(len(buf) + extra) % align))


class _Writer:
    def __init__(self) -> None:
        self.buf = bytearray()
        self.pending: Deque[Tuple[int, Object]] = deque()
        self.vtables: Dict[bytes, int] = {}
        self.max_align = 4

    def _ref(self, pos: int, obj: Object) -> None:
        self.buf.extend(b"\0\0\0\0")
        self.pending.append((pos, obj))

    def write(self, obj: Object) -> int:
        """Writes obj (not its children) and returns its position."""
        if isinstance(obj, str):
            data = obj.encode("utf-8")
            _pad(self.buf, 4)
            pos = len(self.buf)
            self.buf += struct.pack("<I", len(data)) + data + b"\0"
            return pos
        if isinstance(obj, Vector):
            size = _SIZES[obj.fmt]
            align = max(4, size, obj.align)
            self.max_align = max(self.max_align, align)
            _pad(self.buf, align, extra=4)
            pos = len(self.buf)
            count = len(obj.items)
            self.buf += struct.pack("<I", count)
            if isinstance(obj.items, (bytes, bytearray)) and size == 1:
                self.buf += obj.items
            else:
                self.buf += struct.pack(f"<{count}{obj.fmt}", *obj.items)
            return pos
        if isinstance(obj, RefVector):
            _pad(self.buf, 4)
            pos = len(self.buf)
            self.buf += struct.pack("<I", len(obj.items))
            for item in obj.items:
                self._ref(len(self.buf), item)
            return pos
        if isinstance(obj, Table):
            return self._write_table(obj)
        raise TypeError(f"cannot write {type(obj).__name__} as a flatbuffer object")

    def _write_table(self, table: Table) -> int:
        # Inline layout: the vtable soffset first, then fields widest first so
        # that padding is minimal; every field at a multiple of its width.
        def width(f: Field) -> int:
            return _SIZES[f.fmt] if isinstance(f, Scalar) else 4

        order = sorted(table.fields.items(), key=lambda kv: (-width(kv[1]), kv[0]))
        offsets: Dict[int, int] = {}
        size = 4
        align = 4
        for slot, f in order:
            w = width(f)
            size += -size % w
            offsets[slot] = size
            size += w
            align = max(align, w)
        nslots = max(table.fields) + 1 if table.fields else 0
        vtable = struct.pack(
            f"<HH{nslots}H", 4 + 2 * nslots, size, *(offsets.get(i, 0) for i in range(nslots))
        )
        vt_pos = self.vtables.get(vtable)
        if vt_pos is None:
            _pad(self.buf, 2)
            vt_pos = len(self.buf)
            self.buf += vtable
            self.vtables[vtable] = vt_pos
        _pad(self.buf, align)
        self.max_align = max(self.max_align, align)
        pos = len(self.buf)
        self.buf += b"\0" * size
        # vtable position = table position - soffset
        struct.pack_into("<i", self.buf, pos, pos - vt_pos)
        for slot, f in order:
            at = pos + offsets[slot]
            if isinstance(f, Scalar):
                struct.pack_into(f"<{f.fmt}", self.buf, at, f.value)
            else:
                self.pending.append((at, f))
        return pos

    def finish(self, root: Table, file_identifier: bytes) -> bytes:
        if len(file_identifier) != 4:
            raise ValueError("a file identifier has exactly 4 bytes")
        self.buf += b"\0\0\0\0" + file_identifier
        self.pending.append((0, root))
        while self.pending:
            at, obj = self.pending.popleft()
            pos = self.write(obj)
            struct.pack_into("<I", self.buf, at, pos - at)
        _pad(self.buf, self.max_align)
        return bytes(self.buf)


@dataclass
class FlatbufferResult:
    data: bytes
    # The widest alignment any object in data needs (at least 4).
    max_alignment: int


def build(root: Table, file_identifier: bytes) -> FlatbufferResult:
    """Serializes root (and everything it references) into flatbuffer bytes."""
    w = _Writer()
    data = w.finish(root, file_identifier)
    return FlatbufferResult(data, w.max_align)


def optional_scalar(fields: Dict[int, Field], slot: int, fmt: str, value, default=0) -> None:
    """Adds a scalar field unless it equals the schema default (readers supply defaults)."""
    if value != default:
        fields[slot] = Scalar(fmt, value)


def optional_ref(fields: Dict[int, Field], slot: int, obj: Optional[Object]) -> None:
    if obj is not None:
        fields[slot] = obj



# --------------------------------------------------------------------------- #
# Reading
# --------------------------------------------------------------------------- #


class FlatbufferError(ValueError):
    """The bytes are not a well-formed flatbuffer of the expected shape."""


class TableView:
    """A bounds-checked view of one table in a flatbuffer; every read checks that
    what it touches lies inside the buffer and raises FlatbufferError if not."""

    def __init__(self, buf: bytes, pos: int) -> None:
        self.buf = buf
        self.pos = pos
        _need(buf, pos, 4, "table")
        vt = pos - struct.unpack_from("<i", buf, pos)[0]
        _need(buf, vt, 4, "vtable")
        self.vt_size, self.size = struct.unpack_from("<HH", buf, vt)
        if self.vt_size < 4 or self.vt_size % 2 or self.size < 4:
            raise FlatbufferError(f"malformed vtable at {vt}")
        _need(buf, vt, self.vt_size, "vtable")
        _need(buf, pos, self.size, "table")
        self.vt = vt

    def _field(self, slot: int, width: int) -> Optional[int]:
        at = 4 + 2 * slot
        if at + 2 > self.vt_size:
            return None
        off = struct.unpack_from("<H", self.buf, self.vt + at)[0]
        if off == 0:
            return None
        if off < 4 or off + width > self.size:
            raise FlatbufferError(f"field {slot} lies outside its table at {self.pos}")
        return self.pos + off

    def has(self, slot: int) -> bool:
        return self._field(slot, 0) is not None

    def scalar(self, slot: int, fmt: str, default=0):
        at = self._field(slot, _SIZES[fmt])
        return default if at is None else struct.unpack_from("<" + fmt, self.buf, at)[0]

    def _deref(self, slot: int) -> Optional[int]:
        at = self._field(slot, 4)
        if at is None:
            return None
        target = at + struct.unpack_from("<I", self.buf, at)[0]
        _need(self.buf, target, 4, f"field {slot}")
        return target

    def table(self, slot: int) -> Optional["TableView"]:
        target = self._deref(slot)
        return None if target is None else TableView(self.buf, target)

    def _vector(self, slot: int, elem: int) -> Optional[Tuple[int, int]]:
        target = self._deref(slot)
        if target is None:
            return None
        n = struct.unpack_from("<I", self.buf, target)[0]
        _need(self.buf, target + 4, n * elem, f"vector of field {slot}")
        return target + 4, n

    def vector(self, slot: int, fmt: str) -> Optional[list]:
        v = self._vector(slot, _SIZES[fmt])
        return None if v is None else list(struct.unpack_from(f"<{v[1]}{fmt}", self.buf, v[0]))

    def bytes(self, slot: int) -> Optional[bytes]:
        v = self._vector(slot, 1)
        return None if v is None else bytes(self.buf[v[0]:v[0] + v[1]])

    def string(self, slot: int) -> Optional[str]:
        v = self._vector(slot, 1)
        if v is None:
            return None
        _need(self.buf, v[0], v[1] + 1, f"string of field {slot}")
        try:
            return bytes(self.buf[v[0]:v[0] + v[1]]).decode("utf-8")
        except UnicodeDecodeError:
            raise FlatbufferError(f"string of field {slot} is not UTF-8") from None

    def tables(self, slot: int) -> Optional[list]:
        v = self._vector(slot, 4)
        if v is None:
            return None
        out = []
        for i in range(v[1]):
            at = v[0] + 4 * i
            out.append(TableView(self.buf, at + struct.unpack_from("<I", self.buf, at)[0]))
        return out


def _need(buf: bytes, pos: int, n: int, what: str) -> None:
    if pos < 0 or n < 0 or pos + n > len(buf):
        raise FlatbufferError(f"{what} at {pos} ({n} bytes) lies outside the {len(buf)}-byte buffer")


def read_root(buf: bytes, file_identifier: Optional[bytes] = None) -> TableView:
    """The root table of buf, after checking its file identifier (if given)."""
    if len(buf) < 8:
        raise FlatbufferError(f"{len(buf)} bytes is too short for a flatbuffer")
    if file_identifier is not None and bytes(buf[4:8]) != file_identifier:
        raise FlatbufferError(
            f"file identifier is {bytes(buf[4:8])!r}, expected {file_identifier!r}")
    return TableView(buf, struct.unpack_from("<I", buf, 0)[0])

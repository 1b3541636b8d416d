"""`.ptd` data files: ExecuTorch's "flat tensor" format (identifier `FT01`).

A program exported with `ExecutorchBackendConfig(external_constants=...)`, or
whose delegates tag their weights for an external file, keeps those bytes in
one `.ptd` file per tag, each blob found by a key: a constant tensor by its
fully qualified name (with its dtype, sizes and dim order), a delegate's blob
by the key its payload names.

Layout:

    [0..3]   root table offset      [4..7]   "FT01"
    [8..47]  header: "FH01", u32 length (40), u64 flatbuffer_offset (the
             header's padded length), u64 flatbuffer_size, u64
             segment_base_offset, u64 segment_data_size
    ...      the FlatTensor flatbuffer body
    ...      segments, each at a multiple of the segment alignment

    FlatTensor { version:uint, segments:[DataSegment{offset, size}],
                 named_data:[NamedData{key, segment_index,
                             tensor_layout:TensorLayout{scalar_type, sizes, dim_order}}] }
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from .flatbuffer import RefVector, Scalar, Table, Vector, build, optional_scalar

FILE_IDENTIFIER = b"FT01"
HEADER_MAGIC = b"FH01"
HEADER_LENGTH = 40
VERSION = 0


@dataclass(frozen=True)
class TensorLayout:
    """What a tensor entry holds: ScalarType code, sizes, dim order."""

    scalar_type: int
    sizes: Tuple[int, ...]
    dim_order: Tuple[int, ...]


@dataclass
class DataEntry:
    """One blob of a data file; `layout` for tensors, None for opaque data."""

    data: bytes
    layout: Optional[TensorLayout] = None
    alignment: int = 1


@dataclass
class DataFile:
    """Key -> entry, in insertion order (the file keeps it)."""

    entries: Dict[str, DataEntry] = field(default_factory=dict)

    def add(self, key: str, entry: DataEntry) -> None:
        old = self.entries.get(key)
        if old is not None and (old.data != entry.data or old.layout != entry.layout):
            raise ValueError(f"data file entry {key!r} is given twice with different contents")
        self.entries.setdefault(key, entry)


def _align(n: int, alignment: int) -> int:
    return n + (-n % alignment)


def _layout_table(layout: TensorLayout) -> Table:
    f: Dict = {1: Vector("i", list(layout.sizes)), 2: Vector("B", list(layout.dim_order))}
    optional_scalar(f, 0, "b", int(layout.scalar_type))
    return Table(f)


def serialize_ptd(data: DataFile, segment_alignment: int = 128) -> bytes:
    """Lays out a data file: identical blobs share one segment."""
    if segment_alignment <= 0 or segment_alignment & (segment_alignment - 1):
        raise ValueError(f"segment_alignment must be a power of two, got {segment_alignment}")
    blobs: List[Tuple[bytes, int]] = []   # (data, alignment) per segment
    by_bytes: Dict[bytes, int] = {}
    named: List[Table] = []
    for key, e in data.entries.items():
        if e.alignment <= 0:
            raise ValueError(f"entry {key!r}: alignment must be positive, got {e.alignment}")
        idx = by_bytes.get(e.data)
        if idx is None:
            idx = by_bytes[e.data] = len(blobs)
            blobs.append((e.data, e.alignment))
        else:
            blobs[idx] = (e.data, math.lcm(blobs[idx][1], e.alignment))
        nf: Dict = {0: key}
        optional_scalar(nf, 1, "I", idx)
        if e.layout is not None:
            nf[2] = _layout_table(e.layout)
        named.append(Table(nf))

    seg_data = bytearray()
    segments: List[Table] = []
    for blob, alignment in blobs:
        seg_data += b"\0" * (-len(seg_data) % math.lcm(segment_alignment, alignment))
        sf: Dict = {}
        optional_scalar(sf, 0, "Q", len(seg_data))
        optional_scalar(sf, 1, "Q", len(blob))
        segments.append(Table(sf))
        seg_data += blob

    root: Dict = {1: RefVector(segments), 2: RefVector(named)}
    optional_scalar(root, 0, "I", VERSION)
    fb = build(Table(root), FILE_IDENTIFIER)
    # The header goes in at offset 8; its padded length keeps the body aligned.
    header_len = _align(HEADER_LENGTH, max(16, fb.max_alignment))
    segment_base = _align(header_len + len(fb.data), segment_alignment)
    header = HEADER_MAGIC + struct.pack("<IQQQQ", HEADER_LENGTH, header_len, len(fb.data),
                                        segment_base, len(seg_data))
    header += b"\0" * (header_len - len(header))
    root_offset = struct.unpack_from("<I", fb.data, 0)[0]
    out = bytearray(struct.pack("<I", root_offset + header_len))
    out += fb.data[4:8] + header + fb.data[8:]
    out += b"\0" * (segment_base - len(out))
    out += seg_data
    return bytes(out)

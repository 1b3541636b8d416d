"""The Vulkan delegate payload: its graph, written and read back.

The format is ExecuTorch's (backends/vulkan/serialization/schema.fbs of the
executorch package), so that ExecuTorch's VulkanBackend and ember's read the
same bytes:

    [0..3]   zero
    [4..7]   "VH00"                header magic
    [8..9]   u16  header length (30)
    [10..13] u32  flatbuffer offset (32: the header padded to 16)
    [14..17] u32  flatbuffer size
    [18..21] u32  constant bytes offset (flatbuffer end padded to 16)
    [22..29] u64  constant bytes size
    ...           the VkGraph flatbuffer (file identifier "VK00"), padded to 16
    ...           constant bytes, each constant padded to 16

A VkGraph lists values (tensors, scalars, lists) and a chain of operator
calls; each call names its operator the way ExecuTorch's runtime registers
it ("aten.linear.default", "et_vk.conv_with_clamp.default") and lists value
ids: the operator's schema arguments in order, then its output. Constants
are VkBytes: a range of the constant bytes, or (offset UINT64_MAX) a key of
the program's named data.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import List, Optional, Tuple, Union

from ...flatbuffer import (FlatbufferError, RefVector, Scalar, Table, TableView, Vector, build,
                           read_root)

FILE_IDENTIFIER = b"VK00"
HEADER_MAGIC = b"VH00"
HEADER_LENGTH = 30
ALIGNMENT = 16
NAMED_DATA_OFFSET = 0xFFFFFFFFFFFFFFFF

# VkDataType
BOOL, UINT8, INT8, INT32, FLOAT16, FLOAT32, FLOAT64, INT64, UNSET = 0, 1, 2, 3, 4, 5, 6, 7, 127
# VkStorageType
BUFFER, TEXTURE_3D, TEXTURE_2D, DEFAULT_STORAGE = 0, 1, 2, 255
# VkMemoryLayout
WIDTH_PACKED, HEIGHT_PACKED, CHANNELS_PACKED, DEFAULT_LAYOUT = 0, 1, 2, 255

DATATYPE_NAMES = {BOOL: "bool", UINT8: "uint8", INT8: "int8", INT32: "int32", FLOAT16: "float16",
                  FLOAT32: "float32", FLOAT64: "float64", INT64: "int64", UNSET: "unset"}


@dataclass
class VkTensor:
    datatype: int
    dims: List[int]
    constant_id: int = -1
    mem_obj_id: int = -1
    storage_type: int = DEFAULT_STORAGE
    memory_layout: int = DEFAULT_LAYOUT
    staging_datatype: int = UNSET


@dataclass
class Null:
    pass


@dataclass
class Int:
    int_val: int


@dataclass
class Double:
    double_val: float


@dataclass
class Bool:
    bool_val: bool


@dataclass
class IntList:
    items: List[int]


@dataclass
class DoubleList:
    items: List[float]


@dataclass
class BoolList:
    items: List[bool]


@dataclass
class ValueList:
    items: List[int]


@dataclass
class String:
    string_val: str


@dataclass
class SymInt:
    value: int = 0


Value = Union[Null, Int, Double, Bool, VkTensor, IntList, DoubleList, BoolList, ValueList, String,
              SymInt]

# GraphTypes union tags (0 is NONE).
_TAGS = {Null: 1, Int: 2, Double: 3, Bool: 4, VkTensor: 5, IntList: 6, DoubleList: 7, BoolList: 8,
         ValueList: 9, String: 10, SymInt: 11}
_BY_TAG = {v: k for k, v in _TAGS.items()}


@dataclass
class OperatorCall:
    node_id: int
    name: str
    args: List[int]


@dataclass
class VkBytes:
    offset: int
    length: int
    named_key: str = ""


@dataclass
class VkGraph:
    version: str = "0"
    chain: List[OperatorCall] = field(default_factory=list)
    values: List[Value] = field(default_factory=list)
    input_ids: List[int] = field(default_factory=list)
    output_ids: List[int] = field(default_factory=list)
    constants: List[VkBytes] = field(default_factory=list)
    shaders: List[VkBytes] = field(default_factory=list)
    storage_type_override: int = DEFAULT_STORAGE
    memory_layout_override: int = DEFAULT_LAYOUT


# --------------------------------------------------------------------------- #
# Writing
# --------------------------------------------------------------------------- #


def _value_table(v: Value) -> Table:
    if isinstance(v, VkTensor):
        return Table({0: Scalar("b", v.datatype), 1: Vector("I", list(v.dims)),
                      2: Scalar("i", v.constant_id), 3: Scalar("i", v.mem_obj_id),
                      4: Scalar("B", v.storage_type), 5: Scalar("B", v.memory_layout),
                      6: Scalar("b", v.staging_datatype)})
    if isinstance(v, Null):
        return Table({})
    if isinstance(v, Int):
        return Table({0: Scalar("q", v.int_val)})
    if isinstance(v, Double):
        return Table({0: Scalar("d", v.double_val)})
    if isinstance(v, Bool):
        return Table({0: Scalar("?", bool(v.bool_val))})
    if isinstance(v, IntList):
        return Table({0: Vector("q", list(v.items))})
    if isinstance(v, DoubleList):
        return Table({0: Vector("d", list(v.items))})
    if isinstance(v, BoolList):
        return Table({0: Vector("?", [bool(b) for b in v.items])})
    if isinstance(v, ValueList):
        return Table({0: Vector("i", list(v.items))})
    if isinstance(v, String):
        return Table({0: v.string_val})
    if isinstance(v, SymInt):
        return Table({0: Scalar("i", v.value)})
    raise TypeError(f"not a Vulkan graph value: {v!r}")


def _bytes_table(b: VkBytes) -> Table:
    fields = {0: Scalar("Q", b.offset), 1: Scalar("Q", b.length)}
    if b.named_key:
        fields[2] = b.named_key
    return Table(fields)


def graph_flatbuffer(g: VkGraph) -> bytes:
    """The VkGraph as flatbuffer bytes (file identifier VK00)."""
    root = Table({
        0: g.version,
        1: RefVector([Table({0: Scalar("I", c.node_id), 1: c.name, 2: Vector("i", list(c.args))})
                      for c in g.chain]),
        2: RefVector([Table({0: Scalar("B", _TAGS[type(v)]), 1: _value_table(v)})
                      for v in g.values]),
        3: Vector("I", list(g.input_ids)),
        4: Vector("I", list(g.output_ids)),
        5: RefVector([_bytes_table(b) for b in g.constants]),
        6: RefVector([_bytes_table(b) for b in g.shaders]),
        7: Scalar("B", g.storage_type_override),
        8: Scalar("B", g.memory_layout_override),
    })
    return build(root, FILE_IDENTIFIER).data


def _padded(n: int) -> int:
    return n + (-n % ALIGNMENT)


def serialize_payload(g: VkGraph, raw: bytes = b"") -> bytes:
    """The whole delegate payload: header, flatbuffer, constant bytes."""
    fb = graph_flatbuffer(g)
    fb_offset = _padded(HEADER_LENGTH)
    bytes_offset = fb_offset + _padded(len(fb))
    header = (b"\0\0\0\0" + HEADER_MAGIC + struct.pack("<HIIIQ", HEADER_LENGTH, fb_offset, len(fb),
                                                       bytes_offset, len(raw)))
    out = bytearray(header)
    out += b"\0" * (fb_offset - len(out))
    out += fb
    out += b"\0" * (bytes_offset - len(out))
    out += raw
    out += b"\0" * (-len(out) % ALIGNMENT)
    return bytes(out)


# --------------------------------------------------------------------------- #
# Reading
# --------------------------------------------------------------------------- #


def _read_value(t: TableView, tag: int) -> Value:
    kind = _BY_TAG.get(tag)
    if kind is None:
        raise FlatbufferError(f"unknown Vulkan value type {tag}")
    if kind is VkTensor:
        return VkTensor(t.scalar(0, "b"), t.vector(1, "I") or [], t.scalar(2, "i"),
                        t.scalar(3, "i"), t.scalar(4, "B", DEFAULT_STORAGE),
                        t.scalar(5, "B", DEFAULT_LAYOUT), t.scalar(6, "b", UNSET))
    if kind is Null:
        return Null()
    if kind is Int:
        return Int(t.scalar(0, "q"))
    if kind is Double:
        return Double(t.scalar(0, "d", 0.0))
    if kind is Bool:
        return Bool(bool(t.scalar(0, "?", False)))
    if kind is IntList:
        return IntList(t.vector(0, "q") or [])
    if kind is DoubleList:
        return DoubleList(t.vector(0, "d") or [])
    if kind is BoolList:
        return BoolList([bool(b) for b in (t.vector(0, "?") or [])])
    if kind is ValueList:
        return ValueList(t.vector(0, "i") or [])
    if kind is String:
        return String(t.string(0) or "")
    return SymInt(t.scalar(0, "i"))


def _read_bytes(t: TableView) -> VkBytes:
    return VkBytes(t.scalar(0, "Q"), t.scalar(1, "Q"), t.string(2) or "")


def read_graph(fb: bytes) -> VkGraph:
    """A VkGraph from its flatbuffer bytes; raises FlatbufferError if malformed."""
    root = read_root(fb, FILE_IDENTIFIER)
    values = []
    for v in root.tables(2) or []:
        tag = v.scalar(0, "B")
        body = v.table(1)
        if body is None:
            raise FlatbufferError("a Vulkan value has no body")
        values.append(_read_value(body, tag))
    return VkGraph(
        version=root.string(0) or "",
        chain=[OperatorCall(c.scalar(0, "I"), c.string(1) or "", c.vector(2, "i") or [])
               for c in root.tables(1) or []],
        values=values,
        input_ids=root.vector(3, "I") or [],
        output_ids=root.vector(4, "I") or [],
        constants=[_read_bytes(b) for b in root.tables(5) or []],
        shaders=[_read_bytes(b) for b in root.tables(6) or []],
        storage_type_override=root.scalar(7, "B", DEFAULT_STORAGE),
        memory_layout_override=root.scalar(8, "B", DEFAULT_LAYOUT),
    )


def read_payload(payload: bytes) -> Tuple[VkGraph, bytes]:
    """The graph and constant bytes of a delegate payload; raises
    FlatbufferError if the header or the graph is malformed."""
    if len(payload) < HEADER_LENGTH or payload[4:8] != HEADER_MAGIC:
        raise FlatbufferError("not a Vulkan delegate payload (no VH00 header)")
    length, fb_offset, fb_size, raw_offset, raw_size = struct.unpack_from("<HIIIQ", payload, 8)
    if length != HEADER_LENGTH:
        raise FlatbufferError(f"Vulkan header length {length}, expected {HEADER_LENGTH}")
    if fb_offset + fb_size > raw_offset or raw_offset + raw_size > len(payload):
        raise FlatbufferError("Vulkan header ranges lie outside the payload")
    g = read_graph(bytes(payload[fb_offset:fb_offset + fb_size]))
    return g, bytes(payload[raw_offset:raw_offset + raw_size])


def constant_bytes(g: VkGraph, raw: bytes, named: Optional[dict] = None) -> List[Optional[bytes]]:
    """Each constant's bytes: from raw, or from `named` (key -> bytes) for
    named-data constants (None where named lacks the key)."""
    out: List[Optional[bytes]] = []
    for c in g.constants:
        if c.offset == NAMED_DATA_OFFSET:
            out.append(None if named is None else named.get(c.named_key))
        else:
            out.append(raw[c.offset:c.offset + c.length])
    return out

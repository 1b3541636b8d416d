"""The XNNPACK delegate payload, written: an XNNGraph being built, and its bytes.

The format is ExecuTorch's (backends/xnnpack/serialization/schema.fbs of the
executorch package): a 30-byte "XH00" header, then the XNNGraph flatbuffer
("XN01"), then the payload's own constant data, which stays empty: every
constant goes to the program's named data under the sha256 of its bytes, and
the graph's ConstantDataOffset names it (offset UINT64_MAX). Values are
numbered in the order they are defined (id_out); externals (the delegate's
inputs, then its outputs) carry their argument index as external_id.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

from ...flatbuffer import RefVector, Scalar, Table, Vector, build

INVALID_ID = 0xFFFFFFFF
UINT64_MAX = 0xFFFFFFFFFFFFFFFF

# XNNDatatype values.
FP32 = 1
QINT8 = 3      # int8, one scale and zero point per tensor
QINT32 = 5     # int32, one scale per tensor (a bias)
QCINT8 = 6     # int8, one scale per channel (weights)
QCINT32 = 7    # int32, one scale per channel (a bias)
QDINT8 = 9     # int8, scale and zero point chosen per row at run time
QBINT4 = 10    # 4-bit, one scale per block of a row (weights)

# XNNQuantParams union tags.
PER_CHANNEL = 1
PER_TENSOR = 2
PER_TOKEN_DYNAMIC = 3
PER_CHANNEL_GROUP = 4

# Value flags and node flags.
EXTERNAL_INPUT = 0x1
EXTERNAL_OUTPUT = 0x2
FLAG_TRANSPOSE_WEIGHTS = 0x1
FLAG_ALIGN_CORNERS = 0x8
FLAG_KEEP_DIMS = 0x40

# XNodeUnion tags, and the field ids of each node table (in schema order).
NODE_TAGS = {
    "Add": 1, "FullyConnected": 2, "Softmax": 3, "Sigmoid": 4, "StaticTranspose": 5, "Clamp": 6,
    "Conv2d": 7, "Div": 8, "StaticResizeBilinear2D": 9, "StaticConstantPad": 10,
    "AvgPooling2d": 11, "Minimum": 12, "DepthwiseConv2d": 13, "MaxPooling2d": 14, "Multiply": 15,
    "Subtract": 16, "Floor": 17, "Convert": 18, "GlobalAvgPooling2d": 19, "StaticReshape": 20,
    "ArgMaxPooling2d": 21, "SquareRoot": 22, "Ceiling": 23, "Hardswish": 24, "LeakyReLU": 25,
    "Maximum": 26, "Negate": 27, "Square": 28, "ELU": 29, "Abs": 30, "PReLU": 31,
    "Concatenate2": 32, "Concatenate3": 33, "Concatenate4": 34, "StaticSlice": 35,
    "ScaledDotProductAttention": 36, "BatchMatrixMultiply": 37, "Concatenate5": 38,
    "ConvTranspose2d": 39, "ReciprocalSquareRoot": 40, "Log": 41, "Gelu": 42, "Tanh": 43,
    "Exp": 44, "Sin": 45, "Copy": 46, "Cos": 47,
}

_NODE_1X1 = ["input_id", "output_id", "flags"]
_NODE_2X1 = ["input1_id", "input2_id", "output_id", "flags"]
_CONV = ["padding_top", "padding_right", "padding_bottom", "padding_left", "kernel_height",
         "kernel_width", "subsampling_height", "subsampling_width", "dilation_height",
         "dilation_width", "group_input_channels", "group_output_channels", "groups",
         "adjustment_height", "adjustment_width", "input1_id", "filter_id", "bias_id", "output_id",
         "flags"]
_POOL = ["padding_top", "padding_right", "padding_bottom", "padding_left", "pooling_height",
         "pooling_width", "stride_height", "stride_width", "dilation_height", "dilation_width",
         "input_id", "output_id", "flags"]
_CAT = ["axis", "input1_id", "input2_id", "input3_id", "input4_id", "output_id", "flags",
        "input5_id"]

# Field names in id order; "*name" marks a uint vector, "~name" a float.
NODE_FIELDS: Dict[str, List[str]] = {
    "FullyConnected": ["input1_id", "filter_id", "bias_id", "output_id", "flags"],
    "StaticTranspose": ["num_dims", "*perm", "input_id", "output_id", "flags"],
    "StaticResizeBilinear2D": ["new_height", "new_width", "input_id", "output_id", "flags"],
    "StaticConstantPad": ["*pre_paddings", "*post_paddings", "~padding_value", "input_id",
                          "output_id", "flags"],
    "StaticReshape": ["num_dims", "*new_shape", "input_id", "output_id", "flags"],
    "StaticSlice": ["num_dims", "*offsets", "*sizes", "input_id", "output_id", "flags"],
    "ELU": ["~alpha", "input_id", "output_id", "flags"],
    "LeakyReLU": ["~negative_slope", "input_id", "output_id", "flags"],
}
for _name in ("Conv2d", "DepthwiseConv2d", "ConvTranspose2d"):
    NODE_FIELDS[_name] = _CONV
for _name in ("AvgPooling2d", "MaxPooling2d"):
    NODE_FIELDS[_name] = _POOL
for _name in ("Concatenate2", "Concatenate3", "Concatenate4", "Concatenate5"):
    NODE_FIELDS[_name] = _CAT
for _name in ("Add", "Subtract", "Multiply", "Div", "Minimum", "Maximum", "PReLU",
              "BatchMatrixMultiply"):
    NODE_FIELDS[_name] = _NODE_2X1


@dataclass
class QuantParams:
    """An XNNQuantParams table: kind is its union tag (PER_TENSOR, ...), fields
    its values by name (scale_buffer names the constant holding the scales)."""

    kind: int
    fields: Dict[str, object]


@dataclass
class XValue:
    dims: List[int]
    external_id: int = INVALID_ID
    flags: int = 0
    constant: int = 0          # index into XGraph.constants (0: none)
    datatype: int = FP32
    quant: Optional[QuantParams] = None  # set: an XNNQuantizedTensorValue


@dataclass
class XNode:
    kind: str                  # a NODE_TAGS key
    fields: Dict[str, object]
    debug_handle: int = 0
    # handles of the other nodes this one computes (a folded batch norm or clamp)
    covers: List[int] = field(default_factory=list)
    output_min: Optional[float] = None
    output_max: Optional[float] = None

    @property
    def output_id(self) -> int:
        return int(self.fields["output_id"])  # type: ignore[arg-type]


@dataclass
class XGraph:
    values: List[XValue] = field(default_factory=list)
    nodes: List[XNode] = field(default_factory=list)
    num_externs: int = 0
    # constant_data[0] is the placeholder non-constant values point to
    constants: List[Dict[str, object]] = field(default_factory=lambda: [{"named_key": ""}])
    named_data: Dict[str, bytes] = field(default_factory=dict)
    # named_data keys that go to a .ptd data file: key -> the file's tag
    external_tags: Dict[str, str] = field(default_factory=dict)

    def value(self, dims: Sequence[int], **kw: object) -> int:
        """Defines a tensor value; returns its id."""
        self.values.append(XValue([int(d) for d in dims], **kw))  # type: ignore[arg-type]
        return len(self.values) - 1

    def constant_data(self, data: bytes, tag: Optional[str] = None, prefix: str = "") -> int:
        """Bytes for the program's named data (or, with a tag, for the data file
        "<tag>.ptd") under prefix + their sha256; returns their constant_data index."""
        key = prefix + hashlib.sha256(data).hexdigest()
        self.named_data[key] = data
        if tag is not None:
            self.external_tags.setdefault(key, tag)
        self.constants.append({"offset": UINT64_MAX, "size": len(data), "named_key": key})
        return len(self.constants) - 1

    def constant(self, data: bytes, dims: Sequence[int], tag: Optional[str] = None,
                 datatype: int = FP32, quant: Optional[QuantParams] = None) -> int:
        """A constant value whose bytes go to the program's named data."""
        index = self.constant_data(data, tag)
        return self.value(dims, constant=index, datatype=datatype, quant=quant)

    def node(self, kind: str, debug_handle: int = 0, **fields: object) -> XNode:
        n = XNode(kind, dict(fields), debug_handle)
        self.nodes.append(n)
        return n


# --------------------------------------------------------------------------- #
# Bytes
# --------------------------------------------------------------------------- #


def _scalar(fields: Dict[int, object], slot: int, fmt: str, v: object) -> None:
    if v:  # the schema default (0) is left out, as flatc leaves it out
        fields[slot] = Scalar(fmt, v)  # type: ignore[arg-type]


def _node_table(n: XNode) -> Table:
    f: Dict[int, object] = {}
    names = NODE_FIELDS.get(n.kind, _NODE_1X1)
    for slot, name in enumerate(names):
        if name.startswith("*"):
            f[slot] = Vector("I", [int(x) for x in n.fields.get(name[1:], [])])  # type: ignore
        elif name.startswith("~"):
            _scalar(f, slot, "f", float(n.fields.get(name[1:], 0.0)))  # type: ignore[arg-type]
        else:
            _scalar(f, slot, "I", int(n.fields.get(name, 0)))  # type: ignore[arg-type]
    return Table(f)  # type: ignore[arg-type]


def _xnode(n: XNode) -> Table:
    f: Dict[int, object] = {0: Scalar("B", NODE_TAGS[n.kind]), 1: _node_table(n)}
    _scalar(f, 2, "I", n.debug_handle)
    if n.output_min is not None or n.output_max is not None:
        mm: Dict[int, object] = {}
        _scalar(mm, 0, "f", float("-inf") if n.output_min is None else n.output_min)
        _scalar(mm, 1, "f", float("inf") if n.output_max is None else n.output_max)
        f[3] = Table(mm)  # type: ignore[arg-type]
    return Table(f)  # type: ignore[arg-type]


# Field ids of each XNNQuantParams table, in schema order ("*" a float
# vector, "~" a float, "-" a deprecated slot).
QUANT_FIELDS: Dict[int, List[str]] = {
    PER_CHANNEL: ["*scale", "channel_dim", "scale_buffer_idx", "num_scales"],
    PER_TENSOR: ["~scale", "zero_point"],
    PER_TOKEN_DYNAMIC: ["num_nonbatch_dims"],
    PER_CHANNEL_GROUP: ["*scale", "channel_dim", "group_size", "-scale_bf16",
                        "scale_buffer_idx", "num_scales"],
}
_SIGNED = {"channel_dim", "zero_point", "num_nonbatch_dims", "group_size"}


def _quant_table(q: QuantParams) -> Table:
    f: Dict[int, object] = {}
    for slot, name in enumerate(QUANT_FIELDS[q.kind]):
        if name.startswith("*"):
            f[slot] = Vector("f", [float(x) for x in q.fields.get(name[1:], [])])  # type: ignore
        elif name.startswith("~"):
            _scalar(f, slot, "f", float(q.fields[name[1:]]))  # type: ignore[arg-type]
        elif not name.startswith("-"):
            _scalar(f, slot, "i" if name in _SIGNED else "I", int(q.fields.get(name, 0)))  # type: ignore
    return Table(f)  # type: ignore[arg-type]


def _xvalue(i: int, v: XValue) -> Table:
    t: Dict[int, object] = {0: Scalar("h", v.datatype), 1: Scalar("I", len(v.dims)),
                            2: Vector("I", v.dims)}
    _scalar(t, 3, "I", v.constant)
    _scalar(t, 4, "I", v.external_id)
    _scalar(t, 5, "I", v.flags)
    _scalar(t, 6, "I", i)
    if v.quant is None:
        return Table({0: Scalar("B", 1), 1: Table(t)})  # type: ignore[arg-type]
    qt = Table({0: Table(t), 1: Scalar("B", v.quant.kind), 2: _quant_table(v.quant)})  # type: ignore
    return Table({0: Scalar("B", 2), 1: qt})  # type: ignore[arg-type]


def _constant(c: Dict[str, object]) -> Table:
    f: Dict[int, object] = {2: str(c["named_key"])}
    _scalar(f, 0, "Q", int(c.get("offset", 0)))  # type: ignore[arg-type]
    _scalar(f, 1, "Q", int(c.get("size", 0)))  # type: ignore[arg-type]
    return Table(f)  # type: ignore[arg-type]


def serialize(g: XGraph) -> bytes:
    """The payload: XH00 header, XNNGraph flatbuffer (padded to 16), no constant data."""
    ins = [i for i, v in enumerate(g.values) if v.flags & EXTERNAL_INPUT]
    outs = [i for i, v in enumerate(g.values) if v.flags & EXTERNAL_OUTPUT]
    root = Table({
        0: "0",
        1: RefVector([_xnode(n) for n in g.nodes]),
        2: RefVector([_xvalue(i, v) for i, v in enumerate(g.values)]),
        3: Scalar("I", g.num_externs),
        4: Vector("I", ins),
        5: Vector("I", outs),
        8: RefVector([_constant(c) for c in g.constants]),
    })  # type: ignore[arg-type]
    fb = build(root, b"XN01").data
    fb += b"\0" * (-len(fb) % 16)
    header_len = 32  # 30 bytes, padded to 16
    header = struct.pack("<4s4sHIIIQ", b"\0\0\0\0", b"XH00", 30, header_len, len(fb),
                         header_len + len(fb), 0)
    return header + b"\0" * (header_len - len(header)) + fb

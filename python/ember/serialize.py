"""Writes a `Program` as `.pte` bytes: flatbuffer, extended header, segments.

Layout (PTE_FORMAT.md): the flatbuffer (identifier `ET12`) with the 32-byte
`eh00` extended header inserted at offset 8, then padding to the segment
alignment, then the segments: constant data, mutable-buffer initial data,
delegate payloads, each starting at a multiple of the segment alignment.
"""

from __future__ import annotations

import dataclasses
import struct
from dataclasses import dataclass, field
from typing import Dict, List

from . import schema as S
from .flatbuffer import RefVector, Scalar, Table, Vector, build, optional_ref, optional_scalar

FILE_IDENTIFIER = b"ET12"
HEADER_MAGIC = b"eh00"
HEADER_LENGTH = 32


def _align(n: int, alignment: int) -> int:
    return n + (-n % alignment)


# --------------------------------------------------------------------------- #
# Program -> flatbuffer tables (field ids follow schema/program.fbs)
# --------------------------------------------------------------------------- #


def _tensor(t: S.Tensor) -> Table:
    f: Dict = {}
    optional_scalar(f, 0, "b", int(t.scalar_type))
    optional_scalar(f, 1, "i", t.storage_offset)
    f[2] = Vector("i", list(t.sizes))
    f[3] = Vector("B", list(t.dim_order))
    optional_scalar(f, 4, "?", bool(t.requires_grad), False)
    optional_scalar(f, 5, "I", t.data_buffer_idx)
    if t.allocation_info is not None:
        a = t.allocation_info
        af: Dict = {}
        optional_scalar(af, 0, "I", a.memory_id)
        optional_scalar(af, 1, "I", a.memory_offset_low)
        optional_scalar(af, 2, "I", a.memory_offset_high)
        f[6] = Table(af)
    optional_scalar(f, 7, "b", t.layout)
    optional_scalar(f, 8, "b", int(t.shape_dynamism))
    if t.extra_tensor_info is not None:
        e = t.extra_tensor_info
        ef: Dict = {}
        optional_scalar(ef, 0, "Q", e.mutable_data_segments_idx)
        if e.fully_qualified_name is not None:
            ef[1] = e.fully_qualified_name
        optional_scalar(ef, 2, "b", int(e.location))
        f[9] = Table(ef)
    return Table(f)


def _kernel_type(v: S.KernelTypes) -> Table:
    if isinstance(v, S.Tensor):
        return _tensor(v)
    if isinstance(v, S.Null):
        return Table({})
    if isinstance(v, S.Int):
        f: Dict = {}
        optional_scalar(f, 0, "q", v.int_val)
        return Table(f)
    if isinstance(v, S.Bool):
        f = {}
        optional_scalar(f, 0, "?", bool(v.bool_val), False)
        return Table(f)
    if isinstance(v, S.Double):
        f = {}
        optional_scalar(f, 0, "d", float(v.double_val), 0.0)
        return Table(f)
    if isinstance(v, S.String):
        return Table({0: v.string_val})
    if isinstance(v, S.IntList):
        return Table({0: Vector("q", list(v.items))})
    if isinstance(v, S.DoubleList):
        return Table({0: Vector("d", [float(x) for x in v.items])})
    if isinstance(v, S.BoolList):
        return Table({0: Vector("?", [bool(x) for x in v.items])})
    if isinstance(v, (S.TensorList, S.OptionalTensorList)):
        return Table({0: Vector("i", list(v.items))})
    raise TypeError(f"unknown EValue payload {type(v).__name__}")


def _evalue(v: S.EValue) -> Table:
    return Table({0: Scalar("B", S.KERNEL_TYPE_TAGS[type(v.val)]), 1: _kernel_type(v.val)})


def _instruction(ins: S.Instruction) -> Table:
    a = ins.instr_args
    f: Dict = {}
    if isinstance(a, S.KernelCall):
        optional_scalar(f, 0, "i", a.op_index)
        f[1] = Vector("i", list(a.args))
    elif isinstance(a, S.DelegateCall):
        optional_scalar(f, 0, "i", a.delegate_index)
        f[1] = Vector("i", list(a.args))
    elif isinstance(a, S.MoveCall):
        optional_scalar(f, 0, "i", a.move_from)
        optional_scalar(f, 1, "i", a.move_to)
    elif isinstance(a, S.JumpFalseCall):
        optional_scalar(f, 0, "i", a.cond_value_index)
        optional_scalar(f, 1, "i", a.destination_instruction)
    elif isinstance(a, S.FreeCall):
        optional_scalar(f, 0, "i", a.value_index)
    else:
        raise TypeError(f"unknown instruction {type(a).__name__}")
    return Table({0: Scalar("B", S.INSTRUCTION_TAGS[type(a)]), 1: Table(f)})


def _frame(fr: S.Frame) -> Table:
    f: Dict = {0: fr.filename, 2: fr.name, 3: fr.context}
    optional_scalar(f, 1, "i", fr.lineno)
    return Table(f)


def _chain(c: S.Chain) -> Table:
    f: Dict = {
        0: Vector("i", list(c.inputs)),
        1: Vector("i", list(c.outputs)),
        2: RefVector([_instruction(i) for i in c.instructions]),
    }
    if c.stacktrace is not None:
        f[3] = RefVector([Table({0: RefVector([_frame(x) for x in fl.items])})
                          for fl in c.stacktrace])
    return Table(f)


def _delegate(d: S.BackendDelegate) -> Table:
    ref: Dict = {}
    optional_scalar(ref, 0, "b", int(d.processed.location))
    optional_scalar(ref, 1, "I", d.processed.index)
    specs = [Table({0: cs.key, 1: Vector("B", bytes(cs.value))}) for cs in d.compile_specs]
    return Table({0: d.id, 1: Table(ref), 2: RefVector(specs)})


def _plan(p: S.ExecutionPlan) -> Table:
    cm = p.container_meta_type
    f: Dict = {
        0: p.name,
        1: Table({0: cm.encoded_inp_str, 1: cm.encoded_out_str}),
        2: RefVector([_evalue(v) for v in p.values]),
        3: Vector("i", list(p.inputs)),
        4: Vector("i", list(p.outputs)),
        5: RefVector([_chain(c) for c in p.chains]),
        6: RefVector([Table({0: o.name, 1: o.overload}) for o in p.operators]),
        7: RefVector([_delegate(d) for d in p.delegates]),
        8: Vector("q", list(p.non_const_buffer_sizes)),
    }
    if p.non_const_buffer_device is not None:
        devs = []
        for d in p.non_const_buffer_device:
            df: Dict = {}
            optional_scalar(df, 0, "i", d.buffer_idx)
            optional_scalar(df, 1, "b", d.device_type)
            optional_scalar(df, 2, "b", d.device_index)
            devs.append(Table(df))
        f[9] = RefVector(devs)
    return Table(f)


def _subsegment(s: S.SubsegmentOffsets) -> Table:
    f: Dict = {1: Vector("Q", list(s.offsets))}
    optional_scalar(f, 0, "I", s.segment_index)
    return Table(f)


def program_to_table(p: S.Program) -> Table:
    f: Dict = {
        1: RefVector([_plan(x) for x in p.execution_plan]),
        2: RefVector([Table({0: Vector("B", bytes(b.storage), align=16)})
                      for b in p.constant_buffer]),
        3: RefVector([Table({0: Vector("B", bytes(b.data), align=16)})
                      for b in p.backend_delegate_data]),
        4: RefVector([Table(_segment_fields(s)) for s in p.segments]),
    }
    optional_scalar(f, 0, "I", p.version)
    optional_ref(f, 5, _subsegment(p.constant_segment) if p.constant_segment else None)
    if p.mutable_data_segments is not None:
        f[6] = RefVector([_subsegment(s) for s in p.mutable_data_segments])
    if p.named_data is not None:
        nd = []
        for n in p.named_data:
            nf: Dict = {0: n.key}
            optional_scalar(nf, 1, "I", n.segment_index)
            nd.append(Table(nf))
        f[7] = RefVector(nd)
    return Table(f)


def _segment_fields(s: S.DataSegment) -> Dict:
    f: Dict = {}
    optional_scalar(f, 0, "Q", s.offset)
    optional_scalar(f, 1, "Q", s.size)
    return f


# --------------------------------------------------------------------------- #
# The whole file
# --------------------------------------------------------------------------- #


@dataclass
class ProgramData:
    """What the emitter hands to the serializer.

    `constants[0]` and `mutable_data[0]` are the reserved empty placeholders that
    tensors without data point to (data_buffer_idx 0). Delegate payloads are
    referenced INLINE by index from each BackendDelegate; `serialize_pte` moves
    them into segments when asked to.
    """

    program: S.Program
    constants: List[bytes] = field(default_factory=lambda: [b""])
    mutable_data: List[bytes] = field(default_factory=lambda: [b""])
    delegate_data: List[bytes] = field(default_factory=list)
    named_data: Dict[str, bytes] = field(default_factory=dict)


def _pack_subsegments(blobs: List[bytes], alignment: int) -> "tuple[bytes, List[int]]":
    """Concatenates blobs, each starting at a multiple of alignment; returns data, offsets."""
    out = bytearray()
    offsets = []
    for i, b in enumerate(blobs):
        offsets.append(len(out))
        out += b
        if i < len(blobs) - 1:
            out += b"\0" * (-len(out) % alignment)
    return bytes(out), offsets


def serialize_pte(
    data: ProgramData,
    *,
    segment_alignment: int = 128,
    constant_tensor_alignment: int = 16,
    extract_delegate_segments: bool = True,
) -> bytes:
    """Lays out the program and its segments as `.pte` bytes."""
    for name, a in (("segment_alignment", segment_alignment),
                    ("constant_tensor_alignment", constant_tensor_alignment)):
        if a <= 0 or a & (a - 1):
            raise ValueError(f"{name} must be a power of two, got {a}")
    # Work on copies of the plans and delegates: their data references change here.
    plans = [dataclasses.replace(p, delegates=[dataclasses.replace(d) for d in p.delegates])
             for p in data.program.execution_plan]
    program = S.Program(
        version=data.program.version,
        execution_plan=plans,
        constant_buffer=[],
        backend_delegate_data=[],
        segments=[],
    )
    segments: List[bytes] = []

    # Constant tensors: always a segment (possibly empty), offsets[0] is the placeholder.
    const_bytes, const_offsets = _pack_subsegments(data.constants, constant_tensor_alignment)
    program.constant_segment = S.SubsegmentOffsets(len(segments), const_offsets)
    segments.append(const_bytes)

    # Initial contents of memory-planned mutable buffers (copied at method load).
    if len(data.mutable_data) > 1:
        mut_bytes, mut_offsets = _pack_subsegments(data.mutable_data, constant_tensor_alignment)
        program.mutable_data_segments = [S.SubsegmentOffsets(len(segments), mut_offsets)]
        segments.append(mut_bytes)

    # Delegate payloads: one segment per distinct payload, or inline.
    seen: Dict[bytes, int] = {}
    inline: Dict[int, int] = {}
    for plan in program.execution_plan:
        for d in plan.delegates:
            if d.processed.location != S.DataLocation.INLINE:
                continue
            blob = data.delegate_data[d.processed.index]
            if extract_delegate_segments and blob:
                if blob not in seen:
                    seen[blob] = len(segments)
                    segments.append(blob)
                d.processed = S.BackendDelegateDataReference(S.DataLocation.SEGMENT, seen[blob])
            else:
                if d.processed.index not in inline:
                    inline[d.processed.index] = len(program.backend_delegate_data)
                    program.backend_delegate_data.append(S.BackendDelegateInlineData(blob))
                d.processed = S.BackendDelegateDataReference(
                    S.DataLocation.INLINE, inline[d.processed.index])

    # Named data (delegates' weights): a segment each, found by key.
    if data.named_data:
        program.named_data = []
        for key, blob in data.named_data.items():
            program.named_data.append(S.NamedData(key, len(segments)))
            segments.append(blob)

    seg_data = bytearray()
    for blob in segments:
        seg_data += b"\0" * (-len(seg_data) % segment_alignment)
        program.segments.append(S.DataSegment(len(seg_data), len(blob)))
        seg_data += blob

    fb = build(program_to_table(program), FILE_IDENTIFIER)
    if not seg_data:
        return fb.data

    # Insert the extended header at offset 8, keeping the body's alignment.
    header_len = _align(HEADER_LENGTH, fb.max_alignment)
    program_size = header_len + len(fb.data)
    segment_base = _align(program_size, segment_alignment)
    header = HEADER_MAGIC + struct.pack("<IQQQ", HEADER_LENGTH, program_size, segment_base,
                                        len(seg_data))
    header += b"\0" * (header_len - len(header))
    root = struct.unpack_from("<I", fb.data, 0)[0]
    out = bytearray(struct.pack("<I", root + header_len))
    out += fb.data[4:8] + header + fb.data[8:]
    out += b"\0" * (segment_base - len(out))
    out += seg_data
    return bytes(out)


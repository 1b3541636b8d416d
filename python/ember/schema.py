"""The `.pte` program, as plain Python data.

These classes mirror `schema/program.fbs` table for table and field for field
(field order is field id). The emitter builds them, `serialize.py`
writes them. They hold no behaviour beyond small conveniences.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import List, Optional, Union


class ScalarType(enum.IntEnum):
    BYTE = 0
    CHAR = 1
    SHORT = 2
    INT = 3
    LONG = 4
    HALF = 5
    FLOAT = 6
    DOUBLE = 7
    BOOL = 11
    QINT8 = 12
    QUINT8 = 13
    QINT32 = 14
    BFLOAT16 = 15
    QUINT4X2 = 16
    QUINT2X4 = 17
    BITS16 = 22
    FLOAT8E5M2 = 23
    FLOAT8E4M3FN = 24
    FLOAT8E5M2FNUZ = 25
    FLOAT8E4M3FNUZ = 26
    UINT16 = 27
    UINT32 = 28
    UINT64 = 29


class TensorShapeDynamism(enum.IntEnum):
    STATIC = 0
    DYNAMIC_BOUND = 1
    DYNAMIC_UNBOUND = 2


class TensorDataLocation(enum.IntEnum):
    SEGMENT = 0
    EXTERNAL = 1


class DataLocation(enum.IntEnum):
    INLINE = 0
    SEGMENT = 1


@dataclass
class ContainerMetadata:
    encoded_inp_str: str = ""
    encoded_out_str: str = ""


@dataclass
class AllocationDetails:
    memory_id: int
    memory_offset_low: int
    memory_offset_high: int = 0

    @staticmethod
    def at(memory_id: int, offset: int) -> "AllocationDetails":
        if offset < 0 or offset >= 1 << 64:
            raise ValueError(f"memory offset {offset} does not fit in 64 bits")
        return AllocationDetails(memory_id, offset & 0xFFFFFFFF, offset >> 32)

    @property
    def offset(self) -> int:
        return self.memory_offset_low | (self.memory_offset_high << 32)


@dataclass
class ExtraTensorInfo:
    mutable_data_segments_idx: int = 0
    fully_qualified_name: Optional[str] = None
    location: TensorDataLocation = TensorDataLocation.SEGMENT


@dataclass
class Tensor:
    scalar_type: ScalarType
    sizes: List[int]
    dim_order: List[int]
    data_buffer_idx: int = 0
    allocation_info: Optional[AllocationDetails] = None
    shape_dynamism: TensorShapeDynamism = TensorShapeDynamism.STATIC
    storage_offset: int = 0
    requires_grad: bool = False
    layout: int = 0
    extra_tensor_info: Optional[ExtraTensorInfo] = None


@dataclass
class Null:
    pass


@dataclass
class Int:
    int_val: int


@dataclass
class Bool:
    bool_val: bool


@dataclass
class Double:
    double_val: float


@dataclass
class String:
    string_val: str


@dataclass
class IntList:
    items: List[int]  # indices of Int values


@dataclass
class DoubleList:
    items: List[float]


@dataclass
class BoolList:
    items: List[bool]


@dataclass
class TensorList:
    items: List[int]  # indices of Tensor values


@dataclass
class OptionalTensorList:
    items: List[int]  # -1 means None


KernelTypes = Union[
    Null, Int, Bool, Double, Tensor, String, IntList, DoubleList, BoolList, TensorList,
    OptionalTensorList,
]

# Union tags of KernelTypes, in schema order (NONE is 0).
KERNEL_TYPE_TAGS = {
    Null: 1, Int: 2, Bool: 3, Double: 4, Tensor: 5, String: 6, IntList: 7, DoubleList: 8,
    BoolList: 9, TensorList: 10, OptionalTensorList: 11,
}


@dataclass
class EValue:
    val: KernelTypes


@dataclass
class Operator:
    name: str
    overload: str = ""

    @property
    def key(self) -> str:
        return f"{self.name}.{self.overload}" if self.overload else self.name


@dataclass
class KernelCall:
    op_index: int
    args: List[int]


@dataclass
class DelegateCall:
    delegate_index: int
    args: List[int]


@dataclass
class MoveCall:
    move_from: int
    move_to: int


@dataclass
class JumpFalseCall:
    cond_value_index: int
    destination_instruction: int


@dataclass
class FreeCall:
    value_index: int


InstructionArguments = Union[KernelCall, DelegateCall, MoveCall, JumpFalseCall, FreeCall]

INSTRUCTION_TAGS = {KernelCall: 1, DelegateCall: 2, MoveCall: 3, JumpFalseCall: 4, FreeCall: 5}


@dataclass
class Instruction:
    instr_args: InstructionArguments


@dataclass
class Frame:
    filename: str
    lineno: int
    name: str
    context: str


@dataclass
class FrameList:
    items: List[Frame] = field(default_factory=list)


@dataclass
class Chain:
    inputs: List[int] = field(default_factory=list)
    outputs: List[int] = field(default_factory=list)
    instructions: List[Instruction] = field(default_factory=list)
    stacktrace: Optional[List[FrameList]] = None


@dataclass
class CompileSpec:
    key: str
    value: bytes


@dataclass
class BackendDelegateDataReference:
    location: DataLocation
    index: int


@dataclass
class BackendDelegate:
    id: str
    processed: BackendDelegateDataReference
    compile_specs: List[CompileSpec] = field(default_factory=list)


@dataclass
class NonConstBufferDevice:
    buffer_idx: int
    device_type: int = 0
    device_index: int = 0


@dataclass
class ExecutionPlan:
    name: str
    container_meta_type: ContainerMetadata
    values: List[EValue]
    inputs: List[int]
    outputs: List[int]
    chains: List[Chain]
    operators: List[Operator]
    delegates: List[BackendDelegate]
    non_const_buffer_sizes: List[int]
    non_const_buffer_device: Optional[List[NonConstBufferDevice]] = None


@dataclass
class Buffer:
    storage: bytes


@dataclass
class BackendDelegateInlineData:
    data: bytes


@dataclass
class DataSegment:
    offset: int
    size: int


@dataclass
class SubsegmentOffsets:
    segment_index: int
    offsets: List[int]


@dataclass
class NamedData:
    key: str
    segment_index: int


@dataclass
class Program:
    version: int
    execution_plan: List[ExecutionPlan]
    constant_buffer: List[Buffer] = field(default_factory=list)
    backend_delegate_data: List[BackendDelegateInlineData] = field(default_factory=list)
    segments: List[DataSegment] = field(default_factory=list)
    constant_segment: Optional[SubsegmentOffsets] = None
    mutable_data_segments: Optional[List[SubsegmentOffsets]] = None
    named_data: Optional[List[NamedData]] = None


# The schema version ExecuTorch 1.x writes into Program.version.
SCHEMA_VERSION = 0

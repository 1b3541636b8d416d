"""Emission: a planned execution graph -> an ExecutionPlan of the `.pte` program.

For each method the emitter walks the graph once, in order, and builds:

- `values`: one EValue per tensor (constant, planned or bound at run time),
  per literal argument (Int, Double, Bool, String, Null, lists; identical
  literals are shared), per symbolic size (an Int the prim kernels write);
  IntList items are indices of Int values;
- `operators`: each kernel name once (`aten::add` + `out`);
- one chain of instructions: a KernelCall per op with its arguments in schema
  order, defaults filled in, the out arguments last and the return value
  appended again (a TensorList for ops with several outputs); DelegateCalls
  with inputs then outputs;
- inputs and outputs (user inputs/outputs only), the memory plan's buffer
  sizes, and the pytree container specs of the method's arguments and results.

Constant tensor data is collected program-wide, deduplicated by content
(`ProgramState.constants`), as is the initial data of mutable buffers and
delegate payloads. Constants tagged for a data file (`external_constants`)
and delegate blobs a backend tags go to `ProgramState.external_data`
instead: the program names them (EXTERNAL tensors by fully qualified name,
delegate data by key) and `.ptd` files hold them.
"""


from __future__ import annotations

import hashlib
import operator
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import torch
from torch._ops import OpOverload
from torch.export import ExportedProgram
from torch.fx import GraphModule, Node
from torch.utils import _pytree as pytree

from . import dialect
from . import schema as S
from .errors import ExportError, source_location, stack_frames
from .graph_utils import cond_branches
from .memory_planning import MemoryPlan
from .passes.views import is_elided_view
from .tensor_spec import TensorSpec, scalar_type

# MemoryFormat arguments as c10 numbers them. The reference runtime knows only the
# first two; a channels-last argument (full_like, sym_is_contiguous) runs in ember,
# whose kernels take the layout from out's dim order.
_MEMORY_FORMATS = {torch.contiguous_format: 0, torch.preserve_format: 1,
                   torch.channels_last: 2, torch.channels_last_3d: 3}
_LAYOUTS = {torch.strided: 0, torch.sparse_coo: 1}


def tensor_bytes(t: torch.Tensor, dim_order: Sequence[int]) -> bytes:
    """The bytes of t laid out in dim_order (outermost first)."""
    t = t.detach().cpu()
    if t.dim() > 0:
        t = t.permute(*dim_order)
    t = t.contiguous()
    if t.numel() == 0:
        return b""
    if t.is_quantized:
        t = t.int_repr()
    return t.reshape(-1).view(torch.uint8).numpy().tobytes()


@dataclass
class ProgramState:
    """Data shared by all methods of one program."""

    constants: List[bytes] = field(default_factory=lambda: [b""])
    mutable_data: List[bytes] = field(default_factory=lambda: [b""])
    delegate_data: List[bytes] = field(default_factory=list)
    # key -> bytes of the program's named data (weights of delegates)
    named_data: Dict[str, bytes] = field(default_factory=dict)
    # data file tag -> key -> (bytes, (scalar type, sizes, dim order) or None):
    # what `.ptd` files hold instead of the program
    external_data: Dict[str, Dict[str, Tuple[bytes, Optional[Tuple[int, Tuple[int, ...],
                                                             Tuple[int, ...]]]]]] = \
        field(default_factory=dict)
    _external_index: Dict[bytes, int] = field(default_factory=dict)
    _const_index: Dict[bytes, int] = field(default_factory=dict)
    _mutable_index: Dict[bytes, int] = field(default_factory=dict)
    _delegate_index: Dict[bytes, int] = field(default_factory=dict)

    @staticmethod
    def _intern(data: bytes, table: List[bytes], index: Dict[bytes, int]) -> int:
        key = hashlib.sha256(data).digest()
        if key not in index:
            index[key] = len(table)
            table.append(data)
        return index[key]

    def constant(self, data: bytes) -> int:
        return self._intern(data, self.constants, self._const_index)

    def mutable(self, data: bytes) -> int:
        return self._intern(data, self.mutable_data, self._mutable_index)

    def delegate(self, data: bytes) -> int:
        return self._intern(data, self.delegate_data, self._delegate_index)

    def named(self, key: str, data: bytes) -> None:
        """Adds a named blob; one key must always name the same bytes."""
        if self.named_data.setdefault(key, data) != data:
            raise ExportError(f"two delegates store different data under the name {key!r}")

    def external(self, tag: str, key: str, data: bytes,
                 layout: Optional[Tuple[int, Tuple[int, ...], Tuple[int, ...]]] = None) -> int:
        """Puts a blob in data file `tag` under `key`; returns its index among the
        distinct external blobs (what the reference writes as data_buffer_idx)."""
        entries = self.external_data.setdefault(tag, {})
        if entries.setdefault(key, (data, layout)) != (data, layout):
            raise ExportError(f"data file {tag!r} gets different data under the name {key!r}")
        digest = hashlib.sha256(data).digest()
        return self._external_index.setdefault(digest, len(self._external_index))


def _unwrap_optional(t: Any) -> Any:
    return t.getElementType() if isinstance(t, torch.OptionalType) else t


def _container_str(spec: Optional[pytree.TreeSpec]) -> str:
    """The pytree spec string the reference writes into ContainerMetadata."""
    if spec is None:
        return ""
    tree = pytree.tree_unflatten([0] * spec.num_leaves, spec)
    _, flat = pytree.tree_flatten(tree)
    return pytree.treespec_dumps(flat)


class MethodEmitter:
    def __init__(self, name: str, ep: ExportedProgram, gm: GraphModule, plan: MemoryPlan,
                 state: ProgramState, *, returned: Sequence[bool], emit_stacktrace: bool = False,
                 emit_mutable_buffer_names: bool = False,
                 external_constants: Union[bool, Callable[[Node], Optional[str]]] = False
                 ) -> None:
        self.name = name
        self.ep = ep
        self.gm = gm
        self.plan = plan
        self.state = state
        self.returned = list(returned)
        self.emit_stacktrace = emit_stacktrace
        self.emit_mutable_buffer_names = emit_mutable_buffer_names
        self.external_constants = external_constants
        self.values: List[S.EValue] = []
        self.operators: List[S.Operator] = []
        self.delegates: List[S.BackendDelegate] = []
        self.instructions: List[S.Instruction] = []
        self.stacktrace: List[S.FrameList] = []
        # Per instruction: the debug handles of the node(s) it runs.
        self.debug_handles: List[List[int]] = []
        self.lowered_modules: List[Any] = []  # per delegate index
        self.inputs: List[int] = []
        self.outputs: List[int] = []
        self.env: Dict[Node, Any] = {}
        self._op_index: Dict[Tuple[str, str], int] = {}
        self._literal: Dict[Tuple[str, str], int] = {}
        self._tensor_ids: Dict[int, int] = {}
        self.node: Optional[Node] = None

    # ------------------------------------------------------------------ values

    def _add(self, val: S.KernelTypes) -> int:
        self.values.append(S.EValue(val))
        return len(self.values) - 1

    def _lit(self, val: S.KernelTypes) -> int:
        """A read-only literal value, shared between identical uses."""
        key = (type(val).__name__, repr(val))
        if key not in self._literal:
            self._literal[key] = self._add(val)
        return self._literal[key]

    def tensor(self, spec: TensorSpec, external: Optional[Tuple[str, str]] = None) -> int:
        """The value of a tensor; a constant with `external` = (data file tag,
        fully qualified name) keeps its bytes in that data file."""
        if id(spec) in self._tensor_ids:
            return self._tensor_ids[id(spec)]
        st = spec.storage
        t = S.Tensor(
            scalar_type=scalar_type(spec.dtype),
            sizes=list(spec.shape),
            dim_order=list(spec.dim_order),
            shape_dynamism=(S.TensorShapeDynamism.DYNAMIC_BOUND if spec.dynamic
                            else S.TensorShapeDynamism.STATIC),
        )
        if st.const:
            data = st.data if st is spec else st.data.reshape(spec.shape)
            blob = tensor_bytes(data, spec.dim_order)
            if external is not None:
                tag, fqn = external
                layout = (int(t.scalar_type), tuple(t.sizes), tuple(t.dim_order))
                t.data_buffer_idx = self.state.external(tag, fqn, blob, layout)
                t.extra_tensor_info = S.ExtraTensorInfo(
                    fully_qualified_name=fqn, location=S.TensorDataLocation.EXTERNAL)
            else:
                t.data_buffer_idx = self.state.constant(blob)
        elif st.mem_id is not None:
            t.allocation_info = S.AllocationDetails.at(st.mem_id, st.mem_offset)
            if st is spec and st.mutable_buffer is not None and st.data is not None:
                t.data_buffer_idx = self.state.mutable(tensor_bytes(st.data, st.dim_order))
        if st is spec and st.mutable_buffer is not None and (
                self.emit_mutable_buffer_names or st.mem_id is None):
            t.extra_tensor_info = S.ExtraTensorInfo(fully_qualified_name=st.mutable_buffer)
        idx = self._add(t)
        self._tensor_ids[id(spec)] = idx
        return idx

    def _empty_tensor(self) -> int:
        return self._add(S.Tensor(S.ScalarType.BYTE, [0], [0]))

    def _scalar(self, v: Any) -> int:
        if isinstance(v, bool):
            return self._lit(S.Bool(v))
        if isinstance(v, int):
            return self._lit(S.Int(v))
        if isinstance(v, float):
            return self._lit(S.Double(v))
        if isinstance(v, str):
            return self._lit(S.String(v))
        if isinstance(v, torch.dtype):
            return self._lit(S.Int(int(scalar_type(v))))
        if isinstance(v, torch.layout):
            return self._lit(S.Int(_LAYOUTS[v]))
        if isinstance(v, torch.memory_format):
            if v not in _MEMORY_FORMATS:
                raise self._error(f"memory format {v} is not supported by the runtime")
            return self._lit(S.Int(_MEMORY_FORMATS[v]))
        if isinstance(v, torch.device):
            return self._lit(S.Null())
        raise self._error(f"cannot emit an argument of type {type(v).__name__}")

    def _ref(self, node: Node) -> Any:
        if node not in self.env:
            raise self._error(f"value of {node.name} used before it was emitted")
        return self.env[node]

    def arg(self, v: Any, jit_type: Any = None) -> int:
        """The value index for argument v (whose schema type is jit_type, if known)."""
        if isinstance(v, Node):
            r = self._ref(v)
            if isinstance(r, (list, tuple)):
                return self._add(S.TensorList(list(r)))
            if r is None:
                raise self._error(f"{v.name} has no runtime value")
            return r
        if v is None:
            if isinstance(jit_type, torch.TensorType):
                return self._empty_tensor()
            return self._lit(S.Null())
        t = _unwrap_optional(jit_type)
        if isinstance(v, (list, tuple)):
            elem = t.getElementType() if isinstance(t, torch.ListType) else None
            return self._list(list(v), elem)
        return self._scalar(v)

    def _list(self, items: List[Any], elem: Any) -> int:
        def is_tensor(x: Any) -> bool:
            return isinstance(x, Node) and isinstance(self.env.get(x), int) and isinstance(
                self.values[self.env[x]].val, S.Tensor)

        opt = isinstance(elem, torch.OptionalType)
        inner = _unwrap_optional(elem)
        if isinstance(inner, torch.TensorType) or (elem is None and items and all(
                is_tensor(x) for x in items)):
            if opt or any(x is None for x in items):
                return self._add(S.OptionalTensorList(
                    [-1 if x is None else self.arg(x) for x in items]))
            return self._add(S.TensorList([self.arg(x) for x in items]))
        if isinstance(inner, torch.BoolType) or (elem is None and items and all(
                isinstance(x, bool) for x in items)):
            return self._lit(S.BoolList([bool(x) for x in items]))
        if isinstance(inner, torch.FloatType) or (elem is None and items and all(
                isinstance(x, float) for x in items)):
            return self._lit(S.DoubleList([float(x) for x in items]))
        # int[] / SymInt[]: boxed, each item an Int value (symbolic ones written at run time)
        ids = []
        for x in items:
            if isinstance(x, Node):
                ids.append(self.arg(x))
            elif isinstance(x, int) and not isinstance(x, bool):
                ids.append(self._lit(S.Int(x)))
            else:
                raise self._error(f"cannot emit {x!r} in an int list")
        return self._lit(S.IntList(ids))

    # ------------------------------------------------------------ instructions

    def _error(self, msg: str) -> ExportError:
        where = f" (node {self.node.name}, from {source_location(self.node)})" if self.node else ""
        return ExportError(f"method {self.name!r}: {msg}{where}")

    def _operator(self, name: str, overload: str) -> int:
        key = (name, overload)
        if key not in self._op_index:
            self._op_index[key] = len(self.operators)
            self.operators.append(S.Operator(name, overload))
        return self._op_index[key]

    def _instruction(self, args: S.InstructionArguments,
                     handles: Optional[List[int]] = None) -> None:
        self.instructions.append(S.Instruction(args))
        if handles is None:
            h = self.node.meta.get("debug_handle") if self.node else None
            handles = [h] if isinstance(h, int) else []
        self.debug_handles.append(handles)
        frames = stack_frames(self.node.meta.get("stack_trace")) if self.node else []
        self.stacktrace.append(S.FrameList([S.Frame(f, n, fn, c) for f, n, fn, c in frames]))

    def kernel_call(self, name: str, overload: str, args: List[int]) -> None:
        self._instruction(S.KernelCall(self._operator(name, overload), args))

    # ------------------------------------------------------------------- nodes

    def run(self) -> S.ExecutionPlan:
        self._run_body(self.gm, None)
        self.node = None
        chain = S.Chain(instructions=self.instructions,
                        stacktrace=self.stacktrace if self.emit_stacktrace else None)
        call_spec = self.ep.call_spec
        return S.ExecutionPlan(
            name=self.name,
            container_meta_type=S.ContainerMetadata(_container_str(call_spec.in_spec),
                                                    _container_str(call_spec.out_spec)),
            values=self.values,
            inputs=self.inputs,
            outputs=self.outputs,
            chains=[chain],
            operators=self.operators,
            delegates=self.delegates,
            non_const_buffer_sizes=list(self.plan.buffer_sizes),
        )

    def _run_body(self, gm: GraphModule, operands: Optional[List[int]]) -> List[int]:
        """Emits gm's nodes; a branch (operands given) returns its result values."""
        phs = iter(operands or [])
        results: List[int] = []
        for node in gm.graph.nodes:
            self.node = node
            if node.op == "placeholder":
                if operands is None:
                    self._placeholder(node)
                else:
                    self.env[node] = next(phs)
            elif node.op == "call_function":
                self.env[node] = self._call(node, gm)
            elif node.op == "output":
                if operands is None:
                    self._output(node)
                else:
                    results = [self.arg(r) for r in pytree.tree_leaves(node.args[0])]
            elif node.op == "get_attr":
                self.env[node] = getattr(gm, node.target)
            else:
                raise self._error(f"unsupported node kind {node.op}")
        return results

    def _cond(self, node: Node, gm: GraphModule) -> List[int]:
        """torch.cond as jumps: [JumpFalse pred -> else] then-branch, moves, [jump -> end]
        else-branch, moves. Results are moved (aliased) into the cond's own values."""
        pred = self.arg(node.args[0])
        operands = [self.arg(o) for o in node.args[3]]
        outs = [self.tensor(s) for s in node.meta["spec"]]
        to_else = S.JumpFalseCall(pred, -1)
        self._instruction(to_else)
        to_end = S.JumpFalseCall(self._lit(S.Bool(False)), -1)  # always jumps
        for i, branch in enumerate(cond_branches(gm, node)):
            results = self._run_body(branch, operands)
            self.node = node
            for src, dst in zip(results, outs):
                if src != dst:
                    self._instruction(S.MoveCall(src, dst))
            if i == 0:
                self._instruction(to_end)
                to_else.destination_instruction = len(self.instructions)
        to_end.destination_instruction = len(self.instructions)
        return outs

    def _placeholder(self, node: Node) -> None:
        spec = node.meta.get("spec")
        if isinstance(spec, TensorSpec) and spec.const and not node.users:
            return  # a weight nothing reads (e.g. folded away, or num_batches_tracked)
        if isinstance(spec, TensorSpec):
            idx = self.tensor(spec, self._external_of(node, spec))
            if spec.is_input:
                self.inputs.append(idx)
            self.env[node] = idx
            return
        val = node.meta.get("val")
        if isinstance(val, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            raise self._error("symbolic scalar inputs are not supported; pass a tensor instead")
        # A non-tensor user input (int, float, bool) specialized at export.
        idx = self._add(S.Null() if val is None else self._literal_payload(val))
        self.inputs.append(idx)
        self.env[node] = idx

    def _external_of(self, node: Node, spec: TensorSpec) -> Optional[Tuple[str, str]]:
        """(data file tag, fully qualified name) for a weight placeholder that
        `external_constants` sends to a data file, else None. Lifted tensor
        constants (tensors the model creates in forward) stay in the program."""
        if not self.external_constants or not spec.const or spec.storage is not spec:
            return None
        sig = self.ep.graph_signature
        fqn = sig.inputs_to_parameters.get(node.name) or sig.inputs_to_buffers.get(node.name)
        if fqn is None:
            return None
        if callable(self.external_constants):
            tag = self.external_constants(node)
            return None if tag is None else (str(tag), fqn)
        return ("_default_external_constant", fqn)

    @staticmethod
    def _literal_payload(v: Any) -> S.KernelTypes:
        if isinstance(v, bool):
            return S.Bool(v)
        if isinstance(v, int):
            return S.Int(v)
        if isinstance(v, float):
            return S.Double(v)
        if isinstance(v, str):
            return S.String(v)
        raise ExportError(f"cannot emit an input of type {type(v).__name__}")

    def _output(self, node: Node) -> None:
        rets = pytree.tree_leaves(node.args[0])
        for ret, keep in zip(rets, self.returned):
            if not keep:
                continue
            if isinstance(ret, Node):
                self.outputs.append(self.arg(ret))
            else:
                self.outputs.append(self._add(
                    S.Null() if ret is None else self._literal_payload(ret)))

    def _call(self, node: Node, gm: GraphModule) -> Any:
        target = node.target
        if target is torch.ops.higher_order.cond:
            return self._cond(node, gm)
        if target is operator.getitem:
            parent, idx = node.args
            return self._ref(parent)[idx]
        if target is dialect.alloc:
            spec = node.meta["spec"]
            if isinstance(spec, (list, tuple)):
                return [self.tensor(s) for s in spec]
            return self.tensor(spec)
        if target is dialect.et_view:
            return self._et_view(node)
        if target is dialect.constant:
            return self.tensor(node.meta["spec"])
        if target in dialect.PYTHON_SYM_OPS:
            return self._python_sym_op(node)
        if target in dialect.ASSERT_OPS:
            return None
        if dialect.is_delegate_call(node):
            return self._delegate_call(node)
        if isinstance(target, OpOverload):
            return self._op(node)
        raise self._error(f"cannot emit a call to {dialect.op_display_name(target)}")

    def _et_view(self, node: Node) -> int:
        spec: TensorSpec = node.meta["spec"]
        out = self.tensor(spec)
        if is_elided_view(spec):
            return out
        base = self.arg(node.args[0])
        size = self._list(list(node.args[1]), torch.ListType.ofInts())
        self.kernel_call("executorch_prim::et_view", "default", [base, size, out])
        return out

    def _sym_result(self, val: Any) -> int:
        if isinstance(val, (torch.SymBool, bool)):
            return self._add(S.Bool(False))
        if isinstance(val, (torch.SymFloat, float)):
            return self._add(S.Double(0.0))
        return self._add(S.Int(0))

    def _python_sym_op(self, node: Node) -> int:
        name, overload = dialect.PYTHON_SYM_OPS[node.target].rsplit(".", 1)
        args = [self.arg(a) for a in node.args]
        ret = self._sym_result(node.meta.get("val"))
        self.kernel_call(name, overload, args + [ret])
        return ret

    def _op(self, node: Node) -> Any:
        op: OpOverload = node.target
        schema = op._schema
        name, overload = dialect.kernel_name(op)
        args: List[int] = []
        outs: List[Any] = []
        for i, a in enumerate(schema.arguments):
            if a.name in node.kwargs:
                v = node.kwargs[a.name]
            elif not a.kwarg_only and i < len(node.args):
                v = node.args[i]
            elif a.has_default_value():
                v = a.default_value
            else:
                v = None
            idx = self.arg(v, a.type)
            args.append(idx)
            if a.is_out:
                outs.append(self._ref(v) if isinstance(v, Node) else idx)
        if outs:
            ret: Any = outs[0] if len(outs) == 1 else list(outs)
        elif dialect.is_sym_op(op):
            ret = self._sym_result(node.meta.get("val"))
        elif schema.returns and schema.returns[0].alias_info is not None and \
                schema.returns[0].alias_info.is_write:
            ret = args[0]  # in-place op (copy_): returns its destination
        else:
            raise self._error(f"{name}.{overload} is not an out variant; run the out-variant pass")
        if isinstance(ret, list):
            args.append(self._add(S.TensorList(list(ret))))
        else:
            args.append(ret)
        self.kernel_call(name, overload, args)
        return ret

    def _delegate_call(self, node: Node) -> Any:
        lowered = self.env[node.args[0]]
        self.lowered_modules.append(lowered)
        data_index = self.state.delegate(lowered.processed_bytes)
        for key, blob in lowered.named_data.items():
            tag = lowered.external_tags.get(key)
            if tag is None:
                self.state.named(key, blob)
            else:
                self.state.external(tag, key, blob)
        self.delegates.append(S.BackendDelegate(
            id=lowered.backend_id,
            processed=S.BackendDelegateDataReference(S.DataLocation.INLINE, data_index),
            compile_specs=[S.CompileSpec(cs.key, bytes(cs.value)) for cs in lowered.compile_specs],
        ))
        args = [self.arg(a) for a in node.args[1:]]
        spec = node.meta["spec"]
        if isinstance(spec, (list, tuple)):
            ret: Any = [self.tensor(s) if isinstance(s, TensorSpec) else
                        self._sym_result(v) for s, v in zip(spec, node.meta["val"])]
            outs = list(ret)
        else:
            ret = self.tensor(spec)
            outs = [ret]
        self._instruction(S.DelegateCall(len(self.delegates) - 1, args + outs),
                          handles=lowered.debug_handles())
        return ret


def emit_constant_method(name: str, value: Any, state: ProgramState) -> S.ExecutionPlan:
    """A method with no instructions that returns constant values (e.g. model metadata)."""
    leaves, spec = pytree.tree_flatten(value)
    values: List[S.EValue] = []
    for v in leaves:
        if isinstance(v, torch.Tensor):
            t = v.detach().cpu().contiguous()
            idx = state.constant(tensor_bytes(t, list(range(t.dim()))))
            values.append(S.EValue(S.Tensor(scalar_type(t.dtype), list(t.shape),
                                            list(range(t.dim())), data_buffer_idx=idx)))
        elif isinstance(v, torch.dtype):
            values.append(S.EValue(S.Int(int(scalar_type(v)))))
        else:
            values.append(S.EValue(MethodEmitter._literal_payload(v)))
    return S.ExecutionPlan(
        name=name,
        container_meta_type=S.ContainerMetadata("", pytree.treespec_dumps(spec)),
        values=values,
        inputs=[],
        outputs=list(range(len(values))),
        chains=[S.Chain()],
        operators=[],
        delegates=[],
        non_const_buffer_sizes=[0],
    )


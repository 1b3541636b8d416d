"""EmberTestBackend, ahead of time: the demo backend the delegation tests lower to.

Its runtime half is tests/c/backends/embt_backend.c (in the C tests, and as a
loadable library for `ember.runtime.load_library`). It runs elementwise
float32 subgraphs (add, sub, mul, relu, and scalar constants) whose tensors
all have one shape. `embt_compile` turns such a subgraph into a register
bytecode; the C backend evaluates it element by element. Payload layout
(little-endian):

  offset  size  field
  0       4     magic "EMBT"
  4       2     version = 1
  6       2     num_inputs    registers 0..num_inputs-1 hold the inputs
  8       2     num_outputs
  10      2     num_regs      registers in all (<= 256)
  12      4     numel         elements of every input and output
  16      4     num_instrs
  20      2*num_outputs       register of each output
  ...           zero padding to a multiple of 4
  ...     12*num_instrs       instructions: u8 op, u8 dst, u8 a, u8 b,
                              f32 imm, i32 debug_handle (-1 if none)

  ops: 1 CONST dst = imm; 2 ADD dst = a + b; 3 SUB dst = a - b;
       4 MUL dst = a * b; 5 RELU dst = max(a, 0)

Compile specs: "ember.dtype" = b"float32" (the only dtype it runs),
"ember.max_regs" = u32 LE (the most registers a payload may use) and
"ember.check_finite" = b"\\x01" (execute fails at the first instruction that
produces a NaN or infinity, naming that node's debug handle).

The codec here is shared with tests/fixtures/gen_fixtures.py, which lowers
with the reference exporter's classes; this file also holds ember's
BackendDetails and partitioner for it.
"""

from __future__ import annotations

import struct
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind

EMBT_CONST, EMBT_ADD, EMBT_SUB, EMBT_MUL, EMBT_RELU = 1, 2, 3, 4, 5
EMBT_MAX_REGS = 64
RTOL, ATOL = 1e-5, 1e-6

aten = torch.ops.aten
ATEN_OPS = {
    aten.add.Tensor: EMBT_ADD,
    aten.sub.Tensor: EMBT_SUB,
    aten.mul.Tensor: EMBT_MUL,
    aten.relu.default: EMBT_RELU,
}


def embt_interpret(payload: bytes, inputs: Sequence[np.ndarray]) -> List[np.ndarray]:
    """Reference interpreter of the payload (used to check preprocess)."""
    magic, ver, ni, no, nregs, numel, ninstr = struct.unpack_from("<4sHHHHII", payload, 0)
    assert magic == b"EMBT" and ver == 1 and len(inputs) == ni
    out_regs = struct.unpack_from(f"<{no}H", payload, 20)
    pos = 20 + 2 * no + (-(2 * no) % 4)
    regs: List[Any] = [np.asarray(x, np.float32).reshape(-1) for x in inputs]
    regs += [None] * (nregs - ni)
    with np.errstate(all="ignore"):
        for k in range(ninstr):
            op, dst, a, b, imm, _dh = struct.unpack_from("<BBBBfi", payload, pos + 12 * k)
            if op == EMBT_CONST:
                regs[dst] = np.full(numel, imm, np.float32)
            elif op == EMBT_ADD:
                regs[dst] = regs[a] + regs[b]
            elif op == EMBT_SUB:
                regs[dst] = regs[a] - regs[b]
            elif op == EMBT_MUL:
                regs[dst] = regs[a] * regs[b]
            elif op == EMBT_RELU:
                regs[dst] = np.maximum(regs[a], np.float32(0))
    return [regs[r] for r in out_regs]


def embt_compile(edge_program: ExportedProgram, specs: Dict[str, bytes],
                 op_code: Callable[[Any], Optional[int]]) -> bytes:
    """The payload for an elementwise subgraph; op_code maps a node target to an EMBT op."""
    if specs.get("ember.dtype", b"float32") != b"float32":
        raise RuntimeError("EmberTestBackend runs float32 only")
    max_regs = struct.unpack("<I", specs["ember.max_regs"])[0] if "ember.max_regs" in specs else 256
    sig = edge_program.graph_signature
    kinds = {s.arg.name: s for s in sig.input_specs}
    state = {**edge_program.state_dict, **edge_program.constants}
    reg: Dict[str, int] = {}
    consts: List[Tuple[str, float]] = []
    shape = None
    user_inputs = 0
    for n in edge_program.graph.nodes:
        if n.op != "placeholder":
            continue
        spec = kinds[n.name]
        if spec.kind == InputKind.USER_INPUT:
            reg[n.name] = user_inputs
            user_inputs += 1
            shape = tuple(n.meta["val"].shape) if shape is None else shape
            if tuple(n.meta["val"].shape) != shape or n.meta["val"].dtype != torch.float32:
                raise RuntimeError(f"EmberTestBackend: input {n.name} is not float32 {shape}")
        else:  # a constant owned by the delegate: must be a scalar
            t = state[spec.target]
            if t.numel() != 1:
                raise RuntimeError(f"EmberTestBackend: constant {n.name} is not a scalar")
            consts.append((n.name, float(t.reshape(-1)[0])))
    instrs: List[bytes] = []

    def emit(op: int, dst: int, a: int = 0, b: int = 0, imm: float = 0.0, dh: int = -1) -> None:
        instrs.append(struct.pack("<BBBBfi", op, dst, a, b, imm, dh))

    nregs = user_inputs
    for name, value in consts:
        reg[name] = nregs
        emit(EMBT_CONST, nregs, imm=value)
        nregs += 1
    out_regs: List[int] = []
    for n in edge_program.graph.nodes:
        if n.op == "call_function":
            op = op_code(n.target)
            if op is None:
                raise RuntimeError(f"EmberTestBackend cannot run {n.target}")
            if n.kwargs.get("alpha", 1) != 1 or len(n.args) > (1 if op == EMBT_RELU else 2):
                raise RuntimeError(f"EmberTestBackend: unsupported arguments of {n.name}")
            if tuple(n.meta["val"].shape) != shape or n.meta["val"].dtype != torch.float32:
                raise RuntimeError(f"EmberTestBackend: {n.name} is not float32 {shape}")
            srcs = [reg[a.name] for a in n.args]
            reg[n.name] = nregs
            emit(op, nregs, srcs[0], srcs[1] if len(srcs) > 1 else 0,
                 dh=int(n.meta.get("debug_handle", -1)))
            nregs += 1
        elif n.op == "output":
            out_regs = [reg[a.name] for a in n.args[0]]
    if nregs > min(max_regs, 256):
        raise RuntimeError(f"EmberTestBackend: {nregs} registers, limit {max_regs}")
    numel = int(np.prod(shape)) if shape else 1
    head = struct.pack("<4sHHHHII", b"EMBT", 1, user_inputs, len(out_regs), nregs, numel,
                       len(instrs))
    outs = struct.pack(f"<{len(out_regs)}H", *out_regs)
    payload = head + outs + bytes(-len(outs) % 4) + b"".join(instrs)

    # Check the payload against the subgraph on fixed pseudo-random inputs.
    gen = torch.Generator().manual_seed(1234)
    xs = [torch.randn(shape, generator=gen) for _ in range(user_inputs)]
    want = edge_program.module()(*xs)
    want = list(want) if isinstance(want, (tuple, list)) else [want]
    got = embt_interpret(payload, [x.numpy() for x in xs])
    for w, g_ in zip(want, got):
        if not np.allclose(w.detach().numpy().reshape(-1), g_, rtol=RTOL, atol=ATOL):
            raise RuntimeError("EmberTestBackend: payload does not match its subgraph")
    return payload


def embt_specs(check_finite: bool = False) -> List[Tuple[str, bytes]]:
    specs = [("ember.dtype", b"float32"), ("ember.max_regs", struct.pack("<I", EMBT_MAX_REGS))]
    if check_finite:
        specs.append(("ember.check_finite", b"\x01"))
    return specs


# --------------------------------------------------------------------------- #
# ember's side: BackendDetails and partitioner
# --------------------------------------------------------------------------- #

def _ember_classes():
    from ember.backend import (
        BackendDetails,
        CompileSpec,
        DelegationSpec,
        PartitionResult,
        Partitioner,
        PreprocessResult,
        tag_constant_data,
    )

    class EmberTestBackend(BackendDetails):
        """The class name is the backend id the program names."""

        @staticmethod
        def preprocess(edge_program, compile_specs):
            specs = {s.key: bytes(s.value) for s in compile_specs}
            return PreprocessResult(embt_compile(edge_program, specs, ATEN_OPS.get))

    class EmberTestPartitioner(Partitioner):
        """Tags connected float32 add/sub/mul/relu nodes; one delegate per connected group."""

        def __init__(self, check_finite: bool = False) -> None:
            self.spec = DelegationSpec("EmberTestBackend",
                                       [CompileSpec(k, v) for k, v in embt_specs(check_finite)])

        def partition(self, exported_program):
            from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
            from torch.fx.passes.operator_support import OperatorSupportBase

            class _Support(OperatorSupportBase):
                def is_node_supported(self, submodules, node) -> bool:  # noqa: ARG002
                    val = node.meta.get("val")
                    return (node.op == "call_function" and node.target in ATEN_OPS
                            and isinstance(val, torch.Tensor) and val.dtype == torch.float32)

            parts = CapabilityBasedPartitioner(
                exported_program.graph_module, _Support(),
                allows_single_node_partition=True).propose_partitions()
            tags = {}
            for i, p in enumerate(sorted(parts, key=lambda p: p.id)):
                tag = f"tag{i}"
                tags[tag] = self.spec
                for n in p.nodes:
                    n.meta["delegation_tag"] = tag
            tag_constant_data(exported_program)  # scalar constants move into their delegate
            return PartitionResult(exported_program, tags)

    return EmberTestBackend, EmberTestPartitioner


def ember_backend():
    """(EmberTestBackend, EmberTestPartitioner) for ember's to_backend, defined once."""
    global _CLASSES
    if _CLASSES is None:
        _CLASSES = _ember_classes()
    return _CLASSES


_CLASSES = None

"""Pattern annotators: each finds one operator pattern in a training-IR graph
(before `prepare_pt2e`) and writes the `QuantizationAnnotation`s that say
which of its inputs and outputs are observed, and how.

An annotator is `fn(gm, config, keep) -> None`; `keep(node)` says whether a
node is in the part of the model that config covers. A node annotated once
is left alone by every later annotator, so the order of PATTERNS decides
which pattern wins (a linear followed by relu is one pattern, observed after
the relu, before a lone linear is).

The patterns and their order are those ExecuTorch's XNNPACK quantizer uses,
so both quantizers put the same q/dq nodes in the same places.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable, Dict, FrozenSet, List, Optional, Sequence

import torch
from torch.fx import GraphModule, Node
from torchao.quantization.pt2e.quantizer import (
    QuantizationAnnotation,
    QuantizationConfig,
    QuantizationSpecBase,
    SharedQuantizationSpec,
)
from torchao.quantization.pt2e.quantizer.quantizer import Q_ANNOTATION_KEY

aten = torch.ops.aten

Keep = Callable[[Node], bool]
Annotator = Callable[[GraphModule, QuantizationConfig, Keep], None]

CONV = frozenset({aten.conv1d.default, aten.conv1d.padding, aten.conv2d.default,
                  aten.conv2d.padding, aten.conv3d.default, aten.conv3d.padding})
CONV_TRANSPOSE = frozenset({aten.conv_transpose1d.default, aten.conv_transpose2d.input,
                            aten.conv_transpose3d.input})
LINEAR = frozenset({aten.linear.default})
RELU = frozenset({aten.relu.default, aten.relu_.default})
ADD = frozenset({aten.add.Tensor, aten.add_.Tensor})
MUL = frozenset({aten.mul.Tensor, aten.mul_.Tensor})
CAT = frozenset({aten.cat.default})
ADAPTIVE_AVG_POOL2D = frozenset({aten.adaptive_avg_pool2d.default})

#: Ops whose output has their input's qparams (they move or select values,
#: or clamp to a range that contains zero): annotated after everything else,
#: sharing the observer of the value they read.
SHARES_INPUT_QPARAMS = frozenset({
    aten.relu.default, aten.hardtanh.default, aten.hardtanh_.default, aten.max_pool2d.default,
    aten.mean.default, aten.mean.dim, aten.permute.default, aten.permute_copy.default,
    aten.transpose.int, aten.squeeze.dim, aten.squeeze_copy.dim,
    aten.adaptive_avg_pool2d.default, aten.view_copy.default, aten.view.default,
    aten.reshape.default, aten.slice.Tensor, aten.slice_copy.Tensor, aten.flatten.using_ints,
    aten.dropout.default, aten.dropout_.default,
})

# torch.histc (the histogram observer) fails on values beyond this.
_HISTC_LIMIT = 3.4028235e15


# --------------------------------------------------------------------------- #
# Helpers
# --------------------------------------------------------------------------- #


def is_call(node: object, targets: FrozenSet[object]) -> bool:
    return isinstance(node, Node) and node.op == "call_function" and node.target in targets


def annotated(nodes: Sequence[Optional[Node]]) -> bool:
    """Whether a node of the pattern is already claimed by an annotator."""
    for n in nodes:
        a = n.meta.get(Q_ANNOTATION_KEY) if n is not None else None
        if a is not None and a._annotated:
            return True
    return False


def mark(nodes: Sequence[Optional[Node]]) -> None:
    """Claims the pattern's nodes (weights and biases included)."""
    for n in nodes:
        if n is None:
            continue
        a = n.meta.setdefault(Q_ANNOTATION_KEY, QuantizationAnnotation())
        a._annotated = True


def annotate(node: Node, inputs: Dict[Node, Optional[QuantizationSpecBase]],
             output: Optional[QuantizationSpecBase] = None) -> None:
    node.meta[Q_ANNOTATION_KEY] = QuantizationAnnotation(
        input_qspec_map=dict(inputs), output_qspec=output, _annotated=True)


def input_spec(config: QuantizationConfig) -> Optional[QuantizationSpecBase]:
    return config.input_activation


def output_spec(config: QuantizationConfig) -> Optional[QuantizationSpecBase]:
    return config.output_activation


def weight_spec(config: QuantizationConfig, ch_axis: Optional[int] = None
                ) -> Optional[QuantizationSpecBase]:
    w = config.weight
    if w is not None and ch_axis is not None:
        w = dataclasses.replace(w, ch_axis=ch_axis)
    return w


def _bias(node: Node) -> Optional[Node]:
    b = node.args[2] if len(node.args) > 2 else node.kwargs.get("bias")
    return b if isinstance(b, Node) else None


def _sole_user(node: Node) -> Optional[Node]:
    return next(iter(node.users)) if len(node.users) == 1 else None


def conv_groups(conv: Node) -> int:
    """The groups of a convolution, from its tensors' shapes (the training IR
    leaves them out when they are 1)."""
    w = conv.args[1].meta["val"]
    if conv.target in CONV_TRANSPOSE:
        return int(conv.meta["val"].shape[1]) // int(w.shape[1])
    return int(conv.args[0].meta["val"].shape[1]) // int(w.shape[1])


def _weight_inputs(node: Node, config: QuantizationConfig, ch_axis: Optional[int] = None
                   ) -> Dict[Node, Optional[QuantizationSpecBase]]:
    """input -> activation spec, weight -> weight spec, bias -> bias spec."""
    specs: Dict[Node, Optional[QuantizationSpecBase]] = {
        node.args[0]: input_spec(config), node.args[1]: weight_spec(config, ch_axis)}
    bias = _bias(node)
    if bias is not None:
        specs[bias] = config.bias
    return specs


# --------------------------------------------------------------------------- #
# Operators with weights
# --------------------------------------------------------------------------- #


def annotate_linear(gm: GraphModule, config: QuantizationConfig, keep: Keep) -> None:
    for node in gm.graph.nodes:
        if not is_call(node, LINEAR) or not keep(node) or annotated([node]):
            continue
        annotate(node, _weight_inputs(node, config), output_spec(config))
        mark([node, node.args[1], _bias(node)])


def annotate_linear_relu(gm: GraphModule, config: QuantizationConfig, keep: Keep) -> None:
    for relu in gm.graph.nodes:
        lin = relu.args[0] if is_call(relu, RELU) else None
        if not is_call(lin, LINEAR) or len(lin.users) > 1:
            continue
        pattern = [relu, lin, lin.args[1], _bias(lin)]
        if annotated(pattern) or not all(keep(n) for n in pattern if n is not None):
            continue
        annotate(lin, _weight_inputs(lin, config))
        annotate(relu, {}, output_spec(config))
        mark(pattern)


def _conv_annotator(transposed: bool) -> Annotator:
    targets = CONV_TRANSPOSE if transposed else CONV

    def fn(gm: GraphModule, config: QuantizationConfig, keep: Keep) -> None:
        dynamic = config.input_activation is not None and config.input_activation.is_dynamic
        for conv in gm.graph.nodes:
            if not is_call(conv, targets):
                continue
            if is_call(_sole_user(conv), RELU):
                continue  # conv_relu takes it
            if transposed and conv_groups(conv) != 1:
                continue
            w = conv.args[1].meta.get("val")
            # dynamic activations: 2-d convolutions that are not depthwise
            if dynamic and w is not None and (w.dim() != 4 or (not transposed and w.shape[1] == 1)):
                continue
            pattern = [conv, conv.args[1], _bias(conv)]
            if annotated(pattern) or not all(keep(n) for n in pattern if n is not None):
                continue
            annotate(conv, _weight_inputs(conv, config, 1 if transposed else None),
                     output_spec(config))
            mark(pattern)

    return fn


def _conv_relu_annotator(transposed: bool) -> Annotator:
    targets = CONV_TRANSPOSE if transposed else CONV

    def fn(gm: GraphModule, config: QuantizationConfig, keep: Keep) -> None:
        for relu in gm.graph.nodes:
            conv = relu.args[0] if is_call(relu, RELU) else None
            if not is_call(conv, targets) or len(conv.users) > 1:
                continue
            pattern = [relu, conv, conv.args[1], _bias(conv)]
            if annotated(pattern) or (transposed and conv_groups(conv) != 1):
                continue
            if not all(keep(n) for n in pattern if n is not None):
                continue
            annotate(conv, _weight_inputs(conv, config, 1 if transposed else None))
            annotate(relu, {}, output_spec(config))
            mark(pattern)

    return fn


# --------------------------------------------------------------------------- #
# Elementwise and the rest
# --------------------------------------------------------------------------- #


def _scalar_too_large(node: Node, gm: GraphModule) -> bool:
    if node.op != "get_attr":
        return False
    path, _, name = str(node.target).rpartition(".")
    t = getattr(gm.get_submodule(path), name)
    return isinstance(t, torch.Tensor) and t.numel() == 1 and abs(t.item()) > _HISTC_LIMIT


def _float_operands(node: Node, gm: GraphModule) -> Optional[List[Node]]:
    """The tensor operands of a binary op, or None when one must stay float
    (not float32, or a scalar too large to observe)."""
    out = []
    for a in node.args[:2]:
        if not isinstance(a, Node):
            continue
        v = a.meta.get("val")
        if not isinstance(v, torch.Tensor) or v.dtype != torch.float32 or _scalar_too_large(a, gm):
            return None
        out.append(a)
    return out


def _binary_annotator(targets: FrozenSet[object], with_relu: bool) -> Annotator:
    def fn(gm: GraphModule, config: QuantizationConfig, keep: Keep) -> None:
        for node in gm.graph.nodes:
            if with_relu:
                op = node.args[0] if is_call(node, RELU) else None
                if not is_call(op, targets) or len(op.users) > 1:
                    continue
                pattern = [node, op]
            else:
                if not is_call(node, targets):
                    continue
                op, pattern = node, [node]
            if annotated(pattern) or not all(keep(n) for n in pattern):
                continue
            operands = _float_operands(op, gm)
            if operands is None:
                continue
            inputs = {a: input_spec(config) for a in operands}
            if with_relu:
                annotate(op, inputs)
                annotate(node, {}, output_spec(config))
            else:
                annotate(op, inputs, output_spec(config))

    return fn


def _has_observed_source(node: Node) -> bool:
    """Whether node's value comes, through ops that keep qparams, from an
    output that is observed."""
    seen = set()
    while node not in seen:
        seen.add(node)
        a = node.meta.get(Q_ANNOTATION_KEY)
        if a is not None and a._annotated and a.output_qspec is not None:
            return True
        if not is_call(node, SHARES_INPUT_QPARAMS) or not isinstance(node.args[0], Node):
            return False
        node = node.args[0]
    return False


def annotate_cat(gm: GraphModule, config: QuantizationConfig, keep: Keep) -> None:
    """All inputs and the output of a cat share one observer: that of the
    first input already observed upstream (else of the first input)."""
    for cat in gm.graph.nodes:
        if not is_call(cat, CAT) or annotated([cat]) or not keep(cat):
            continue
        inputs = list(cat.args[0])
        source = next((t for t in inputs if isinstance(t, Node) and _has_observed_source(t)),
                      inputs[0])
        shared = SharedQuantizationSpec((source, cat))
        specs: Dict[Node, Optional[QuantizationSpecBase]] = {}
        if isinstance(source, Node):
            specs[source] = input_spec(config)
        for t in inputs:
            specs.setdefault(t, shared)
        annotate(cat, specs, shared)


def annotate_adaptive_avg_pool2d(gm: GraphModule, config: QuantizationConfig, keep: Keep) -> None:
    for pool in gm.graph.nodes:
        if not is_call(pool, ADAPTIVE_AVG_POOL2D) or annotated([pool]) or not keep(pool):
            continue
        x = pool.args[0]
        a = x.meta.get(Q_ANNOTATION_KEY)
        observed = a is not None and a._annotated and a.output_qspec is not None
        annotate(pool, {x: SharedQuantizationSpec(x) if observed else input_spec(config)},
                 SharedQuantizationSpec((x, pool)))


def propagate_shared(gm: GraphModule) -> None:
    """Every qparams-keeping op that reads an observed output and is not
    annotated yet shares that output's observer, on its input and output."""
    for node in gm.graph.nodes:
        if not is_call(node, SHARES_INPUT_QPARAMS) or not isinstance(node.args[0], Node):
            continue
        src = node.args[0]
        a = src.meta.get(Q_ANNOTATION_KEY)
        if a is None or a.output_qspec is None or annotated([node]):
            continue
        shared = SharedQuantizationSpec(src)
        annotate(node, {src: shared}, shared)


def scalars_to_attrs(gm: GraphModule) -> GraphModule:
    """Scalar operands of add and mul become float32 buffers (get_attr nodes),
    so that they can be observed like any other operand."""
    for node in gm.graph.nodes:
        if not is_call(node, frozenset({aten.add.Tensor, aten.mul.Tensor})):
            continue
        args = list(node.args)
        for i, a in enumerate(args):
            if isinstance(a, Node) or not isinstance(a, (int, float)):
                continue
            k = 0
            while hasattr(gm, f"_tensor_constant_{k}"):
                k += 1
            name = f"_tensor_constant_{k}"
            t = torch.tensor(float(a))
            gm.register_buffer(name, t)
            with gm.graph.inserting_before(node):
                attr = gm.graph.get_attr(name)
            attr.meta["val"] = node.meta["val"].fake_mode.from_tensor(t, static_shapes=True)
            args[i] = attr
        node.args = tuple(args)
    gm.recompile()
    return gm


# --------------------------------------------------------------------------- #
# The table
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class Pattern:
    name: str
    dynamic: bool          # applies to dynamic configurations
    targets: FrozenSet[object]
    annotate: Annotator


#: In priority order (an earlier pattern claims its nodes first).
PATTERNS: List[Pattern] = [
    Pattern("linear_relu", False, LINEAR, annotate_linear_relu),
    Pattern("linear", True, LINEAR, annotate_linear),
    Pattern("conv", True, CONV, _conv_annotator(False)),
    Pattern("conv_transpose", True, CONV_TRANSPOSE, _conv_annotator(True)),
    Pattern("conv_relu", False, CONV, _conv_relu_annotator(False)),
    Pattern("conv_transpose_relu", False, CONV_TRANSPOSE, _conv_relu_annotator(True)),
    Pattern("adaptive_avg_pool2d", False, ADAPTIVE_AVG_POOL2D, annotate_adaptive_avg_pool2d),
    Pattern("add_relu", False, ADD, _binary_annotator(ADD, True)),
    Pattern("add", False, ADD, _binary_annotator(ADD, False)),
    Pattern("mul_relu", False, MUL, _binary_annotator(MUL, True)),
    Pattern("mul", False, MUL, _binary_annotator(MUL, False)),
    Pattern("cat", False, CAT, annotate_cat),
]

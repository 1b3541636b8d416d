"""XnnpackBackend, ahead of time: an edge subgraph into an XNNPACK payload.

The runtime half is src/backends/xnnpack (ember), and ExecuTorch's XNNPACK
delegate reads the same bytes. Each call_function node becomes XNNGraph
nodes through the table in ops.py; the Builder here keeps, for every
PyTorch value, the XNNPACK value that holds it and that value's layout:

- "nchw": the tensor as PyTorch orders it;
- "nhwc": a 4-d tensor stored channels-last, which spatial nodes
  (convolutions, pooling, resize) read and write;
- "nhwc1d": a 3-d [N, C, L] tensor stored as [N, L, 1, C] (1-d convolutions
  run as 2-d ones of width 1).

A node asks for its inputs in the layout it needs, and the Builder inserts
the transposes (and reshapes) to get there, once per value and layout;
elementwise nodes keep the layout they are given, so chains of spatial and
elementwise nodes stay channels-last. A clamp (relu, hardtanh) that follows
a node that clamps its own output folds into that node.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind
from torch.fx import Node
from torch.utils import _pytree as pytree

from ...backend.backend_details import BackendDetails, CompileSpec, PreprocessResult
from ...errors import ExportError, source_location
from ...tensor_spec import upper_bound
from .graph import EXTERNAL_INPUT, EXTERNAL_OUTPUT, INVALID_ID, QINT8, XGraph, XNode, serialize
from .ops import NHWC_DIM, NHWC_POS, OPS, constant_of, f32_bytes, unsupported_reason, val
from .quant import QuantPlan

_TO_NHWC, _TO_NCHW = list(NHWC_DIM), list(NHWC_POS)
_CLAMPING = {"FullyConnected", "Conv2d", "DepthwiseConv2d", "ConvTranspose2d", "Add", "Subtract",
             "Multiply", "Div", "AvgPooling2d", "MaxPooling2d", "GlobalAvgPooling2d"}


def _logical(v: torch.Tensor) -> List[Any]:
    return list(v.shape)


def _physical(shape: Sequence[Any], layout: str) -> List[Any]:
    if layout == "nhwc":
        return [shape[i] for i in _TO_NHWC]
    if layout == "nhwc1d":
        return [shape[0], shape[2], 1, shape[1]]
    return list(shape)


def _bounds(shape: Sequence[Any]) -> List[int]:
    return [upper_bound(s) for s in shape]


def external_tag(node: Any) -> Optional[str]:
    """The data file a constant's weights go to: the `delegate_constant_tag`
    that ember.passes.external_constants (ExecuTorch's
    delegate_external_constants_pass_unlifted) put on its placeholder, found
    through the layout ops a weight may be read through; None keeps them in
    the program."""
    while isinstance(node, Node) and node.op == "call_function" and node.args:
        node = node.args[0]
    if not isinstance(node, Node) or node.op != "placeholder":
        return None
    tag = (node.meta.get("custom") or {}).get("delegate_constant_tag")
    return None if tag is None else str(tag)


def _new_shape(shape: Sequence[Any]) -> List[int]:
    """A reshape's target: static dims as they are, the (one) dynamic dim 0."""
    return [s if isinstance(s, int) else 0 for s in shape]


class Builder:
    """The XNNGraph of one edge subprogram, being built node by node."""

    def __init__(self, ep: ExportedProgram) -> None:
        self.ep = ep
        self.g = XGraph()
        self.values: Dict[Node, Tuple[int, str]] = {}
        self.converted: Dict[Tuple[int, str], int] = {}
        self.constants: Dict[Node, int] = {}
        self.calls = {n for n in ep.graph.nodes if n.op == "call_function"}
        self.current: Optional[Node] = None
        self.plan = QuantPlan(ep)
        # set while a static quantized op is lowered (see input and output)
        self.static = False
        # values a lowering shares between nodes (the quantized copy of an input)
        self.extra: Dict[Any, int] = {}

    # -- facts ----------------------------------------------------------- #

    def contains(self, node: Node) -> bool:
        return node in self.calls

    def constant_data(self, node: Any) -> Optional[torch.Tensor]:
        return constant_of(self.ep, node)

    def tag_of(self, node: Any) -> Optional[str]:
        """The data file a constant (or a computation on constants) goes to."""
        tags = {external_tag(a) for a in ([node] + list(node.all_input_nodes))} - {None}
        return min(tags) if tags else None

    def layout_of(self, node: Any) -> str:
        if self.static and self.plan.is_static_dq(node):
            node = node.args[0]
        return self.values[node][1] if node in self.values else "nchw"

    def _scalar_like(self, node: Any) -> bool:
        v = val(node)
        return isinstance(v, torch.Tensor) and all(isinstance(s, int) for s in v.shape) and \
            v.numel() == 1

    def common_layout(self, nodes: Sequence[Any]) -> str:
        """channels-last when an operand is, and every other one is channels-last
        too, or could be (4-d), or is a single element (broadcasts either way)."""
        layouts = {self.layout_of(n) for n in nodes if not self._scalar_like(n)}
        if layouts == {"nhwc"} or ("nhwc" in layouts and all(
                self._scalar_like(n) or val(n).dim() == 4 for n in nodes)):
            return "nhwc"
        return "nchw"

    # -- values ---------------------------------------------------------- #

    def constant_tensor(self, t: torch.Tensor, tag: Optional[str] = None) -> int:
        """A constant; one computed from weights (a folded batch norm, a
        repacked filter) goes where the weights of the node being lowered go."""
        if tag is None and self.current is not None:
            tags = {external_tag(a) for a in pytree.tree_leaves((self.current.args,
                                                                  self.current.kwargs))
                    if isinstance(a, Node)} - {None}
            tag = min(tags) if tags else None
        return self.g.constant(f32_bytes(t), list(t.shape) or [1], tag)

    def constant(self, node: Node) -> int:
        if node not in self.constants:
            self.constants[node] = self.constant_tensor(self.constant_data(node),
                                                        external_tag(node))
        return self.constants[node]

    def node(self, kind: str, at: Optional[Node], **fields: Any) -> XNode:
        handle = at.meta.get("debug_handle", 0) if at is not None else 0
        return self.g.node(kind, int(handle) if isinstance(handle, int) else 0, **fields)

    def _like(self, vid: int, dims: Sequence[int]) -> int:
        """A new value of vid's type (quantized values keep their params)."""
        src = self.g.values[vid]
        return self.g.value(dims, datatype=src.datatype, quant=src.quant)

    def _convert(self, vid: int, have: str, want: str, shape: Sequence[Any]) -> int:
        key = (vid, want)
        if key in self.converted:
            return self.converted[key]
        at = self.current
        if have == "nchw" and want == "nhwc1d":  # [N, C, L] -> [N, C, L, 1] -> [N, L, 1, C]
            four = self._like(vid, _bounds(list(shape) + [1]))
            self.node("StaticReshape", at, num_dims=4, new_shape=_new_shape(list(shape) + [1]),
                      input_id=vid, output_id=four)
            out = self._like(vid, _bounds(_physical(shape, want)))
            self.node("StaticTranspose", at, num_dims=4, perm=_TO_NHWC, input_id=four,
                      output_id=out)
        elif have == "nhwc1d" and want == "nchw":  # [N, L, 1, C] -> [N, C, L, 1] -> [N, C, L]
            four = self._like(vid, _bounds(list(shape) + [1]))
            self.node("StaticTranspose", at, num_dims=4, perm=_TO_NCHW, input_id=vid,
                      output_id=four)
            out = self._like(vid, _bounds(shape))
            self.node("StaticReshape", at, num_dims=len(shape), new_shape=_new_shape(shape),
                      input_id=four, output_id=out)
        elif have == "nchw" and want == "nhwc":
            out = self._like(vid, _bounds(_physical(shape, want)))
            self.node("StaticTranspose", at, num_dims=4, perm=_TO_NHWC, input_id=vid,
                      output_id=out)
        elif have == "nhwc" and want == "nchw":
            out = self._like(vid, _bounds(shape))
            self.node("StaticTranspose", at, num_dims=4, perm=_TO_NCHW, input_id=vid,
                      output_id=out)
        else:
            return self._convert(self._convert(vid, have, "nchw", shape), "nchw", want, shape)
        self.converted[key] = out
        return out

    def input(self, node: Any, layout: str, as_4d: bool = False) -> int:
        """The value holding node, in layout (a 1-d convolution asks for nhwc1d).
        While a static quantized op is lowered, a dequantized activation is
        read as the quantized value it came from."""
        if self.static and self.plan.is_static_dq(node):
            node = node.args[0]
        want = "nhwc1d" if as_4d and layout == "nhwc" else layout
        if node not in self.values:
            data = self.constant_data(node)
            if data is None:
                raise ExportError(f"xnnpack: {node} has no value in the delegate")
            if want == "nhwc" and data.dim() == 4:
                return self.constant_tensor(data.permute(*_TO_NHWC).contiguous(),
                                            external_tag(node))
            return self.constant(node)
        vid, have = self.values[node]
        if have == want or self._scalar_like(node):
            return vid
        return self._convert(vid, have, want, _logical(val(node)))

    def output(self, node: Node, layout: str, as_4d: bool = False) -> int:
        """A new value for node's result, stored in layout."""
        layout = "nhwc1d" if as_4d and layout == "nhwc" else layout
        dims = _bounds(_physical(_logical(val(node)), layout))
        if self.static:  # a static quantized op writes its output quantized
            vid = self.g.value(dims, datatype=QINT8, quant=self.plan.out_quant(node))
        else:
            vid = self.g.value(dims)
        self.values[node] = (vid, layout)
        return vid

    def alias(self, node: Node, src: Any, layout: str) -> None:
        """node's result is src's value read in another layout (a permute that
        only relabels the stored order): no node; the node that writes the
        value also answers for node's debug handle."""
        vid = self.input(src, self.layout_of(src))
        self.values[node] = (vid, layout)
        handle = node.meta.get("debug_handle")
        if isinstance(handle, int) and handle:
            writer = next((n for n in reversed(self.g.nodes) if n.fields.get("output_id") == vid),
                          None)
            if writer is not None:
                writer.covers.append(handle)

    # -- the whole subgraph ---------------------------------------------- #

    def build(self) -> XGraph:
        sig = self.ep.graph_signature
        kinds = {getattr(s.arg, "name", None): s.kind for s in sig.input_specs}
        inputs = [n for n in self.ep.graph.nodes
                  if n.op == "placeholder" and kinds.get(n.name) == InputKind.USER_INPUT]
        for ext, ph in enumerate(inputs):
            v = val(ph)
            if not isinstance(v, torch.Tensor):
                # a size the partition's views read (their shapes infer it); its
                # argument position stays reserved, since external ids index args
                continue
            layout = "nhwc" if v.dim() == 4 and v.dim_order() == (0, 2, 3, 1) else "nchw"
            vid = self.g.value(_bounds(_physical(_logical(v), layout)), external_id=ext,
                               flags=EXTERNAL_INPUT)
            self.values[ph] = (vid, layout)
        for n in self.ep.graph.nodes:
            if n.op != "call_function" or self.constant_data(n) is not None:
                continue  # folded constants are read as data by their users
            quantized = self.plan.covers(n)
            reason = self.plan.reason(n) if quantized else unsupported_reason(self.ep, n)
            if reason is not None:
                raise ExportError(f"xnnpack cannot take {n.target} (node {n.name}, from "
                                  f"{source_location(n)}): {reason}")
            self.current = n
            if quantized:
                self.plan.lower(self, n)
            else:
                OPS[n.target].lower(self, n)
        outs = pytree.tree_leaves(self.ep.graph.output_node().args[0])
        taken = set()
        for k, o in enumerate(outs):
            v = val(o)
            want = "nhwc" if v.dim() == 4 and v.dim_order() == (0, 2, 3, 1) else "nchw"
            self.current = o if isinstance(o, Node) and o.op == "call_function" else None
            vid = self.input(o, want)
            xv = self.g.values[vid]
            if xv.flags or xv.constant or vid in taken:  # an input, a constant, or output twice
                copy = self.g.value(xv.dims)
                self.node("Copy", self.current, input_id=vid, output_id=copy)
                vid = copy
            taken.add(vid)
            self.g.values[vid].flags = EXTERNAL_OUTPUT
            self.g.values[vid].external_id = len(inputs) + k
        self.g.num_externs = len(inputs) + len(outs)
        _fold_clamps(self.g)
        _drop_unused_values(self.g)
        return self.g


def _fold_clamps(g: XGraph) -> None:
    """A Clamp whose input only it reads, made by a node that clamps its own
    output, becomes that node's output_min_max. The node keeps writing its
    own value, which the Clamp's readers read instead (unless the Clamp wrote
    a delegate output: then the node writes that)."""
    readers: Dict[int, int] = {}
    for n in g.nodes:
        for k, v in n.fields.items():
            if k.endswith("_id") and k != "output_id" and isinstance(v, int) and v != INVALID_ID:
                readers[v] = readers.get(v, 0) + 1
    producer = {n.output_id: n for n in g.nodes}
    renamed: Dict[int, int] = {}
    keep: List[XNode] = []
    for n in g.nodes:
        for k, v in list(n.fields.items()):
            if k.endswith("_id") and k != "output_id" and v in renamed:
                n.fields[k] = renamed[v]  # type: ignore[index]
        if n.kind == "Clamp":
            src = int(n.fields["input_id"])  # type: ignore[arg-type]
            p = producer.get(src)
            if p is not None and p.kind in _CLAMPING and readers.get(src) == 1 and \
                    not g.values[src].flags:
                lo = n.output_min if p.output_min is None else max(p.output_min, n.output_min)
                hi = n.output_max if p.output_max is None else min(p.output_max, n.output_max)
                p.output_min, p.output_max = lo, hi
                p.covers += ([n.debug_handle] if n.debug_handle else []) + n.covers
                if g.values[n.output_id].flags:
                    p.fields["output_id"] = n.output_id
                    producer[n.output_id] = p
                else:
                    renamed[n.output_id] = src
                continue
        keep.append(n)
    g.nodes[:] = keep


def _drop_unused_values(g: XGraph) -> None:
    """Removes the values no node reads or writes and that are no external
    (the output of a clamp folded away), numbering the rest in order."""
    used = {i for i, v in enumerate(g.values) if v.flags}
    for n in g.nodes:
        for k, v in n.fields.items():
            if k.endswith("_id") and isinstance(v, int) and v != INVALID_ID:
                used.add(v)
    if len(used) == len(g.values):
        return
    new_id = {old: new for new, old in enumerate(sorted(used))}
    g.values[:] = [v for i, v in enumerate(g.values) if i in used]
    for n in g.nodes:
        for k, v in list(n.fields.items()):
            if k.endswith("_id") and isinstance(v, int) and v != INVALID_ID:
                n.fields[k] = new_id[v]


class XnnpackBackend(BackendDetails):
    """Writes the payload ExecuTorch's XNNPACK delegate reads; weights go to the
    program's named data, or to a `.ptd` data file when their placeholder
    carries a `delegate_constant_tag`."""

    @staticmethod
    def preprocess(edge_program: ExportedProgram,
                   compile_specs: List[CompileSpec]) -> PreprocessResult:
        g = Builder(edge_program).build()
        return PreprocessResult(serialize(g), debug_handle_map=_handle_map(g),
                                named_data=g.named_data, external_tags=g.external_tags)


def _handle_map(g: XGraph) -> Dict[int, List[int]]:
    """The delegate map: for each debug handle the runtime reports (a node's
    own), the handles of every edge node computed under it, folded ones
    included. ExecuTorch's Inspector looks delegate events up by that id."""
    out: Dict[int, set] = {}
    for n in g.nodes:
        if n.debug_handle:
            out.setdefault(n.debug_handle, set()).update([n.debug_handle] + n.covers)
    return {h: sorted(hs) for h, hs in out.items()}

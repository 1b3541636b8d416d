"""XNNPACKQuantizer: torchao's pt2e `Quantizer` for models lowered to XNNPACK.

    from torchao.quantization.pt2e.quantize_pt2e import prepare_pt2e, convert_pt2e
    from ember.backends.xnnpack.quantizer import (
        XNNPACKQuantizer, get_symmetric_quantization_config)

    quantizer = XNNPACKQuantizer().set_global(
        get_symmetric_quantization_config(is_per_channel=True))
    m = prepare_pt2e(torch.export.export(model, args).module(), quantizer)
    m(*calibration_args)
    m = convert_pt2e(m)

Configurations apply, most specific first: by module name, by module type,
by operator type (outside those modules), then the global one (everywhere
else). The operator patterns are in annotators.py.
"""

from __future__ import annotations

from typing import Callable, Dict, List, Optional, Union

import torch
from torch.fx import GraphModule, Node
from torchao.quantization.pt2e.quantizer import (
    QuantizationConfig,
    QuantizationSpec,
    Quantizer,
    get_module_name_filter,
)
from torchao.quantization.pt2e.quantizer.quantizer import Q_ANNOTATION_KEY

from .annotators import PATTERNS, Keep, Pattern, propagate_shared, scalars_to_attrs
# ExecuTorch's module of this name exports the configuration builders too, so
# scripts that import them from here port by changing the package name only.
from .config import (get_symmetric_quantization_config,  # noqa: F401
                     get_weight_only_quantization_config)

_ACT_SCHEMES = (torch.per_tensor_affine, torch.per_tensor_symmetric)
_WEIGHT_SCHEMES = (torch.per_tensor_symmetric, torch.per_channel_symmetric)
OperatorType = Union[torch._ops.OpOverload, torch._ops.OpOverloadPacket]


def check_config(config: object, where: str) -> QuantizationConfig:
    """Raises ValueError, saying what to change, unless config is one the
    XNNPACK backend can run."""
    fix = "build it with get_symmetric_quantization_config(...)"
    if not isinstance(config, QuantizationConfig):
        raise ValueError(f"XNNPACKQuantizer.{where}: expected a QuantizationConfig, got "
                         f"{type(config).__name__}; {fix}")
    act, out, w = config.input_activation, config.output_activation, config.weight
    for name, spec in (("input_activation", act), ("output_activation", out)):
        if spec is None:
            continue
        if not isinstance(spec, QuantizationSpec) or spec.dtype != torch.int8 or \
                spec.qscheme not in _ACT_SCHEMES:
            raise ValueError(f"XNNPACKQuantizer.{where}: {name} must be an int8 per-tensor "
                             f"QuantizationSpec, got {spec}; {fix}")
    if act is None and out is not None:
        raise ValueError(f"XNNPACKQuantizer.{where}: an output activation spec without an input "
                         f"one; {fix}")
    if act is not None and act.is_dynamic and out is not None:
        raise ValueError(f"XNNPACKQuantizer.{where}: dynamic activations have no output spec "
                         f"(outputs stay float32); use "
                         f"get_symmetric_quantization_config(is_dynamic=True)")
    if w is None:
        raise ValueError(f"XNNPACKQuantizer.{where}: the config has no weight spec; {fix}")
    if not isinstance(w, QuantizationSpec) or w.dtype != torch.int8 or \
            w.qscheme not in _WEIGHT_SCHEMES or w.is_dynamic:
        raise ValueError(f"XNNPACKQuantizer.{where}: the weight spec must be static int8, "
                         f"symmetric per tensor or per channel, got {w}; {fix}")
    if w.quant_min is not None and w.quant_max is not None and w.quant_min + w.quant_max != 0:
        raise ValueError(f"XNNPACKQuantizer.{where}: weights must be symmetric (quant_min == "
                         f"-quant_max), got [{w.quant_min}, {w.quant_max}]; {fix}")
    if config.bias is not None and config.bias.dtype != torch.float32:
        raise ValueError(f"XNNPACKQuantizer.{where}: the bias spec must be float32 (XNNPACK "
                         f"quantizes the bias itself), got {config.bias.dtype}")
    return config


def module_type_filter(module_type: Callable) -> Keep:
    """Whether a node comes from inside a module of this type."""
    wanted = f"{module_type.__module__}.{module_type.__qualname__}"

    def keep(n: Node) -> bool:
        for _, t in (n.meta.get("nn_module_stack") or {}).values():
            name = f"{t.__module__}.{t.__qualname__}" if isinstance(t, type) else str(t)
            if name == wanted:
                return True
        return False

    return keep


def _matches(pattern: Pattern, op: Optional[OperatorType]) -> bool:
    if op is None:
        return True
    return any(t is op or getattr(t, "overloadpacket", None) is op for t in pattern.targets)


class XNNPACKQuantizer(Quantizer):
    """Annotates the operators XNNPACK runs quantized: linear, convolutions
    (transposed ones too), add, mul (each with a following relu fused), cat,
    adaptive average pooling, and the ops that keep their input's qparams
    around them (relu, hardtanh, max pooling, mean, views, permutes, slices)."""

    def __init__(self) -> None:
        super().__init__()
        self.global_config: Optional[QuantizationConfig] = None
        self.operator_type_config: Dict[OperatorType, QuantizationConfig] = {}
        self.module_type_config: Dict[Callable, QuantizationConfig] = {}
        self.module_name_config: Dict[str, QuantizationConfig] = {}
        self.filter_fn: Optional[Keep] = None

    # -- configuration (each returns self, to chain) ---------------------- #

    def set_global(self, quantization_config: Optional[QuantizationConfig]) -> "XNNPACKQuantizer":
        """The config for every part of the model no other setting covers
        (None: leave those parts float)."""
        if quantization_config is not None:
            check_config(quantization_config, "set_global")
        self.global_config = quantization_config
        return self

    def set_operator_type(self, operator_type: OperatorType,
                          quantization_config: QuantizationConfig) -> "XNNPACKQuantizer":
        """The config for the patterns of one operator (torch.ops.aten.linear.default,
        or its packet torch.ops.aten.linear)."""
        if not isinstance(operator_type, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
            raise ValueError(f"XNNPACKQuantizer.set_operator_type: expected an aten operator "
                             f"such as torch.ops.aten.linear.default, got {operator_type!r}")
        if not any(_matches(p, operator_type) for p in PATTERNS):
            known = sorted({str(t) for p in PATTERNS for t in p.targets})
            raise ValueError(f"XNNPACKQuantizer.set_operator_type: {operator_type} has no "
                             f"quantized pattern; the operators with one are {known}")
        self.operator_type_config[operator_type] = check_config(quantization_config,
                                                                "set_operator_type")
        return self

    def set_module_type(self, module_type: Callable,
                        quantization_config: QuantizationConfig) -> "XNNPACKQuantizer":
        """The config for every submodule of this type (nn.Linear, a block class)."""
        if not isinstance(module_type, type):
            raise ValueError(f"XNNPACKQuantizer.set_module_type: expected a module class such "
                             f"as torch.nn.Linear, got {module_type!r}")
        self.module_type_config[module_type] = check_config(quantization_config,
                                                            "set_module_type")
        return self

    def set_module_name(self, module_name: str,
                        quantization_config: Optional[QuantizationConfig]) -> "XNNPACKQuantizer":
        """The config for the submodule at this dotted path ("blocks.0.attn")."""
        if quantization_config is None:
            raise ValueError("XNNPACKQuantizer.set_module_name: a None config is not supported; "
                             "to keep a submodule float, leave it out of every setting")
        if not isinstance(module_name, str):
            raise ValueError(f"XNNPACKQuantizer.set_module_name: expected a dotted submodule "
                             f"name, got {module_name!r}")
        self.module_name_config[module_name] = check_config(quantization_config,
                                                            "set_module_name")
        return self

    def set_filter_function(self, filter_fn: Keep) -> "XNNPACKQuantizer":
        """Only nodes for which filter_fn returns True are quantized."""
        self.filter_fn = filter_fn
        return self

    # -- the Quantizer interface ------------------------------------------ #

    def transform_for_annotation(self, model: GraphModule) -> GraphModule:
        return scalars_to_attrs(model)

    def annotate(self, model: GraphModule) -> GraphModule:
        names = list(self.module_name_config)
        types = list(self.module_type_config)
        for name, config in self.module_name_config.items():
            self._annotate(model, config, get_module_name_filter(name))
        for tp, config in self.module_type_config.items():
            self._annotate(model, config, module_type_filter(tp))
        elsewhere = self._outside(types, names)
        for op, config in self.operator_type_config.items():
            self._annotate(model, config, elsewhere, op)
        if self.global_config is not None:
            self._annotate(model, self.global_config, elsewhere)
        propagate_shared(model)
        return model

    def validate(self, model: GraphModule) -> None:
        """Checks that every observed tensor is int8 (or a float bias)."""
        for node in model.graph.nodes:
            a = node.meta.get(Q_ANNOTATION_KEY)
            if a is None:
                continue
            specs = list(a.input_qspec_map.values()) + [a.output_qspec]
            for s in specs:
                if isinstance(s, QuantizationSpec) and s.dtype not in (torch.int8, torch.float32):
                    raise ValueError(f"XNNPACKQuantizer: node {node.name} is annotated with "
                                     f"{s.dtype}; XNNPACK runs int8 only")

    # -- helpers ---------------------------------------------------------- #

    @staticmethod
    def _outside(types: List[Callable], names: List[str]) -> Keep:
        filters = [module_type_filter(t) for t in types] + [get_module_name_filter(n)
                                                            for n in names]
        return lambda n: not any(f(n) for f in filters)

    def _annotate(self, model: GraphModule, config: QuantizationConfig, keep: Keep,
                  op: Optional[OperatorType] = None) -> None:
        user = self.filter_fn

        def both(n: Node) -> bool:
            return keep(n) and (user is None or user(n))

        act = config.input_activation
        dynamic = act is not None and act.is_dynamic
        for p in PATTERNS:
            if not _matches(p, op):
                continue
            if dynamic and not p.dynamic:
                continue
            if act is None and not p.dynamic:
                continue  # weight-only: the operators with weights
            p.annotate(model, config, both)

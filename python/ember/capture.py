"""Capture: `ember_call_delegate`, through which torch.export traces a lowered module.

A LoweredBackendModule used inside a bigger model (the composition flow)
must reach the exported graph as one opaque call, not as the operators of
the subgraph it was lowered from. Its forward calls this higher-order
operator, which torch.export records as

    %lowered_module_0 = get_attr[target=lowered_module_0]
    %ember_call_delegate = ember_call_delegate(%lowered_module_0, %x, ...)
    %getitem = getitem(%ember_call_delegate, 0)

with the lowered module registered on the traced root. to_edge turns the
node into the `call_delegate` marker (`dialect`) that the emitter writes as
a DelegateCall. Outside tracing (eager, fake tensors), it runs the subgraph
the backend was given, so the composed model still runs in PyTorch.
"""

from __future__ import annotations

from typing import Any, Tuple

import torch
from torch._C import DispatchKey
from torch._higher_order_ops.utils import autograd_not_implemented
from torch._ops import HigherOrderOperator
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.proxy_tensor import ProxyTorchDispatchMode, track_tensor_tree
from torch.utils import _pytree as pytree

from .dialect import call_delegate


class EmberCallDelegate(HigherOrderOperator):
    def __init__(self) -> None:
        super().__init__("ember_call_delegate")

    def __call__(self, lowered_module: Any, *args: Any) -> Any:
        return super().__call__(lowered_module, *args)


ember_call_delegate = EmberCallDelegate()


def _run_subgraph(lowered_module: Any, *args: Any) -> Tuple[Any, ...]:
    out = lowered_module.original_module.module()(*args)
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


@ember_call_delegate.py_impl(DispatchKey.CompositeExplicitAutograd)
def _eager(lowered_module: Any, *args: Any) -> Tuple[Any, ...]:
    return _run_subgraph(lowered_module, *args)


@ember_call_delegate.py_impl(FakeTensorMode)
def _fake(mode: FakeTensorMode, lowered_module: Any, *args: Any) -> Tuple[Any, ...]:
    with mode:
        return _run_subgraph(lowered_module, *args)


@ember_call_delegate.py_impl(ProxyTorchDispatchMode)
def _trace(mode: ProxyTorchDispatchMode, lowered_module: Any, *args: Any) -> Tuple[Any, ...]:
    root = mode.tracer.root
    name = None
    for attr, mod in root.named_children():
        if mod is lowered_module:
            name = attr
            break
    if name is None:
        i = 0
        while hasattr(root, f"lowered_module_{i}"):
            i += 1
        name = f"lowered_module_{i}"
        root.register_module(name, lowered_module)
    module_proxy = mode.tracer.create_proxy("get_attr", name, (), {})
    arg_proxies = pytree.tree_map(mode.tracer.unwrap_proxy, args)
    proxy = mode.tracer.create_proxy("call_function", ember_call_delegate,
                                     (module_proxy,) + tuple(arg_proxies), {})
    out = _run_subgraph(lowered_module, *args)
    return track_tensor_tree(out, proxy, constant=None, tracer=mode.tracer)


@ember_call_delegate.py_functionalize_impl
def _functionalize(ctx: Any, lowered_module: Any, *args: Any) -> Any:
    unwrapped = ctx.unwrap_tensors(args)
    with ctx.redispatch_to_next():
        return ctx.wrap_tensors(ember_call_delegate(lowered_module, *unwrapped))


ember_call_delegate.py_autograd_impl(
    autograd_not_implemented(ember_call_delegate, deferred_error=True))
for _key in (DispatchKey.PythonDispatcher, DispatchKey.PythonTLSSnapshot,
             DispatchKey.ADInplaceOrView, DispatchKey.AutocastCPU):
    ember_call_delegate.fallthrough(_key)


def is_delegate_op(node: torch.fx.Node) -> bool:
    return node.op == "call_function" and node.target is ember_call_delegate


def delegate_ops_to_calls(gm: torch.fx.GraphModule) -> int:
    """Turns traced ember_call_delegate nodes into the emitter's call_delegate marker."""
    count = 0
    for n in gm.graph.nodes:
        if is_delegate_op(n):
            n.target = call_delegate
            count += 1
    if count:
        gm.recompile()
    return count

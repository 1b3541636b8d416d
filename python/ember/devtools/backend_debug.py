"""How much of a graph went to delegates, operator by operator.

    info = get_delegation_info(edge.exported_program().graph_module)
    print(info.get_summary())
    print(info.format_operator_table())             # tabulate, no pandas needed
    df = info.get_operator_delegation_dataframe()   # the same table as a pandas DataFrame

Operators inside lowered modules count as delegated; every other operator
node counts as not delegated. Bookkeeping nodes (getitem, the delegate call
itself) are not operators and are not counted.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Any, Dict, List

from torch.fx import GraphModule, Node

from ..backend.lowered import LoweredBackendModule, is_delegate_call
from ..graph_utils import subgraphs

# Nodes that move values around rather than compute.
_NOT_OPERATORS = (operator.getitem,)


@dataclass
class DelegationBreakdown:
    """Occurrences of one operator type inside and outside delegates."""

    op_type: str = ""
    delegated: int = 0
    non_delegated: int = 0


@dataclass
class DelegationInfo:
    num_delegated_subgraphs: int = 0
    num_delegated_nodes: int = 0
    num_non_delegated_nodes: int = 0
    delegation_by_operator: Dict[str, DelegationBreakdown] = field(default_factory=dict)

    def get_summary(self) -> str:
        return (f"Total delegated subgraphs: {self.num_delegated_subgraphs}\n"
                f"Number of delegated nodes: {self.num_delegated_nodes}\n"
                f"Number of non-delegated nodes: {self.num_non_delegated_nodes}\n")

    def operator_rows(self) -> List[List[Any]]:
        """[op_type, occurrences in delegated graphs, occurrences outside] per operator
        (sorted by name), then a Total row."""
        rows: List[List[Any]] = [[b.op_type, b.delegated, b.non_delegated]
                                 for _, b in sorted(self.delegation_by_operator.items())]
        rows.append(["Total", self.num_delegated_nodes, self.num_non_delegated_nodes])
        return rows

    COLUMNS = ["op_type", "occurrences_in_delegated_graphs", "occurrences_in_non_delegated_graphs"]

    def format_operator_table(self, tablefmt: str = "github") -> str:
        from tabulate import tabulate

        return tabulate(self.operator_rows(), headers=self.COLUMNS, tablefmt=tablefmt)

    def get_operator_delegation_dataframe(self) -> Any:
        try:
            import pandas as pd
        except ImportError as e:  # pragma: no cover - pandas is optional
            raise ImportError("get_operator_delegation_dataframe needs pandas (pip install "
                              "pandas); format_operator_table() prints the same table "
                              "without it") from e
        return pd.DataFrame(self.operator_rows(), columns=self.COLUMNS)


def op_type(node: Node) -> str:
    """'aten.add.Tensor' for an operator node."""
    t = node.target
    if hasattr(t, "_schema"):
        s = t._schema
        ns, name = s.name.split("::", 1)
        return f"{ns}.{name}.{s.overload_name or 'default'}"
    return getattr(t, "__name__", str(t))


def _operators(gm: GraphModule) -> List[Node]:
    return [n for g in [gm] + subgraphs(gm) for n in g.graph.nodes
            if n.op == "call_function" and n.target not in _NOT_OPERATORS
            and not is_delegate_call(n)]


def get_delegation_info(graph_module: GraphModule) -> DelegationInfo:
    """Counts delegated subgraphs and operator nodes inside and outside delegates."""
    info = DelegationInfo()

    def count(node: Node, delegated: bool) -> None:
        key = op_type(node)
        b = info.delegation_by_operator.setdefault(key, DelegationBreakdown(op_type=key))
        if delegated:
            b.delegated += 1
            info.num_delegated_nodes += 1
        else:
            b.non_delegated += 1
            info.num_non_delegated_nodes += 1

    for n in _operators(graph_module):
        count(n, False)
    for _, mod in graph_module.named_children():
        if isinstance(mod, LoweredBackendModule):
            info.num_delegated_subgraphs += 1
            for n in _operators(mod.original_module.graph_module):
                count(n, True)
    return info

"""Developer tools: delegation summaries, bundled programs (more to come: traces, inspector)."""

from .backend_debug import DelegationBreakdown, DelegationInfo, get_delegation_info

__all__ = ["DelegationBreakdown", "DelegationInfo", "get_delegation_info"]

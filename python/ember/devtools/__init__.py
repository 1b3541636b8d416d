"""Developer tools: delegation summaries, bundled programs (more to come: traces, inspector)."""

from .backend_debug import DelegationBreakdown, DelegationInfo, get_delegation_info
from .bundled_program import BundledProgram

__all__ = ["BundledProgram", "DelegationBreakdown", "DelegationInfo", "get_delegation_info"]

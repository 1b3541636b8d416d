"""Developer tools: delegation summaries, and runtime traces (ETDump) read
with ExecuTorch's Inspector."""

from .backend_debug import DelegationBreakdown, DelegationInfo, get_delegation_info
from .etdump import inspector_for, read_etdump

__all__ = ["DelegationBreakdown", "DelegationInfo", "get_delegation_info", "inspector_for",
           "read_etdump"]

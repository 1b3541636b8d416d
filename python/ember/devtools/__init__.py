"""Developer tools: delegation summaries, ETRecord, the Inspector over
runtime traces (ETDump), its plots and numeric debugging, bundled programs."""

from .backend_debug import DelegationBreakdown, DelegationInfo, get_delegation_info
from .bundled_program import BundledProgram
from .etdump import inspector_for, read_etdump
from .etdump_reader import ETDumpError, parse_etdump
from .etrecord import ETRecord, ETRecordError, generate_etrecord, parse_etrecord
from .inspector import Event, EventBlock, Inspector

__all__ = ["BundledProgram", "DelegationBreakdown", "DelegationInfo", "ETDumpError", "ETRecord",
           "ETRecordError", "Event", "EventBlock", "Inspector", "generate_etrecord",
           "get_delegation_info", "inspector_for", "parse_etdump", "parse_etrecord",
           "read_etdump"]

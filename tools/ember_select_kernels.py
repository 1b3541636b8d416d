#!/usr/bin/env python3
"""Writes the kernel registration table of a selective build.

    ember_select_kernels.py --out selected_kernels.c \\
        --table src/kernels/portable/ops.def --table src/kernels/optimized/ops.def \\
        SELECTION...

Each SELECTION is one of:
  * a program, `.pte` (or a bundled `.bpte`): the kernel keys its methods call,
    read from its operator tables (the same list as `ember-run --list-ops`);
  * an operator list: a text file with one kernel key a line (`#` comments);
  * a kernel key itself, such as `aten::add.out`.

The output defines the functions that src/kernels/*/registry.c define in a
full build (ember_portable_kernels_register, ember_optimized_kernels_register
and their _count/_at), with tables holding only the selected keys, so that a
static link pulls in only those kernels. Keys that no table has (custom
operators the application registers itself) are reported on stderr.

Standard library only: CMake runs it at build time with any Python 3.
"""

from __future__ import annotations

import argparse
import re
import struct
import sys
from pathlib import Path
from typing import Dict, Iterable, List, Set, Tuple

_ROW = re.compile(r'^[ \t]*(EKO?_OP)\(\s*"([^"]+)"\s*,\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)', re.M)
_ROW_START = re.compile(r'^[ \t]*EKO?_OP\(', re.M)
_TABLES = {"EK_OP": "portable", "EKO_OP": "optimized"}


# --------------------------------------------------------------------------- #
# Reading a .pte: just enough flatbuffer to walk Program.execution_plan[*].operators
# --------------------------------------------------------------------------- #


class FormatError(ValueError):
    pass


class _Flatbuffer:
    def __init__(self, data: bytes) -> None:
        self.d = data

    def _u32(self, pos: int) -> int:
        if pos < 0 or pos + 4 > len(self.d):
            raise FormatError(f"offset {pos} is outside the file")
        return struct.unpack_from("<I", self.d, pos)[0]

    def _field(self, table: int, index: int) -> int:
        """Absolute position of field `index` of the table at `table`, 0 if absent."""
        vtable = table - struct.unpack("<i", self.d[table:table + 4])[0]
        if vtable < 0 or vtable + 4 > len(self.d):
            raise FormatError(f"vtable of the table at {table} is outside the file")
        vsize = struct.unpack_from("<H", self.d, vtable)[0]
        slot = 4 + 2 * index
        if slot + 2 > vsize:
            return 0
        off = struct.unpack_from("<H", self.d, vtable + slot)[0]
        return table + off if off else 0

    def table(self, table: int, index: int) -> int:
        pos = self._field(table, index)
        return pos + self._u32(pos) if pos else 0

    def vector(self, table: int, index: int) -> List[int]:
        """Positions of the tables a vector-of-tables field points at."""
        pos = self._field(table, index)
        if not pos:
            return []
        start = pos + self._u32(pos)
        n = self._u32(start)
        if n > (len(self.d) - start) // 4:
            raise FormatError(f"vector at {start} has {n} entries, more than the file holds")
        return [start + 4 + 4 * i + self._u32(start + 4 + 4 * i) for i in range(n)]

    def string(self, table: int, index: int) -> str:
        pos = self._field(table, index)
        if not pos:
            return ""
        start = pos + self._u32(pos)
        n = self._u32(start)
        if start + 4 + n > len(self.d):
            raise FormatError(f"string at {start} runs past the end of the file")
        return self.d[start + 4:start + 4 + n].decode("utf-8")


def _program_bytes(data: bytes, path: Path) -> bytes:
    """The program flatbuffer: the file itself, or the program a bundled program carries."""
    ident = data[4:8]
    if ident[:2] == b"ET":
        return data
    if ident[:2] == b"BP":
        # BundledProgram { version: uint; method_test_suites; program: [ubyte] }
        fb = _Flatbuffer(data)
        root = fb._u32(0)
        pos = fb._field(root, 2)
        if not pos:
            raise FormatError(f"{path}: the bundled program carries no program")
        start = pos + fb._u32(pos)
        n = fb._u32(start)
        return data[start + 4:start + 4 + n]
    raise FormatError(f"{path}: not a .pte program (file identifier {ident!r})")


def pte_operators(path: Path) -> List[str]:
    """Kernel keys ("aten::add.out") the methods of a program call, sorted, unique."""
    data = _program_bytes(path.read_bytes(), path)
    fb = _Flatbuffer(data)
    keys: Set[str] = set()
    try:
        root = fb._u32(0)
        # Program { version, execution_plan, ... }
        for plan in fb.vector(root, 1):
            # ExecutionPlan { name, container_meta_type, values, inputs, outputs,
            #                 chains, operators, ... }
            for op in fb.vector(plan, 6):
                name, overload = fb.string(op, 0), fb.string(op, 1)
                keys.add(f"{name}.{overload}" if overload else name)
    except (struct.error, UnicodeDecodeError) as e:
        raise FormatError(f"{path}: malformed program ({e})") from None
    return sorted(keys)


# --------------------------------------------------------------------------- #
# Selection
# --------------------------------------------------------------------------- #


def read_selection(entries: Iterable[str]) -> Set[str]:
    keys: Set[str] = set()
    for entry in entries:
        path = Path(entry)
        if "::" in entry and not path.exists():
            keys.add(entry.strip())
        elif path.suffix in (".pte", ".bpte"):
            keys.update(pte_operators(path))
        elif path.is_file():
            for line in path.read_text().splitlines():
                line = line.split("#", 1)[0].strip()
                if line:
                    keys.add(line)
        else:
            raise FileNotFoundError(f"selection {entry!r} is neither a file nor a kernel key "
                                    "(namespace::name.overload)")
    return keys


def read_tables(paths: Iterable[str]) -> Dict[str, List[Tuple[str, str]]]:
    """{"portable": [(key, fn)...], "optimized": [...]} from the ops.def files."""
    tables: Dict[str, List[Tuple[str, str]]] = {"portable": [], "optimized": []}
    for p in paths:
        text = Path(p).read_text()
        rows = _ROW.findall(text)
        if len(rows) != len(_ROW_START.findall(text)):
            raise FormatError(f"{p}: {len(_ROW_START.findall(text))} rows, of which only "
                              f"{len(rows)} read as OP(\"key\", function)")
        for macro, key, fn in rows:
            tables[_TABLES[macro]].append((key, fn))
    return tables


def generate(keys: Set[str], tables: Dict[str, List[Tuple[str, str]]], sources: List[str]) -> str:
    out = [
        "/*",
        " * Generated by tools/ember_select_kernels.py: the kernel tables of a",
        " * selective build. Do not edit; change the selection instead:",
    ]
    out += [" *   " + s.replace("*/", "* /") for s in sources]
    out += [
        " */",
        '#include "ember/kernel.h"',
        "",
    ]
    for kind, prefix in (("portable", "portable"), ("optimized", "optimized")):
        rows = [(k, fn) for k, fn in tables[kind] if k in keys]
        for fn in sorted({fn for _, fn in rows}):
            out.append(f"ember_status {fn}(ember_kernel_ctx *ctx, ember_value **args, size_t nargs);")
        out.append(f"\n/* {len(rows)} of {len(tables[kind])} {kind} kernels */")
        if rows:
            out.append(f"static const ember_kernel {prefix}_kernels[] = {{")
            out += [f'    {{"{k}", {fn}}},' for k, fn in rows]
            out.append("};")
            out.append(f"#define {prefix.upper()}_COUNT (sizeof {prefix}_kernels / "
                       f"sizeof {prefix}_kernels[0])")
            table = f"{prefix}_kernels"
        else:
            out.append(f"#define {prefix.upper()}_COUNT ((size_t)0)")
            table = "NULL"
        out += [
            "",
            f"ember_status ember_{prefix}_kernels_register(void) {{",
            f"    return ember_kernels_register({table}, {prefix.upper()}_COUNT);",
            "}",
            "",
            f"size_t ember_{prefix}_kernel_count(void) {{ return {prefix.upper()}_COUNT; }}",
            "",
            f"const ember_kernel *ember_{prefix}_kernel_at(size_t i) {{",
        ]
        if rows:
            out.append(f"    return i < {prefix.upper()}_COUNT ? &{table}[i] : NULL;")
        else:
            out.append("    (void)i;\n    return NULL;")
        out.append("}")
    return "\n".join(out) + "\n"


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("selection", nargs="*", help=".pte files, operator lists or kernel keys")
    ap.add_argument("--table", action="append", default=[],
                    help="an ops.def of the kernel libraries (repeatable)")
    ap.add_argument("--out", help="the C file to write (when it differs)")
    ap.add_argument("--list", action="store_true",
                    help="print the selected kernel keys, one a line, and exit")
    args = ap.parse_args(argv)
    try:
        keys = read_selection(args.selection)
    except (OSError, FormatError) as e:
        print(f"ember_select_kernels: error: {e}", file=sys.stderr)
        return 1
    if args.list:
        print("\n".join(sorted(keys)))
        return 0
    if not args.out or not args.table:
        ap.error("--out and at least one --table are needed")
    try:
        tables = read_tables(args.table)
    except (OSError, FormatError) as e:
        print(f"ember_select_kernels: error: {e}", file=sys.stderr)
        return 1
    known = {k for rows in tables.values() for k, _ in rows}
    unknown = sorted(keys - known)
    if unknown:
        print("ember_select_kernels: no built-in kernel for " + ", ".join(unknown)
              + " (the application registers these itself)", file=sys.stderr)
    text = generate(keys, tables, args.selection)
    out = Path(args.out)
    if not out.exists() or out.read_text() != text:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

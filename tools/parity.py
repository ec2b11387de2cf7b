#!/usr/bin/env python3
"""The parity table, docs/parity.json: one row per operation of every primitive, with its
name, parameters and result on each surface (Rust, C, Python, Node), or why a surface has none.

Each surface's tests check its own column by introspection (core/tests/parity.rs,
bindings-python/tests/test_parity.py, bindings-node/test/parity.test.js); this tool checks C's
against the generated header, checks that every row is whole, and renders the table of
docs/concepts.md ("One operation, four spellings") from the file.

  tools/parity.py check      every row whole; C's column against include/rlock.h
  tools/parity.py render     rewrites the table canonically and docs/concepts.md's table from it
                             (make generated; --check: fail when either is stale)
  RLOCK_PARITY_WRITE=1 tools/parity.py check   writes C's column from the header instead
"""

import json
import os
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
TABLE = ROOT / "docs" / "parity.json"
HEADER = ROOT / "include" / "rlock.h"
CONCEPTS = ROOT / "docs" / "concepts.md"
SURFACES = ("rust", "c", "python", "node")
BEGIN, END = "<!-- parity:begin (tools/parity.py render) -->", "<!-- parity:end -->"


def header_functions() -> dict:
    """Every function rlock.h declares: name -> (params, return type)."""
    text = re.sub(r"//[^\n]*", "", HEADER.read_text())
    found = {}
    for ret, name, params in re.findall(r"^([A-Za-z_][\w \*]*?)\s*\b(rlock_\w+)\(([^;{]*?)\);", text, re.M):
        names = [] if params.strip() in ("", "void") else [re.findall(r"(\w+)\s*(?:\[\])?$", p.strip())[0] for p in params.split(",")]
        found[name] = (names, " ".join(ret.split()))
    return found


def check() -> list:
    table = json.loads(TABLE.read_text())
    functions = header_functions()
    write = os.environ.get("RLOCK_PARITY_WRITE") == "1"
    problems = []
    for row in table["rows"]:
        what = f"{row.get('primitive')}, {row.get('operation')}"
        for surface in SURFACES:
            cell = row.get(surface)
            if not isinstance(cell, dict) or not (cell.get("name") or cell.get("absent")):
                problems.append(f"{what}: no {surface} cell (a name, or why there is none under 'absent')")
        cell = row.get("c") or {}
        if cell.get("name"):
            if cell["name"] not in functions:
                problems.append(f"{what}: rlock.h declares no {cell['name']}")
                continue
            params, returns = functions[cell["name"]]
            if write:
                cell["params"], cell["returns"] = params, returns
            elif (cell.get("params"), cell.get("returns")) != (params, returns):
                problems.append(f"{cell['name']}: table {cell.get('params')} -> {cell.get('returns')!r}, rlock.h {params} -> {returns!r}")
    if write:
        TABLE.write_text(json.dumps(table, indent=1, ensure_ascii=False) + "\n")
    return problems


def spelled(cell: dict) -> str:
    """A cell as the docs show it: `name(params)` and its result."""
    if cell.get("absent"):
        return f"none: {cell['absent']}"
    name, params, returns = cell["name"], cell.get("params", []), cell.get("returns", "")
    if params == ["(property)"]:
        shown = f"`{name}`"
    else:
        shown = f"`{name}({', '.join(params)})`"
    return f"{shown} → `{returns}`" if returns and returns not in ("None", "void") else shown


def canonical(table: dict) -> str:
    """The table as it is kept: rows in order, keys in one order, one-space indent (the
    surfaces' tests may write it with other formatting)."""
    cell_keys = ("name", "params", "returns", "absent")
    rows = [
        {"primitive": r["primitive"], "operation": r["operation"],
         **{s: {k: r[s][k] for k in cell_keys if k in r[s]} for s in SURFACES}}
        for r in table["rows"]
    ]
    return json.dumps({"rows": rows}, indent=1, ensure_ascii=False) + "\n"


def render(check_only: bool = False) -> bool:
    """Writes the canonical table and docs/concepts.md's table from it; with `check_only`,
    only says whether either would change."""
    table = json.loads(TABLE.read_text())
    stale = False
    kept = canonical(table)
    if kept != TABLE.read_text():
        stale = True
        if not check_only:
            TABLE.write_text(kept)
            print(f"wrote {TABLE}")
    lines = [BEGIN, "", "| primitive | operation | Rust | C | Python | Node |", "|---|---|---|---|---|---|"]
    for row in table["rows"]:
        cells = [spelled(row[s]).replace("|", "\\|") for s in SURFACES]
        lines.append(f"| {row['primitive']} | {row['operation']} | " + " | ".join(cells) + " |")
    lines += ["", END]
    text = CONCEPTS.read_text()
    start, end = text.index(BEGIN), text.index(END) + len(END)
    new = text[:start] + "\n".join(lines) + text[end:]
    if new != text:
        stale = True
        if not check_only:
            CONCEPTS.write_text(new)
            print(f"wrote {CONCEPTS}")
    return stale


if __name__ == "__main__":
    if sys.argv[1:] == ["check"]:
        problems = check()
        for p in problems:
            print("parity:", p, file=sys.stderr)
        if problems:
            sys.exit(1)
        print(f"parity: {len(json.loads(TABLE.read_text())['rows'])} rows whole; C's column matches rlock.h")
    elif sys.argv[1:] == ["render"]:
        render()
    elif sys.argv[1:] == ["render", "--check"]:
        if render(check_only=True):
            sys.exit("docs/parity.json or docs/concepts.md's table is stale: run make generated")
    else:
        sys.exit(__doc__)

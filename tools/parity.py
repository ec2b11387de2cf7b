#!/usr/bin/env python3
"""The parity table, docs/parity.json: one row per operation of every primitive, with its
name, parameters and result on each surface (Rust, C, Python, Node), or why a surface has none.

The check runs both ways. Table to code: each surface's tests check its own column by
introspection (core/tests/parity.rs, bindings-python/tests/test_parity.py,
bindings-node/test/parity.test.js), and this tool checks C's against the generated header.
Code to table: every public method, function or property a surface has is named in a row or
in the table's "unlisted" groups, each of which says why its names are not operations of
the table (a handle's free, C's error channel, an async twin, a hook the bindings build on);
the same tests and this tool (for C) fail on a name in neither, and on an unlisted name the
surface no longer has. This tool also checks that every row is whole, and renders the table
of docs/concepts.md ("One operation, four spellings") from the file.

  tools/parity.py check      every row whole; C's column against include/rlock.h, both ways
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
    problems += uncovered("c", [f for f in functions], table)
    if write:
        TABLE.write_text(json.dumps(table, indent=1, ensure_ascii=False) + "\n")
    return problems


def uncovered(surface: str, public: list, table: dict, inherited: frozenset = frozenset()) -> list:
    """Code to table for one surface: each of its `public` names must be in a row's cell, or be
    one of `inherited` (the same definition as a name a row or an unlisted group has, reached
    through a base class),
    or be in an unlisted group (`*.member` there stands for that member on every class, and
    `Class.*` for every member of a class that is no primitive: options, records, errors); and
    each unlisted name must still be public. core/tests/parity.rs and
    bindings-node/test/parity.test.js keep the same rule in their languages."""
    named = {row[surface]["name"] for row in table["rows"] if row[surface].get("name")} | inherited
    unlisted = {n for group in table.get("unlisted", []) for n in group.get(surface, [])}
    sep = "::" if surface == "rust" else "."

    def split(name: str) -> tuple:
        return tuple(name.rsplit(sep, 1)) if sep in name else ("", name)

    problems = []
    for name in public:
        owner, member = split(name)
        if not {name, f"*{sep}{member}", f"{owner}{sep}*"} & (named | unlisted):
            problems.append(f"{surface}: {name} is public but in no row and in no unlisted group")
    for name in sorted(unlisted):
        owner, member = split(name)
        if owner == "*":
            gone = not any(split(n)[1] == member for n in public)
        elif member == "*":
            gone = not any(split(n)[0] == owner for n in public)
        else:
            gone = name not in public
        if gone:
            problems.append(f"{surface}: unlisted {name} is not public any more")
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
    unlisted = [
        {k: g[k] for k in ("why", *SURFACES) if k in g} for g in table.get("unlisted", [])
    ]
    return json.dumps({"rows": rows, "unlisted": unlisted}, indent=1, ensure_ascii=False) + "\n"


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
        print(f"parity: {len(json.loads(TABLE.read_text())['rows'])} rows whole; C's column matches rlock.h both ways")
    elif sys.argv[1:] == ["render"]:
        render()
    elif sys.argv[1:] == ["render", "--check"]:
        if render(check_only=True):
            sys.exit("docs/parity.json or docs/concepts.md's table is stale: run make generated")
    else:
        sys.exit(__doc__)

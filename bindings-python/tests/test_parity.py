"""The parity table, docs/parity.json: one row per operation of every primitive, with its name,
parameters and result on each surface. This checks Python's column by introspection: every
name exists on the public class, takes those parameters (``*``: keyword-only from here) and
is annotated with that result. Classes made in Rust (``CountDownLatch``) are read from their
stub, ``rlock/_native.pyi``. ``RLOCK_PARITY_WRITE=1`` writes what is found into the table
instead (after a deliberate API change; review the diff)."""

from __future__ import annotations

import ast
import inspect
import json
import os
import pathlib
import sys
from typing import Any, Dict, List, Tuple

import rlock

TABLE = pathlib.Path(__file__).resolve().parents[2] / "docs" / "parity.json"
STUB = pathlib.Path(rlock.__file__).with_name("_native.pyi")


def _stub_signature(cls_name: str, attr: str) -> Tuple[List[str], str]:
    """Parameters and result of `cls_name.attr` as the stub declares them."""
    tree = ast.parse(STUB.read_text())
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == cls_name:
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == attr:
                    a = item.args
                    params = [p.arg for p in a.posonlyargs + a.args][1:]
                    if a.vararg:
                        params.append("*" + a.vararg.arg)
                    elif a.kwonlyargs:
                        params.append("*")
                    params += [p.arg for p in a.kwonlyargs]
                    if a.kwarg:
                        params.append("**" + a.kwarg.arg)
                    returns = ast.unparse(item.returns) if item.returns else ""
                    return params, returns
    raise AssertionError(f"{cls_name}.{attr} is not in {STUB.name}")


def described(name: str) -> Tuple[List[str], str]:
    """What `Class.attr` of the rlock package takes and returns."""
    cls_name, attr = name.split(".")
    cls = getattr(rlock, cls_name)
    raw = inspect.getattr_static(cls, attr)
    if isinstance(raw, property):
        assert raw.fget is not None
        return ["(property)"], str(inspect.signature(raw.fget).return_annotation)
    if cls.__module__ == "rlock._native":
        return _stub_signature(cls_name, attr)
    sig = inspect.signature(getattr(cls, attr))
    params: List[str] = []
    for p in list(sig.parameters.values())[1:]:
        if p.kind is p.VAR_POSITIONAL:
            params.append("*" + p.name)
        elif p.kind is p.VAR_KEYWORD:
            params.append("**" + p.name)
        else:
            if p.kind is p.KEYWORD_ONLY and not any(x.startswith("*") for x in params):
                params.append("*")
            params.append(p.name)
    returns = sig.return_annotation
    return params, "" if returns is inspect.Signature.empty else str(returns)


def test_the_python_column_is_what_rlock_has() -> None:
    table: Dict[str, Any] = json.loads(TABLE.read_text())
    write = os.environ.get("RLOCK_PARITY_WRITE") == "1"
    wrong = []
    for row in table["rows"]:
        cell = row["python"]
        if "absent" in cell:
            continue
        assert hasattr(getattr(rlock, cell["name"].split(".")[0], None), cell["name"].split(".")[1]), (
            f"{row['primitive']}, {row['operation']}: rlock has no {cell['name']}"
        )
        params, returns = described(cell["name"])
        if write:
            cell["params"], cell["returns"] = params, returns
        elif (cell.get("params"), cell.get("returns")) != (params, returns):
            wrong.append(f"{cell['name']}: table {cell.get('params')} -> {cell.get('returns')!r}, "
                         f"rlock {params} -> {returns!r}")
    if write:
        TABLE.write_text(json.dumps(table, indent=1, ensure_ascii=False) + "\n")
    assert not wrong, "docs/parity.json's Python column differs:\n" + "\n".join(wrong)


# Members every class has from Python itself, and dunders that are not operations of the table.
_NOT_PUBLIC = {"__init_subclass__", "__subclasshook__", "__class_getitem__"}
_PROTOCOL = ("__init__", "__enter__", "__exit__", "__aenter__", "__aexit__")


def _public_names() -> Dict[str, Any]:
    """What the rlock package offers: `Class.member` -> its definition, for every class and
    function `rlock.__all__` exports (not the errors and the record shapes), and `rlock.name`
    for its module-level functions."""
    found: Dict[str, Any] = {}
    for export in rlock.__all__:
        obj = getattr(rlock, export)
        if inspect.isfunction(obj):
            found[f"rlock.{export}"] = obj
            continue
        if not inspect.isclass(obj) or issubclass(obj, (BaseException, dict)) or not getattr(obj, "__module__", "").startswith("rlock"):
            continue
        for attr in dir(obj):
            if (attr.startswith("_") and attr not in _PROTOCOL) or attr in _NOT_PUBLIC:
                continue
            raw = inspect.getattr_static(obj, attr)
            if attr in _PROTOCOL and raw in (getattr(object, attr, None), getattr(type, attr, None)):
                continue
            found[f"{obj.__name__}.{attr}"] = raw
    return found


def test_every_public_name_has_a_row_or_a_reason() -> None:
    """Code to table: a method, property or function rlock offers is in a row, or in an unlisted
    group with its reason, or is the same definition as a name there (through a base class)."""
    sys.path.insert(0, str(TABLE.parents[1] / "tools"))
    from parity import uncovered  # type: ignore[import-not-found]

    table: Dict[str, Any] = json.loads(TABLE.read_text())
    public = _public_names()
    named = {row["python"]["name"] for row in table["rows"] if row["python"].get("name")}
    named |= {n for group in table["unlisted"] for n in group.get("python", []) if not n.startswith("*")}
    inherited = frozenset(
        name for name, raw in public.items()
        if name not in named and any(
            n.split(".")[1] == name.split(".")[1] and public.get(n) is raw for n in named
        )
    )
    problems = uncovered("python", sorted(public), table, inherited)
    assert not problems, "\n".join(problems)

"""help() documents the package: every public class, function, method and property of rlock (its
``__all__``) has a docstring, the native ones (pyo3 ``///`` comments) included."""

from __future__ import annotations

import inspect
import typing
from typing import Any, List, Tuple

import pytest

import rlock


def public_names() -> List[Tuple[str, Any]]:
    return [(name, getattr(rlock, name)) for name in rlock.__all__]


def has_docs(member: Any) -> bool:
    """Whether ``member`` is something help() documents with a docstring of its own (a method, a
    property, a descriptor); a plain value (a dataclass field's default) is documented by its
    class's ``#:`` comments instead."""
    return (callable(member) or isinstance(member, (property, staticmethod, classmethod))
            or inspect.isdatadescriptor(member) or inspect.ismethoddescriptor(member))


def public_members() -> List[Tuple[str, Any]]:
    """(Class.member, the member as stored on its class) for every class of ``__all__`` that
    help() documents (see :func:`has_docs`); members inherited from builtins (``object``,
    ``Exception``, ``dict``) are the builtins' business."""
    out = []
    for name, obj in public_names():
        if not inspect.isclass(obj):
            continue
        for cls in obj.__mro__:
            if cls.__module__ == "builtins" or cls.__module__.startswith("typing"):
                continue
            for member in vars(cls):
                if member.startswith("_"):
                    continue
                value = inspect.getattr_static(obj, member)
                if has_docs(value):
                    out.append((f"{name}.{member}", value))
    return out


def doc_of(obj: Any) -> str:
    if isinstance(obj, (staticmethod, classmethod)):
        obj = obj.__func__
    return (getattr(obj, "__doc__", None) or "").strip()


def test_the_module_has_a_docstring() -> None:
    assert doc_of(rlock)


@pytest.mark.parametrize(("name", "obj"), public_names(), ids=[n for n, _ in public_names()])
def test_every_public_name_has_a_docstring(name: str, obj: Any) -> None:
    if typing.get_origin(obj) is not None:
        # A type alias (``Kind = Literal[...]``): help() shows typing's own page for it; its
        # meaning is documented where it is used (the TypedDicts' fields).
        return
    assert doc_of(obj), f"rlock.{name} has no docstring: help(rlock.{name}) shows nothing"


@pytest.mark.parametrize(("name", "member"), public_members(), ids=[n for n, _ in public_members()])
def test_every_public_method_and_property_has_a_docstring(name: str, member: Any) -> None:
    assert doc_of(member), f"rlock.{name} has no docstring: help() shows nothing for it"


def test_the_check_sees_the_members() -> None:
    # The parametrized test above covers methods of both the Python and the native classes.
    names = {n for n, _ in public_members()}
    assert {"Lock.acquire", "Lock.is_lost", "CountDownLatch.wait", "Semaphore.try_set_permits",
            "Client.topology", "FencedLock.token"} <= names


def test_version_is_the_workspace_version() -> None:
    import pathlib
    import re

    cargo = (pathlib.Path(__file__).resolve().parents[2] / "Cargo.toml").read_text()
    m = re.search(r'^version = "([^"]+)"', cargo, re.M)
    assert m and rlock.__version__ == m.group(1)

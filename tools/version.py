#!/usr/bin/env python3
"""One version for every artifact: the workspace version in Cargo.toml.

    python3 tools/version.py            # print it
    python3 tools/version.py check      # fail when a file that carries it drifted
    python3 tools/version.py set 0.2.0  # write it everywhere, then run `make generated header`

Derived without a copy (so not listed here): the Python package (pyproject's version is
dynamic: maturin reads the crate's), `rlock --version` and `rlock.__version__` (the crates'
CARGO_PKG_VERSION), rlock.pc (mk/c.mk fills @VERSION@ from Cargo.toml), the header's
RLOCK_VERSION_* (generated from the crate version; `make generated-check` fails on drift).
Carried as copies, and so checked: the Node package files (npm needs a literal), the loader napi
generates into bindings-node/index.js, the newest CHANGELOG.md section, and the artifact file
names the README and docs/surfaces/ show.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Callable, List, Tuple

ROOT = Path(__file__).resolve().parent.parent


def workspace_version() -> str:
    text = (ROOT / "Cargo.toml").read_text()
    section = text.split("[workspace.package]", 1)[1].split("\n[", 1)[0]
    m = re.search(r'^version = "([^"]+)"', section, re.M)
    if not m:
        sys.exit("tools/version.py: no version in [workspace.package] of Cargo.toml")
    return m.group(1)


def json_version(path: str, *keys: str) -> Callable[[], str]:
    def get() -> str:
        v = json.loads((ROOT / path).read_text())
        for k in keys:
            v = v[k]
        return str(v)

    return get


def regex_all(path: str, pattern: str) -> Callable[[], str]:
    """Every match of `pattern` in `path` (one group each) must agree; returns that one value."""

    def get() -> str:
        found = set(re.findall(pattern, (ROOT / path).read_text(), re.M))
        if len(found) != 1:
            return f"<{len(found)} different values: {sorted(found)}>"
        return found.pop()

    return get


def changelog_version() -> str:
    path = ROOT / "CHANGELOG.md"
    if not path.exists():
        return "<no CHANGELOG.md>"
    m = re.search(r"^## \[([^\]]+)\]", path.read_text(), re.M)
    return m.group(1) if m else "<no '## [VERSION]' section>"


CHECKS: List[Tuple[str, Callable[[], str]]] = [
    ("Cargo.toml [workspace.dependencies] rlock", regex_all("Cargo.toml", r'^rlock = \{ path = "core", version = "([^"]+)"')),
    ("bindings-node/package.json", json_version("bindings-node/package.json", "version")),
    ("bindings-node/package-lock.json", json_version("bindings-node/package-lock.json", "version")),
    ("bindings-node/package-lock.json (root package)", json_version("bindings-node/package-lock.json", "packages", "", "version")),
    ("bindings-node/index.js (napi's loader)", regex_all("bindings-node/index.js", r"bindingPackageVersion !== '([^']+)'")),
    ("CHANGELOG.md (newest section)", changelog_version),
]

# Pages that name artifact files (rlock-0.1.0.tgz, librlock.so.0.1.0, ...): every such name
# carries the workspace version.
DOC_PAGES = ["README.md", "docs/surfaces/c.md", "docs/surfaces/node.md", "docs/surfaces/python.md", "docs/surfaces/rust.md"]
ARTIFACT_VERSION = r"(?:rlock-(?:linux-(?:x64|arm64)-(?:gnu|musl)-|cli-)?|librlock\.so\.)(\d+\.\d+\.\d+)(?=[-._]|$|\s)"


def check() -> int:
    v = workspace_version()
    bad = 0
    for what, get in CHECKS:
        have = get()
        if have != v:
            print(f"{what}: {have}, but the workspace version is {v}")
            bad += 1
    for page in DOC_PAGES:
        for found in sorted(set(re.findall(ARTIFACT_VERSION, (ROOT / page).read_text()))):
            if found != v:
                print(f"{page}: names an artifact of version {found}, but the workspace version is {v}")
                bad += 1
    if (ROOT / "bindings-python/pyproject.toml").read_text().find('dynamic = ["version"]') < 0:
        print('bindings-python/pyproject.toml: the version must be dynamic = ["version"] (maturin reads the crate\'s)')
        bad += 1
    if bad:
        print("version drift: run 'python3 tools/version.py set VERSION' and 'make generated header'")
        return 1
    print(f"version {v}: Cargo.toml, the Node package and CHANGELOG.md agree")
    return 0


def set_version(new: str) -> int:
    if not re.fullmatch(r"\d+\.\d+\.\d+(-[0-9A-Za-z.]+)?", new):
        sys.exit(f"tools/version.py: '{new}' is not MAJOR.MINOR.PATCH[-PRE]")
    old = workspace_version()

    def sub(path: str, pattern: str, repl: str, count: int = 0) -> None:
        p = ROOT / path
        p.write_text(re.sub(pattern, repl, p.read_text(), count=count, flags=re.M))

    sub("Cargo.toml", r'^(version = )"[^"]+"', rf'\1"{new}"', count=1)
    sub("Cargo.toml", r'^(rlock = \{ path = "core", version = )"[^"]+"', rf'\1"{new}"')
    sub("bindings-node/package.json", r'^(  "version": )"[^"]+"', rf'\1"{new}"', count=1)
    p = ROOT / "bindings-node/package-lock.json"
    lock = json.loads(p.read_text())
    lock["version"] = new
    lock["packages"][""]["version"] = new
    p.write_text(json.dumps(lock, indent=2) + "\n")
    sub("bindings-node/index.js", re.escape(f"'{old}'"), f"'{new}'")
    sub("bindings-node/index.js", re.escape(f"expected {old} but"), f"expected {new} but")
    for page in DOC_PAGES:
        p = ROOT / page
        p.write_text(re.sub(ARTIFACT_VERSION, lambda m: m.group(0).replace(m.group(1), new), p.read_text()))
    text = (ROOT / "CHANGELOG.md").read_text()
    if f"## [{new}]" not in text:
        print(f"CHANGELOG.md: add a '## [{new}] - DATE' section")
    print(f"{old} -> {new}; now run 'make generated header' (the header macros) and update Cargo.lock")
    return 0


def main() -> int:
    args = sys.argv[1:]
    if not args:
        print(workspace_version())
        return 0
    if args == ["check"]:
        return check()
    if len(args) == 2 and args[0] == "set":
        return set_version(args[1])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())

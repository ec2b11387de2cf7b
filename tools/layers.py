#!/usr/bin/env python3
"""Checks that core's modules import only downward (README, "Layout of this repository").

Each module of core/src belongs to a layer; a module may import modules of its own layer or of
layers below it, and imports within a layer must not form a circle. Every file of a module
names what it imports by its defining path (`crate::error::ErrorKind`), never by lib.rs's
re-export (`crate::ErrorKind`), which hides the module it comes from. Prints the import graph
by layer and fails on an upward import, a circle, or a re-export path.
"""
import re
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "core/src"
LAYERS = [
    ("foundation", ["error", "millis", "metrics", "options", "spelling", "keys", "url", "owner", "runtime", "log_sink"]),
    ("connection", ["conn"]),
    ("scripts", ["scripts"]),
    ("machinery", ["finish", "latches", "local_calls", "replicas", "watchdog", "records", "pubsub", "shared"]),
    ("primitives", ["lock", "fenced_lock", "read_write_lock", "semaphore", "permit_semaphore", "multi_lock", "count_down_latch", "describe", "doctor"]),
    ("client", ["client", "fuzz"]),
    ("over clients", ["red_lock", "bindings"]),
    ("ffi", ["ffi"]),
]
LAYER_OF = {m: i for i, (_, mods) in enumerate(LAYERS) for m in mods}
# Re-exports of lib.rs, by the module that defines them.
REEXPORTS = {}
lib = (SRC / "lib.rs").read_text()
for module, names in re.findall(r"pub use (\w+)::\{?([\w, ]+)\}?;", lib):
    for n in names.split(","):
        REEXPORTS[n.strip()] = module


def layer_of(module: str) -> int:
    if module not in LAYER_OF:
        sys.exit(f"core/src/{module}: not in a layer; add it to LAYERS in tools/layers.py")
    return LAYER_OF[module]


def module_of(path: Path) -> str:
    rel = path.relative_to(SRC).parts
    return rel[0].removesuffix(".rs")


imports = {}
problems = []
for path in sorted(SRC.rglob("*.rs")):
    me = module_of(path)
    if me == "lib":
        continue
    # Doc links and comments name items without importing them.
    whole = re.sub(r"//.*", "", path.read_text())
    for m in re.finditer(r"crate::(\w+)", whole):
        if m.group(1) not in LAYER_OF and m.group(1) in REEXPORTS:
            line = whole[: m.start()].count("\n") + 1
            problems.append(
                f"{path.relative_to(SRC.parent.parent)}:{line}: crate::{m.group(1)} is lib.rs's re-export; "
                f"name it by its defining path, crate::{REEXPORTS[m.group(1)]}::{m.group(1)}"
            )
    text = re.split(r"\n#\[cfg\(test\)\]\nmod tests", whole)[0]
    for name in re.findall(r"crate::(\w+)", text):
        target = name if name in LAYER_OF else REEXPORTS.get(name)
        if target and target != me:
            imports.setdefault(me, set()).add(target)

for me, targets in sorted(imports.items()):
    for t in sorted(targets):
        if layer_of(t) > layer_of(me):
            problems.append(f"{me} ({LAYERS[LAYER_OF[me]][0]}) imports {t} ({LAYERS[LAYER_OF[t]][0]}): upward")


def circle(start: str) -> list:
    stack = [(start, [start])]
    while stack:
        node, path = stack.pop()
        for nxt in imports.get(node, ()):
            if nxt == start:
                return path + [start]
            if nxt not in path and LAYER_OF[nxt] == LAYER_OF[start]:
                stack.append((nxt, path + [nxt]))
    return []


for m in sorted(imports):
    c = circle(m)
    if c:
        problems.append("circle: " + " -> ".join(c))

for i, (layer, mods) in enumerate(LAYERS):
    print(f"{i} {layer:11s} " + "; ".join(f"{m} -> {', '.join(sorted(imports.get(m, []))) or '-'}" for m in mods))
if problems:
    print("\n".join(problems))
    sys.exit(1)
print("core imports only downward; no circle")

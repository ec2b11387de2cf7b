#!/usr/bin/env python3
"""Checks that the Node package's types carry JSDoc (`make docs-check`).

The package's types are what tsc emits from the wrapper's TypeScript (bindings-node/rlock.d.ts
and lib/*.d.ts). Every declaration there (`export ...`, `declare ...`, but not the lists of
names `export { ... }` re-exports) and every member of its classes and interfaces a user can
reach (not `private`, `protected` or `#private`) must follow a `/** ... */` comment, so editors
show a description for everything a user can reach. Prints what misses one and fails.

    tools/dts-docs.py [FILE.d.ts ...]
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NODE = ROOT / "bindings-node"


def undocumented(text: str) -> list:
    missing = []
    depth = 0
    # What each open brace belongs to: True for a class or interface body.
    bodies: list = []
    in_comment = False
    documented = False  # the previous code line closed a /** */ comment
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if in_comment:
            if "*/" in line:
                in_comment = False
                documented = jsdoc
            continue
        if line.startswith("/*"):
            jsdoc = line.startswith("/**")
            if "*/" not in line:
                in_comment = True
            else:
                documented = jsdoc
            continue
        if not line or line.startswith("//"):
            continue
        top = depth == 0
        member = depth >= 1 and bodies and bodies[-1] and depth == len(bodies)
        if top and re.match(r"(export|declare)\b", line) and not re.match(r"export (default\b|(type )?\{)", line):
            if not documented:
                missing.append((n, line))
        elif member and not line.startswith("}") and not re.match(r"(private|protected)\b|#private;", line):
            if not documented:
                missing.append((n, line))
        documented = False
        # Track braces (the file has no braces inside strings).
        for ch in line:
            if ch == "{":
                bodies.append(bool(re.search(r"\b(class|interface)\b", line)) and len(bodies) == 0)
                depth += 1
            elif ch == "}":
                depth -= 1
                bodies.pop()
    return missing


def main() -> int:
    paths = [Path(a) for a in sys.argv[1:]] or [NODE / "rlock.d.ts", *sorted((NODE / "lib").glob("*.d.ts"))]
    missing = []
    for path in paths:
        for n, line in undocumented(path.read_text()):
            missing.append(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{n}: no /** */ comment before: {line}")
    for m in missing:
        print(m)
    if missing:
        print(f"{len(missing)} declaration(s) without JSDoc")
        return 1
    print(f"{', '.join(p.name for p in paths)}: every declaration and member a user can reach has JSDoc")
    return 0


if __name__ == "__main__":
    sys.exit(main())

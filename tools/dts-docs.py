#!/usr/bin/env python3
"""Checks that the Node package's types carry JSDoc (`make docs-check`).

Every exported declaration of bindings-node/rlock.d.ts (`export ...`, `declare ...`, but not
`export default`) and every member of its classes and interfaces must follow a `/** ... */`
comment, so editors show a description for everything a user can reach. Prints what misses one
and fails.

    tools/dts-docs.py [FILE.d.ts]
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ROOT / "bindings-node" / "rlock.d.ts"


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
        if top and re.match(r"(export|declare)\b", line) and not line.startswith("export default"):
            if not documented:
                missing.append((n, line))
        elif member and not line.startswith("}") and not re.match(r"private\b", line):
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
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT
    missing = undocumented(path.read_text())
    for n, line in missing:
        print(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{n}: no /** */ comment before: {line}")
    if missing:
        print(f"{len(missing)} declaration(s) without JSDoc")
        return 1
    print(f"{path.name}: every exported declaration and member has JSDoc")
    return 0


if __name__ == "__main__":
    sys.exit(main())

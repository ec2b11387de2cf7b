#!/usr/bin/env python3
"""Hand-written surface code against core code, in non-blank, non-comment lines.

Surface: the C ABI (core/src/ffi), the Python and Node bindings (Rust, Python, JS and the
hand-written typings). Generated files and generated blocks are left out, as are tests.
Prints both counts and the ratio, and fails when the ratio is above MAX: the one place the
limit is stated (`make surface-ratio` runs this; docs refer here).
"""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: The most hand-written surface code per line of core: shared code belongs in core.
MAX = 0.6
GENERATED_FILES = {"core/src/ffi/options.rs", "bindings-python/python/rlock/_options.py"}


def code_lines(path: Path) -> int:
    text = path.read_text()
    # Unit tests are not surface or core code.
    text = re.split(r"\n#\[cfg\(test\)\]\nmod tests", text)[0]
    text = re.sub(r"// BEGIN GENERATED.*?// END GENERATED\n", "", text, flags=re.S)
    if path.suffix == ".py":
        # Docstrings count as comments.
        text = re.sub(r'"""(?:.|\n)*?"""', "", text)
    n = 0
    for line in text.splitlines():
        s = line.strip()
        if not s or s.startswith(("//", "#", "/*", "*", "*/")):
            continue
        n += 1
    return n


def files(*globs: str) -> list[Path]:
    out = []
    for g in globs:
        out += [p for p in ROOT.glob(g) if str(p.relative_to(ROOT)) not in GENERATED_FILES]
    # The Node wrapper's .js and .d.ts beside a .ts are tsc's output of it (make node-ts).
    out = [p for p in out if not p.name.endswith(".d.ts")]
    out = [p for p in out if not (p.suffix == ".js" and p.with_suffix(".ts").exists())]
    return sorted(set(out))


core = files("core/src/**/*.rs")
core = [p for p in core if "/ffi/" not in str(p)]
surface = files(
    "core/src/ffi/*.rs",
    "bindings-python/src/*.rs",
    "bindings-python/python/rlock/*.py",
    "bindings-python/python/rlock/*.pyi",
    "bindings-node/src/*.rs",
    "bindings-node/rlock.js",
    "bindings-node/rlock.ts",
    "bindings-node/lib/*.js",
    "bindings-node/lib/*.ts",
    "bindings-node/rlock.mjs",
)
c = sum(map(code_lines, core))
s = sum(map(code_lines, surface))
ratio = s / c
for p in surface:
    print(f"  {code_lines(p):5d}  {p.relative_to(ROOT)}")
print(f"core {c} lines, hand-written surfaces {s} lines: ratio {ratio:.2f}")
if ratio > MAX:
    print(f"the surfaces are over {MAX} of core (MAX in tools/surface-ratio.py): move shared code into core")
    sys.exit(1)

#!/usr/bin/env python3
"""Checks that every value core and the Python binding make once per process is made when the
module is imported, never on first use (`make check`).

A once-cell filled on first use is a fork hazard: a `fork()` by one thread while another fills
it copies the cell half filled, and the child's first use waits for good (pyo3's `intern!` and a
`GET_RUNNING_LOOP` once-cell did that to forked Python children, CHANGELOG "Fixed"). So:
- `intern!` is not used in bindings-python/src (its names are made in aio.rs's `Made`);
- a `static` once-cell (OnceLock, LazyLock, PyOnceLock, GILOnceCell, OnceCell, lazy_static) is
  allowed only where ALLOWED names it, each filled by `rlock::surface::make_once_values` or
  `aio::init`, which the module's init calls;
- `LazyLock` in core only in core/src/scripts/mod.rs (its scripts, forced by `make_all`).
Exit 1 with each offending line.
"""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DIRS = ["core/src", "bindings-python/src"]
# (file, static name): who fills it at import.
ALLOWED = {
    ("core/src/conn/local.rs", "EPOCH"): "conn::local::start_clock, from make_once_values",
    ("bindings-python/src/aio.rs", "MADE"): "aio::init, from the module's init",
    ("core/src/log_sink.rs", "INSTALLED"): "set_log_sink, from the module's init (logging::install)",
}
ONCE = r"(OnceLock|LazyLock|PyOnceLock|GILOnceCell|OnceCell|Lazy)\s*<"
STATIC_ONCE = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?static\s+(\w+)\s*:\s*[\w:]*?" + ONCE)


def code(line: str) -> str:
    """The line without a `//` comment (good enough for these patterns)."""
    return line.split("//", 1)[0]


def main() -> int:
    bad = []
    for d in DIRS:
        for f in sorted((ROOT / d).rglob("*.rs")):
            rel = f.relative_to(ROOT).as_posix()
            for n, line in enumerate(f.read_text().splitlines(), 1):
                c = code(line)
                if rel.startswith("bindings-python/") and "intern!(" in c:
                    bad.append(f"{rel}:{n}: intern! makes its string on first use; add it to aio.rs's Made")
                if "lazy_static!" in c:
                    bad.append(f"{rel}:{n}: lazy_static! is made on first use")
                m = STATIC_ONCE.match(c)
                if m and (rel, m.group(1)) not in ALLOWED:
                    bad.append(f"{rel}:{n}: static {m.group(1)} is made on first use; fill it in "
                               "make_once_values (core) or aio::init (Python) and name it in "
                               "tools/once-check.py's ALLOWED")
                if rel.startswith("core/") and rel != "core/src/scripts/mod.rs" and "LazyLock" in c:
                    bad.append(f"{rel}:{n}: LazyLock is made on first use (see scripts::make_all)")
    for b in bad:
        print(b)
    if bad:
        print(f"once-check: {len(bad)} value(s) made on first use (fork hazard, see tools/once-check.py)")
        return 1
    print(f"once-check: every once-made value is made at import ({len(ALLOWED)} statics and the scripts)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Runs the examples of the documentation, so they cannot rot (`make docs-check`).

Scans README.md, the package READMEs and every page under docs/ for fenced code blocks. The
info string of every block names its language first (what GitHub highlights) and then says
whether the block is an example to run:

    ```rust run             a complete program, extracted and run against a private Redis
    ```python run topology=cluster    the same against a private cluster (also: sentinel, tls,
                                      three: three independent servers in REDIS_URLS)
    ```sh no-run            shown only: shell transcripts, install commands, fragments

Every block must say one or the other (`check` fails otherwise, so a new example cannot skip
silently), and every `run` block must assert something (`assert` in Rust, Python, Node and C; a
`[ ... ]` / `test` / `grep -q` in shell), so it fails on wrong behaviour instead of only running.

`run` extracts the examples into build/doc-examples/<lang>/ and runs each in a fresh directory
with REDIS_URL set to a private server from rlock-testbed (never port 6379; the server's log is
printed when it does not come up), flushed before each example:

- rust: src/<name>.rs, a module of one generated crate that depends on core by path; its
  `#[tokio::main(flavor = "current_thread")] async fn main() -> rlock::Result<()>` becomes the
  module's `pub async fn main()`, run by name on a current-thread runtime (one `cargo build`, in
  the workspace's target directory, unoptimized: one compile for every example);
- python: the repository's .venv (`make build-python`);
- js: an ES module (`.mjs`; `.cjs` when it uses `require`), importing `rlock` from the built
  bindings-node (`make build-node`) through build/doc-examples/node/node_modules/rlock;
- c: compiled with gcc -Werror against include/ and target/release/librlock.so (`make lib-c`);
- sh: bash -euo pipefail with target/release (the `rlock` command, `make build-cli`) on PATH.

`check` also resolves every relative link (files and #anchors) of those pages.

    tools/doc-examples.py check
    tools/doc-examples.py run [--only SUBSTRING]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "build" / "doc-examples"
sys.path.insert(0, str(ROOT / "tests"))

LANGS = {"rust", "python", "js", "c", "sh"}
TOPOLOGIES = {"single", "cluster", "sentinel", "tls", "three"}
# What an example must contain to count as asserting something.
ASSERTS = {
    "rust": re.compile(r"\bassert(_eq|_ne)?!"),
    "python": re.compile(r"\bassert\b"),
    "js": re.compile(r"\bassert\b"),
    "c": re.compile(r"\bassert\("),
    "sh": re.compile(r"(^|\s)(\[ |test |grep -q)"),
}
TIMEOUT = 120  # seconds per example


def pages() -> List[Path]:
    """The documentation: the README, the package READMEs (the crate's too) and docs/**/*.md."""
    found = [ROOT / "README.md", ROOT / "core" / "README.md", ROOT / "bindings-python" / "README.md",
             ROOT / "bindings-node" / "README.md"]
    found += sorted((ROOT / "docs").rglob("*.md"))
    return [p for p in found if p.exists()]


@dataclass
class Block:
    page: Path
    line: int  # 1-based line of the opening fence
    lang: str
    tags: List[str]
    options: Dict[str, str]
    code: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def run(self) -> bool:
        return "run" in self.tags


FENCE = re.compile(r"^(\s*)(```+|~~~+)(.*)$")


def blocks(page: Path) -> List[Block]:
    """The fenced code blocks of a page (indented ones inside lists too)."""
    out: List[Block] = []
    lines = page.read_text().splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = m.group(1), m.group(2), m.group(3).strip()
        start = i
        body: List[str] = []
        i += 1
        while i < len(lines):
            close = FENCE.match(lines[i])
            if close and close.group(2).startswith(fence[0] * len(fence)) and not close.group(3).strip():
                break
            line = lines[i]
            body.append(line[len(indent):] if line.startswith(indent) else line.lstrip())
            i += 1
        else:
            raise SystemExit(f"{page.relative_to(ROOT)}:{start + 1}: unclosed code fence")
        i += 1
        words = info.split()
        lang = words[0] if words else ""
        tags = [w for w in words[1:] if "=" not in w]
        options = dict(w.split("=", 1) for w in words[1:] if "=" in w)
        out.append(Block(page, start + 1, lang, tags, options, "\n".join(body) + "\n"))
    return out


# ---------------------------------------------------------------------------------------------
# check: tags, assertions, links


def slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # link text only
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set:
    seen: Dict[str, int] = {}
    found = set()
    in_code = False
    for line in page.read_text().splitlines():
        if FENCE.match(line):
            in_code = not in_code
            continue
        if in_code:
            continue
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            s = slug(m.group(1))
            n = seen.get(s, 0)
            seen[s] = n + 1
            found.add(s if n == 0 else f"{s}-{n}")
    return found


LINK = re.compile(r"(?<!!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def check_links(page: Path) -> List[str]:
    errors = []
    text = page.read_text()
    # Links inside code (fenced blocks and inline `code`) are not links.
    prose = re.sub(r"^\s*(```|~~~).*?^\s*(```|~~~)\s*$", "", text, flags=re.S | re.M)
    prose = re.sub(r"`[^`\n]*`", "", prose)
    for target in LINK.findall(prose):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            errors.append(f"{page.relative_to(ROOT)}: broken link {target!r} (no {path})")
            continue
        if anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            errors.append(f"{page.relative_to(ROOT)}: broken link {target!r} (no heading #{anchor} in {dest.relative_to(ROOT)})")
    return errors


CRATE_README = ROOT / "core" / "README.md"
CRATE_DOC = ROOT / "core" / "src" / "lib.rs"


def check_crate_example() -> List[str]:
    """The Rust example of the crate's README (core/README.md, `no-run`: it needs a server on
    6379) is the crate documentation's first example (core/src/lib.rs), which `cargo test --doc`
    compiles: the two must stay the same."""
    if not CRATE_README.exists():
        return []
    readme = [b.code for b in blocks(CRATE_README) if b.lang == "rust"]
    doc = "\n".join(l[4:] if l.startswith("//! ") else l[3:] for l in CRATE_DOC.read_text().splitlines()
                    if l.startswith("//!"))
    m = re.search(r"^```no_run\n(.*?)^```$", doc, flags=re.S | re.M)
    if not readme or not m or readme[0] != m.group(1):
        return [f"{CRATE_README.relative_to(ROOT)}: its Rust example differs from the crate documentation's "
                f"first example ({CRATE_DOC.relative_to(ROOT)}, compiled by cargo test --doc); keep them the same"]
    return []


def check() -> int:
    errors: List[str] = []
    runs = 0
    for page in pages():
        for b in blocks(page):
            if ("run" in b.tags) == ("no-run" in b.tags):
                errors.append(f"{b.where}: code block ```{b.lang} must be tagged `run` (an example, run by "
                              "make docs-check) or `no-run` (shown only), e.g. ```python run")
                continue
            if not b.run:
                continue
            runs += 1
            if b.lang not in LANGS:
                errors.append(f"{b.where}: cannot run ```{b.lang} blocks (runnable: {', '.join(sorted(LANGS))})")
                continue
            topology = b.options.get("topology", "single")
            if topology not in TOPOLOGIES:
                errors.append(f"{b.where}: unknown topology={topology} ({', '.join(sorted(TOPOLOGIES))})")
            if b.lang == "rust" and not RUST_MAIN.search(b.code):
                errors.append(f"{b.where}: a Rust example is a program with "
                              '#[tokio::main(flavor = "current_thread")] async fn main() -> rlock::Result<()>')
            if not ASSERTS[b.lang].search(b.code):
                errors.append(f"{b.where}: a `run` example must assert what it shows (no assertion found)")
        errors += check_links(page)
    errors += check_crate_example()
    for e in errors:
        print(e)
    if errors:
        print(f"docs: {len(errors)} problem(s)")
        return 1
    print(f"docs: {len(pages())} pages, {runs} runnable examples, every block tagged, every link resolves")
    return 0


# ---------------------------------------------------------------------------------------------
# extract


@dataclass
class Example:
    block: Block
    name: str
    path: Path = field(default_factory=Path)
    topology: str = "single"


def example_name(b: Block, counters: Dict[str, int]) -> str:
    rel = b.page.relative_to(ROOT).with_suffix("")
    stem = re.sub(r"[^a-z0-9]+", "_", str(rel).lower()).strip("_")
    key = f"{stem}_{b.lang}"
    counters[key] = counters.get(key, 0) + 1
    return f"{key}_{counters[key]}"


RUST_MANIFEST = """\
# Generated by tools/doc-examples.py: the Rust examples of the documentation, each a module of
# src/ run by name (one binary: one compile for all of them). Not a member of the workspace;
# built in its target directory, unoptimized (the examples wait on Redis, not on CPU).
[package]
name = "rlock-doc-examples"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
rlock = {{ path = "{core}" }}
tokio = {{ version = "1", features = ["rt", "time", "sync", "macros"] }}

[profile.dev]
debug = "line-tables-only"

[workspace]
"""

# A Rust example is a program whose main is this; it becomes `pub async fn main()` of a module.
RUST_MAIN = re.compile(r'#\[tokio::main\(flavor = "current_thread"\)\]\s*async fn main\(\) -> rlock::Result<\(\)>')


def rust_main(examples: List["Example"]) -> str:
    """src/main.rs: runs the example named by its first argument on a current-thread runtime."""
    mods = "".join(f"mod {ex.name};\n" for ex in examples)
    arms = "".join(f'        "{ex.name}" => rt.block_on({ex.name}::main()),\n' for ex in examples)
    return f"""// Generated by tools/doc-examples.py.
#![deny(warnings)]
{mods}
fn main() {{
    let name = std::env::args().nth(1).unwrap_or_default();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    let result = match name.as_str() {{
{arms}        other => panic!("no example {{other:?}}"),
    }};
    if let Err(e) = result {{
        eprintln!("Error: {{e:?}}");
        std::process::exit(1);
    }}
}}
"""


def write(path: Path, text: str) -> None:
    """Writes only what changed, so cargo and gcc rebuild only the examples that did."""
    if not path.exists() or path.read_text() != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def extract(only: Optional[str]) -> List[Example]:
    examples: List[Example] = []
    counters: Dict[str, int] = {}
    for page in pages():
        for b in blocks(page):
            if not b.run:
                continue
            examples.append(Example(b, example_name(b, counters), topology=b.options.get("topology", "single")))
    for ex in examples:
        b = ex.block
        header = f"{b.where} (extracted by tools/doc-examples.py)"
        if b.lang == "rust":
            ex.path = OUT / "rust" / "src" / f"{ex.name}.rs"
            text = f"// {header}\n" + RUST_MAIN.sub("pub async fn main() -> rlock::Result<()>", b.code, count=1)
        elif b.lang == "python":
            ex.path = OUT / "python" / f"{ex.name}.py"
            text = f"# {header}\n{b.code}"
        elif b.lang == "js":
            # An ES module unless it is CommonJS: `require(...)` (not in a comment) and no import.
            code = re.sub(r"//.*", "", b.code)
            commonjs = re.search(r"\brequire\(", code) is not None and not re.search(r"^\s*import\b", code, re.M)
            ex.path = OUT / "node" / f"{ex.name}.{'cjs' if commonjs else 'mjs'}"
            text = f"// {header}\n{b.code}"
        elif b.lang == "c":
            ex.path = OUT / "c" / f"{ex.name}.c"
            text = f"/* {header} */\n{b.code}"
        else:
            ex.path = OUT / "sh" / f"{ex.name}.sh"
            text = f"# {header}\n{b.code}"
        write(ex.path, text)
    # Examples that are gone (or not selected) are removed, with their C binaries.
    wanted = {ex.path for ex in examples}
    for old in OUT.glob("*/**/*") if OUT.exists() else []:
        if old.suffix in (".rs", ".py", ".mjs", ".cjs", ".c", ".sh") and "node_modules" not in old.parts \
                and old not in wanted and old.name != "main.rs":
            old.unlink()
            old.with_suffix("").unlink(missing_ok=True)
    if any(ex.block.lang == "rust" for ex in examples):
        write(OUT / "rust" / "Cargo.toml", RUST_MANIFEST.format(core=ROOT / "core"))
        write(OUT / "rust" / "src" / "main.rs", rust_main([ex for ex in examples if ex.block.lang == "rust"]))
        # The workspace's versions of every dependency (cargo adds this crate to its copy).
        lock = OUT / "rust" / "Cargo.lock"
        if not lock.exists() or lock.stat().st_mtime < (ROOT / "Cargo.lock").stat().st_mtime:
            shutil.copy(ROOT / "Cargo.lock", lock)
    if any(ex.block.lang == "js" for ex in examples):
        link = OUT / "node" / "node_modules" / "rlock"
        if not link.is_symlink():
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(ROOT / "bindings-node")
    # Every example is written (so no build goes stale); --only selects what is built and run.
    return [ex for ex in examples if not only or only in ex.name or only in ex.block.where]


# ---------------------------------------------------------------------------------------------
# run


def target_dir() -> Path:
    return Path(os.environ.get("CARGO_TARGET_DIR") or ROOT / "target")


def build(examples: List[Example]) -> Dict[str, str]:
    """Compiles the Rust and C examples; returns the examples that failed to build, with why."""
    failed: Dict[str, str] = {}
    if any(ex.block.lang == "rust" for ex in examples):
        print("== building the Rust examples", flush=True)
        cargo = os.environ.get("CARGO", "cargo")
        env = dict(os.environ, CARGO_TARGET_DIR=str(target_dir()))
        r = subprocess.run([cargo, "build", "--quiet"], cwd=OUT / "rust", env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            for ex in examples:
                if ex.block.lang == "rust":
                    failed[ex.name] = "cargo build failed:\n" + r.stdout
    lib = target_dir() / "release"
    for ex in examples:
        if ex.block.lang != "c":
            continue
        if not (lib / "librlock.so").exists():
            failed[ex.name] = f"missing {lib}/librlock.so: run 'make lib-c'"
            continue
        binary = ex.path.with_suffix("")
        inputs = [ex.path, lib / "librlock.so", ROOT / "include" / "rlock.h"]
        if binary.exists() and binary.stat().st_mtime >= max(p.stat().st_mtime for p in inputs):
            continue  # built from these already
        cmd = ["gcc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", f"-I{ROOT / 'include'}", str(ex.path),
               "-o", str(ex.path.with_suffix("")), f"-L{lib}", "-lrlock", f"-Wl,-rpath,{lib}", "-lpthread"]
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            failed[ex.name] = "gcc failed:\n" + r.stdout
    return failed


def command(ex: Example) -> List[str]:
    lang = ex.block.lang
    if lang == "rust":
        return [str(target_dir() / "debug" / "rlock-doc-examples"), ex.name]
    if lang == "python":
        python = ROOT / ".venv" / "bin" / "python"
        if not python.exists():
            raise SystemExit(f"missing {python}: run 'make build-python'")
        return [str(python), str(ex.path)]
    if lang == "js":
        return ["node", str(ex.path)]
    if lang == "c":
        return [str(ex.path.with_suffix(""))]
    return ["bash", "-euo", "pipefail", str(ex.path)]


class Three:
    """Three independent private servers (topology ``three``, for RedLock), shown to the
    examples as ``REDIS_URLS`` (comma-separated) and the first one's ``REDIS_URL``."""

    def __init__(self) -> None:
        from testbed import Testbed

        self.beds = []
        try:
            for _ in range(3):
                self.beds.append(Testbed("single"))
        except Exception:
            self.close()
            raise
        self.info = {"url": self.beds[0].url, "nodes": [n for b in self.beds for n in b.info["nodes"]]}

    def log(self, node: str, lines: int) -> str:
        return "".join(b.log(node, lines) for b in self.beds if any(n["name"] == node for n in b.info["nodes"]))

    def close(self) -> None:
        for b in self.beds:
            b.close()


class Servers:
    """The private topologies the examples run against, started on first use."""

    def __init__(self) -> None:
        self.started: Dict[str, object] = {}

    def get(self, topology: str):  # -> Testbed
        from testbed import Testbed

        if topology not in self.started:
            print(f"== starting a private {topology} (rlock-testbed)", flush=True)
            self.started[topology] = Three() if topology == "three" else Testbed(topology)
        return self.started[topology]

    def env(self, topology: str) -> Dict[str, str]:
        tb = self.get(topology)
        info = tb.info  # type: ignore[attr-defined]
        env = {"REDIS_URL": info["tls_url"] if topology == "tls" else info["url"]}
        if topology == "tls":
            env["REDIS_CA_FILE"] = info["ca"]
        if topology == "three":
            env["REDIS_URLS"] = ",".join(b.url for b in tb.beds)  # type: ignore[attr-defined]
        return env

    def flush(self, topology: str) -> None:
        """Empties every master, so each example starts from an empty server."""
        tb = self.get(topology)
        for node in tb.info["nodes"]:  # type: ignore[attr-defined]
            if node.get("role", "master") != "master":
                continue
            r = subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", str(node["port"]), "flushall"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=30)
            if r.returncode != 0 or "OK" not in r.stdout:
                raise RuntimeError(f"FLUSHALL on {node['port']} failed: {r.stdout.strip()}")

    def log(self, topology: str) -> str:
        tb = self.get(topology)
        try:
            return "".join(f"--- {n['name']}\n{tb.log(n['name'], 30)}\n" for n in tb.info["nodes"])  # type: ignore[attr-defined]
        except Exception as e:  # noqa: BLE001 - the log is extra information
            return f"(no server log: {e})"

    def close(self) -> None:
        for tb in self.started.values():
            tb.close()  # type: ignore[attr-defined]


def run(only: Optional[str]) -> int:
    examples = extract(only)
    if not examples:
        print("docs: no example matched")
        return 1
    t0 = time.monotonic()
    failed = build(examples)
    servers = Servers()
    passed = 0
    try:
        for ex in examples:
            b = ex.block
            if ex.name in failed:
                print(f"FAIL {b.where} ({b.lang}): {failed[ex.name]}")
                continue
            servers.flush(ex.topology)
            env = dict(os.environ)
            env.pop("REDIS_URL", None)
            env.update(servers.env(ex.topology))
            env["PATH"] = f"{target_dir() / 'release'}:{env['PATH']}"
            env["RLOCK_TESTBED"] = env.get("RLOCK_TESTBED", str(target_dir() / "release" / "rlock-testbed"))
            with tempfile.TemporaryDirectory(prefix="doc-example-") as cwd:
                start = time.monotonic()
                try:
                    r = subprocess.run(command(ex), cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                       stderr=subprocess.STDOUT, text=True, timeout=TIMEOUT)
                    code, output = r.returncode, r.stdout
                except subprocess.TimeoutExpired as e:
                    out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
                    code, output = None, out + f"\n(timed out after {TIMEOUT} s)"
            took = time.monotonic() - start
            if code == 0:
                passed += 1
                print(f"ok   {b.where} ({b.lang}{'' if ex.topology == 'single' else ', ' + ex.topology}) {took:.1f} s",
                      flush=True)
            else:
                failed[ex.name] = output
                print(f"FAIL {b.where} ({b.lang}, {ex.path.relative_to(ROOT)}): exit {code}\n{output.rstrip()}", flush=True)
                if code is None:
                    print(servers.log(ex.topology))
    finally:
        servers.close()
    print(f"docs: {passed} of {len(examples)} examples passed in {time.monotonic() - t0:.0f} s")
    return 0 if passed == len(examples) else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("check", help="every block tagged run/no-run, run blocks assert, links resolve")
    p = sub.add_parser("run", help="extract the run blocks and run them against private servers")
    p.add_argument("--only", help="only examples whose name or page:line contains this")
    sub.add_parser("list", help="the runnable examples and their names")
    args = parser.parse_args()
    if args.cmd == "check":
        return check()
    if args.cmd == "list":
        counters: Dict[str, int] = {}
        for page in pages():
            for b in blocks(page):
                if b.run:
                    print(f"{example_name(b, counters):50} {b.where}")
        return 0
    return run(args.only)


if __name__ == "__main__":
    sys.exit(main())

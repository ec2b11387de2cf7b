#!/usr/bin/env python3
"""Checks that the cargo builds CI makes share their dependencies (`make check`).

Cargo resolves features per invocation: `-p rlock --features capi` alone turns on fewer tokio
features than the CLI's build, and pyo3's macros turn on syn's `visit-mut`, so tokio, redis and
everything between them were compiled three times in release and four in debug (2026-12-03,
issue 44: about 2 min of both cores per copy on a cold machine). The `workspace-hack` crate
turns on the union in every build (cargo-hakari's pattern, without its tool: the union wanted
is that of CI's release builds only, as dev-dependencies would put tokio's `test-util` clock
into what users run). This check proves that each build below resolves every dependency it
shares with another build of the same profile to the same features, so each is compiled once.
`cargo tree` answers without building.

A finding names the package and the features each build gives it. The fix is
`python3 tools/unify-check.py --write`, which writes workspace-hack/Cargo.toml again from
nothing; a build CI adds belongs in BUILDS.
Exit 1 on a finding.
"""
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CARGO = os.environ.get("CARGO", "cargo")
NO_DEV = ["-e", "normal"]
WITH_DEV = ["-e", "normal,dev"]
# Each build of `make ci-builds` and `make test` (Makefile, mk/*.mk), grouped by the profile
# its dependencies are compiled in: (name, cargo tree arguments). Not the testbed's: it does
# not use core, and the few small crates it shares (memchr, rustix) take seconds. Not the
# documentation's Rust examples (tools/doc-examples.py): a workspace of their own with a
# profile of their own, so nothing of theirs is shared whatever their features. The Node
# addon's row holds its features to the others'; `napi build` always names the target triple,
# which would compile its crates once more in target/<triple>/release, so it runs cargo
# through tools/napi-cargo.sh, which drops the host's triple.
BUILDS = {
    "release": [
        ("lib-c (mk/c.mk)", ["-p", "rlock", "--features", "capi", *NO_DEV]),
        ("the Python wheel (maturin)", ["-p", "rlock-python", "--features", "pyo3/extension-module", *NO_DEV]),
        ("the Node addon (napi build)", ["-p", "rlock-node", *NO_DEV]),
        ("the CLI, chaos worker and bench (mk/cli.mk)",
         ["-p", "rlock-cli", "-p", "rlock-chaos-worker", "-p", "rlock-bench", *NO_DEV]),
        ("the interop program (mk/interop.mk)", ["-p", "rlock-interop", *NO_DEV]),
        ("make generated", ["-p", "rlock-generate", *NO_DEV]),
    ],
    "debug": [
        ("cargo test --workspace", ["--workspace", *WITH_DEV]),
        ("cargo test -p rlock --features capi", ["-p", "rlock", "--features", "capi", *WITH_DEV]),
        ("$(CORE_PKG): make test-core, --test managed, the pause_holder example",
         ["-p", "rlock", "--features", "process-runtime", *WITH_DEV]),
    ],
}


def tree(args: list[str]) -> dict[str, set[str]]:
    """`cargo tree`'s packages (`name version`) and the feature sets each is built with."""
    out = subprocess.run(
        [CARGO, "tree", *LOCKED, "--prefix", "none", "-f", "{p}|{f}", *args],
        cwd=ROOT, check=True, capture_output=True, text=True,
    ).stdout
    found: dict[str, set[str]] = defaultdict(set)
    for line in out.splitlines():
        if "|" not in line:
            continue
        pkg, feats = line.removesuffix(" (*)").split("|", 1)
        # A workspace member's path is noise; proc-macros keep their mark.
        name = pkg.split(" (/")[0]
        found[name].add(",".join(sorted(f for f in feats.split(",") if f)))
    return found


def build_features(args: list[str]) -> dict[tuple[str, str], str]:
    """One build's packages, each as (`name version`, "target" or "host"), and its features.
    Host packages (proc-macros, build scripts and what they use) are resolved apart from the
    target's, so a package may be in both."""
    everything = tree([*args, "-e", "build"])
    target = tree([*args, "-e", "no-proc-macro"])
    found = {}
    for pkg, sets in everything.items():
        sets = set(sets)
        if pkg in target:
            (t,) = target[pkg]  # one target build per package and build
            found[(pkg, "target")] = t
            if len(sets) > 1:
                sets.discard(t)
            else:
                continue
        for h in sets:
            found[(pkg, "host")] = h
    return found


def members() -> set[str]:
    """The workspace's own package names."""
    out = subprocess.run(
        [CARGO, "tree", *LOCKED, "--workspace", "--depth", "0", "--prefix", "none", "-e", "normal"],
        cwd=ROOT, check=True, capture_output=True, text=True,
    ).stdout
    return {line.split(" v")[0] for line in out.splitlines() if line.strip()}


def differing(profile: str, own: set[str]) -> dict[tuple[str, str], dict[str, str]]:
    """The dependencies the builds of one profile compile with different features: for each
    (package, kind), the features each build gives it."""
    seen: dict[tuple[str, str], dict[str, str]] = defaultdict(dict)
    for name, args in BUILDS[profile]:
        # What a build selects is its own to configure (lib-c is core with `capi`); a member
        # it depends on is compared like any dependency (core's `process-runtime`).
        roots = own if "--workspace" in args else {a for i, a in enumerate(args) if i and args[i - 1] == "-p"}
        for key, feats in build_features(args).items():
            if key[0].split(" v")[0] not in roots | {"workspace-hack"}:
                seen[key][name] = feats
    return {k: v for k, v in sorted(seen.items()) if len(set(v.values())) > 1}


# Checking leaves Cargo.lock as it is; --write may add to it.
LOCKED = [] if "--write" in sys.argv[1:] else ["--locked"]
HACK = ROOT / "workspace-hack" / "Cargo.toml"
HEAD = """\
# Generated by tools/unify-check.py --write (`make check` runs it to check): the union of the
# features the release builds of CI give each dependency they share, so each is compiled once
# (see that file). Only core depends on this crate; a published rlock gets the empty
# `workspace-hack` 0.1.0 of crates.io instead (cargo-hakari's stub), so users build nothing of it.
[package]
name = "workspace-hack"
version = "0.1.0"
edition = "2021"
license = "MIT OR Apache-2.0"
description = "Feature unification for the rlock workspace's own builds (not published)"
publish = false

# No code, so no lints: an empty table says it inherits none of [workspace.lints] (a nightly
# cargo warns of a member that says neither).
[lints]
"""


def render(found: dict[tuple[str, str], set[str]]) -> str:
    """workspace-hack/Cargo.toml for the given (package, kind) -> features."""
    out = [HEAD]
    names = [(pkg.split(" v")[0], k) for pkg, k in found]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        # One TOML key per crate: two versions would need renamed entries (cargo-hakari's).
        raise SystemExit(f"unify-check: two versions of {twice} differ; unify them by hand")
    for kind, table in (("target", "dependencies"), ("host", "build-dependencies")):
        out.append(f"\n[{table}]\n")
        for (pkg, k), feats in sorted(found.items()):
            if k != kind:
                continue
            name, version = pkg.split(" (")[0].split(" v")
            default = "default" in feats
            listed = ", ".join(f'"{f}"' for f in sorted(feats - {"default"}))
            out.append(f'{name} = {{ version = "{version}", default-features = {str(default).lower()}, '
                       f"features = [{listed}] }}\n")
    return "".join(out)


def main() -> int:
    write = "--write" in sys.argv[1:]
    own = members() | {"workspace-hack"}
    if write:
        # Grown until the release builds agree: a feature turned on may bring a dependency
        # whose own features then differ.
        union: dict[tuple[str, str], set[str]] = defaultdict(set)
        current = HACK.read_text() if HACK.exists() else None
        try:
            HACK.write_text(render(union))  # from nothing, so a rerun writes the same
            for _ in range(5):
                diff = differing("release", own)
                if not diff:
                    break
                for key, by_build in diff.items():
                    for feats in by_build.values():
                        union[key] |= {f for f in feats.split(",") if f}
                HACK.write_text(render(union))
        except BaseException:
            if current is not None:
                HACK.write_text(current)  # a failed cargo tree leaves the file as it was
            raise
        if current != HACK.read_text():
            print(f"unify-check: wrote {HACK.relative_to(ROOT)}")
    bad = []
    for profile in BUILDS:
        for (pkg, kind), by_build in differing(profile, own).items():
            lines = [f"    {build}: {feats or '(none)'}" for build, feats in by_build.items()]
            bad.append(f"{profile}: {pkg} ({kind}) is compiled more than once:\n" + "\n".join(lines))
    # `$(CORE_PKG)` exists so that core's own test runs build core as `cargo test --workspace`
    # does (a member selected is its own build's to configure, so the loop above skips it).
    cores = {
        name: {f for (pkg, kind), f in build_features(args).items() if pkg.startswith("rlock v") and kind == "target"}
        for name, args in BUILDS["debug"] if "--features" not in args or "process-runtime" in args
    }
    if len({frozenset(f) for f in cores.values()}) > 1:
        bad.append(f"debug: core is compiled more than once: {cores}")
    for b in bad:
        print(b)
    if bad:
        print(f"unify-check: {len(bad)} dependencies built with different features "
              "(release: python3 tools/unify-check.py --write regenerates workspace-hack; "
              "debug: a build's dev-dependencies or its way of naming core, see BUILDS)")
        return 1
    total = sum(len(b) for b in BUILDS.values())
    print(f"unify-check: the {total} builds share every dependency within their profile")
    return 0


if __name__ == "__main__":
    sys.exit(main())

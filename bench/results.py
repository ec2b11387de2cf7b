"""Reads bench/out/results.jsonl (one JSON object per figure) for report.py and plot.py: one
place for what the rows are. A peer's rows have a surface named "peer <library>" and say which
rlock surface they compare with in "vs"; Redisson's rows (the Java client, measured exactly as the
Rust core) have surfaces named "redisson (...)" after the Rust rows they mirror (the reentrant
lock's with Redisson's configuration and API: see REDISSON_REENTRANT); every other surface is
rlock's."""
import json

# rlock's surfaces and Redisson's beside the Rust core's, in table order.
SURFACES = ["rust", "rust (2 connections)",
            # Redisson's reentrant lock (issue 15): its defaults and tuned, threads and async.
            "redisson (defaults)", "redisson (async, defaults)", "redisson (tuned)", "redisson (async, tuned)",
            "c", "node", "python-threads", "python-asyncio",
            # What a handle costs (issue 46): the same pairs with a handle made per pair.
            "c (handle per pair)", "python-threads (handle per pair)",
            # The lock family (issue 13): 64 readers sharing one read-write lock; write- and
            # fair-lock hand-offs with 16 waiters. Redisson's beside each (issue 15).
            "rust (read lock, one name)", "redisson (read lock, one name)",
            "rust (write lock)", "redisson (write lock)",
            "rust (fair lock)", "redisson (fair lock)",
            # Semaphores (issue 14): 64 owners on one semaphore of 64 permits; a permit handed
            # off among 16 waiters of a 1-permit semaphore. Plain and permit-expirable.
            "rust (semaphore)", "redisson (semaphore)",
            "rust (permit semaphore)", "redisson (permit semaphore)"]

# RedLock over three independent servers (issue 32; bench/run.sh starts them): rlock's (Rust
# core, Node surface) and the peer redlock over the same three, beside a plain lock on one of
# those servers (Rust) and the single-server rows of the main run (Node surface, redlock on one
# server). Their own table: a ratio to the one-server ceiling would say nothing.
REDLOCK_SURFACES = ["rust (RedLock, 3 servers)", "rust (lock, 1 of the 3 servers)",
                    "node (RedLock, 3 servers)", "peer redlock (3 servers)", "node", "peer redlock"]

# Redisson's reentrant lock rows (rlock.interop.Bench): its configuration ("defaults": nothing
# changed; "tuned": the connection pool sized for 256 owners) and API ("threads": a platform
# thread per owner, lock()/unlock(); "async": lockAsync(id)/unlockAsync(id) chains with explicit
# thread ids). Its other rows (lock family, semaphores) run tuned, with threads.
REDISSON_REENTRANT = {"redisson (defaults)": "defaults, threads",
                      "redisson (async, defaults)": "defaults, async",
                      "redisson (tuned)": "tuned, threads",
                      "redisson (async, tuned)": "tuned, async"}

# The rlock rows Redisson mirrors: (what, rlock Rust core surface, rlock C surface or None (the
# C bench has only the reentrant lock), Redisson surfaces). Pairs: Redisson's reentrant rows have
# all four (configuration, API); hand-offs (threads): defaults and tuned.
REDISSON_PAIRS = [("reentrant lock", "rust", "c", list(REDISSON_REENTRANT)),
                  ("read lock", "rust (read lock, one name)", None, ["redisson (read lock, one name)"]),
                  ("semaphore", "rust (semaphore)", None, ["redisson (semaphore)"]),
                  ("permit-expirable semaphore", "rust (permit semaphore)", None, ["redisson (permit semaphore)"])]
REDISSON_HANDOFFS = [("reentrant lock", "rust", "c", ["redisson (defaults)", "redisson (tuned)"]),
                     ("write lock", "rust (write lock)", None, ["redisson (write lock)"]),
                     ("fair lock", "rust (fair lock)", None, ["redisson (fair lock)"]),
                     ("semaphore permit", "rust (semaphore)", None, ["redisson (semaphore)"]),
                     ("permit-expirable semaphore permit", "rust (permit semaphore)", None,
                      ["redisson (permit semaphore)"])]
# Redisson's one-pair latency (one thread: the pool does not matter).
REDISSON_LATENCY = "redisson (tuned)"


def redisson_setup(surface):
    """A Redisson row's configuration and API: "defaults, async"; the lock family and the
    semaphores run tuned with threads."""
    return REDISSON_REENTRANT.get(surface, "tuned, threads")


def is_peer(surface):
    return surface.startswith("peer ")


def is_redisson(surface):
    return surface.startswith("redisson")


def label(surface):
    """How a table names a surface: "rlock rust", "Redisson (write lock)", a peer's library."""
    if is_peer(surface):
        return peer_name(surface)
    if is_redisson(surface):
        return "Redisson" + surface[len("redisson"):]
    return "rlock " + surface


def peer_name(surface):
    return surface[len("peer "):]


class Results:
    def __init__(self, path):
        with open(path) as f:
            self.rows = [json.loads(line) for line in f if line.strip().startswith("{")]
        self.pairs = self.by("pairs")

    def by(self, bench):
        return [r for r in self.rows if r["bench"] == bench]

    def first(self, bench):
        return next(iter(self.by(bench)), None)

    def ceiling(self, mode):
        """redis-benchmark's pair ceiling by requests in flight: "pipelined" or "connections"."""
        return {r["clients"]: r for r in self.by("ceiling") if r.get("mode") == mode}

    def pairs_row(self, surface, owners):
        return next((r for r in self.pairs if r["surface"] == surface and r["owners"] == owners), {})

    def rate(self, surface, owners):
        return self.pairs_row(surface, owners).get("pairs_per_s")

    def server_busy(self, surface, owners):
        """Redis' process CPU over the wall time of that pairs run (1.0 = one core), if measured."""
        return self.pairs_row(surface, owners).get("server_busy")

    def handoff(self, surface):
        return next((r for r in self.by("handoff") if r["surface"] == surface), None)

    def peers(self):
        return sorted({r["surface"] for r in self.rows if r.get("surface") and is_peer(r["surface"])})

    def compared_with(self, peer):
        return next(r["vs"] for r in self.rows if r.get("surface") == peer and r.get("vs"))

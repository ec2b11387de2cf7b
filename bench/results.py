"""Reads bench/out/results.jsonl (one JSON object per figure) for report.py and plot.py: one
place for what the rows are. A peer's rows have a surface named "peer <library>" and say which
rlock surface they compare with in "vs"; every other surface is rlock's."""
import json

# rlock's surfaces, in table order.
SURFACES = ["rust", "rust (2 connections)", "c", "node", "python-threads", "python-asyncio",
            # The lock family (issue 13): 64 readers sharing one read-write lock; write- and
            # fair-lock hand-offs with 16 waiters.
            "rust (read lock, one name)", "rust (write lock)", "rust (fair lock)"]


def is_peer(surface):
    return surface.startswith("peer ")


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

    def rate(self, surface, owners):
        return next((r["pairs_per_s"] for r in self.pairs if r["surface"] == surface and r["owners"] == owners), None)

    def handoff(self, surface):
        return next((r for r in self.by("handoff") if r["surface"] == surface), None)

    def peers(self):
        return sorted({r["surface"] for r in self.rows if r.get("surface") and is_peer(r["surface"])})

    def compared_with(self, peer):
        return next(r["vs"] for r in self.rows if r.get("surface") == peer and r.get("vs"))

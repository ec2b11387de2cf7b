"""The history `make netfaults` records and checks (tests/netfaults/run.py): the fenced store,
each owner's holds as it saw them, and the checker's verdict per run."""

from __future__ import annotations

import socketserver
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple


@dataclass
class Write:
    t: float  # monotonic, to set against the holds
    wall: float  # time.time()
    key: str
    token: int
    writer: str
    accepted: bool


class _Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True


class FencedStore:
    """The storage side of fencing: a small service on 127.0.0.1:`port` that the workers write
    to from inside their critical sections (one line `write KEY TOKEN WRITER`, answered
    `accepted` or `refused`). It refuses a token lower than the highest it saw for a key and
    records every write with its token, writer and times."""

    def __init__(self, port: int) -> None:
        self._lock = threading.Lock()
        self.highest: Dict[str, int] = {}
        self.writes: List[Write] = []
        store = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                for line in self.rfile:
                    words = line.decode(errors="replace").split()
                    if len(words) == 4 and words[0] == "write" and words[2].isdigit():
                        ok = store.write(words[1], int(words[2]), words[3])
                        self.wfile.write(b"accepted\n" if ok else b"refused\n")
                    else:
                        self.wfile.write(b"error\n")

        self._server = _Server(("127.0.0.1", port), Handler)
        self.port = port
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def write(self, key: str, token: int, writer: str) -> bool:
        with self._lock:
            ok = token >= self.highest.get(key, 0)
            if ok:
                self.highest[key] = token
            self.writes.append(Write(time.monotonic(), time.time(), key, token, writer, ok))
            return ok

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@dataclass
class Hold:
    """A hold as its holder saw it: from its acquire's answer to its release or lost signal."""

    owner: str
    key: str
    token: int
    start: float
    end: float = float("inf")
    lost_reason: Optional[str] = None


@dataclass
class History:
    """What one scenario run recorded."""

    run: str
    holds: List[Hold] = field(default_factory=list)
    faults: List[Tuple[float, float, str]] = field(default_factory=list)  # start, end, what
    detections: List[float] = field(default_factory=list)  # fault start -> lost signal, s

    def check(self, store: FencedStore) -> Dict[str, Any]:
        """Overlaps (and whether fencing caught each), late writes accepted, refused writes,
        token order."""
        holds = sorted(self.holds, key=lambda h: h.start)
        keys = {h.key for h in holds}
        writes = [w for w in store.writes if w.key in keys]
        overlaps, unfenced = 0, 0
        for i, a in enumerate(holds):
            for b in holds[i + 1:]:
                if a.key == b.key and b.start < a.end:
                    overlaps += 1
                    late = [w for w in writes if w.writer == a.owner and w.key == a.key and w.t > b.start]
                    if any(w.accepted for w in late):
                        unfenced += 1
        late_accepted = sum(
            1 for h in holds for w in writes
            if w.writer == h.owner and w.key == h.key and w.accepted and h.lost_reason and w.t > h.end
        )
        refused = sum(1 for w in writes if not w.accepted)
        tokens = [h.token for h in holds]
        ordered = all(x < y for x, y in zip(tokens, tokens[1:]))
        return {"overlaps": overlaps, "unfenced_overlaps": unfenced, "late_writes_accepted": late_accepted,
                "writes_refused": refused, "tokens": tokens, "tokens_increase": ordered}

    def record(self, store: "FencedStore", detail: str, tokens_sep: str = ", ") -> Dict[str, Any]:
        """Checks this run against `store`, keeps it for the timeline and adds its report row
        (`detail` in the last column); returns the verdict."""
        verdict = self.check(store)
        HISTORIES.append(self)
        CHECKED.append(f"{self.run} | {verdict['overlaps']} | {verdict['unfenced_overlaps']} | "
                       f"{verdict['late_writes_accepted']} | {verdict['writes_refused']} | "
                       f"{tokens_sep.join(map(str, verdict['tokens']))} | {detail}")
        return verdict


HISTORIES: List[History] = []
# One report row per checked run.
CHECKED: List[str] = []


def write(worker: Any, spec: str, store: FencedStore) -> bool:
    """`worker` (a harness Worker) writes to `store` from its critical section, with the token
    its own last acquire of the fenced lock `spec` returned; whether the store accepted it."""
    got = worker.call(f"write {spec} {store.port}", "written")
    return got.get("accepted") is True

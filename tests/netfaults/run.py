"""`make netfaults`: network faults between rlock's workers and Redis, injected with toxiproxy,
with a fenced store and a history checker (issue 31).

Each scenario runs for every surface (Rust, Python, Node, C). The worker under test reaches
Redis through its own toxiproxy proxy; the other owner reaches Redis directly. The workers are
the fault suite's (tests/chaos, same line protocol). The fenced store lives in this driver: it
records every write with its token, writer and time, and refuses a token lower than the highest
it has seen for the key. The driver makes each write on a worker's behalf, with the token that
worker's own acquire returned, at the moment the scenario says that worker writes.

Scenarios:
- partition: the holder of a fenced lock (watchdog lease, then an explicit lease) is cut off
  both ways; the other owner waits on Redis directly. The holder must hear its lost-hold
  signal (`lease_doubt`, `lease_ending`) before the other owner acquires (the margin, > 0 in
  every run), the other owner's token must be larger, and the store must refuse every write
  the old holder makes once the new holder wrote.
- lost-reply: the server's replies to the worker are held back while its acquire runs (a
  fenced lock, a permit-expirable semaphore, a semaphore): the acquire fails TIMEOUT, and
  Redis holds nothing afterwards.
- latency: replies delayed below the command timeout (the calls succeed), then above it (the
  acquire fails TIMEOUT and what it took is given back: another owner acquires at once); the
  recovery time after the heal.
- slow-network: 8 workers (2 per surface) each through a proxy limited to 64 KB/s with packets
  sliced small run critical sections on 4 locks: no violation, exact counters, no error.

The history checker reports, per scenario: overlapping holds (as each holder believed them),
writes the store accepted from a holder after its hold was lost, writes refused, the token
order, and the time from each fault to its detection. Report: tests/netfaults/out/report.md
and timeline.svg (each owner's holds over time, faults marked).

Usage: `make netfaults`, or after a build `.venv/bin/python tests/netfaults/run.py [SCENARIO...]`.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "chaos"))
from harness import (  # noqa: E402
    NEXT, ROOT, SURFACES, CaseTimeout, Ctx, Fail, Worker, check, eventually, free_port, run_mx,
)

OUT = HERE / "out"


def toxiproxy_binary() -> Path:
    """The toxiproxy server: $TOXIPROXY (set by `make netfaults`, which pins the version), else
    the newest `make toxiproxy` built into the cache."""
    if os.environ.get("TOXIPROXY"):
        return Path(os.environ["TOXIPROXY"])
    cache = Path(os.environ.get("RLOCK_CACHE") or Path.home() / ".cache/rlock")
    built = sorted(cache.glob("toxiproxy-*/server"))
    return built[-1] if built else cache / "toxiproxy-<version>" / "server"


class Toxiproxy:
    """A toxiproxy server on loopback, driven through its HTTP API."""

    def __init__(self, tmp: Path) -> None:
        self.port = free_port()
        self.log = tmp / "toxiproxy.log"
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen(
                [str(toxiproxy_binary()), "-host", "127.0.0.1", "-port", str(self.port)],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            )
        try:
            eventually(self._up, 10, "toxiproxy to answer", step=0.05)
        except Fail:
            self.stop()
            raise Fail(f"toxiproxy did not start: {self.log.read_text(errors='replace')[-800:]}")

    def _up(self) -> bool:
        try:
            self._call("GET", "/version")
            return True
        except OSError:
            return False

    def _call(self, method: str, path: str, body: Optional[Dict[str, Any]] = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=5) as resp:
            text = resp.read().decode()
        return json.loads(text) if text.strip().startswith(("{", "[")) else text

    def proxy(self, name: str, upstream: int) -> int:
        """A proxy to 127.0.0.1:`upstream`; its listening port."""
        port = free_port()
        self._call("POST", "/proxies", {"name": name, "listen": f"127.0.0.1:{port}",
                                        "upstream": f"127.0.0.1:{upstream}", "enabled": True})
        return port

    def toxic(self, proxy: str, name: str, kind: str, stream: str, **attributes: Any) -> None:
        """Adds toxic `name` of `kind` on `stream` (upstream: to Redis; downstream: replies)."""
        self._call("POST", f"/proxies/{proxy}/toxics",
                   {"name": name, "type": kind, "stream": stream, "toxicity": 1.0, "attributes": attributes})

    def heal(self, proxy: str, *names: str) -> None:
        for name in names:
            self._call("DELETE", f"/proxies/{proxy}/toxics/{name}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@dataclass
class Write:
    t: float
    key: str
    token: int
    writer: str
    accepted: bool


class FencedStore:
    """The storage side of fencing: refuses a token lower than the highest it saw for a key."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.highest: Dict[str, int] = {}
        self.writes: List[Write] = []

    def write(self, key: str, token: int, writer: str) -> bool:
        with self._lock:
            ok = token >= self.highest.get(key, 0)
            if ok:
                self.highest[key] = token
            self.writes.append(Write(time.monotonic(), key, token, writer, ok))
            return ok


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


def proxied(ctx: Ctx, tox: Toxiproxy, srv: Any, proxy: str, surface: str, label: str, **options: Any) -> Worker:
    """A worker of `surface` that reaches `srv` through a new toxiproxy proxy named `proxy`
    (stopped with the case)."""
    port = tox.proxy(proxy, srv.port)
    w = Worker(surface, f"redis://127.0.0.1:{port}/", ctx.tmp, label, **options)
    ctx.workers.append(w)
    return w


HISTORIES: List[History] = []
# One report row per checked run.
CHECKED: List[str] = []


def wait_lost(w: Worker, limit: float) -> Tuple[float, Dict[str, Any]]:
    eventually(lambda: bool(w.lost_events), limit, f"{w.label} to hear its hold was lost")
    return w.lost_events[0]


def partition(ctx: Ctx, tox: Toxiproxy, store: FencedStore) -> str:
    """A fenced lock's holder cut off from Redis past its lease: told before anyone else acquires."""
    rows = []
    for surface in SURFACES:
        for mode in ("watchdog", "lease"):
            srv = ctx.server()
            pname = f"partition-{surface}-{mode}"
            holder = proxied(ctx, tox, srv, pname, surface, f"{surface}-holder-{mode}", watchdog_ms=3000)
            other = ctx.worker(NEXT[surface], srv, f"{NEXT[surface]}-other-{mode}")
            ctx.ready(holder, other)
            key = f"nf:{surface}:{mode}"
            spec = f"fenced@{key}"
            h = History(pname)
            line = f"acquire {spec}" if mode == "watchdog" else f"acquire {spec} 1000 3000"
            holder.send(line)
            t_acq, got = holder.expect("acquired")
            t1 = got.get("token")
            check(isinstance(t1, int) and t1 > 0, f"{holder.label}: no token in {got}")
            check(store.write(key, t1, holder.label), "the holder's first write was refused")
            cut = time.monotonic()
            tox.toxic(pname, "cut-up", "timeout", "upstream", timeout=0)
            tox.toxic(pname, "cut-down", "timeout", "downstream", timeout=0)
            other.send(f"acquire {spec} 20000")
            t_other, got2 = other.expect("acquired", timeout=30)
            t2 = got2.get("token")
            check(isinstance(t2, int), f"{other.label}: no token in {got2}")
            check(store.write(key, t2, other.label), "the new holder's write was refused")
            told, lost = wait_lost(holder, 10)
            reason = lost.get("reason")
            expected = "lease_doubt" if mode == "watchdog" else "lease_ending"
            margin = t_other - told
            # The old holder writes late, as a paused holder would: the store must refuse it.
            late_ok = store.write(key, t1, holder.label)
            tox.heal(pname, "cut-up", "cut-down")
            h.faults.append((cut, time.monotonic(), "partition"))
            h.detections.append(told - cut)
            h.holds.append(Hold(holder.label, key, t1, t_acq, told, reason))
            released = other.call(f"release {spec}", "released")
            h.holds.append(Hold(other.label, key, t2, t_other, time.monotonic()))
            HISTORIES.append(h)
            verdict = h.check(store)
            CHECKED.append(f"{pname} | {verdict['overlaps']} | {verdict['unfenced_overlaps']} | "
                           f"{verdict['late_writes_accepted']} | {verdict['writes_refused']} | "
                           f"{' < '.join(map(str, verdict['tokens']))} | {(told - cut) * 1000:.0f} ms")
            check(reason == expected, f"{holder.label}: told {reason!r}, expected {expected!r}")
            check(margin > 0, f"{holder.label}: told {margin * 1000:.0f} ms AFTER {other.label} acquired")
            check(isinstance(t2, int) and t2 > t1, f"tokens {t1} then {t2}: not increasing")
            check(not late_ok, "the store accepted the old holder's late write")
            check(verdict["unfenced_overlaps"] == 0, f"unfenced overlap: {verdict}")
            check(released.get("free") is True, f"{other.label}: {released}")
            # The old holder's release after the heal: LOST, and nothing left in Redis.
            holder.send(f"release {spec}")
            _, rel = holder.reply(20)
            check(rel.get("event") == "error" and rel.get("code") == "LOST", f"{holder.label} release: {rel}")
            r = srv.conn()
            check(not r.exists(key), f"{key} left behind: {r.hgetall(key)}")
            rows.append((surface, mode, margin, told - cut, t1, t2))
            holder.exit()
            other.exit()
    worst = min(r[2] for r in rows)
    parts = ", ".join(f"{s}/{m} {mg * 1000:.0f} ms" for s, m, mg, *_ in rows)
    return (f"8 runs (4 surfaces x watchdog/explicit lease, watchdog 3 s): every holder told before the "
            f"other owner acquired, margin >= {worst * 1000:.0f} ms ({parts}); tokens increased; the store "
            "refused every late write of an old holder; no unfenced overlap")


def lost_reply(ctx: Ctx, tox: Toxiproxy, store: FencedStore) -> str:
    """Replies held back while the acquire runs: TIMEOUT, and nothing left held in Redis."""
    rows = []
    for surface in SURFACES:
        srv = ctx.server()
        pname = f"lost-reply-{surface}"
        w = proxied(ctx, tox, srv, pname, surface, f"{surface}-lostreply", command_timeout_ms=500, retry_attempts=0)
        ctx.ready(w)
        r = srv.conn()
        base = f"nf:lr:{surface}"
        r.set(f"{base}:pes", 2)
        r.set(f"{base}:sem", 2)
        specs = [f"fenced@{base}:lock", f"pes@{base}:pes", f"sem@{base}:sem"]
        for spec in specs:  # the scripts are loaded before the fault
            w.call(f"acquire {spec}", "acquired")
            w.call(f"release {spec}", "released")

        def clean(spec: str) -> bool:
            kind, _, name = spec.partition("@")
            if kind == "fenced":
                return not r.exists(name)
            if kind == "pes":
                return r.get(name) == "2" and r.zcard(f"{{{name}}}:timeout") == 0
            return r.get(name) == "2"

        for spec in specs:
            tox.toxic(pname, "replies", "timeout", "downstream", timeout=0)
            started = time.monotonic()
            w.send(f"acquire {spec} 0")
            _, got = w.reply(20)
            tox.heal(pname, "replies")
            check(got.get("event") == "error" and got.get("code") == "TIMEOUT", f"{w.label} {spec}: {got}")
            try:
                eventually(lambda: clean(spec), 5, f"{spec} back as before")
            except Fail:
                raise Fail(f"{w.label}: the unanswered acquire of {spec} left it held")
            again = reacquire(w, spec)
            check(again.get("event") == "acquired", f"{w.label} {spec} after the heal: {again}")
            w.call(f"release {spec}", "released")
            rows.append((surface, spec.partition("@")[0], time.monotonic() - started))
        w.exit()
    return (f"{len(rows)} acquires whose replies were held back (4 surfaces x fenced lock, permit-expirable "
            "semaphore, semaphore; command timeout 500 ms, no retries): each failed TIMEOUT and Redis held "
            "nothing afterwards")


def reacquire(w: Worker, spec: str) -> Dict[str, Any]:
    """Acquires `spec` after a heal, which may have reset the worker's connection: a worker that
    does not retry answers CONNECTION once."""
    w.send(f"acquire {spec}")
    _, got = w.reply(20)
    if got.get("code") == "CONNECTION":
        w.send(f"acquire {spec}")
        _, got = w.reply(20)
    return got


def latency(ctx: Ctx, tox: Toxiproxy, store: FencedStore) -> str:
    """Replies delayed below, then above the command timeout: typed timeouts, nothing leaked."""
    rows = []
    for surface in SURFACES:
        srv = ctx.server()
        pname = f"latency-{surface}"
        w = proxied(ctx, tox, srv, pname, surface, f"{surface}-latency", command_timeout_ms=500, retry_attempts=0)
        other = ctx.worker(NEXT[surface], srv, f"{NEXT[surface]}-direct")
        ctx.ready(w, other)
        key = f"nf:lat:{surface}"
        spec = f"fenced@{key}"
        w.call(f"acquire {spec}", "acquired")  # the scripts are loaded before the fault
        w.call(f"release {spec}", "released")
        tox.toxic(pname, "slow", "latency", "downstream", latency=200, jitter=50)
        began = time.monotonic()
        got = w.call(f"acquire {spec}", "acquired")
        check(store.write(key, got["token"], w.label), "a write under latency was refused")
        w.call(f"release {spec}", "released")
        below = time.monotonic() - began
        tox.heal(pname, "slow")
        tox.toxic(pname, "slower", "latency", "downstream", latency=1500)
        w.send(f"acquire {spec} 0")
        _, late = w.reply(20)
        tox.heal(pname, "slower")
        healed = time.monotonic()
        check(late.get("event") == "error" and late.get("code") == "TIMEOUT", f"{w.label} above: {late}")
        # What the unanswered acquire took was given back: the other owner gets it at once.
        other.send(f"acquire {spec} 5000")
        t_other, got2 = other.expect("acquired", timeout=10)
        check(store.write(key, got2["token"], other.label), "the other owner's write was refused")
        other.call(f"release {spec}", "released")
        back = reacquire(w, spec)
        recovered = time.monotonic() - healed
        check(back.get("event") == "acquired", f"{w.label} after the heal: {back}")
        w.call(f"release {spec}", "released")
        r = srv.conn()
        check(not r.exists(key), f"{key} left behind: {r.hgetall(key)}")
        rows.append((surface, below, t_other - healed, recovered))
        w.exit()
        other.exit()
    parts = ", ".join(f"{s} {b * 1000:.0f} ms / {o * 1000:.0f} ms / {rc * 1000:.0f} ms" for s, b, o, rc in rows)
    return ("replies 200 +/- 50 ms late (command timeout 500 ms): acquire and release held; 1500 ms late: the "
            f"acquire failed TIMEOUT and left nothing (per surface: the slow pair / the other owner's acquire "
            f"after the heal / this worker's own: {parts})")


def slow_network(ctx: Ctx, tox: Toxiproxy, store: FencedStore) -> str:
    """A slow network (bandwidth limits, sliced packets): exclusion holds, counters exact."""
    srv = ctx.server()
    workers = []
    for surface in SURFACES:
        for i in range(2):
            pname = f"slow-{surface}-{i}"
            w = proxied(ctx, tox, srv, pname, surface, f"{surface}-slow{i}")
            for stream in ("upstream", "downstream"):
                tox.toxic(pname, f"narrow-{stream}", "bandwidth", stream, rate=64)  # KB/s
                tox.toxic(pname, f"sliced-{stream}", "slicer", stream, average_size=16, size_variation=8, delay=50)
            workers.append(w)
    ctx.ready(*workers)
    total, names = 800, 4
    crossings, took = run_mx(srv, workers, "nf:slow", names, total)
    return (f"{len(workers)} workers (2 per surface), each through its own proxy at 64 KB/s each way with "
            f"packets sliced to ~16 bytes: {total} sections on {names} locks in {took:.1f} s "
            f"({total / took:.0f}/s), 0 violations, counters exact, no error, {crossings} hand-offs between surfaces")


SCENARIOS: List[Tuple[str, int, Callable[[Ctx, Toxiproxy, FencedStore], str]]] = [
    ("partition", 300, partition),
    ("lost-reply", 200, lost_reply),
    ("latency", 200, latency),
    ("slow-network", 200, slow_network),
]


def timeline_svg(histories: List[History]) -> str:
    """Each run's holds as bars on one row per owner, faults as red bands."""
    rows: List[Tuple[str, History, Hold]] = [(h.run, h, hold) for h in histories for hold in h.holds]
    if not rows:
        return "<svg xmlns='http://www.w3.org/2000/svg' width='10' height='10'/>"
    width, row_h, label_w = 1000, 18, 360
    svg = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{row_h * len(rows) + 30}' "
           "font-family='monospace' font-size='11'>"]
    for i, (run, h, hold) in enumerate(rows):
        t0 = min(x.start for x in h.holds)
        t1 = max(min(x.end, x.start + 30) for x in h.holds) + 0.5
        scale = (width - label_w - 10) / max(t1 - t0, 0.001)
        y = 20 + i * row_h
        svg.append(f"<text x='2' y='{y + 12}'>{run}: {hold.owner} #{hold.token}</text>")
        for start, end, what in h.faults:
            svg.append(f"<rect x='{label_w + (start - t0) * scale:.1f}' y='{y}' "
                       f"width='{max((end - start) * scale, 1):.1f}' height='{row_h - 2}' fill='#f4c7c3'>"
                       f"<title>{what}</title></rect>")
        end = min(hold.end, t1)
        color = "#e06666" if hold.lost_reason else "#6aa84f"
        svg.append(f"<rect x='{label_w + (hold.start - t0) * scale:.1f}' y='{y + 3}' "
                   f"width='{max((end - hold.start) * scale, 1):.1f}' height='{row_h - 8}' fill='{color}'>"
                   f"<title>{hold.lost_reason or 'released'}</title></rect>")
    svg.append("<text x='2' y='12'>holds per run (green: released, red: lost; pink band: the fault)</text></svg>")
    return "\n".join(svg)


def main(argv: List[str]) -> int:
    wanted = argv[1:] or [s[0] for s in SCENARIOS]
    if set(wanted) - {s[0] for s in SCENARIOS}:
        print(f"scenarios: {', '.join(s[0] for s in SCENARIOS)}")
        return 2
    if not toxiproxy_binary().exists():
        print(f"missing {toxiproxy_binary()}: run 'make toxiproxy'")
        return 2
    # The fault suite's time bound: SIGALRM unwinds the scenario through its cleanup (a SIGTERM
    # from outside too), so no worker, server or proxy outlives it.
    def on_alarm(signum: int, frame: Any) -> None:
        raise CaseTimeout()
    signal.signal(signal.SIGALRM, on_alarm)
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    results = []
    start = time.monotonic()
    for name, limit, fn in SCENARIOS:
        if name not in wanted:
            continue
        print(f"== {name}: {(fn.__doc__ or '').strip().splitlines()[0]}", flush=True)
        tmp = Path(tempfile.mkdtemp(prefix=f"rlock-netfaults-{name}-"))
        ctx = Ctx(tmp)
        tox: Optional[Toxiproxy] = None
        began = time.monotonic()
        ok, detail = False, ""
        try:
            signal.setitimer(signal.ITIMER_REAL, limit)
            tox = Toxiproxy(tmp)
            detail = fn(ctx, tox, FencedStore())
            ok = True
        except CaseTimeout:
            detail = f"did not finish within its {limit} s bound"
        except Fail as e:
            detail = str(e)
        except Exception:
            detail = "driver error: " + traceback.format_exc()
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            if not ok:
                detail += "".join(w.stderr_tail() for w in ctx.workers)
            ctx.cleanup()
            if tox is not None:
                tox.stop()
            shutil.rmtree(tmp, ignore_errors=True)
        secs = time.monotonic() - began
        print(f"{'PASS' if ok else 'FAIL'} {name} ({secs:.1f} s): {detail}", flush=True)
        results.append((name, ok, secs, detail.splitlines()[0] if detail else ""))
    OUT.mkdir(exist_ok=True)
    lines = ["# make netfaults", "", "| scenario | result | time | numbers |", "|---|---|---|---|"]
    lines += [f"| {n} | {'PASS' if ok else 'FAIL'} | {s:.1f} s | {d} |" for n, ok, s, d in results]
    lines += ["", "## History checker, per run", "",
              "| run | overlaps | unfenced | late writes accepted | writes refused | tokens | detection |",
              "|---|---|---|---|---|---|---|"]
    lines += [f"| {row} |" for row in CHECKED]
    lines += ["", "![timeline](timeline.svg)", ""]
    (OUT / "report.md").write_text("\n".join(lines))
    (OUT / "timeline.svg").write_text(timeline_svg(HISTORIES))
    print("\n".join(lines[:4 + len(results)]))
    passed = sum(1 for r in results if r[1])
    print(f"\nnetfaults: {len(results)} scenarios in {time.monotonic() - start:.0f} s; {passed} passed, "
          f"{len(results) - passed} failed; report in {OUT.relative_to(ROOT)}/")
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""`make netfaults`: network faults between rlock's workers and Redis, injected with toxiproxy,
with a fenced store and a history checker (issue 31).

Each scenario runs for every surface (Rust, Python, Node, C). The worker under test reaches
Redis through its own toxiproxy proxy (or rlock-testbed's, for what toxiproxy cannot do); the
other owner reaches Redis directly. The workers are
the fault suite's (tests/chaos, same line protocol). The fenced store is a small service on loopback
(history.py's FencedStore, one per scenario): it records every write with its token, writer and
times, and refuses a token lower than the highest it has seen for the key. Each worker writes to
it itself (the `write NAME STORE_PORT` command), over its own socket, with the token its own
acquire returned, at the moment the scenario says that worker writes.

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
- pubsub-blackhole: a waiter on a fenced lock reaches Redis through rlock-testbed's proxy,
  which silences its subscribed connection for good (toxiproxy's `timeout` toxic would deliver
  what it held back at the heal; a middlebox that dropped the connection loses it); the holder
  (direct) releases: the waiter's check ping finds the subscription silent, it subscribes
  again on a new connection and gets the lock within 4/3 subscription timeouts plus a second
  of the release (it would otherwise sleep out its 30 s wait).
- slow-network: 64 owners (16 worker processes per surface), each through a proxy limited to
  64 KB/s with packets sliced small, run critical sections on 4 locks: no violation, exact
  counters, no error.
- failover: a Sentinel set (rlock-testbed `sentinel --replication-proxy`) whose replica is cut
  off from the master; every surface and a Redisson worker take fenced locks before and
  during the cut, the master is killed and the replica promoted, other owners try each lock.
  Replica sync off: lost holds and tokens that went back, counted (no verdict). On: rlock's
  acquires during the cut are refused and no hold or token is lost.
- paused-primary: the master SIGSTOPped past the sentinels' down-after while every surface
  holds a fenced lock, the replica promoted, other owners try each lock, then SIGCONT: no lock
  taken before its holder was told; acquires after the SIGCONT land on the new master; the
  time the old master stays a master (the split brain) is reported.
- clock-jump: a holder's wall clock moved 1 h ahead, then behind (libfaketime): it keeps its
  hold, is never told otherwise, and another owner never gets the lock.

The partition scenario also runs Redisson 3.52 as a holder (tests/interop/redisson's Worker):
it is never told (Redisson has no lost-hold signal), and only the store refuses its late write.

The history checker reports, per scenario: overlapping holds (as each holder believed them),
writes the store accepted from a holder after its hold was lost, writes refused, the token
order, and the time from each fault to its detection. Report: tests/netfaults/out/report.md
and timeline.svg (each owner's holds over time, faults marked).

The fenced store and the history live in history.py, the Sentinel scenarios (failover,
paused-primary) in sentinel.py.

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
import time
import traceback
import urllib.request
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "chaos"))
from harness import (  # noqa: E402
    NEXT, ROOT, SURFACES, CaseTimeout, Ctx, Fail, HeldPort, Testbed, Worker, check, eventually, run_mx,
)
import redis  # noqa: E402
from history import CHECKED, HISTORIES, FencedStore, History, Hold, write  # noqa: E402
from sentinel import failover, paused_primary  # noqa: E402

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
        # Its port and its proxies' stay held until stop(): suites and test binaries running
        # side by side choose ports too, and a port chosen but not yet listened on is not free.
        self._held = [HeldPort()]
        self.port = self._held[0].port
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
        held = HeldPort()
        self._held.append(held)
        port = held.port
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
        for held in self._held:
            held.close()


def proxied(ctx: Ctx, tox: Toxiproxy, srv: Any, proxy: str, surface: str, label: str, **options: Any) -> Worker:
    """A worker of `surface` that reaches `srv` through a new toxiproxy proxy named `proxy`
    (stopped with the case)."""
    port = tox.proxy(proxy, srv.port)
    return ctx.worker_at(surface, f"redis://127.0.0.1:{port}/", label, **options)


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
            check(write(holder, spec, store), "the holder's first write was refused")
            cut, t_other, t2 = take_over(tox, pname, other, spec, store)
            told, lost = wait_lost(holder, 10)
            reason = lost.get("reason")
            expected = "lease_doubt" if mode == "watchdog" else "lease_ending"
            margin = t_other - told
            # The old holder writes late, as a paused holder would: the store must refuse it.
            late_ok = write(holder, spec, store)
            tox.heal(pname, "cut-up", "cut-down")
            h.faults.append((cut, time.monotonic(), "partition"))
            h.detections.append(told - cut)
            h.holds.append(Hold(holder.label, key, t1, t_acq, told, reason))
            released = other.call(f"release {spec}", "released")
            h.holds.append(Hold(other.label, key, t2, t_other, time.monotonic()))
            verdict = h.record(store, f"{(told - cut) * 1000:.0f} ms", " < ")
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
    redisson = partition_redisson(ctx, tox, store)
    worst = min(r[2] for r in rows)
    parts = ", ".join(f"{s}/{m} {mg * 1000:.0f} ms" for s, m, mg, *_ in rows)
    return (f"8 runs (4 surfaces x watchdog/explicit lease, watchdog 3 s): every holder told before the "
            f"other owner acquired, margin >= {worst * 1000:.0f} ms ({parts}); tokens increased; the store "
            f"refused every late write of an old holder; no unfenced overlap. {redisson}")


def take_over(tox: Toxiproxy, pname: str, other: Worker, spec: str, store: FencedStore) -> Tuple[float, float, int]:
    """Cuts the holder's proxy both ways (nothing passes, the sockets stay open), then `other`
    acquires `spec` directly and writes with its token. Returns the cut's moment, the other
    owner's acquire moment and its token."""
    cut = time.monotonic()
    tox.toxic(pname, "cut-up", "timeout", "upstream", timeout=0)
    tox.toxic(pname, "cut-down", "timeout", "downstream", timeout=0)
    other.send(f"acquire {spec} 20000")
    t_other, got = other.expect("acquired", timeout=30)
    token = got.get("token")
    check(isinstance(token, int), f"{other.label}: no token in {got}")
    check(write(other, spec, store), "the new holder's write was refused")
    return cut, t_other, token


def partition_redisson(ctx: Ctx, tox: Toxiproxy, store: FencedStore) -> str:
    """The partition with Redisson 3.52 as the holder: it has no lost-hold signal (redisson#4698),
    so it is never told; only the fenced store stops its late write. Counted, no verdict on the
    signal."""
    srv = ctx.server()
    pname = "partition-redisson"
    holder = proxied(ctx, tox, srv, pname, "redisson", "redisson-holder", watchdog_ms=3000, command_timeout_ms=1000)
    other = ctx.worker("rust", srv, "rust-other-redisson")
    ctx.ready(holder, other)
    key = "nf:redisson:watchdog"
    spec = f"fenced@{key}"
    holder.send(f"acquire {spec}")
    t_acq, got = holder.expect("acquired", timeout=30)
    t1 = got["token"]
    check(write(holder, spec, store), "Redisson's first write was refused")
    cut, t_other, t2 = take_over(tox, pname, other, spec, store)
    late_ok = write(holder, spec, store)
    told = bool(holder.lost_events)
    tox.heal(pname, "cut-up", "cut-down")
    h = History(pname)
    h.faults.append((cut, time.monotonic(), "partition"))
    h.holds.append(Hold(holder.label, key, t1, t_acq, time.monotonic()))
    released = other.call(f"release {spec}", "released")
    h.holds.append(Hold(other.label, key, t2, t_other, time.monotonic()))
    verdict = h.record(store, "never told", " < ")
    check(isinstance(t2, int) and t2 > t1, f"tokens {t1} then {t2}: not increasing")
    check(not late_ok, "the store accepted Redisson's late write")
    check(verdict["unfenced_overlaps"] == 0, f"unfenced overlap: {verdict}")
    check(released.get("free") is True, f"{other.label}: {released}")
    holder.exit()
    other.exit()
    return (f"Redisson 3.52 as the holder (watchdog 3 s): never told{' (it was!)' if told else ''}; the other "
            f"owner acquired {t_other - cut:.1f} s after the cut while Redisson still held it as far as it "
            "knew; the store refused its late write")


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
                # What is left tells which step failed: the give-back (count 0 or 1) or an
                # extra one (more than 2).
                name = spec.partition("@")[2]
                kind = r.type(name)
                seen = kind, r.get(name) if kind == "string" else r.hgetall(name)
                raise Fail(f"{w.label}: the unanswered acquire of {spec} left it held: {name} is {seen}")
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
        check(write(w, spec, store), "a write under latency was refused")
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
        check(write(other, spec, store), "the other owner's write was refused")
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


# The waiters' subscription timeout in pubsub-blackhole: the check pings every third of it and
# replaces a connection that leaves a ping unanswered that long.
SUBSCRIPTION_TIMEOUT_MS = 1000
# The bound on the hand-off: the silence is noticed within 4/3 subscription timeouts (a ping
# every third, answered within one), then a connect, the subscribe and the acquire (1 s). A
# waiter that missed the unlock would sleep out its 30 s wait instead.
PUBSUB_BOUND_S = 4 / 3 * SUBSCRIPTION_TIMEOUT_MS / 1000 + 1


def pubsub_blackhole(ctx: Ctx, tox: Toxiproxy, store: FencedStore) -> str:
    """A waiter's subscription silenced for good while it waits: it notices, re-subscribes and gets the lock."""
    rows = []
    for surface in SURFACES:
        # toxiproxy's `timeout` toxic delays what it holds back until the heal, and delivers
        # it then; a middlebox that dropped a connection loses it. rlock-testbed's proxy drops
        # it: `blackhole-subscribers` silences, for good, the connections that subscribed.
        tb = Testbed("single", "--proxy")
        try:
            waiter = ctx.worker_at(surface, tb.info["proxy_url"], f"{surface}-waiter",
                                   subscription_timeout_ms=SUBSCRIPTION_TIMEOUT_MS)
            holder = ctx.worker_at(NEXT[surface], tb.url, f"{NEXT[surface]}-holder")
            ctx.ready(waiter, holder)
            key = f"nf:ps:{surface}"
            spec = f"fenced@{key}"
            h = History(f"pubsub-blackhole-{surface}")
            holder.send(f"acquire {spec}")
            t_first, got = holder.expect("acquired")
            t1 = got["token"]
            check(write(holder, spec, store), "the holder's write was refused")
            waiter.send(f"acquire {spec} 30000")
            r = redis.Redis(port=tb.port, decode_responses=True)
            channel = f"redisson_lock__channel:{{{key}}}"
            eventually(lambda: r.execute_command("PUBSUB", "NUMSUB", channel)[1] == 1, 10, f"{waiter.label} subscribed")
            silenced = tb.command("blackhole-subscribers")["blackholed"]
            check(silenced == 1, f"{silenced} connections had subscribed, expected the waiter's one")
            cut = time.monotonic()
            released = holder.call(f"release {spec}", "released")
            t_release = time.monotonic()
            check(released.get("free") is True, f"{holder.label}: {released}")
            h.holds.append(Hold(holder.label, key, t1, t_first, t_release))
            t_acq, got2 = waiter.expect("acquired", timeout=40)
            t2 = got2.get("token")
            check(isinstance(t2, int) and t2 > t1, f"tokens {t1} then {t2}: not increasing")
            check(write(waiter, spec, store), "the waiter's write was refused")
            waiter.call(f"release {spec}", "released")
            h.holds.append(Hold(waiter.label, key, t2, t_acq, time.monotonic()))
            h.faults.append((cut, t_acq, "subscription silenced"))
            h.detections.append(t_acq - t_release)
            verdict = h.record(store, f"{(t_acq - t_release) * 1000:.0f} ms after the release", " < ")
            check(t_acq - t_release < PUBSUB_BOUND_S,
                  f"{waiter.label}: got the lock {t_acq - t_release:.2f} s after the release "
                  f"(bound {PUBSUB_BOUND_S:.2f} s)")
            check(verdict["overlaps"] == 0, f"overlap: {verdict}")
            rows.append((surface, t_acq - t_release))
            waiter.exit()
            holder.exit()
        finally:
            tb.close()
    parts = ", ".join(f"{s} {a * 1000:.0f} ms" for s, a in rows)
    return (f"each waiter's subscription silenced for good while it waited (the sockets open, nothing passing; "
            f"subscription timeout {SUBSCRIPTION_TIMEOUT_MS} ms), then the holder released: every waiter noticed, "
            f"subscribed again and got the lock, tokens increasing ({parts} after the release; bound "
            f"{PUBSUB_BOUND_S * 1000:.0f} ms)")


FAKETIME_LIB = Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1")


def clock_jump(ctx: Ctx, tox: Toxiproxy, store: FencedStore) -> str:
    """A holder's wall clock jumps an hour ahead, then back: nothing changes (leases run on monotonic time)."""
    check(FAKETIME_LIB.exists(), f"missing {FAKETIME_LIB} (Debian's libfaketime: make deps)")
    rows = []
    for surface in SURFACES:
        srv = ctx.server()
        clock = ctx.tmp / f"clock-{surface}"
        clock.write_text("+0\n")
        # libfaketime moves the wall clock only (the monotonic clock stays real), re-reading
        # the offset from `clock` every second.
        env = {"LD_PRELOAD": str(FAKETIME_LIB), "FAKETIME_TIMESTAMP_FILE": str(clock),
               "FAKETIME_DONT_FAKE_MONOTONIC": "1", "FAKETIME_CACHE_DURATION": "1"}
        holder = ctx.worker_at(surface, srv.url, f"{surface}-jumped", env=env, watchdog_ms=1500)
        other = ctx.worker(NEXT[surface], srv, f"{NEXT[surface]}-other-clock")
        ctx.ready(holder, other)
        key = f"nf:clock:{surface}"
        spec = f"fenced@{key}"
        got = holder.call(f"acquire {spec}", "acquired")
        check(write(holder, spec, store), "the holder's write was refused")
        for offset in ("+3600", "-3600"):
            clock.write_text(offset + "\n")
            # The other owner tries for 4 s, eight renewals of the 1.5 s lease: every renewal
            # must go on as before, so it never gets the lock.
            other.send(f"acquire {spec} 4000")
            _, tried = other.reply(20)
            check(tried.get("event") == "not_acquired", f"{other.label} after a jump of {offset} s: {tried}")
            held = holder.call(f"held {spec}", "held")
            check(held.get("value") is True, f"{holder.label} after a jump of {offset} s: {held}")
        check(not holder.lost_events, f"{holder.label} was told: {holder.lost_events}")
        released = holder.call(f"release {spec}", "released")
        check(released.get("free") is True, f"{holder.label}: {released}")
        rows.append(surface)
        holder.exit()
        other.exit()
    return (f"a holder's wall clock (libfaketime) jumped 1 h ahead, then 1 h behind, on {', '.join(rows)}: "
            "watchdog lease 1.5 s, another owner tried 4 s after each jump and never got the lock, the holder "
            "kept its hold and was never told it was lost")


# Owners in slow-network (the 64), shared evenly among the surfaces.
SLOW_OWNERS = 64


def slow_network(ctx: Ctx, tox: Toxiproxy, store: FencedStore) -> str:
    """A slow network (bandwidth limits, sliced packets), 64 owners: exclusion holds, counters exact."""
    srv = ctx.server()
    workers = []
    per_surface = SLOW_OWNERS // len(SURFACES)
    for surface in SURFACES:
        for i in range(per_surface):
            pname = f"slow-{surface}-{i}"
            w = proxied(ctx, tox, srv, pname, surface, f"{surface}-slow{i}")
            for stream in ("upstream", "downstream"):
                tox.toxic(pname, f"narrow-{stream}", "bandwidth", stream, rate=64)  # KB/s
                tox.toxic(pname, f"sliced-{stream}", "slicer", stream, average_size=16, size_variation=8, delay=50)
            workers.append(w)
    ctx.ready(*workers)
    total, names = 1280, 4
    crossings, took = run_mx(srv, workers, "nf:slow", names, total)
    return (f"{len(workers)} owners ({per_surface} per surface, one process each), each through its own proxy "
            f"at 64 KB/s each way with packets sliced to ~16 bytes: {total} sections on {names} locks in "
            f"{took:.1f} s ({total / took:.0f}/s), 0 violations, counters exact, no error, {crossings} "
            "hand-offs between surfaces")


SCENARIOS: List[Tuple[str, int, Callable[[Ctx, Toxiproxy, FencedStore], str]]] = [
    ("partition", 300, partition),
    ("lost-reply", 200, lost_reply),
    ("latency", 200, latency),
    ("pubsub-blackhole", 200, pubsub_blackhole),
    ("failover", 300, failover),
    ("paused-primary", 200, paused_primary),
    ("clock-jump", 200, clock_jump),
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
        store: Optional[FencedStore] = None
        store_port: Optional[HeldPort] = None
        began = time.monotonic()
        ok, detail = False, ""
        try:
            signal.setitimer(signal.ITIMER_REAL, limit)
            tox = Toxiproxy(tmp)
            store_port = HeldPort()
            store = FencedStore(store_port.port)
            detail = fn(ctx, tox, store)
            ok = True
        except CaseTimeout:
            detail = f"did not finish within its {limit} s bound"
        except Fail as e:
            detail = str(e)
        except Exception:
            detail = "driver error: " + traceback.format_exc()
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            if store is not None:
                store.close()
            if store_port is not None:
                store_port.close()
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

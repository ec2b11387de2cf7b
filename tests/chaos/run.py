#!/usr/bin/env python3
"""make chaos: the fault suite across all surfaces (Rust, Python, Node, C).

Each case starts its own redis-server (through rlock-testbed, tests/testbed.py: 127.0.0.1, a port
outside the kernel's ephemeral range, a temporary directory), starts
workers of every surface (tests/chaos/worker.*, tests/chaos/rust) that speak one
line protocol (a command per stdin line, JSON event lines on stdout), injects its fault, and
asserts on the workers' events and on what Redis holds. Every case runs under a hard time bound
(SIGALRM), prints one PASS/FAIL line with its numbers, and stops every process it started, also
on failure. A summary table follows; the exit status is non-zero when any case failed.

Usage: run.py [case ...]   (default: all cases, in order; see CASES at the bottom)
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

import redis

import red_lock  # noqa: E402
from testbed import HeldPort  # noqa: E402
from harness import (  # noqa: E402
    ROOT,
    SURFACES,
    NEXT,
    worker_command,
    Fail,
    CaseTimeout,
    check,
    eventually,
    channel,
    bare,
    Server,
    ExpiredKeys,
    HolderWatch,
    locks_gone,
    existing,
    Worker,
    Ctx,
    run_mx,
)


# ---------------------------------------------------------------------------------------------
# The cases. Each returns a one-line summary of its numbers, or raises Fail.


def case_mutex(ctx: Ctx) -> str:
    """3 processes of each surface, 16 names, 20000 critical sections in all."""
    srv = ctx.server()
    workers = [ctx.worker(s, srv, f"{s}-{i}") for s in SURFACES for i in range(3)]
    ctx.ready(*workers)
    total, names = 20000, 16
    crossings, took = run_mx(srv, workers, "chaos:mx", names, total)
    return (f"{len(workers)} processes (3 each of rust/python/node/c), {names} names, {total} sections "
            f"in {took:.1f} s: 0 violations, counters exact, {crossings} hand-offs between surfaces")


def holders_and_waiters(ctx: Ctx, srv: Server, prefix: str, holder_opts: Dict[str, int],
                        waiter_opts: Dict[str, int], shared: bool = False) -> Tuple[Dict[str, Worker], Dict[str, Worker]]:
    """One holder per surface holding `<prefix>:<surface>` (`shared`: all of them holding
    `prefix`, a semaphore with a permit for each), and a waiter of another surface parked
    (subscribed) on each."""
    def spec(s: str) -> str:
        return prefix if shared else f"{prefix}:{s}"
    holders = {s: ctx.worker(s, srv, f"{s}-holder", **holder_opts) for s in SURFACES}
    waiters = {s: ctx.worker(NEXT[s], srv, f"{NEXT[s]}-waits-{s}", **waiter_opts) for s in SURFACES}
    ctx.ready(*holders.values(), *waiters.values())
    for s, h in holders.items():
        h.call(f"acquire {spec(s)}", "acquired")
    for s, w in waiters.items():
        w.send(f"acquire {spec(s)}")
    specs = {spec(s) for s in SURFACES}
    per = len(SURFACES) // len(specs)
    eventually(lambda: all(srv.numsub(x) == per for x in specs), 20, "every waiter subscribed")
    for s, w in waiters.items():
        check(not w.pending(), f"{w.label} answered while {spec(s)} was held: {w.events.queue}")
    return holders, waiters


def hand_over(holders: Dict[str, Worker], waiters: Dict[str, Worker], prefix: str, within: float) -> Dict[str, float]:
    """Each holder releases `<prefix>:<surface>` (it must become free) and the waiter parked on
    it must get it: seconds from the release's reply to the waiter's acquire, per surface. From
    the reply, not the call: the call may include the holder's own reconnect. A woken waiter
    can hold the lock before the holder hears back, which counts as 0."""
    woke = {}
    for s, h in holders.items():
        e = h.call(f"release {prefix}:{s}", "released", timeout=20)
        released = time.monotonic()
        check(e["free"] is True, f"{h.label}: release left the lock held")
        t, _ = waiters[s].expect("acquired", timeout=within)
        woke[s] = max(0.0, t - released)
    return woke


def clean(srv: Server, prefix: str, workers: List[Worker]) -> None:
    """No subscription and no lock key `<prefix>:*` left (the workers' stats on failure)."""
    r = srv.conn()
    try:
        eventually(lambda: not r.pubsub_channels(), 10, "PUBSUB CHANNELS empty")
    except Fail:
        stats = {w.label: w.call("stats", "stats") for w in workers}
        chans = {c: r.pubsub_numsub(c)[0][1] for c in r.pubsub_channels()}
        raise Fail(f"channels left subscribed: {chans}; workers: {stats}; clients: {r.execute_command('CLIENT', 'LIST')}")
    check(not r.keys(f"{prefix}:*"), f"lock keys left behind: {r.keys(f'{prefix}:*')}")


def finish(srv: Server, prefix: str, holders: Dict[str, Worker], waiters: Dict[str, Worker]) -> None:
    """The waiters release what they acquired, then nothing is left (see `clean`)."""
    for s, w in waiters.items():
        check(w.call(f"release {prefix}:{s}", "released")["free"] is True, f"{w.label}: release left it held")
    clean(srv, prefix, [*holders.values(), *waiters.values()])


def kill_holders(holders: Dict[str, Worker], waiters: Dict[str, Worker]) -> Dict[str, float]:
    """SIGKILLs every holder at once; seconds until each surface's waiter held its lock."""
    killed = time.monotonic()
    for h in holders.values():
        h.kill(signal.SIGKILL)
    took = {}
    for s, w in waiters.items():
        t, _ = w.expect("acquired", timeout=10)
        took[s] = t - killed
    return took


def case_sigkill(ctx: Ctx) -> str:
    """Holders killed with SIGKILL: their locks are free within the watchdog timeout + 1 s."""
    watchdog = 1000
    srv = ctx.server()
    holders, waiters = holders_and_waiters(ctx, srv, "chaos:kill", {"watchdog_ms": watchdog}, {})
    # Past one whole lease the holders' watchdogs still keep the locks (renewed, not expired).
    time.sleep(watchdog / 1000 * 1.5)
    r = srv.conn()
    for s in SURFACES:
        check(r.exists(f"chaos:kill:{s}") == 1, f"chaos:kill:{s} expired while its holder lived")
        check(not waiters[s].pending(), f"{waiters[s].label} acquired while the holder lived")
    took = kill_holders(holders, waiters)
    finish(srv, "chaos:kill", {}, waiters)
    worst = max(took.values())
    bound = watchdog / 1000 + 1
    check(worst <= bound, f"a lock was freed {worst:.2f} s after its holder was killed (bound {bound:.1f} s)")
    parts = ", ".join(f"{s} holder -> {NEXT[s]} waiter {took[s] * 1000:.0f} ms" for s in SURFACES)
    return f"watchdog {watchdog} ms, freed and taken within {worst * 1000:.0f} ms (bound {bound * 1000:.0f}): {parts}"


def case_restart(ctx: Ctx) -> str:
    """redis-server restarted (SIGKILL, empty dataset) while locks are held and waiters wait."""
    watchdog, outage = 1000, 2.0  # down for two leases: renewals fail, waiters retry
    srv = ctx.server()
    opts = {"watchdog_ms": watchdog}
    holders, waiters = holders_and_waiters(ctx, srv, "chaos:restart", opts, opts)
    down = time.monotonic()
    srv.restart(outage)
    up = time.monotonic()
    lost_after = {}
    for s, h in holders.items():
        eventually(lambda: any(n == f"chaos:restart:{s}" for _, n in h.lost), 20, f"{h.label}'s lost notification")
        lost_after[s] = min(t for t, n in h.lost if n == f"chaos:restart:{s}") - down
    acquired_after = {}
    for s, w in waiters.items():
        t, _ = w.expect("acquired", timeout=20)
        acquired_after[s] = t - down
    for s, h in holders.items():
        e = h.call(f"release chaos:restart:{s}", "error")
        check(e["code"] == "LOST", f"{h.label}: release of the lost hold gave {e}")
    finish(srv, "chaos:restart", holders, waiters)
    return (f"watchdog {watchdog} ms, server down {(up - down) * 1000:.0f} ms; 4 holders told lost after "
            f"{min(lost_after.values()):.1f}-{max(lost_after.values()):.1f} s, 4 waiters acquired after "
            f"{min(acquired_after.values()):.1f}-{max(acquired_after.values()):.1f} s; releases: holders LOST, waiters OK")


def case_restart_kept(ctx: Ctx) -> str:
    """redis-server down 2 s and restarted with its data (AOF): holds survive, subscriptions
    come back by themselves, and the unlock messages wake the waiters."""
    watchdog, outage, prefix = 10000, 2.0, "chaos:kept"
    srv = ctx.server(persistent=True)
    holders, waiters = holders_and_waiters(ctx, srv, prefix, {"watchdog_ms": watchdog}, {})
    down = time.monotonic()
    srv.restart(outage)
    up = time.monotonic()
    r = srv.conn()
    check(all(r.exists(f"{prefix}:{s}") for s in SURFACES), "the restarted server lost a lock (AOF)")
    back = eventually(lambda: all(srv.numsub(f"{prefix}:{s}") == 1 for s in SURFACES), 15,
                      "every waiter's subscription back")
    for s, w in waiters.items():
        check(not w.pending(), f"{w.label} answered while {prefix}:{s} was held: {w.events.queue}")
    woke = hand_over(holders, waiters, prefix, watchdog / 1000 + 10)
    check(max(woke.values()) <= 1.0, f"a waiter took {max(woke.values()):.2f} s after the release "
          f"(lease {watchdog / 1000:.0f} s): the unlock message was lost")
    for h in holders.values():
        check(not h.lost, f"{h.label} lost its hold across a {outage:.0f} s outage (lease {watchdog / 1000:.0f} s)")
    finish(srv, prefix, holders, waiters)
    return (f"server down {(up - down) * 1000:.0f} ms, 4 holds kept (watchdog {watchdog} ms, none lost), "
            f"subscriptions back {back * 1000:.0f} ms after the restart, waiters woken within "
            f"{max(woke.values()) * 1000:.0f} ms of each release")


def case_pubsub_kill(ctx: Ctx) -> str:
    """CLIENT KILL TYPE pubsub while waiters wait: they still acquire, subscriptions come back."""
    watchdog = 5000
    srv = ctx.server()
    prefix = "chaos:pubsub"
    holders, waiters = holders_and_waiters(ctx, srv, prefix, {"watchdog_ms": watchdog}, {})
    r = srv.conn()
    # Round 1: kill, then release at once, racing the resubscription. Bound: the holders' TTL.
    killed1 = int(r.execute_command("CLIENT", "KILL", "TYPE", "pubsub"))
    check(killed1 >= 4, f"CLIENT KILL TYPE pubsub killed {killed1} connections, expected the 4 waiters'")
    round1 = hand_over(holders, waiters, prefix, watchdog / 1000 + 10)
    bound1 = watchdog / 1000 + 1
    check(max(round1.values()) <= bound1, f"round 1: a waiter took {max(round1.values()):.2f} s (bound {bound1} s)")
    finish(srv, prefix, holders, waiters)

    # Round 2: kill while they wait, wait until every subscription is back, then release: the
    # unlock message must wake them (far sooner than the holders' 5 s lease would).
    for s, h in holders.items():
        h.call(f"acquire {prefix}:{s}", "acquired")
    for s, w in waiters.items():
        w.send(f"acquire {prefix}:{s}")
    eventually(lambda: all(srv.numsub(f"{prefix}:{s}") == 1 for s in SURFACES), 20, "every waiter subscribed")
    killed2 = int(r.execute_command("CLIENT", "KILL", "TYPE", "pubsub"))
    check(killed2 >= 4, f"round 2 killed {killed2} connections")
    back = eventually(lambda: all(srv.numsub(f"{prefix}:{s}") == 1 for s in SURFACES), 15, "resubscription")
    for s, w in waiters.items():
        check(not w.pending(), f"{w.label} answered while still held: {w.events.queue}")
    round2 = hand_over(holders, waiters, prefix, watchdog / 1000 + 10)
    check(max(round2.values()) <= 1.0, f"round 2: a waiter took {max(round2.values()):.2f} s after the release "
          "(the unlock message did not reach it)")
    finish(srv, prefix, holders, waiters)
    return (f"round 1 (release right after the kill): acquired within {max(round1.values()) * 1000:.0f} ms "
            f"(bound {bound1 * 1000:.0f}); round 2: subscriptions back after {back * 1000:.0f} ms, woken by "
            f"the unlock message within {max(round2.values()) * 1000:.0f} ms")


def case_sigstop(ctx: Ctx) -> str:
    """redis-server SIGSTOPped past the command timeout: typed timeouts, no panic, recovery."""
    opts = {"command_timeout_ms": 300, "retry_attempts": 0, "watchdog_ms": 5000}
    srv = ctx.server()
    workers = {s: ctx.worker(s, srv, f"{s}-stopped", **opts) for s in SURFACES}
    ctx.ready(*workers.values())
    for s, w in workers.items():
        w.call(f"acquire chaos:stop:{s} 0", "acquired")
    srv.signal(signal.SIGSTOP)
    stopped = time.monotonic()
    took = {}
    try:
        # Calls without side effects: a query, and an acquire of a lock another worker holds (if
        # Redis runs it after SIGCONT it finds that lock held and changes nothing).
        for s, w in workers.items():
            w.send(f"locked chaos:stop:{s}")
        for s, w in workers.items():
            t, e = w.expect("error", timeout=10)
            check(e["code"] == "TIMEOUT", f"{w.label}: locked gave {e}")
            took[s] = t - stopped
            check(took[s] < 3, f"{w.label}: the timeout took {took[s]:.1f} s (command timeout 0.3 s)")
        sent = time.monotonic()
        for s, w in workers.items():
            w.send(f"acquire chaos:stop:{NEXT[s]} 1000")
        for s, w in workers.items():
            t, e = w.expect("error", timeout=10)
            check(e["code"] == "TIMEOUT", f"{w.label}: acquire gave {e}")
            check(t - sent < 3, f"{w.label}: the timeout took {t - sent:.1f} s (command timeout 0.3 s)")
            took[s] = max(took[s], t - sent)
        # Stopped 1 s in all (the outage: past the command timeout in any case).
        time.sleep(max(0.0, 1.0 - (time.monotonic() - stopped)))
    finally:
        srv.signal(signal.SIGCONT)
    resumed = time.monotonic()
    paused = resumed - stopped
    for w in workers.values():
        check(w.proc.poll() is None, f"{w.label} died: exit {w.proc.returncode}{w.stderr_tail()}")
    # Everything recovers: each hold survived the pause (lease 5 s) and works as before.
    def holds(w: Worker, s: str) -> bool:
        w.send(f"held chaos:stop:{s}")
        _, e = w.reply(10)
        return e.get("event") == "held" and e.get("value") is True
    for s, w in workers.items():
        eventually(lambda: holds(w, s), 10, f"{w.label} to answer again", step=0.1)
    recovered = time.monotonic() - resumed
    for s, w in workers.items():  # the others' holds too: the timed-out acquires took nothing
        w.call(f"acquire chaos:stop:{NEXT[s]} 0", "not_acquired")
    for s, w in workers.items():
        check(w.call(f"release chaos:stop:{s}", "released")["free"] is True, f"{w.label}: release left it held")
    for s, w in workers.items():
        w.call(f"acquire chaos:stop:{s} 0", "acquired")
        w.call(f"release chaos:stop:{s}", "released")
    for w in workers.values():
        check(not w.lost, f"{w.label} lost a hold during a {paused:.1f} s pause (lease 5 s)")
    clean(srv, "chaos:stop", list(workers.values()))
    return (f"stopped {paused:.1f} s (command timeout 300 ms): every call failed TIMEOUT within "
            f"{max(took.values()) * 1000:.0f} ms, 4/4 workers alive, holds intact, answering again "
            f"{recovered * 1000:.0f} ms after SIGCONT (all four)")


def server_stats(srv: Server) -> Dict[str, Any]:
    """The server's expiry and eviction counts and memory figures, for a failure's message."""
    info = srv.conn().info()
    return {k: info.get(k) for k in ("expired_keys", "evicted_keys", "used_memory", "maxmemory",
                                     "maxmemory_policy")}


def case_cancel(ctx: Ctx) -> str:
    """10000 acquires cancelled at random moments (Rust futures dropped, asyncio tasks
    cancelled, Node AbortSignals): no lock key, no subscription, no renewal traffic after."""
    # A 3 s watchdog: renewals every second, two of them may come late before a lease lapses.
    # With 1 s (renewals 333 ms apart), CI's loaded cores let a lease lapse now and then (run
    # 25): a key expired, which this case must count as a leak only when nobody was told.
    watchdog, names, total = 3000, 8, 10000
    srv = ctx.server()
    expiring = ExpiredKeys(srv)
    surfaces = ("rust", "python", "node")
    workers = {s: ctx.worker(s, srv, f"{s}-cancel", watchdog_ms=watchdog) for s in surfaces}
    ctx.ready(*workers.values())
    shares = {s: total // 3 + (i < total % 3) for i, s in enumerate(surfaces)}
    start = time.monotonic()
    for s, w in workers.items():
        w.send(f"cancel chaos:cancel {names} {shares[s]} 8")
    done = {s: w.expect("cancel_done", timeout=150)[1] for s, w in workers.items()}
    took = time.monotonic() - start
    r = srv.conn()
    lock_names = [f"chaos:cancel:{k}" for k in range(names)]
    for s, w in workers.items():
        n = done[s]["acquired"] + done[s]["cancelled"]
        check(n == shares[s], f"{w.label}: {n} acquires, asked {shares[s]}")
        if not (done[s]["acquired"] > 0 and done[s]["cancelled"] > 0):
            # Seen once (2026-12-03, CI run 22): rust 0 acquired of 3334. What every surface
            # did and who held the locks then tell a leak (holds nobody releases) from a slow
            # worker.
            holders = {k: r.hgetall(k) for k in lock_names if r.exists(k)}
            stats = {x.label: x.call("stats", "stats") for x in workers.values()}
            raise Fail(f"{w.label}: {done[s]} tests nothing; all: {done}; holders now: {holders}; stats: {stats}")
    # Who holds what from the moment every acquire returned until the expiry check: the
    # holders of a key that then expires (seen under load, 2026-12-03 and 12-04, unexplained)
    # name the surface and owner that took it.
    watch = HolderWatch(r, lock_names, workers.values())
    # Seen once in about ten runs (2026-11-24): a key outlived 10 s with a 1 s watchdog.
    locks_gone(r, lock_names, workers.values())
    eventually(lambda: not r.pubsub_channels(), 10, "PUBSUB CHANNELS empty")

    def idle(w: Worker) -> bool:
        e = w.call("stats", "stats")
        return bool(e["tracked"] == 0 and e["channels"] == 0)
    for w in workers.values():
        eventually(lambda: idle(w), 10, f"{w.label} to track no hold and no channel", step=0.1)
    # No renewal traffic: script calls stay still over more than three renewal periods, while
    # every client is still alive.
    before = srv.evals()
    stats_before = {w.label: w.call("stats", "stats") for w in workers.values()}
    time.sleep(watchdog / 1000 * 1.2)
    after = srv.evals()
    # Seen once (2026-12-05, CI run on 8f2da2b, the evicting stand-in): 1 script call, source
    # unknown. Each worker's counters before and after (renewals, releases, errors) say whose.
    check(after == before, f"{after - before} script calls after everything was released (renewals?); "
          f"worker stats before: {stats_before}; after: { {w.label: w.call('stats', 'stats') for w in workers.values()} }")
    check(existing(r, lock_names) == 0 and not r.pubsub_channels(), "keys or channels came back")
    # Every hold was released or undone; a leaked one (an acquire that landed after its caller
    # gave up and was not undone) is renewed by nobody and expires: more than one lease has
    # passed, so it would show here.
    left = watch.stop()
    expired = expiring.lock_keys()
    expiring.stop()
    undone_late = ""
    if expired:
        # A key that expires was renewed by nobody: a leak (an acquire that landed after its
        # caller gave up, not undone), or a hold whose renewal came too late, which its holder is
        # told of (a lost event), or a give-back that failed: the undo of an acquire nobody was
        # handed, or of one whose reply was lost, could not be sent (its retries ran out under
        # load). The library says so in its log, and the hold, no longer renewed, ends with its
        # lease: nobody is told a hold is alive that is not. Seen twice under CI's load
        # (2026-12-03, run 25; 2026-12-04, run 35: one key each, a Python owner, no lost event).
        lost = {w.label: [e for _, e in w.lost_events] for w in workers.values() if w.lost_events}
        told = {k: [(w.label, line.strip()[:300]) for w in workers.values()
                    for line in w.log.read_text(errors="replace").splitlines()
                    if f"'{k}'" in line and ("could not undo" in line or "could not release what" in line)]
                for k in set(expired)}

        def explained(k: str) -> bool:
            # By the worker that held the key last, when its holder record still named it (a
            # hold given up untracked has none left), and once for every time the key expired:
            # one logged failure on a name does not excuse another worker's silent leak there.
            last = {o.get("worker", "") for o in (left.get(k) or {}).get("owners", {}).values()}
            known = {w for w in last if w and not w.startswith("pid ")}
            return len([1 for w, _ in told[k] if not known or w in known]) >= expired.count(k)
        if lost or not all(explained(k) for k in set(expired)):
            stats = {w.label: w.call("stats", "stats") for w in workers.values()}
            logs = "".join(w.stderr_tail() for w in workers.values())
            raise Fail(f"keys expired: {expired[:5]}: " + (
                f"holds lost to late renewals (watchdog {watchdog} ms): {lost}" if lost
                else "a cancelled acquire left a hold behind (no holder was told of a loss, no give-back "
                     "failure was logged)")
                + f"; last holders: { {k: left.get(k) for k in expired[:5]} }; stats: {stats}; "
                  f"server: {server_stats(srv)}{logs}")
        print(f"   give-backs that failed under load, each logged by the key's holder; their keys ended "
              f"with their lease: {told}", flush=True)
        undone_late = f"; {len(expired)} key(s) ended with their lease after a give-back failed (logged)"
    for w in workers.values():
        check(w.proc.poll() is None, f"{w.label} died")
    acquired = sum(d["acquired"] for d in done.values())
    cancelled = sum(d["cancelled"] for d in done.values())
    per = ", ".join(f"{s} {d['cancelled']}/{d['acquired'] + d['cancelled']}" for s, d in done.items())
    return (f"{total} acquires in {took:.1f} s, {cancelled} cancelled ({per}), {acquired} acquired and released; "
            f"after: 0 lock keys, 0 channels, 0 tracked holds, EVALSHA/EVAL calls still over "
            f"{watchdog * 1.2:.0f} ms{undone_late}")


# The bad-input rows each worker has (the case fails when a surface reports fewer or more).
BAD_INPUT_ROWS = {"c": 25, "python": 27, "node": 24}


def case_bad_input(ctx: Ctx) -> str:
    """A table of bad inputs across C, Python and Node: each gets its typed error, nothing
    crashes, and a lock held by another client is unchanged."""
    srv = ctx.server(password="chaos-secret")
    r = srv.conn()
    guard, wrongtype = "chaos:guard", "chaos:wrongtype"
    holder = ctx.worker("rust", srv, "rust-guard-holder")
    ctx.ready(holder)
    holder.call(f"acquire {guard}", "acquired")
    holder.call(f"acquire {guard}", "acquired")  # re-entered: count 2
    snapshot = r.hgetall(guard)
    check(len(snapshot) == 1 and list(snapshot.values()) == ["2"], f"guard is {snapshot}")
    r.set(wrongtype, "not a lock")
    wrong_pw = f"redis://:wrong-password@127.0.0.1:{srv.port}"
    dead_port = HeldPort()  # nothing listens there while held: closed with this frame
    dead = f"redis://127.0.0.1:{dead_port.port}"
    rows: List[Tuple[str, str, str, str, bool, str]] = []
    for surface in ("c", "python", "node"):
        w = ctx.worker(surface, srv, f"{surface}-bad")
        ctx.ready(w)
        w.send(f"bad {guard} {wrongtype} {wrong_pw} {dead}")
        while True:
            _, e = w.reply(60)
            if e.get("event") == "bad_done":
                break
            check(e.get("event") == "row", f"{w.label}: {e}{w.stderr_tail()}")
            problems = []
            if r.hgetall(guard) != snapshot:
                problems.append(f"guard changed to {r.hgetall(guard)}")
            if r.pttl(guard) <= 0:
                problems.append(f"guard TTL {r.pttl(guard)}")
            if r.get(wrongtype) != "not a lock" or r.ttl(wrongtype) != -1:
                problems.append("the wrong-type key changed")
            expected = e["expected"].replace("RLOCK_", "")
            got = e["got"].replace("RLOCK_", "")
            ok = got == expected and not problems
            rows.append((surface, e["input"], expected, got, ok, "; ".join(problems)))
            w.send("next")
        check(w.proc.poll() is None, f"{w.label} died")
        w.exit()
        check(w.proc.returncode == 0, f"{w.label} exited {w.proc.returncode}{w.stderr_tail()}")
    width = max(len(x[1]) for x in rows)
    print(f"    | surface | {'input':<{width}} | expected | got | result |")
    print(f"    |---------|{'-' * (width + 2)}|----------|-----|--------|")
    for surface, text, expected, got, ok, note in rows:
        extra = f" ({note})" if note else ""
        print(f"    | {surface:<7} | {text:<{width}} | {expected} | {got} | {'PASS' if ok else 'FAIL'}{extra} |")
    failed = [x for x in rows if not x[4]]
    counts = {s: sum(1 for x in rows if x[0] == s) for s in ("c", "python", "node")}
    check(counts == BAD_INPUT_ROWS, f"rows per surface {counts}, the workers have {BAD_INPUT_ROWS}")
    check(not failed, f"{len(failed)} of {len(rows)} rows failed")
    check(holder.call(f"release {guard}", "released")["free"] is False, "guard count was not 2")
    check(holder.call(f"release {guard}", "released")["free"] is True, "guard still held")
    return (f"{len(rows)} rows (C {counts['c']}, Python {counts['python']}, Node {counts['node']}): all typed as "
            "expected, no crash, the guard lock (count 2, TTL) and the wrong-type key unchanged after every row")


def case_mutex_family(ctx: Ctx) -> str:
    """Write locks, then fair locks: 8 processes (2 per surface), 8 names, 4000 sections each."""
    srv = ctx.server()
    parts = []
    for kind in ("write", "fair"):
        workers = [ctx.worker(s, srv, f"{s}-{kind}{i}") for s in SURFACES for i in range(2)]
        ctx.ready(*workers)
        total = 4000
        crossings, took = run_mx(srv, workers, f"{kind}@chaos:mx{kind}", 8, total)
        parts.append(f"{kind}: {total} sections in {took:.1f} s, 0 violations, counters exact, {crossings} hand-offs")
        for w in workers:
            w.call("exit", "bye")
    return "8 processes (2 per surface), 8 names each; " + "; ".join(parts) + "; no lock, queue or deadline key left"


def case_sigkill_family(ctx: Ctx) -> str:
    """Holders of write, read, fair and both non-reentrant locks killed with SIGKILL: freed within the
    watchdog timeout + 1 s."""
    watchdog = 1000
    srv = ctx.server()
    r = srv.conn()
    parts = []
    worst = 0.0
    for hk, wk in (("write", "read"), ("read", "write"), ("fair", "fair"), ("nr", "nr"), ("nrf", "nrf")):
        base = f"chaos:kill{hk}"
        holders = {s: ctx.worker(s, srv, f"{s}-{hk}-holder", watchdog_ms=watchdog) for s in SURFACES}
        waiters = {s: ctx.worker(NEXT[s], srv, f"{NEXT[s]}-{wk}-waits-{s}") for s in SURFACES}
        ctx.ready(*holders.values(), *waiters.values())
        for s, h in holders.items():
            h.call(f"acquire {hk}@{base}:{s}", "acquired")
        for s, w in waiters.items():
            w.send(f"acquire {wk}@{base}:{s}")
        eventually(lambda: all(srv.numsub(f"{wk}@{base}:{s}") == 1 for s in SURFACES), 20, f"every {wk} waiter subscribed")
        # Past one whole lease the holders' watchdogs still keep the locks.
        time.sleep(watchdog / 1000 * 1.5)
        for s in SURFACES:
            check(r.exists(f"{base}:{s}") == 1, f"{base}:{s} expired while its holder lived")
            check(not waiters[s].pending(), f"{waiters[s].label} acquired while the holder lived")
        took = kill_holders(holders, waiters)
        for s, w in waiters.items():
            check(w.call(f"release {wk}@{base}:{s}", "released")["free"] is True, f"{w.label}: release left it held")
        eventually(lambda: not r.keys(f"*{base}*"), 10, f"every {base} key gone (read-hold keys expire with their lease)")
        eventually(lambda: not r.pubsub_channels(), 10, "PUBSUB CHANNELS empty")
        worst = max(worst, *took.values())
        parts.append(f"{hk} holders -> {wk} waiters within {max(took.values()) * 1000:.0f} ms")
    bound = watchdog / 1000 + 1
    check(worst <= bound, f"a lock was freed {worst:.2f} s after its holder was killed (bound {bound:.1f} s)")
    return f"watchdog {watchdog} ms, each surface holding and waiting (bound {bound * 1000:.0f} ms): " + ", ".join(parts)


def case_fair_cancel(ctx: Ctx) -> str:
    """1000 fair-lock waits given up (cancelled, or C's wait running out): queue and deadline keys end empty."""
    srv = ctx.server()
    r = srv.conn()
    names, total = 8, 1800
    surfaces = ("rust", "python", "node")
    workers = {s: ctx.worker(s, srv, f"{s}-fcancel", watchdog_ms=1000) for s in surfaces}
    holder = ctx.worker("rust", srv, "rust-fholder")
    c = ctx.worker("c", srv, "c-fcancel")
    ctx.ready(*workers.values(), holder, c)
    # C calls cannot be cancelled: its 100 waits run out while another worker holds the lock.
    holder.call("acquire fair@chaos:fc:held", "acquired")
    for _ in range(100):
        c.call("acquire fair@chaos:fc:held 5", "not_acquired")
    check(not r.exists("redisson_lock_queue:{chaos:fc:held}"), "a C waiter whose wait ran out stayed queued")
    holder.call("release fair@chaos:fc:held", "released")
    shares = {s: total // 3 for s in surfaces}
    for s, w in workers.items():
        w.send(f"cancel fair@chaos:fc {names} {shares[s]} 8")
    done = {}
    for s, w in workers.items():
        done[s] = w.expect("cancel_done", timeout=150)[1]
        check(done[s]["acquired"] + done[s]["cancelled"] == shares[s], f"{w.label}: {done[s]}")
        check(done[s]["cancelled"] > 0, f"{w.label}: nothing cancelled")
    queues = [f"redisson_lock_queue:{{chaos:fc:{k}}}" for k in range(names)]
    deadlines = [f"redisson_lock_timeout:{{chaos:fc:{k}}}" for k in range(names)]
    try:
        eventually(lambda: existing(r, [*queues, *deadlines]) == 0, 10, "every queue and deadline key gone")
    except Fail as e:
        # What is left, so the next failure says whose give-up did not run. Seen twice under
        # load: hundreds of one client's places, which was an acquire whose reply was lost (a
        # stalled connection) leaving its place without a give-up step (fixed in core, see
        # core/tests/lost_reply.rs).
        now_ms = int(time.time() * 1000)
        left = {q: r.lrange(q, 0, -1) for q in queues if r.exists(q)}
        left.update({d: r.zrange(d, 0, -1, withscores=True) for d in deadlines if r.exists(d)})
        stats = {s: w.call("stats", "stats") for s, w in workers.items()}
        logs = "".join(w.stderr_tail() for w in workers.values())
        raise Fail(f"{e}; now {now_ms} ms; left: {left}; cancel_done: {done}; worker stats: {stats}{logs}") from None
    locks = [f"chaos:fc:{k}" for k in range(names)] + ["chaos:fc:held"]
    locks_gone(r, locks, [*workers.values(), holder])
    eventually(lambda: not r.pubsub_channels(), 10, "PUBSUB CHANNELS empty")
    cancelled = sum(d["cancelled"] for d in done.values())
    check(cancelled + 100 >= 1000, f"only {cancelled + 100} waits given up")
    per = ", ".join(f"{s} {d['cancelled']}/{d['acquired'] + d['cancelled']}" for s, d in done.items())
    return (f"{cancelled + 100} waits given up ({per} cancelled at random moments; C 100/100 waits of 5 ms run out): "
            "0 queue, deadline or lock keys and 0 channels left")


def case_fair_dead_waiter(ctx: Ctx) -> str:
    """A SIGKILLed fair-lock waiter holds up the one behind it until its own deadline, no longer."""
    wait_ms = 2000
    srv = ctx.server()
    r = srv.conn()
    # A 1 s lease: the first waiter's deadline is the holder's lease left plus one wait.
    holder = ctx.worker("rust", srv, "rust-fair-holder", fair_wait_ms=wait_ms, watchdog_ms=1000)
    dead = ctx.worker("python", srv, "python-fair-dead", fair_wait_ms=wait_ms)
    behind = ctx.worker("node", srv, "node-fair-behind", fair_wait_ms=wait_ms)
    ctx.ready(holder, dead, behind)
    queue, timeouts = "redisson_lock_queue:{chaos:fdead}", "redisson_lock_timeout:{chaos:fdead}"
    holder.call("acquire fair@chaos:fdead", "acquired")
    dead.send("acquire fair@chaos:fdead")
    eventually(lambda: r.llen(queue) == 1, 10, "the first waiter queued")
    behind.send("acquire fair@chaos:fdead")
    eventually(lambda: r.llen(queue) == 2, 10, "the second waiter queued")
    dead_owner = r.lindex(queue, 0)
    deadline_ms = float(r.zscore(timeouts, dead_owner))
    dead.kill(signal.SIGKILL)
    holder.call("release fair@chaos:fdead", "released")
    released_ms = time.time() * 1000
    behind.expect("acquired", timeout=(deadline_ms - released_ms) / 1000 + 15)
    got_ms = time.time() * 1000
    check(got_ms >= deadline_ms - 50, f"the waiter behind got the lock {deadline_ms - got_ms:.0f} ms before the dead one's deadline")
    late = got_ms - deadline_ms
    check(late <= 1500, f"the waiter behind got the lock {late:.0f} ms after the dead one's deadline (bound 1500 ms)")
    check(behind.call("release fair@chaos:fdead", "released")["free"] is True, "release left it held")
    eventually(lambda: r.exists(queue, timeouts, "chaos:fdead") == 0, 10, "queue, deadline and lock keys gone")
    return (f"fair_lock_wait_timeout {wait_ms} ms: the dead waiter's deadline was {deadline_ms - released_ms:.0f} ms "
            f"after the release; the waiter behind it got the lock {late:.0f} ms after that deadline")


def latches(r: redis.Redis) -> List[str]:
    """The request latch keys of semaphore acquires and releases (deleted in the background
    once their call returned)."""
    return [str(k) for k in r.keys("*rlock_permits_latch*")]


def case_sigkill_permits(ctx: Ctx) -> str:
    """Holders of permit-expirable semaphore permits killed with SIGKILL: the permits come back
    within the watchdog timeout + 1 s; a plain semaphore's permits do not come back."""
    watchdog, permits = 1000, len(SURFACES)
    srv = ctx.server()
    r = srv.conn()
    pes, sem = "chaos:permits", "chaos:sem"
    held = f"{{{pes}}}:timeout"
    r.set(pes, permits)
    # Each holder takes a permit without a lease (the watchdog renews it); each waiter waits for one.
    opts = {"watchdog_ms": watchdog}
    holders, waiters = holders_and_waiters(ctx, srv, f"pes@{pes}", opts, opts, shared=True)
    check(r.get(pes) == "0" and r.zcard(held) == permits, f"{pes}: count {r.get(pes)}, {r.zcard(held)} held")
    # Past one whole lease the holders' watchdogs still keep the permits.
    time.sleep(watchdog / 1000 * 1.5)
    check(r.zcard(held) == permits, f"{held} holds {r.zcard(held)} permits while their {permits} holders lived")
    check(r.get(pes) == "0", f"{pes} count {r.get(pes)} while every permit was held")
    for w in waiters.values():
        check(not w.pending(), f"{w.label} answered while every permit was held: {w.events.queue}")
    took = kill_holders(holders, waiters)
    worst, bound = max(took.values()), watchdog / 1000 + 1
    check(worst <= bound, f"a permit came back {worst:.2f} s after its holder was killed (bound {bound:.1f} s)")
    check(r.zcard(held) == permits, f"{r.zcard(held)} permits held after every waiter took one")
    for w in waiters.values():
        check(not w.lost, f"{w.label} was told it lost a permit: {w.lost}")
    # The held permits deleted behind the waiters' backs: each is told it lost its permit (the
    # watchdog's next renewal finds it gone), and its release fails LOST.
    r.delete(held)
    deleted = time.monotonic()
    lost = {}
    for s, w in waiters.items():
        eventually(lambda: any(n == pes for _, n in w.lost), bound + 5, f"{w.label}'s lost notification")
        lost[s] = min(t for t, n in w.lost if n == pes) - deleted
        e = w.call(f"release pes@{pes}", "error")
        check(e["code"] == "LOST", f"{w.label}: release of the lost permit gave {e}")
    check(max(lost.values()) <= bound, f"a waiter was told {max(lost.values()):.2f} s after the delete (bound {bound:.1f} s)")

    # A plain semaphore: no owners, no leases, so a killed holder's permit is gone for good
    # (documented). The waiters above, alive and holding nothing, try for one meanwhile.
    r.set(sem, permits)
    sem_holders = {s: ctx.worker(s, srv, f"{s}-sem-holder", watchdog_ms=watchdog) for s in SURFACES}
    ctx.ready(*sem_holders.values())
    for h in sem_holders.values():
        h.call(f"acquire sem@{sem}", "acquired")
    check(r.get(sem) == "0", f"{sem} count {r.get(sem)} with every permit taken")
    # The acquires' latches go in the background: gone before the kill, so what is left after
    # it is the kill's doing.
    eventually(lambda: not latches(r), 10, "the holders' acquire latches deleted")
    killed = time.monotonic()
    for h in sem_holders.values():
        h.kill(signal.SIGKILL)
    span = watchdog / 1000 * 2.2  # more than two watchdog timeouts
    for s, w in waiters.items():
        w.send(f"acquire sem@{sem} {int(span * 1000)}")
    counts = set()
    while time.monotonic() - killed < span:  # what is measured: the count over the span
        counts.add(r.get(sem))
        time.sleep(0.02)
    for w in waiters.values():
        w.expect("not_acquired", timeout=span + 10)
    watched = time.monotonic() - killed
    check(counts == {"0"}, f"{sem} count took the values {sorted(counts)} after its holders were killed")
    check(r.get(sem) == "0", f"{sem} count {r.get(sem)} {watched:.1f} s after its holders were killed")

    def left() -> List[str]:
        return sorted(str(k) for k in r.keys("*") if k not in (pes, sem) and not str(k).startswith("rlock:client:"))
    try:
        eventually(lambda: not left(), 10, "no key but the semaphores' own")
    except Fail:
        raise Fail(f"left behind: {left()}")
    eventually(lambda: not r.pubsub_channels(), 10, "PUBSUB CHANNELS empty")
    parts = ", ".join(f"{NEXT[s]} {took[s] * 1000:.0f} ms" for s in SURFACES)
    return (f"watchdog {watchdog} ms; permit-expirable semaphore of {permits}: all held past 1.5 leases, "
            f"holders SIGKILLed, every waiter had a permit within {worst * 1000:.0f} ms (bound {bound * 1000:.0f}; "
            f"waiters {parts}); their permits deleted: each told lost within {max(lost.values()) * 1000:.0f} ms, "
            f"releases LOST; plain semaphore of {permits}: the SIGKILLed holders' permits still gone "
            f"{watched:.1f} s later (count 0 throughout, 4 waits of {span * 1000:.0f} ms ran out), as documented; "
            "no key but the two semaphores left")


def case_cancel_permits(ctx: Ctx) -> str:
    """Semaphore and permit-expirable semaphore acquires cancelled at random moments (Rust
    futures, asyncio tasks, AbortSignals): counts exact, no latch or channel left."""
    permits, names, per_kind = 3, 2, 1500
    srv = ctx.server()
    expiring = ExpiredKeys(srv)
    r = srv.conn()
    surfaces = ("rust", "python", "node")
    # The default watchdog (30 s): a permit left behind stays visible far longer than the checks.
    workers = {s: ctx.worker(s, srv, f"{s}-pcancel") for s in surfaces}
    ctx.ready(*workers.values())
    bases = {"sem": "chaos:csem", "pes": "chaos:cpes"}
    for base in bases.values():
        for k in range(names):
            r.set(f"{base}:{k}", permits)
    shares = {s: per_kind // 3 + (i < per_kind % 3) for i, s in enumerate(surfaces)}
    done: Dict[Tuple[str, str], Dict[str, Any]] = {}
    start = time.monotonic()
    for kind, base in bases.items():
        for s, w in workers.items():
            w.send(f"cancel {kind}@{base} {names} {shares[s]} 8")
        for s, w in workers.items():
            d = done[(kind, s)] = w.expect("cancel_done", timeout=150)[1]
            check(d["acquired"] + d["cancelled"] == shares[s], f"{w.label} ({kind}): {d}, asked {shares[s]}")
            check(d["acquired"] > 0 and d["cancelled"] > 0, f"{w.label} ({kind}): {d} tests nothing")
    took = time.monotonic() - start

    def counts() -> List[Tuple[str, Any, int]]:
        return [(f"{b}:{k}", r.get(f"{b}:{k}"), r.zcard(f"{{{b}:{k}}}:timeout")) for b in bases.values()
                for k in range(names)]
    try:  # permits taken for a cancelled caller are given back in the background
        eventually(lambda: all(c == str(permits) and h == 0 for _, c, h in counts()), 10,
                   f"every semaphore back at {permits} available, 0 held")
    except Fail:
        raw = redis.Redis(port=srv.port, password=srv.password)  # permit ids are 16 raw bytes
        held = {f"{b}:{k}": [i.hex() for i in raw.zrange(f"{{{b}:{k}}}:timeout", 0, -1)]
                for b in bases.values() for k in range(names)}
        tracking = {w.label: w.call("stats", "stats")["tracked"] for w in workers.values()}
        raise Fail(f"counts (name, available, held): {counts()}; held ids {held}; "
                   f"permits each worker tracks {tracking}")
    try:
        eventually(lambda: not latches(r), 10, "every request latch deleted")
    except Fail:
        left = latches(r)
        by_name = {n: sum(1 for k in left if k.startswith(f"{{{n}}}")) for n in [c[0] for c in counts()]}
        raise Fail(f"{len(left)} latches left {by_name}, e.g. {left[:2]} (TTL {r.pttl(left[0]) if left else 0} ms)")
    eventually(lambda: not r.pubsub_channels(), 10, "PUBSUB CHANNELS empty")

    def idle(w: Worker) -> bool:
        e = w.call("stats", "stats")
        return bool(e["tracked"] == 0 and e["channels"] == 0)
    for w in workers.values():
        eventually(lambda: idle(w), 10, f"{w.label} to track no permit and no channel", step=0.1)
        check(w.proc.poll() is None, f"{w.label} died")
        check(not w.lost, f"{w.label} was told it lost a permit: {w.lost}")
    expired = expiring.lock_keys()
    expiring.stop()
    check(not expired, f"keys expired: {expired[:5]} (a latch left to its TTL?)")
    cancelled = sum(d["cancelled"] for d in done.values())
    check(cancelled >= 1000, f"only {cancelled} acquires cancelled")

    def per(kind: str) -> str:
        return ", ".join(f"{s} {done[(kind, s)]['cancelled']}/{shares[s]}" for s in surfaces)
    return (f"{2 * per_kind} acquires in {took:.1f} s on {names} semaphores of {permits} permits of each kind, "
            f"{cancelled} cancelled (semaphore: {per('sem')}; permit-expirable: {per('pes')}), the rest released; "
            f"after: every count {permits} available and 0 held, 0 latch keys (none expired), 0 channels, "
            "0 tracked permits")


def case_multi_deadlock(ctx: Ctx) -> str:
    """Multi-locks over the same two locks taken in opposite orders by 8 processes: no deadlock, no overlap."""
    srv = ctx.server()
    # Labels ending in 0 take x then y, those ending in 1 take y then x.
    workers = [ctx.worker(s, srv, f"{s}-multi{i}") for s in SURFACES for i in range(2)]
    ctx.ready(*workers)
    total, names = 2400, 2
    crossings, took = run_mx(srv, workers, "multi@chaos:dl", names, total)
    r = srv.conn()
    check(not existing(r, [f"chaos:dl:{k}:{m}" for k in range(names) for m in "xy"]), "a member lock is still held")
    return (f"8 processes (2 per surface: one taking x,y, one y,x), {names} multi-locks over 2 locks each, "
            f"{total} sections in {took:.1f} s ({total / took:.0f}/s): 0 violations, counters exact, "
            f"{crossings} hand-offs between surfaces, no member lock left")


CASES: List[Tuple[str, float, Callable[[Ctx], str]]] = [
    ("mutex", 300, case_mutex),
    ("sigkill", 60, case_sigkill),
    ("restart", 90, case_restart),
    ("restart-kept", 90, case_restart_kept),
    ("pubsub-kill", 90, case_pubsub_kill),
    ("sigstop", 60, case_sigstop),
    ("cancel", 200, case_cancel),
    ("bad-input", 180, case_bad_input),
    ("mutex-family", 300, case_mutex_family),
    ("sigkill-family", 90, case_sigkill_family),
    ("fair-cancel", 200, case_fair_cancel),
    ("fair-dead-waiter", 90, case_fair_dead_waiter),
    ("sigkill-permits", 90, case_sigkill_permits),
    ("cancel-permits", 200, case_cancel_permits),
    ("multi-deadlock", 180, case_multi_deadlock),
    *red_lock.CASES,
]


def main(argv: List[str]) -> int:
    wanted = argv[1:] or [c[0] for c in CASES]
    unknown = set(wanted) - {c[0] for c in CASES}
    if unknown:
        print(f"unknown case(s): {', '.join(sorted(unknown))}; cases: {', '.join(c[0] for c in CASES)}")
        return 2
    for path in (worker_command("rust")[0], worker_command("c")[0], ROOT / "bindings-node/index.js"):
        if not Path(path).exists():
            print(f"missing {path}: run 'make chaos'")
            return 2

    def on_alarm(signum: int, frame: Any) -> None:
        raise CaseTimeout()
    signal.signal(signal.SIGALRM, on_alarm)
    # Stopped from outside (timeout(1), CI): unwind through the cleanup below.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    results = []
    suite_start = time.monotonic()
    for name, limit, fn in CASES:
        if name not in wanted:
            continue
        print(f"== {name}: {(fn.__doc__ or '').strip().splitlines()[0]}", flush=True)
        tmp = Path(tempfile.mkdtemp(prefix=f"rlock-chaos-{name}-"))
        ctx = Ctx(tmp)
        start = time.monotonic()
        ok, detail = False, ""
        try:
            signal.setitimer(signal.ITIMER_REAL, limit)
            try:
                detail = fn(ctx)
                ok = True
            except CaseTimeout:
                detail = f"did not finish within its {limit:.0f} s bound"
            except Fail as e:
                detail = str(e)
            except Exception:
                detail = "driver error: " + traceback.format_exc()
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            panics = [w.label for w in ctx.workers if w.panicked()]
            if panics:
                ok, detail = False, f"{detail}; panic in {', '.join(panics)}"
            if not ok:
                detail += "".join(w.stderr_tail() for w in ctx.workers)
        finally:
            # Every process this case started stops here, whatever happened (also on SIGTERM).
            ctx.cleanup()
            shutil.rmtree(tmp, ignore_errors=True)
        secs = time.monotonic() - start
        print(f"{'PASS' if ok else 'FAIL'} {name} ({secs:.1f} s): {detail}", flush=True)
        results.append((name, ok, secs, detail.splitlines()[0] if detail else ""))
    total = time.monotonic() - suite_start
    print()
    print("| case | result | time | numbers |")
    print("|---|---|---|---|")
    for name, ok, secs, detail in results:
        print(f"| {name} | {'PASS' if ok else 'FAIL'} | {secs:.1f} s | {detail} |")
    passed = sum(1 for r in results if r[1])
    print(f"\nchaos: {len(results)} cases in {total:.0f} s")
    print(f"{passed} passed, {len(results) - passed} failed")
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))

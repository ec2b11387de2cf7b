"""`make netfaults`' Sentinel scenarios (tests/netfaults/run.py runs them): a failover after the
replica was cut off (replica sync off, then on) and a paused primary, on a Sentinel set from
rlock-testbed, with every surface's workers and a Redisson worker."""

from __future__ import annotations

import time
from typing import Any, Callable, Dict, List, Tuple

import redis

from harness import NEXT, SURFACES, Ctx, Testbed, Worker, check, eventually
from history import FencedStore, History, Hold, write


def sentinel_set(*args: str) -> Testbed:
    """A master, one replica and three sentinels (down after 1 s) from rlock-testbed."""
    return Testbed("sentinel", *args)


def ports_of(tb: Testbed) -> Dict[str, int]:
    return {n["name"]: int(n["port"]) for n in tb.info["nodes"]}


def every_sentinel_reports(tb: Testbed, port: int) -> bool:
    """Whether every sentinel names `port` as the master."""
    for name, p in ports_of(tb).items():
        if name.startswith("sentinel"):
            try:
                addr = redis.Redis(port=p, socket_timeout=1).execute_command(
                    "SENTINEL", "get-master-addr-by-name", "mymaster")
                if int(addr[1]) != port:
                    return False
            except (redis.RedisError, OSError, TypeError, IndexError):
                return False
    return True


def holders_of(ctx: Ctx, tb: Testbed, surfaces: Tuple[str, ...], tag: str, **options: Any) -> List[Worker]:
    """One worker per surface on the Sentinel set, ready."""
    holders = [ctx.worker_at(surface, tb.url, f"{surface}-{tag}", **options) for surface in surfaces]
    ctx.ready(*holders)
    return holders


def take_each(holders: List[Worker], key_of: Callable[[Worker], str], store: FencedStore,
              replica: redis.Redis) -> Dict[str, Tuple[Worker, int, float]]:
    """Each holder takes the fenced lock `key_of(holder)` and writes with its token; returns
    key -> (holder, token, when), once every hold is on the replica too."""
    taken: Dict[str, Tuple[Worker, int, float]] = {}
    for w in holders:
        key = key_of(w)
        w.send(f"acquire fenced@{key}")
        t, got = w.expect("acquired")
        taken[key] = (w, got["token"], t)
        check(write(w, f"fenced@{key}", store), f"{w.label}: write refused")
    eventually(lambda: all(replica.exists(k) for k in taken), 10, "the holds on the replica")
    return taken


def try_take(w: Worker, spec: str) -> Tuple[float, Dict[str, Any]]:
    """One try (no wait) at `spec`, and when its answer came; a worker whose first call after a
    switch fails retries once."""
    w.send(f"acquire {spec} 0")
    t, got = w.reply(20)
    if got.get("code") in ("CONNECTION", "TIMEOUT"):
        w.send(f"acquire {spec} 0")
        t, got = w.reply(20)
    return t, got


def failover(ctx: Ctx, tox: Any, store: FencedStore) -> str:
    """A primary partitioned from its replica, then failed over: lost holds and tokens, counted with replica sync off and on."""
    counts = []
    for sync in (0, 1):
        tb = sentinel_set("--replication-proxy")
        try:
            ports = ports_of(tb)
            replica = redis.Redis(port=ports["replica0"], decode_responses=True)
            # Redisson beside rlock's surfaces: its replica check (checkLockSyncedSlaves) is its
            # replica sync.
            holders = holders_of(ctx, tb, (*SURFACES, "redisson"), f"fo{sync}", replica_sync=sync,
                                 command_timeout_ms=2000)
            h = History(f"failover-sync-{'on' if sync else 'off'}")
            # Before the partition: one fenced lock each, on the replica too.
            taken = take_each(holders, lambda w: f"nf:fo{sync}:{w.surface}:before", store, replica)
            cut = time.monotonic()
            tb.command("cut-replication on")
            refused: Dict[str, int] = {}
            # During the partition: one more each, which the replica never gets.
            for w in holders:
                key = f"nf:fo{sync}:{w.surface}:during"
                w.send(f"acquire fenced@{key} 3000")
                t, got = w.reply(30)
                if got.get("event") == "acquired":
                    taken[key] = (w, got["token"], t)
                    check(write(w, f"fenced@{key}", store), f"{w.label}: write refused")
                else:
                    # No replica acknowledged within the wait: undone, then not acquired (or
                    # TIMEOUT when the wait ended inside a try). Redisson throws instead
                    # ("None of slaves were synced", a RedisException).
                    check(got.get("event") == "not_acquired" or got.get("code") == "TIMEOUT"
                          or (w.surface == "redisson" and got.get("event") == "error"),
                          f"{w.label} during the partition: {got}")
                    refused[w.surface] = refused.get(w.surface, 0) + 1
            tb.kill("master")
            eventually(lambda: every_sentinel_reports(tb, ports["replica0"]), 30, "the replica promoted")
            failed_over = time.monotonic()
            h.faults.append((cut, failed_over, "partition + failover"))
            # Other owners, on the new master: every key they can take was lost by its holder.
            lost: Dict[str, int] = {}
            back: Dict[str, int] = {}
            for key, (w, token, t) in sorted(taken.items()):
                nxt = NEXT.get(w.surface, "rust")
                other = ctx.worker_at(nxt, tb.url, f"{nxt}-fo{sync}-{w.surface}-{key.rsplit(':', 1)[1]}")
                ctx.ready(other)
                t_other, got = try_take(other, f"fenced@{key}")
                h.holds.append(Hold(w.label, key, token, t, t_other))
                if got.get("event") == "acquired":
                    lost[w.surface] = lost.get(w.surface, 0) + 1
                    t2 = got["token"]
                    back[w.surface] = back.get(w.surface, 0) + (t2 <= token)
                    write(other, f"fenced@{key}", store)
                    h.holds.append(Hold(other.label, key, t2, t_other, time.monotonic()))
                    other.call(f"release fenced@{key}", "released")
                other.exit()
            h.record(store, f"{sum(lost.values())} holds lost, {sum(back.values())} tokens back")
            counts.append((sync, len(taken), lost, back, refused, failed_over - cut))
            if sync:
                # With replica sync, no acknowledged rlock hold can be lost to this failover.
                rl_lost = sum(n for s_, n in lost.items() if s_ in SURFACES)
                rl_back = sum(n for s_, n in back.items() if s_ in SURFACES)
                rl_refused = sum(n for s_, n in refused.items() if s_ in SURFACES)
                check(rl_lost == 0 and rl_back == 0, f"replica sync on: {rl_lost} rlock holds lost, {rl_back} tokens back")
                check(rl_refused == len(SURFACES), f"replica sync on: {rl_refused} of {len(SURFACES)} rlock acquires refused")
            for w in holders:
                w.exit()
        finally:
            tb.close()
    off, on = counts

    def per(d: Dict[str, int]) -> str:
        return f"{sum(d.get(x, 0) for x in SURFACES)} rlock, {d.get('redisson', 0)} Redisson"
    return (f"replica partitioned from the master, then the master killed and the replica promoted "
            f"(failover {off[5]:.1f} s / {on[5]:.1f} s after the cut); {len(SURFACES)} rlock surfaces and Redisson "
            f"3.52 each took a fenced lock before the cut and one during it. Replica sync off: of {off[1]} holds, "
            f"{per(off[2])} lost, fenced tokens back: {per(off[3])} (counted, no verdict). Replica sync on "
            f"(Redisson: checkLockSyncedSlaves): acquires during the cut refused: {per(on[4])}; of the {on[1]} "
            f"granted holds lost: {per(on[2])}; tokens back: {per(on[3])}")


def paused_primary(ctx: Ctx, tox: Any, store: FencedStore) -> str:
    """The master SIGSTOPped past the sentinels' down-after, then SIGCONT: the split brain, counted."""
    tb = sentinel_set()
    try:
        ports = ports_of(tb)
        holders = holders_of(ctx, tb, SURFACES, "pause", command_timeout_ms=1000, watchdog_ms=3000)
        h = History("paused-primary")
        replica = redis.Redis(port=ports["replica0"], decode_responses=True)
        held = take_each(holders, lambda w: f"nf:pause:{w.surface}", store, replica)
        paused = time.monotonic()
        tb.stop("master")
        eventually(lambda: every_sentinel_reports(tb, ports["replica0"]), 30, "the replica promoted")
        promoted = time.monotonic()
        # Another owner tries each lock on the new master while the old one is still stopped.
        overlaps = 0
        for key, (w, token, t) in sorted(held.items()):
            other = ctx.worker_at(NEXT[w.surface], tb.url, f"{NEXT[w.surface]}-pause-other")
            ctx.ready(other)
            t_other, got = try_take(other, f"fenced@{key}")
            if got.get("event") == "acquired":
                told = [e for e in w.lost_events if e[1].get("name") in (f"fenced@{key}", key)]
                end = told[0][0] if told else float("inf")
                h.holds.append(Hold(w.label, key, token, t, end, told[0][1].get("reason") if told else None))
                h.holds.append(Hold(other.label, key, got["token"], t_other, time.monotonic()))
                overlaps += not (told and end <= t_other)
                other.call(f"release fenced@{key}", "released")
            else:
                h.holds.append(Hold(w.label, key, token, t, time.monotonic()))
            other.exit()
        # Each client follows the sentinels (it asks one every second): once a take of a new
        # lock succeeds, it is on the new master (the old one is stopped and answers nothing).
        followed = []
        for w in holders:
            probe = f"fenced@nf:pause:{w.surface}:probe"

            def took(w: Worker = w, probe: str = probe) -> bool:
                return try_take(w, probe)[1].get("event") == "acquired"
            eventually(took, 15, f"{w.label} on the new master")
            followed.append(time.monotonic() - promoted)
            w.call(f"release {probe}", "released")
        tb.cont("master")
        resumed = time.monotonic()
        old = redis.Redis(port=ports["master"], decode_responses=True)
        new = redis.Redis(port=ports["replica0"], decode_responses=True)
        # While the old master still takes writes, each holder's client takes a new lock: it
        # must land on the new master (each client followed the sentinels during the pause).
        on_old = 0
        for w in holders:
            key = f"nf:pause:{w.surface}:after"
            w.call(f"acquire fenced@{key} 5000", "acquired")
            on_old += old.exists(key)
            check(new.exists(key) == 1, f"{w.label}: {key} is not on the new master")
            w.call(f"release fenced@{key}", "released")
        still_master = old.execute_command("ROLE")[0] == "master"

        def demoted() -> bool:
            try:
                return old.execute_command("ROLE")[0] in ("slave", "replica")
            except (redis.RedisError, OSError):
                return False
        eventually(demoted, 30, "the old master demoted to a replica")
        split = time.monotonic() - resumed
        h.faults.append((paused, resumed, "master paused"))
        n_told = sum(1 for w in holders if w.lost_events)
        verdict = h.record(store, f"{n_told} holders told lost")
        check(overlaps == 0, f"{overlaps} locks taken by another owner while the holder was not told")
        check(on_old == 0, f"{on_old} acquires after the SIGCONT landed on the old master")
        for w in holders:
            w.exit()
        return (f"master SIGSTOPped, replica promoted {promoted - paused:.1f} s later, then SIGCONT: the old master "
                f"stayed a master {split * 1000:.0f} ms before the sentinels demoted it (the split brain). Every "
                f"client had followed the sentinels (at most {max(followed):.1f} s after every sentinel named the "
                f"new master): {len(holders)} acquires made after the SIGCONT"
                f"{' while the old master still was one' if still_master else ''} all landed on the new master, "
                f"{on_old} on the old. {n_told} of {len(holders)} holders were told "
                f"their hold was lost (watchdog 3 s, renewals timing out during the pause); "
                f"{verdict['overlaps']} overlaps, none unannounced")
    finally:
        tb.close()

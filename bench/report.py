"""Turns bench/out/results.jsonl into the markdown tables of bench/README.md (stdout).

Ratios: rlock's uncontended pairs/s (Rust core and every surface) against the ceiling at the
same concurrency (redis-benchmark sending rlock's own acquire and release scripts, as many
requests in flight as there are owners, pipelined on one connection as rlock's one multiplexed
connection carries them); the Rust core also against the server-CPU ceiling; each peer
against rlock on the same surface (Python peers vs rlock's Python threads, Node peers vs rlock's
Node surface); Redisson (the Java client) against the Rust core rows it mirrors and, for the
reentrant lock, against rlock's C surface (threads, as Redisson's)."""
import sys

from results import (REDISSON_HANDOFFS, REDISSON_LATENCY, REDISSON_PAIRS, REDLOCK_SURFACES, SURFACES, Results, label,
                     peer_name, redisson_setup)

res = Results(sys.argv[1])
by, first, rate, handoff, pairs = res.by, res.first, res.rate, res.handoff, res.pairs
ceiling = res.ceiling("pipelined")
conns = res.ceiling("connections")
server = first("server_cpu")
OWNERS = sorted({r["owners"] for r in pairs} | set(ceiling))


def fmt(x):
    return f"{x:,.0f}"


out = []
p = out.append

m = first("machine")
if m:
    p(f"Run {m['date']} on {m['cpu']} ({m['cores']} cores, {m['mem_gib']} GiB), {m['os']}, "
      f"Redis {m['redis']}, loopback; load average at start {m['load']}.")
    p("")
    if m.get("short"):
        p("**Short run** (`BENCH_SHORT=1`, `make bench-short`): every figure scaled down to about a second "
          "(pairs runs, hand-offs, latency samples, the ceiling's requests, 1000 watchdog locks); it shows "
          "that each surface and peer runs, the numbers are not the published ones.")
        p("")

p("### Ceiling: redis-benchmark sending rlock's acquire and release scripts")
p("")
p("| requests in flight | pipelined on 1 connection: acquire / release req/s | **pair ceiling** | "
  "on N connections: acquire / release req/s | pairs/s |")
p("|---|---|---|---|---|")
for c in sorted(ceiling):
    r, k = ceiling[c], conns.get(c)
    kc = (f"{fmt(k['acquire_rps'])} / {fmt(k['release_rps'])} | {fmt(k['pairs_per_s'])}" if k else "(same) | ")
    p(f"| {c} | {fmt(r['acquire_rps'])} / {fmt(r['release_rps'])} | **{fmt(r['pairs_per_s'])} pairs/s** | {kc} |")
p("")
notes = []
if server:
    notes.append(f"Redis CPU per rlock pair inside its commands (INFO commandstats over the Rust pairs runs): "
                 f"{server['usec_per_pair']} us, so one Redis core serves at most "
                 f"**{fmt(server['ceiling_pairs_per_s'])} pairs/s** (server-CPU ceiling; Redis' reading, parsing "
                 f"and replying come on top, see \"Redis busy\" below the pairs table)")
ping = first("ping")
if ping:
    notes.append(f"PING round trip (redis-benchmark, 1 client): p50 {ping['p50_us']:.0f} us, p99 {ping['p99_us']:.0f} us "
                 f"({fmt(ping['rps'])} req/s)")
for n in notes:
    p(f"- {n}")
p("")

p("### Uncontended acquire+release pairs/s (ratio to the pair ceiling with as many requests in flight)")
p("")
p("| surface | " + " | ".join(f"{o} owner{'s' if o > 1 else ''}" for o in OWNERS) + " |")
p("|---|" + "---|" * len(OWNERS))
for s in SURFACES:
    cells = []
    for o in OWNERS:
        v = rate(s, o)
        c = ceiling.get(o)
        if v is None:
            cells.append("")
        elif c:
            cells.append(f"{fmt(v)} ({v / c['pairs_per_s']:.2f})")
        else:
            cells.append(fmt(v))
    if any(cells):
        p(f"| {label(s)} | " + " | ".join(cells) + " |")
if server:
    for s in ("rust", "rust (2 connections)"):
        cells = [f"{rate(s, o) / server['ceiling_pairs_per_s']:.2f}" if rate(s, o) else "" for o in OWNERS]
        if any(cells):
            p(f"| rlock {s} / server-CPU ceiling | " + " | ".join(cells) + " |")
# The blocking surfaces against the Rust core in the same run (issue 46's measure: threads that
# block in a call should scale as the event-loop surfaces do).
for s in ("c", "python-threads"):
    cells = [f"{rate(s, o) / rate('rust', o):.2f}" if rate(s, o) and rate("rust", o) else "" for o in OWNERS]
    if any(cells):
        p(f"| rlock {s} / rlock rust | " + " | ".join(cells) + " |")
for s in ("rust", "rust (2 connections)"):
    busy = [res.server_busy(s, o) for o in OWNERS]
    if any(b is not None for b in busy):
        p(f"| Redis busy during rlock {s} (its CPU / wall, 1.00 = its one core) | "
          + " | ".join("" if b is None else f"{b:.2f}" for b in busy) + " |")
p("")

handles = {r["surface"]: r for r in by("handle")}
if handles:
    parts = []
    if "c" in handles:
        parts.append(f"C `rlock_lock_new` + `rlock_lock_free` {handles['c']['new_free_ns']:.0f} ns")
    if "python" in handles:
        parts.append(f"Python `client.lock(name)` {handles['python']['new_ns']:.0f} ns")
    p("What a lock handle costs, made and dropped on one thread (nothing goes to Redis): "
      + "; ".join(parts) + ". The rows \"(handle per pair)\" make one for every pair.")
    p("")

obs = by("observability")
if obs:
    runs = "1 run each" if m and m.get("short") else "median of 3 alternating runs"
    p(f"### The cost of metrics, tracing and holder records (Rust core, {runs})")
    p("")
    p("| owners | on (default) pairs/s | off pairs/s | cost |")
    p("|---|---|---|---|")
    for r in obs:
        p(f"| {r['owners']} | {fmt(r['on_pairs_per_s'])} | {fmt(r['off_pairs_per_s'])} | {r['cost_pct']:.1f}% |")
    p("")

p("### Latency")
p("")
p("| surface | one pair, 1 owner, p50 / p99 | hand-off, 16 waiters, p50 / p99 |")
p("|---|---|---|")
lat = {r["surface"]: r for r in by("latency")}
for s in SURFACES:
    h = handoff(s)
    l = lat.get(s)
    if not (h or l):
        continue
    lc = f"{l['p50_us']:.0f} / {l['p99_us']:.0f} us" if l else ""
    hc = f"{h['p50_us']:.0f} / {h['p99_us']:.0f} us" if h else ""
    p(f"| {label(s)} | {lc} | {hc} |")
p("")

red_rows = [s for s in REDLOCK_SURFACES if any(r["surface"] == s for r in pairs)]
if any("RedLock" in s for s in red_rows):
    p("### RedLock over 3 independent servers (beside single-server locks)")
    p("")
    p("Three more private redis-servers on the same machine. rlock's RedLock (Rust core; Node surface, "
      "`redLock(name, clients)`) and the peer redlock 4 (Node, one ioredis connection per server, its "
      "defaults: retryDelay 200 ms) take the lock on all three at once and hold it with a majority; "
      "the single-server rows: rlock's plain lock on the first of those servers (Rust, same run), "
      "rlock's Node surface and redlock on the main server. Pairs: uncontended, each owner its own "
      "name; hand-off: 16 waiters on one name.")
    p("")
    red_owners = sorted({r["owners"] for r in pairs if r["surface"] in red_rows})
    p("| surface | " + " | ".join(f"{o} owner{'s' if o > 1 else ''} pairs/s" for o in red_owners)
      + " | hand-off, 16 waiters, p50 / p99 |")
    p("|---|" + "---|" * (len(red_owners) + 1))
    for s in red_rows:
        cells = [fmt(rate(s, o)) if rate(s, o) is not None else "" for o in red_owners]
        h = handoff(s)
        hc = f"{h['p50_us']:.0f} / {h['p99_us']:.0f} us" if h else ""
        p(f"| {label(s)} | " + " | ".join(cells) + f" | {hc} |")
    p("")

redisson = first("redisson")
if redisson:
    p(f"### rlock beside Redisson {redisson['version']} (same server, same run; ratio: Redisson / rlock)")
    p("")
    pools = (f"*defaults*: Redisson's configuration unchanged (a connection pool of "
             f"{redisson['connection_pool_defaults']}, {redisson['min_idle']} connections kept idle, "
             f"{redisson['netty_threads']} Netty threads); ")
    p(f"rlock: the Rust core (one multiplexed connection, tasks on one current-thread runtime) and the C "
      f"surface (librlock, one thread per owner; its bench runs 1, 16, 64 and 256 owners). Redisson: Java "
      f"{redisson['java']}; {pools}*tuned*: the connection pool sized for the largest owner count "
      f"({redisson['connection_pool_tuned']}), nothing else changed. *threads*: one platform thread per owner, "
      f"`lock()` / `unlock()`; *async*: each owner an explicit thread id and a chain of `lockAsync(id)` / "
      f"`unlockAsync(id)` calls made by the previous call's completion, on Redisson's own Netty threads. "
      f"The lock family and the semaphores run tuned with threads. Pairs/s: a ratio above 1 is Redisson "
      f"faster; latencies: above 1 is Redisson slower. An empty cell: no such figure in this run.")
    p("")
    p("| figure | Redisson configuration, API | Redisson | rlock Rust | Redisson / rlock Rust | rlock C | Redisson / rlock C |")
    p("|---|---|---|---|---|---|---|")

    def ratio(a, b):
        return f"{a / b:.2f}" if a is not None and b else ""

    def num(x):
        return fmt(x) if x is not None else ""

    def us(r):
        return f"{r['p50_us']:.0f} / {r['p99_us']:.0f} us" if r else ""

    def us_ratio(a, b):
        return f"{ratio(b['p50_us'], a['p50_us'])} / {ratio(b['p99_us'], a['p99_us'])}" if a and b else ""

    def row(what, theirs, b, rust, c, ratio_of, cell):
        p(f"| {what} | {redisson_setup(theirs)} | {cell(b)} | {cell(rust)} | {ratio_of(rust, b)} | "
          f"{cell(c)} | {ratio_of(c, b)} |")

    for what, mine, c_surface, theirs_all in REDISSON_PAIRS:
        for o in sorted({r["owners"] for r in pairs if r["surface"] in theirs_all}):
            if "read" in what:
                who = f"reader{'s' if o > 1 else ''} on one name"
            elif "semaphore" in what:
                who = f"owners on one semaphore of {o} permits"
            else:
                who = f"owner{'s' if o > 1 else ''}"
            for theirs in theirs_all:
                b = rate(theirs, o)
                if b is None:
                    continue
                row(f"{what} pairs/s, {o} {who}", theirs, b, rate(mine, o), rate(c_surface, o) if c_surface else None,
                    lambda a, b: ratio(b, a), num)
    a, b = lat.get("rust"), lat.get(REDISSON_LATENCY)
    if b:
        row("one pair latency, 1 owner, p50 / p99", REDISSON_LATENCY, b, a, lat.get("c"), us_ratio, us)
    for what, mine, c_surface, theirs_all in REDISSON_HANDOFFS:
        for theirs in theirs_all:
            b = handoff(theirs)
            if b:
                row(f"{what} hand-off, 16 waiters, p50 / p99", theirs, b, handoff(mine),
                    handoff(c_surface) if c_surface else None, us_ratio, us)
    p("")

peers = res.peers()
if peers:
    p("### Peers on the same server (ratio: peer / rlock on the same surface)")
    p("")
    peer_owners = sorted({r["owners"] for r in pairs if r["surface"] in peers})
    p("| peer | compared with | " + " | ".join(f"{o} owner{'s' if o > 1 else ''} pairs/s" for o in peer_owners)
      + " | hand-off p50 / p99 |")
    p("|---|---|" + "---|" * (len(peer_owners) + 1))
    for peer in peers:
        vs = res.compared_with(peer)
        cells = []
        for o in peer_owners:
            v, mine = rate(peer, o), rate(vs, o)
            if v is None:
                cells.append("")
            else:
                cells.append(f"{fmt(v)} ({v / mine:.2f})" if mine else fmt(v))
        h, mine = handoff(peer), handoff(vs)
        hc = ""
        if h:
            hc = f"{h['p50_us']:.0f} / {h['p99_us']:.0f} us"
            if mine and mine["p50_us"] and mine["p99_us"]:
                hc += f" ({h['p50_us'] / mine['p50_us']:.1f} / {h['p99_us'] / mine['p99_us']:.1f})"
        p(f"| {peer_name(peer)} | rlock {vs} | " + " | ".join(cells) + f" | {hc} |")
    p("")

wd = by("watchdog")
if wd:
    if "timeout_ms" in wd[0]:  # the short run's
        p(f"### Watchdog ({wd[0]['timeout_ms']} ms watchdog timeout: one renewal period every "
          f"{wd[0]['timeout_ms'] / 3:.0f} ms)")
    else:
        p("### Watchdog (3 s watchdog timeout: one renewal period per second)")
    p("")
    p("Names of distinct hash tags are renewed one call each (a script never spans tags, which proxies in "
      "front of sharded clusters require); names of one `{tag}` share calls of up to `renewal_batch_size`, "
      "as every renewal on one server did before.")
    p("")
    p("| locks held | names | renewal script calls per period | per 100 held locks | client CPU | resident memory per lock |")
    p("|---|---|---|---|---|---|")
    for r in wd:
        p(f"| {fmt(r['locks'])} | {r.get('names', 'distinct tags')} | {r['calls_per_period']} | {r['calls_per_100_locks']} "
          f"| {r['cpu_pct']}% of one core | {r['rss_bytes_per_lock']:.0f} B |")
    p("")

skipped = by("skipped")
if skipped:
    p("Skipped in this run: " + "; ".join(r["what"] for r in skipped) + ".")
    p("")

print("\n".join(out))

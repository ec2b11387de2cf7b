"""Plots bench/out/results.jsonl into a PNG: uncontended pairs/s by owner count per surface
(with the ceilings), and hand-off p50/p99 per surface and peer.
Usage: plot.py results.jsonl results.png"""
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from results import SURFACES, Results, is_peer, is_redisson, label, peer_name  # noqa: E402

res = Results(sys.argv[1])
COLORS = {
    "rust": "#b7410e",
    "rust (2 connections)": "#e08a5c",
    "c": "#555555",
    "node": "#3c873a",
    "python-threads": "#3572a5",
    "python-asyncio": "#7fb3e0",
    "peer redis-py Lock": "#9467bd",
    "peer python-redis-lock": "#e377c2",
    "peer redis-semaphore Mutex": "#bcbd22",
    "peer redlock": "#17becf",
    "peer hiredis SET NX lock": "#8c564b",
    "peer hiredis + rlock's scripts": "#7f7f7f",
    "redisson (defaults)": "#2d004b",
    "redisson (async, defaults)": "#f768a1",
    "redisson (tuned)": "#6a3d9a",
    "redisson (async, tuned)": "#ae017e",
    "rust (read lock, one name)": "#8c2d04",
    "redisson (read lock, one name)": "#a58cc8",
    "rust (write lock)": "#d95f02",
    "redisson (write lock)": "#7b68a6",
    "rust (fair lock)": "#f4a261",
    "redisson (fair lock)": "#b8a9d9",
    "rust (semaphore)": "#2a9d8f",
    "redisson (semaphore)": "#c5b0d5",
    "rust (permit semaphore)": "#264653",
    "redisson (permit semaphore)": "#8e7cc3",
}

fig, (left, right) = plt.subplots(1, 2, figsize=(17.5, 7.6), gridspec_kw={"width_ratios": [1, 1.3]})

# Left: pairs/s by owners.
pairs = res.pairs
names = SURFACES + sorted({r["surface"] for r in pairs} - set(SURFACES))
for s in names:
    pts = sorted((r["owners"], r["pairs_per_s"]) for r in pairs if r["surface"] == s)
    if not pts:
        continue
    peer = is_peer(s)
    left.plot([o for o, _ in pts], [v for _, v in pts], marker="o",
              linestyle="--" if peer else ":" if is_redisson(s) else "-",
              color=COLORS.get(s), label=label(s) + (" (peer)" if peer else ""), linewidth=1.6)
ceil = sorted((c, r["pairs_per_s"]) for c, r in res.ceiling("pipelined").items())
if ceil:
    left.plot([c for c, _ in ceil], [v for _, v in ceil], marker="s", color="black", linewidth=2.2,
              label="ceiling: redis-benchmark acquire+release, N pipelined on 1 connection")
conn = sorted((c, r["pairs_per_s"]) for c, r in res.ceiling("connections").items())
if conn:
    conn = [c for c in ceil if c[0] == 1] + conn
    left.plot([c for c, _ in conn], [v for _, v in conn], marker="s", color="gray", linewidth=1.4,
              linestyle="-.", label="redis-benchmark, N connections with 1 request each")
server = res.first("server_cpu")
if server:
    left.axhline(server["ceiling_pairs_per_s"], color="black", linestyle=":", linewidth=1.4,
                 label=f"server-CPU ceiling ({server['ceiling_pairs_per_s']:,.0f} pairs/s)")
left.set_xscale("log", base=2)
owners = sorted({r["owners"] for r in pairs} | {c for c, _ in ceil})
left.set_xticks(owners)
left.set_xticklabels([str(o) for o in owners])
left.set_xlabel("owners (each on its own lock name, one process)")
left.set_ylabel("acquire+release pairs per second")
left.set_title("Uncontended pairs/s")
left.grid(True, which="both", alpha=0.3)
left.set_ylim(bottom=0)
left.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v / 1000:.0f}k"))
left.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=2, frameon=False)

# Right: hand-off p50 / p99 bars.
hand = res.by("handoff")
hand.sort(key=lambda r: (is_peer(r["surface"]), names.index(r["surface"]) if r["surface"] in names else 99))
labels = [(peer_name(r["surface"]).replace(" ", "\n").replace("-lock", "-\nlock") + "\n(peer)") if is_peer(r["surface"])
          else label(r["surface"]).replace(" ", "\n", 1).replace("-", "-\n").replace(" (", "\n(") for r in hand]
x = range(len(hand))
w = 0.38
b50 = right.bar([i - w / 2 for i in x], [max(r["p50_us"], 1) for r in hand], w, label="p50",
                color=[COLORS.get(r["surface"], "gray") for r in hand])
b99 = right.bar([i + w / 2 for i in x], [max(r["p99_us"], 1) for r in hand], w, label="p99",
                color=[COLORS.get(r["surface"], "gray") for r in hand], alpha=0.45, hatch="//")
for bars in (b50, b99):
    for b in bars:
        h = b.get_height()
        right.annotate(f"{h:,.0f}", (b.get_x() + b.get_width() / 2, h), ha="center", va="bottom", fontsize=7)
right.axhline(1000, color="red", linestyle=":", linewidth=1.2, label="1 ms (target for rlock's p50)")
right.set_yscale("log")
right.set_ylim(bottom=10)
right.set_xticks(list(x))
right.set_xticklabels(labels, fontsize=7)
right.set_ylabel("microseconds (log scale)")
right.set_title("Hand-off: 16 waiters on one name, release call -> next owner's acquire returns")
right.title.set_fontsize(10)
right.grid(True, axis="y", which="both", alpha=0.3)
right.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3, frameon=False)

m = res.first("machine")
if m:
    fig.suptitle(f"rlock make bench, {m['date']}: {m['cpu']}, {m['cores']} cores, Redis {m['redis']}, loopback", fontsize=10)
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=110)

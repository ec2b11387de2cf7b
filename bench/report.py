"""Turns bench/out/results.jsonl into the markdown table of bench/README.md."""
import json
import sys

rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip().startswith("{")]
by = lambda name: [r for r in rows if r["bench"] == name]
ceiling = next((r["ceiling_pairs_per_s"] for r in by("server_cpu")), None)

print("| figure | value | ratio |")
print("|---|---|---|")
for r in by("server_cpu"):
    print(f"| Redis CPU per acquire+release pair | {r['usec_per_pair']} us | ceiling {r['ceiling_pairs_per_s']:.0f} pairs/s |")
for r in by("ceiling_acquire"):
    print(f"| redis-benchmark EVALSHA acquire, {r['clients']} clients | {float(r['rps']):.0f} req/s | |")
for r in by("ping"):
    print(f"| redis-benchmark PING, 1 client (csv) | {r['csv']} | |")
def rlock_rate(owners):
    # The rlock figure a peer is compared with: the Python threads surface at the same owners.
    return next((r["pairs_per_s"] for r in by("pairs") if r["surface"] == "python-threads" and r["owners"] == owners), None)

for r in by("pairs"):
    ratio = f"{r['pairs_per_s'] / ceiling:.2f} of ceiling" if ceiling else ""
    if r["surface"].startswith("peer"):
        mine = rlock_rate(r["owners"])
        ratio = f"rlock python-threads is {mine / r['pairs_per_s']:.1f}x" if mine else ""
    print(f"| {r['surface']} uncontended pairs/s, {r['owners']} owners | {r['pairs_per_s']:.0f} | {ratio} |")
for r in by("latency"):
    print(f"| {r['surface']} one pair latency p50 / p99 | {r['p50_us']:.0f} / {r['p99_us']:.0f} us | |")
for r in by("handoff"):
    print(f"| {r['surface']} hand-off, {r['waiters']} waiters, p50 / p99 | {r['p50_us']:.0f} / {r['p99_us']:.0f} us | |")
for r in by("watchdog"):
    print(f"| watchdog, {r['locks']} locks: renewal calls per period | {r['calls_per_period']} | {r['calls_per_100_locks']} per 100 locks |")
    print(f"| watchdog, {r['locks']} locks: client CPU / memory per lock | {r['cpu_pct']}% / {r['rss_bytes_per_lock']:.0f} B | |")

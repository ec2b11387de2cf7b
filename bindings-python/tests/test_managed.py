"""Behind the managed-endpoint stand-ins of rlock-testbed (docs/operations/managed-services.md):
a proxy in front of a sharded cluster (CROSSSLOT on anything spanning slots), twemproxy (no
pub/sub, no HELLO, no CLIENT; scripts routed by their first key), a server without WAIT,
WAITAOF, CONFIG and CLIENT, and a server that evicts (maxmemory, volatile-lru)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time
from typing import Iterator

import pytest
import redis

import rlock
from conftest import Testbed

WAITER = textwrap.dedent(
    """
    import sys, time, rlock
    url, name = sys.argv[1], sys.argv[2]
    client = rlock.Client(url)
    lock = client.lock(name)
    print("waiting", flush=True)
    lock.acquire()
    print("acquired", time.monotonic(), flush=True)
    lock.release()
    """
)


@pytest.fixture(scope="module", params=["proxy-endpoint", "twemproxy", "restricted", "evicting"])
def endpoint(request: pytest.FixtureRequest) -> Iterator[Testbed]:
    with Testbed(request.param) as t:
        yield t


def shards(t: Testbed) -> list:
    """Plain connections to the servers behind the endpoint (the data lives there)."""
    return [redis.Redis(port=n["port"]) for n in t.info["nodes"]]


def scripts_run(t: Testbed) -> int:
    """Scripts the servers behind the endpoint ran (EVALSHA and EVAL calls)."""
    stats = [s.info("commandstats") for s in shards(t)]
    return sum(st.get(c, {}).get("calls", 0) for st in stats for c in ("cmdstat_evalsha", "cmdstat_eval"))


def test_holds_of_many_names_stay_held(endpoint: Testbed) -> None:
    client = rlock.Client(endpoint.url, watchdog_timeout=1.5)
    # Only the evicting stand-in is known to evict (elsewhere: noeviction, or CONFIG refused).
    assert client.stats()["eviction_policy"] == ("volatile-lru" if endpoint.args[0] == "evicting" else None)
    lost = []
    client.on_lost(lambda e: lost.append(e))
    locks = [client.lock(f"py:managed:{i}") for i in range(6)]
    fenced = client.fenced_lock("py:managed:fenced")
    read = client.read_write_lock("py:managed:rw").read_lock()
    spin = client.spin_lock("py:managed:spin")
    permits = client.permit_expirable_semaphore("py:managed:pes")
    assert permits.try_set_permits(1)
    for lock in locks:
        assert lock.acquire()
    assert fenced.acquire() >= 1
    assert read.acquire() and spin.acquire()
    permit = permits.acquire()
    holds = client.tracked_holds()
    assert holds == 10
    before = client.stats()["renewals"]
    # Three watchdog periods (0.5 s each): every hold renewed three times over.
    deadline = time.monotonic() + 10
    while client.stats()["renewals"] < before + 3 * holds and not lost:
        assert time.monotonic() < deadline, client.stats()
        time.sleep(0.05)
    assert not lost, lost
    assert client.stats()["renewal_failures"] == 0
    other = rlock.Client(endpoint.url)
    for lock in locks:
        assert not other.lock(lock.name).acquire(blocking=False)
    assert not other.spin_lock(spin.name).acquire(blocking=False)
    for lock in locks:
        assert lock.release()
    assert fenced.release() and read.release() and spin.release()
    permits.release(permit)
    assert client.tracked_holds() == 0 and not lost
    # Every release latch is deleted, not left to its TTL.
    deadline = time.monotonic() + 5
    while any(s.keys("*_latch*") for s in shards(endpoint)):
        assert time.monotonic() < deadline, [s.keys("*_latch*") for s in shards(endpoint)]
        time.sleep(0.05)
    other.close()
    client.close()


def test_a_waiter_in_another_process_and_threads_on_a_counter(endpoint: Testbed) -> None:
    client = rlock.Client(endpoint.url)
    name = "py:managed:handoff"
    holder = client.lock(name)
    assert holder.acquire()
    tries = scripts_run(endpoint)
    proc = subprocess.Popen([sys.executable, "-c", WAITER, endpoint.url, name], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "waiting"
        # The waiter's tries reach the servers while the lock is held: its first, and the one
        # after it subscribed (or, on twemproxy, its polls).
        deadline = time.monotonic() + 10
        while scripts_run(endpoint) < tries + 2:
            assert time.monotonic() < deadline, "the waiter never tried"
            time.sleep(0.01)
        released = time.monotonic()
        assert holder.release()
        line = proc.stdout.readline().split()
        assert line and line[0] == "acquired", line
        # The holder's watchdog lease is 30 s: only a wake-up or a poll hands it over sooner.
        handoff = float(line[1]) - released
        assert handoff < 5, handoff
        print(f"{endpoint.args[0]}: hand-off to another process {handoff * 1000:.1f} ms")
        assert proc.wait(timeout=30) == 0
    finally:
        proc.kill()

    counter = "py:managed:counter"
    store = shards(endpoint)[0]
    store.set(counter, 0)
    errors = []

    def work(spin: bool) -> None:
        try:
            # Half of the threads through the spin lock of the same name: the same lock.
            name = "py:managed:counter-lock"
            lock = client.spin_lock(name) if spin else client.lock(name)
            for _ in range(25):
                with lock:
                    n = int(store.get(counter))
                    time.sleep(0.001)
                    store.set(counter, n + 1)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i % 2 == 1,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert int(store.get(counter)) == 100
    client.close()

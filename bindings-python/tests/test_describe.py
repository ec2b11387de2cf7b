"""Client.describe and Client.list: core's JSON shape, parsed (kinds, holders with their
records, waiters, permits, list with a pattern, bad input)."""

from __future__ import annotations

import os
import threading
import time

import pytest
import redis

import rlock
from conftest import wait_until


def test_describe_a_held_lock_and_its_holder(url: str, name: str) -> None:
    with rlock.Client(url, app_name="billing") as c:
        lock = c.lock(name)
        with lock, lock:
            wait_until(lambda: c.describe(name)["holders"][0]["record"] is not None, what="holder record")
            d = c.describe(name)
            assert d["kind"] == "lock" and d["name"] == name and d["redis_type"] == "hash"
            (h,) = d["holders"]
            assert h["count"] == 2 and h["mode"] is None
            assert h["owner"] == c._native.owner_name()
            record = h["record"]
            assert record is not None
            assert (record["app"], record["pid"]) == ("billing", os.getpid())
            assert h["held_for"] is not None and 0 <= h["held_for"] < 60.0
            assert d["ttl"] is not None and 0 < d["ttl"] <= 30.0  # float seconds
            assert h["since"] is not None and abs(h["since"] - time.time()) < 60.0  # a Unix time
        assert c.describe(name)["kind"] == "none"


def test_kinds_waiters_and_foreign_keys(client: rlock.Client, name: str, raw: redis.Redis) -> None:
    sem = client.semaphore(name + ":sem")
    assert sem.try_set_permits(1)
    assert sem.acquire()
    d = client.describe(name + ":sem")
    assert (d["kind"], d["available_permits"], d["waiters"]) == ("semaphore_or_latch", 0, 0)
    waiter = threading.Thread(target=lambda: sem.acquire(timeout=10.0) and sem.release())
    waiter.start()
    wait_until(lambda: client.describe(name + ":sem")["waiters"] == 1, what="a waiter subscribed")
    assert client.describe(name + ":sem")["kind"] == "semaphore"
    sem.release()
    waiter.join()

    raw.rpush(name + ":list", "x")
    d = client.describe(name + ":list")
    assert (d["kind"], d["redis_type"], d["holders"]) == ("other", "list", [])
    assert set(d) == {
        "name", "kind", "redis_type", "ttl", "now", "holders", "waiters", "channels", "queue",
        "queue_length", "token", "available_permits", "count", "permits", "permits_held", "notes",
    }

    pes = client.permit_expirable_semaphore(name + ":pes")
    assert pes.try_set_permits(2)
    permit = pes.acquire(lease=60.0)
    assert permit is not None
    d = client.describe(name + ":pes")
    assert d["kind"] == "permit_expirable_semaphore" and d["permits_held"] == 1
    assert d["permits"][0]["id"] == permit and d["permits"][0]["expires_in"] is not None
    assert 50.0 < d["permits"][0]["expires_in"] <= 60.0
    pes.release(permit)


def test_list_finds_names(client: rlock.Client, name: str) -> None:
    client.fenced_lock(name + ":a").acquire()
    client.read_write_lock(name + ":b").read_lock().acquire()
    found = client.list(name + ":*")
    assert found == [
        {"name": name + ":a", "kind": "fenced_lock"},
        {"name": name + ":b", "kind": "read_write_lock"},
    ]
    assert client.list(name + ":*", limit=1) == found[:1]
    assert client.list("no-such-name*") == []
    client.fenced_lock(name + ":a").release()
    client.read_write_lock(name + ":b").read_lock().release()


def test_bad_input_is_typed(client: rlock.Client) -> None:
    with pytest.raises(rlock.InvalidArgumentError):
        client.describe("")
    with pytest.raises(rlock.InvalidArgumentError):
        client.list(limit=0)

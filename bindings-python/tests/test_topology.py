"""Redis Cluster (and URL/option checks for Sentinel) through the Python surface."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
import redis

import rlock

from conftest import RedisCluster, wait_until


def test_a_cluster_url_locks_on_every_master(cluster: RedisCluster) -> None:
    with rlock.Client(cluster.url) as a, rlock.Client(cluster.url) as b:
        assert a.topology == "cluster"
        assert a.sharded_pubsub == cluster.answers_shardnumsub()  # as Redisson
        assert a.replica_sync  # on by default off a single server
        masters = set()
        for i in range(30):
            name = f"py-cluster-{i}"
            lock = a.lock(name)
            with lock:
                with lock:  # reentrant
                    assert lock.hold_count() == 2
                    assert not b.lock(name).acquire(blocking=False)
                    owner_conn = cluster.owner_of(name)
                    masters.add(owner_conn.connection_pool.connection_kwargs["port"])
                    assert owner_conn.hget(name, a._native.owner_name()) == b"2"
            assert not lock.locked()
        assert len(masters) == 3


def test_a_waiter_on_a_cluster_wakes_by_pubsub(cluster: RedisCluster) -> None:
    with rlock.Client(cluster.url) as a, rlock.Client(cluster.url) as b:
        holder, waiter = a.lock("py-cluster-handoff"), b.lock("py-cluster-handoff")
        holder.acquire()  # 30 s lease: waking by expiry would take 30 s
        got = threading.Event()

        def wait() -> None:
            waiter.acquire()
            got.set()
            waiter.release()

        t = threading.Thread(target=wait)
        t.start()
        channel = "redisson_lock__channel:{py-cluster-handoff}"
        owner = cluster.owner_of("py-cluster-handoff")
        if b.sharded_pubsub:
            wait_until(lambda: owner.execute_command("PUBSUB", "SHARDNUMSUB", channel)[1] == 1,
                       what="the waiter subscribed")
        else:  # classic pub/sub (no sharded pub/sub here): on whichever node the client picked
            wait_until(lambda: any(m.execute_command("PUBSUB", "NUMSUB", channel)[1] == 1 for m in cluster.masters()),
                       what="the waiter subscribed")
        released = time.monotonic()
        holder.release()
        assert got.wait(5)
        assert time.monotonic() - released < 2
        t.join()


def test_asyncio_on_a_cluster(cluster: RedisCluster) -> None:
    async def main() -> None:
        with rlock.Client(cluster.url) as c:
            lock = c.lock("py-cluster-async")
            async with lock:
                assert lock.is_held()
            assert not lock.locked()

    asyncio.run(main())


def test_topology_and_options_on_one_server(url: str) -> None:
    with rlock.Client(url) as c:
        assert c.topology == "single"
        assert not c.sharded_pubsub
        assert not c.replica_sync
    # Forced on against a server without replicas: nothing is waited on, locking works.
    with rlock.Client(url, replica_sync=True, replica_sync_timeout=0.2) as c:
        assert c.replica_sync
        with c.lock("py-forced-sync"):
            pass


@pytest.mark.parametrize(
    "options, error",
    [
        ({"replica_sync_timeout": 0}, rlock.InvalidArgumentError),
        ({"replica_sync_timeout": -1.0}, rlock.InvalidArgumentError),
        ({"sharded_pubsub": "yes"}, TypeError),
        ({"replica_sync": 2}, TypeError),
        ({"tls_ca_file": 42}, TypeError),
        ({"command_connections": 0}, rlock.InvalidArgumentError),
        ({"command_connections": 9}, rlock.InvalidArgumentError),
        ({"command_connections": -1}, rlock.InvalidArgumentError),
        ({"command_connections": 1.5}, rlock.InvalidArgumentError),
        ({"command_connections": True}, TypeError),
        ({"thread_connections": 1025}, rlock.InvalidArgumentError),
        ({"thread_connections": -1}, rlock.InvalidArgumentError),
        ({"watchdog_timeout": "30"}, TypeError),
    ],
)
def test_bad_topology_options(url: str, options: dict, error: type) -> None:  # type: ignore[type-arg]
    with pytest.raises(error):
        rlock.Client(url, **options)


@pytest.mark.parametrize(
    "bad_url",
    [
        "redis+cluster://127.0.0.1:notaport/",
        "redis+cluster://127.0.0.1:7000/3",
        "redis+sentinel://127.0.0.1:26379/",
        "redis+sentinel://u:hunter2@127.0.0.1:26379/a/b/c",
    ],
)
def test_bad_topology_urls(bad_url: str) -> None:
    with pytest.raises(rlock.InvalidArgumentError) as e:
        rlock.Client(bad_url)
    assert "hunter2" not in str(e.value)


def test_a_missing_ca_file_is_an_invalid_argument() -> None:
    with pytest.raises(rlock.InvalidArgumentError, match="tls_ca_file"):
        rlock.Client("rediss://127.0.0.1:1/", tls_ca_file="/nonexistent/ca.pem")


def test_two_command_connections(url: str, raw: redis.Redis) -> None:
    # Connections the server accepted after the client with id `after` (ids only grow, so
    # connections of earlier tests closing meanwhile do not count).
    def newer(after: int) -> list[int]:
        return sorted(int(c["id"]) for c in raw.client_list() if int(c["id"]) > after)

    start = max(newer(0))
    with rlock.Client(url) as b:
        one = newer(start)  # commands + pub/sub
        with rlock.Client(url, command_connections=2) as a:
            assert len(newer(max(one))) == len(one) + 1, "one more connection for commands"
            lock = a.lock("py-two-conns")
            with lock, lock:
                assert lock.hold_count() == 2
                assert not b.lock("py-two-conns").acquire(blocking=False)
            assert not lock.locked()


def thread_links(raw: redis.Redis) -> set[int]:
    """The ids of the server's connections that are threads' own (rlock names them). Earlier
    tests' clients may still be closing theirs, so callers count new ids, never totals."""
    return {int(c["id"]) for c in raw.client_list() if c.get("name") == "rlock-thread"}


@pytest.mark.parametrize("cap,expected", [(64, 2), (0, 0)])
def test_threads_making_sync_calls_get_connections_of_their_own(
    url: str, raw: redis.Redis, cap: int, expected: int
) -> None:
    # From a thread's second blocking call on, its commands go out on a connection of its own
    # (thread_connections: at most that many threads at once; 0: none). asyncio calls never.
    with rlock.Client(url, thread_connections=cap) as c:
        before = thread_links(raw)
        counter = [0]
        called, counted = threading.Barrier(3), threading.Barrier(3)

        def run() -> None:
            lock = c.lock("py-thread-links")
            for _ in range(50):
                with lock:
                    seen = counter[0]
                    time.sleep(0)
                    counter[0] = seen + 1
            called.wait()
            counted.wait()  # alive, with its connection, while counted

        threads = [threading.Thread(target=run) for _ in range(2)]
        for t in threads:
            t.start()
        called.wait()
        assert len(thread_links(raw) - before) == expected
        counted.wait()
        for t in threads:
            t.join()
        assert counter[0] == 100, "the lock stays exact"

        async def aio() -> None:
            lock = c.lock("py-thread-links-aio")
            for _ in range(3):
                await lock.acquire_async()
                await lock.release_async()

        links = thread_links(raw)
        asyncio.run(aio())
        assert not thread_links(raw) - links, "asyncio calls open no thread connection"

"""Bad input raises the right typed exception and changes nothing in Redis."""

from __future__ import annotations

import builtins

import pytest
import redis

import rlock
from conftest import HeldPort, Testbed


def test_exception_tree() -> None:
    assert issubclass(rlock.NotHeldError, rlock.RLockError)
    assert issubclass(rlock.NotHeldError, RuntimeError)
    assert issubclass(rlock.LockLostError, rlock.NotHeldError)
    assert issubclass(rlock.ConnectionError, rlock.RLockError)
    assert issubclass(rlock.ConnectionError, builtins.ConnectionError)
    assert issubclass(rlock.TimeoutError, rlock.RLockError)
    assert issubclass(rlock.TimeoutError, builtins.TimeoutError)
    assert issubclass(rlock.InvalidArgumentError, rlock.RLockError)
    assert issubclass(rlock.InvalidArgumentError, ValueError)
    assert issubclass(rlock.RedisError, rlock.RLockError)
    assert rlock.NotHeldError.__module__ == "rlock"


def lock_keys(raw: redis.Redis) -> list:
    """Every key but the holder records (which expire on their own) and the release latches of
    earlier tests' releases (which the latch task deletes in the background, up to 10 ms after a
    release or later under load: a snapshot could see some that are gone a moment after; bad
    input never releases, so it makes none)."""
    keys = (k.decode() for k in raw.keys("*"))
    return sorted(k for k in keys if not k.startswith(("rlock:client:", "redisson_unlock_latch:")))


def test_bad_names(client: rlock.Client, raw: redis.Redis) -> None:
    before = lock_keys(raw)
    with pytest.raises(TypeError):
        client.lock(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        client.lock(None)  # type: ignore[arg-type]
    with pytest.raises(rlock.InvalidArgumentError):
        client.lock("")
    with pytest.raises(rlock.InvalidArgumentError):
        client.lock("x" * (64 * 1024 + 1))
    assert lock_keys(raw) == before


def test_bad_leases_and_timeouts(client: rlock.Client, name: str, raw: redis.Redis) -> None:
    lock = client.lock(name)
    for lease in (-1.0, 0.0, 0.0001, float("nan"), float("inf"), 1e12):
        with pytest.raises(rlock.InvalidArgumentError):
            lock.acquire(lease=lease)
    with pytest.raises(TypeError):
        lock.acquire(lease="1")  # type: ignore[arg-type]
    with pytest.raises(rlock.InvalidArgumentError):
        lock.acquire(timeout=-0.5)
    assert raw.exists(name) == 0
    assert client.tracked_holds() == 0


def test_bad_async_arguments(client: rlock.Client, name: str, raw: redis.Redis) -> None:
    import asyncio

    lock = client.lock(name)

    async def main() -> None:
        with pytest.raises(rlock.InvalidArgumentError):
            await lock.acquire_async(lease=-1)
        with pytest.raises(rlock.InvalidArgumentError):
            await lock.acquire_async(timeout=-1)

    asyncio.run(main())
    assert raw.exists(name) == 0


def test_bad_urls_and_options(url: str) -> None:
    for bad in ("nonsense", "http://127.0.0.1:6379", "redis://127.0.0.1:notaport"):
        with pytest.raises(rlock.InvalidArgumentError):
            rlock.Client(bad)
    with pytest.raises(TypeError):
        rlock.Client(url, no_such_option=1)
    with pytest.raises(rlock.InvalidArgumentError):
        rlock.Client(url, watchdog_timeout=-1)
    with pytest.raises(rlock.InvalidArgumentError):
        rlock.Client(url, watchdog_timeout=0.001)


def test_unreachable_server_is_connection_error() -> None:
    with HeldPort() as dead, pytest.raises(rlock.ConnectionError) as info:  # nothing listens there
        rlock.Client(f"redis://127.0.0.1:{dead.port}", connect_timeout=2.0)
    assert isinstance(info.value, builtins.ConnectionError)


def test_key_of_wrong_type(client: rlock.Client, name: str, raw: redis.Redis) -> None:
    raw.set(name, "not a lock")
    lock = client.lock(name)
    with pytest.raises(rlock.RedisError):
        lock.acquire()
    with pytest.raises(rlock.RedisError):
        lock.acquire(blocking=False)
    with pytest.raises(rlock.RedisError):
        lock.force_unlock()
    with pytest.raises(rlock.RedisError):
        lock.is_held()
    assert raw.get(name) == b"not a lock"
    assert client.tracked_holds() == 0
    raw.delete(name)


def test_unresponsive_server_is_timeout_error(name: str) -> None:
    with Testbed("single") as server:
        with rlock.Client(server.url, command_timeout=0.3, retry_attempts=0) as c:
            lock = c.lock(name)
            server.stop()  # SIGSTOP: Redis stops answering
            try:
                with pytest.raises(rlock.TimeoutError) as info:
                    lock.locked()
                assert isinstance(info.value, builtins.TimeoutError)
            finally:
                server.cont()
            assert lock.locked() is False


def test_error_classes_and_options_follow_cores_lists() -> None:
    """Every core error kind has its exception class, and ClientOptions lists core's options."""
    from rlock import _errors, _native

    for kind, cls, code in _native.error_classes():
        assert issubclass(getattr(_errors, cls), rlock.RLockError), kind
        assert getattr(rlock, cls) is getattr(_errors, cls)
        assert getattr(_errors, cls).code == code, f"{cls}.code is not core's {code}"
    assert list(rlock.ClientOptions.__annotations__) == _native.option_names()


def test_unknown_option_is_a_type_error_naming_it(url: str) -> None:
    with pytest.raises(TypeError, match="watchdog_timout"):
        rlock.Client(url, watchdog_timout=1.0)  # type: ignore[call-arg]

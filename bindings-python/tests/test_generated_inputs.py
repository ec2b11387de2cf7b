"""Generated inputs (issue 45, item 1): Hypothesis draws names, durations, permit counts and
option values of every type, and each call either works end to end or raises its documented
error (``InvalidArgumentError``, a ``ValueError``; ``TypeError`` for a value of the wrong type;
``OverflowError`` for an integer past 64 bits), leaving Redis as it was. Derandomized: the same
examples every run, so a failure is a failure and not luck (the inputs it shrank to are printed)."""

from __future__ import annotations

from typing import Any, List

import redis
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import rlock
from rlock._options import OPTION_NAMES

SETTINGS = settings(
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=100,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
REFUSED = (rlock.InvalidArgumentError, TypeError, OverflowError)

# Every type a caller may pass where a number is asked for.
NUMBERS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.none(),
    st.booleans(),
    st.text(max_size=4),
)


def keys_of(raw: redis.Redis) -> List[str]:
    """Every key but holder records and release latches (which expire or go on their own)."""
    keys = (k.decode() for k in raw.keys("*"))
    return sorted(k for k in keys if not k.startswith(("rlock:client:", "redisson_unlock_latch:")))


# Besides what is drawn, each test runs examples of each outcome (a generator that drew only
# one kind of value would prove little).
@SETTINGS
@given(name=st.text(max_size=70))
@example(name="")
@example(name="orders{x}")
def test_any_name_locks_and_unlocks_or_is_refused(client: rlock.Client, raw: redis.Redis, name: str) -> None:
    before = keys_of(raw)
    try:
        lock = client.lock(name)
    except rlock.InvalidArgumentError:
        assert name == "", f"{name!r} refused"
        assert keys_of(raw) == before
        return
    assert lock.acquire(timeout=0), f"{name!r} not acquired"
    try:
        assert raw.exists(name) == 1, f"{name!r}: no key under the name"
    finally:
        assert lock.release()
    assert keys_of(raw) == before


@SETTINGS
@given(lease=NUMBERS, timeout=NUMBERS)
@example(lease=30.0, timeout=0)
@example(lease=-1, timeout=0)
def test_any_lease_and_timeout(client: rlock.Client, raw: redis.Redis, name: str, lease: Any, timeout: Any) -> None:
    lock = client.lock(name)
    try:
        acquired = lock.acquire(timeout=timeout, lease=lease)
    except REFUSED:
        assert raw.exists(name) == 0, f"lease={lease!r} timeout={timeout!r} refused, but the lock is taken"
        assert client.tracked_holds() == 0
        return
    assert acquired, f"a free lock not acquired with lease={lease!r} timeout={timeout!r}"
    if lease is None or lease >= 10:  # a shorter lease may end before the checks below
        assert raw.exists(name) == 1
        assert lock.release()
    else:
        lock.release()
        raw.delete(name)
    assert raw.exists(name) == 0


@SETTINGS
@given(set_to=st.integers(min_value=-(2**65), max_value=2**65), take=st.integers(min_value=-(2**65), max_value=2**65))
@example(set_to=5, take=2)
@example(set_to=5, take=6)
@example(set_to=5, take=2**64)
def test_any_permit_count(client: rlock.Client, raw: redis.Redis, name: str, set_to: int, take: int) -> None:
    sem = client.semaphore(name)
    try:
        was_set = sem.try_set_permits(set_to)
    except REFUSED:
        assert raw.exists(name) == 0, f"try_set_permits({set_to}) refused, but the count is set"
        return
    try:
        assert was_set and sem.available_permits() == set_to
        try:
            got = sem.acquire(take, timeout=0)
        except REFUSED:
            assert sem.available_permits() == set_to, f"acquire({take}) refused, but the count moved"
            return
        if got:
            assert 0 <= take <= set_to, f"acquire({take}) of {set_to} permits succeeded"
            assert sem.available_permits() == set_to - take
            sem.release(take)
        else:
            assert take > set_to, f"acquire({take}) of {set_to} permits failed"
        assert sem.available_permits() == set_to
    finally:
        raw.delete(name)


OPTION_VALUES = st.one_of(NUMBERS, st.text(max_size=12), st.lists(st.integers(), max_size=2))


@SETTINGS
@given(option=st.sampled_from(OPTION_NAMES + ("no_such_option",)), value=OPTION_VALUES)
@example(option="watchdog_timeout", value=30.0)
@example(option="watchdog_timeout", value=-1)
def test_any_option_value_connects_or_is_refused(url: str, option: str, value: Any) -> None:
    try:
        client = rlock.Client(url, **{option: value})
    except REFUSED:
        return
    except rlock.RLockError:
        return  # a valid value may still stop the connect (a 1 ns connect timeout): typed, then
    client.close()

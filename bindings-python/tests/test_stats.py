"""Client stats and the Prometheus text: figures that match what the test did."""

from __future__ import annotations

import threading

import pytest
import redis

import rlock
from rlock import Stats, StatsSummary
from conftest import wait_until


def test_stats_match_what_happened(url: str, name: str, raw: redis.Redis) -> None:
    with rlock.Client(url, app_name="py-stats") as c:
        assert c.stats()["eviction_policy"] is None  # the test server does not evict
        lock = c.lock(name)
        for _ in range(3):
            with lock:
                pass
        assert lock.acquire(blocking=False)  # free: acquired at once
        lock.release()
        # A contended acquire: another thread waits until the holder releases.
        lock.acquire()
        got = threading.Event()

        def waiter() -> None:
            with lock:
                got.set()

        def scripts_run() -> int:
            return int(raw.info("commandstats")["cmdstat_evalsha"]["calls"])

        before = scripts_run()
        t = threading.Thread(target=waiter)
        t.start()
        # Subscribed, and its retry after subscribing (a second acquire script) done: from then
        # on only the release message can wake it (released earlier, the retry takes the lock
        # and no message is waited for).
        wait_until(lambda: c.waited_channels() == 1, what="the waiter subscribed")
        wait_until(lambda: scripts_run() >= before + 2, what="the waiter's retry after subscribing")
        lock.release()
        t.join(10)
        assert got.is_set()
        with pytest.raises(rlock.NotHeldError):
            lock.release()

        s = c.stats()
        assert set(s) == set(Stats.__annotations__)
        assert set(s["wait"]) == set(StatsSummary.__annotations__)
        assert (s["acquires"], s["contended_acquires"], s["releases"]) == (6, 1, 6)
        assert s["wakeups"] == 1
        assert s["errors"]["not_held"] == 1
        assert set(s["errors"]) >= {"timeout", "lost", "not_held", "connection"}
        assert s["wait"]["count"] == 6 and s["hold"]["count"] == 6
        assert 0 < s["wait"]["p50"] <= s["wait"]["max"] < 10.0  # float seconds

        text = c.prometheus_text()
        assert 'rlock_acquires_total{app="py-stats"} 6\n' in text
        assert 'rlock_errors_total{app="py-stats",kind="not_held"} 1\n' in text
        assert "# TYPE rlock_wait_seconds histogram" in text


def test_stats_stay_zero_with_metrics_off(url: str, name: str) -> None:
    with rlock.Client(url, metrics=False, holder_record=False) as c:
        with c.lock(name):
            pass
        s = c.stats()
        assert s["acquires"] == 0 and s["wait"]["count"] == 0


def test_bad_metric_options_are_refused(url: str) -> None:
    with pytest.raises(TypeError):
        rlock.Client(url, metrics="yes")  # type: ignore[arg-type]
    with pytest.raises(rlock.InvalidArgumentError):
        rlock.Client(url, app_name="bad\nname")

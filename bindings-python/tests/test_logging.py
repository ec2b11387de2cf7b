"""Core's warnings reach Python's `logging`: logger `rlock` and its children, from rlock's own
threads through a forwarding thread (so the record comes a moment after the event)."""

from __future__ import annotations

import logging

import pytest

import rlock
from conftest import Testbed, wait_until


def test_a_core_warning_reaches_the_rlock_logger(caplog: pytest.LogCaptureFixture) -> None:
    # A server that may evict keys: core warns at connect (docs/operations/managed-services.md).
    with Testbed("evicting") as server, caplog.at_level(logging.INFO, logger="rlock"):
        client = rlock.Client(server.url)
        try:
            def warned() -> bool:
                return any("maxmemory-policy" in r.getMessage() for r in caplog.records)

            wait_until(warned, what="the eviction warning in the rlock logger")
            record = next(r for r in caplog.records if "maxmemory-policy" in r.getMessage())
            assert record.levelno == logging.WARNING
            assert record.name.startswith("rlock."), record.name
            assert "noeviction" in record.getMessage()
        finally:
            client.close()


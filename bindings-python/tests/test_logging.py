"""Core's warnings reach Python's `logging`: logger `rlock` and its children, from rlock's own
threads through a forwarding thread (so the record comes a moment after the event)."""

from __future__ import annotations

import logging

import pytest

import rlock
from conftest import Testbed, wait_until


def test_a_core_warning_reaches_the_rlock_logger(caplog: pytest.LogCaptureFixture) -> None:
    # A server that may evict keys: core warns at connect (docs/operations/managed-services.md).
    # A policy no other test uses: a message repeated within 30 s is passed on once, and the
    # port (which the warning names) may be an earlier test's.
    with Testbed("single", "--", "--maxmemory-policy", "volatile-ttl") as server, \
            caplog.at_level(logging.INFO, logger="rlock"):
        client = rlock.Client(server.url)
        try:
            def warned() -> bool:
                return any("maxmemory-policy" in r.getMessage() for r in caplog.records)

            wait_until(warned, what="the eviction warning in the rlock logger")
            record = next(r for r in caplog.records if "maxmemory-policy" in r.getMessage())
            assert record.levelno == logging.WARNING
            assert record.name.startswith("rlock."), record.name
            assert "volatile-ttl" in record.getMessage() and "noeviction" in record.getMessage()
        finally:
            client.close()



def test_a_forked_child_forwards_through_its_own_thread() -> None:
    import os
    import threading

    import redis

    with Testbed("single", "--", "--maxmemory-policy", "volatile-lfu") as server:
        # The parent's forwarding thread runs (this connect warned); a child has none of it.
        rlock.Client(server.url).close()
        redis.Redis(port=server.port).config_set("maxmemory-policy", "allkeys-lfu")
        pid = os.fork()
        if pid == 0:  # the child: exits 0 once its own connect's warning reached its logging
            code = 1
            try:
                seen = threading.Event()

                class Catch(logging.Handler):
                    def emit(self, record: logging.LogRecord) -> None:
                        if "allkeys-lfu" in record.getMessage():
                            seen.set()

                logging.getLogger("rlock").addHandler(Catch())
                rlock.Client(server.url).close()
                code = 0 if seen.wait(10) else 1
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, "the child's warning never reached its logging"


EXIT_RIGHT_AFTER_A_WARNING = """
import sys, rlock
rlock.Client(sys.argv[1])  # warns at connect (the server may evict keys); never closed
"""


def test_exit_right_after_a_warning_is_clean() -> None:
    # The record reaches the forwarding thread while the interpreter finalizes. A thread that
    # wanted the GIL then, with Rust frames on its stack, aborted the process (before 3.14
    # CPython ends such a thread with pthread_exit): the forked children of test_process.py's
    # fork test exited non-zero about 1 run in 20 with the forwarding threads before this one.
    import subprocess
    import sys

    with Testbed("single", "--", "--maxmemory-policy", "volatile-random") as server:
        for _ in range(40):
            proc = subprocess.run([sys.executable, "-c", EXIT_RIGHT_AFTER_A_WARNING, server.url],
                                  capture_output=True, text=True, timeout=60)
            assert proc.returncode == 0, proc.stderr[-2000:]

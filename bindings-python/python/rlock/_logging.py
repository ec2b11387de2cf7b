"""Forwards core's log records to Python's ``logging`` (see ``src/logging.rs``).

rlock's own threads queue each record and write a byte to a socket pair; one daemon thread per
process, ``rlock-logging``, waits in ``os.read`` on the other end and logs what it drains. It
waits with only CPython's frames on its stack, so an interpreter that ends its daemon threads at
exit (before 3.14 with ``pthread_exit``) ends it cleanly. A forked child starts its own with its
first client: the parent's thread is not in the child.
"""

from __future__ import annotations

import logging
import os
import threading

from . import _native

# The process whose thread runs (a forked child sees its parent's pid here and starts its own).
_started_in = -1
_starting = threading.Lock()


def _reset_in_child() -> None:
    global _starting
    # Another thread may have held it at fork(): the child's copy would stay held for good.
    _starting = threading.Lock()


os.register_at_fork(after_in_child=_reset_in_child)


def forward() -> None:
    """Starts this process's forwarding thread unless it runs (called by every new client)."""
    global _started_in
    pid = os.getpid()
    if _started_in == pid:
        return
    with _starting:
        if _started_in == pid:
            return
        fd = _native._log_fd()
        threading.Thread(target=_run, args=(fd,), name="rlock-logging", daemon=True).start()
        _started_in = pid


def _run(fd: int) -> None:
    while True:
        try:
            if not os.read(fd, 4096):
                return
        except OSError:
            return
        for level, name, message in _native._drain_logs():
            logging.getLogger(name).log(level, message)

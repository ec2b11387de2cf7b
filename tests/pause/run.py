"""The pause test, on every surface (issue 42): a holder process is SIGSTOPped past its lease
while another owner takes the lock; on SIGCONT its first look at ``is_lost`` must say true (local
time, not whether the watchdog's timer task ran first), ``valid_for`` must be 0, its lost
callback must run, and its release must be refused as lost, leaving the other owner's hold alone.

Each surface's holder (core/examples/pause_holder.rs, holder.py, holder.js, holder.c) speaks the
same protocol on its stdin and stdout:
  holder -> "held"          it holds NAME with a 1.5 s watchdog lease and listens for its loss;
  parent -> "arm"           the holder answers "armed" and looks at is_lost in a busy loop;
  parent:  SIGSTOP, waits until another owner has the lock and LEASE + 0.5 s have passed, SIGCONT;
  holder -> one JSON line   {"first", "valid_for_ms", "callback_ms", "release"}: its first look
                            after the pause (a gap of over 1 s between two looks), valid_for then,
                            how long after that look the callback ran (-1: not within 5 s), and
                            what its release said ("lost" expected).

    python tests/pause/run.py [SURFACE ...]     (rust python node c; all by default)
    PAUSE_RUNS=20 python tests/pause/run.py     (runs per surface; 3 by default)
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Dict, List

import rlock

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from testbed import Testbed  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
LEASE = 1.5

HOLDERS: Dict[str, List[str]] = {
    "rust": [str(ROOT / "target/debug/examples/pause_holder")],
    "python": [sys.executable, str(ROOT / "tests/pause/holder.py")],
    "node": ["node", str(ROOT / "tests/pause/holder.js")],
    "c": [str(ROOT / "build/pause/holder-c")],
}


def read_line(out: IO[str], limit: float, what: str) -> str:
    """The holder's next line, within `limit` seconds."""
    ready, _, _ = select.select([out], [], [], limit)
    line = out.readline() if ready else ""
    if not line:
        raise AssertionError(f"the holder said nothing {what} within {limit} s")
    return line.strip()


def one_run(surface: str, client: rlock.Client, url: str, name: str) -> Dict[str, object]:
    holder = subprocess.Popen(
        [*HOLDERS[surface], url, name], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
    )
    assert holder.stdin is not None and holder.stdout is not None
    try:
        assert read_line(holder.stdout, 30, "after starting") == "held"
        other = client.lock(name)
        assert not other.acquire(blocking=False), "the holder does not hold the lock"
        holder.stdin.write("arm\n")
        holder.stdin.flush()
        assert read_line(holder.stdout, 10, "after arm") == "armed"
        os.kill(holder.pid, signal.SIGSTOP)
        stopped = time.monotonic()
        try:
            # Its lease runs out while it is stopped: no renewal can be sent.
            assert other.acquire(timeout=10), "the other owner never got the lock"
            # The pause is a parameter of the test: past the lease, and past the holder's gap.
            time.sleep(max(0.0, stopped + LEASE + 0.5 - time.monotonic()))
        finally:
            os.kill(holder.pid, signal.SIGCONT)
        report = json.loads(read_line(holder.stdout, 30, "after the pause"))
        assert holder.wait(timeout=30) == 0, f"the holder exited {holder.returncode}"
        assert other.is_held(), "the paused holder's release freed the other owner's lock"
        assert other.release()
        return report
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()


def main() -> int:
    surfaces = sys.argv[1:] or list(HOLDERS)
    runs = int(os.environ.get("PAUSE_RUNS", "3"))
    failed = 0
    with Testbed("single") as tb, rlock.Client(tb.url) as client:
        for surface in surfaces:
            for i in range(runs):
                report = one_run(surface, client, tb.url, f"pause-{surface}-{i}")
                ok = report == {**report, "first": True, "valid_for_ms": 0, "release": "lost"} and (
                    isinstance(report["callback_ms"], int) and report["callback_ms"] >= 0
                )
                failed += not ok
                print(f"pause {surface} run {i + 1}/{runs}: {'ok' if ok else 'FAILED'} {json.dumps(report)}", flush=True)
    print(f"pause: {len(surfaces) * runs - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

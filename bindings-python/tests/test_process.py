"""Ctrl-C during a blocking acquire, and clients crossing os.fork()."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
import redis

import rlock

CHILD = textwrap.dedent(
    """
    import signal, sys, time, rlock
    # A process started in the background of a non-interactive shell inherits SIGINT ignored,
    # and Python then installs no handler: install it, so the test does not hang there.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    url, name = sys.argv[1], sys.argv[2]
    client = rlock.Client(url)
    lock = client.lock(name)
    print("waiting", flush=True)
    try:
        lock.acquire()
        print("acquired", flush=True)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        # Nothing stays behind: no hold, no renewal, no subscription.
        deadline = time.monotonic() + 10
        while client.waited_channels() and time.monotonic() < deadline:
            time.sleep(0.01)
        print("state", lock.is_held(), client.tracked_holds(), client.waited_channels(), flush=True)
    """
)


def test_ctrl_c_interrupts_blocking_acquire(client: rlock.Client, url: str, name: str, raw: redis.Redis) -> None:
    holder = client.lock(name)
    assert holder.acquire()
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, url, name], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "waiting"
        # The child is waiting once it has subscribed to the lock's channel.
        deadline = time.monotonic() + 20
        while raw.pubsub_numsub(f"redisson_lock__channel:{{{name}}}")[0][1] == 0:
            assert time.monotonic() < deadline, "child never started waiting"
            time.sleep(0.01)
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        line = proc.stdout.readline().strip()
        latency = time.monotonic() - sent
        assert line == "interrupted"
        # 50 ms slices: well under 100 ms on an idle machine; generous for a loaded CI box.
        print(f"Ctrl-C to KeyboardInterrupt: {latency * 1000:.0f} ms")
        assert latency < 1.0, f"took {latency:.3f} s"
        assert proc.stdout.readline().strip() == "state False 0 0"
        assert proc.wait(20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    holder.release()
    assert not holder.locked()
    assert raw.pubsub_numsub(f"redisson_lock__channel:{{{name}}}")[0][1] == 0


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_client_used_after_fork_raises(
    client: rlock.Client, url: str, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    lock = client.lock(name)
    monkeypatch.setattr(rlock, "_default", client)
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report through the pipe, never return into pytest
        code = 1
        try:
            results = []
            try:
                lock.acquire(blocking=False)
                results.append("no error")
            except rlock.ForkedError as e:
                results.append("fork" if "fork()" in str(e) else f"other: {e}")
            try:
                client.lock(name)
                results.append("no error")
            except rlock.ForkedError as e:
                results.append("fork" if "fork()" in str(e) else f"other: {e}")
            # The default client stays with the parent; the child would make its own.
            results.append("default reset" if rlock._default is None else "default kept")
            with rlock.Client(url) as fresh:  # a client made in the child works
                fl = fresh.lock(name)
                results.append(str(fl.acquire(timeout=5)))
                fl.release()
            os.write(write_fd, ",".join(results).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write_fd)
    _, status = os.waitpid(pid, 0)
    with os.fdopen(read_fd) as f:
        report = f.read()
    assert os.WEXITSTATUS(status) == 0, report
    assert report == "fork,fork,default reset,True"
    # The parent's client is unaffected.
    with lock:
        assert lock.is_held()


EXIT_AFTER_ASYNCIO = textwrap.dedent(
    """
    import asyncio, sys, rlock
    client = rlock.Client(sys.argv[1])

    async def run(i):
        lock = client.lock(f"{sys.argv[2]}:{i}")
        for _ in range(50):
            await lock.acquire_async()
            await lock.release_async()

    async def main():
        await asyncio.gather(*(run(i) for i in range(16)))

    asyncio.run(main())
    # Exit without closing: the last completions race the interpreter's finalization.
    """
)


def test_exit_right_after_asyncio_calls_is_clean(url: str, name: str) -> None:
    # Completions that took the GIL while the interpreter finalized crashed about 1 exit in 15
    # (fatal PyGILState_Release error or segfault); 40 exits catch that most of the time.
    for _ in range(40):
        proc = subprocess.run(
            [sys.executable, "-c", EXIT_AFTER_ASYNCIO, url, name], capture_output=True, text=True, timeout=60
        )
        assert proc.returncode == 0, proc.stderr[-2000:]


FORK_DURING_ASYNCIO = textwrap.dedent(
    """
    import asyncio, os, sys, threading, time, rlock
    url, name = sys.argv[1], sys.argv[2]
    client = rlock.Client(url)
    stop = threading.Event()

    def busy():  # keeps asyncio calls running on another thread, so a fork finds them mid-flight
        async def loop():
            lock = client.lock(name + ":parent")
            while not stop.is_set():
                await lock.acquire_async()
                await lock.release_async()
        asyncio.run(loop())

    t = threading.Thread(target=busy)
    t.start()
    hung = 0
    for i in range(20):
        pid = os.fork()
        if pid == 0:  # the child: its own client, one asyncio acquire, a normal exit
            import faulthandler  # a hang shows where each thread was (the parent kills at 30 s)
            faulthandler.dump_traceback_later(25, exit=True)
            async def child():
                with rlock.Client(url) as c:
                    lock = c.lock(f"{name}:child:{i}")
                    await lock.acquire_async()
                    await lock.release_async()
            try:
                asyncio.run(asyncio.wait_for(child(), 10))
            except BaseException:
                import traceback
                traceback.print_exc()  # on the test's stderr, to tell a hang from an error
                sys.stderr.flush()
                os._exit(1)
            sys.exit(0)
        deadline = time.monotonic() + 30
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                hung += os.WEXITSTATUS(status) != 0
                break
            if time.monotonic() > deadline:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
                hung += 1
                break
            time.sleep(0.01)
    stop.set()
    t.join()
    print("hung", hung)
    """
)


def test_fork_while_asyncio_completions_run(url: str, name: str) -> None:
    # The fork copies the parent's state while another thread's asyncio calls are in flight
    # (their wake-ups coming from the runtime's worker): nothing of that may be inherited
    # locked or shared, or the child's asyncio calls and its exit hang.
    proc = subprocess.run(
        [sys.executable, "-c", FORK_DURING_ASYNCIO, url, name], capture_output=True, text=True, timeout=900
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().endswith("hung 0"), proc.stdout + proc.stderr[-2000:]

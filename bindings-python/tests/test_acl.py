"""Least privilege on the Python surface (docs/operations/security.md; issue 45, item 3): a user
with exactly the rule that page gives, read from it, runs every primitive (renewals and pub/sub
hand-offs included) and describe/list; a user missing one command of it gets a typed error
carrying the server's words, and nothing is left in Redis. core/tests/acl.rs does the same for
core."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Iterator, List, Optional

import pytest
import redis

import rlock

from conftest import Testbed, wait_until

PAGE = Path(__file__).resolve().parents[2] / "docs/operations/security.md"
USER, PASSWORD = "app", "app-pass"


def rule(name: str) -> List[str]:
    """The tokens of the page's ```` ```acl no-run NAME ```` block."""
    doc = PAGE.read_text()
    start = f"```acl no-run {name}\n"
    at = doc.index(start) + len(start)
    return doc[at:doc.index("```", at)].split()


def server_has(raw: redis.Redis, command: str) -> bool:
    """Whether the server knows `command`: COMMAND INFO's raw reply has nil for an unknown one.
    Raw, as redis-py's own reading of the reply fails on that nil (Redis 6.2, compat-ci)."""
    plain = redis.Redis(connection_pool=raw.connection_pool)
    plain.set_response_callback("COMMAND", lambda response, **options: response)
    reply = plain.execute_command("COMMAND", "INFO", command)
    return bool(reply) and reply[0] is not None


def make_user(raw: redis.Redis, blocks: List[str], without: Optional[str] = None) -> None:
    """User `app` with exactly the rules of `blocks` and the `keys` block, less `without`. A
    command the server does not have (Redis 6.2: the sharded pub/sub ones) is left out, as the
    page says to, since ACL SETUSER refuses a rule naming one."""
    args = ["ACL", "SETUSER", USER, "reset", "resetchannels", "on", f">{PASSWORD}", "-@all"]
    for block in [*blocks, "keys"]:
        for token in rule(block):
            if token.startswith("+"):
                command = token[1:]
                if command == without or not server_has(raw, command.split("|")[0]):
                    continue
            args.append(token)
    raw.execute_command(*args)


@pytest.fixture
def app(server: Testbed, raw: redis.Redis) -> Iterator[str]:
    """The URL of user `app` (made by each test); the user is deleted afterwards."""
    yield f"redis://{USER}:{PASSWORD}@127.0.0.1:{server.port}/"
    raw.execute_command("ACL", "DELUSER", USER)


def calls(raw: redis.Redis, command: str) -> int:
    stats = raw.info("commandstats").get(f"cmdstat_{command}")
    return int(stats["calls"]) if stats else 0


def handed_off(lock: "rlock.Lock", after: threading.Event) -> List[bool]:
    """Starts a thread waiting (up to 10 s) for `lock`; `after` is set once it has tried."""
    got: List[bool] = []

    def wait() -> None:
        after.set()
        got.append(lock.acquire(timeout=10))
        lock.release()

    threading.Thread(target=wait, daemon=True).start()
    return got


def test_the_documented_rule_is_enough_for_every_primitive(app: str, raw: redis.Redis) -> None:
    make_user(raw, ["family", "describe"])
    c = rlock.Client(app, watchdog_timeout=1.0)
    try:
        # A lock renewed past its lease, then handed to a waiting thread by the release's message.
        lock = c.lock("app:lock")
        assert lock.acquire()
        renewed = calls(raw, "evalsha")
        wait_until(lambda: calls(raw, "evalsha") >= renewed + 3, what="renewals")
        assert raw.pttl("app:lock") > 0 and lock.locked()
        tried = threading.Event()
        got = handed_off(c.lock("app:lock"), tried)
        assert tried.wait(10)
        lock.release()
        wait_until(lambda: got == [True], what="the waiter got the lock")

        fair = c.fair_lock("app:fair")
        with fair:
            assert raw.exists("app:fair")
        rw = c.read_write_lock("app:rw")
        with rw.read_lock():
            pass
        with rw.write_lock():
            assert raw.hget("app:rw", "mode") == b"write"
        fenced = c.fenced_lock("app:fenced")
        with fenced:
            first = fenced.token
        with fenced:
            assert fenced.token is not None and first is not None and fenced.token > first

        sem = c.semaphore("app:sem")
        assert sem.try_set_permits(1)
        assert sem.acquire()
        sem.release()
        pes = c.permit_expirable_semaphore("app:pes")
        assert pes.try_set_permits(1)
        permit = pes.acquire()
        assert permit is not None
        pes.release(permit)

        latch = c.count_down_latch("app:latch")
        assert latch.try_set_count(1)
        opened: List[bool] = []
        waiter = threading.Thread(target=lambda: opened.append(latch.wait(timeout=10)))
        waiter.start()
        latch.count_down()
        waiter.join()
        assert opened == [True]

        # describe and list, on a name held now.
        with c.lock("app:held"):
            assert c.describe("app:held")["kind"] == "lock"
            assert any(entry["name"] == "app:held" for entry in c.list("app:*"))
    finally:
        c.close()


@pytest.mark.parametrize("missing", ["evalsha", "exists"])
def test_a_user_missing_one_command_gets_a_typed_error_naming_it(
    app: str, raw: redis.Redis, missing: str
) -> None:
    make_user(raw, ["family"], missing)
    c = rlock.Client(app)
    try:
        with pytest.raises(rlock.RedisError) as err:
            c.lock("app:lock").acquire()
        said = str(err.value)
        assert "app:lock" in said, said
        # The server's words: they name the command (Redis 8, Valkey), or for a command a script
        # calls on Redis 7.0 the script and its line.
        assert missing in said.lower() or "@user_script" in said, said
        assert not raw.exists("app:lock"), "the failed acquire left the lock"
    finally:
        c.close()


def test_a_waiter_without_subscribe_polls_and_gets_the_lock(app: str, raw: redis.Redis) -> None:
    make_user(raw, ["family"], "subscribe")
    c = rlock.Client(app)
    try:
        lock = c.lock("app:waited")
        assert lock.acquire()
        tries = calls(raw, "evalsha")
        tried = threading.Event()
        got = handed_off(c.lock("app:waited"), tried)
        # The waiter polls: its first try and one more reach the server (the event, not a sleep).
        wait_until(lambda: calls(raw, "evalsha") >= tries + 2, what="the waiter polling")
        assert got == [], "the waiter did not wait for the holder"
        lock.release()
        wait_until(lambda: got == [True], timeout=20, what="the waiter without SUBSCRIBE got the lock")
    finally:
        c.close()

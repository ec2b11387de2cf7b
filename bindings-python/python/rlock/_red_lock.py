"""RedLock: one lock name held by a majority of N independent servers, and its fenced form. A
module of its own because it is made from clients, which the other locks never see."""

from __future__ import annotations

from typing import Iterable

from ._client import Client
from ._locks import _Fenced, _Reentrant
from ._native import RedLock as NativeRedLock


class RedLock(_Reentrant):
    """One lock name held by a majority of N independent servers (Redisson's
    ``RedissonRedLock``; antirez's algorithm), so it survives the loss of a minority of them.
    Each server stores an ordinary lock in Redisson's layout. ``with lock:`` holds it for the
    calling thread, ``async with lock:`` for the current task; holds taken without a ``lease``
    are renewed by each server's watchdog, and the holder is told (:meth:`on_lost`) as soon as
    fewer than a majority are left. An acquire raises :class:`ConnectionError` or
    :class:`TimeoutError` when more than a minority of the servers failed; a release raises
    :class:`LockLostError` when fewer than a majority were still held."""

    __slots__ = ("_clients", "_owners", "_native", "__weakref__")
    _native: NativeRedLock
    _what = "RedLock"

    def __init__(self, name: str, clients: Iterable[Client], *, _fenced: bool = False) -> None:
        self._clients = tuple(clients)
        self._native = NativeRedLock(name, [c._native for c in self._clients], _fenced)
        self._owners = self._clients[0]._owners

    @property
    def clients(self) -> "tuple[Client, ...]":
        """The clients, one per server."""
        return self._clients

    @property
    def quorum(self) -> int:
        """How many servers make a majority."""
        return self._native.quorum

    def __repr__(self) -> str:
        return f"<rlock.{type(self).__name__} {self.name!r} on {len(self._clients)} servers>"


class FencedRedLock(_Fenced, RedLock):
    """A :class:`RedLock` whose every acquire hands out a fencing token that strictly increases
    across successful acquires, whichever majority granted them (each server's counter
    ``redisson_lock_token:{name}`` is a quorum register: read from a majority, raised on a
    majority, then handed out). :meth:`acquire` returns it; ``with lock as token:`` gives it."""

    __slots__ = ()
    _what = "fenced RedLock"

    def __init__(self, name: str, clients: Iterable[Client]) -> None:
        super().__init__(name, clients, _fenced=True)

"""Whose call it is: the owner ids a client's holds belong to (the calling thread, or the current
asyncio task). Each handle gets its client's :class:`Owners` when it is made, so the lock modules
never reach back to the client."""

from __future__ import annotations

import asyncio
import threading
import weakref
from typing import Any, Optional

from ._errors import RLockError
from ._native import Client as NativeClient


class Owners:
    """The owners of one client: None for the calling thread (the native layer knows its id),
    and an id per asyncio task, made on its first lock call and forgotten with the task."""

    __slots__ = ("_native", "_guard", "_tasks")

    def __init__(self, native: NativeClient) -> None:
        self._native = native
        self._guard = threading.Lock()
        self._tasks: "weakref.WeakKeyDictionary[asyncio.Task[Any], int]" = weakref.WeakKeyDictionary()

    def task(self) -> int:
        """The owner id of the current asyncio task (:class:`RLockError` outside one)."""
        task = asyncio.current_task()
        if task is None:
            raise RLockError("asyncio lock calls must run inside an asyncio task")
        with self._guard:
            owner = self._tasks.get(task)
            if owner is None:
                owner = self._native.new_owner_id()
                self._tasks[task] = owner
            return owner

    def current(self) -> Optional[int]:
        """The current task's owner inside a running asyncio task, else None (this thread)."""
        try:
            task = asyncio.current_task()
        except RuntimeError:
            return None
        return None if task is None else self.task()

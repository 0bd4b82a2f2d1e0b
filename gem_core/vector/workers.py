"""Threads that run environment calls off the caller's thread.

Worker threads are daemons, so an environment call that never returns cannot keep the process
alive at exit (``concurrent.futures`` joins its threads at exit, which a hung call would block).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import queue
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class SlotWorker:
    """A daemon thread running one slot's calls in order (so an env always sees one thread)."""

    def __init__(self, name: str):
        self._queue: queue.SimpleQueue[tuple[Callable[[], None], Callable[[], None]] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def submit(self, work: Callable[[], None], done: Callable[[], None]) -> None:
        """Run ``work()`` then ``done()`` on the worker thread; ``work`` must not raise."""
        self._queue.put((work, done))

    def retire(self) -> None:
        """Stop after the calls already submitted (a hung call keeps only this thread)."""
        self._queue.put(None)

    def _serve(self) -> None:
        while (item := self._queue.get()) is not None:
            work, done = item
            try:
                work()
            finally:
                try:
                    done()
                except RuntimeError:  # the waiter's event loop closed meanwhile; nobody waits
                    pass


class Countdown:
    """Wakes a waiting thread once ``n`` workers have counted down."""

    def __init__(self, n: int):
        self._n = n
        self._cond = threading.Condition(threading.Lock())

    def count_down(self) -> None:
        with self._cond:
            self._n -= 1
            if self._n <= 0:
                self._cond.notify_all()

    def wait(self, timeout: float | None) -> bool:
        """True when every worker counted down within ``timeout`` seconds (None: no limit)."""
        with self._cond:
            return self._cond.wait_for(lambda: self._n <= 0, timeout)


class BackgroundLoop:
    """An event loop in a daemon thread, started on first use, for synchronous callers that need
    to await native-async environments (or an async policy)."""

    def __init__(self, name: str):
        self._name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def run(self, coroutine: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coroutine`` on the loop and wait for its result."""
        return self.submit(coroutine).result(timeout)

    def submit(self, coroutine: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Start ``coroutine`` on the loop; returns a future for its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self._ensure())

    def _ensure(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name=self._name, daemon=True)
                thread.start()
                self._loop, self._thread = loop, thread
            return self._loop

    def close(self) -> None:
        with self._lock:
            loop, thread, self._loop, self._thread = self._loop, self._thread, None, None
        if loop is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join(timeout=5)
        if not loop.is_running():
            loop.close()

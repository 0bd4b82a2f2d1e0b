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


class WorkerPool:
    """Daemon threads taking calls from one shared queue.

    One queue (rather than a thread per slot) lets a woken thread run several short calls in a
    row, which keeps thread wake-ups, and so latency, down on a busy machine. A thread stuck in a
    hung call is replaced at once (:meth:`replace_one`); its work returns True when the call
    finally returns, and the thread then leaves the pool.
    """

    def __init__(self, name: str):
        self._name = name
        self._queue: queue.SimpleQueue[Callable[[], bool] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._serving = 0  # threads taking work (not counting those stuck in a hung call)
        self._started = 0

    def ensure(self, size: int) -> None:
        """Keep at least ``size`` threads serving."""
        with self._lock:
            missing = max(size - self._serving, 0)
            self._serving += missing
        for _ in range(missing):
            self._start()

    def submit(self, work: Callable[[], bool]) -> None:
        """Run ``work()`` (which must not raise) on one of the threads; it returns True when
        its thread was replaced meanwhile and should leave the pool."""
        self._queue.put(work)

    def replace_one(self) -> None:
        """Start a thread in place of one that is stuck in a call (and leaves when it returns)."""
        self._start()

    def close(self) -> None:
        """Stop every serving thread once it is idle."""
        with self._lock:
            serving, self._serving = self._serving, 0
        for _ in range(serving):
            self._queue.put(None)

    def _start(self) -> None:
        self._started += 1
        threading.Thread(target=self._serve, name=f"{self._name}-{self._started}", daemon=True).start()

    def _serve(self) -> None:
        while (work := self._queue.get()) is not None:
            if work():  # this thread was replaced while stuck
                return


class Countdown:
    """Tells a waiter, once, that ``n`` workers have counted down: :meth:`wait` returns, and
    ``on_zero`` (if given) is called by the last worker."""

    def __init__(self, n: int, on_zero: Callable[[], None] | None = None):
        self._n = n
        self._on_zero = on_zero
        self._cond = threading.Condition(threading.Lock())

    def count_down(self) -> None:
        with self._cond:
            self._n -= 1
            zero = self._n == 0
            if zero:
                self._cond.notify_all()
        if zero and self._on_zero is not None:
            self._on_zero()

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

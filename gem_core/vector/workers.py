"""Threads that run environment calls off the caller's thread, and what tells a consumer that
calls left running have finished.

Worker threads are daemons, so an environment call that never returns cannot keep the process
alive at exit (``concurrent.futures`` joins its threads at exit, which a hung call would block).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import heapq
import itertools
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Coroutine
from typing import Any, Generic, TypeVar

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

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The loop (started now if it was not)."""
        return self._ensure()

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
        try:  # let cancelled coroutines (a policy given up at its deadline) unwind first
            asyncio.run_coroutine_threadsafe(_cancel_pending(), loop).result(timeout=1)
        except Exception:
            pass
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join(timeout=5)
        if not loop.is_running():
            loop.close()


class Watchdog:
    """Calls ``action()`` at a :func:`time.monotonic` time, from a daemon thread of its own
    (started on first use): the executor of calls left running gives them up at their deadline
    with it, whoever is waiting for them or not."""

    def __init__(self, name: str):
        self._name = name
        self._due: list[tuple[float, int, Callable[[], Any]]] = []
        self._order = itertools.count()
        self._cond = threading.Condition(threading.Lock())
        self._thread: threading.Thread | None = None
        self._closed = False

    def at(self, when: float, action: Callable[[], Any]) -> None:
        """Call ``action()`` (which must not raise) at ``when``, or soon after."""
        with self._cond:
            if self._closed:
                return
            heapq.heappush(self._due, (when, next(self._order), action))
            if self._thread is None:
                self._thread = threading.Thread(target=self._watch, name=self._name, daemon=True)
                self._thread.start()
            elif self._due[0][2] is action:
                self._cond.notify()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._due.clear()
            self._cond.notify()

    def _watch(self) -> None:
        while True:
            with self._cond:
                while not self._closed and (not self._due or self._due[0][0] > time.monotonic()):
                    self._cond.wait(None if not self._due else self._due[0][0] - time.monotonic())
                if self._closed:
                    return
                _, _, action = heapq.heappop(self._due)
            action()


T_co = TypeVar("T_co")


class Finished(Generic[T_co]):
    """Things (calls) that finished in other threads, for one consumer to take: blocking
    (:meth:`take`) or from a coroutine (:meth:`atake`)."""

    def __init__(self) -> None:
        self._items: deque[T_co] = deque()
        self._cond = threading.Condition(threading.Lock())
        self._wake: Callable[[], None] | None = None

    def put(self, item: T_co) -> None:
        with self._cond:
            self._items.append(item)
            self._cond.notify_all()
            wake = self._wake
        if wake is not None:
            wake()

    def take(self, timeout: float | None = None) -> list[T_co]:
        """Everything finished so far, waiting up to ``timeout`` seconds (None: no limit) for the
        first when there is none yet."""
        with self._cond:
            if not self._items and (timeout is None or timeout > 0):
                self._cond.wait_for(lambda: bool(self._items), timeout)
            items = list(self._items)
            self._items.clear()
        return items

    async def atake(self, timeout: float | None = None) -> list[T_co]:
        """:meth:`take` without blocking the running event loop."""
        loop = asyncio.get_running_loop()
        ready = asyncio.Event()

        def wake() -> None:
            try:
                loop.call_soon_threadsafe(ready.set)
            except RuntimeError:  # the loop closed meanwhile
                pass

        with self._cond:
            ready_now = bool(self._items) or timeout == 0
            if not ready_now:
                self._wake = wake
        if ready_now:
            return self.take(0)
        try:
            await asyncio.wait_for(ready.wait(), timeout)
        except asyncio.TimeoutError:
            pass
        finally:
            with self._cond:
                self._wake = None
        return self.take(0)

    def __len__(self) -> int:
        return len(self._items)


async def _cancel_pending() -> None:
    """Cancel the loop's other tasks and let them unwind (a short while at most)."""
    tasks = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.wait(tasks, timeout=0.5)

"""Lending warm sandboxes: sandboxes that stay up between jobs, one caller at a time each.

Starting a sandbox and an interpreter costs far more than most jobs, so a :class:`WarmPool`
keeps the sandboxes it starts and lends them out again: as many as were ever in use at once, up
to ``max_sandboxes``; more callers than that wait for a sandbox to come back. What a sandbox is,
and how it runs a job, is up to its maker (the Python tool's :mod:`gem_core.sandbox.warm_python`,
the code environment's test harness, the scoring workers of :mod:`gem_core.sandbox.worker_pool`); a
sandbox only needs ``alive``, ``jobs`` (how many it has taken) and ``close()``.

Every warm sandbox is started from :func:`launcher`'s one long-lived thread (see there why).
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Generic, Protocol, TypeVar

from gem_core.errors import GemError

MAX_SANDBOXES = max(32, 2 * (os.cpu_count() or 1))  # sandboxes of one pool at once, in use and idle


class PooledSandbox(Protocol):
    """What a pool needs of a sandbox."""

    jobs: int

    @property
    def alive(self) -> bool: ...

    def close(self) -> None: ...


S = TypeVar("S", bound=PooledSandbox)


class WarmPool(Generic[S]):
    """Lends sandboxes made by ``start``, one caller at a time each, starting new ones as needed.
    At most ``max_sandboxes`` exist at once; further callers wait for one to come back, which
    costs them far less than starting (and throwing away) a sandbox of their own. A sandbox is
    replaced after ``jobs_per_sandbox`` jobs (None: only when it dies)."""

    def __init__(self, start: Callable[[], S], *, max_sandboxes: int = MAX_SANDBOXES,
                 jobs_per_sandbox: int | None = 500):
        self._start, self.max_sandboxes, self.jobs_per_sandbox = start, max_sandboxes, jobs_per_sandbox
        self._idle: list[S] = []
        self._lent: set[S] = set()
        self._count = 0  # sandboxes idle, lent or starting
        self._returned = threading.Condition()
        self._closed = False

    def borrow(self) -> S:
        """A sandbox for the caller alone, until :meth:`give_back`."""
        with self._returned:
            while True:
                if self._closed:
                    raise GemError("The sandbox pool is closed.")
                while self._idle:
                    sandbox = self._idle.pop()
                    if sandbox.alive:
                        self._lent.add(sandbox)
                        return sandbox
                    sandbox.close()  # quick: its sandbox has already exited
                    self._count -= 1
                    self._returned.notify()  # its place is free: for a caller waiting, if not this one
                if self._count < self.max_sandboxes:
                    self._count += 1
                    break
                self._returned.wait()
        sandbox = self._new_sandbox()
        with self._returned:
            self._lent.add(sandbox)
        return sandbox

    def give_back(self, sandbox: S) -> None:
        """Return a borrowed sandbox; one that died, was closed or did its share of jobs is closed
        instead of kept."""
        with self._returned:
            self._lent.discard(sandbox)
            keep = not self._closed and sandbox.alive and (
                self.jobs_per_sandbox is None or sandbox.jobs < self.jobs_per_sandbox)
            if keep:
                self._idle.append(sandbox)
            else:
                self._count -= 1
            self._returned.notify()
        if not keep:
            sandbox.close()

    def warm(self) -> None:
        """Start a sandbox and keep it idle, unless the pool has one already (idle, lent or
        starting)."""
        with self._returned:
            if self._closed or self._count:
                return
            self._count += 1
        sandbox = self._new_sandbox()
        with self._returned:
            self._lent.add(sandbox)
        self.give_back(sandbox)

    @property
    def idle(self) -> int:
        return len(self._idle)

    @property
    def sandboxes(self) -> list[S]:
        """Every sandbox of the pool, idle or lent (not those still starting)."""
        with self._returned:
            return [*self._idle, *self._lent]

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self, *, in_use: bool = False) -> None:
        """Close every idle sandbox, and with ``in_use`` the lent ones too (their borrowers see
        them die; only for sandboxes whose ``close`` may run beside a job); other lent sandboxes
        close when given back. Callers waiting for a sandbox are refused."""
        with self._returned:
            self._closed = True
            idle, self._idle = self._idle, []
            self._count -= len(idle)
            lent = list(self._lent) if in_use else []
            self._returned.notify_all()
        for sandbox in idle + lent:
            sandbox.close()

    def forget(self) -> list[S]:
        """In a forked child, where the sandboxes are the parent's: let go of every one without
        closing it, and return them. The pool holds none afterwards."""
        sandboxes = [*self._idle, *self._lent]  # no lock: the thread holding it is in the parent
        self._idle, self._lent, self._count = [], set(), 0
        self._returned = threading.Condition()
        return sandboxes

    def _new_sandbox(self) -> S:
        """Start a sandbox whose place is already counted (uncounted if it fails)."""
        try:
            return self._start()
        except BaseException:
            with self._returned:
                self._count -= 1
                self._returned.notify()
            raise


@functools.cache
def launcher() -> ThreadPoolExecutor:
    """The one thread that starts every warm sandbox, alive as long as this process. bwrap's
    ``--die-with-parent`` kills a sandbox when the *thread* that started it ends (the parent-death
    signal follows the thread, not the process): a sandbox started from a short-lived worker
    thread would die with that thread, even while it runs a job."""
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="gem-sandbox-launcher")


os.register_at_fork(after_in_child=launcher.cache_clear)  # a forked child has none of its threads

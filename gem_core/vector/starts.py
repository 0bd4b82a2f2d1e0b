"""Start limits: how many heavy environments (containers, terminal tasks) may start at once.

An environment whose ``reset`` is heavy (it builds or starts a container, boots a VM) declares a
:class:`StartLimit` as its ``start_limit`` (a class attribute, or a property when it depends on
the instance). Every vector environment then holds each ``reset`` of such an environment until
its limit allows: at most ``at_once`` resets in progress, at most ``per_second`` begun per second.
Environments that name the same limit share it across every vector environment of the process
(on a Ray cluster: of each host); the others are never held. A reset held at the gate counts
towards its call's deadline, and one given up while held never starts.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from gem_core.errors import GemError

_POLL_S = 0.02  # how often a held reset checks whether its call was given up


@dataclass(frozen=True)
class StartLimit:
    """At most ``at_once`` resets in progress and at most ``per_second`` begun per second (None:
    no limit of that kind), shared by the environments that declare a limit called ``name``."""

    name: str
    at_once: int | None = None
    per_second: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise GemError(f"A start limit needs a name, got {self.name!r}.")
        if self.at_once is not None and (isinstance(self.at_once, bool) or not isinstance(self.at_once, int)
                                         or self.at_once < 1):
            raise GemError(f"StartLimit.at_once must be a positive integer or None, got {self.at_once!r}.")
        if self.per_second is not None and (isinstance(self.per_second, bool)
                                            or not isinstance(self.per_second, (int, float))
                                            or not self.per_second > 0):
            raise GemError(f"StartLimit.per_second must be a positive number or None, got {self.per_second!r}.")


class StartGate:
    """The process's gate for one :class:`StartLimit`."""

    def __init__(self, limit: StartLimit):
        self.limit = limit
        self._slots = threading.BoundedSemaphore(limit.at_once) if limit.at_once else None
        self._lock = threading.Lock()
        self._next_start = 0.0  # the earliest time the next reset may begin (per_second)
        self.in_progress = 0
        self.most_in_progress = 0

    def enter(self, given_up: Callable[[], bool]) -> bool:
        """Wait until a reset may begin; False when ``given_up()`` turned true meanwhile."""
        while True:
            wait = self._try_enter()
            if wait is None:
                return True
            if given_up():
                return False
            time.sleep(min(wait, _POLL_S))

    async def aenter(self) -> None:
        """:meth:`enter` from a coroutine (cancelled with its call)."""
        while (wait := self._try_enter()) is not None:
            await asyncio.sleep(min(wait, _POLL_S))

    def leave(self) -> None:
        with self._lock:
            self.in_progress -= 1
        if self._slots is not None:
            self._slots.release()

    def _try_enter(self) -> float | None:
        """Enter now (None), or the seconds worth waiting before trying again."""
        if self._slots is not None and not self._slots.acquire(blocking=False):
            return _POLL_S
        with self._lock:
            now = time.monotonic()
            if now < self._next_start:
                if self._slots is not None:
                    self._slots.release()
                return self._next_start - now
            if self.limit.per_second:
                self._next_start = max(now, self._next_start) + 1.0 / self.limit.per_second
            self.in_progress += 1
            self.most_in_progress = max(self.most_in_progress, self.in_progress)
        return None


_gates: dict[str, StartGate] = {}
_gates_lock = threading.Lock()


def gate_for(limit: StartLimit | None) -> StartGate | None:
    """The process's gate for ``limit`` (None for none); a name declared again with other numbers
    is an error."""
    if limit is None:
        return None
    if not isinstance(limit, StartLimit):
        raise GemError(f"An environment's start_limit must be a gem_core.StartLimit or None, got {limit!r}.")
    with _gates_lock:
        gate = _gates.get(limit.name)
        if gate is None:
            gate = _gates[limit.name] = StartGate(limit)
        elif gate.limit != limit:
            raise GemError(f"Two environments declare the start limit {limit.name!r} differently: "
                           f"{gate.limit} and {limit}. Give them one limit, or different names.")
        return gate

"""Where an in-process vector environment runs each slot's calls, and the machinery that runs them.

A slot's *route* is one of:

* ``"inline"``: in the caller's thread;
* ``"thread"``: in a worker thread (an environment that blocks, or any call under ``step_timeout``,
  so that a hung call can be abandoned);
* ``"await"``: awaited on an event loop (an environment with native ``async`` methods);
* ``"probe"``: inline while the first :data:`PROBE_CALLS` calls of an environment that does not
  declare :attr:`~gem_core.Env.blocking` are timed; then ``"thread"`` when it mostly waits
  (:data:`PROBE_WAIT_S` or more per call blocked beyond its CPU time), else ``"inline"``.
  ``gem serve``'s sessions follow the same rule.

:class:`Runner` runs calls at the same time along their routes, and gives each up at its
deadline (``step_timeout``, or the deadline its episode or collection set).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import threading
import time
from collections.abc import Callable
from typing import Any

try:
    import resource
except ImportError:  # Windows
    resource = None  # type: ignore[assignment]

from gem_core.core import BaseEnv, Env, Wrapper, wrapper_stack
from gem_core.vector.calls import Call, arun, close_now, run
from gem_core.vector.workers import BackgroundLoop, Countdown, Watchdog, WorkerPool

INLINE, THREAD, AWAIT, PROBE = "inline", "thread", "await", "probe"
PROBE_CALLS = 3  # calls timed before a probed environment's route is settled
PROBE_WAIT_S = 0.0005  # mean time per call spent waiting (wall minus CPU) that sends calls to threads
_RUSAGE_THREAD = getattr(resource, "RUSAGE_THREAD", None)  # Linux: per-thread counters

#: One call to run: ``(route, environment, call)``.
Job = tuple[str, Env, Call]


def declared_blocking(env: Env) -> bool | None:
    """Whether ``env`` says it blocks: True when ``env.blocking`` is, False when its class (or a
    base below :class:`~gem_core.core.BaseEnv`) sets ``blocking = False`` itself, None when
    nothing says."""
    if env.blocking:
        return True
    for cls in type(env.unwrapped).__mro__:
        if cls is BaseEnv:
            return None
        if "blocking" in vars(cls):
            return bool(vars(cls)["blocking"])
    return None


def execution_kind(env: Env) -> str:
    """How a vector environment should run ``env``'s calls: ``"await"`` when it has native
    ``async`` methods that every wrapper above it passes through, ``"thread"`` when it blocks
    (or has native-async methods hidden behind a synchronous-only wrapper), else ``"inline"``."""
    transparent = True
    *wrappers, inner = wrapper_stack(env)
    for wrapper in wrappers:
        cls = type(wrapper)
        for sync_name, async_name in (("step", "astep"), ("reset", "areset")):
            if getattr(cls, sync_name) is not getattr(Wrapper, sync_name) and \
                    getattr(cls, async_name) is getattr(Wrapper, async_name):
                transparent = False
    cls = type(inner)
    native = cls.astep is not Env.astep or cls.areset is not Env.areset
    if native and transparent:
        return AWAIT
    if native or env.blocking:
        return THREAD
    return INLINE


def sequential_route(env: Env, step_timeout: float | None) -> str:
    """The route of ``env``'s calls when slots run one after another."""
    if execution_kind(env) == AWAIT:
        return AWAIT
    return THREAD if step_timeout is not None else INLINE


def concurrent_route(env: Env, step_timeout: float | None) -> str:
    """The route of ``env``'s calls when slots run at the same time."""
    kind = execution_kind(env)
    if kind == AWAIT:
        return AWAIT
    if step_timeout is not None or kind == THREAD:
        return THREAD
    return PROBE if declared_blocking(env) is None else INLINE


class Probe:
    """The timing of a probed environment's first calls (see the module docstring). Time a call
    spends off the CPU counts as waiting only when the call blocked (a voluntary context switch,
    where the platform reports them): a call preempted by the machine's other work has not waited."""

    __slots__ = ("calls", "waited", "busy")

    def __init__(self) -> None:
        self.calls, self.waited, self.busy = 0, 0.0, 0.0

    @staticmethod
    def start() -> tuple[float, float, int | None]:
        """The clocks at a call's start: wall time, this thread's CPU time and its blocking count."""
        return time.perf_counter(), time.thread_time(), _times_blocked()

    def record(self, started: tuple[float, float, int | None]) -> str | None:
        """Account for a call that began at ``started``; the settled route once
        :data:`PROBE_CALLS` calls are timed, else None."""
        busy = time.thread_time() - started[1]
        blocked = started[2] is None or _times_blocked() != started[2]
        self.calls += 1
        self.busy += busy
        if blocked:
            self.waited += max(0.0, time.perf_counter() - started[0] - busy)
        if self.calls < PROBE_CALLS:
            return None
        return THREAD if self.waited / self.calls >= PROBE_WAIT_S and self.waited > self.busy else INLINE


def _times_blocked() -> int | None:
    """How often this thread has blocked so far (voluntary context switches), where known."""
    if _RUSAGE_THREAD is None:
        return None
    return resource.getrusage(_RUSAGE_THREAD).ru_nvcsw


class Runner:
    """Runs calls at the same time: threaded ones on a pool of worker threads (grown to the
    calls' needs), awaited ones on an event loop, the others in the caller's thread meanwhile.

    Each call is given up at its own ``deadline`` (see :class:`~gem_core.vector.calls.Call`):
    marked ``timed_out``, its worker thread replaced at once, and its environment closed at once
    (in a thread of its own, while the hung call may still run), so that whatever the environment
    started (sandboxes, containers) ends now; an awaited call is cancelled.

    :meth:`run` and :meth:`arun` return once every call of a batch has finished or been given up;
    :meth:`launch` starts calls and returns at once, handing each to ``done`` when it finishes (a
    :class:`~gem_core.vector.workers.Watchdog` gives it up at its deadline meanwhile).
    """

    def __init__(self, name: str):
        self._pool = WorkerPool(name)
        self._watchdog = Watchdog(f"{name}-watchdog")
        self._lock = threading.Lock()
        self._launched_threads = 0  # threaded calls launched and still running

    def run(self, jobs: list[Job], *, loop: BackgroundLoop, inline: Callable[[Env, Call], None] = run) -> None:
        """Run ``jobs`` from a synchronous caller; awaited ones on ``loop``."""
        threaded, awaited, here = _split(jobs)
        if not threaded and not awaited:
            for env, call in here:
                inline(env, call)
            return
        countdown = Countdown(len(threaded))
        self._submit(threaded, countdown.count_down)
        pending = loop.submit(_await_all(awaited)) if awaited else None
        for env, call in here:
            inline(env, call)
        while threaded and not countdown.wait(_time_to_nearest(threaded)):
            self._give_up_expired(threaded, countdown.count_down)
        if pending is not None:
            pending.result()

    async def arun(self, jobs: list[Job], *, inline: Callable[[Env, Call], None] = run) -> None:
        """Run ``jobs`` from a coroutine; awaited ones on the caller's loop, and threaded ones
        waited for without blocking it."""
        threaded, awaited, here = _split(jobs)
        loop = asyncio.get_running_loop()
        all_threaded_done = loop.create_future()  # one wake-up of the loop, not one per call
        countdown = Countdown(len(threaded), lambda: loop.call_soon_threadsafe(_resolve, all_threaded_done))
        self._submit(threaded, countdown.count_down)
        awaiting = asyncio.ensure_future(_await_all(awaited)) if awaited else None
        for env, call in here:
            inline(env, call)
        while threaded:
            done, _ = await asyncio.wait({all_threaded_done}, timeout=_time_to_nearest(threaded))
            if done:
                break
            self._give_up_expired(threaded, countdown.count_down)
        if awaiting is not None:
            await awaiting

    def launch(self, jobs: list[Job], done: Callable[[Call], None], *, loop: asyncio.AbstractEventLoop,
               inline: Callable[[Env, Call], None] = run) -> None:
        """Start ``jobs`` and return: threaded ones on the pool, awaited ones on ``loop`` (which
        may be the caller's own), inline ones now. ``done(call)`` is called once per call, from
        whichever thread finished it or gave up on it."""
        threaded, awaited, here = _split(jobs)
        if threaded:
            with self._lock:
                self._launched_threads += len(threaded)
                wanted = self._launched_threads
            self._pool.ensure(wanted)
            for env, call in threaded:
                self._pool.submit(_work(env, call, functools.partial(self._launched_done, done, call)))
                if call.deadline is not None:
                    self._watchdog.at(call.deadline, functools.partial(self._expire_thread, env, call, done))
        for env, call in awaited:
            task = call.task = asyncio.run_coroutine_threadsafe(_awaited_then(env, call, done), loop)
            if call.deadline is not None:
                self._watchdog.at(call.deadline, functools.partial(_expire_task, call, task, done))
        for env, call in here:
            inline(env, call)
            done(call)

    def give_up(self, env: Env | None, call: Call) -> None:
        """Give up a call started with :meth:`launch` now (whoever finishes it, no one is told)."""
        if call.route == THREAD:
            if env is not None and self._give_up(env, call):
                with self._lock:
                    self._launched_threads -= 1
        elif call.give_up() and call.task is not None:
            call.task.cancel()

    def close(self) -> None:
        """Stop the worker threads once they are idle, and the watchdog."""
        self._pool.close()
        self._watchdog.close()

    def _submit(self, threaded: list[tuple[Env, Call]], done: Callable[[], Any]) -> None:
        if threaded:
            self._pool.ensure(len(threaded))
        for env, call in threaded:
            self._pool.submit(_work(env, call, done))

    def _give_up_expired(self, threaded: list[tuple[Env, Call]], done: Callable[[], Any]) -> None:
        now = time.monotonic()
        for env, call in threaded:
            if call.deadline is not None and call.deadline <= now and self._give_up(env, call):
                done()

    def _give_up(self, env: Env, call: Call) -> bool:
        """Give up on a threaded call: replace its worker thread and close its environment now."""
        if not call.give_up():
            return False
        self._pool.replace_one()
        call.env_closed = True
        close_now(env)
        return True

    def _launched_done(self, done: Callable[[Call], None], call: Call) -> None:
        with self._lock:
            self._launched_threads -= 1
        done(call)

    def _expire_thread(self, env: Env, call: Call, done: Callable[[Call], None]) -> None:
        if self._give_up(env, call):
            self._launched_done(done, call)


def _time_to_nearest(threaded: list[tuple[Env, Call]]) -> float | None:
    """Seconds until the nearest deadline of the calls still running (None: none has one)."""
    deadlines = [call.deadline for _, call in threaded if call.deadline is not None and not call.settled]
    return max(0.0, min(deadlines) - time.monotonic()) if deadlines else None


async def _awaited_then(env: Env, call: Call, done: Callable[[Call], None]) -> None:
    await arun(env, call)
    if call.settle("worker"):
        done(call)


def _expire_task(call: Call, task: concurrent.futures.Future[None], done: Callable[[Call], None]) -> None:
    if call.give_up():
        task.cancel()
        done(call)


def _split(jobs: list[Job]) -> tuple[list[tuple[Env, Call]], list[tuple[Env, Call]], list[tuple[Env, Call]]]:
    threaded, awaited, here = [], [], []
    for route, env, call in jobs:
        (threaded if route == THREAD else awaited if route == AWAIT else here).append((env, call))
    return threaded, awaited, here


def _work(env: Env, call: Call, done: Callable[[], Any]) -> Callable[[], bool]:
    """A worker thread's share of one call: True when the waiter gave up on it meanwhile (its
    thread was replaced and leaves the pool; its environment was closed as it gave up)."""

    def work() -> bool:
        run(env, call)
        if call.settle("worker"):
            try:
                done()
            except RuntimeError:  # the waiting event loop is closed: nobody waits any more
                pass
            return False
        return True

    return work


async def _await_all(awaited: list[tuple[Env, Call]]) -> None:
    """Await the calls together, each until its own deadline (then it is cancelled)."""
    tasks = {asyncio.ensure_future(arun(env, call)): call for env, call in awaited}
    pending = set(tasks)
    while pending:
        deadlines = [tasks[task].deadline for task in pending if tasks[task].deadline is not None]
        timeout = max(0.0, min(deadlines) - time.monotonic()) if deadlines else None
        _, pending = await asyncio.wait(pending, timeout=timeout)
        now = time.monotonic()
        for task in list(pending):
            call = tasks[task]
            if call.deadline is not None and call.deadline <= now:
                call.timed_out = True
                task.cancel()
                pending.discard(task)


def _resolve(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)

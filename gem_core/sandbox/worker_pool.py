"""Time-limited, sandboxed worker processes for scoring untrusted answers.

Scoring an LLM's answer runs third-party code on arbitrary text: sympy can spend minutes on a
crafted expression, and some reasoning-gym scorers call ``eval`` on the answer. So scoring runs in
long-lived worker processes (see :mod:`gem_core.sandbox.worker` for the other side):

* every call has a wall-clock limit: the worker interrupts itself at the limit and stays alive;
  if it has not answered ``grace`` seconds later (C code cannot be interrupted), the caller kills
  it and starts a fresh one on the next call;
* callers never wait without a deadline, from any thread (async callers use :meth:`acall`), and
  concurrent callers share up to ``max_workers`` workers, lent by a
  :class:`~gem_core.sandbox.warm_pool.WarmPool`;
* no process outlives its use: killed workers are reaped at once, every worker is killed at
  interpreter exit, a worker whose caller died exits (its stdin closes, and bubblewrap ends its
  sandbox with the caller), and a CPU-time limit bounds one stuck in C code; a forked child
  starts workers of its own and leaves its parent's alone;
* workers run in the sandbox of :mod:`gem_core.sandbox.bubblewrap` (``$GEM_BWRAP`` names bwrap)
  where it works: no network, their own process namespace, an unprivileged user, and the host's
  file system read-only (``host_root``: they import whatever their caller imports) with a private
  ``/tmp`` for the caches libraries write while they load; then address-space and file-size
  limits (no writes once started). Where no sandbox can be made they run without one, with a
  warning.

Workers load one module given by name and run its functions; a module may define ``warm_up()``,
which runs once before the worker reports ready.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import importlib.util
import json
import logging
import os
import pickle
import selectors
import signal
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gem_core.errors import GemError
from gem_core.sandbox import bubblewrap
from gem_core.sandbox.warm_pool import WarmPool, launcher
from gem_core.sandbox.worker import HEADER, MAX_MESSAGE_BYTES

logger = logging.getLogger(__name__)

#: Environment variable: the most workers one pool runs at once (default: CPU count, at most 4).
WORKERS_ENV_VAR = "GEM_SCORING_WORKERS"
WORKER_MODULE = "gem_core.sandbox.worker"
#: Size of a sandboxed worker's ``/tmp`` (and ``/dev/shm``).
SCRATCH_BYTES = 64 << 20


@dataclass(frozen=True)
class Outcome:
    """What one call returned: ``value``, or ``timed_out``, or an ``error`` message."""

    value: Any = None
    timed_out: bool = False
    error: str | None = None

    @property
    def ok(self) -> bool:
        return not self.timed_out and self.error is None


class WorkerStartError(GemError):
    """A scoring worker could not start (its module failed to import, or it never answered)."""


def default_max_workers() -> int:
    value = os.environ.get(WORKERS_ENV_VAR, "").strip()
    if value:
        try:
            count = int(value)
        except ValueError:
            raise GemError(f"{WORKERS_ENV_VAR} must be a positive integer, got {value!r}.") from None
        if count < 1:
            raise GemError(f"{WORKERS_ENV_VAR} must be a positive integer, got {value!r}.")
        return count
    return max(1, min(4, os.cpu_count() or 1))


class _Worker:
    """One worker process and its two pipes (a sandbox of a :class:`WarmPool`)."""

    def __init__(self, process: subprocess.Popen, sandbox: contextlib.ExitStack):
        self.process = process
        self.jobs = 0
        self.ready = False
        self._sandbox = sandbox  # what the sandbox holds while it runs (a user namespace, run by root)
        self.busy = False  # a caller is reading or writing its pipes
        self._closing = threading.Lock()
        self._killed = self._released = False
        self._selector = selectors.DefaultSelector()
        self._selector.register(self.process.stdout, selectors.EVENT_READ)

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def send(self, payload: bytes) -> None:
        data = HEADER.pack(len(payload)) + payload
        fd = self.process.stdin.fileno()
        while data:
            data = data[os.write(fd, data):]

    def receive(self, deadline: float) -> dict[str, Any] | None:
        """The next message, or None when ``deadline`` (a ``time.monotonic`` value) passes.

        Raises EOFError when the worker has exited and ValueError when it sent garbage."""
        header = self._read_exactly(HEADER.size, deadline)
        if header is None:
            return None
        (size,) = HEADER.unpack(header)
        if size > MAX_MESSAGE_BYTES:
            raise ValueError(f"message of {size} bytes")
        body = self._read_exactly(size, deadline)
        if body is None:
            return None
        message = json.loads(body)
        if not isinstance(message, dict):
            raise ValueError("message is not an object")
        return message

    def _read_exactly(self, size: int, deadline: float) -> bytes | None:
        fd = self.process.stdout.fileno()
        chunks: list[bytes] = []
        while size:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not self._selector.select(remaining):
                return None
            chunk = os.read(fd, size)
            if not chunk:
                raise EOFError("the worker exited")
            chunks.append(chunk)
            size -= len(chunk)
        return b"".join(chunks)

    def close(self) -> None:
        """Kill the worker and everything it started, reap it, and release its pipes unless a
        caller is using them (the caller, woken by the end of its output, closes it again).
        Safe from any thread, any number of times."""
        with self._closing:
            if not self._killed:
                self._killed = True
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self.process.pid, signal.SIGKILL)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL is not ignorable
                logger.warning("scoring worker %d did not exit after SIGKILL", self.process.pid)
            if not self.busy and not self._released:
                self._released = True
                self._selector.close()
                self.let_go()
                self._sandbox.close()

    def let_go(self) -> None:
        """Close this process's ends of the worker's pipes, leaving the worker running."""
        for stream in (self.process.stdin, self.process.stdout):
            with contextlib.suppress(OSError):
                stream.close()


class WorkerPool:
    """Worker processes that run functions of ``module`` under a time limit.

    ``call`` is safe from any number of threads; at most ``max_workers`` workers run at once.
    """

    def __init__(self, module: str, *, max_workers: int | None = None, memory_mb: int = 4096,
                 start_timeout: float = 180.0, grace: float = 2.0):
        self.module = module
        self.max_workers = max_workers or default_max_workers()
        self.memory_mb = memory_mb
        self.start_timeout = start_timeout
        self.grace = grace
        self._workers = self._new_lending()
        _POOLS.add(self)

    def call(self, function: str, *args: Any, time_limit: float,
             setup: tuple[str, tuple[Any, ...]] | None = None) -> Outcome:
        """Run ``module.function(*args)`` in a worker, allowing it ``time_limit`` seconds.

        ``setup`` is an optional ``(function, args)`` run first in the same worker, outside the
        time limit (for example to build a dataset the function needs); it is bounded by
        ``start_timeout`` instead. Raises :class:`WorkerStartError` when no worker can start.
        """
        if time_limit <= 0:
            raise ValueError(f"time_limit must be positive, got {time_limit}")
        request = pickle.dumps((setup, function, args, float(time_limit)))
        workers = self._workers
        worker = workers.borrow()
        healthy = False
        try:
            worker.busy = True
            outcome, healthy = self._run(worker, request, time_limit, setup is not None)
            return outcome
        finally:
            worker.busy = False
            if not healthy:
                worker.close()
            workers.give_back(worker)  # a worker closed meanwhile is closed again, and released

    async def acall(self, function: str, *args: Any, time_limit: float,
                    setup: tuple[str, tuple[Any, ...]] | None = None) -> Outcome:
        """:meth:`call` from async code, without blocking the event loop."""
        return await asyncio.to_thread(self.call, function, *args, time_limit=time_limit, setup=setup)

    def warm(self) -> None:
        """Start one worker if none runs yet (returns once it is started, not ready)."""
        self._workers.warm()

    def close(self) -> None:
        """Kill every worker, busy ones included (their callers see them die). Calls made
        afterwards start new ones."""
        workers, self._workers = self._workers, self._new_lending()
        workers.close(in_use=True)

    @property
    def worker_pids(self) -> list[int]:
        """Process ids of the live workers (the sandbox's when sandboxed)."""
        return sorted(worker.process.pid for worker in self._workers.sandboxes)

    # -- internals -------------------------------------------------------------------------

    def _new_lending(self) -> WarmPool[_Worker]:
        return WarmPool(self._start, max_sandboxes=self.max_workers, jobs_per_sandbox=None)

    def _start(self) -> _Worker:
        sandbox = contextlib.ExitStack()
        program = ["-m", WORKER_MODULE, self.module, str(self.memory_mb)]
        try:
            if sandboxed():
                python = _interpreter()
                argv, fds = sandbox.enter_context(bubblewrap.sandbox_argv(
                    python, program, tmp_bytes=SCRATCH_BYTES, files={}, host_root=True,
                    readonly_binds=tuple((path, path) for path in _import_roots(self.module)
                                         if not bubblewrap.visible(python, path, host_root=True))))
                env = {**os.environ, "TMPDIR": bubblewrap.WORKDIR}
            else:
                argv, fds, env = [sys.executable, *program], [], None
            # From the launcher thread: bwrap's --die-with-parent follows the thread that starts it.
            process = launcher().submit(
                subprocess.Popen, argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                start_new_session=True,  # its own process group, so a kill reaches everything it started
                pass_fds=fds, env=env).result()
        except (OSError, bubblewrap.SandboxError) as e:
            sandbox.close()
            raise WorkerStartError(f"Cannot start a scoring worker for {self.module}: {e}") from e
        except BaseException:
            sandbox.close()
            raise
        return _Worker(process, sandbox)

    def _wait_ready(self, worker: _Worker) -> None:
        try:
            message = worker.receive(time.monotonic() + self.start_timeout)
        except (EOFError, ValueError) as e:
            message = {"error": f"it exited before reporting ready ({e})"}
        if message is None:
            message = {"error": f"it did not report ready within {self.start_timeout:.0f} s"}
        if not message.get("ready"):
            raise WorkerStartError(
                f"A scoring worker for {self.module} failed to start: {message.get('error')}"
            )
        worker.ready = True

    def _run(self, worker: _Worker, request: bytes, time_limit: float,
             has_setup: bool) -> tuple[Outcome, bool]:
        """Send one request; returns the outcome and whether the worker may be reused."""
        if not worker.ready:
            self._wait_ready(worker)
        worker.jobs += 1
        try:
            worker.send(request)
            if has_setup:
                started = worker.receive(time.monotonic() + self.start_timeout)
                if started is None:
                    return Outcome(error=f"setup took longer than {self.start_timeout:.0f} s"), False
                if "started" not in started:
                    return _outcome(started), True
            message = worker.receive(time.monotonic() + time_limit + self.grace)
        except (OSError, EOFError) as e:
            return Outcome(error=f"the scoring worker died ({e}); it may have run out of memory"), False
        except ValueError as e:
            return Outcome(error=f"the scoring worker sent an invalid message ({e})"), False
        if message is None:  # it ignored its own alarm: stuck in C code, or swallowing exceptions
            return Outcome(timed_out=True), False
        return _outcome(message), True


def _outcome(message: dict[str, Any]) -> Outcome:
    if message.get("timeout"):
        return Outcome(timed_out=True)
    if "error" in message:
        return Outcome(error=str(message["error"]))
    return Outcome(value=message.get("value"))


# -- the sandbox --------------------------------------------------------------------------------

_sandbox_problem: list[str | None] = []
_sandbox_lock = threading.Lock()


def sandboxed() -> bool:
    """Whether workers run in a bubblewrap sandbox here; the first call that finds they cannot
    says why (a warning) once."""
    with _sandbox_lock:
        if not _sandbox_problem:
            try:
                problem = bubblewrap.problem(_interpreter())
            except bubblewrap.SandboxError as e:
                problem = str(e)
            if problem is not None:
                logger.warning("Answers are scored in worker processes WITHOUT a sandbox (no file-system, "
                               "network or process isolation): %s", problem)
            _sandbox_problem.append(problem)
        return _sandbox_problem[0] is None


def _interpreter() -> bubblewrap.Interpreter:
    return bubblewrap.interpreter(sys.executable)


def _import_roots(module: str) -> list[str]:
    """The folders a worker imports its code from: GEM's packages, ``module``'s and
    ``$PYTHONPATH``'s (a sandbox may need them shown beside the interpreter's)."""
    roots: list[str] = []
    for name in {"gem_core", module.partition(".")[0]}:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        if spec is not None and spec.submodule_search_locations:
            roots += spec.submodule_search_locations
        elif spec is not None and spec.origin:
            roots.append(os.path.dirname(spec.origin))
    roots += os.environ.get("PYTHONPATH", "").split(os.pathsep)
    return sorted({os.path.abspath(root) for root in roots if root and os.path.isdir(root)})


# -- process-wide bookkeeping -------------------------------------------------------------------

_POOLS: weakref.WeakSet[WorkerPool] = weakref.WeakSet()
_SHARED: dict[str, WorkerPool] = {}
_shared_lock = threading.Lock()


def shared_pool(module: str, *, before_start: Callable[[], None] | None = None) -> WorkerPool:
    """The process-wide pool of workers that run ``module``'s functions, made on first use;
    ``before_start`` runs first each time it is not made yet (a check that may raise)."""
    with _shared_lock:
        pool = _SHARED.get(module)
        if pool is None:
            if before_start is not None:
                before_start()
            pool = _SHARED[module] = WorkerPool(module)
        return pool


def _close_all() -> None:
    for pool in list(_POOLS):
        pool.close()


def _forget_after_fork() -> None:
    """In a forked child, the parent's workers are the parent's: let go of them without killing
    them (closing the child's copies of their pipes, so that they still notice the parent exit)."""
    global _shared_lock, _sandbox_lock
    _shared_lock, _sandbox_lock = threading.Lock(), threading.Lock()  # a parent's thread may hold them
    for pool in list(_POOLS):
        for worker in pool._workers.forget():
            worker.let_go()


atexit.register(_close_all)
os.register_at_fork(after_in_child=_forget_after_fork)

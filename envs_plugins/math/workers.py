"""Time-limited, sandboxed worker processes for scoring untrusted answers.

Scoring an LLM's answer runs third-party code on arbitrary text: sympy can spend minutes on a
crafted expression, and some reasoning-gym scorers call ``eval`` on the answer. So scoring runs in
long-lived worker processes (see :mod:`gem_envs.math.worker` for the other side):

* every call has a wall-clock limit: the worker interrupts itself at the limit and stays alive;
  if it has not answered ``grace`` seconds later (C code cannot be interrupted), the caller kills
  it and starts a fresh one on the next call;
* callers never wait without a deadline, from any thread (async callers use :meth:`acall`), and
  concurrent callers share up to ``max_workers`` workers;
* no process outlives its use: killed workers are reaped at once, every worker is killed at
  interpreter exit, a worker whose caller died exits (its stdin closes), and a CPU-time limit
  bounds one stuck in C code;
* workers run under bubblewrap when it is available (read-only file system, no network, own
  process namespace), with address-space and file-size limits (no writes once started).

Workers load one module given by name and run its functions; a module may define ``warm_up()``,
which runs once before the worker reports ready.
"""

from __future__ import annotations

import asyncio
import atexit
import json
import logging
import os
import pickle
import selectors
import shutil
import signal
import struct
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gem_core.errors import GemError

logger = logging.getLogger(__name__)

HEADER = struct.Struct(">I")
#: Largest message either side accepts.
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
#: Environment variable: the most workers one pool runs at once (default: CPU count, at most 4).
WORKERS_ENV_VAR = "GEM_SCORING_WORKERS"


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
    """One worker process and its two pipes."""

    def __init__(self, command: list[str]):
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            start_new_session=True,  # its own process group, so a kill reaches everything it started
            close_fds=True,
        )
        self.ready = False
        self._selector = selectors.DefaultSelector()
        self._selector.register(self.process.stdout, selectors.EVENT_READ)

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

    def kill(self) -> None:
        """Kill the worker and everything it started, and reap it."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL is not ignorable
            logger.warning("scoring worker %d did not exit after SIGKILL", self.process.pid)
        self._selector.close()
        for stream in (self.process.stdin, self.process.stdout):
            try:
                stream.close()
            except OSError:
                pass


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
        self._idle: list[_Worker] = []
        self._all: set[_Worker] = set()
        self._live = 0
        self._condition = threading.Condition()
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
        worker = self._acquire()
        healthy = False
        try:
            outcome, healthy = self._run(worker, request, time_limit, setup is not None)
            return outcome
        finally:
            self._release(worker, healthy)

    async def acall(self, function: str, *args: Any, time_limit: float,
                    setup: tuple[str, tuple[Any, ...]] | None = None) -> Outcome:
        """:meth:`call` from async code, without blocking the event loop."""
        return await asyncio.to_thread(self.call, function, *args, time_limit=time_limit, setup=setup)

    def warm(self) -> None:
        """Start one worker in the background if none runs yet (returns at once)."""
        with self._condition:
            if self._live:
                return
            self._live += 1
        try:
            worker = self._spawn()
        except BaseException:
            with self._condition:
                self._live -= 1
            raise
        with self._condition:
            self._idle.append(worker)
            self._condition.notify()

    def close(self) -> None:
        """Kill every worker. Calls made afterwards start new ones."""
        with self._condition:
            idle, self._idle = self._idle, []
            for worker in idle:
                self._all.discard(worker)
                self._live -= 1
            busy = list(self._all)  # their callers see the kill and release them
        for worker in idle + busy:
            worker.kill()

    @property
    def worker_pids(self) -> list[int]:
        """Process ids of the live workers (the sandbox's when sandboxed)."""
        with self._condition:
            return sorted(w.process.pid for w in self._all)

    # -- internals -------------------------------------------------------------------------

    def _acquire(self) -> _Worker:
        with self._condition:
            while True:
                if self._idle:
                    return self._idle.pop()
                if self._live < self.max_workers:
                    self._live += 1
                    break
                self._condition.wait()
        try:
            return self._spawn()
        except BaseException:
            with self._condition:
                self._live -= 1
                self._condition.notify()
            raise

    def _release(self, worker: _Worker, healthy: bool) -> None:
        if not healthy:
            worker.kill()
        with self._condition:
            if healthy and worker in self._all:
                self._idle.append(worker)
            else:
                self._all.discard(worker)
                self._live -= 1
            self._condition.notify()

    def _spawn(self) -> _Worker:
        command = [*sandbox_prefix(), sys.executable, "-m", "gem_envs.math.worker", self.module,
                   str(self.memory_mb)]
        try:
            worker = _Worker(command)
        except OSError as e:
            raise WorkerStartError(f"Cannot start a scoring worker ({' '.join(command)}): {e}") from e
        with self._condition:
            self._all.add(worker)
        return worker

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


# -- sandbox ------------------------------------------------------------------------------------

_sandbox: list[str] | None = None
_sandbox_lock = threading.Lock()


def sandbox_prefix() -> list[str]:
    """The bubblewrap command line that workers run under, or ``[]`` (with a warning, once) when
    bubblewrap is missing or does not work here."""
    global _sandbox
    with _sandbox_lock:
        if _sandbox is None:
            _sandbox = _probe_sandbox()
        return list(_sandbox)


def _probe_sandbox() -> list[str]:
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        logger.warning("bubblewrap (bwrap) is not installed: answers are scored in worker processes "
                       "WITHOUT a file-system and network sandbox. Install it (apt install "
                       "bubblewrap) to isolate them.")
        return []
    # Everything read-only, so that interpreters and packages load wherever they live (/tmp
    # included); a private scratch directory for libraries that write caches on import (matplotlib,
    # which reasoning-gym imports); no network; separate process and IPC namespaces.
    command = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--tmpfs", "/dev/shm", "--proc", "/proc",
               "--setenv", "TMPDIR", "/dev/shm", "--unshare-all", "--"]
    try:
        probe = subprocess.run([*command, sys.executable, "-c", ""], capture_output=True, timeout=60)
        failure = probe.stderr.decode(errors="replace").strip() if probe.returncode else None
    except (OSError, subprocess.TimeoutExpired) as e:
        failure = str(e)
    if failure is not None:
        logger.warning("bubblewrap does not work here (%s): answers are scored in worker processes "
                       "WITHOUT a file-system and network sandbox.", failure)
        return []
    return command


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
    for pool in list(_POOLS):
        for worker in pool._all:
            for stream in (worker.process.stdin, worker.process.stdout):
                try:
                    stream.close()
                except OSError:
                    pass
        pool._idle, pool._all, pool._live = [], set(), 0
        pool._condition = threading.Condition()


atexit.register(_close_all)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)

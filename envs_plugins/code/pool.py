"""Warm sandboxes: sandboxed test harnesses that stay up and run one submission after another.

Starting a sandbox and an interpreter costs far more than running a few tests, so each
:class:`WarmSandbox` starts the harness (:mod:`gem_envs.code.harness`) once, in a bubblewrap
sandbox made by :mod:`gem_core.sandbox.bubblewrap` (no network, read-only system, private /tmp, an
unprivileged user with no capabilities, its own PID namespace), and sends it jobs. The harness
never runs submitted code itself: every test runs in a child it forks, so each submission starts
from the same clean state. After each submission the harness kills every process left in the
sandbox and empties its /tmp, so one submission cannot touch the next. A sandbox that misbehaves
(killed by a test, stuck past its deadline) is thrown away and replaced.

A :class:`SandboxPool` lends sandboxes to concurrent callers, one each, and keeps them for
reuse (the lending is :class:`gem_core.sandbox.warm_pool.WarmPool`'s, shared with the Python tool).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import subprocess
import sys
import threading
import time
from typing import Any

from gem_core.errors import GemError
from gem_core.sandbox.warm_pool import MAX_SANDBOXES, WarmPool, launcher

PROCESS_LIMIT = 64  # processes and threads of one sandbox (the harness, a test and its threads)
OPEN_FILES = 256
TMP_BYTES = 64 << 20
JOBS_PER_SANDBOX = 500  # a sandbox is replaced after this many submissions
START_TIMEOUT = 60.0

# Runs first in the sandbox's fresh interpreter (started with -I -S): installs the interpreter's
# sys.path without site hooks, limits the sandbox's processes, and starts the harness's loop.
_BOOTSTRAP = """\
import resource, sys
sys.path[:] = {sys_path!r}
for _name, _value in (("RLIMIT_NPROC", {processes}), ("RLIMIT_NOFILE", {files}), ("RLIMIT_CORE", 0)):
    _limit = getattr(resource, _name)
    _hard = resource.getrlimit(_limit)[1]
    resource.setrlimit(_limit, (min(_value, _hard) if _hard >= 0 else _value,) * 2)
sys.argv = ["harness.py", "--serve"]
exec(compile(open("harness.py", "rb").read(), "harness.py", "exec"), {{"__name__": "__main__"}})
"""

_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "TMPDIR": "/tmp", "LANG": "C.UTF-8",
        "MPLBACKEND": "Agg", "MPLCONFIGDIR": "/tmp", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1"}


class SandboxBroken(GemError):
    """A warm sandbox died or stopped answering; its job's unreported tests did not run.
    ``records`` holds what it reported before; ``timed_out`` tells it ran past its deadline."""

    def __init__(self, message: str, records: list[dict[str, Any]] | None = None, timed_out: bool = False):
        super().__init__(message)
        self.records = records or []
        self.timed_out = timed_out


class WarmSandbox:
    """One sandboxed harness in ``--serve`` mode, showing the standard library and ``packages``
    (see :func:`gem_core.sandbox.view.package_view`)."""

    def __init__(self, harness: str, python: str | None = None, packages: tuple[str, ...] | None = None):
        from gem_core.sandbox import bubblewrap
        from gem_core.sandbox.view import package_view

        interpreter = bubblewrap.interpreter(python or sys.executable)
        problem = bubblewrap.problem(interpreter)
        if problem is not None:
            raise bubblewrap.SandboxUnavailableError(problem)
        view = package_view(interpreter, packages)
        bootstrap = _BOOTSTRAP.format(sys_path=list(view.sandbox_sys_path), processes=PROCESS_LIMIT,
                                      files=OPEN_FILES)
        self.jobs = 0
        self._buffer = b""
        self._stack = contextlib.ExitStack()
        harness_fd = os.memfd_create("harness.py")
        try:
            os.write(harness_fd, harness.encode())
            os.lseek(harness_fd, 0, os.SEEK_SET)
            argv, fds = self._stack.enter_context(bubblewrap.sandbox_argv(
                interpreter, ["-I", "-S", "-B", "-X", "utf8", "-c", bootstrap], tmp_bytes=TMP_BYTES,
                files={"harness.py": harness_fd}, view=view))
            self.process = launcher().submit(
                subprocess.Popen, argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                pass_fds=fds, cwd="/", env=_ENV, start_new_session=True).result()
            os.set_blocking(self.process.stdout.fileno(), False)
            self._output = select.poll()
            self._output.register(self.process.stdout.fileno(), select.POLLIN)
            ready = self._read_line(time.monotonic() + START_TIMEOUT)
        except BaseException:
            self.close()
            raise
        finally:
            os.close(harness_fd)
        if ready != {"ready": True}:
            self.close()
            raise SandboxBroken(f"The warm sandbox did not start (it said {ready!r}).")

    def run(self, job_line: str, timeout: float) -> list[dict[str, Any]]:
        """Send one job; return its records up to ``{"done": true}``. Raises
        :class:`SandboxBroken`, with the records received so far, when the sandbox dies or the
        timeout passes (the sandbox is then closed)."""
        self.jobs += 1
        records: list[dict[str, Any]] = []
        deadline = time.monotonic() + timeout
        try:
            self.process.stdin.write(job_line.encode("ascii"))
            self.process.stdin.flush()
            while True:
                record = self._read_line(deadline)
                if record is None:
                    break
                records.append(record)
                if record.get("done"):
                    return records
        except OSError:
            pass  # the harness is gone (a test killed it)
        timed_out = time.monotonic() >= deadline
        self.close()
        raise SandboxBroken("The warm sandbox " + ("ran past its deadline." if timed_out else "stopped."),
                            records, timed_out)

    def _read_line(self, deadline: float) -> dict[str, Any] | None:
        """The next JSON line of output, or None at end of output or after the deadline."""
        fd = self.process.stdout.fileno()
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not self._output.poll(left * 1000):
                return None
            try:
                chunk = os.read(fd, 1 << 20)
            except BlockingIOError:
                continue
            if not chunk:
                return None
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            record = json.loads(line)
        except ValueError:
            return {}
        return record if isinstance(record, dict) else {}

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def close(self) -> None:
        """Stop the harness and everything in its sandbox."""
        process = getattr(self, "process", None)
        if process is not None:
            with contextlib.suppress(OSError):
                process.kill()  # bwrap's init dies with it, and the PID namespace with the init
            for stream in (process.stdin, process.stdout):
                with contextlib.suppress(OSError):
                    stream.close()
            process.wait()
            self.process = None
        self._stack.close()


class SandboxPool(WarmPool[WarmSandbox]):
    """Lends warm harness sandboxes (see :class:`gem_core.sandbox.warm_pool.WarmPool`)."""

    def __init__(self, harness: str, python: str | None = None, max_sandboxes: int = MAX_SANDBOXES,
                 packages: tuple[str, ...] | None = None):
        super().__init__(self._new_sandbox, max_sandboxes=max_sandboxes, jobs_per_sandbox=JOBS_PER_SANDBOX)
        self.harness, self.python, self.packages = harness, python, packages

    def _new_sandbox(self) -> WarmSandbox:
        return WarmSandbox(self.harness, self.python, self.packages)

    def run(self, job_line: str, timeout: float) -> list[dict[str, Any]]:
        """Run one job in a sandbox of the pool (see :meth:`WarmSandbox.run`); ``timeout`` starts
        once the job has a sandbox."""
        sandbox = self.borrow()
        try:
            records = sandbox.run(job_line, timeout)
        except BaseException:
            sandbox.close()  # a new one replaces it next time
            self.give_back(sandbox)
            raise
        self.give_back(sandbox)
        return records


_pools: dict[tuple[str | None, tuple[str, ...] | None], SandboxPool] = {}
_pools_lock = threading.Lock()


def shared_pool(harness: str, python: str | None = None, packages: tuple[str, ...] | None = None) -> SandboxPool:
    """The process-wide pool for ``python`` showing ``packages`` (closed at exit)."""
    key = (python, packages)
    with _pools_lock:
        pool = _pools.get(key)
        if pool is None or pool.closed:
            pool = _pools[key] = SandboxPool(harness, python, packages=packages)
        return pool


@atexit.register
def _close_pools() -> None:
    for pool in list(_pools.values()):
        pool.close()


def _forget_pools_in_child() -> None:
    # A forked child must not share the parent's sandboxes (their pipes would interleave), and
    # has none of its threads.
    _pools.clear()


os.register_at_fork(after_in_child=_forget_pools_in_child)

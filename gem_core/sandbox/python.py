"""Run untrusted Python code in a bubblewrap sandbox, with limits and a real timeout.

Each call runs in a sandbox of its own (see :mod:`gem_core.sandbox.bubblewrap`): a fresh child of
an interpreter kept warm in a sandbox that no earlier program left anything in (see
:mod:`gem_core.sandbox.warm_python`), or, with ``sandbox="fresh"``, a new sandbox around a new
interpreter. It applies resource limits (address space, CPU time, processes, file size, open
files), and kills the sandbox with everything in it at the wall-clock timeout. stdout and stderr are
read as they come and kept up to ``max_output`` bytes each (head and tail), so a program printing
gigabytes costs nothing.

The sandbox shows the standard library and the packages the program is meant to use
(``packages``, by default :data:`~gem_core.sandbox.view.DEFAULT_PACKAGES`), never the rest of what
is installed (see :mod:`gem_core.sandbox.view`). The interpreter starts with ``-I -S``: no site
hooks (``.pth`` files) run, and the view's ``sys.path`` is installed directly, so the packages
shown import as usual. Without a working bubblewrap, :func:`run_python` refuses unless the
caller passes ``allow_unsandboxed=True``; such results carry ``sandboxed=False`` (and the
program sees everything).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import math
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from gem_core.sandbox import bubblewrap
from gem_core.sandbox.bubblewrap import SandboxConfigError, SandboxError, SandboxUnavailableError  # noqa: F401
from gem_core.sandbox.threads import tool_threads
from gem_core.sandbox.view import PackageView, package_view

__all__ = [  # the sandbox errors are importable from here too, and listed in gem_core.sandbox
    "Limits",
    "PythonResult",
    "SANDBOX_MODES",
    "arun_python",
    "run_python",
    "sandbox_problem",
]

logger = logging.getLogger("gem_core.sandbox")

SCRIPT_NAME = "main.py"
SANDBOX_MODES = ("warm", "fresh")
_READ_CHUNK = 1 << 20
_DRAIN_GRACE = 1.0  # seconds to collect output once the program has ended or been killed


@dataclass(frozen=True)
class PythonResult:
    """What a program did.

    ``exit_code`` follows the shell convention: the program's exit status, or ``128 + N`` when it
    was killed by signal N (137 after a timeout, 152 when it ran out of CPU time).
    ``truncated`` tells that stdout or stderr exceeded ``max_output`` and lost its middle.
    ``sandboxed`` is False only for calls that passed ``allow_unsandboxed=True`` on a machine
    where no sandbox could be made.
    """

    stdout: str
    stderr: str
    exit_code: int
    timed_out: bool
    sandboxed: bool
    duration: float
    truncated: bool = False

    @property
    def ok(self) -> bool:
        """True when the program exited with status 0 within its time."""
        return self.exit_code == 0 and not self.timed_out

    @property
    def signal(self) -> int | None:
        """The signal that killed the program, if any (by the shell convention)."""
        return self.exit_code - 128 if 128 < self.exit_code <= 128 + 64 else None


@dataclass(frozen=True)
class Limits:
    """Resource limits for one call; see :func:`run_python`."""

    timeout: float = 5.0
    memory_mb: int = 1024
    cpu_seconds: int | None = None
    max_processes: int = 32
    max_file_mb: int = 32
    tmp_mb: int = 64
    max_output: int = 16384
    max_open_files: int = 256

    def __post_init__(self) -> None:
        if isinstance(self.timeout, bool) or not isinstance(self.timeout, (int, float)) \
                or not 0 < self.timeout < math.inf:
            raise SandboxConfigError(f"timeout must be a positive number of seconds, got {self.timeout!r}.")
        for name in ("memory_mb", "max_processes", "max_file_mb", "tmp_mb", "max_output", "max_open_files"):
            _check_positive_int(name, getattr(self, name))
        if self.cpu_seconds is not None:
            _check_positive_int("cpu_seconds", self.cpu_seconds)

    def rlimits(self, *, processes: bool) -> list[tuple[str, int, int]]:
        """``(resource, soft, hard)`` limits. The CPU hard limit is a second above the soft one,
        so a busy program first gets SIGXCPU (a clear cause) and SIGKILL only if it ignores that."""
        cpu = self.cpu_seconds if self.cpu_seconds is not None else math.ceil(self.timeout) + 1
        limits = [
            ("RLIMIT_AS", self.memory_mb << 20, self.memory_mb << 20),
            ("RLIMIT_CPU", cpu, cpu + 1),
            ("RLIMIT_FSIZE", self.max_file_mb << 20, self.max_file_mb << 20),
            ("RLIMIT_NOFILE", self.max_open_files, self.max_open_files),
            ("RLIMIT_CORE", 0, 0),
        ]
        if processes:
            limits.append(("RLIMIT_NPROC", self.max_processes, self.max_processes))
        return limits


def run_python(
    code: str,
    *,
    timeout: float = 5.0,
    stdin: str | bytes | None = None,
    memory_mb: int = 1024,
    cpu_seconds: int | None = None,
    max_processes: int = 32,
    max_file_mb: int = 32,
    tmp_mb: int = 64,
    max_output: int = 16384,
    files: Mapping[str, str | bytes] | None = None,
    python: str | None = None,
    packages: Sequence[str] | None = None,
    allow_unsandboxed: bool = False,
    sandbox: str = "warm",
) -> PythonResult:
    """Run ``code`` as a Python program in a sandbox of its own and return what it did.

    Args:
        code: the program's source; it runs as ``/tmp/main.py`` with ``__name__ == "__main__"``.
        timeout: wall-clock seconds before the sandbox, and everything in it, is killed.
        stdin: the program's standard input (empty when None).
        memory_mb: address-space limit of each process.
        cpu_seconds: CPU-time limit of each process (default: ``ceil(timeout) + 1``).
        max_processes: processes and threads the program may have at once.
        max_file_mb: the largest file the program may write.
        tmp_mb: size of the private ``/tmp`` (and, separately, of ``/dev/shm``).
        max_output: bytes kept of stdout and of stderr each; beyond it the middle is dropped.
        files: extra files to place in ``/tmp`` before the program starts, by relative path.
        python: the interpreter to run (default: the current one).
        packages: the installed distributions the program may import, beside the standard
            library (their dependencies are shown too); None shows those of
            :data:`~gem_core.sandbox.view.DEFAULT_PACKAGES` that are installed (numpy, scipy,
            sympy, pandas, networkx, sortedcontainers). Nothing else installed is visible.
        allow_unsandboxed: where no sandbox can be made, run the program directly (with the
            same time, memory, CPU and file-size limits, but no isolation and no process limit)
            instead of raising :class:`SandboxUnavailableError`; the result says
            ``sandboxed=False``.
        sandbox: ``"warm"`` forks the program from an interpreter kept running in a sandbox
            (see :mod:`gem_core.sandbox.warm_python`): a few milliseconds instead of tens, with the
            same isolation from other calls (nothing of one program reaches the next); ``"fresh"``
            starts a new sandbox and interpreter for it. Both give the same results.

    Raises:
        SandboxUnavailableError: no sandbox can be made here and ``allow_unsandboxed`` is False.
        SandboxConfigError: an invalid argument, or a package in ``packages`` that is not
            installed.
    """
    if not isinstance(code, str):
        raise SandboxConfigError(f"code must be a str, got {type(code).__name__}.")
    if sandbox not in SANDBOX_MODES:
        raise SandboxConfigError(f"sandbox must be one of {', '.join(map(repr, SANDBOX_MODES))}, not {sandbox!r}.")
    limits = Limits(timeout, memory_mb, cpu_seconds, max_processes, max_file_mb, tmp_mb, max_output)
    contents = {SCRIPT_NAME: _to_bytes(code), **_checked_files(files)}
    stdin_data = _to_bytes(stdin) if stdin is not None else None
    interpreter = bubblewrap.interpreter(python or sys.executable)
    view = package_view(interpreter, packages)
    problem = bubblewrap.problem(interpreter)
    if problem is not None and not allow_unsandboxed:
        raise SandboxUnavailableError(problem)
    if problem is None and sandbox == "warm":
        return _run_warm(view, limits, contents, stdin_data)
    if problem is None:
        return _run_sandboxed(view, limits, contents, stdin_data)
    return _run_unsandboxed(interpreter, limits, contents, stdin_data)


async def arun_python(code: str, **options) -> PythonResult:
    """The async form of :func:`run_python`, with the same arguments. Calls wait in the thread
    pool shared by all tools (64 threads), so many run at once."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(tool_threads(), functools.partial(run_python, code, **options))


def sandbox_problem(python: str | None = None) -> str | None:
    """Why no sandbox can be made here (a message naming the fix), or None when it works."""
    return bubblewrap.problem(bubblewrap.interpreter(python or sys.executable))


# --- running ------------------------------------------------------------------------------


def _run_sandboxed(view: PackageView, limits: Limits, contents: dict[str, bytes],
                   stdin: bytes | None) -> PythonResult:
    script = f"{bubblewrap.WORKDIR}/{SCRIPT_NAME}"
    program = _python_args(view.sandbox_sys_path, limits, script, sandboxed=True)
    fds = {name: _memfd(data) for name, data in contents.items()}
    try:
        sandbox = bubblewrap.sandbox_argv(view.python, program, tmp_bytes=limits.tmp_mb << 20, files=fds,
                                          drops_privileges=True, view=view)
        with sandbox as (argv, pass_fds):
            return _execute(argv, limits, stdin=stdin, pass_fds=pass_fds, cwd="/",
                            env=_program_env(bubblewrap.WORKDIR), sandboxed=True)
    finally:
        for fd in fds.values():
            os.close(fd)


def _run_warm(view: PackageView, limits: Limits, contents: dict[str, bytes],
              stdin: bytes | None) -> PythonResult:
    from gem_core.sandbox import warm_python

    pool = warm_python.shared_pool(view, limits.tmp_mb << 20, functools.partial(_program_env, bubblewrap.WORKDIR))
    sandbox = pool.borrow()
    try:
        job = {"files": contents, "limits": [*limits.rlimits(processes=True), ("RLIMIT_MSGQUEUE", 0, 0)]}
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        stdin_fd = _memfd(stdin) if stdin is not None else os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
        try:
            start = time.monotonic()
            sandbox.start(job, stdin_fd, out_w, err_w)
        finally:
            for fd in (stdin_fd, out_w, err_w):
                os.close(fd)
        out, err = _Capture(limits.max_output), _Capture(limits.max_output)
        deadline = start + limits.timeout
        try:
            # A sandbox that cannot take another program is closed as the program ends, and what
            # it left running with it: the output then ends.
            timed_out = _pump({out_r: out, err_r: err}, deadline=deadline, kill=sandbox.close,
                              end_fd=sandbox.channel.fileno(), on_end=sandbox.finish)
            if not timed_out and sandbox.exit_status is None and sandbox.alive:
                timed_out = not sandbox.wait(deadline - time.monotonic())  # its output closed before its end
        finally:
            os.close(out_r)
            os.close(err_r)
        duration = time.monotonic() - start
        status = sandbox.exit_status
        exit_code = 128 + signal.SIGKILL if timed_out or status is None else (128 - status if status < 0 else status)
        return PythonResult(stdout=out.text(), stderr=err.text(), exit_code=int(exit_code), timed_out=timed_out,
                            sandboxed=True, duration=duration, truncated=out.truncated or err.truncated)
    finally:
        if not sandbox.reusable:
            sandbox.close()
        pool.give_back(sandbox)


def _run_unsandboxed(interpreter: bubblewrap.Interpreter, limits: Limits, contents: dict[str, bytes],
                     stdin: bytes | None) -> PythonResult:
    _warn_unsandboxed()
    workdir = tempfile.mkdtemp(prefix="gem-python-")
    try:
        for name, data in contents.items():
            path = os.path.join(workdir, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(data)
        program = _python_args(interpreter.sys_path, limits, os.path.join(workdir, SCRIPT_NAME), sandboxed=False)
        return _execute([interpreter.executable, *program], limits, stdin=stdin, pass_fds=[], cwd=workdir,
                        env=_program_env(workdir), sandboxed=False)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


@functools.lru_cache(maxsize=1)
def _warn_unsandboxed() -> None:
    logger.warning("Running untrusted Python code WITHOUT a sandbox (allow_unsandboxed=True): %s",
                   sandbox_problem())


def _execute(argv: list[str], limits: Limits, *, stdin: bytes | None, pass_fds: list[int], cwd: str,
             env: dict[str, str], sandboxed: bool) -> PythonResult:
    stdin_fd = _memfd(stdin) if stdin is not None else subprocess.DEVNULL
    start = time.monotonic()
    try:
        proc = subprocess.Popen(argv, stdin=stdin_fd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                pass_fds=pass_fds, cwd=cwd, env=env, start_new_session=True)
    finally:
        if stdin is not None:
            os.close(stdin_fd)
    out, err = _Capture(limits.max_output), _Capture(limits.max_output)
    timed_out = False
    pidfd = _pidfd(proc.pid)
    kill = functools.partial(_kill, proc, sandboxed)
    try:
        timed_out = _pump({proc.stdout.fileno(): out, proc.stderr.fileno(): err}, deadline=start + limits.timeout,
                          kill=kill, end_fd=pidfd, on_end=kill,
                          ended=None if pidfd is not None else lambda: proc.poll() is not None)
    finally:
        kill()  # nothing may outlive the call, whatever happened above
        proc.stdout.close()
        proc.stderr.close()
        status = proc.wait()
        if pidfd is not None:
            os.close(pidfd)
    exit_code = 128 + signal.SIGKILL if timed_out else (128 - status if status < 0 else status)
    return PythonResult(
        stdout=out.text(), stderr=err.text(), exit_code=int(exit_code), timed_out=timed_out,
        sandboxed=sandboxed, duration=time.monotonic() - start, truncated=out.truncated or err.truncated,
    )


def _pump(captures: dict[int, _Capture], *, deadline: float, kill: Callable[[], None], end_fd: int | None,
          on_end: Callable[[], None], ended: Callable[[], bool] | None = None) -> bool:
    """Read the program's output until it ends; ``kill()`` it at ``deadline``. True if it timed out.

    The program's end is watched through ``end_fd`` (readable once it has ended; a pidfd, a warm
    sandbox's channel), or else by polling ``ended()``; then ``on_end()`` runs, once. So a program
    that exits while something it started still holds its output open does not wait for the timeout.
    """
    selector = selectors.DefaultSelector()
    for fd in captures:
        os.set_blocking(fd, False)
        selector.register(fd, selectors.EVENT_READ)
    if end_fd is not None:
        selector.register(end_fd, selectors.EVENT_READ)
    timed_out = False
    end: float | None = None  # when the program exited or was killed
    open_pipes = len(captures)
    try:
        while open_pipes:
            now = time.monotonic()
            if end is None and ended is not None and ended():
                end = now
                on_end()
            if end is None and now >= deadline:
                timed_out, end = True, now
                kill()
            until = deadline if end is None else end + _DRAIN_GRACE
            if now >= until:
                break  # the output is still held open long after the end: give up on the rest
            wait = until - now if ended is None else min(until - now, 0.02)
            for key, _ in selector.select(wait):
                if key.fd == end_fd:
                    selector.unregister(end_fd)
                    if end is None:
                        end = time.monotonic()
                        on_end()  # the program is done: stop anything it left behind
                    continue
                try:
                    data = os.read(key.fd, _READ_CHUNK)
                except BlockingIOError:
                    continue
                if data:
                    captures[key.fd].feed(data)
                else:
                    selector.unregister(key.fd)
                    open_pipes -= 1
    finally:
        selector.close()
    return timed_out


def _kill(proc: subprocess.Popen, sandboxed: bool) -> None:
    """Kill the program and everything it started.

    Killing bwrap kills the sandbox's init (``--die-with-parent``) and with it the whole pid
    namespace. Without a sandbox, the program's session is killed as a group.
    """
    if proc.returncode is None:
        try:
            proc.kill()
        except ProcessLookupError:
            pass
    if not sandboxed:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


class _Capture:
    """Keeps the first and last bytes of a stream, ``limit`` bytes in all."""

    def __init__(self, limit: int):
        self.limit = limit
        self.total = 0
        self.head = bytearray()
        self.tail = bytearray()
        self._tail_size = limit // 2

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        if len(self.head) < self.limit:
            self.head += data[: self.limit - len(self.head)]
        if self._tail_size:
            self.tail += data[-self._tail_size:]
            if len(self.tail) > 2 * self._tail_size:  # trim in batches, not on every chunk
                del self.tail[: -self._tail_size]

    @property
    def truncated(self) -> bool:
        return self.total > self.limit

    def text(self) -> str:
        if not self.truncated:
            return self.head.decode("utf-8", "replace")
        keep = self.limit - self._tail_size
        tail = bytes(self.tail[-self._tail_size:]) if self._tail_size else b""
        dropped = self.total - keep - len(tail)
        return (self.head[:keep].decode("utf-8", "replace")
                + f"\n[... {dropped} bytes of output truncated ...]\n"
                + tail.decode("utf-8", "replace"))


# --- the program ----------------------------------------------------------------------------

#: Python source applying ``limits`` (:meth:`Limits.rlimits`, formatted in) to its own process,
#: within the hard limits it already has; the program's children inherit them.
SET_LIMITS = """\
import resource as _r
for _k, _soft, _hard in {limits!r}:
    _k = getattr(_r, _k)
    _max = _r.getrlimit(_k)[1]
    if _max >= 0:
        _soft, _hard = min(_soft, _max), min(_hard, _max)
    _r.setrlimit(_k, (_soft, _hard))
del _r, _k, _soft, _hard, _max
"""

# Runs first in the fresh interpreter: in the sandbox, switches to the sandbox user (see
# bubblewrap.DROP_PRIVILEGES); applies the limits (in the sandbox, where the process count
# starts at zero), installs the interpreter's sys.path without running site hooks, and runs the
# program as __main__ from its file, so tracebacks show its lines. The hook drops this
# bootstrap's own frame from tracebacks.
_BOOTSTRAP = """\
{drop_privileges}{set_limits}import sys
sys.path[:] = {sys_path!r}
def _hook(t, v, tb, _default=sys.excepthook):
    if tb is not None and tb.tb_frame.f_code.co_filename == "<string>":
        tb = tb.tb_next
        v = v.with_traceback(tb)
    _default(t, v, tb)
sys.excepthook = _hook
import builtins as _b
_b.exit = _b.quit = sys.exit
__file__ = sys.argv[0] = {script!r}
del _hook, _b, sys
exec(compile(open(__file__, "rb").read(), __file__, "exec"))
"""


def _python_args(sys_path: Sequence[str], limits: Limits, script: str, *, sandboxed: bool) -> list[str]:
    # The process limit needs the sandbox's own uid: outside it, it would count the host user's processes.
    bootstrap = _BOOTSTRAP.format(drop_privileges=bubblewrap.DROP_PRIVILEGES if sandboxed else "",
                                  set_limits=SET_LIMITS.format(limits=limits.rlimits(processes=sandboxed)),
                                  sys_path=list(sys_path), script=script)
    return ["-I", "-S", "-B", "-X", "utf8", "-c", bootstrap]


def _program_env(home: str) -> dict[str, str]:
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": home,
        "TMPDIR": home,
        "LANG": "C.UTF-8",
        "MPLBACKEND": "Agg",
        "MPLCONFIGDIR": home,
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }


# --- helpers --------------------------------------------------------------------------------


def _check_positive_int(name: str, value: object) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise SandboxConfigError(f"{name} must be a positive integer, got {value!r}.")


def _checked_files(files: Mapping[str, str | bytes] | None) -> dict[str, bytes]:
    checked: dict[str, bytes] = {}
    for name, data in (files or {}).items():
        path = PurePosixPath(name) if isinstance(name, str) and name else None
        if path is None or path.is_absolute() or ".." in path.parts or str(path) in (".", SCRIPT_NAME):
            raise SandboxConfigError(f"Invalid file name {name!r}: use a relative path inside the working "
                                     f"directory, other than {SCRIPT_NAME!r}.")
        checked[str(path)] = _to_bytes(data, what=f"file {name!r}")
    return checked


def _to_bytes(data: object, *, what: str = "input") -> bytes:
    if isinstance(data, bytes):
        return data
    if isinstance(data, str):
        return data.encode("utf-8", "replace")
    raise SandboxConfigError(f"The {what} must be str or bytes, got {type(data).__name__}.")


def _memfd(data: bytes) -> int:
    """An anonymous in-memory file holding ``data``, positioned at its start."""
    fd = os.memfd_create("gem-sandbox")  # close-on-exec; pass_fds hands it to the sandbox
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None

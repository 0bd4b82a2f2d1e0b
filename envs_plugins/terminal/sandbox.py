"""A bubblewrap sandbox holding a persistent shell, driven from the host.

The sandbox is the project's bubblewrap sandbox (:mod:`gem_core.sandbox.bubblewrap`: no network,
read-only system, private ``/tmp``, unprivileged user, resource limits) with three more private,
writable, size-limited directories: the workspace (``/app`` unless a task says otherwise),
``/tests`` and ``/logs``, empty until grading fills them. Inside runs
:mod:`gem_envs.terminal.supervisor`, which owns the shell and every process. The protocol with it
is :class:`ShellSandbox`'s, shared with the container backend (:mod:`gem_envs.terminal.container`).
"""

from __future__ import annotations

import base64
import functools
import io
import json
import os
import select
import shutil
import subprocess
import sys
import tarfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from gem_core.sandbox import bubblewrap
from gem_core.sandbox.bubblewrap import SandboxConfigError, SandboxError, SandboxUnavailableError
from gem_core.sandbox.python import SET_LIMITS, Limits

TESTS_DIR = "/tests"
LOGS_DIR = "/logs"
SHELL_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_REPLY_SLACK = 30.0  # seconds beyond a request's own time limit before the supervisor counts as hung

# Runs first in the sandbox's interpreter: apply the limits (inherited by the shell and everything
# it starts), then run the supervisor, which starts the agent's processes as the sandbox user.
_BOOTSTRAP = """\
{set_limits}exec(compile({source!r}, "supervisor.py", "exec"))
"""
# The program line stays short (``ps`` shows it): the bootstrap and the configuration come first
# on standard input.
LOADER = "import sys, json; exec(json.loads(sys.stdin.buffer.readline()))"
_PROGRAM = ("-I", "-S", "-B", "-c", LOADER)


@dataclass(frozen=True)
class CommandResult:
    """What one command did. ``exit_code`` is 124 after a timeout; ``restarted`` says that the
    shell had exited or was stuck and a fresh one replaced it (its state is lost)."""

    output: str
    exit_code: int
    timed_out: bool
    restarted: bool = False


class ShellSandbox:
    """What every terminal sandbox shares: a supervisor (:mod:`gem_envs.terminal.supervisor`),
    started by a subclass with :meth:`_launch`, driven over its standard input and output.
    ``workdir`` is the shell's working directory."""

    kind = "sandbox"  # what error messages call it
    limits: Limits
    workdir: str
    python: str  # "3.11": the version of the sandbox's python3
    network = False  # whether it reaches the network
    _proc: subprocess.Popen | None = None
    _closed = True

    def _launch(self, argv: list[str], config: dict, pass_fds: list[int] | tuple[int, ...] = ()) -> None:
        """Start ``argv`` (which runs ``python3`` :data:`_PROGRAM`), hand it the supervisor and
        ``config``, and wait until it is ready."""
        bootstrap = _BOOTSTRAP.format(set_limits=SET_LIMITS.format(limits=self.limits.rlimits(processes=True)),
                                      source=_supervisor_source())
        self._proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=subprocess.DEVNULL, pass_fds=pass_fds, cwd="/", start_new_session=True)
        self._closed = False
        self._lock = threading.Lock()
        self._proc.stdin.write(json.dumps(bootstrap).encode() + b"\n" + json.dumps(config).encode() + b"\n")
        self._proc.stdin.flush()
        try:
            ready = self._reply(60.0)
        except (SandboxError, ValueError):
            ready = None
        if not (isinstance(ready, dict) and ready.get("ready") is True):
            self.close()
            why = f": {ready['error']}" if isinstance(ready, dict) and "error" in ready else ""
            raise SandboxError(f"The terminal {self.kind} did not start{why}.")
        self.python = ready["python"]  # the version of the python3 that runs the supervisor, and the tests

    # --- requests ---------------------------------------------------------------------------

    def run(self, command: str, timeout: float | None = None) -> CommandResult:
        """Run ``command`` in the persistent shell, killing what it started after ``timeout``."""
        timeout = self.limits.timeout if timeout is None else min(timeout, self.limits.timeout)
        command = command.encode("utf-8", "replace").decode("utf-8").replace("\0", "")  # bash takes no NUL
        reply = self._request({"op": "shell", "command": command, "timeout": timeout,
                               "max_output": self.limits.max_output}, timeout)
        return CommandResult(reply["output"], reply["exit_code"], reply["timed_out"], reply["restarted"])

    def execute(self, script: str, timeout: float, env: Mapping[str, str] | None = None,
                isolated: bool = False) -> CommandResult:
        """Run ``bash -c script`` as a fresh process (not in the shell), in the working directory.
        ``isolated`` (grading) gives it a fresh, empty ``HOME``, no Python user site, and a ``PATH``
        on which the folders the agent may write come last (see the supervisor's ``isolated``)."""
        reply = self._request({"op": "exec", "script": script, "timeout": timeout, "env": dict(env or {}),
                               "isolated": isolated, "max_output": self.limits.max_output}, timeout)
        return CommandResult(reply["output"], reply["exit_code"], reply["timed_out"])

    def put(self, directory: str, archive: bytes, clean: bool = False) -> None:
        """Extract a tar ``archive`` into ``directory`` in the sandbox (emptied first if ``clean``)."""
        self._request({"op": "put", "dir": directory, "tar": base64.b64encode(archive).decode(), "clean": clean},
                      60.0)

    def snapshot(self, directory: str | None = None) -> bytes:
        """``directory`` (default: the workspace) as a tar archive."""
        reply = self._request({"op": "snapshot", "dir": directory or self.workdir}, 60.0)
        return base64.b64decode(reply["tar"])

    def kill_all(self) -> None:
        """End the shell and every process in the sandbox (the next command starts a new shell)."""
        self._request({"op": "kill_all"}, 10.0)

    def close(self) -> None:
        """Kill the sandbox and everything in it. Safe to call more than once."""
        if getattr(self, "_closed", True):
            return
        self._closed = True
        self._proc.kill()  # bwrap's init dies with it (--die-with-parent), and with it the pid namespace
        for stream in (self._proc.stdin, self._proc.stdout):
            try:
                stream.close()
            except OSError:
                pass
        self._proc.wait()

    @property
    def alive(self) -> bool:
        return not self._closed and self._proc.poll() is None

    def __enter__(self) -> ShellSandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()

    def _request(self, request: dict, timeout: float) -> dict:
        with self._lock:  # one request at a time: replies come in order
            return self._exchange(request, timeout)

    def _exchange(self, request: dict, timeout: float) -> dict:
        if not self.alive:
            raise SandboxError(f"The terminal {self.kind} has ended (it was closed, or its supervisor died).")
        try:
            self._proc.stdin.write(json.dumps(request).encode() + b"\n")
            self._proc.stdin.flush()
        except OSError:
            self.close()
            raise SandboxError("The terminal sandbox has ended unexpectedly.") from None
        reply = self._reply(timeout + _REPLY_SLACK)
        if "error" in reply:
            raise SandboxError(f"The terminal sandbox failed a request: {reply['error']}")
        return reply

    def _reply(self, timeout: float) -> dict:
        if not select.select([self._proc.stdout], [], [], timeout)[0]:
            self.close()
            raise SandboxError(f"The terminal sandbox did not answer within {timeout:.0f} s; it was killed.")
        line = self._proc.stdout.readline()
        if not line:
            self.close()
            raise SandboxError("The terminal sandbox has ended unexpectedly.")
        return json.loads(line)


class TerminalSandbox(ShellSandbox):
    """One bubblewrap sandbox with a persistent shell whose working directory is ``workdir``.

    ``limits`` apply to every process in it (``limits.timeout`` is the longest a command may be
    given; ``limits.tmp_mb`` sizes ``/tmp`` and, separately, each of the workspace, ``/tests`` and
    ``/logs``). ``env`` adds environment variables. Host folders in ``hidden`` (a task's own
    folder, with its tests) show empty should the sandbox's read-only view of the host include
    them (a package installed under ``/usr``); ``binds`` maps host folders to read-only paths in
    the sandbox. Use as a context manager, or call :meth:`close`.
    """

    def __init__(self, limits: Limits, workdir: str = "/app", env: Mapping[str, str] | None = None,
                 python: str | None = None, hidden: tuple[str | Path, ...] = (),
                 binds: tuple[tuple[str, str], ...] = ()):
        self.limits, self.workdir = limits, workdir
        interpreter = bubblewrap.interpreter(python or _system_python())
        problem = bubblewrap.problem(interpreter)
        if problem is not None:
            raise SandboxUnavailableError(problem)
        for mount in interpreter.mounts:
            if mount == workdir or mount.startswith(workdir.rstrip("/") + "/"):
                raise SandboxConfigError(f"The workspace {workdir} would hide {mount}, which the sandbox's Python "
                                         "needs; use another workspace folder, or install python3 in /usr.")
        shell_env = {"PATH": SHELL_PATH, "HOME": workdir, "TMPDIR": "/tmp", "LANG": "C.UTF-8", "TERM": "dumb",
                     "USER": "nobody", **(env or {})}
        with bubblewrap.sandbox_argv(interpreter, list(_PROGRAM), tmp_bytes=limits.tmp_mb << 20, files={},
                                     drops_privileges=True,
                                     writable_dirs=(workdir, TESTS_DIR, LOGS_DIR),
                                     hidden_dirs=tuple(os.path.realpath(p) for p in hidden
                                                       if bubblewrap.visible(interpreter, str(p))),
                                     readonly_binds=binds) as (argv, fds):
            self._launch(argv, {"env": shell_env, "cwd": workdir}, fds)


def tar_archive(items: list[tuple[Path, str]]) -> bytes:
    """A tar archive of ``items``: ``(host path, name in the archive)``, folders with their contents."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for path, name in items:
            tar.add(str(path), arcname=name)
    return buffer.getvalue()


@functools.lru_cache(maxsize=1)
def _system_python() -> str:
    """The ``python3`` the shell finds, which the supervisor runs on; this interpreter if none."""
    return shutil.which("python3", path=SHELL_PATH) or sys.executable


@functools.lru_cache(maxsize=1)
def _supervisor_source() -> str:
    return (Path(__file__).parent / "supervisor.py").read_text()

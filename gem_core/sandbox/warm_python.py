"""Python programs run from warm sandboxes: a sandbox per call's isolation at a fork's cost.

A :class:`WarmPython` is one bubblewrap sandbox (see :mod:`gem_core.sandbox.bubblewrap`) whose
interpreter, the server, stays up and forks a fresh child per program. The server never runs a
program itself and has imported only a few built-in modules, so each child starts as a fresh
interpreter would (the same flags, ``sys.path``, ``__main__``, limits and environment). The child
is forked ahead, while the sandbox waits for its program, and switches to the unprivileged
sandbox user at once; the server keeps the sandbox's root (uid 0 of the sandbox's own user
namespace, with nothing but ``CAP_SETUID``/``CAP_SETGID``), which no program can signal, trace or
read.

Between two programs nothing carries over: a child's memory, environment variables and Python
state die with it; files it left in ``/tmp`` and ``/dev/shm`` are removed; a sandbox in which a
program left any process running, or System V IPC objects, is thrown away (its PID namespace
kills everything in it), as is one whose program ran past its timeout. POSIX message queues are
refused (``RLIMIT_MSGQUEUE`` is 0), since nothing in the sandbox could list them to remove them.

Protocol, over a ``SOCK_SEQPACKET`` socket pair: the host sends one message per program, carrying
four descriptors: the job (a memory file holding a ``marshal``-ed dict of the files to place in
``/tmp``, ``main.py`` included, and the resource limits), standard input, output and error. The
server answers ``"<exit status> <state>"`` once the program has ended, where ``state`` is ``ready``
(the sandbox is clean), ``dirty`` (throw it away) or ``cleaning`` (files are being removed: a
second message, ``ready`` or ``dirty``, follows).
"""

from __future__ import annotations

import atexit
import contextlib
import marshal
import os
import select
import socket
import subprocess
import sys
import threading
from collections.abc import Callable

from gem_core.sandbox import bubblewrap
from gem_core.sandbox.bubblewrap import SandboxUnavailableError
from gem_core.sandbox.view import PackageView
from gem_core.sandbox.warm_pool import WarmPool, launcher

START_TIMEOUT = 60.0  # seconds for a sandbox to start
CLEAN_TIMEOUT = 1.0  # seconds for a sandbox to remove the files a program left (else it is replaced)
JOBS_PER_SANDBOX = 1000  # a sandbox is replaced after this many programs

# The server: the interpreter of the sandbox (started with -I -S; argv[1] is the descriptor of
# this source, argv[2] the socket's). Its loop forks a child, which leaves the loop, takes the
# next program from the socket and becomes it: it places the files, applies the limits and runs
# main.py as __main__, as a fresh interpreter's bootstrap would (see sandbox._BOOTSTRAP: the hook
# drops the server's frames from tracebacks). The loop waits for the child, then checks and
# cleans the sandbox and reports.
_SERVER = """\
import _socket, gc, marshal, os, resource, sys
os.close(int(sys.argv[1]))  # this source
del os.environ["LD_BIND_NOW"]  # the server's own: its children then resolve no symbols of their own
sys.path[:] = {sys_path!r}
def _hook(t, v, tb, _default=sys.excepthook):
    while tb is not None and tb.tb_frame.f_code.co_filename == "<string>":
        tb = tb.tb_next
    _default(t, v.with_traceback(tb), tb)
sys.excepthook = _hook
import builtins as _b
_b.exit = _b.quit = sys.exit
_WARM_UP = compile("def f(x):\\n    return [str(x * 2) for _ in range(3)]\\nprint(f(1), f'{{1.5:.2f}}', {{'a': 1}})",
                   "<string>", "exec")  # the compiler's first use sets it up: once here, not in every child

def _serve(channel_fd):
    # The next program's child is forked ahead, while the sandbox waits for it; the child takes
    # the program from the channel itself.
    channel = _socket.socket(fileno=channel_fd)
    me = str(os.getpid())
    ipc = [os.open("/proc/sysvipc/" + kind, os.O_RDONLY) for kind in ("shm", "sem", "msg")]
    channel.send(b"ready")
    while True:
        gc.freeze()  # a collection in the child then leaves the server's pages alone (not copied)
        pid = os.fork()
        if pid == 0:
            return _next_program(channel)  # the channel closes when that frame ends
        status = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        if any(name.isdigit() and name not in ("1", me) for name in os.listdir("/proc")) \\
                or any(os.pread(fd, 4096, 0).count(b"\\n") > 1 for fd in ipc):
            channel.send(b"%d dirty" % status)
        elif os.listdir("/tmp") or os.listdir("/dev/shm"):
            channel.send(b"%d cleaning" % status)
            channel.send(b"ready" if _clean() else b"dirty")
        else:
            channel.send(b"%d ready" % status)

def _next_program(channel):
    # As the sandbox user from the start; returns the job's descriptor, with 0, 1, 2 in place.
    _as_sandbox_user()
    try:  # while no program waits: run what most programs run (to /dev/null), so that the child's
        # copies of the pages this needs are made now rather than while a program waits for them
        exec(_WARM_UP, {{"__builtins__": _b}})
        sys.stdout.flush()
    except BaseException:
        pass
    message, ancillary, _, _ = channel.recvmsg(16, _socket.CMSG_SPACE(4 * 4))
    fds = [fd for level, kind, data in ancillary if kind == _socket.SCM_RIGHTS
           for fd in memoryview(data[:len(data) - len(data) % 4]).cast("i")]
    if not message or len(fds) != 4:
        os._exit(0)  # the host has gone
    os.dup2(fds[1], 0)
    os.dup2(fds[2], 1)
    os.dup2(fds[3], 2)
    return fds[0]

def _as_sandbox_user():
    os.setgroups([])
    os.setresgid({uid}, {uid}, {uid})
    os.setresuid({uid}, {uid}, {uid})

def _clean():
    # As the sandbox user, who owns what programs leave (and may make its folders writable).
    pid = os.fork()
    if pid == 0:
        try:
            _as_sandbox_user()
            for top in ("/tmp", "/dev/shm"):
                _remove_contents(top)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    return not (os.listdir("/tmp") or os.listdir("/dev/shm"))

def _remove_contents(path):
    for entry in os.scandir(path):
        try:
            if entry.is_dir(follow_symlinks=False):
                os.chmod(entry.path, 0o700)
                _remove_contents(entry.path)
                os.rmdir(entry.path)
            else:
                os.unlink(entry.path)
        except OSError:
            pass

def _become_program(job_fd):
    # Place the files, apply the limits; return main.py's source.
    job = marshal.loads(os.pread(job_fd, os.fstat(job_fd).st_size, 0))
    os.closerange(3, 1 << 20)
    for name, data in job["files"].items():
        if "/" in name:
            os.makedirs(os.path.dirname(name), exist_ok=True)
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        while data:
            data = data[os.write(fd, data):]
        os.close(fd)
    for name, soft, hard in job["limits"]:
        limit = getattr(resource, name)
        most = resource.getrlimit(limit)[1]
        if most >= 0:
            soft, hard = min(soft, most), min(hard, most)
        resource.setrlimit(limit, (soft, hard))
    return job["files"]["main.py"]

def _run_program(script, source):
    # A __main__ like a fresh interpreter's, the program run in it, and the interpreter's own
    # ending: threads joined, atexit handlers run, the standard streams flushed (status 120 when
    # stdout cannot be). Objects still alive are not finalized: tearing down the heap would copy
    # every page the child shares with the server.
    main = type(sys)("__main__")
    main.__dict__.update({{name: value for name, value in globals().items() if name in {kept!r}}})
    main.__annotations__, main.__file__ = {{}}, script
    sys.modules["__main__"], sys.argv[:] = main, [script]
    try:
        exec(compile(source, script, "exec"), main.__dict__)
        status = 0
    except SystemExit as exit:
        status = _exit_status(exit.code)
    except BaseException:
        sys.excepthook(*sys.exc_info())
        status = 1
    try:
        threading = sys.modules.get("threading")
        if threading is not None:
            threading._shutdown()
        atexit = sys.modules.get("atexit")  # handlers are registered through it: none if not imported
        if atexit is not None:
            atexit._run_exitfuncs()
    except SystemExit as exit:
        status = _exit_status(exit.code)
    except BaseException:
        sys.excepthook(*sys.exc_info())
    for stream, fails in ((sys.stdout, 120), (sys.__stdout__, 120), (sys.stderr, 0), (sys.__stderr__, 0)):
        try:
            stream.flush()
        except BaseException:
            status = fails or status
    os._exit(status)

def _exit_status(code):
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    try:
        print(code, file=sys.stderr)
    except BaseException:
        pass
    return 1

_run_program({script!r}, _become_program(_serve(int(sys.argv[2]))))
"""
_LOADER = "import os, sys; exec(os.pread(int(sys.argv[1]), os.fstat(int(sys.argv[1])).st_size, 0))"
_KEPT_GLOBALS = ("__name__", "__doc__", "__package__", "__loader__", "__spec__", "__builtins__")


class WarmPython:
    """One warm sandbox showing ``view`` (an interpreter and its packages), with ``tmp_bytes`` of
    ``/tmp`` (and of ``/dev/shm``), running one program at a time (see the module documentation)."""

    def __init__(self, view: PackageView, tmp_bytes: int, env: dict[str, str]):
        self.jobs = 0
        self.exit_status: int | None = None
        self.reusable = False
        self.process: subprocess.Popen | None = None
        self._stack = contextlib.ExitStack()
        self.channel, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        script = f"{bubblewrap.WORKDIR}/main.py"
        server = _SERVER.format(sys_path=list(view.sandbox_sys_path), uid=bubblewrap.SANDBOX_UID,
                                kept=_KEPT_GLOBALS, script=script)
        errors = os.memfd_create("gem-warm-python-errors")
        source = os.memfd_create("gem-warm-python-server")
        try:
            os.write(source, server.encode())
            argv, fds = self._stack.enter_context(bubblewrap.sandbox_argv(
                view.python, ["-I", "-S", "-B", "-X", "utf8", "-c", _LOADER, str(source), str(theirs.fileno())],
                tmp_bytes=tmp_bytes, files={}, drops_privileges=True, view=view))
            self.process = launcher().submit(
                subprocess.Popen, argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errors,
                pass_fds=[*fds, source, theirs.fileno()], cwd="/", env={**env, "LD_BIND_NOW": "1"},
                start_new_session=True).result()
            theirs.close()
            if self._receive(START_TIMEOUT) != b"ready":
                raise SandboxUnavailableError("A warm Python sandbox did not start: "
                                              + os.pread(errors, 2000, 0).decode(errors="replace").strip())
        except BaseException:
            theirs.close()
            self.close()
            raise
        finally:
            os.close(errors)
            os.close(source)

    def start(self, job: dict, stdin: int, stdout: int, stderr: int) -> None:
        """Send a program (see the module documentation); the descriptors are the caller's to
        close. Once the channel is readable, :meth:`finish` reads how it ended."""
        self.jobs += 1
        self.exit_status, self.reusable = None, False
        job_fd = os.memfd_create("gem-job")
        try:
            data = memoryview(marshal.dumps(job))
            while data:
                data = data[os.write(job_fd, data):]
            fds = b"".join(fd.to_bytes(4, sys.byteorder, signed=True) for fd in (job_fd, stdin, stdout, stderr))
            self.channel.sendmsg([b"job"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
        finally:
            os.close(job_fd)

    def finish(self) -> None:
        """Read how the program ended: ``exit_status`` (negative for a signal; None when the
        sandbox died) and whether the sandbox is ``reusable``; one that is not is closed."""
        answer = self._receive(0.0)
        try:
            status, state = answer.split()
            self.exit_status = int(status)
        except ValueError:
            state = b"dirty"
        if state == b"cleaning":
            state = self._receive(CLEAN_TIMEOUT)
        self.reusable = state == b"ready"
        if not self.reusable:
            self.close()

    def wait(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the program to end, then :meth:`finish`; False if it
        has not ended."""
        if not self._receive_ready(timeout):
            return False
        self.finish()
        return True

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def close(self) -> None:
        """Kill the sandbox and everything in it (its PID namespace ends with bwrap)."""
        process, self.process = self.process, None
        if process is not None:
            with contextlib.suppress(OSError):
                process.kill()
            process.wait()
        self.channel.close()
        self._stack.close()

    def _receive(self, timeout: float) -> bytes:
        """The next message, or b"" when the sandbox has gone or said nothing within ``timeout``."""
        try:
            return self.channel.recv(64) if self._receive_ready(timeout) else b""
        except OSError:
            return b""

    def _receive_ready(self, timeout: float) -> bool:
        try:
            return bool(select.select([self.channel], [], [], max(0.0, timeout))[0])
        except (OSError, ValueError):  # closed
            return False


_pools: dict[tuple[PackageView, int], WarmPool[WarmPython]] = {}
_pools_lock = threading.Lock()


def shared_pool(view: PackageView, tmp_bytes: int, env: Callable[[], dict[str, str]]) -> WarmPool[WarmPython]:
    """The process-wide pool of sandboxes showing ``view`` with ``tmp_bytes`` of /tmp."""
    key = (view, tmp_bytes)
    with _pools_lock:
        pool = _pools.get(key)
        if pool is None or pool.closed:
            pool = _pools[key] = WarmPool(lambda: WarmPython(view, tmp_bytes, env()),
                                          jobs_per_sandbox=JOBS_PER_SANDBOX)
        return pool


@atexit.register
def close_warm_sandboxes() -> None:
    """Close every warm Python sandbox of this process (later calls start new ones)."""
    with _pools_lock:
        pools = list(_pools.values())
        _pools.clear()
    for pool in pools:
        pool.close()


def _forget_pools_in_child() -> None:
    _pools.clear()  # a forked child must not share the parent's sandboxes


os.register_at_fork(after_in_child=_forget_pools_in_child)

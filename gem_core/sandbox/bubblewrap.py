"""The bubblewrap command line behind :func:`gem_core.tools.run_python`.

The sandbox gets new pid, network (loopback only), ipc, uts and cgroup namespaces and its own
user namespace; the program runs as ``nobody`` without capabilities and cannot create further
user namespaces. Its file system holds ``/usr``, ``/etc`` (password hashes and ssh keys masked)
and the interpreter's own directories, read-only, plus private size-limited tmpfs mounts on
``/tmp`` and ``/dev/shm``; the rest of the host, its home directories included, is absent.
Interpreter directories that lie under the host's ``/tmp`` (a virtual environment made there)
appear under ``/run/gem-host`` instead, so the sandbox's ``/tmp`` stays private and empty.
bwrap's own init is pid 1: when the program exits (or bwrap is killed) every process it left
behind is killed with the pid namespace.

With a :class:`PackageView` (the Python tool, the code environments'
candidates) the sandbox shows less of the interpreter: its executable and libraries, and of its
installed packages only those the view names; every folder of installed packages, the system's
included, is shown empty but for them (see :mod:`gem_core.sandbox.view`).

With ``host_root=True`` (for programs that import from wherever their caller does: the scoring
workers of :mod:`gem_core.sandbox.worker_pool`) the sandbox shows the host's whole file system
instead, read-only and at the host's own paths, with the same masks, namespaces and user, and its
own ``/tmp``, ``/dev/shm``, ``/run``, ``/proc``, ``/dev`` and ``/sys``. Top-level folders the
sandbox user may not enter (``/root``, run by root) are left out, but the interpreter's
directories in them, and those under the host's ``/tmp``, are shown at their own paths.

Process limits need a host uid other than root (the kernel exempts root from
``RLIMIT_NPROC``). Run by an ordinary user, bwrap maps the sandbox user to that user. Run by
root, each sandbox borrows a user namespace made here that maps the sandbox user to an unused
high uid (``0`` stays mapped to root, so bwrap can still reach an interpreter under ``/root``),
and ``setpriv`` switches to it just before the program starts.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import secrets
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass

from gem_core.errors import GemError

#: Environment variable naming the bubblewrap executable (default: ``bwrap`` on ``PATH``).
BWRAP_ENV_VAR = "GEM_BWRAP"
WORKDIR = "/tmp"
HOST_TMP_VIEW = "/run/gem-host"  # where the sandbox shows interpreter folders from the host's /tmp
VIEW_ROOT = "/run/gem-packages"  # where a view shows editable installs' packages (gem_core.sandbox.view)
SANDBOX_UID = 65534  # nobody
MIN_BWRAP_VERSION = (0, 8)
_HOST_UIDS = (1_900_000_000, 2_000_000_000)  # above the ranges container managers hand out
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
_OWN_DIRS = ("/proc", "/dev", "/sys", "/run", WORKDIR)  # never the host's, even with host_root
_MASKED_FILES = ("/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers")
_MASKED_DIRS = ("/etc/ssh", "/etc/sudoers.d", "/etc/ssl/private")


class SandboxError(GemError):
    """Base class of the sandbox's errors."""


class SandboxUnavailableError(SandboxError, RuntimeError):
    """bubblewrap is missing or cannot create a sandbox on this machine."""


class SandboxConfigError(SandboxError, ValueError):
    """An invalid argument to :func:`~gem_core.tools.run_python` (a limit, a file, an interpreter)."""


@dataclass(frozen=True)
class Interpreter:
    """A Python interpreter as the sandbox needs it: its ``sys.path`` (with site-packages, as
    ``site`` computes it) and the host directories holding it."""

    executable: str
    sys_path: tuple[str, ...]
    mounts: tuple[str, ...]

    def inside(self, path: str) -> str:
        """The host's ``path`` as the sandbox sees it (see the module documentation)."""
        return HOST_TMP_VIEW + path if is_under(path, (WORKDIR,)) else path

    @property
    def sandbox_sys_path(self) -> tuple[str, ...]:
        """``sys_path`` as the sandbox sees it."""
        return tuple(self.inside(path) for path in self.sys_path)


_PROBE = (
    "import json, sys; print(json.dumps({'path': sys.path, "
    "'prefixes': [sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix]}))"
)


@dataclass(frozen=True)
class PackageView:
    """The files of an interpreter a sandbox shows (host paths), as
    :func:`gem_core.sandbox.view.package_view` finds them (see :mod:`gem_core.sandbox.view`).

    ``packages`` are the distributions shown (``"name version"``), the requested ones and their
    dependencies; ``site_dirs`` the folders of installed packages, shown empty but for ``shown``;
    ``libraries`` the interpreter's folders shown whole (but for the site folders in them);
    ``executable`` the interpreter's executable and the links to it, ``(path, target or None)``;
    ``files`` other files it needs; ``aliases`` editable packages' folders, ``(path, name)``,
    shown as ``VIEW_ROOT/name``; ``masked`` data caches shown empty."""

    python: Interpreter
    packages: tuple[str, ...]
    sys_path: tuple[str, ...]
    executable: tuple[tuple[str, str | None], ...]
    files: tuple[str, ...]
    libraries: tuple[str, ...]
    site_dirs: tuple[str, ...]
    shown: tuple[str, ...]
    aliases: tuple[tuple[str, str], ...] = ()
    masked: tuple[str, ...] = ()

    @property
    def sandbox_sys_path(self) -> tuple[str, ...]:
        """``sys.path`` as the sandbox sees it."""
        return tuple(self.python.inside(path) for path in self.sys_path) + ((VIEW_ROOT,) if self.aliases else ())


@functools.lru_cache(maxsize=None)
def interpreter(python: str) -> Interpreter:
    """Describe ``python`` (asked once per process and interpreter)."""
    if not python:
        raise SandboxConfigError("No Python interpreter to run: sys.executable is empty; pass python=PATH.")
    try:
        out = subprocess.run([python, "-I", "-c", _PROBE], capture_output=True, text=True, timeout=120, cwd="/")
    except (OSError, subprocess.TimeoutExpired) as e:
        raise SandboxConfigError(f"Cannot run the interpreter {python!r} ({e}); pass python=PATH to a working "
                                 "Python.") from None
    if out.returncode != 0:
        raise SandboxConfigError(f"The interpreter {python!r} failed to start: {out.stderr.strip()[-500:]}")
    info = json.loads(out.stdout.strip().splitlines()[-1])
    sys_path = tuple(p for p in info["path"] if p and os.path.isabs(p))
    wanted = {os.path.abspath(python), os.path.dirname(os.path.realpath(python)), *info["prefixes"], *sys_path}
    wanted |= {os.path.realpath(p) for p in wanted}
    mounts: list[str] = []
    for path in sorted(p for p in wanted if os.path.exists(p)):  # a parent sorts before its children
        if not is_under(path, SYSTEM_DIRS) and not is_under(path, mounts):
            mounts.append(path)
    return Interpreter(executable=python, sys_path=sys_path, mounts=tuple(mounts))


def bwrap_path() -> str | None:
    configured = os.environ.get(BWRAP_ENV_VAR)
    if configured:
        return configured if os.access(configured, os.X_OK) else None
    return shutil.which("bwrap")


def problem(python: Interpreter) -> str | None:
    """Why no sandbox can be made here (with the fix), or None when one works."""
    bwrap = bwrap_path()
    if bwrap is None:
        if os.environ.get(BWRAP_ENV_VAR):
            return (f"{BWRAP_ENV_VAR}={os.environ[BWRAP_ENV_VAR]!r} is not an executable file. Point it at "
                    "bubblewrap, unset it, or pass allow_unsandboxed=True to run code without isolation.")
        return ("bubblewrap (`bwrap`) is not installed. Install it (Debian/Ubuntu: `apt-get install "
                "bubblewrap`), set GEM_BWRAP to its path, or pass allow_unsandboxed=True to run code "
                "without isolation.")
    version = _version(bwrap)
    if version < MIN_BWRAP_VERSION:
        found = ".".join(map(str, version)) if version else "of unknown version"
        return (f"bubblewrap at {bwrap} is {found}; the sandbox needs {'.'.join(map(str, MIN_BWRAP_VERSION))} "
                "or newer (for --size and --disable-userns). Upgrade it, or pass allow_unsandboxed=True to run "
                "code without isolation.")
    if _as_root() and _setpriv() is None:
        return ("Run as root, the sandbox needs `setpriv` (util-linux) to drop to an unprivileged user. "
                "Install util-linux, or pass allow_unsandboxed=True to run code without isolation.")
    return _probe(bwrap, python)


#: Python source that switches to the sandbox user. A program started with
#: ``sandbox_argv(..., drops_privileges=True)`` must run it before anything else: run by root, the
#: sandbox starts as the namespace's uid 0, which only ``CAP_SETUID``/``CAP_SETGID`` are left to.
#: Doing the switch in the program saves exec'ing ``setpriv`` (a few ms per call); bwrap has
#: already set no_new_privs, and the switch to a non-zero uid clears the remaining capabilities.
DROP_PRIVILEGES = (
    "import os as _os\n"
    "if _os.getuid() == 0:\n"
    f"    _os.setgroups([]); _os.setresgid({SANDBOX_UID}, {SANDBOX_UID}, {SANDBOX_UID}); "
    f"_os.setresuid({SANDBOX_UID}, {SANDBOX_UID}, {SANDBOX_UID})\n"
    "del _os\n"
)


@contextlib.contextmanager
def sandbox_argv(python: Interpreter, program_args: list[str], *, tmp_bytes: int,
                 files: dict[str, int], drops_privileges: bool = False,
                 writable_dirs: tuple[str, ...] = (),
                 hidden_dirs: tuple[str, ...] = (),
                 readonly_binds: tuple[tuple[str, str], ...] = (),
                 host_root: bool = False, view: PackageView | None = None) -> Iterator[tuple[list[str], list[int]]]:
    """The bwrap command running ``python program_args`` with ``files`` (name -> readable fd)
    placed in the working directory, and the fds it needs passed; valid inside the block.
    ``host_root`` shows the host's file system (see the module documentation); ``view`` shows
    only the files of the interpreter it names (see :mod:`gem_core.sandbox.view`) instead of
    the interpreter's folders whole.

    ``writable_dirs`` are absolute paths that get private tmpfs mounts of ``tmp_bytes`` each,
    writable by the program, like ``/tmp``. ``hidden_dirs`` are host folders the sandbox would
    show (see :func:`visible`; at :meth:`Interpreter.inside`) that it shows empty instead.
    ``readonly_binds`` are ``(host folder, path in the sandbox)`` pairs shown read-only.

    With ``drops_privileges=True`` the program itself starts with :data:`DROP_PRIVILEGES`;
    otherwise ``setpriv`` switches users before it starts."""
    bwrap = bwrap_path()
    if bwrap is None:  # pragma: no cover - checked by problem() first
        raise SandboxUnavailableError("bubblewrap is not installed.")
    with _user_namespace() as userns:
        argv = [bwrap]
        if userns is None:
            argv += ["--unshare-all", "--unshare-user", "--disable-userns",
                     "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID)]
            fds = []
        else:
            argv += ["--userns", str(userns.fd), "--unshare-pid", "--unshare-net", "--unshare-ipc",
                     "--unshare-uts", "--unshare-cgroup-try",
                     "--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
            fds = [userns.fd]
        argv += ["--hostname", "sandbox", "--die-with-parent", "--new-session",
                 *_mounts(python, tmp_bytes, host_root, view)]
        for path in writable_dirs:
            argv += ["--perms", "1777", "--size", str(tmp_bytes), "--tmpfs", path]
        for path in hidden_dirs:
            inside = python.inside(path)
            argv += ["--tmpfs", inside, "--remount-ro", inside]
        for host, inside in readonly_binds:
            argv += [arg for parent in _parents(inside) for arg in ("--dir", parent)]
            argv += ["--ro-bind", host, inside]
        for name, fd in files.items():
            argv += ["--file", str(fd), f"{WORKDIR}/{name}"]
        argv += ["--remount-ro", "/", "--chdir", WORKDIR, "--"]
        if userns is not None and not drops_privileges:
            argv += [_setpriv() or "setpriv", "--reuid", str(SANDBOX_UID), "--regid", str(SANDBOX_UID),
                     "--clear-groups", "--no-new-privs", "--"]
        argv += [python.executable if host_root else python.inside(python.executable), *program_args]
        yield argv, [*fds, *files.values()]


def visible(python: Interpreter, path: str, *, host_root: bool = False) -> bool:
    """Whether a sandbox around ``python`` shows the host's ``path`` (read-only)."""
    path = os.path.realpath(path)
    return is_under(path, _shown_dirs(host_root)) or is_under(path, python.mounts)


def _shown_dirs(host_root: bool) -> list[str]:
    """The host folders a sandbox shows whole, beside the interpreter's."""
    shown = _host_entries() if host_root else SYSTEM_DIRS
    return [p for p in shown if os.path.isdir(p) and not os.path.islink(p)]


@functools.lru_cache(maxsize=1)
def _host_entries() -> tuple[str, ...]:
    """The host's top-level entries a ``host_root`` sandbox shows."""
    shown = []
    for entry in sorted(os.scandir("/"), key=lambda entry: entry.name):
        if entry.is_symlink() or entry.is_file(follow_symlinks=False) or (
                entry.is_dir(follow_symlinks=False) and entry.path not in _OWN_DIRS and _enterable(entry.path)):
            shown.append(entry.path)
    return tuple(shown)


def _enterable(folder: str) -> bool:
    """Whether the sandbox user may enter the host's ``folder``: run by root, it is an unused uid,
    so only a folder open to everyone; otherwise it is the caller itself."""
    if _as_root():
        return bool(os.stat(folder).st_mode & 0o001)
    return os.access(folder, os.X_OK)


@functools.lru_cache(maxsize=64)
def _mounts(python: Interpreter, tmp_bytes: int, host_root: bool = False,
            view: PackageView | None = None) -> tuple[str, ...]:
    """The file system's bwrap arguments (before the program's files and the final remount)."""
    args: list[str] = []
    for path in _host_entries() if host_root else SYSTEM_DIRS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.exists(path):  # a system folder, or with host_root any entry shown
            args += ["--ro-bind", path, path]
    for path in _MASKED_FILES:
        if os.path.isfile(path):
            args += ["--ro-bind", "/dev/null", path]
    for path in _MASKED_DIRS:
        if os.path.isdir(path):
            args += ["--tmpfs", path, "--remount-ro", path]
    size = str(tmp_bytes)
    args += [
        "--proc", "/proc", "--dev", "/dev",
        "--perms", "1777", "--size", size, "--tmpfs", "/dev/shm", "--remount-ro", "/dev",
        "--perms", "1777", "--size", size, "--tmpfs", WORKDIR,
    ]
    if view is not None:
        return tuple(args + _view_mounts(python, view))
    made: set[str] = set()
    shown = _shown_dirs(host_root)
    for path in python.mounts:
        if is_under(path, shown):
            continue
        target = path if host_root else python.inside(path)
        # Parents that bwrap made itself would copy the host's modes (/root is 0700): make them
        # 0755 first, so the unprivileged program can reach the interpreter.
        for parent in _parents(target):
            if parent not in made:
                made.add(parent)
                args += ["--dir", parent]
        args += ["--ro-bind", path, target]
    return tuple(args)


def _view_mounts(python: Interpreter, view: PackageView) -> list[str]:
    """The interpreter's files that ``view`` shows, and its site folders shown empty but for the
    distributions it shows (see :mod:`gem_core.sandbox.view`)."""
    args: list[str] = []
    made: set[str] = set()
    shown: list[str] = [p for p in SYSTEM_DIRS if os.path.isdir(p) and not os.path.islink(p)]

    emptied: list[str] = []

    def place(path: str) -> str:
        """The path in the sandbox, its parents made first where nothing shown holds them (outside
        what is shown, or in an emptied folder). Parents that bwrap made itself would copy the
        host's modes (/root is 0700): they are made 0755."""
        target = python.inside(path)
        inside = next((python.inside(d) for d in emptied if is_under(path, (d,))), None)
        if inside is not None or not is_under(path, shown):
            for parent in _parents(target):
                if parent not in made and (inside is None or parent.startswith(inside + "/")):
                    made.add(parent)
                    args.extend(("--dir", parent))
        return target

    def bind(path: str) -> None:
        if not is_under(path, shown) and os.path.lexists(path):
            args.extend(("--ro-bind", path, place(path)))
            shown.append(path)

    for path in view.libraries:
        bind(path)
    for path, target in view.executable:
        if target is None:
            bind(path)
        elif not is_under(path, shown):
            args.extend(("--symlink", python.inside(target) if os.path.isabs(target) else target, place(path)))
    for path in view.files:
        bind(path)
    emptied += [path for path in view.site_dirs if is_under(path, shown)]
    for path in emptied:
        args.extend(("--tmpfs", python.inside(path)))
    for path in view.shown:
        if is_under(path, emptied) or not is_under(path, shown):
            args.extend(("--ro-bind", path, place(path)))
    for path in emptied:
        args.extend(("--remount-ro", python.inside(path)))
    for parent in _parents(VIEW_ROOT + "/-") if view.aliases else ():  # /run, then VIEW_ROOT
        if parent not in made:
            made.add(parent)
            args.extend(("--dir", parent))
    for path, name in view.aliases:
        args.extend(("--ro-bind", path, f"{VIEW_ROOT}/{name}"))
    for path in view.masked:
        if is_under(path, emptied) and not is_under(path, view.shown):
            continue  # not shown anyway (and there is no folder to mount on)
        args.extend(("--tmpfs", python.inside(path), "--remount-ro", python.inside(path)))
    return args


@functools.lru_cache(maxsize=None)
def _version(bwrap: str) -> tuple[int, ...]:
    try:
        out = subprocess.run([bwrap, "--version"], capture_output=True, text=True, timeout=30).stdout
        return tuple(int(part) for part in out.split()[-1].split("."))
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError):
        return ()


def _parents(path: str) -> list[str]:
    parts = path.strip("/").split("/")[:-1]
    return ["/" + "/".join(parts[: i + 1]) for i in range(len(parts))]


def is_under(path: str, roots) -> bool:
    """Whether ``path`` is one of ``roots`` or lies below one."""
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


def _as_root() -> bool:
    return os.geteuid() == 0


@functools.lru_cache(maxsize=1)
def _setpriv() -> str | None:
    return shutil.which("setpriv")


@functools.lru_cache(maxsize=None)
def _probe(bwrap: str, python: Interpreter) -> str | None:
    """Run an empty program in a sandbox once; return bwrap's complaint if that fails."""
    try:
        with sandbox_argv(python, ["-I", "-S", "-c", "pass"], tmp_bytes=1 << 20, files={}) as (argv, fds):
            out = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd="/", pass_fds=fds)
    except SandboxUnavailableError as e:
        return str(e)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"bubblewrap at {bwrap} cannot run: {e}."
    if out.returncode == 0:
        return None
    return (
        f"bubblewrap at {bwrap} cannot create a sandbox here: {out.stderr.strip()[-500:]} "
        "It needs user namespaces (e.g. `sysctl kernel.unprivileged_userns_clone=1`, or on "
        "Ubuntu 24.04 `sysctl kernel.apparmor_restrict_unprivileged_userns=0`). Or pass "
        "allow_unsandboxed=True to run code without isolation."
    )


# --- user namespaces for sandboxes started by root ------------------------------------------


@dataclass(frozen=True)
class _UserNamespace:
    fd: int
    host_uid: int


# Made by a helper process: it unshares a user namespace, waits while the parent writes the id
# maps, forbids nested user namespaces inside it, and is killed once the parent holds it open.
_USERNS_HELPER = """\
import ctypes, os, sys
if ctypes.CDLL(None, use_errno=True).unshare(0x10000000) != 0:
    sys.exit("unshare(CLONE_NEWUSER) failed: " + os.strerror(ctypes.get_errno()))
print(flush=True)
sys.stdin.readline()
with open("/proc/sys/user/max_user_namespaces", "w") as f:
    f.write("0")
print(flush=True)
sys.stdin.readline()
"""


class _UserNamespacePool:
    """Namespaces lent to one sandbox at a time, so each sandbox's process count is its own."""

    def __init__(self) -> None:
        self._idle: list[_UserNamespace] = []
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def lease(self) -> Iterator[_UserNamespace]:
        with self._lock:
            userns = self._idle.pop() if self._idle else None
        if userns is None:
            userns = _new_user_namespace()
        try:
            yield userns
        finally:
            with self._lock:
                self._idle.append(userns)

    def forget(self) -> None:
        """Drop every namespace (in a forked child, which must not share them)."""
        for userns in self._idle:
            with contextlib.suppress(OSError):
                os.close(userns.fd)
        self._idle = []
        self._lock = threading.Lock()


_POOL = _UserNamespacePool()
os.register_at_fork(after_in_child=_POOL.forget)


@contextlib.contextmanager
def _user_namespace() -> Iterator[_UserNamespace | None]:
    if not _as_root():
        yield None
        return
    with _POOL.lease() as userns:
        yield userns


def _new_user_namespace() -> _UserNamespace:
    host_uid = _HOST_UIDS[0] + secrets.randbelow(_HOST_UIDS[1] - _HOST_UIDS[0])
    helper = subprocess.Popen([sys.executable, "-I", "-S", "-c", _USERNS_HELPER], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd="/")
    try:
        if helper.stdout.readline() != "\n":
            raise SandboxUnavailableError(f"Cannot create a user namespace: {helper.stderr.read().strip()}")
        mapping = f"0 0 1\n{SANDBOX_UID} {host_uid} 1\n"
        for name in ("uid_map", "gid_map"):
            with open(f"/proc/{helper.pid}/{name}", "w") as f:
                f.write(mapping)
        helper.stdin.write("\n")
        helper.stdin.flush()
        if helper.stdout.readline() != "\n":
            raise SandboxUnavailableError(f"Cannot limit a user namespace: {helper.stderr.read().strip()}")
        fd = os.open(f"/proc/{helper.pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    except OSError as e:
        raise SandboxUnavailableError(f"Cannot create a user namespace for the sandbox: {e}") from None
    finally:
        helper.kill()
        helper.communicate()
    return _UserNamespace(fd=fd, host_uid=host_uid)

"""Terminal tasks in containers: podman or docker, through their own command-line tools.

A task's image is built from its Dockerfile (terminal-bench: ``Dockerfile``; Harbor:
``environment/Dockerfile``), or is its prebuilt ``docker_image``. Images are tagged
``localhost/gem-terminal/<task>:<key>``, the key hashing the Dockerfile (after ``base_images``)
and every file of its build context, so an unchanged task is built once. ``base_images`` maps the
names that ``FROM`` (or ``docker_image``) uses to local images, exactly or by a shell pattern
(``{"ghcr.io/laude-institute/t-bench/python-3-13:*": "localhost/my/python:3"}``), for machines
that reach no registry.

Each episode runs one container (:class:`ContainerSandbox`) whose main process, under the
engine's ``--init``, is the supervisor of :mod:`gem_envs.terminal.supervisor`, run by the image's
``python3`` and talking over the engine's attached standard input and output; the shell, its
commands and grading behave as in the bubblewrap sandbox, with the agent as the image's user
(root, as terminal-bench has it). The container has no network unless asked, a memory, process
and CPU limit, and the label :data:`LABEL`. It is removed on :meth:`ContainerSandbox.close`; when
the Python process dies, the supervisor's standard input closes, it ends, and the engine removes
the container (``--rm``); containers whose owner died are also removed when the next one starts.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import functools
import hashlib
import os
import re
import shutil
import socket
import subprocess
import tempfile
import uuid
import warnings
from collections.abc import Mapping
from pathlib import Path

from gem_core.errors import GemError
from gem_core.sandbox.python import Limits

from gem_envs.terminal.cache import locked
from gem_envs.terminal.sandbox import LOADER, LOGS_DIR, TESTS_DIR, ShellSandbox

ENGINES = ("podman", "docker")
LABEL = "gem.terminal"  # on every container GEM starts; its value names the owner, "<host>:<boot>:<pid>"
_FROM = re.compile(r"^(\s*FROM\s+)((?:--\S+\s+)*)(\S+)(.*)$", re.IGNORECASE | re.MULTILINE)
_CLI_TIMEOUT = 120.0
_OUTPUT_KEPT = 3000  # characters of a failed build's output in its error


class ContainerError(GemError):
    """A container engine is missing, or failed to build, start or remove a container."""


class TaskBuildError(ContainerError):
    """A task's image did not build (the error holds the end of the build's output)."""


@functools.lru_cache(maxsize=None)
def engine_problem(engine: str) -> str | None:
    """Why ``engine`` cannot run containers here, or None when it can (asked once per process)."""
    if engine not in ENGINES:
        raise GemError(f"The container engine must be one of {', '.join(ENGINES)}, not {engine!r}.")
    if shutil.which(engine) is None:
        return f"{engine} is not installed"
    try:
        result = subprocess.run([engine, "version", "--format", "{{.Server.Version}}"], capture_output=True,
                                text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"`{engine} version` failed: {e}"
    if result.returncode != 0:
        return f"{engine} cannot reach its engine: {result.stderr.strip()[-300:]}"
    return None


@functools.lru_cache(maxsize=None)
def disk_quota_problem(engine: str) -> str | None:
    """Why ``engine`` cannot cap a container's disk (``--storage-opt size``), or None when it can:
    its overlay storage must lie on XFS (asked once per process)."""
    form = ("{{.Store.GraphDriverName}} {{index .Store.GraphStatus \"Backing Filesystem\"}}" if engine == "podman" else
            "{{.Driver}} {{range .DriverStatus}}"
            "{{if eq (index . 0) \"Backing Filesystem\"}}{{index . 1}}{{end}}{{end}}")
    driver, _, backing = _cli(engine, "info", "--format", form).stdout.strip().partition(" ")
    if driver.startswith("overlay") and backing != "xfs":
        return f"{engine}'s {driver} storage lies on {backing or 'a file system'} rather than XFS"
    return None


def require(engine: str) -> None:
    """Raise :class:`ContainerError` if ``engine`` cannot run containers here."""
    problem = engine_problem(engine)
    if problem is not None:
        raise ContainerError(f"Cannot run a terminal task in a container: {problem}.")


def available_engine() -> str | None:
    """The first engine of :data:`ENGINES` that works here, or None."""
    return next((engine for engine in ENGINES if engine_problem(engine) is None), None)


def map_image(name: str, base_images: Mapping[str, str]) -> str:
    """``name`` through ``base_images`` (an exact name first, then the first matching pattern)."""
    if name in base_images:
        return base_images[name]
    return next((local for pattern, local in base_images.items() if fnmatch.fnmatchcase(name, pattern)), name)


def image_for(engine: str, task, base_images: Mapping[str, str], build_timeout: float = 1800.0) -> str:
    """The image to run ``task`` in: its prebuilt image, or its Dockerfile's, built if not cached."""
    require(engine)
    if task.image:
        image = map_image(task.image, base_images)
        if (engine, image) not in _ready and not _image_exists(engine, image):
            _pull(engine, image, build_timeout)
        _ready.add((engine, image))
        return image
    if task.dockerfile is None:
        raise ContainerError(f"The terminal task {task.name!r} has no Dockerfile to build (and no docker_image).")
    dockerfile = _FROM.sub(lambda m: m.group(1) + m.group(2) + map_image(m.group(3), base_images) + m.group(4),
                           task.dockerfile.read_text())
    context = task.dockerfile.parent
    tag = f"localhost/gem-terminal/{_slug(task.name)}:{_content_key(dockerfile, context)}"
    if (engine, tag) in _ready:
        return tag
    with locked(f"build {tag}"):
        if not _image_exists(engine, tag):
            _build(engine, tag, dockerfile, context, task.name, build_timeout)
    _ready.add((engine, tag))
    return tag


_ready: set[tuple[str, str]] = set()  # images built or found in this process


@functools.lru_cache(maxsize=256)
def image_workdir(engine: str, image: str) -> str:
    """The image's working directory (``/`` when it sets none)."""
    result = _cli(engine, "image", "inspect", "--format", "{{.Config.WorkingDir}}", image)
    if result.returncode != 0:
        raise ContainerError(f"No image {image!r} in {engine}: {result.stderr.strip()[-500:]} (build it, load it, "
                             "or map the name to a local image with base_images=).")
    return result.stdout.strip() or "/"


def remove_orphans(engine: str) -> list[str]:
    """Remove this machine's GEM containers whose owning process has died; their names."""
    names = _cli(engine, "ps", "-a", "--filter", f"label={LABEL}", "--format", "{{.Names}}").stdout.split()
    if not names:
        return []
    result = _cli(engine, "inspect", "--format", f'{{{{.Name}}}} {{{{index .Config.Labels "{LABEL}"}}}}', *names)
    host, boot = _owner().rsplit(":", 2)[:2]
    orphans = []
    for line in result.stdout.splitlines():
        name, _, owner = line.strip().lstrip("/").partition(" ")
        parts = owner.rsplit(":", 2)
        if len(parts) == 3 and parts[0] == host and (parts[1] != boot or not _alive(int(parts[2]))):
            orphans.append(name)
    if orphans:
        _cli(engine, "rm", "-f", *_rm_options(engine), *orphans)
    return orphans


class ContainerSandbox(ShellSandbox):
    """One container of ``image`` with a persistent shell in ``workdir``: see the module.

    ``limits``: ``memory_mb`` is the container's memory (and each process's address space),
    ``max_processes`` its process count, ``max_file_mb`` the largest file, ``timeout`` the longest
    command; ``cpus`` its CPU share. ``disk_mb`` caps its writable layer where the engine's storage
    can (:func:`disk_quota_problem`), else only each file, at that size, with a warning.
    ``network`` turns the engine's default network on. ``binds`` maps host folders to read-only
    paths in the container; ``env`` adds variables to the image's.
    """

    kind = "container"

    def __init__(self, engine: str, image: str, limits: Limits, workdir: str, env: Mapping[str, str] | None = None,
                 network: bool = False, cpus: float = 1.0, binds: tuple[tuple[str, str], ...] = (),
                 disk_mb: int | None = None):
        require(engine)
        _sweep_once(engine)
        disk = []
        if disk_mb is not None:
            problem = disk_quota_problem(engine)
            if problem is None:
                disk = ["--storage-opt", f"size={disk_mb}m"]
            else:
                limits = dataclasses.replace(limits, max_file_mb=min(limits.max_file_mb, disk_mb))
                warnings.warn(f"A terminal task's disk of {disk_mb} MB cannot be enforced ({problem}); each file is "
                              f"capped at {limits.max_file_mb} MB instead.", stacklevel=3)
        self.engine, self.limits, self.workdir, self.network = engine, limits, workdir, network
        self.name = f"gem-terminal-{uuid.uuid4().hex[:12]}"
        argv = [engine, "run", "-i", "--rm", "--init", "--name", self.name, "--label", f"{LABEL}={_owner()}",
                "--log-driver", "none", "--memory", f"{limits.memory_mb}m", "--memory-swap", f"{limits.memory_mb}m",
                "--pids-limit", str(limits.max_processes), "--cpus", f"{cpus:g}", "--workdir", "/", *disk,
                *([] if network else ["--network", "none"]),
                *(arg for host, inside in binds for arg in ("-v", f"{host}:{inside}:ro")),
                "--entrypoint", "/bin/sh", image, "-c", _START.format(dirs=" ".join(map(_quote, (workdir, TESTS_DIR,
                                                                                              LOGS_DIR))),
                                                                    loader=_quote(LOADER))]
        config = {"env": {"TERM": "dumb", **(env or {})}, "cwd": workdir, "inherit_env": True, "as_root": True}
        self._launch(argv, config)

    def close(self) -> None:
        """Remove the container and everything in it. Safe to call more than once."""
        if getattr(self, "_closed", True):
            return
        try:
            _cli(self.engine, "rm", "-f", *_rm_options(self.engine), self.name)
        except ContainerError:
            pass  # the supervisor still sees its input close below, exits, and the engine removes the container
        super().close()


# The container's main command: make the workspace and grading folders, then run the supervisor's
# loader on the image's python3 (a reply the host reads when there is none).
_START = ('mkdir -p {dirs} && command -v python3 >/dev/null 2>&1 && exec python3 -I -S -B -c {loader}; '
          'echo \'{{"error": "the image has no python3, which runs the supervisor of the shell"}}\'')


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def _rm_options(engine: str) -> list[str]:
    return ["-t", "0"] if engine == "podman" else []


def _cli(engine: str, *args: str, timeout: float = _CLI_TIMEOUT) -> subprocess.CompletedProcess:
    try:
        return subprocess.run([engine, *args], capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise ContainerError(f"`{engine} {' '.join(args[:3])} ...` did not finish within {timeout:.0f} s.") from None
    except OSError as e:
        raise ContainerError(f"Cannot run {engine}: {e}") from None


def _image_exists(engine: str, tag: str) -> bool:
    return _cli(engine, "image", "inspect", "--format", "{{.Id}}", tag).returncode == 0


def _pull(engine: str, image: str, timeout: float) -> None:
    try:
        result = subprocess.run([engine, "pull", "--quiet", image], stdin=subprocess.DEVNULL, capture_output=True,
                                text=True, errors="replace", timeout=timeout)
    except subprocess.TimeoutExpired:
        result = None
    if result is None or result.returncode != 0:
        why = "it took too long" if result is None else (result.stderr.strip().splitlines() or ["?"])[-1][-500:]
        raise ContainerError(f"The image {image!r} is not in {engine} and could not be pulled ({why}). Load or build "
                             "it, or map its name to a local image with base_images=.")


def _build(engine: str, tag: str, dockerfile: str, context: Path, task: str, timeout: float) -> None:
    with tempfile.TemporaryDirectory(prefix="gem-build-") as scratch:
        path = Path(scratch) / "Dockerfile"
        path.write_text(dockerfile)
        argv = [engine, "build", "--force-rm", "-t", tag, "-f", str(path), str(context)]
        try:
            result = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    text=True, errors="replace", timeout=timeout)
        except subprocess.TimeoutExpired:
            raise TaskBuildError(f"Building the image of the terminal task {task!r} took more than {timeout:.0f} s; "
                                 "it was stopped.") from None
    if result.returncode != 0:
        raise TaskBuildError(f"Building the image of the terminal task {task!r} failed (`{engine} build` exited with "
                             f"{result.returncode}):\n{result.stdout[-_OUTPUT_KEPT:]}")


def _content_key(dockerfile: str, context: Path) -> str:
    digest = hashlib.sha256(dockerfile.encode())
    for path in sorted(context.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(str(path.relative_to(context)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9._-]+", "-", name.lower()).strip("-._") or "task"


def _owner() -> str:
    return f"{socket.gethostname()}:{_boot_id()}:{os.getpid()}"


@functools.lru_cache(maxsize=1)
def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()[:8]
    except OSError:
        return "unknown"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


_swept: set[tuple[str, int]] = set()


def _sweep_once(engine: str) -> None:
    key = (engine, os.getpid())
    if key not in _swept:
        _swept.add(key)
        remove_orphans(engine)

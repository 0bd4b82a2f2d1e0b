"""The test tools that GEM supplies to terminal tasks' test runs (pytest and its plugins), so
that they grade offline.

terminal-bench's and Harbor's test scripts fetch their test tools when they run (pytest through
uv, pinned plugins through ``uvx -w``); GEM runs them without the network
(:mod:`gem_envs.terminal.test_script`) and puts a kit of those tools first on the test run's
``PYTHONPATH`` and ``PATH``. A kit is the tools as pip installs them (``pip install --target``:
packages, their metadata, their console scripts) from GEM's wheelhouse
(:mod:`gem_envs.terminal.wheelhouse`), for the Python version of the sandbox or image that runs
the tests, with GEM's own ``pytest`` launcher (:mod:`gem_envs.terminal.pytest_launcher`) in place
of pip's console script, so that nothing the agent left in the working directory changes how the
tests run. Each is made once per set of requirements, Python version and launcher under ``kits/``
in GEM's cache folder, which the sandbox or container sees read-only at :data:`KITS_PATH`.
"""

from __future__ import annotations

import functools
import hashlib
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from packaging.requirements import Requirement

from gem_core.cache import cache_dir
from gem_core.errors import GemError

from gem_envs.terminal import pytest_launcher, wheelhouse
from gem_envs.terminal.cache import locked

KITS_PATH = "/.gem/kits"  # where the sandbox or container sees the kits
_PIP_TIMEOUT = 600.0


def kits_root() -> Path:
    """The host folder holding every kit (made if missing), mounted at :data:`KITS_PATH`."""
    root = cache_dir("kits")
    root.mkdir(parents=True, exist_ok=True)
    return root


def pinned(tools: tuple[str, ...]) -> list[str]:
    """``tools`` with an unpinned ``pytest`` pinned to the version installed here, if any."""
    result = []
    for tool in tools:
        requirement = Requirement(tool)
        version = wheelhouse.installed_version(tool) if not requirement.specifier else None
        result.append(f"{requirement.name}=={version}" if version else tool)
    return result


def kit(tools: tuple[str, ...], python: str) -> Path:
    """The host folder of the kit that installs ``tools`` for Python ``python`` (``"3.11"``),
    made on first use; :class:`~gem_core.errors.GemError` when they cannot be supplied."""
    requirements = sorted(pinned(tools))
    key = hashlib.sha256(" ".join([python, *requirements, _launcher()]).encode()).hexdigest()[:16]
    folder = kits_root() / f"py{python}-{key}"
    if folder.is_dir():
        return folder
    with locked(f"kit {folder.name}"):
        if folder.is_dir():
            return folder
        wheelhouse.provide(requirements, python)
        staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=folder.parent))
        try:
            _install(requirements, python, staging)
            staging.rename(folder)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return folder


def test_environment(kit_folder: Path) -> str:
    """Shell ``export`` that puts the kit first on the test run's ``PYTHONPATH`` and ``PATH``."""
    inside = f"{KITS_PATH}/{kit_folder.name}"
    return f"export PYTHONPATH={inside}${{PYTHONPATH:+:$PYTHONPATH}} PATH={inside}/bin:$PATH"


def _install(requirements: list[str], python: str, target: Path) -> None:
    argv = [sys.executable, "-m", "pip", "install", "--quiet", "--isolated", "--disable-pip-version-check",
            "--no-warn-script-location", "--no-index", "--find-links", str(wheelhouse.folder()),
            "--only-binary", ":all:", "--python-version", python, "--target", str(target), *requirements]
    try:
        result = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, errors="replace", timeout=_PIP_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise GemError(f"Installing the test tools {' '.join(requirements)} took more than "
                       f"{_PIP_TIMEOUT:.0f} s.") from None
    if result.returncode != 0:
        raise GemError(f"Installing the test tools {' '.join(requirements)} for Python {python} failed (`pip install "
                       f"--target` said: {result.stdout.strip()[-1500:]}).")
    for script in (target / "bin").glob("*") if (target / "bin").is_dir() else ():
        _run_on_python3(script)
    for name in ("pytest", "py.test"):
        (target / "bin" / name).write_text(_LAUNCHER_HEADER + _launcher())
    (target / pytest_launcher.OWN_CONFIG).write_text("[pytest]\n")
    for path in [target, *target.rglob("*")]:  # readable by the sandbox's unprivileged user
        path.chmod(0o755 if path.is_dir() or path.parent == target / "bin" else 0o644)


# Runs the rest of the file on the python3 that PATH finds, without the user site: sh reads the
# second line as `exec python3 -s "$0" "$@"`, Python as a string (the trick of pip's own launchers).
_LAUNCHER_HEADER = "#!/bin/sh\n'''exec' python3 -s \"$0\" \"$@\"\n' '''\n"


@functools.lru_cache(maxsize=1)
def _launcher() -> str:
    return Path(pytest_launcher.__file__).read_text()


_SH_LAUNCHER = re.compile(r"\A#!/bin/sh\n'''exec' .*\n' '''\n")  # pip's launcher for a long interpreter path


def _run_on_python3(script: Path) -> None:
    """Point a console script that pip wrote for this interpreter at the ``python3`` on ``PATH``."""
    text = script.read_text(errors="surrogateescape")
    text = _SH_LAUNCHER.sub("#!python\n", text)
    if text.startswith("#!") and "python" in text.split("\n", 1)[0]:
        script.write_text("#!/usr/bin/env python3\n" + text.split("\n", 1)[1], errors="surrogateescape")

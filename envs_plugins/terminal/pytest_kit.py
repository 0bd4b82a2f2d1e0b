"""The pytest that GEM supplies to terminal tasks' test runs, so that they grade offline.

terminal-bench's and Harbor's test scripts fetch pytest with uv at grading time; GEM runs them
without the network (:func:`gem_envs.terminal.tasks.offline_script`) and puts this kit, a copy of
the installed pytest and the pure-Python packages it imports, on the test run's ``PYTHONPATH``.
The kit is made once per set of versions in GEM's cache folder and mounted read-only at
:data:`KIT_PATH` in the sandbox or container. It needs a ``python3`` of a version this pytest
supports in the sandbox or image.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import sys
import tempfile
from importlib import metadata
from pathlib import Path

from gem_core.errors import GemError

KIT_PATH = "/.gem/pytest"  # where the sandbox or container sees the kit
_DISTRIBUTIONS = ("pytest", "pluggy", "iniconfig", "packaging", "pygments")
_BEFORE_311 = ("exceptiongroup", "tomli")
_PYTEST_SHIM = '#!/bin/sh\nexec python3 -m pytest "$@"\n'


def cache_root() -> Path:
    """GEM's cache folder: ``$GEM_CACHE_DIR``, else ``$XDG_CACHE_HOME/gem``, else ``~/.cache/gem``."""
    configured = os.environ.get("GEM_CACHE_DIR")
    if configured:
        return Path(configured).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gem"


def test_environment() -> str:
    """Shell ``export`` that puts the kit first on the test run's ``PYTHONPATH`` and ``PATH``."""
    return f'export PYTHONPATH={KIT_PATH}${{PYTHONPATH:+:$PYTHONPATH}} PATH=$PATH:{KIT_PATH}/bin'


@functools.lru_cache(maxsize=1)
def kit() -> Path:
    """The kit's folder on the host (made on first use): the packages, and ``bin/pytest``."""
    names = _DISTRIBUTIONS + (_BEFORE_311 if sys.version_info < (3, 11) else ())
    try:
        dists = [metadata.distribution(name) for name in names]
    except metadata.PackageNotFoundError as e:
        raise GemError(f"Grading terminal tasks with pytest needs {e.name} installed in this Python "
                       "(pip install 'gem-adapters[envs]').") from None
    key = hashlib.sha256(" ".join(f"{d.metadata['Name']}=={d.version}" for d in dists).encode()).hexdigest()[:16]
    folder = cache_root() / f"pytest-kit-{key}"
    if folder.is_dir():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".pytest-kit-", dir=folder.parent))
    try:
        for dist in dists:
            for top in sorted(_top_level(dist)):
                source = Path(dist.locate_file(top))
                if source.is_dir():
                    shutil.copytree(source, staging / top, ignore=shutil.ignore_patterns("__pycache__"))
                elif source.is_file():
                    shutil.copy2(source, staging / top)
        (staging / "bin").mkdir()
        (staging / "bin" / "pytest").write_text(_PYTEST_SHIM)
        for path in [staging, *staging.rglob("*")]:  # readable by the sandbox's unprivileged user
            path.chmod(0o755 if path.is_dir() or path.parent.name == "bin" else 0o644)
        try:
            staging.rename(folder)
        except OSError:  # made meanwhile by another process
            shutil.rmtree(staging, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return folder


def _top_level(dist: metadata.Distribution) -> set[str]:
    """The distribution's importable top-level names (packages and modules)."""
    tops = set()
    for file in dist.files or ():
        parts = Path(file).parts
        if not parts or parts[0] in ("..", "__pycache__") or parts[0].endswith((".dist-info", ".egg-info")):
            continue
        if len(parts) > 1 or parts[0].endswith(".py"):
            tops.add(parts[0])
    return tops

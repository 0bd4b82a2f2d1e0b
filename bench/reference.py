"""The reference implementation: PyPI ``gem-llm`` in a virtual environment of its own.

The environment is created once per version under ``bench/`` in GEM's cache folder
(``~/.cache/gem-adapters/bench/``; see :func:`gem_core.cache.cache_dir`) and reused by later runs.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

from rich.console import Console

from bench import BenchError
from gem_core.cache import cache_dir

DISTRIBUTION = "gem-llm"
VERSION = "0.1.0"
LABEL = f"{DISTRIBUTION} {VERSION}"
#: Modules the reference imports in its math, code and Crosswords environments without declaring
#: them; installed beside it so that those workloads run on both sides.
UNDECLARED = ("datasets", "pylatexenc", "pandas")


def cache_root() -> Path:
    return cache_dir("bench")


def requirements(version: str = VERSION) -> list[str]:
    """What the reference environment installs."""
    return [f"{DISTRIBUTION}=={version}", *UNDECLARED]


def venv_dir(version: str = VERSION) -> Path:
    """Where the reference environment of ``version`` lives, keyed by what it installs."""
    key = hashlib.sha256(" ".join(requirements(version)).encode()).hexdigest()[:8]
    return cache_root() / f"{DISTRIBUTION}-{version}-{key}"


def venv_python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def installed_version(python: Path) -> str | None:
    """The ``gem-llm`` version importable by ``python``, or None."""
    code = f"import importlib.metadata as m; print(m.version({DISTRIBUTION!r}))"
    try:
        out = subprocess.run([str(python), "-c", code], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def check_interpreter(python: Path) -> Path:
    """``python`` if it can import the reference; a clear error otherwise."""
    if not python.exists():
        raise BenchError(f"Reference interpreter {python} does not exist.")
    version = installed_version(python)
    if version is None:
        raise BenchError(
            f"{python} cannot import {DISTRIBUTION}. Install it there "
            f"(`{python} -m pip install {DISTRIBUTION}=={VERSION}`) or leave out --reference-python "
            "to use the cached reference environment."
        )
    return python


def ensure_reference(console: Console, version: str = VERSION) -> Path:
    """The interpreter of the cached reference environment, created first when missing."""
    venv = venv_dir(version)
    python = venv_python(venv)
    complete = venv / ".complete"
    if python.exists() and complete.exists() and installed_version(python) == version:
        return python
    if venv.exists():
        console.print(f"[yellow]{venv} is incomplete; creating it again.[/]")
        shutil.rmtree(venv)
    venv.parent.mkdir(parents=True, exist_ok=True)
    log = venv.parent / f"{venv.name}.log"
    console.print(f"Creating the reference environment ({DISTRIBUTION} {version}) in {venv}; later runs reuse it.")
    with log.open("w") as log_file, console.status("python -m venv") as status:
        _stream([sys.executable, "-m", "venv", str(venv)], log_file, status)
        _stream(
            [str(python), "-m", "pip", "install", "--disable-pip-version-check", *requirements(version)],
            log_file, status,
        )
    if installed_version(python) != version:
        raise BenchError(
            f"Installing {DISTRIBUTION}=={version} into {venv} failed (pip's output: {log}). "
            "Check that pip can reach a package index, or run with --no-reference."
        )
    complete.touch()
    console.print(f"Reference environment ready ({log}).")
    return python


def _stream(command: list[str], log_file, status) -> None:
    """Run ``command``, copying its output to ``log_file`` and its latest line to ``status``."""
    log_file.write(f"$ {' '.join(command)}\n")
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for line in process.stdout:
        log_file.write(line)
        if line.strip():
            status.update(f"[dim]{line.strip()[:100]}[/]")
    if process.wait() != 0:
        log_file.flush()
        raise BenchError(
            f"`{' '.join(command)}` failed (exit code {process.returncode}); its output is in {log_file.name}. "
            "Fix the cause, or run with --no-reference."
        )

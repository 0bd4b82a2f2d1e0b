"""A description of the machine and interpreters a run measured, stored with its results."""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
import sys
from pathlib import Path

from bench.runner import REPO


def describe(interpreters: dict[str, Path]) -> dict:
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "usable_cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "memory_gib": _memory_gib(),
        "platform": platform.platform(),
        "python": {impl: _python_version(python) for impl, python in interpreters.items()},
        "commit": _git_commit(),
    }


def summary_line(machine: dict) -> str:
    """'AMD EPYC, 2 cores, Python 3.11.7' and the like."""
    python = machine["python"].get("ours") or platform.python_version()
    return f"{machine['cpu']}, {machine['cores']} cores, Python {python}"


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def _memory_gib() -> float | None:
    try:
        return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (AttributeError, ValueError, OSError):
        return None


def _python_version(python: Path) -> str | None:
    if Path(python) == Path(sys.executable):
        return platform.python_version()
    try:
        out = subprocess.run([str(python), "-c", "import platform; print(platform.python_version())"],
                             capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None


def _git_commit() -> str | None:
    """The commit measured, with '+dirty' when the work tree has changes."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, cwd=REPO)
    except OSError:
        return None
    if head.returncode != 0:
        return None
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")

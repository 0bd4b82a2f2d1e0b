"""Which workloads exist under ``bench/workloads/``, which are planned but not written yet, and
which run only when named."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from gem_core.errors import closest_names

from bench import BenchError

WORKLOADS_DIR = Path(__file__).resolve().parent / "workloads"

# What the suite is meant to cover, in report order. Scripts with other names run after these.
PLANNED: dict[str, str] = {
    "import_make": "import plus make of a built-in environment",
    "games": "single-environment steps per second, per game",
    "vector": "vector environments: sync, async and latency-bound",
    "python_tool": "Python tool latency",
    "math_grading": "math answer grading",
    "code_tests": "code environment: running a solution's tests",
    "rebn": "ReBN advantage estimation",
}
#: Workloads that run only when ``--only`` names them, and why.
ON_REQUEST: dict[str, str] = {
    "gpu_rollout": "made for a CUDA GPU (minutes per run on a CPU): run it with --only gpu_rollout",
}


@dataclass(frozen=True)
class Workload:
    """One workload: a script following the workload protocol, or a planned one (``script=None``).
    ``skipped``: why a written one is not run this time."""

    name: str
    description: str
    script: Path | None
    skipped: str | None = None

    @property
    def runs(self) -> bool:
        return self.script is not None and self.skipped is None


def discover(directory: Path = WORKLOADS_DIR) -> list[Workload]:
    """The planned workloads (written or not), then any other scripts in ``directory``."""
    scripts = {p.stem: p for p in directory.glob("*.py") if not p.name.startswith("_")}
    names = [*PLANNED, *sorted(set(scripts) - set(PLANNED))]
    return [
        Workload(name, _description(scripts.get(name)) or PLANNED.get(name, ""), scripts.get(name))
        for name in names
    ]


def select(workloads: list[Workload], only: Iterable[str] | None) -> list[Workload]:
    """The workloads named in ``only``, in suite order; when it is empty, all of them, those of
    :data:`ON_REQUEST` marked skipped."""
    if not only:
        return [replace(w, skipped=ON_REQUEST[w.name]) if w.name in ON_REQUEST and w.script else w for w in workloads]
    wanted = set(only)
    known = {w.name for w in workloads}
    for name in sorted(wanted - known):
        hint = closest_names(name, known)
        suggestion = f" Did you mean: {', '.join(hint)}?" if hint else ""
        raise BenchError(f"No workload named {name!r}.{suggestion} Known workloads: {', '.join(sorted(known))}.")
    return [w for w in workloads if w.name in wanted]


def _description(script: Path | None) -> str:
    """The first line of the script's docstring, read without running it."""
    if script is None:
        return ""
    try:
        docstring = ast.get_docstring(ast.parse(script.read_text(encoding="utf-8"))) or ""
    except (OSError, SyntaxError, ValueError):
        return ""
    line = docstring.strip().splitlines()[0] if docstring.strip() else ""
    return line.removeprefix("Workload:").strip().rstrip(".")

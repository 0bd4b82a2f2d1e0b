"""Launch commands as the one shell line a config command prints, and GEM's entry modules that run
a library's own launcher with a GEM estimator."""

from __future__ import annotations

import runpy
import shlex
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from gem_core.errors import GemError


def python_command(*args: str) -> list[str]:
    """``python ARGS...``, named as this interpreter is (``python3``, ``python3.11``, ...)."""
    return [Path(sys.executable).name, *args]


def command_line(argv: Sequence[str]) -> str:
    """``argv`` as one line a POSIX shell reads back as the same arguments."""
    return shlex.join([str(arg) for arg in argv])


def library_arguments(estimator: str | None, args: Sequence[str], *, option: str, conflicts: Mapping[str, str],
                      key: Callable[[str], str], native: Sequence[str]) -> tuple[str | None, list[str]]:
    """The GEM name of ``estimator`` (None: the library keeps its own) and the library's arguments:
    ``args`` plus ``native``, the library's own choice that the GEM estimator replaces. Raises a
    GemError for an unknown estimator (naming the closest ones) or for an argument whose ``key``
    is in ``conflicts`` (which says why it cannot go with ``option``)."""
    if estimator is None:
        return None, list(args)
    from gem_adapters.common.estimators import gem_estimator

    name = gem_estimator(estimator)
    for arg in args:
        if key(arg) in conflicts:
            raise GemError(f"{arg} cannot go with {option}: {conflicts[key(arg)]}.")
    return name, [*args, *native]


def run_launcher(module: str, args: Sequence[str]) -> int:
    """Run the library's launcher ``module`` as ``__main__`` with ``args``, as ``python -m`` does."""
    sys.argv = [module, *args]
    runpy.run_module(module, run_name="__main__", alter_sys=True)
    return 0

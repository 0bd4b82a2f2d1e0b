"""Launch commands as the one shell line a config command prints, and GEM's entry modules that run
a library's own launcher with a GEM estimator."""

from __future__ import annotations

import runpy
import shlex
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from gem_core.errors import GemError


def python_command(*args: str) -> list[str]:
    """``python ARGS...``, named as this interpreter is (``python3``, ``python3.11``, ...)."""
    return [Path(sys.executable).name, *args]


def command_line(argv: Sequence[str]) -> str:
    """``argv`` as one line a POSIX shell reads back as the same arguments."""
    return shlex.join([str(arg) for arg in argv])


def option_key(arg: str) -> str:
    """The option a launcher argument sets: a flag's name (``--a.b=1`` -> ``--a.b``) or a Hydra
    override's key (``a.b=1``, ``+a.b=1``, ``~a.b`` -> ``a.b``)."""
    key = arg.partition("=")[0]
    return key if key.startswith("-") else key.lstrip("+~")


def estimator_arguments(argv: Sequence[str], *, option: str, library: str, conflicts: Mapping[str, str],
                        native: Sequence[str]) -> tuple[str | None, list[str]]:
    """Take GEM's estimator ``option`` out of a library launcher's arguments.

    Returns the estimator's GEM name (None without the option: the library keeps its own) and the
    library's arguments, followed by ``native``, the library's own choice that the GEM estimator
    replaces. ``option`` is spelled as the launcher spells options: a flag (``--gem.estimator``,
    its value after ``=`` or as the next argument) or a Hydra key (``gem.estimator``, its value
    after ``=``). Raises a GemError naming the fix for a missing value, any other argument under the
    option's prefix (``--gem.``, ``gem.``), an unknown estimator (naming the closest ones), or an
    argument whose option is in ``conflicts`` (which says why it cannot go with ``option``).
    """
    flag = option.startswith("-")
    usage = f"{option} NAME" if flag else f"{option}=NAME"
    prefix = option.rpartition(".")[0]
    estimator, rest = None, []
    args = iter(argv)
    for arg in args:
        key = option_key(arg)
        if key == option:
            _, equals, value = arg.partition("=")
            if flag and not equals:
                value = next(args, "")
            if not value.strip() or value.startswith("--"):
                raise GemError(f"{option} needs a value: the GEM estimator's name ({usage}, e.g. rebn).")
            estimator = value.strip()
        elif key == prefix or key.startswith(f"{prefix}."):
            raise GemError(f"Unknown option {key}: the only GEM option is {usage}; "
                           f"the other arguments are {library}'s.")
        else:
            rest.append(arg)
    if estimator is None:
        return None, rest
    from gem_adapters.common.estimators import gem_estimator

    name = gem_estimator(estimator)
    for arg in rest:
        if option_key(arg) in conflicts:
            raise GemError(f"{arg} cannot go with {option}: {conflicts[option_key(arg)]}.")
    return name, [*rest, *native]


def run_launcher(module: str, args: Sequence[str]) -> int:
    """Run the library's launcher ``module`` as ``__main__`` with ``args``, as ``python -m`` does."""
    sys.argv = [module, *args]
    runpy.run_module(module, run_name="__main__", alter_sys=True)
    return 0

"""Items of reasoning-gym datasets whose generators run the dataset's own programs.

``codeio`` makes each item by ``exec``-ing a program from its data (reasoning-gym warns that these
are arbitrary code snippets) and calling it; some of them write files into the working directory.
So its items are made in a worker process of :mod:`gem_core.sandbox.worker_pool`, which runs
:mod:`gem_envs.rg.program_worker`, instead of the caller's process: under bubblewrap (read-only
file system, no network, own process namespace), in a private scratch folder that is removed after
each item, with a time limit. Where bubblewrap is missing or does not work, the worker still runs
each program in a throw-away working directory, but with the user's rights, and a warning says so.

An item made in a worker comes back as JSON data: tuples in its metadata become lists, and values
JSON cannot hold become their ``repr``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from gem_core.errors import GemError
from gem_core.sandbox.worker_pool import WorkerPool, sandboxed, shared_pool

logger = logging.getLogger(__name__)

#: reasoning-gym datasets whose generators execute the dataset's programs.
RUNS_PROGRAMS = frozenset({"codeio"})
#: Seconds one item may take to make in a worker.
TIME_LIMIT = 60.0


def runs_programs(name: str, config: Mapping[str, Any]) -> bool:
    """Whether making items of dataset ``name`` with ``config`` runs a dataset's programs (for the
    mix: whether it mixes such a dataset in)."""
    if name in RUNS_PROGRAMS:
        return True
    return any(spec.get("name") in RUNS_PROGRAMS for spec in config.get("datasets") or ())


def sandboxed_item(name: str, size: int, seed: int, config_json: str, index: int) -> dict[str, Any]:
    """Item ``index`` of a dataset, made in a worker process (see the module's documentation)."""
    in_sandbox = sandboxed()
    if not in_sandbox:
        _warn_unsandboxed_once(name)
    arguments = (name, size, seed, config_json)
    outcome = worker_pool().call("item", *arguments, index, in_sandbox, time_limit=TIME_LIMIT,
                                 setup=("prepare", arguments))
    if outcome.timed_out:
        raise GemError(f"Making item {index} of reasoning-gym's {name!r} (dataset seed {seed}) ran its "
                       f"program for more than {TIME_LIMIT:g} s; it was stopped.")
    if not outcome.ok:
        raise GemError(f"Making item {index} of reasoning-gym's {name!r} (dataset seed {seed}) failed in its "
                       f"worker process: {outcome.error}")
    return outcome.value


# -- the pool -----------------------------------------------------------------------------------

_warned = False


def worker_pool() -> WorkerPool:
    """The process-wide pool of workers that make items (started on first use)."""
    return shared_pool("gem_envs.rg.program_worker")


def _warn_unsandboxed_once(name: str) -> None:
    global _warned
    if not _warned:
        _warned = True
        logger.warning(
            "bubblewrap is missing or does not work here: reasoning-gym's %r runs its dataset's programs "
            "WITHOUT a sandbox, in a worker process with your rights (in a throw-away working directory). "
            "Install bubblewrap (apt install bubblewrap) to isolate them.", name)

"""Items of reasoning-gym datasets whose generators run the dataset's own programs.

``codeio`` makes each item by ``exec``-ing a program from its data (reasoning-gym warns that these
are arbitrary code snippets) and calling it; some of them write files into the working directory.
So its items are made in a worker process of :mod:`gem_envs.math.workers` instead of the caller's
process: under bubblewrap (read-only file system, no network, own process namespace), in a private
scratch folder that is removed after each item, with a time limit. Where bubblewrap is missing or
does not work, the worker still runs each program in a throw-away working directory, but with the
user's rights, and a warning says so.

An item made in a worker comes back as JSON data: tuples in its metadata become lists, and values
JSON cannot hold become their ``repr``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator, Mapping
from typing import Any

from gem_core.errors import GemError
from gem_envs.math.workers import WorkerPool, sandbox_prefix

logger = logging.getLogger(__name__)

#: reasoning-gym datasets whose generators execute the dataset's programs.
RUNS_PROGRAMS = frozenset({"codeio"})
#: Seconds one item may take to make in a worker.
TIME_LIMIT = 60.0
#: The largest file a program may write in its scratch folder (bubblewrap only).
SCRATCH_FILE_BYTES = 16 << 20


def runs_programs(name: str, config: Mapping[str, Any]) -> bool:
    """Whether making items of dataset ``name`` with ``config`` runs a dataset's programs (for the
    mix: whether it mixes such a dataset in)."""
    if name in RUNS_PROGRAMS:
        return True
    return any(spec.get("name") in RUNS_PROGRAMS for spec in config.get("datasets") or ())


def sandboxed_item(name: str, size: int, seed: int, config_json: str, index: int) -> dict[str, Any]:
    """Item ``index`` of a dataset, made in a worker process (see the module's documentation)."""
    sandboxed = bool(sandbox_prefix())
    if not sandboxed:
        _warn_unsandboxed_once(name)
    arguments = (name, size, seed, config_json)
    outcome = worker_pool().call("item", *arguments, index, sandboxed, time_limit=TIME_LIMIT,
                                 setup=("prepare", arguments))
    if outcome.timed_out:
        raise GemError(f"Making item {index} of reasoning-gym's {name!r} (dataset seed {seed}) ran its "
                       f"program for more than {TIME_LIMIT:g} s; it was stopped.")
    if not outcome.ok:
        raise GemError(f"Making item {index} of reasoning-gym's {name!r} (dataset seed {seed}) failed in its "
                       f"worker process: {outcome.error}")
    return outcome.value


# -- in the worker process ----------------------------------------------------------------------


def warm_up() -> None:
    import reasoning_gym  # noqa: F401  (seconds to import; done before the worker reports ready)

    tempfile.gettempdir()  # chosen (by writing a probe file) before the worker forbids writes


def prepare(name: str, size: int, seed: int, config_json: str) -> None:
    """Build (once) the dataset whose items are about to be made."""
    from gem_envs.rg.datasets import TaskDataset

    TaskDataset(name, size, seed, json.loads(config_json))  # built once per arguments (cached)


def item(name: str, size: int, seed: int, config_json: str, index: int, sandboxed: bool) -> dict[str, Any]:
    """Make item ``index`` here, in a scratch working directory; its programs may write files there
    only when ``sandboxed`` (otherwise the worker's zero file-size limit stays: no writes)."""
    from gem_envs.rg.datasets import generate_item

    files = _file_size_limit(SCRATCH_FILE_BYTES) if sandboxed else contextlib.nullcontext()
    with _scratch_directory(), files:
        _seed_numpy(f"{name}/{seed}/{index}")
        entry = generate_item(name, size, seed, config_json, index)
    return json.loads(json.dumps(entry, default=repr))


def _seed_numpy(key: str) -> None:
    """Some programs draw from numpy's global generator: seed it for the item (this process only
    makes items), so that an item is the same every time."""
    try:
        import numpy
    except ImportError:
        return
    numpy.random.seed(int.from_bytes(hashlib.sha256(key.encode()).digest()[:4], "big"))


@contextlib.contextmanager
def _scratch_directory() -> Iterator[None]:
    try:
        previous = os.getcwd()
    except OSError:  # it was removed
        previous = "/"
    scratch = tempfile.mkdtemp(prefix="gem-rg-item-")
    os.chdir(scratch)
    try:
        yield
    finally:
        os.chdir(previous)
        shutil.rmtree(scratch, ignore_errors=True)


@contextlib.contextmanager
def _file_size_limit(size: int) -> Iterator[None]:
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    wanted = size if hard == resource.RLIM_INFINITY else min(size, hard)
    resource.setrlimit(resource.RLIMIT_FSIZE, (wanted, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))


# -- the pool -----------------------------------------------------------------------------------

_pool: WorkerPool | None = None
_pool_lock = threading.Lock()
_warned = False


def worker_pool() -> WorkerPool:
    """The process-wide pool of workers that make items (started on first use)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = WorkerPool(__name__)
        return _pool


def _warn_unsandboxed_once(name: str) -> None:
    global _warned
    if not _warned:
        _warned = True
        logger.warning(
            "bubblewrap is missing or does not work here: reasoning-gym's %r runs its dataset's programs "
            "WITHOUT a sandbox, in a worker process with your rights (in a throw-away working directory). "
            "Install bubblewrap (apt install bubblewrap) to isolate them.", name)

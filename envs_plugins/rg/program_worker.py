"""The worker side of :mod:`gem_envs.rg.generation`: what a worker process runs to make an item of
a reasoning-gym dataset whose generator runs the dataset's own programs, in a scratch working
directory (see that module for the sandbox around the worker)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from typing import Any

from gem_envs.rg.datasets import TaskDataset, generate_item

#: The largest file a program may write in its scratch folder (bubblewrap only).
SCRATCH_FILE_BYTES = 16 << 20


def warm_up() -> None:
    import reasoning_gym  # noqa: F401  (seconds to import; done before the worker reports ready)

    tempfile.gettempdir()  # chosen (by writing a probe file) before the worker forbids writes


def prepare(name: str, size: int, seed: int, config_json: str) -> None:
    """Build (once) the dataset whose items are about to be made."""
    TaskDataset(name, size, seed, json.loads(config_json))  # built once per arguments (cached)


def item(name: str, size: int, seed: int, config_json: str, index: int, sandboxed: bool) -> dict[str, Any]:
    """Make item ``index`` here, in a scratch working directory; its programs may write files there
    only when ``sandboxed`` (otherwise the worker's zero file-size limit stays: no writes)."""
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

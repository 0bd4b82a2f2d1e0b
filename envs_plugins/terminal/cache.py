"""GEM's cache folder for terminal tasks (built images' locks, the wheelhouse, test-tool kits),
and the lock that lets one thread of one process at a time make an entry of it."""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path

_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


def cache_root() -> Path:
    """GEM's cache folder: ``$GEM_CACHE_DIR``, else ``$XDG_CACHE_HOME/gem``, else ``~/.cache/gem``."""
    configured = os.environ.get("GEM_CACHE_DIR")
    if configured:
        return Path(configured).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gem"


@contextlib.contextmanager
def locked(name: str) -> Iterator[None]:
    """Hold the lock called ``name`` across threads (a lock) and processes (a lock file)."""
    import fcntl

    with _locks_guard:
        thread_lock = _locks.setdefault(name, threading.Lock())
    path = cache_root() / "locks" / (hashlib.sha256(name.encode()).hexdigest()[:16] + ".lock")
    with thread_lock:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w") as file:
            fcntl.flock(file, fcntl.LOCK_EX)
            yield

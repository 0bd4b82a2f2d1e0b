"""The lock that lets one thread of one process at a time make an entry of GEM's cache folder
(:func:`gem_core.cache.cache_dir`) for terminal tasks: built images, the wheelhouse, test-tool kits."""

from __future__ import annotations

import contextlib
import hashlib
import threading
from collections.abc import Iterator

from gem_core.cache import cache_dir

_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


@contextlib.contextmanager
def locked(name: str) -> Iterator[None]:
    """Hold the lock called ``name`` across threads (a lock) and processes (a lock file)."""
    import fcntl

    with _locks_guard:
        thread_lock = _locks.setdefault(name, threading.Lock())
    path = cache_dir("locks") / (hashlib.sha256(name.encode()).hexdigest()[:16] + ".lock")
    with thread_lock:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w") as file:
            fcntl.flock(file, fcntl.LOCK_EX)
            yield

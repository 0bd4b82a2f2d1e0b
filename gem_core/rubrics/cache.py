"""Judgements kept by what was judged, so that the same question is never asked twice.

A key is a hash of everything that shapes an answer: the judge model's name, its sampling settings
and the messages sent (the rubric, the scale and the transcript). Only judgements that gave a score
are kept; a failed one is asked again next time.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gem_core.errors import GemError


def judgement_key(request: Mapping[str, Any]) -> str:
    """The cache key of a request: the SHA-256 of its canonical JSON."""
    text = json.dumps(request, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class JudgeCache:
    """Scores and judge answers by key: in memory (the ``max_entries`` most recently used), and
    with ``path`` also in a SQLite file that outlives the process and is shared by every process
    that opens it. Safe to use from several threads; shared, never copied."""

    def __init__(self, path: str | Path | None = None, *, max_entries: int = 10_000):
        self.path = Path(path).expanduser() if path is not None else None
        self.max_entries = max_entries
        self._memory: OrderedDict[str, tuple[float, str]] = OrderedDict()
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None

    def get(self, key: str) -> tuple[float, str] | None:
        """``(score, text)`` kept under ``key``, or None."""
        with self._lock:
            found = self._memory.get(key)
            if found is not None:
                self._memory.move_to_end(key)
                return found
            if self.path is None:
                return None
            row = self._connection().execute("SELECT score, text FROM judgements WHERE key = ?", (key,)).fetchone()
            if row is None:
                return None
            self._remember(key, (float(row[0]), str(row[1])))
            return float(row[0]), str(row[1])

    def put(self, key: str, score: float, text: str) -> None:
        """Keep ``(score, text)`` under ``key``."""
        with self._lock:
            self._remember(key, (score, text))
            if self.path is not None:
                with self._connection() as db:
                    db.execute("INSERT OR REPLACE INTO judgements (key, score, text) VALUES (?, ?, ?)",
                               (key, score, text))

    def __len__(self) -> int:
        with self._lock:
            if self.path is None:
                return len(self._memory)
            return int(self._connection().execute("SELECT COUNT(*) FROM judgements").fetchone()[0])

    def _remember(self, key: str, value: tuple[float, str]) -> None:
        self._memory[key] = value
        self._memory.move_to_end(key)
        while len(self._memory) > self.max_entries:
            self._memory.popitem(last=False)

    def _connection(self) -> sqlite3.Connection:
        if self._db is None:
            assert self.path is not None
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                db = sqlite3.connect(self.path, timeout=30, check_same_thread=False)
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("CREATE TABLE IF NOT EXISTS judgements (key TEXT PRIMARY KEY, score REAL, text TEXT)")
            except sqlite3.Error as error:
                raise GemError(f"Cannot use {self.path} as the judge's cache (a SQLite file): {error}") from None
            self._db = db
        return self._db

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    def __deepcopy__(self, memo: dict[int, Any]) -> JudgeCache:
        return self

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path, "max_entries": self.max_entries}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["path"], max_entries=state["max_entries"])  # type: ignore[misc]


#: The cache judges share unless given another: in memory, for the process's life.
SHARED = JudgeCache()
_files: dict[Path, JudgeCache] = {}
_files_lock = threading.Lock()


def cache_for(cache: JudgeCache | str | Path | bool | None) -> JudgeCache | None:
    """The cache a judge's ``cache`` option names: True the shared in-memory one, a path a
    SQLite file (one :class:`JudgeCache` per file in a process), False or None none."""
    if cache is True:
        return SHARED
    if cache is False or cache is None:
        return None
    if isinstance(cache, JudgeCache):
        return cache
    if isinstance(cache, (str, Path)):
        path = Path(cache).expanduser().resolve()
        with _files_lock:
            if path not in _files:
                _files[path] = JudgeCache(path)
            return _files[path]
    raise GemError(f"cache must be True, False, a file path or a JudgeCache, got {cache!r}.")

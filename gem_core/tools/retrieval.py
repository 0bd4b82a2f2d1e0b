"""Passage retrieval for the search tool: a local BM25 index over a jsonl corpus, and a client
for retrieval servers.

A corpus is a jsonl file, one passage per line: ``{"title": ..., "text": ...}`` (optionally
``"id"``), or ``{"contents": "title\\ntext"}`` as in the Wikipedia dumps retrieval servers use.

The wire protocol (what ``gem search-server`` and the reference's retrieval servers speak):
``POST /retrieve`` with a msgpack body ``{"query": str, "topk": int, "return_scores": bool}``,
answered with msgpack ``{"result": [{"document": {"contents": ..., ...}, "score": float}, ...]}``.
The JSON form takes ``{"queries": [str, ...], ...}`` and answers one result list per query.
"""

from __future__ import annotations

import functools
import json
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from gem_core.errors import DataNotFoundError, GemError, MissingDependencyError

#: The small corpus that ships with GEM (general-knowledge passages, for tests and demos).
SAMPLE_CORPUS = Path(__file__).with_name("sample_corpus.jsonl")


class CorpusError(GemError, ValueError):
    """A corpus file that cannot be read as passages."""


class RetrievalError(GemError):
    """A retrieval server that could not be reached or answered badly."""


@dataclass(frozen=True)
class Passage:
    """One retrieved passage; ``score`` is the retriever's score, when it gave one."""

    title: str
    text: str
    id: str = ""
    score: float | None = None

    @property
    def contents(self) -> str:
        return f"{self.title}\n{self.text}"

    def document(self) -> dict[str, str]:
        """The passage as a retrieval server sends it."""
        return {"id": self.id, "title": self.title, "text": self.text, "contents": self.contents}

    @classmethod
    def from_document(cls, document: Any, score: Any = None) -> Passage:
        """Read a document as retrieval servers send it (``title``/``text`` or ``contents``)."""
        if not isinstance(document, dict):
            raise ValueError(f"a document must be an object, got {type(document).__name__}")
        if isinstance(document.get("title"), str) and isinstance(document.get("text"), str):
            title, text = document["title"], document["text"]
        elif isinstance(document.get("contents"), str):
            title, _, text = document["contents"].partition("\n")
            title = title.strip().strip('"')
        else:
            raise ValueError("a document needs 'title' and 'text', or 'contents'")
        return cls(title=title, text=text, id=str(document.get("id", "")),
                   score=float(score) if isinstance(score, (int, float)) else None)


def load_corpus(path: str | os.PathLike[str]) -> list[Passage]:
    """Read a jsonl corpus; a malformed line raises :class:`CorpusError` naming it."""
    path = Path(path)
    if not path.is_file():
        raise DataNotFoundError(f"Corpus file {str(path)!r} does not exist. Pass the path of a jsonl "
                                "file with one {\"title\", \"text\"} object per line.")
    passages = []
    with path.open(encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                passage = Passage.from_document(record)
            except ValueError as e:
                raise CorpusError(f"{path}:{number}: {e}") from None
            passages.append(passage if passage.id else Passage(passage.title, passage.text, str(number)))
    if not passages:
        raise CorpusError(f"Corpus {path} holds no passages.")
    return passages


class Bm25Index:
    """BM25 search (bm25s: lower-cased words, English stopwords removed) over passages."""

    blocking = False  # searching a small in-memory index takes well under a millisecond

    def __init__(self, passages: Sequence[Passage]):
        bm25s = MissingDependencyError.require("bm25s", feature="BM25 search", extra="tools")
        if not passages:
            raise CorpusError("Cannot index an empty list of passages.")
        self.passages = list(passages)
        tokens = bm25s.tokenize([p.contents for p in self.passages], stopwords="en", show_progress=False)
        self._bm25 = bm25s.BM25()
        self._bm25.index(tokens, show_progress=False)
        self._lock = threading.Lock()

    @classmethod
    def from_corpus(cls, path: str | os.PathLike[str]) -> Bm25Index:
        """The index of a corpus file, built once per process and file version."""
        stat = Path(path).stat() if Path(path).is_file() else None
        key = (os.path.realpath(path), stat.st_mtime_ns, stat.st_size) if stat else (str(path), 0, 0)
        return _cached_index(*key)

    def __len__(self) -> int:
        return len(self.passages)

    def search(self, query: str, topk: int = 3) -> list[Passage]:
        """The best passages for ``query``, best first; passages sharing no word are left out."""
        return self.search_many([query], topk)[0]

    def search_many(self, queries: Sequence[str], topk: int = 3) -> list[list[Passage]]:
        bm25s = MissingDependencyError.require("bm25s", feature="BM25 search", extra="tools")
        k = min(topk, len(self.passages))
        tokens = bm25s.tokenize(list(queries), stopwords="en", return_ids=False, show_progress=False)
        with self._lock:
            ids, scores = self._bm25.retrieve(tokens, k=k, show_progress=False)
        results = []
        for row_ids, row_scores in zip(ids, scores):
            results.append([
                Passage(p.title, p.text, p.id, float(score))
                for p, score in ((self.passages[int(i)], s) for i, s in zip(row_ids, row_scores))
                if score > 0
            ])
        return results


@functools.lru_cache(maxsize=8)
def _cached_index(path: str, mtime_ns: int, size: int) -> Bm25Index:
    return Bm25Index(load_corpus(path))


class HttpRetriever:
    """A client for a retrieval server.

    ``wire="msgpack"`` speaks the reference's format (one query per request, msgpack), which
    ``gem search-server`` also speaks; ``wire="json"`` speaks the JSON batch format of Search-R1
    style servers (``{"queries": [...]}``).
    """

    blocking = True

    def __init__(self, url: str, *, wire: Literal["msgpack", "json"] = "msgpack", timeout: float = 5.0):
        if wire not in ("msgpack", "json"):
            raise ValueError(f"wire must be 'msgpack' or 'json', got {wire!r}")
        self.url, self.wire, self.timeout = url, wire, timeout
        self._client = None
        self._lock = threading.Lock()

    def search(self, query: str, topk: int = 3) -> list[Passage]:
        """The server's passages for ``query``; raises :class:`RetrievalError` on failure."""
        httpx = MissingDependencyError.require("httpx", feature="The search tool's HTTP client", extra="tools")
        if self.wire == "json":
            body = json.dumps({"queries": [query], "topk": topk, "return_scores": True}).encode()
            headers = {"content-type": "application/json"}
        else:
            body = _msgpack().encode({"query": query, "topk": topk, "return_scores": True})
            headers = {"content-type": "application/msgpack"}
        try:
            response = self._http().post(self.url, content=body, headers=headers)
        except httpx.HTTPError as e:
            raise RetrievalError(f"cannot reach the retrieval server at {self.url}: {e}") from None
        if response.status_code != 200:
            raise RetrievalError(f"the retrieval server at {self.url} answered {response.status_code}: "
                                 f"{response.text[:200]}")
        try:
            payload = response.json() if self.wire == "json" else _msgpack().decode(response.content)
            result = payload["result"]
            if self.wire == "json":
                result = result[0]
            return [Passage.from_document(item["document"], item.get("score")) for item in result]
        except (ValueError, KeyError, IndexError, TypeError) as e:
            raise RetrievalError(f"unexpected answer from the retrieval server at {self.url}: {e}") from None

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def _http(self):
        with self._lock:
            if self._client is None:
                httpx = MissingDependencyError.require("httpx", feature="The search tool's HTTP client", extra="tools")
                self._client = httpx.Client(timeout=self.timeout)
            return self._client


def _msgpack():
    return MissingDependencyError.require("msgspec", feature="The msgpack retrieval protocol", extra="tools").msgpack

"""The search tool: answers ``<search>query</search>`` with passages from a local BM25 index
or a retrieval server."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Literal

from gem_core.errors import GemError
from gem_core.tools.base import (Tool, ToolCall, ToolConfigError, ToolFunction, ToolOutput, find_block,
                                 string_argument, text_function)
from gem_core.tools.retrieval import Bm25Index, HttpRetriever, Passage

#: Environment variable with the retrieval server's URL, used when neither corpus nor url is given.
SEARCH_URL_ENV_VAR = "SEARCH_URL"


class SearchTool(Tool):
    """Searches for the query in ``<search>...</search>`` and returns the top passages.

    Args:
        corpus: a jsonl corpus (``title``/``text`` per line) searched in-process with BM25.
        url: a retrieval server (e.g. ``gem search-server``), used when no corpus is given;
            defaults to the ``SEARCH_URL`` environment variable.
        topk: passages per query.
        timeout: seconds to wait for the server.
        wire: the server's protocol, ``"msgpack"`` (GEM's) or ``"json"`` (Search-R1 style).

    The observation is ``<information>Doc 1(Title: ...) text ...</information>``. A call fails
    when the query is empty or the server cannot answer; no passage found is still a success.
    """

    name = "search"
    tool_type = "search"

    def __init__(self, *, corpus: str | os.PathLike[str] | None = None, url: str | None = None, topk: int = 3,
                 timeout: float = 5.0, wire: Literal["msgpack", "json"] = "msgpack", search_url: str | None = None):
        if not isinstance(topk, int) or isinstance(topk, bool) or topk <= 0:
            raise ToolConfigError(f"topk must be a positive integer, got {topk!r}.")
        if wire not in ("msgpack", "json"):
            raise ToolConfigError(f"wire must be 'msgpack' or 'json', got {wire!r}.")
        self.topk = topk
        if search_url is not None:  # gem-llm's name for url
            if url is not None:
                raise ToolConfigError("Give url= or search_url= (gem-llm's spelling), not both.")
            url = search_url
        url = url or (None if corpus is not None else os.environ.get(SEARCH_URL_ENV_VAR))
        if corpus is not None and url is not None:
            raise ToolConfigError("SearchTool takes corpus= or url=, not both.")
        if corpus is not None:
            self.backend: Bm25Index | HttpRetriever = Bm25Index.from_corpus(corpus)
        elif url:
            self.backend = HttpRetriever(url, wire=wire, timeout=timeout)
        else:
            raise ToolConfigError(
                "SearchTool needs a corpus or a retrieval server: pass corpus=PATH (a jsonl file of "
                "title/text passages), or url=http://HOST:PORT/retrieve of a server such as "
                f"`gem search-server`, or set {SEARCH_URL_ENV_VAR}."
            )
        self.blocking = self.backend.blocking

    def instructions(self) -> str:
        return (
            "You can search a knowledge base. Write a query inside <search>...</search>, for example "
            "<search>capital of Australia</search>. The results come back inside "
            "<information>...</information>. Search as often as you need, then give your final answer "
            "inside <answer>...</answer>."
        )

    def functions(self) -> list[ToolFunction]:
        return [text_function(self.name, f"Search the knowledge base; returns the top {self.topk} passages.",
                              "query", "The query")]

    def call_text(self, function: str, arguments: Mapping[str, Any]) -> str:
        if function != self.name:
            return super().call_text(function, arguments)
        return f"<search>{string_argument(function, arguments, 'query', '</search>')}</search>"

    def parse(self, action: str) -> ToolCall | None:
        block = find_block(action, "<search>", "</search>")
        if block is None:
            return None
        start, end, query = block
        query = query.strip()
        return ToolCall(self.name, query, start, end, None if query else "the query is empty")

    def execute(self, call: ToolCall) -> ToolOutput:
        if call.error is not None:
            return self.failed_call(call)
        try:
            passages = self.search(call.arguments)
        except GemError as e:
            return ToolOutput(f"\n\n<information>[search failed: {e}]</information>\n\n", False, {"error": str(e)})
        return ToolOutput(f"\n\n<information>{format_passages(passages)}</information>\n\n", True,
                          {"passages": len(passages)})

    def search(self, query: str) -> list[Passage]:
        """The top passages for ``query``."""
        return self.backend.search(query, self.topk)

    def close(self) -> None:
        if isinstance(self.backend, HttpRetriever):
            self.backend.close()


def format_passages(passages: list[Passage]) -> str:
    """Passages as the search observation lists them: ``Doc 1(Title: ...) text``, one per line."""
    if not passages:
        return "No results found.\n"
    return "".join(f"Doc {i}(Title: {p.title}) {p.text}\n" for i, p in enumerate(passages, 1))

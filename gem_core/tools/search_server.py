"""A local retrieval server: BM25 over a jsonl corpus, on ``POST /retrieve``.

It speaks the protocol described in :mod:`gem_core.tools.retrieval`, in msgpack (the reference's
single-query form) or JSON (``Content-Type: application/json``, single or batch form), and
answers in the format it was asked in. ``GET /health`` reports the number of passages.
"""

from __future__ import annotations

import json
from typing import Any

from gem_core.errors import MissingDependencyError
from gem_core.tools.retrieval import Bm25Index

MAX_QUERIES = 1024
MAX_TOPK = 1000


def create_app(index: Bm25Index, *, topk: int = 3):
    """The Starlette application serving ``index``; ``topk`` is the default for requests without
    one."""
    starlette_apps = MissingDependencyError.require("starlette.applications", feature="The search server",
                                                    extra="tools")
    from starlette.concurrency import run_in_threadpool
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    msgpack = MissingDependencyError.require("msgspec", feature="The search server", extra="tools").msgpack

    async def retrieve(request):
        as_json = request.headers.get("content-type", "").split(";")[0].strip() == "application/json"
        body = await request.body()
        try:
            payload = json.loads(body) if as_json else msgpack.decode(body)
            queries, batch, k, with_scores = _read_request(payload, topk)
        except (ValueError, TypeError) as e:  # msgspec's DecodeError is a ValueError
            message = {"error": f"bad request: {e}"}
            return JSONResponse(message, status_code=400) if as_json else Response(
                msgpack.encode(message), status_code=400, media_type="application/msgpack")
        results = await run_in_threadpool(index.search_many, queries, k)
        documents = [[{"document": p.document(), "score": p.score if with_scores else None} for p in passages]
                     for passages in results]
        answer = {"result": documents if batch else documents[0]}
        if as_json:
            return JSONResponse(answer)
        return Response(msgpack.encode(answer), media_type="application/msgpack")

    async def health(request):
        return JSONResponse({"status": "ok", "passages": len(index)})

    return starlette_apps.Starlette(routes=[
        Route("/retrieve", retrieve, methods=["POST"]),
        Route("/health", health, methods=["GET"]),
    ])


def _read_request(payload: Any, default_topk: int) -> tuple[list[str], bool, int, bool]:
    """``(queries, batch, topk, return_scores)`` from a request body."""
    if not isinstance(payload, dict):
        raise ValueError("the body must be an object")
    if "queries" in payload:
        queries, batch = payload["queries"], True
        if not isinstance(queries, list) or not all(isinstance(q, str) for q in queries):
            raise ValueError("'queries' must be a list of strings")
        if not 0 < len(queries) <= MAX_QUERIES:
            raise ValueError(f"send between 1 and {MAX_QUERIES} queries")
    elif isinstance(payload.get("query"), str):
        queries, batch = [payload["query"]], False
    else:
        raise ValueError("expected 'query' (a string) or 'queries' (a list of strings)")
    topk = payload.get("topk") or default_topk  # as in the reference, 0 or null means the default
    if not isinstance(topk, int) or isinstance(topk, bool) or not 0 < topk <= MAX_TOPK:
        raise ValueError(f"'topk' must be an integer between 1 and {MAX_TOPK}")
    return queries, batch, topk, bool(payload.get("return_scores", False))


def serve(index: Bm25Index, *, host: str = "127.0.0.1", port: int = 8000, topk: int = 3,
          log_level: str = "warning") -> None:
    """Serve ``index`` until interrupted."""
    uvicorn = MissingDependencyError.require("uvicorn", feature="The search server", extra="tools")
    uvicorn.run(create_app(index, topk=topk), host=host, port=port, log_level=log_level)

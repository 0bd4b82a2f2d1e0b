"""``gem search-server``: serve BM25 search over a local corpus for the search tool."""

from __future__ import annotations

import click


@click.command("search-server")
@click.option("--corpus", type=click.Path(dir_okay=False), default=None,
              help="A jsonl file with one {\"title\", \"text\"} passage per line "
                   "(default: the small sample corpus that ships with GEM).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535), help="Port to listen on.")
@click.option("--topk", default=3, show_default=True, type=click.IntRange(1, 1000),
              help="Passages per query when a request does not say.")
@click.option("--log-level", default="warning", show_default=True,
              type=click.Choice(["critical", "error", "warning", "info", "debug"]))
def search_server(corpus: str | None, host: str, port: int, topk: int, log_level: str) -> None:
    """Serve BM25 search over a corpus at http://HOST:PORT/retrieve.

    The search tool reaches it with url=http://HOST:PORT/retrieve (or SEARCH_URL). It speaks the
    msgpack request format of GEM's search tool, so clients of other retrieval servers work too,
    and a JSON form (Content-Type: application/json) with a batch of "queries".
    """
    from gem_core.tools.retrieval import SAMPLE_CORPUS, Bm25Index
    from gem_core.tools.search_server import serve

    path = corpus or str(SAMPLE_CORPUS)
    index = Bm25Index.from_corpus(path)
    click.echo(f"Serving {len(index)} passages from {path} at http://{host}:{port}/retrieve (Ctrl+C to stop)")
    serve(index, host=host, port=port, topk=topk, log_level=log_level)

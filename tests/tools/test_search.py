"""Search: the shipped corpus, BM25 in-process, and the local retrieval server."""

from __future__ import annotations

import json
import subprocess
import sys

import httpx
import msgspec
import pytest

from gem_core.errors import DataNotFoundError
from gem_core.tools import SAMPLE_CORPUS, Bm25Index, Passage, SearchTool, ToolConfigError, load_corpus
from gem_core.tools.retrieval import CorpusError

from tests.helpers import free_port, search_server

from .conftest import FIXTURE_PIDS

QUESTIONS = {  # query -> title of the passage that answers it
    "capital of Australia": "Canberra",
    "who first reached the summit of the highest mountain": "Mount Everest",
    "double helix genetic molecule": "DNA",
    "first program for the Analytical Engine": "Ada Lovelace",
    "largest animal krill": "Blue whale",
}


def test_the_sample_corpus_ships_and_loads():
    passages = load_corpus(SAMPLE_CORPUS)
    assert len(passages) >= 40
    assert all(p.title and p.text and p.id for p in passages)
    assert len({p.id for p in passages}) == len(passages)


@pytest.mark.parametrize("query, title", QUESTIONS.items())
def test_bm25_finds_the_answering_passage(query, title):
    results = Bm25Index.from_corpus(SAMPLE_CORPUS).search(query, topk=3)
    assert results[0].title == title
    assert [p.score for p in results] == sorted((p.score for p in results), reverse=True)


def test_bm25_leaves_out_passages_sharing_no_word():
    index = Bm25Index.from_corpus(SAMPLE_CORPUS)
    assert index.search("xylophone zeppelin", topk=3) == []
    assert index.search("", topk=3) == []
    assert Bm25Index.from_corpus(SAMPLE_CORPUS) is index  # built once per file version


def test_corpus_formats_and_errors(tmp_path):
    good = tmp_path / "good.jsonl"
    good.write_text(json.dumps({"contents": '"Quokka"\nA small marsupial from Rottnest Island.'}) + "\n\n"
                    + json.dumps({"id": "x", "title": "Wombat", "text": "A burrowing marsupial."}) + "\n")
    passages = load_corpus(good)
    assert passages[0] == Passage("Quokka", "A small marsupial from Rottnest Island.", "1")
    assert passages[1].id == "x"
    assert Bm25Index(passages).search("Rottnest marsupial")[0].title == "Quokka"

    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"title": "A", "text": "B"}) + "\n{not json\n")
    with pytest.raises(CorpusError, match=r"bad.jsonl:2"):
        load_corpus(bad)
    bad.write_text(json.dumps({"name": "no text"}) + "\n")
    with pytest.raises(CorpusError, match="'title' and 'text', or 'contents'"):
        load_corpus(bad)
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(CorpusError, match="no passages"):
        load_corpus(tmp_path / "empty.jsonl")
    with pytest.raises(DataNotFoundError, match="does not exist"):
        load_corpus(tmp_path / "missing.jsonl")


def test_search_tool_in_process():
    tool = SearchTool(corpus=SAMPLE_CORPUS, topk=2)
    assert not tool.blocking
    call = tool.parse("I should look this up. <search> capital of Australia </search> and wait")
    assert call.arguments == "capital of Australia"
    output = tool.execute(call)
    assert output.success and output.info == {"passages": 2}
    assert output.observation.startswith("\n\n<information>Doc 1(Title: Canberra) Canberra is the capital")
    assert "\nDoc 2(Title: " in output.observation
    assert output.observation.endswith("</information>\n\n")


def test_search_tool_parsing_edge_cases():
    tool = SearchTool(corpus=SAMPLE_CORPUS)
    assert tool.parse("no search") is None
    assert tool.parse("<search>unclosed") is None
    empty = tool.parse("<search>  </search>")
    assert empty.error == "the query is empty"
    assert not tool.execute(empty).success


def test_search_tool_needs_a_backend(monkeypatch):
    monkeypatch.delenv("SEARCH_URL", raising=False)
    with pytest.raises(ToolConfigError, match="corpus=PATH"):
        SearchTool()
    with pytest.raises(ToolConfigError, match="not both"):
        SearchTool(corpus=SAMPLE_CORPUS, url="http://127.0.0.1:1/retrieve")
    with pytest.raises(ToolConfigError, match="topk"):
        SearchTool(corpus=SAMPLE_CORPUS, topk=0)


def test_unreachable_server_is_a_failed_call():
    tool = SearchTool(url=f"http://127.0.0.1:{free_port()}/retrieve", timeout=2)
    output = tool.execute(tool.parse("<search>anything</search>"))
    assert not output.success
    assert "search failed: cannot reach the retrieval server" in output.observation
    tool.close()


# --- the local server, started through the `gem` command -------------------------------------


@pytest.fixture(scope="module")
def server_url():
    with search_server("--topk", "2") as (process, base):
        FIXTURE_PIDS.add(process.pid)
        try:
            yield f"{base}/retrieve"
        finally:
            FIXTURE_PIDS.discard(process.pid)


def test_server_reports_health(server_url):
    health = httpx.get(server_url.replace("/retrieve", "/health")).json()
    assert health == {"status": "ok", "passages": len(load_corpus(SAMPLE_CORPUS))}


@pytest.mark.parametrize("wire", ["msgpack", "json"])
def test_search_tool_through_the_server(server_url, wire):
    tool = SearchTool(url=server_url, topk=3, wire=wire)
    assert tool.blocking
    for query, title in QUESTIONS.items():
        passages = tool.search(query)
        assert passages[0].title == title
        assert passages[0].score is not None and len(passages) <= 3
    output = tool.execute(tool.parse("<search>speed of light in vacuum</search>"))
    assert output.success and "Doc 1(Title: Speed of light)" in output.observation
    tool.close()


def test_server_speaks_the_reference_request_format(server_url):
    # What the reference's search tool sends: a msgpack body, no content type, one query.
    body = msgspec.msgpack.encode({"query": "capital of France", "topk": 1, "return_scores": True})
    reply = msgspec.msgpack.decode(httpx.post(server_url, content=body).content)
    (first,) = reply["result"]
    assert first["document"]["contents"].split("\n")[0] == "Paris"
    assert isinstance(first["score"], float)
    # No topk: the server's default (2); no scores asked: none sent.
    body = msgspec.msgpack.encode({"query": "capital city"})
    reply = msgspec.msgpack.decode(httpx.post(server_url, content=body).content)
    assert len(reply["result"]) == 2 and reply["result"][0]["score"] is None


def test_server_answers_json_batches(server_url):
    reply = httpx.post(server_url, json={"queries": ["Eiffel Tower", "Red Planet"], "topk": 1,
                                         "return_scores": True}).json()
    assert [r[0]["document"]["title"] for r in reply["result"]] == ["Paris", "Mars"]


@pytest.mark.parametrize("payload", [{"queries": "not a list"}, {"query": 3}, {"query": "x", "topk": -1}, {"query": "x", "topk": "3"},
                                     [1, 2], {"queries": []}])
def test_server_rejects_bad_requests(server_url, payload):
    response = httpx.post(server_url, json=payload)
    assert response.status_code == 400 and "bad request" in response.json()["error"]
    response = httpx.post(server_url, content=b"\xc1 not msgpack")
    assert response.status_code == 400


def test_search_server_help():
    out = subprocess.run([sys.executable, "-m", "gem_core.cli", "search-server", "--help"],
                         capture_output=True, text=True)
    assert out.returncode == 0
    assert "--corpus" in out.stdout and "/retrieve" in out.stdout
    listing = subprocess.run([sys.executable, "-m", "gem_core.cli", "--help"], capture_output=True, text=True)
    assert "search-server" in listing.stdout



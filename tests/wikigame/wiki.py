"""A small linked wiki for the WikiGame tests, written to a real ZIM file with libzim's writer
and served as MediaWiki API answers by a stub server on 127.0.0.1."""

from __future__ import annotations

import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from tests.helpers import send_json

# title -> titles it links to. Pages the reference's own tests visit come first; "Unit (ring
# theory)" is a dead end, as in the Simple English Wikipedia those tests were written against.
LINKS: dict[str, list[str]] = {
    "Python (programming language)": ["Guido van Rossum", "Programming language", "Artificial intelligence",
                                      "Monty Python", "Software"],
    "Guido van Rossum": ["Programmer", "Netherlands", "Python (programming language)"],
    "Programmer": ["Software", "Computer", "Guido van Rossum"],
    "Netherlands": ["Amsterdam", "Europe", "Guido van Rossum"],
    "Artificial intelligence": ["Computer", "Machine learning", "Alan Turing"],
    "Euler's totient function": ["Unit (ring theory)", "Leonhard Euler", "Prime number"],
    "Unit (ring theory)": [],
    "RSA algorithm": ["Euler's totient function", "Prime number", "Cryptography"],
    "Programming language": ["Software", "Computer", "Python (programming language)"],
    "Monty Python": ["Comedy", "England"],
    "Software": ["Computer", "Programmer"],
    "Computer": ["Alan Turing", "Software", "Electricity"],
    "Machine learning": ["Artificial intelligence", "Statistics"],
    "Alan Turing": ["England", "Cryptography", "Computer"],
    "Leonhard Euler": ["Switzerland", "Prime number", "Mathematics"],
    "Prime number": ["Mathematics", "Euler's totient function"],
    "Cryptography": ["RSA algorithm", "Mathematics", "Alan Turing"],
    "Amsterdam": ["Netherlands", "Europe"],
    "Europe": ["England", "Switzerland", "Netherlands"],
    "Comedy": ["England", "Monty Python"],
    "England": ["Europe", "London"],
    "London": ["England", "Europe"],
    "Statistics": ["Mathematics", "Machine learning"],
    "Mathematics": ["Statistics", "Prime number", "Leonhard Euler"],
    "Switzerland": ["Europe", "Leonhard Euler"],
    "Electricity": ["Computer"],
    "Deep sea": [],
    "Island": ["Europe"],
}
REDIRECTS = {"Guido": "Guido van Rossum", "AI": "Artificial intelligence"}


def path_of(title: str) -> str:
    return title.replace(" ", "_")


def text_of(title: str) -> str:
    return (f"{title} is an article of the test wiki. It is about {title.lower()}. "
            f"This second sentence says more about {title}.")


def article_html(title: str) -> str:
    """The article as Kiwix stores it: a heading, paragraphs with links, plus what the parser
    must leave out (a navigation box, references, an external link, a link to a missing page)."""
    links = " ".join(f'<a href="./{path_of(t)}">{t}</a>' for t in LINKS[title])
    return (
        f'<html><head><title>{title}</title><style>p {{color: red}}</style></head><body>'
        f'<h1 id="firstHeading">{title}</h1>'
        f'<div class="mw-parser-output"><p>{text_of(title)}</p><p>See {links}.</p>'
        f'<p><a href="https://example.org/x">an external site</a> and '
        f'<a href="./No_such_article">a missing article</a> and <a href="#Notes">a note</a>.</p>'
        f'<table class="navbox"><tr><td><a href="./Island">Island</a></td></tr></table>'
        f'<h2 id="References">References</h2><ol><li><a href="./Deep_sea">Deep sea</a></li></ol>'
        f'</div></body></html>'
    )


def build_zim(path: Path) -> Path:
    """Write the test wiki to ``path`` as a ZIM file (articles, redirects, a stylesheet)."""
    from libzim.writer import Creator, Hint, Item, StringProvider

    class Entry(Item):
        def __init__(self, path, title, mimetype, content):
            super().__init__()
            self.path, self.title, self.mimetype, self.content = path, title, mimetype, content

        def get_path(self):
            return self.path

        def get_title(self):
            return self.title

        def get_mimetype(self):
            return self.mimetype

        def get_contentprovider(self):
            return StringProvider(self.content)

        def get_hints(self):
            return {Hint.FRONT_ARTICLE: self.mimetype == "text/html"}

    with Creator(str(path)).config_indexing(False, "eng") as creator:
        creator.set_mainpath(path_of("Python (programming language)"))
        creator.add_metadata("Title", "GEM test wiki")
        creator.add_metadata("Language", "eng")
        for title in LINKS:
            creator.add_item(Entry(path_of(title), title, "text/html", article_html(title)))
        creator.add_item(Entry("style.css", "", "text/css", "p { margin: 0 }"))
        for source, target in REDIRECTS.items():
            creator.add_redirection(path_of(source), source, path_of(target), {Hint.FRONT_ARTICLE: False})
    return path


def shortest_path(start: str, target: str) -> list[str] | None:
    """The titles of a shortest link path from ``start`` to ``target`` (both included)."""
    previous = {start: None}
    queue = deque([start])
    while queue:
        here = queue.popleft()
        if here == target:
            path = [here]
            while previous[path[-1]] is not None:
                path.append(previous[path[-1]])
            return path[::-1]
        for title in LINKS[here]:
            if title not in previous and title in LINKS:
                previous[title] = here
                queue.append(title)
    return None


class MediaWikiStub:
    """A MediaWiki ``api.php`` answering ``action=query`` from :data:`LINKS`, as the real API
    answers with ``formatversion=2``: extracts, links (``LINK_PAGE`` per answer, with
    ``continue``), redirects and ``list=random``. ``fail_next`` makes the next answers 503."""

    LINK_PAGE = 2

    def __init__(self):
        self.requests: list[dict] = []
        self.fail_next = 0
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                query = {k: v[0] for k, v in parse_qs(urlsplit(self.path).query).items()}
                stub.requests.append(query)
                if stub.fail_next:
                    stub.fail_next -= 1
                    return send_json(self, 503, {"error": "busy"})
                send_json(self, 200, stub.answer(query))

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/w/api.php"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def answer(self, query: dict) -> dict:
        if query.get("list") == "random":
            title = ["Computer", "Europe"][sum(q.get("list") == "random" for q in self.requests) % 2]
            return {"batchcomplete": True, "query": {"random": [{"id": 1, "ns": 0, "title": title}]}}
        title = query.get("titles", "")
        result: dict = {"batchcomplete": True, "query": {}}
        if title in REDIRECTS:
            result["query"]["redirects"] = [{"from": title, "to": REDIRECTS[title]}]
            title = REDIRECTS[title]
        if title not in LINKS:
            result["query"]["pages"] = [{"ns": 0, "title": title, "missing": True}]
            return result
        start = int(query.get("plcontinue", 0))
        links = LINKS[title][start:start + self.LINK_PAGE]
        result["query"]["pages"] = [{"pageid": list(LINKS).index(title) + 1, "ns": 0, "title": title,
                                     "extract": text_of(title),
                                     "links": [{"ns": 0, "title": t} for t in links]}]
        if start + self.LINK_PAGE < len(LINKS[title]):
            result["continue"] = {"plcontinue": str(start + self.LINK_PAGE), "continue": "||"}
        return result

    def close(self):
        self.server.shutdown()
        self.server.server_close()

"""What the WikiGame reads of an article: its title, plain text and the titles it links to, and
the backends' shared interface.

:func:`parse_article` turns an article's HTML (as Kiwix ZIM files store it) into text and link
targets with the standard library's HTML parser: navigation boxes, tables, references and
figures are left out of the text, and only links to other articles are kept.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Protocol
from urllib.parse import unquote, urlsplit

from gem_core.errors import GemError


class WikiBackendError(GemError):
    """A Wikipedia source that failed (a server that cannot be reached, a broken file)."""


@dataclass(frozen=True)
class WikiPage:
    """An article: its ``title``, plain ``text`` and the ``links`` (titles) it has, in page
    order, each once."""

    title: str
    text: str
    links: tuple[str, ...]


class WikiSource(Protocol):
    """Where the WikiGame reads articles."""

    def page(self, title: str) -> WikiPage | None:
        """The article ``title`` (redirects followed), or None if there is none."""

    def random_title(self, rng) -> str | None:
        """The title of a random article, drawn from ``rng`` where the source allows it."""

    def close(self) -> None:
        """Release files and connections."""


class PageCache:
    """The last ``size`` articles a backend read, each under the title asked for and the title it
    arrived at (a redirect's target)."""

    def __init__(self, size: int):
        self.size = size
        self._pages: OrderedDict[str, WikiPage | None] = OrderedDict()

    def get(self, key: str, read: Callable[[], WikiPage | None]) -> WikiPage | None:
        """The page cached under the normal title ``key``, else what ``read()`` returns, kept."""
        if key in self._pages:
            self._pages.move_to_end(key)
            return self._pages[key]
        page = read()
        for name in {key, normal_title(page.title) if page else key}:
            self._pages[name] = page
        while len(self._pages) > self.size:
            self._pages.popitem(last=False)
        return page

    def clear(self) -> None:
        self._pages.clear()


def normal_title(title: str) -> str:
    """A title as MediaWiki compares titles: underscores are spaces, runs of spaces are one,
    and the first letter is case-insensitive."""
    title = " ".join(title.replace("_", " ").split())
    return title[:1].upper() + title[1:]


_SKIPPED_TAGS = {"table", "style", "script", "figure", "sup", "math", "noscript", "head", "title"}
_SKIPPED_CLASSES = {"infobox", "navbox", "vertical-navbox", "thumb", "mw-editsection", "reference",
                    "hatnote", "toc", "ambox", "sistersitebox", "mw-ref", "noprint", "metadata"}
_VOID_TAGS = {"br", "img", "hr", "meta", "link", "input", "wbr", "source", "area", "col", "embed", "param", "track"}
_BLOCK_TAGS = {"p", "div", "li", "h1", "h2", "h3", "h4", "h5", "h6", "section", "dd", "dt", "blockquote"}
_END_SECTIONS = {"references", "notes", "external_links", "further_reading", "sources", "bibliography"}


class _ArticleParser(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, bool]] = []  # (tag, skipped)
        self.skip_depth = 0
        self.done = False  # past the references
        self.title_parts: list[str] = []
        self.in_h1 = False
        self.text: list[str] = []
        self.hrefs: list[str] = []

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag in ("h2", "h3") and (attributes.get("id") or "").lower() in _END_SECTIONS:
            self.done = True
        classes = set((attributes.get("class") or "").split())
        skipped = tag in _SKIPPED_TAGS or bool(classes & _SKIPPED_CLASSES)
        if tag == "h1":
            self.in_h1 = True
        if tag == "span" and (attributes.get("id") or "").lower() in _END_SECTIONS:
            self.done = True
        if tag == "a" and not self.done and attributes.get("href") and not self.skip_depth:
            self.hrefs.append(attributes["href"])
        if tag in _VOID_TAGS:
            return
        self.stack.append((tag, skipped))
        if skipped:
            self.skip_depth += 1
        if tag in _BLOCK_TAGS:
            self.text.append("\n")

    def handle_endtag(self, tag):
        if tag == "h1":
            self.in_h1 = False
        if tag in _VOID_TAGS:
            return
        while self.stack:  # close up to the matching tag (HTML in the wild leaves some open)
            open_tag, skipped = self.stack.pop()
            if skipped:
                self.skip_depth -= 1
            if open_tag == tag:
                break
        if tag in _BLOCK_TAGS:
            self.text.append("\n")

    def handle_data(self, data):
        if self.in_h1:
            self.title_parts.append(data)
        elif not self.skip_depth and not self.done:
            self.text.append(data)


_SPACES = re.compile(r"[ \t\r\f\v]+")
_BLANK_LINES = re.compile(r"\s*\n\s*")


def parse_article(html: str) -> tuple[str, str, list[str]]:
    """The ``(heading, text, hrefs)`` of an article's HTML: the text of its first ``<h1>``, its
    readable text, and the targets of its links in page order (as written, not resolved)."""
    parser = _ArticleParser()
    parser.feed(html)
    parser.close()
    text = _BLANK_LINES.sub("\n", _SPACES.sub(" ", "".join(parser.text))).strip()
    return " ".join("".join(parser.title_parts).split()), text, parser.hrefs


def article_path(href: str, base: str = "") -> str | None:
    """The article path a link points to, relative to the archive's root, or None for links
    that leave the wiki (another site, a map, an anchor in the same page, a file)."""
    parts = urlsplit(href)
    if parts.scheme or parts.netloc or not parts.path:
        return None
    path = unquote(parts.path)
    folder = base.rsplit("/", 1)[0] if "/" in base else ""
    segments = folder.split("/") if folder else []
    for segment in path.split("/"):
        if segment == "..":
            if segments:
                segments.pop()
        elif segment and segment != ".":
            segments.append(segment)
    return "/".join(segments) or None

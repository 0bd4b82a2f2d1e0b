"""Articles read straight from a Kiwix ZIM file with ``libzim``: no server.

A ZIM file (for instance ``wikipedia_en_all_nopic_*.zim`` or ``wikipedia_en_simple_all_*.zim``
from Kiwix's library) holds every article as HTML under a path, redirects as entries pointing
at their target, and media. Only links to HTML articles that exist in the file are kept, so a
page with none is a real dead end.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from gem_core.errors import DataNotFoundError, GemError, MissingDependencyError
from gem_envs.wikigame.pages import PageCache, WikiPage, article_path, normal_title, parse_article

#: Where ``zimfile`` names without a folder are looked for (besides the working directory).
ZIM_DIR_VARIABLE = "GEM_ZIM_DIR"
#: Attempts at drawing a random article before giving up (most entries of a ZIM are media).
RANDOM_TRIES = 1000
_REDIRECT_HOPS = 8


def find_zim(zim_path: str | os.PathLike[str] | None = None, zimfile: str | None = None) -> Path:
    """The ZIM file named by ``zim_path`` (a path), or by ``zimfile`` (a name, with or without
    ``.zim``, looked for in the working directory and in ``$GEM_ZIM_DIR``)."""
    if zim_path is not None:
        path = Path(zim_path).expanduser()
        if path.is_file():
            return path
        raise DataNotFoundError(f"WikiGame: zim_path={str(path)!r} is not a file. {HOW_TO_GET}")
    if zimfile:
        name = zimfile if zimfile.endswith(".zim") else f"{zimfile}.zim"
        folders = [Path.cwd()] + [Path(p) for p in os.environ.get(ZIM_DIR_VARIABLE, "").split(os.pathsep) if p]
        for folder in folders:
            if (folder / name).is_file():
                return folder / name
        raise DataNotFoundError(
            f"WikiGame: no ZIM file {name!r} in {', '.join(map(str, folders))} (the working directory and "
            f"${ZIM_DIR_VARIABLE}). The ZIM file is read directly: no kiwix-serve is needed. {HOW_TO_GET}")
    raise DataNotFoundError(f"WikiGame needs a Wikipedia ZIM file: pass zim_path=... {HOW_TO_GET}")


HOW_TO_GET = (
    "Download a Wikipedia ZIM file from https://download.kiwix.org/zim/wikipedia/ (for example "
    "wikipedia_en_simple_all_nopic_2025-11.zim, about 1 GB; the full English one is about 50 GB "
    "with pictures, 12 GB without) and pass zim_path='/path/to/file.zim', or play on live "
    "Wikipedia with backend='mw'.")


class ZimWiki:
    """A :class:`~gem_envs.wikigame.pages.WikiSource` over a ZIM file. Pages read are kept in a
    bounded cache (``cache_size`` pages)."""

    def __init__(self, path: str | os.PathLike[str], *, cache_size: int = 2048):
        try:
            from libzim.reader import Archive
        except ImportError:
            raise MissingDependencyError("The WikiGame's ZIM backend", "libzim", "envs") from None
        self.path = Path(path)
        try:
            self.archive: Any = Archive(str(self.path))
        except Exception as e:  # libzim raises RuntimeError for a file that is not a ZIM
            raise GemError(f"WikiGame: cannot open {str(self.path)!r} as a ZIM file: {e}") from None
        self._cache = PageCache(cache_size)

    def page(self, title: str) -> WikiPage | None:
        def read() -> WikiPage | None:
            entry = self._entry_for_title(title)
            return self._read(entry) if entry is not None else None

        return self._cache.get(normal_title(title), read)

    def random_title(self, rng) -> str | None:
        count = self.archive.entry_count
        for _ in range(RANDOM_TRIES):
            entry = self.archive._get_entry_by_id(rng.randrange(count))
            if not entry.is_redirect and _is_article(entry):
                return entry.title
        return None

    def close(self) -> None:
        self._cache.clear()

    def _entry_for_title(self, title: str) -> Any | None:
        archive = self.archive
        spaced = " ".join(title.replace("_", " ").split())
        if not spaced:
            return None
        for path in dict.fromkeys((title, spaced.replace(" ", "_"), normal_title(spaced).replace(" ", "_"))):
            if archive.has_entry_by_path(path):
                return _resolve(archive.get_entry_by_path(path))
        for candidate in dict.fromkeys((spaced, normal_title(spaced))):
            if archive.has_entry_by_title(candidate):
                return _resolve(archive.get_entry_by_title(candidate))
        return None

    def _read(self, entry: Any) -> WikiPage | None:
        if entry is None or not _is_article(entry):
            return None
        html = bytes(entry.get_item().content).decode("utf-8", errors="replace")
        heading, text, hrefs = parse_article(html)
        title = entry.title or heading
        links: dict[str, None] = {}
        for href in hrefs:
            path = article_path(href, entry.path)
            if path is None or not self.archive.has_entry_by_path(path):
                continue
            target = _resolve(self.archive.get_entry_by_path(path))
            if target is not None and _is_article(target) and target.title != title:
                links[target.title] = None
        return WikiPage(title, text, tuple(links))


def _resolve(entry: Any) -> Any | None:
    for _ in range(_REDIRECT_HOPS):
        if not entry.is_redirect:
            return entry
        entry = entry.get_redirect_entry()
    return None


def _is_article(entry: Any) -> bool:
    try:
        return entry.get_item().mimetype.startswith("text/html")
    except Exception:
        return False

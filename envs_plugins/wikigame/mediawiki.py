"""Articles read from a MediaWiki API (live Wikipedia by default), politely: one request at a
time, at least ``delay_ms`` apart, a User-Agent that names GEM, answers cached, and every
request bounded by a timeout.

One page costs one ``action=query`` request (``prop=extracts|links|pageprops``, redirects
followed) plus one per further 500 links; a random start is a ``list=random`` request.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from gem_core.errors import MissingDependencyError
from gem_envs.wikigame.pages import PageCache, WikiBackendError, WikiPage, normal_title

WIKIPEDIA_API = "https://en.wikipedia.org/w/api.php"
USER_AGENT = "gem-adapters-wikigame/0.1 (https://pypi.org/project/gem-adapters/)"
_MAX_LINK_REQUESTS = 20  # 10,000 links: no article has more


class MediaWikiApi:
    """A :class:`~gem_envs.wikigame.pages.WikiSource` over a MediaWiki ``api.php``.

    ``delay_ms`` spaces requests (25 ms as the reference, or more); ``timeout`` bounds each;
    ``attempts`` retries a request that failed to connect or got a 429/5xx answer, backing off;
    ``cache_size`` pages are kept. Random titles come from the site (``list=random``), so they
    do not follow the episode's seed.
    """

    def __init__(self, url: str = WIKIPEDIA_API, *, delay_ms: float = 25, timeout: float = 10.0,
                 attempts: int = 3, cache_size: int = 2048, user_agent: str = USER_AGENT):
        try:
            import httpx
        except ImportError:
            raise MissingDependencyError("The WikiGame's MediaWiki backend", "httpx", "tools") from None
        self.url, self.delay = url, max(0.0, float(delay_ms)) / 1000
        self.attempts = max(1, int(attempts))
        self._http = httpx.Client(timeout=timeout, headers={"User-Agent": user_agent}, follow_redirects=True)
        self._httpx = httpx
        self._lock = threading.Lock()
        self._last = 0.0
        self._cache = PageCache(cache_size)
        self.requests = 0  # sent so far (for tests and logs)

    def page(self, title: str) -> WikiPage | None:
        key = normal_title(title)
        return self._cache.get(key, lambda: self._fetch(key)) if key else None

    def random_title(self, rng) -> str | None:
        answer = self._get({"list": "random", "rnnamespace": 0, "rnlimit": 1})
        found = answer.get("query", {}).get("random") or []
        return found[0].get("title") if found else None

    def close(self) -> None:
        self._http.close()

    def _fetch(self, title: str) -> WikiPage | None:
        params: dict[str, Any] = {
            "prop": "extracts|links|pageprops", "titles": title, "explaintext": 1, "redirects": 1,
            "plnamespace": 0, "pllimit": "max", "ppprop": "disambiguation",
        }
        text, links, name = None, {}, None
        for _ in range(_MAX_LINK_REQUESTS):
            answer = self._get(params)
            pages = answer.get("query", {}).get("pages") or []
            if not pages or pages[0].get("missing") or pages[0].get("invalid"):
                return None
            page = pages[0]
            name = page.get("title", title)
            if text is None:
                text = page.get("extract") or ""
            for link in page.get("links") or []:
                if isinstance(link, dict) and isinstance(link.get("title"), str) and link["title"] != name:
                    links[link["title"]] = None
            more = answer.get("continue")
            if not more:
                break
            params = {**params, **more}
        return WikiPage(name or title, text or "", tuple(links))

    def _get(self, params: dict[str, Any]) -> dict[str, Any]:
        query = {"action": "query", "format": "json", "formatversion": 2, **params}
        error = None
        for attempt in range(self.attempts):
            with self._lock:
                wait = self._last + self.delay - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
                try:
                    self.requests += 1
                    response = self._http.get(self.url, params=query)
                except self._httpx.HTTPError as e:
                    error = f"{type(e).__name__}: {e}"
                    response = None
                finally:
                    self._last = time.monotonic()
            if response is not None:
                if response.status_code == 200:
                    try:
                        answer = response.json()
                    except ValueError:
                        raise WikiBackendError(f"{self.url} answered something that is not JSON: "
                                               f"{response.text[:200]!r}") from None
                    if isinstance(answer, dict) and "error" in answer:
                        raise WikiBackendError(f"{self.url} answered an error: {answer['error']}")
                    if not isinstance(answer, dict):
                        raise WikiBackendError(f"{self.url} answered an unexpected {type(answer).__name__}")
                    return answer
                error = f"HTTP {response.status_code}"
                if response.status_code not in (429, 500, 502, 503, 504):
                    break
            if attempt + 1 < self.attempts:
                time.sleep(min(5.0, 0.5 * 2 ** attempt))
        raise WikiBackendError(f"The MediaWiki API at {self.url} failed ({error}) after "
                               f"{self.attempts} attempt(s).")

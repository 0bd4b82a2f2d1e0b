"""WikiGame: reach a target article from a start article by following links, in few turns.

Rules and rewards follow the reference's WikiGame (per-turn rewards in :class:`WikiReward`):

* an action is a title in the last ``\\boxed{}``; spaces and underscores are the same and the
  first letter is case-insensitive, as on Wikipedia. ``\\boxed{<PREV_PAGE>}`` goes back.
* a linked title moves there (``STEP``); the target ends the episode (``SUCCESS``);
* a title that is not a neighbour is invalid (``INVALID``, the episode goes on);
* no title at all is a format error (``FORMAT_ERROR``, the episode goes on);
* a dead end (an article without links) ends the episode (``FAIL``) in ``noregrets`` and
  ``eidetic``; in ``oneback`` and ``freenav`` it sends the player back to where it came from at
  the cost of a second turn (``2 * STEP``);
* going back is invalid in ``noregrets`` and ``eidetic``, allowed once in a row in ``oneback``
  and always in ``freenav``; in ``eidetic`` every title seen on any page of the episode is a
  neighbour;
* every action takes a turn; at ``max_turns`` the episode is truncated (``FAIL``).

info: ``turn``, ``suffix`` (the current page, its summary and its neighbours), ``page`` (the
current title), and on the last step ``success``; ``format_error`` / ``invalid_move`` mark
those actions.
"""

from __future__ import annotations

import re
from typing import Any

from gem_core import Env, GemError
from gem_envs.game.base import parse_answer
from gem_envs.wikigame.pages import WikiBackendError, WikiPage, WikiSource, normal_title

StepResult = tuple[str, float, bool, bool, dict[str, Any]]

BACK = "<PREV_PAGE>"
VARIANTS = ("noregrets", "oneback", "freenav", "eidetic")
SUMMARY_UNITS = ("characters", "words", "sentences")
BACKENDS = ("zim", "kiwix", "mw")
_START_TRIES = 50
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


class WikiReward:
    """The WikiGame's per-turn rewards (the reference's values)."""

    SUCCESS = 1.0
    STEP = -0.05
    FAIL = 0.0
    INVALID = -0.2
    FORMAT_ERROR = -0.2


class WikiGameSettingsError(GemError, ValueError):
    """Constructor arguments that describe no playable WikiGame."""


class WikiGameEnv(Env):
    """Navigate from a random article to another within ``max_turns`` link clicks.

    The articles come from ``backend``: ``"zim"`` reads a Kiwix ZIM file through libzim
    (``zim_path=``; ``"kiwix"`` is the same, taking the reference's ``trawler_kwargs``
    ``{"zimfile": name}`` looked up in the working directory and ``$GEM_ZIM_DIR``), ``"mw"``
    reads a MediaWiki API (``url=``, live English Wikipedia by default; ``delay_ms``) and
    ``source=`` takes any object with the :class:`~gem_envs.wikigame.pages.WikiSource` methods.
    ``pairs=[(start, target), ...]`` draws episodes from fixed pairs instead of random articles;
    ``reset(start=..., target=...)`` plays one pair. ``page_summary_length`` is ``(n, unit)``
    with unit ``characters``, ``words`` or ``sentences``.
    """

    blocking = True  # the MediaWiki backend waits on the network; a ZIM read waits on disk

    def __init__(self, max_turns: int = 10, variant: str = "noregrets", backend: str = "zim", *,
                 zim_path: str | None = None, url: str | None = None, delay_ms: float = 25,
                 source: WikiSource | None = None, trawler_kwargs: dict[str, Any] | None = None,
                 page_summary_length: tuple[int, str] = (100, "characters"),
                 pairs: list[tuple[str, str]] | None = None):
        if isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1:
            raise WikiGameSettingsError(f"max_turns must be a positive integer, got {max_turns!r}.")
        if variant not in VARIANTS:
            raise WikiGameSettingsError(f"variant={variant!r} is not one of {', '.join(VARIANTS)}.")
        try:
            length, unit = page_summary_length
        except (TypeError, ValueError):
            length, unit = None, None
        if unit not in SUMMARY_UNITS or isinstance(length, bool) or not isinstance(length, int) or length < 0:
            raise WikiGameSettingsError(f"page_summary_length must be (n >= 0, one of {', '.join(SUMMARY_UNITS)}),"
                                        f" got {page_summary_length!r}.")
        self.max_turns, self.variant = max_turns, variant
        self.summary_length, self.summary_unit = length, unit
        self.pairs = [tuple(p) for p in pairs] if pairs else None
        self.source = source if source is not None else _open_source(
            backend, zim_path=zim_path, url=url, delay_ms=delay_ms, trawler_kwargs=trawler_kwargs or {})
        self.turn = 0
        self.start_page = self.target_page = self.current_page = None
        self.page_history: list[WikiPage] = []
        self.seen: dict[str, None] = {}
        self.backtracked = False

    # -- the reference's attribute names, which its tests read ------------------------------------
    @property
    def turn_count(self) -> int:
        return self.turn

    @turn_count.setter
    def turn_count(self, value: int) -> None:
        self.turn = value

    def _reset_fixed_page(self, start_page_title: str, target_page_title: str, seed: int | None = None):
        """The reference's name for ``reset(seed, start=..., target=...)``."""
        return self.reset(seed, start=start_page_title, target=target_page_title)

    # -- episodes ----------------------------------------------------------------------------------
    def reset(self, seed: int | None = None, start: str | None = None, target: str | None = None,
              **options: Any) -> tuple[str, dict[str, Any]]:
        super().reset(seed)
        if (start is None) != (target is None):
            raise GemError("reset() takes start= and target= together, or neither.")
        if start is None and self.pairs:
            start, target = self.pairs[self.rng.randrange(len(self.pairs))]
        if start is not None:
            self.start_page, self.target_page = self._named(start), self._named(target)
        else:
            self.start_page = self._random_page()
            self.target_page = self._random_page(avoid=self.start_page.title)
        self.current_page = self.start_page
        self.page_history = [self.start_page]
        self.seen = dict.fromkeys(self.start_page.links)
        self.backtracked = False
        self.turn = 0
        return self._instructions(), self._info()

    def step(self, action: str) -> StepResult:
        if self.current_page is None:
            raise GemError("Call reset() before step() on WikiGameEnv.")
        self.turn += 1
        answer = parse_answer(action)
        if not answer:
            return self._go_on(f"At turn {self.turn}, you gave no page title in \\boxed{{}}.",
                               WikiReward.FORMAT_ERROR, format_error=True)
        if answer == BACK:
            return self._back()
        title = self._neighbour(answer)
        if title is None:
            return self._go_on(self._not_a_neighbour(answer), WikiReward.INVALID, invalid_move=True)
        page = self.source.page(title)
        if page is None:
            return self._go_on(f"At turn {self.turn}, '{title}' could not be opened: it has no article.",
                               WikiReward.INVALID, invalid_move=True)
        if normal_title(page.title) == normal_title(self.target_page.title):
            self._arrive(page)
            return (f"Congratulations! You reached the target page '{self.target_page.title}' in "
                    f"{self.turn} turns.", WikiReward.SUCCESS, True, False, self._info(success=True))
        if not self.valid_pages(page):
            return self._dead_end(page)
        self._arrive(page)
        return self._go_on(f"At turn {self.turn}, you navigated to the '{page.title}' page. Here is a "
                           f"summary of the page:\n{self._summary(page)}...", WikiReward.STEP)

    def valid_pages(self, page: WikiPage | None = None) -> list[str]:
        """The titles one may go to from ``page`` (the current page by default)."""
        page = page or self.current_page
        if self.variant == "eidetic":
            return list({**self.seen, **dict.fromkeys(page.links)})
        return list(page.links)

    def sample_random_action(self) -> str:
        if self.current_page is None:
            raise GemError("Call reset() before sample_random_action() on WikiGameEnv.")
        choices = self.valid_pages()
        if self.variant in ("oneback", "freenav") and len(self.page_history) > 1:
            choices = choices + [BACK]
        if not choices:
            return f"\\boxed{{{self.current_page.title}}}"
        return f"\\boxed{{{choices[int(self.action_rng.random() * len(choices))]}}}"

    def clone(self) -> WikiGameEnv:
        import copy

        twin = copy.copy(self)  # the source (a file or a connection) is shared, read-only
        twin._rng, twin._action_rng = copy.deepcopy(self._rng), copy.deepcopy(self._action_rng)
        twin._np_rng = copy.deepcopy(self._np_rng)
        twin.page_history, twin.seen = list(self.page_history), dict(self.seen)
        return twin

    def close(self) -> None:
        self.source.close()

    # -- rules -------------------------------------------------------------------------------------
    def _back(self) -> StepResult:
        if self.variant in ("noregrets", "eidetic"):
            return self._go_on(f"At turn {self.turn}, you tried to go back, but going back is not allowed "
                               "in this game.", WikiReward.INVALID, invalid_move=True)
        if len(self.page_history) < 2:
            return self._go_on(f"At turn {self.turn}, you tried to go back, but there is no previous page.",
                               WikiReward.INVALID, invalid_move=True)
        if self.variant == "oneback" and self.backtracked:
            return self._go_on(f"At turn {self.turn}, you tried to go back, but you may not go back twice "
                               "in a row.", WikiReward.INVALID, invalid_move=True)
        self.page_history.pop()
        self.current_page = self.page_history[-1]
        self.backtracked = True
        return self._go_on(f"At turn {self.turn}, you went back to the '{self.current_page.title}' page. Here "
                           f"is a summary of the page:\n{self._summary(self.current_page)}...", WikiReward.STEP)

    def _dead_end(self, page: WikiPage) -> StepResult:
        if self.variant in ("noregrets", "eidetic"):
            self.current_page = page
            return (f"At turn {self.turn}, you navigated to the '{page.title}' page, a dead end with no "
                    "links. Game over.", WikiReward.FAIL, True, False, self._info(success=False))
        self.backtracked = True
        self.turn += 1
        return self._go_on(
            f"At turn {self.turn - 1}, you reached '{page.title}', a dead end with no links, and were sent "
            f"back to '{self.current_page.title}' at the cost of one more turn (now turn {self.turn}). "
            f"Here is a summary of the page:\n{self._summary(self.current_page)}...", 2 * WikiReward.STEP)

    def _arrive(self, page: WikiPage) -> None:
        self.current_page = page
        self.page_history.append(page)
        self.seen.update(dict.fromkeys(page.links))
        self.backtracked = False

    def _go_on(self, message: str, reward: float, **flags: bool) -> StepResult:
        info = self._info(**flags)
        if self.turn >= self.max_turns:
            info["success"] = False
            return (f"{message}\nAt turn {self.turn} you have used all {self.max_turns} turns without reaching "
                    f"'{self.target_page.title}'. Game over.", WikiReward.FAIL, False, True, info)
        return message, reward, False, False, info

    def _neighbour(self, answer: str) -> str | None:
        wanted = normal_title(answer)
        for title in self.valid_pages():
            if title == answer or normal_title(title) == wanted:
                return title
        return None

    def _not_a_neighbour(self, answer: str) -> str:
        shown = answer if len(answer) <= 80 else answer[:77] + "..."
        lowered = normal_title(answer).lower()
        close = next((t for t in self.valid_pages() if lowered and lowered in t.lower()), None)
        hint = f" Did you mean '{close}'?" if close else ""
        return (f"At turn {self.turn}, you chose '{shown}', which is not a neighbouring page of "
                f"'{self.current_page.title}'.{hint} Write exactly one of the neighbouring titles.")

    # -- pages and text ----------------------------------------------------------------------------
    def _named(self, title: str) -> WikiPage:
        page = self.source.page(title)
        if page is None:
            raise GemError(f"WikiGame: there is no article {title!r} in {self._source_name()}.")
        return page

    def _random_page(self, avoid: str | None = None) -> WikiPage:
        for _ in range(_START_TRIES):
            title = self.source.random_title(self.rng)
            if title is None or title == avoid or "disambiguation" in title.lower():
                continue
            page = self.source.page(title)
            if page is not None and page.links and page.title != avoid:
                return page
        raise WikiBackendError(f"WikiGame: found no article with links in {_START_TRIES} random draws from "
                               f"{self._source_name()}.")

    def _source_name(self) -> str:
        return str(getattr(self.source, "path", None) or getattr(self.source, "url", None) or self.source)

    def _summary(self, page: WikiPage) -> str:
        n, text = self.summary_length, page.text
        if self.summary_unit == "characters":
            return text[:n]
        if self.summary_unit == "words":
            return " ".join(text.split()[:n])
        return " ".join(_SENTENCE_END.split(text)[:n])

    def _instructions(self) -> str:
        back = {
            "noregrets": "You may NOT go back: only neighbouring pages can be visited (you may revisit pages "
                         "through their links). Trying to go back is invalid and still takes a turn.",
            "eidetic": "You may NOT go back, but you may go to any page whose link you have seen on any page so far.",
            "oneback": "You may answer \\boxed{<PREV_PAGE>} to return to the previous page (it takes a turn), "
                       "but not twice in a row.",
            "freenav": "You may answer \\boxed{<PREV_PAGE>} to return to the previous page (it takes a turn).",
        }[self.variant]
        return (
            f"You are playing the Wikipedia Game: reach the target Wikipedia page within {self.max_turns} turns.\n"
            "A neighbouring page is a page the current page links to. Each turn, visit a neighbouring page "
            "by writing its EXACT title in \\boxed{} (for example \\boxed{Python (programming language)}).\n"
            f"{back}\n"
            f"You start at '{self.start_page.title}'; the target page is '{self.target_page.title}'.\n"
            f"Here is a summary of the target page:\n{self._summary(self.target_page)}...\n"
            "Name the pages that may lead to the target quickly, say which is best, then give its title in "
            "\\boxed{}. Enter your first move."
        )

    def _suffix(self) -> str:
        neighbours = "\n".join(f"- \\boxed{{{title}}}" for title in self.valid_pages())
        return (f"You are on the '{self.current_page.title}' page; the target page is "
                f"'{self.target_page.title}'.\nHere is a summary of the page:\n{self._summary(self.current_page)}...\n"
                f"Its neighbouring pages are:\n{neighbours}\nEnter the title of the page to go to.")

    def _info(self, **extra: Any) -> dict[str, Any]:
        return {"turn": self.turn, "page": self.current_page.title, "suffix": self._suffix(), **extra}


def _open_source(backend: str, *, zim_path, url, delay_ms, trawler_kwargs) -> WikiSource:
    if backend not in BACKENDS:
        raise WikiGameSettingsError(f"backend={backend!r} is not one of {', '.join(BACKENDS)}.")
    options = dict(trawler_kwargs)
    if backend == "mw":
        from gem_envs.wikigame.mediawiki import WIKIPEDIA_API, MediaWikiApi

        # the reference's trawler_kwargs; pages are always cached here (query_use_cache)
        return MediaWikiApi(url or options.get("url", WIKIPEDIA_API), delay_ms=options.get("query_delay_ms", delay_ms),
                            attempts=options.get("max_query_attempts", 3))
    from gem_envs.wikigame.zim import ZimWiki, find_zim

    return ZimWiki(find_zim(zim_path, options.get("zimfile")))

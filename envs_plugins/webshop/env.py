"""WebShop: find, customise and buy the product an instruction describes.

The shop is upstream WebShop's (Yao et al., 2022): a search page, results pages of ten
products (fifty results per search), item pages with options, description, features and
reviews, and a purchase scored by upstream's reward (:mod:`gem_envs.webshop.reward`). Actions
are upstream's ``search[keywords]`` and ``click[element]`` (case-insensitive), written as they
are or in the last ``\\boxed{}``. Search works on any page but the last; a click must name an
element of the current page.

Rewards and flags: a purchase ends the episode with upstream's reward (``info["success"]``
when it is 1); any other valid action earns 0; an action that is not a valid search or click
earns ``format_error_reward`` and counts as an error, the episode ending once errors exceed
``error_tolerance``; ``max_turns`` truncates. info: ``turn``, ``page`` (search, results, item,
detail, done), ``instruction``, ``available_actions`` (``has_search_bar``, ``clickables``),
``suffix`` (the admissible actions), ``invalid_action``, and on a purchase ``asin``,
``options`` and ``reward_parts``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from gem_core import Env, GemError
from gem_core.errors import DataNotFoundError
from gem_core.parsing import last_boxed
from gem_envs.webshop import pages
from gem_envs.webshop.pages import BACK_TO_SEARCH, BUY_NOW, DETAILS, NEXT_PAGE, PREV_PAGE, Element
from gem_envs.webshop.reward import purchase_reward
from gem_envs.webshop.store import HOW_TO_GET, SPLITS, Shop, find_files

SAMPLE_DIR = Path(__file__).resolve().parent / "sample"
DATA_VARIABLE = "GEM_WEBSHOP_DATA"
MODES = ("text", "text_rich", "html")
PRODUCT_WINDOW = 10  # products per results page, as upstream
MAX_QUERY_CHARS = 500
_ACTION = re.compile(r"\s*(search|click)\s*\[(.*)\]\s*", re.DOTALL | re.IGNORECASE)

StepResult = tuple[str, float, bool, bool, dict[str, Any]]


class WebShopEnv(Env):
    """Upstream WebShop as a GEM environment (see the module docstring).

    Data: ``data_dir`` (a folder of upstream's files, or ``$GEM_WEBSHOP_DATA``), or the paths
    ``products``, ``attributes`` and ``instructions``. ``human_goals=False`` plays upstream's
    synthetic goals (from the attribute file) instead of the human instructions. ``split`` is
    ``train``, ``test``, ``eval`` or ``all``. ``observation_mode`` is ``text``, ``text_rich`` or
    ``html``; ``show_attrs`` adds upstream's Attributes page.
    """

    def __init__(self, observation_mode: str = "text", split: str = "train", max_turns: int = 15, *,
                 data_dir: str | os.PathLike[str] | None = None, products: str | None = None,
                 attributes: str | None = None, instructions: str | None = None, human_goals: bool = True,
                 error_tolerance: int = 0, format_error_reward: float = 0.0, show_attrs: bool = False):
        if observation_mode not in MODES:
            raise GemError(f"observation_mode={observation_mode!r} is not one of {', '.join(MODES)}.")
        if split not in SPLITS:
            raise GemError(f"split={split!r} is not one of {', '.join(SPLITS)}.")
        if isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1:
            raise GemError(f"max_turns must be a positive integer, got {max_turns!r}.")
        if products is None:
            data_dir = data_dir if data_dir is not None else os.environ.get(DATA_VARIABLE)
            if data_dir is None:
                raise DataNotFoundError(f"WebShop needs its data. {HOW_TO_GET}")
            found = find_files(data_dir)
            products, attributes = found["products"], attributes or found["attributes"]
            instructions = instructions or found["instructions"]
        self.shop = Shop.open(products, attributes, instructions, human_goals=human_goals)
        self.goals = self.shop.split(split)
        if not len(self.goals):
            raise DataNotFoundError(f"WebShop: the data has no goal in split {split!r} ({self.shop.goal_count} "
                                    "goals in all).")
        self.observation_mode, self.split, self.max_turns = observation_mode, split, max_turns
        self.human_goals, self.show_attrs = human_goals, show_attrs
        self.error_tolerance, self.format_error_reward = error_tolerance, float(format_error_reward)
        self.goal: dict[str, Any] | None = None
        self.page = "search"

    # -- episodes ------------------------------------------------------------------------------------
    def reset(self, seed: int | None = None, index: int | None = None, session: Any = None,
              instruction_text: str | None = None, **options: Any) -> tuple[str, dict[str, Any]]:
        """A new episode. ``index`` (or the reference's ``session=`` integer) picks the goal at
        that position of the split; otherwise it is drawn from ``self.rng``."""
        super().reset(seed)
        if index is None and isinstance(session, int) and not isinstance(session, bool):
            index = session
        if index is not None:
            if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(self.goals):
                raise GemError(f"index={index!r} is out of range: split {self.split!r} has {len(self.goals)} "
                               f"goals (0 to {len(self.goals) - 1}).")
            self.goal_index = self.goals[index]
        else:
            self.goal_index = self._draw_goal()
        self.goal = self.shop.goal(self.goal_index)
        self.instruction = instruction_text or self.goal["instruction_text"]
        self.turn = self.errors = 0
        self.visited: set[str] = set()
        self._to_search()
        return self._observation(), self._info()

    def step(self, action: str) -> StepResult:
        if self.goal is None:
            raise GemError("Call reset() before step() on WebShopEnv.")
        if self.page == "done":
            return self._observation(), 0.0, True, False, self._info(invalid_action=True)
        self.turn += 1
        name, argument = parse_action(action)
        reward, done, info = 0.0, False, {}
        clickable = self._clickables().get(argument) if name == "click" else None
        if name == "search" and argument:
            self._search(argument[:MAX_QUERY_CHARS], page=1)
        elif clickable is not None:
            outcome = self._click(*clickable)
            if outcome is not None:
                reward, info = outcome
                done = True
        else:
            self.errors += 1
            reward, done = self.format_error_reward, self.errors > self.error_tolerance
            info["invalid_action"] = True
        info = self._info(**info)
        if done:
            info.setdefault("success", False)
            return self._observation(), reward, True, False, info
        if self.turn >= self.max_turns:
            info["success"] = False
            return self._observation(), reward, False, True, info
        return self._observation(), reward, False, False, info

    def sample_random_action(self) -> str:
        if self.goal is None:
            raise GemError("Call reset() before sample_random_action() on WebShopEnv.")
        rng = self.action_rng
        clickables = list(self._clickables())
        if self.page == "search" or not clickables or rng.random() < 0.1:
            words = self.instruction.split()
            start = rng.randrange(len(words))
            return f"\\boxed{{search[{' '.join(words[start:start + 4])}]}}"
        return f"\\boxed{{click[{clickables[rng.randrange(len(clickables))]}]}}"

    def available_actions(self) -> dict[str, Any]:
        """Upstream's ``get_available_actions``: the search bar and the clickable elements."""
        return {"has_search_bar": self.page == "search", "clickables": list(self._clickables())}

    def clone(self) -> WebShopEnv:
        import copy

        twin = copy.copy(self)  # the shop's files are shared, read-only
        for name in ("_rng", "_np_rng", "_action_rng"):
            setattr(twin, name, copy.deepcopy(getattr(self, name)))
        twin.visited, twin.options = set(self.visited), dict(self.options)
        return twin

    # -- the site ------------------------------------------------------------------------------------
    def _draw_goal(self) -> int:
        goals = self.goals
        if self.human_goals:  # every human goal weighs 1
            return goals[self.rng.randrange(len(goals))]
        from bisect import bisect

        cumulative = self.shop.cumulative_weights
        low = cumulative[goals.start - 1] if goals.start else 0.0
        point = low + self.rng.random() * (cumulative[goals.stop - 1] - low)
        return min(bisect(cumulative, point, goals.start, goals.stop), goals.stop - 1)

    def _to_search(self) -> None:
        self.page, self.keywords, self.results, self.result_page = "search", "", [], 1
        self.asin, self.options, self.detail = None, {}, None

    def _search(self, keywords: str, page: int) -> None:
        self.keywords, self.results = keywords, self.shop.search(keywords)
        self.page, self.result_page, self.asin, self.options = "results", page, None, {}

    def _click(self, kind: str, value: Any) -> tuple[float, dict[str, Any]] | None:
        if kind == "back":
            self._to_search()
        elif kind == "next":
            self.result_page += 1
        elif kind == "prev":
            if self.page == "results":
                self.result_page -= 1
            elif self.page == "detail":
                self.page, self.detail = "item", None
            else:  # an item page: back to its results
                self.page, self.asin, self.options = "results", None, {}
        elif kind == "product":
            self.page, self.asin, self.options = "item", value, {}
            self.visited.add(value)
        elif kind == "option":
            group, option = value
            self.options[group] = option
        elif kind == "detail":
            self.page, self.detail = "detail", value
        elif kind == "buy":
            product = self.shop.product(self.asin)
            reward, parts = purchase_reward(product, self.goal, self.shop.price(self.asin), self.options)
            self.page, self.reward = "done", reward
            return reward, {"asin": self.asin, "options": dict(self.options), "reward_parts": parts,
                            "success": reward >= 1.0 - 1e-9}
        return None

    def _clickables(self) -> dict[str, tuple[str, Any]]:
        """Upstream's clickable names (lower-cased) on the current page, and what each does."""
        page = self.page
        if page in ("search", "done"):
            return {}
        found = {BACK_TO_SEARCH.lower(): ("back", None)}
        if page == "results":
            if self.result_page > 1:
                found[PREV_PAGE.lower()] = ("prev", None)
            if self.result_page * PRODUCT_WINDOW < len(self.results):
                found[NEXT_PAGE.lower()] = ("next", None)
            for asin in self._page_results():
                found.setdefault(asin.lower(), ("product", asin))
        else:
            found[PREV_PAGE.lower()] = ("prev", None)
            if page == "item":
                for group, values in self.shop.product(self.asin)["options"].items():
                    for value in values:
                        found.setdefault(value, ("option", (group, value)))
                for detail in DETAILS + (("Attributes",) if self.show_attrs else ()):
                    found.setdefault(detail.lower(), ("detail", detail))
                found.setdefault(BUY_NOW.lower(), ("buy", None))
        return found

    def _page_results(self) -> list[str]:
        start = (self.result_page - 1) * PRODUCT_WINDOW
        return self.results[start:start + PRODUCT_WINDOW]

    def _elements(self) -> list[Element]:
        page = self.page
        if page == "search":
            return [Element("search", "Search")]
        if page == "done":
            return [Element("text", "Thank you for shopping with us!"), Element("text", "Purchased"),
                    Element("text", self.asin), Element("text", "Your score (min 0.0, max 1.0)"),
                    Element("text", f"{self.reward:.4g}")]
        elements = [Element("button", BACK_TO_SEARCH)]
        if page == "results":
            elements.append(Element("text", f"Page {self.result_page} (Total results: {len(self.results)})"))
            if self.result_page > 1:
                elements.append(Element("button", PREV_PAGE))
            if self.result_page * PRODUCT_WINDOW < len(self.results):
                elements.append(Element("button", NEXT_PAGE))
            for asin in self._page_results():
                product = self.shop.product(asin)
                elements += [Element("product", asin, clicked=asin in self.visited),
                             Element("text", product["Title"]), Element("text", product["Price"])]
            return elements
        elements.append(Element("button", PREV_PAGE))
        product = self.shop.product(self.asin)
        if page == "detail":
            if self.detail == "Description":
                elements.append(Element("text", product["Description"]))
            elif self.detail == "Features":
                elements += [Element("text", b) for b in product["BulletPoints"]]
            elif self.detail == "Attributes":
                elements += [Element("text", a) for a in product["Attributes"]]
            else:
                for review in product["Reviews"]:
                    elements += [Element("text", str(review.get(k, ""))) for k in ("title", "score", "body")]
            return elements
        for group, values in product["options"].items():
            elements.append(Element("text", group))
            elements += [Element("option", v, group=group, clicked=self.options.get(group) == v) for v in values]
        elements += [Element("text", product["Title"]), Element("text", f"Price: {product['Price']}"),
                     Element("text", f"Rating: {product['Rating']}")]
        elements += [Element("button", d) for d in DETAILS + (("Attributes",) if self.show_attrs else ())]
        return elements + [Element("button", BUY_NOW)]

    def _observation(self) -> str:
        return pages.render(self._elements(), self.observation_mode, self.instruction)

    def _info(self, **extra: Any) -> dict[str, Any]:
        actions = self.available_actions()
        admissible = [f"click[{c}]" for c in actions["clickables"]]
        if self.page != "done":
            admissible.append("search[<your query>]")
        suffix = ("Admissible actions: " + ", ".join(admissible)
                  + ". Write one action, for example \\boxed{search[...]} or \\boxed{click[...]}.")
        return {"turn": self.turn, "page": self.page, "instruction": self.instruction,
                "available_actions": actions, "suffix": suffix, **extra}


def parse_action(action: Any) -> tuple[str | None, str | None]:
    """``("search", keywords)`` or ``("click", lower-cased name)`` from the last ``\\boxed{}``
    of ``action`` or, without one, from the whole action; ``(None, None)`` otherwise."""
    if not isinstance(action, str):
        return None, None
    text = last_boxed(action) if "\\boxed" in action or "\\fbox" in action else action
    match = _ACTION.fullmatch(text or "")
    if match is None:
        return None, None
    name, argument = match.group(1).lower(), match.group(2).strip()
    if not argument:
        return None, None
    return name, argument.lower() if name == "click" else argument

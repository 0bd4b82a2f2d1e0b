"""Upstream WebShop's reward for a purchase (``web_agent_site/engine/goal.py``).

    reward = r_type * (attributes matched + options matched + price ok)
                    / (goal attributes + goal options + 1)

* an attribute matches when one of the product's attributes is a fuzzy match (token-set ratio
  above 85, as ``thefuzz`` rounds it) or the attribute appears in its title, bullet points or
  description;
* an option matches when a chosen option is a fuzzy match, after both are reduced to their
  first colour word;
* the price is ok when the product's price is at most the goal's ``price_upper``;
* ``r_type`` is 1, lowered to 0.5 when neither the search query, two product categories nor
  the product name's nouns match, to 0.1 when under a tenth of the nouns match, and to 0 when
  none does.

Upstream finds a name's nouns with spaCy's ``en_core_web_sm``; GEM uses it when it is installed
(``pip install spacy`` and the model), and otherwise takes every word of the name that is not
a stopword, a number or a colour (``info["reward_parts"]["nouns"]`` says which). The two agree
on typical product names; they can differ on names full of adjectives.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from rapidfuzz import fuzz
from rapidfuzz.utils import default_process

#: Upstream's colour words, in its order: an option is reduced to the first one it contains.
COLOR_SET = (
    "alabaster apricot aqua ash asphalt azure banana beige black blue blush bordeaux bronze brown "
    "burgundy camel camo caramel champagne charcoal cheetah chestnut chocolate christmas coffee cognac "
    "copper coral cranberry cream crystal dark denim eggplant elephant espresso fuchsia gold granite "
    "grape graphite grass gray green grey heather indigo ivory ivy khaki lavender lemon leopard light "
    "lilac lime magenta maroon mauve merlot midnight mint mocha multicolor mushroom mustard natural navy "
    "nude olive orange peach pewter pink plum purple rainbow red rose royal rust sand sapphire seashell "
    "silver skull slate steel stone stonewash sunflower tan taupe teal tiger turquoise violet walnut "
    "wheat white wine yellow"
).split()
PRICE_RANGE = [10.0 * i for i in range(1, 100)]
_MATCH = 85


def normalize_color(option: str) -> str:
    """The first colour word of :data:`COLOR_SET` inside ``option``, or ``option`` itself."""
    for color in COLOR_SET:
        if color in option:
            return color
    return option


def fuzzy_match(a: str, b: str) -> bool:
    """``thefuzz``'s ``token_set_ratio(a, b) > 85`` (it rounds the ratio, processing both)."""
    return round(fuzz.token_set_ratio(a, b, processor=default_process)) > _MATCH


def purchase_reward(product: dict[str, Any], goal: dict[str, Any], price: float,
                    options: dict[str, str]) -> tuple[float, dict[str, Any]]:
    """The reward of buying ``product`` at ``price`` with ``options`` for ``goal``, and its parts."""
    parts = type_reward(product, goal)
    goal_attributes = goal["attributes"]
    goal_options = goal["goal_options"]
    goal_options = list(goal_options.values()) if isinstance(goal_options, dict) else list(goal_options)
    price_ok = price <= goal["price_upper"] if goal["price_upper"] > 0 else None
    attributes = attribute_matches(product, goal_attributes)
    chosen = [normalize_color(o) for o in options.values()]
    matched_options = sum(any(fuzzy_match(p, normalize_color(g)) for p in chosen) for g in goal_options)
    total = len(goal_attributes) + len(goal_options) + 1
    reward = (attributes + matched_options + bool(price_ok)) / total * parts["r_type"]
    parts.update(r_att=attributes / len(goal_attributes) if goal_attributes else None,
                 w_att=len(goal_attributes) / total, r_price=price_ok, w_price=1 / total)
    if goal_options:
        parts.update(r_option=matched_options / len(goal_options), w_option=len(goal_options) / total)
    return reward, parts


def attribute_matches(product: dict[str, Any], goal_attributes: list[str]) -> int:
    title = product["Title"].lower()
    bullets = " ".join(product["BulletPoints"]).lower()
    description = product["Description"].lower()
    matched = 0
    for wanted in goal_attributes:
        if any(fuzzy_match(have, wanted) for have in product["Attributes"]):
            matched += 1
        elif wanted in title or wanted in bullets or wanted in description:
            matched += 1
    return matched


def type_reward(product: dict[str, Any], goal: dict[str, Any]) -> dict[str, Any]:
    query_match = product["query"] == goal["query"]
    have = {c.strip() for c in product["product_category"].split("›")}
    want = {c.strip() for c in goal["product_category"].split("›")}
    category_match = len(have & want) >= 2
    tagger, nouns = noun_finder()
    purchased, desired = set(nouns(product["name"])), nouns(goal["name"])
    title_score = 0.2 if not desired else len(purchased & set(desired)) / len(desired)
    r_type = 1.0 if (query_match or category_match or title_score > 0.2) else 0.5
    if title_score < 0.1:
        r_type = 0.1
    if title_score == 0.0:
        r_type = 0.0
    return {"r_type": r_type, "query_match": query_match, "category_match": category_match,
            "title_score": title_score, "nouns": tagger}


_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")


@functools.cache
def noun_finder():
    """``(name, nouns)``: spaCy's tagger when ``en_core_web_sm`` is installed, else the words."""
    try:
        import spacy

        nlp = spacy.load("en_core_web_sm")
    except Exception:  # not installed, or its model is missing
        from bm25s.stopwords import STOPWORDS_EN

        skipped = set(STOPWORDS_EN) | set(COLOR_SET)

        def words(text: str) -> list[str]:
            return [w for w in _WORD.findall(text.lower()) if len(w) > 1 and w not in skipped]

        return "words", words

    def spacy_nouns(text: str) -> list[str]:
        return [t.text.lower() for t in nlp(text) if t.pos_ in ("PNOUN", "NOUN", "PROPN")]

    return "spacy", spacy_nouns

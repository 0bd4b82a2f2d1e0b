"""Upstream WebShop's purchase reward on cases worked out by hand."""

from __future__ import annotations

import pytest

from gem_envs.webshop.reward import fuzzy_match, normalize_color, purchase_reward

PRODUCT = {
    "Title": "Citrus Breeze Natural Deodorant Stick, Aluminum Free", "name": "Citrus Breeze Natural Deodorant Stick, Aluminum Free",
    "BulletPoints": ["Keeps you fresh all day", "Made with natural ingredients"], "Description": "A stick for every day.",
    "Attributes": ["aluminum free", "long lasting"], "query": "deodorant",
    "product_category": "Beauty & Personal Care › Personal Care › Deodorants & Antiperspirants › Deodorants",
}


def goal(**changes):
    base = {"query": "deodorant", "name": PRODUCT["name"], "product_category": PRODUCT["product_category"],
            "attributes": ["aluminum free", "long lasting"], "goal_options": ["lavender", "2.6 ounce"],
            "price_upper": 20.0}
    return {**base, **changes}


def test_everything_matches():
    reward, parts = purchase_reward(PRODUCT, goal(), 9.99, {"scent": "lavender", "size": "2.6 ounce"})
    assert reward == 1.0 and parts["r_type"] == 1.0 and parts["r_option"] == 1.0 and parts["r_price"] is True


@pytest.mark.parametrize("options,price,expected", [
    ({"scent": "citrus", "size": "2.6 ounce"}, 9.99, 4 / 5),  # one of two options
    ({}, 9.99, 3 / 5),  # no option chosen
    ({"scent": "lavender", "size": "2.6 ounce"}, 25.0, 4 / 5),  # too expensive
    ({"scent": "citrus"}, 25.0, 2 / 5),
])
def test_options_and_price_count_one_each(options, price, expected):
    assert purchase_reward(PRODUCT, goal(), price, options)[0] == pytest.approx(expected)


def test_attributes_match_fuzzily_or_in_the_text():
    # "natural ingredients" is in the bullet points; "aluminium free" is a fuzzy match (ratio 96)
    reward, parts = purchase_reward(PRODUCT, goal(attributes=["natural ingredients", "aluminium free", "vegan"],
                                                  goal_options=[]), 9.99, {})
    assert parts["r_att"] == pytest.approx(2 / 3) and reward == pytest.approx((2 + 0 + 1) / (3 + 0 + 1))


def test_type_reward_levels():
    # same query: full type reward even with another name
    assert purchase_reward(PRODUCT, goal(name="Deodorant Spray"), 9.99, {"a": "lavender", "b": "2.6 ounce"})[1]["r_type"] == 1.0
    other = dict(query="lamp", product_category="Home › Lighting")
    # no noun in common: nothing
    reward, parts = purchase_reward(PRODUCT, goal(name="Wireless Desk Lamp", **other), 9.99, {})
    assert parts["title_score"] == 0 and parts["r_type"] == 0 and reward == 0
    # one noun of six (0.17): no query or category match and a title score under 0.2 halve it
    name = "Lamp Shade Bulb Cable Stick Switch"
    reward, parts = purchase_reward(PRODUCT, goal(name=name, goal_options=[], **other), 9.99, {})
    assert parts["title_score"] == pytest.approx(1 / 6) and parts["r_type"] == 0.5
    assert reward == pytest.approx(0.5 * (2 + 1) / 3)
    # one noun of eleven (0.09): under a tenth gives 0.1
    name = "Lamp Shade Bulb Cable Stick Switch Plug Base Cord Socket Hook"
    assert purchase_reward(PRODUCT, goal(name=name, **other), 9.99, {})[1]["r_type"] == 0.1
    # two categories in common count as a match
    parts = purchase_reward(PRODUCT, goal(name=name[:5 * 6], query="x", product_category="Beauty & Personal Care › Personal Care"),
                            9.99, {})[1]
    assert parts["category_match"]


def test_colours_reduce_to_upstreams_first_colour_word():
    assert normalize_color("navy blue") == "blue"  # "blue" precedes "navy" in upstream's list
    assert normalize_color("heather grey") == "grey"
    assert normalize_color("2.6 ounce") == "2.6 ounce"
    # so a goal of "navy" is not met by "navy blue", as upstream scores it
    assert purchase_reward(PRODUCT, goal(goal_options=["navy"]), 9.99, {"color": "navy blue"})[1]["r_option"] == 0.0
    assert fuzzy_match("2.6 Ounce (Pack of 2)", "2.6 ounce (pack of 2)") and not fuzzy_match("small", "x-large")

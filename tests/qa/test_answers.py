"""Reading answers and scoring them by exact match after normalisation."""

from __future__ import annotations

import pytest

from gem_envs.qa.answers import boxed_answer, exact_match, gold_answers, normalize_answer, tagged_answer


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The Eiffel Tower", "eiffel tower"),  # article and case
        ("an apple a day", "apple day"),  # every article, not only the first
        ("  New   York\tCity \n", "new york city"),  # whitespace collapsed
        ("U.S.A.", "usa"),  # ASCII punctuation
        ("“Paris”—France…", "parisfrance"),  # Unicode punctuation
        ("theatre", "theatre"),  # an article inside a word stays
        ("Pelé", "pelé"),  # accents stay
        ("$5", "5"),
    ],
)
def test_normalize_answer(text, expected):
    assert normalize_answer(text) == expected


@pytest.mark.parametrize(
    ("prediction", "golds", "correct"),
    [
        ("Paris", ["Paris"], True),
        ("paris", "Paris", True),  # case; a single gold string
        ("  Paris. ", ["Paris"], True),  # whitespace and punctuation
        ("The Beatles", ["Beatles"], True),  # article on one side only
        ("Berlin", ["Paris", "Berlin", "Rome"], True),  # any of several gold answers
        ("London", ["Paris", "Berlin"], False),
        ("Paris, France", ["Paris"], False),  # exact, not contained
        ("42", [42, "forty-two"], True),  # numbers compared as text
        ("43", [42], False),
        ("forty two", ["forty-two"], False),  # the hyphen is removed, not turned into a space
        ("fortytwo", ["forty-two"], True),
        ("", ["the"], False),  # an empty answer never matches, even an empty-looking gold
        ("the", [""], False),
        ("Mars", {"value": "Mars", "aliases": ["The Red Planet"]}, True),  # TriviaQA-style record
        ("red planet", {"value": "Mars", "aliases": ["The Red Planet"]}, True),
        ("Paris", [], False),  # no gold answers
    ],
)
def test_exact_match(prediction, golds, correct):
    assert exact_match(prediction, golds) is correct


def test_gold_answers_flattens_and_deduplicates():
    assert gold_answers(["a", ["b", "a"], 3, None]) == ["a", "b", "3"]
    assert gold_answers(None) == []
    assert gold_answers(2.5) == ["2.5"]
    assert gold_answers(True) == ["True"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<think>hmm</think><answer> Paris </answer>", "Paris"),
        ("<answer>draft</answer> on reflection <answer>final</answer>", "final"),
        ("<answer>draft <answer>final</answer>", "final"),  # the nearest opening tag
        ("<ANSWER>Rome</Answer>", "Rome"),  # tags in any case
        ("<answer>\nmulti\nline\n</answer>", "multi\nline"),
        ("<answer>unclosed", None),
        ("</answer><answer>", None),
        ("no tags at all", None),
        ("<answer></answer>", ""),
    ],
)
def test_tagged_answer(text, expected):
    assert tagged_answer(text) == expected


def test_tagged_answer_is_linear_on_huge_input():
    text = "<answer>" * 200_000 + "x" + "</answer>"
    assert tagged_answer(text) == "x"
    assert tagged_answer(None) is None  # type: ignore[arg-type]


def test_boxed_answer():
    assert boxed_answer("so \\boxed{ True }") == "True"
    assert boxed_answer("\\boxed{a} then \\boxed{\\text{b}}") == "\\text{b}"
    assert boxed_answer("\\boxed{unclosed") is None

"""Grading answers with math-verify: equivalent forms, wrong answers, hostile inputs."""

import threading
import time

import pytest

from gem_envs.math.grading import DEFAULT_TIME_LIMIT, MAX_ANSWER_CHARS, canonical, grade, quick_verdict, worker_pool


def boxed(answer: str) -> str:
    return f"Some reasoning first.\nSo the final answer is \\boxed{{{answer}}}."


EQUIVALENT = [
    # fractions and decimals
    ("\\frac{1}{2}", "0.5"),
    ("\\frac{1}{2}", "1/2"),
    ("\\frac{1}{2}", "\\dfrac12"),
    ("\\frac{7}{2}", "3.5"),
    ("12", "12.0"),
    ("\\frac{1}{3}", "0.333333"),
    # LaTeX
    ("\\frac{\\sqrt{2}}{2}", "\\sqrt{2}/2"),
    ("2\\sqrt{2}", "\\sqrt{8}"),
    ("2\\pi", "\\pi \\cdot 2"),
    ("x^2+2x+1", "(x+1)^2"),
    ("\\left( 2, -5 \\right)", "(2,-5)"),
    ("\\text{(C)}", "C"),
    # percentages
    ("25\\%", "25"),
    ("0.5", "50\\%"),
    # intervals and sets
    ("(1,2]", "(1, 2]"),
    ("[4,\\infty)", "[4, \\infty)"),
    ("(-\\infty,0)\\cup(1,\\infty)", "(1,\\infty)\\cup(-\\infty,0)"),
    ("\\{1,2\\}", "\\{2,1\\}"),
    ("-1, 0, 1", "1, 0, -1"),
    # units, currency, separators, equations
    ("5", "5\\text{ cm}"),
    ("60", "60 \\text{ km/h}"),
    ("90", "90^\\circ"),
    ("10", "\\$10"),
    ("1000", "1,000"),
    ("1000", "1{,}000"),
    ("2", "x = 2"),
]

WRONG = [
    ("2", "3"),
    ("102", "1,002"),
    ("[1,2)", "(1,2]"),
    ("\\pi", "3.14"),
    ("\\frac{1}{3}", "0.33"),
    ("x^2", "x^3"),
    ("\\{1,2\\}", "\\{1,2,3\\}"),
    ("C", "D"),
    ("5", "-5"),
]


@pytest.mark.parametrize(("gold", "answer"), EQUIVALENT)
def test_equivalent_forms_are_correct(gold, answer):
    result = grade(boxed(answer), [gold])
    assert result.correct, result
    assert result.answer == answer.strip() and not result.format_error and not result.timed_out


@pytest.mark.parametrize(("gold", "answer"), WRONG)
def test_wrong_answers_are_incorrect(gold, answer):
    result = grade(boxed(answer), [gold])
    assert not result.correct and not result.timed_out and result.error is None


def test_any_of_several_golds_counts():
    assert grade(boxed("-3"), ["3", "-3"]).correct
    assert not grade(boxed("9"), ["3", "-3"]).correct


@pytest.mark.parametrize("response", [
    "The answer is 42.",
    "\\boxed{42",
    "\\boxed 42",
    "",
    None,
    12345,
])
def test_a_response_without_a_complete_box_is_a_format_error(response):
    result = grade(response, ["42"])
    assert not result.correct and result.format_error and result.answer is None


def test_the_last_box_counts():
    assert grade("\\boxed{41} no wait, \\boxed{42}", ["42"]).correct
    assert not grade("\\boxed{42} no wait, \\boxed{41}", ["42"]).correct


def test_empty_and_oversized_answers_are_incorrect_at_once():
    assert not grade("\\boxed{}", ["0"]).correct
    start = time.monotonic()
    result = grade(boxed("1" * (MAX_ANSWER_CHARS + 1)), ["1"])
    assert not result.correct and not result.timed_out and time.monotonic() - start < 0.5


PATHOLOGICAL = [
    "9^{9^{9^{9}}}",  # a tower of powers
    "(x+1)^{100000}-x^{100000}",  # an expansion sympy grinds on
    "\\sum_{k=1}^{10^{12}} k^{k}",
    "10^{10^{10}}!",
]


@pytest.mark.parametrize("answer", PATHOLOGICAL)
def test_pathological_answers_hit_the_time_limit_without_hanging(answer):
    limit = 1.0
    assert grade(boxed("0.5"), ["\\frac{1}{2}"]).correct  # a worker is up (not timed)
    start = time.monotonic()
    result = grade(boxed(answer), ["1"], time_limit=limit)
    elapsed = time.monotonic() - start
    assert not result.correct
    assert elapsed < limit + worker_pool().grace + 1.0
    if elapsed >= limit:
        assert result.timed_out


def test_the_time_limit_flags_the_answer():
    result = grade(boxed("9^{9^{9^{9}}}"), ["1"], time_limit=0.5)
    assert result.timed_out and not result.correct


def test_deeply_nested_and_long_inputs_are_handled():
    nested = "{" * 400 + "1" + "}" * 400
    assert not grade(boxed(nested), ["2"], time_limit=1.0).correct
    assert not grade(boxed("\\frac" * 150), ["2"], time_limit=1.0).correct
    huge_response = "\\boxed{" * 100_000 + "x"
    start = time.monotonic()
    assert grade(huge_response, ["1"]).format_error
    assert time.monotonic() - start < 1.0


def test_grading_from_many_threads_at_once():
    cases = EQUIVALENT[:8] + WRONG[:4]
    results = {}

    def run(i, gold, answer):
        results[i] = grade(boxed(answer), [gold]).correct

    threads = [threading.Thread(target=run, args=(i, g, a)) for i, (g, a) in enumerate(cases)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert results == {i: i < 8 for i in range(len(cases))}


@pytest.mark.parametrize(("answer", "expected"), [
    ("\\left( 1, 2 \\right)", "(1,2)"),
    ("$\\dfrac{1}{2}$", "\\frac{1}{2}"),
    ("\\tfrac{3}{4}.", "\\frac{3}{4}"),
    ("1\\,000", "1000"),
    ("\\leftarrow", "\\leftarrow"),
])
def test_canonical_drops_only_what_does_not_change_meaning(answer, expected):
    assert canonical(answer) == expected


@pytest.mark.parametrize(("answer", "golds", "verdict"), [
    ("42", ["42"], True),
    ("1,000", ["1000"], True),
    ("-7", ["7"], False),
    ("41", ["42", "43"], False),
    ("0.5", ["\\frac{1}{2}"], None),  # needs math-verify
    ("42", ["x"], None),
    ("5\\%", ["5"], None),
])
def test_quick_verdicts(answer, golds, verdict):
    assert quick_verdict(answer, golds) is verdict


@pytest.mark.parametrize(("gold", "answer"), [
    ("42", "42"), ("42", "41"), ("1000", "1,000"), ("-3", "3"), ("\\frac{1}{2}", "\\dfrac{1}{2}"),
    ("(1,2)", "\\left(1, 2\\right)"), ("0", "-0"), ("123456", "123,456"),
])
def test_quick_verdicts_agree_with_math_verify(gold, answer):
    quick = quick_verdict(answer, [gold])
    assert quick is not None
    verified = worker_pool().call("is_equivalent", answer, [gold], time_limit=DEFAULT_TIME_LIMIT)
    assert verified.value is quick

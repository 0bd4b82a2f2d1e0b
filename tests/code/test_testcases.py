"""Reading tests from the dataset formats, and judging outputs outside the sandbox."""

from __future__ import annotations

import json

import pytest

from gem_envs.code.testcases import (
    AssertTest,
    CallTest,
    MalformedTestsError,
    StdioTest,
    assert_tests,
    normalize_output,
    same_value,
    parse_tests,
)


def test_stdio_tests_from_a_dict_or_json_string():
    raw = {"inputs": ["1 2\n", ["3", "4"]], "outputs": ["3\n", ["7"]]}
    expected = (StdioTest("1 2\n", "3\n"), StdioTest("3\n4", "7"))
    assert parse_tests(raw) == expected
    assert parse_tests(json.dumps(raw)) == expected


def test_call_tests_when_a_function_is_named():
    tests = parse_tests({"fn_name": "f", "inputs": [[1, 2], 5], "outputs": [[3], 6]})
    assert tests == (CallTest("f", (1, 2), [3]), CallTest("f", (5,), 6))


def test_list_of_objects():
    assert parse_tests([{"input": "a", "output": "b"}]) == (StdioTest("a", "b"),)


def test_max_tests_keeps_the_longest_inputs():
    raw = {"inputs": ["1", "333", "22", "4444"], "outputs": ["a", "c", "b", "d"]}
    assert [t.expected for t in parse_tests(raw, max_tests=2)] == ["d", "c"]
    assert len(parse_tests(raw, max_tests=10)) == 4


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("{not json", "not valid JSON"),
        (42, "unknown format"),
        ({"inputs": ["1"], "outputs": []}, "1 inputs but 0 outputs"),
        ({"inputs": [], "outputs": []}, "no tests"),
        ({"inputs": "1", "outputs": "2"}, "lists of inputs and outputs"),
    ],
)
def test_malformed_tests_name_the_row(raw, message):
    with pytest.raises(MalformedTestsError, match=message) as caught:
        parse_tests(raw, where="row 7 of code:X")
    assert "row 7 of code:X" in str(caught.value)


@pytest.mark.parametrize(
    ("output", "expected", "same"),
    [
        ("3\n", "3", True),
        ("3   \n\n\n", "3\n", True),  # trailing spaces and blank lines
        ("1 2\r\n3\r\n", "1 2\n3\n", True),  # Windows line endings
        ("1 2\n3", "1 2 3", False),  # line structure matters
        (" 3", "3", False),  # leading spaces matter
        ("3.0", "3", False),  # text, not numbers
    ],
)
def test_stdio_judging(output, expected, same):
    assert (normalize_output(output) == normalize_output(expected)) is same
    assert StdioTest("", expected).judge(output) is same
    assert StdioTest("", expected).judge(None) is False


@pytest.mark.parametrize(
    ("got", "expected", "same"),
    [
        (3, 3, True),
        (0.30000000000000004, 0.3, True),  # floats within 1e-6
        (0.31, 0.3, False),
        (3, 3.0, True),
        (True, 1, False),  # booleans are not numbers
        (1, True, False),
        ([1, [2, "a"]], [1, [2, "a"]], True),
        ([1, 2], [1, 2, 3], False),
        ({"a": 1.0}, {"a": 1}, True),
        ({"a": 1}, {"b": 1}, False),
        ("x", "x", True),
        (None, None, True),
    ],
)
def test_call_judging(got, expected, same):
    assert same_value(got, expected) is same


def test_call_judging_accepts_the_wrapped_form_taco_uses():
    test = CallTest("f", (1,), [3])
    assert test.judge("3") and test.judge("[3]") and not test.judge("4")
    assert not test.judge("not json") and not test.judge(None)


def test_assert_tests_split_check_into_statements():
    source = (
        "import math\nMETADATA = {}\n\n"
        "def check(candidate):\n"
        "    assert candidate(1) == 2\n"
        "    data = [1, 2, 3]\n"
        "    for x in data:\n"
        "        assert candidate(x) == x + 1\n"
        "    assert math.isclose(candidate(0.5), 1.5)\n"
    )
    tests = assert_tests(source, "inc")
    assert [t.test.splitlines()[0] for t in tests] == [
        "assert candidate(1) == 2", "for x in data:", "assert math.isclose(candidate(0.5), 1.5)"]
    assert tests[0].setup == "" and tests[1].setup == "data = [1, 2, 3]"
    assert all(isinstance(t, AssertTest) and t.candidate == "candidate" for t in tests)
    assert "import math" in tests[0].preamble and "def check" not in tests[0].preamble


def test_assert_tests_need_a_check_function():
    with pytest.raises(MalformedTestsError, match="check"):
        assert_tests("def test(c):\n    assert c()\n", "f")
    with pytest.raises(MalformedTestsError, match="asserts nothing"):
        assert_tests("def check(c):\n    pass\n", "f")
    with pytest.raises(MalformedTestsError, match="does not parse"):
        assert_tests("def check(:\n", "f")


def test_jobs_carry_inputs_but_never_expected_values():
    secret = "EXPECTED-SECRET-9731"
    jobs = [StdioTest("in", secret).job(), CallTest("f", (1,), secret).job()]
    assert secret not in json.dumps(jobs)
    assert all(job["max_output"] >= 1 << 16 for job in jobs)

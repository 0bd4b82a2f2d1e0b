"""Code problems and their tests, read from the formats the datasets use.

Three kinds of test:

* :class:`StdioTest` - the program reads standard input and must print the expected output
  (CodeContests, TACO, PrimeIntellect, APPS);
* :class:`CallTest` - a function (or a method of ``class Solution``) is called with arguments and
  must return the expected value (TACO problems with an ``fn_name``);
* :class:`AssertTest` - a statement of a ``check(candidate)`` function must run without an
  ``AssertionError`` (HumanEval).

Expected values of stdio and call tests stay in this process; only inputs go to the sandbox.
"""

from __future__ import annotations

import ast
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Union

from gem_core.errors import GemError

#: Names that call-style problems (LeetCode, Codewars) may use without importing them.
CALL_PRELUDE = "from typing import *\n"

MIN_OUTPUT_LIMIT = 1 << 16  # bytes of output allowed per test, at least


class MalformedTestsError(GemError, ValueError):
    """A dataset row whose tests cannot be read."""


@dataclass(frozen=True)
class StdioTest:
    input: str
    expected: str

    def job(self) -> dict[str, Any]:
        limit = max(MIN_OUTPUT_LIMIT, 2 * len(self.expected.encode("utf-8", "replace")) + 1024)
        return {"kind": "stdio", "input": self.input, "max_output": limit}

    def judge(self, output: str | None) -> bool:
        return output is not None and normalize_output(output) == normalize_output(self.expected)


@dataclass(frozen=True)
class CallTest:
    fn_name: str
    args: tuple[Any, ...]
    expected: Any

    def job(self) -> dict[str, Any]:
        limit = max(MIN_OUTPUT_LIMIT, 2 * len(json.dumps(self.expected)) + 1024)
        return {"kind": "call", "fn_name": self.fn_name, "args": list(self.args), "max_output": limit}

    def judge(self, output: str | None) -> bool:
        if output is None:
            return False
        try:
            value = json.loads(output)
        except ValueError:
            return False
        return same_value(value, self.expected) or same_value([value], self.expected)


@dataclass(frozen=True)
class AssertTest:
    entry_point: str
    candidate: str  # the parameter name of check(), usually "candidate"
    preamble: str  # the test module without check(): imports, constants, helpers
    setup: str  # statements of check() before this one that assert nothing
    test: str  # the statement that asserts

    def job(self) -> dict[str, Any]:
        return {"kind": "assert", "entry_point": self.entry_point, "candidate": self.candidate,
                "preamble": self.preamble, "setup": self.setup, "test": self.test}

    def judge(self, output: str | None) -> bool:  # decided inside the sandbox
        return False


Test = Union[StdioTest, CallTest, AssertTest]


@dataclass(frozen=True)
class CodeProblem:
    """A task: the prompt shown to the model, its tests, and code placed before the submission
    (``prefix``: HumanEval's prompt, so that a body-only completion works and the prompt's
    imports and helpers are defined)."""

    prompt: str
    tests: tuple[Test, ...]
    prefix: str = ""
    id: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)


def normalize_output(text: str) -> str:
    """Line endings unified, trailing spaces of each line and trailing blank lines removed."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return "\n".join(line.rstrip() for line in lines).rstrip("\n")


def same_value(got: Any, expected: Any) -> bool:
    """Deep equality of JSON values; floats compare within 1e-6 (relative or absolute)."""
    if isinstance(expected, bool) or isinstance(got, bool):
        return got is expected
    if isinstance(expected, (int, float)) and isinstance(got, (int, float)):
        if isinstance(expected, int) and isinstance(got, int):
            return got == expected
        return math.isclose(got, expected, rel_tol=1e-6, abs_tol=1e-6)
    if isinstance(expected, list) and isinstance(got, list):
        return len(got) == len(expected) and all(map(same_value, got, expected))
    if isinstance(expected, dict) and isinstance(got, dict):
        return got.keys() == expected.keys() and all(same_value(got[k], expected[k]) for k in expected)
    return got == expected


def parse_tests(raw: Any, *, max_tests: int | None = None, where: str = "a row") -> tuple[Test, ...]:
    """Tests from a dataset's ``tests`` field.

    Accepted: ``{"inputs": [...], "outputs": [...]}`` (CodeContests, TACO, PrimeIntellect), with
    ``"fn_name"`` for call tests; a list of ``{"input", "output"}`` objects; either one as a JSON
    string. An input or output given as a list of lines is joined with newlines. With
    ``max_tests``, the tests with the longest inputs are kept (as the reference does).
    """
    if isinstance(raw, (str, bytes)):
        try:
            raw = json.loads(raw)
        except ValueError as e:
            raise MalformedTestsError(f"The tests of {where} are not valid JSON: {e}") from None
    if isinstance(raw, Mapping):
        inputs, outputs = raw.get("inputs"), raw.get("outputs")
        fn_name = raw.get("fn_name")
    elif isinstance(raw, Sequence) and all(isinstance(t, Mapping) for t in raw):
        inputs = [t.get("input") for t in raw]
        outputs = [t.get("output") for t in raw]
        fn_name = None
    else:
        raise MalformedTestsError(
            f"The tests of {where} have an unknown format ({type(raw).__name__}): expected "
            '{"inputs": [...], "outputs": [...]} or a list of {"input", "output"} objects.'
        )
    if not isinstance(inputs, Sequence) or not isinstance(outputs, Sequence) or isinstance(inputs, str):
        raise MalformedTestsError(f"The tests of {where} need lists of inputs and outputs.")
    if len(inputs) != len(outputs):
        raise MalformedTestsError(
            f"The tests of {where} have {len(inputs)} inputs but {len(outputs)} outputs."
        )
    if not inputs:
        raise MalformedTestsError(f"{where} has no tests.")
    tests: list[Test]
    if fn_name:
        tests = [CallTest(str(fn_name), tuple(i) if isinstance(i, list) else (i,), o)
                 for i, o in zip(inputs, outputs)]
    else:
        tests = [StdioTest(_text(i), _text(o)) for i, o in zip(inputs, outputs)]
    if max_tests is not None and len(tests) > max_tests:
        size = [len(t.input) if isinstance(t, StdioTest) else len(json.dumps(t.args)) for t in tests]
        keep = sorted(range(len(tests)), key=lambda k: size[k], reverse=True)[:max_tests]
        tests = [tests[k] for k in keep]
    return tuple(tests)


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(map(str, value))
    return str(value)


def humaneval_problem(record: Mapping[str, Any]) -> CodeProblem:
    """A HumanEval record (``task_id``, ``prompt``, ``test``, ``entry_point``) as a problem whose
    tests are the asserting statements of ``check(candidate)``, one test each."""
    task_id = record.get("task_id", "?")
    return CodeProblem(
        prompt=record["prompt"],
        tests=assert_tests(record["test"], record["entry_point"], where=task_id),
        prefix=record["prompt"],
        id=task_id,
        metadata={"entry_point": record["entry_point"]},
    )


def assert_tests(test_source: str, entry_point: str, *, where: str = "a problem") -> tuple[AssertTest, ...]:
    """Split a ``check(candidate)`` test module into tests: each top-level statement of
    ``check`` that contains an ``assert`` is one test, run after the statements before it that
    assert nothing (imports, helper values)."""
    try:
        module = ast.parse(test_source)
    except SyntaxError as e:
        raise MalformedTestsError(f"The test code of {where} does not parse: {e}") from None
    check = next((node for node in module.body
                  if isinstance(node, ast.FunctionDef) and node.name == "check"), None)
    if check is None or not check.args.args:
        raise MalformedTestsError(f"The test code of {where} has no check(candidate) function.")
    candidate = check.args.args[0].arg
    preamble = ast.unparse(ast.Module([n for n in module.body if n is not check], type_ignores=[]))
    tests, setup = [], []
    for statement in check.body:
        source = ast.unparse(statement)
        if any(isinstance(node, ast.Assert) for node in ast.walk(statement)):
            tests.append(AssertTest(entry_point, candidate, preamble, "\n".join(setup), source))
        else:
            setup.append(source)
    if not tests:
        raise MalformedTestsError(f"The check() of {where} asserts nothing.")
    return tuple(tests)

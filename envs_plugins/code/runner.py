"""Running a submission against its tests: one sandboxed process per submission.

The harness (:mod:`gem_envs.code.harness`) runs in the sandbox of :func:`gem_core.tools.run_python`
and forks one child per test; this module builds its job, reads its report, and judges stdio and
call tests against expected values that never leave this process.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from gem_core.errors import GemError

from gem_envs.code.testcases import CodeProblem, StdioTest, Test

STARTUP_ALLOWANCE = 10.0  # seconds for the sandbox and the harness to start, beyond the tests
REPORT_ALLOWANCE = 4096  # bytes of report per test, beyond its output

#: What a test can end as. ``not_run``: the total time limit ran out before it started.
STATUSES = ("passed", "failed", "error", "timeout", "output_limit", "not_run")


@dataclass(frozen=True)
class TestOutcome:
    status: str
    seconds: float = 0.0
    error: str | None = None

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    @property
    def timed_out(self) -> bool:
        return self.status in ("timeout", "not_run")


@dataclass(frozen=True)
class TestReport:
    """The outcome of every test of one submission."""

    outcomes: tuple[TestOutcome, ...]
    sandboxed: bool

    @property
    def total(self) -> int:
        return len(self.outcomes)

    @property
    def passed(self) -> int:
        return sum(o.passed for o in self.outcomes)

    @property
    def timed_out(self) -> int:
        return sum(o.timed_out for o in self.outcomes)

    @property
    def failed(self) -> int:
        """Tests that ran and did not pass: wrong output, an exception, too much output."""
        return self.total - self.passed - self.timed_out

    @property
    def all_passed(self) -> bool:
        return self.total > 0 and self.passed == self.total

    @property
    def first_error(self) -> str | None:
        return next((o.error for o in self.outcomes if not o.passed and o.error), None)


@dataclass(frozen=True)
class Limits:
    """Time and memory a submission gets."""

    per_test_timeout: float = 5.0
    total_timeout: float = 30.0
    memory_mb: int = 1024

    def __post_init__(self) -> None:
        if not (self.per_test_timeout > 0 and self.total_timeout > 0 and self.memory_mb > 0):
            raise GemError(
                "Time and memory limits must be positive: per_test_timeout="
                f"{self.per_test_timeout}, total_timeout={self.total_timeout}, memory_mb={self.memory_mb}."
            )


@cache
def harness_source() -> str:
    return resources.files("gem_envs.code").joinpath("harness.py").read_text(encoding="utf-8")


def build_job(problem: CodeProblem, program: str, limits: Limits) -> dict[str, Any]:
    """The harness's input: the program, the tests' inputs (no expected values) and the limits."""
    prefix = problem.prefix
    if prefix and not prefix.endswith("\n"):
        prefix += "\n"
    return {
        "program": program,
        "prelude": prefix,
        "imports": imported_modules(prefix + program),
        "per_test_timeout": limits.per_test_timeout,
        "total_timeout": limits.total_timeout,
        "tests": [test.job() for test in problem.tests],
    }


def imported_modules(source: str) -> list[str]:
    """Absolute module names imported anywhere in ``source`` (none if it does not parse)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return sorted(name for name in names if name.partition(".")[0] not in _NEVER_PREIMPORT)


# Modules whose import has effects the harness must not have (they run again in each test).
_NEVER_PREIMPORT = frozenset({"antigravity", "this", "__main__", "__hello__", "__phello__"})


def sandbox_limits(problem: CodeProblem, limits: Limits) -> dict[str, Any]:
    """Arguments of :func:`gem_core.tools.run_python` for the harness of ``problem``."""
    output = sum(6 * test.job().get("max_output", 0) + REPORT_ALLOWANCE for test in problem.tests)
    return {
        "timeout": limits.total_timeout + STARTUP_ALLOWANCE,
        "memory_mb": limits.memory_mb,
        "max_output": output + REPORT_ALLOWANCE,
    }


def run_tests(problem: CodeProblem, program: str, limits: Limits = Limits()) -> TestReport:
    """Run ``program`` against every test of ``problem`` in one sandboxed process."""
    from gem_core.tools import run_python

    job = build_job(problem, program, limits)
    result = run_python(harness_source(), stdin=json.dumps(job), **sandbox_limits(problem, limits))
    return judge(problem.tests, result)


async def arun_tests(problem: CodeProblem, program: str, limits: Limits = Limits()) -> TestReport:
    """:func:`run_tests` for async callers: the event loop is free while the tests run."""
    from gem_core.tools import arun_python

    job = build_job(problem, program, limits)
    result = await arun_python(harness_source(), stdin=json.dumps(job), **sandbox_limits(problem, limits))
    return judge(problem.tests, result)


def judge(tests: Sequence[Test], result: Any) -> TestReport:
    """Turn the harness's report (a :class:`gem_core.tools.PythonResult`) into outcomes."""
    records: dict[int, dict[str, Any]] = {}
    finished = False
    for line in result.stdout.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if record.get("done"):
            finished = True
        elif isinstance(record.get("i"), int) and 0 <= record["i"] < len(tests):
            records[record["i"]] = record
    if not records and not finished and not result.timed_out:
        raise GemError(
            "The test harness did not run (exit status "
            f"{result.exit_code}): {result.stderr.strip()[-1000:] or 'no error output'}"
        )
    outcomes = []
    for i, test in enumerate(tests):
        record = records.get(i)
        if record is None:
            if finished or result.timed_out:
                outcomes.append(TestOutcome("not_run", 0.0, "The total time limit ran out first."))
            else:
                outcomes.append(TestOutcome("error", 0.0, "The harness stopped before this test."))
            continue
        status, seconds, error = record["status"], float(record.get("seconds", 0.0)), record.get("error")
        if status == "ok":
            status = "passed" if test.judge(record.get("output")) else "failed"
            if status == "failed" and error is None:
                error = "Wrong answer." if isinstance(test, StdioTest) else "Wrong return value."
        elif status not in STATUSES:
            status, error = "error", f"Unknown status {status!r} from the harness."
        outcomes.append(TestOutcome(status, seconds, error))
    return TestReport(tuple(outcomes), sandboxed=bool(getattr(result, "sandboxed", False)))

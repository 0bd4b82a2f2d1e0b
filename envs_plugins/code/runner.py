"""Running a submission against its tests: all of them in one sandboxed process.

The harness (:mod:`gem_envs.code.harness`) runs in a sandbox, warm (:mod:`gem_envs.code.pool`) or
fresh (:func:`gem_core.sandbox.run_python`), and forks children that run the tests one after
another; this module builds its job, reads its records, and judges stdio and call tests against
expected values that never leave this process.
"""

from __future__ import annotations

import ast
import asyncio
import base64
import functools
import json
import marshal
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from gem_core.errors import GemError

from gem_envs.code.testcases import CallTest, CodeProblem, StdioTest, Test

STARTUP_ALLOWANCE = 10.0  # seconds for the sandbox and the harness to start, beyond the tests
REPORT_ALLOWANCE = 4096  # bytes of report per test, beyond its output

SANDBOX_MODES = ("warm", "fresh")



@dataclass(frozen=True)
class Outcome:
    """How one test ended: ``passed``, ``failed`` (wrong output or return value, or an assert),
    ``error`` (an exception, a crash, a bad exit), ``timeout``, ``output_limit``, or
    ``not_run`` (the total time limit ran out before it started)."""

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
class RunReport:
    """The outcome of every test of one submission."""

    outcomes: tuple[Outcome, ...]
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


@functools.cache
def harness_source() -> str:
    return resources.files("gem_envs.code").joinpath("harness.py").read_text(encoding="utf-8")


@functools.cache
def candidates_source() -> str:
    """The source of :mod:`gem_envs.code.candidates`, which assert tests' jobs carry."""
    return resources.files("gem_envs.code").joinpath("candidates.py").read_text(encoding="utf-8")


def build_job(problem: CodeProblem, program: str, limits: Limits) -> dict[str, Any]:
    """The harness's job: the program, the tests' inputs (no expected values) and the limits."""
    prefix = problem.prefix
    if prefix and not prefix.endswith("\n"):
        prefix += "\n"
    tests = [test.job() for test in problem.tests]
    asserts = any(test["kind"] == "assert" for test in tests)
    return {
        "program": program,
        "prelude": prefix,
        "imports": imported_modules(prefix + program),
        "per_test_timeout": float(limits.per_test_timeout),
        "total_timeout": float(limits.total_timeout),
        "memory_mb": int(limits.memory_mb),
        "protect": asserts,  # see the harness's notes
        "kill_strays": False,
        **({"candidates": candidates_source()} if asserts else {}),
        "tests": tests,
    }


def encode_job(job: dict[str, Any]) -> str:
    """One line of text: the form the harness reads quickly (marshal needs no import)."""
    return base64.b64encode(marshal.dumps(job)).decode("ascii") + "\n"


def imported_modules(source: str) -> list[str]:
    """Absolute module names imported anywhere in ``source`` (none if it does not parse)."""
    if "import" not in source:
        return []
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    names: set[str] = set()
    statements: list[ast.AST] = [tree]
    while statements:  # imports are statements: only statement lists need visiting
        node = statements.pop()
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            children = getattr(node, field, None)
            if isinstance(children, list):
                statements.extend(children)
    return sorted(name for name in names if not _never_preimport(name))


# Modules whose import does something (prints, opens windows or browsers, runs a program): the
# harness, which may serve many submissions, must not import them itself.
_NEVER_PREIMPORT = frozenset({"antigravity", "this", "__hello__", "__phello__", "idlelib", "tkinter",
                              "turtle", "turtledemo", "webbrowser", "pydoc", "code", "pdb"})


def _never_preimport(name: str) -> bool:
    parts = name.split(".")
    return parts[0] in _NEVER_PREIMPORT or "__main__" in parts


def sandbox_limits(problem: CodeProblem, limits: Limits) -> dict[str, Any]:
    """Arguments of :func:`gem_core.sandbox.run_python` for the harness of ``problem``."""
    output = sum(6 * test.job().get("max_output", 0) + REPORT_ALLOWANCE for test in problem.tests)
    return {
        "timeout": limits.total_timeout + STARTUP_ALLOWANCE,
        "memory_mb": limits.memory_mb,
        "max_output": output + REPORT_ALLOWANCE,
    }


def run_tests(problem: CodeProblem, program: str, limits: Limits = Limits(), *, sandbox: str = "warm",
              allow_unsandboxed: bool = False, packages: tuple[str, ...] | None = None) -> RunReport:
    """Run ``program`` against every test of ``problem`` in one sandboxed process, which shows the
    standard library and ``packages`` (None: the defaults of :mod:`gem_core.sandbox.view`), and
    nothing else installed: no pack's data, no grader's answer key.

    ``sandbox="warm"`` sends the job to a harness kept running in its sandbox (see
    :mod:`gem_envs.code.pool`); ``"fresh"`` starts a new sandbox for it with
    :func:`gem_core.sandbox.run_python`. Where no sandbox can be made, this raises
    :class:`gem_core.sandbox.SandboxUnavailableError`, unless ``allow_unsandboxed`` is True: then
    the tests run without isolation and the report says ``sandboxed=False``.
    """
    if sandbox not in SANDBOX_MODES:
        raise GemError(f"sandbox must be one of {', '.join(map(repr, SANDBOX_MODES))}, not {sandbox!r}.")
    from gem_core.sandbox import run_python

    job = build_job(problem, program, limits)
    if sandbox == "warm" and sandbox_works():
        from gem_envs.code.pool import SandboxBroken, shared_pool

        warm = {**job, "kill_strays": True}
        try:
            records = shared_pool(harness_source(), packages=packages).run(
                encode_job(warm), limits.total_timeout + STARTUP_ALLOWANCE)
            return judge_records(problem.tests, records, sandboxed=True)
        except SandboxBroken as broken:
            return judge_records(problem.tests, broken.records, sandboxed=True, timed_out=broken.timed_out)
    result = run_python(harness_source(), stdin=encode_job(job), allow_unsandboxed=allow_unsandboxed,
                        sandbox="fresh", packages=packages, **sandbox_limits(problem, limits))
    return judge(problem.tests, result)


@functools.cache
def sandbox_works() -> bool:
    """Whether a bubblewrap sandbox can be made here (asked once per process)."""
    from gem_core.sandbox import sandbox_problem

    return sandbox_problem() is None


async def arun_tests(problem: CodeProblem, program: str, limits: Limits = Limits(), *, sandbox: str = "warm",
                     allow_unsandboxed: bool = False, packages: tuple[str, ...] | None = None) -> RunReport:
    """:func:`run_tests` for async callers: the tests run in a worker thread, so the event loop
    stays free and many submissions run at once."""
    from gem_core.sandbox.threads import tool_threads

    call = functools.partial(run_tests, problem, program, limits, sandbox=sandbox,
                             allow_unsandboxed=allow_unsandboxed, packages=packages)
    return await asyncio.get_running_loop().run_in_executor(tool_threads(), call)


def judge(tests: Sequence[Test], result: Any) -> RunReport:
    """Outcomes from a one-off harness run (a :class:`gem_core.sandbox.PythonResult`)."""
    records = []
    for line in result.stdout.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            records.append(record)
    if not any(r.get("started") for r in records) and not result.timed_out:  # nothing ran at all
        raise GemError(
            "The test harness did not start (exit status "
            f"{result.exit_code}): {result.stderr.strip()[-1000:] or 'no error output'}"
        )
    return judge_records(tests, records, sandboxed=result.sandboxed, timed_out=result.timed_out)


def judge_records(tests: Sequence[Test], records: Sequence[dict[str, Any]], *, sandboxed: bool,
                  timed_out: bool = False) -> RunReport:
    """Outcomes from the harness's records. Tests never reported did not run: because the total
    time ran out (``not_run``, counted as timed out), or because the harness was stopped (by the
    submission, say: an error)."""
    by_index: dict[int, dict[str, Any]] = {}
    finished = False
    for record in records:
        if record.get("done"):
            finished = True
        elif isinstance(record.get("i"), int) and 0 <= record["i"] < len(tests):
            by_index.setdefault(record["i"], record)
    outcomes = []
    for i, test in enumerate(tests):
        record = by_index.get(i)
        if record is not None:
            outcomes.append(judge_record(test, record))
        elif finished or timed_out:
            outcomes.append(Outcome("not_run", 0.0, "The total time limit ran out first."))
        else:
            outcomes.append(Outcome("error", 0.0, "The harness stopped before this test."))
    return RunReport(tuple(outcomes), sandboxed=sandboxed)


def judge_record(test: Test, record: dict[str, Any]) -> Outcome:
    """One test's outcome from the harness's record and the report its child wrote."""
    seconds = _number(record.get("seconds"))
    status = record.get("status")
    if status == "timeout":
        return Outcome("timeout", seconds, "Time limit exceeded.")
    if status == "output_limit":
        return Outcome("output_limit", seconds, "Output limit exceeded.")
    exit_code = record.get("exit_code")
    if status == "signal":
        return Outcome("error", seconds, f"Killed by signal {-exit_code if isinstance(exit_code, int) else '?'}.")
    report = _parse_report(record.get("report"))
    if report.get("status") == "error":
        return Outcome("error", seconds, str(report.get("error") or "Error."))
    if isinstance(test, StdioTest):
        if exit_code != 0:
            return Outcome("error", seconds, f"Exited with status {exit_code}.")
        output = record.get("output")
        passed = test.judge(output if isinstance(output, str) else None)
        return Outcome("passed" if passed else "failed", seconds, None if passed else "Wrong answer.")
    if isinstance(test, CallTest):
        if report.get("status") != "ok" or not isinstance(report.get("value"), str):
            return Outcome("error", seconds, "The program exited before returning a value.")
        passed = test.judge(report["value"])
        return Outcome("passed" if passed else "failed", seconds, None if passed else "Wrong return value.")
    if report.get("status") in ("passed", "failed"):
        return Outcome(report["status"], seconds, report.get("error") if report["status"] == "failed" else None)
    return Outcome("error", seconds, "The program exited before the test finished.")


def _parse_report(text: Any) -> dict[str, Any]:
    try:
        report = json.loads(text) if isinstance(text, str) and text else {}
    except ValueError:
        return {}
    return report if isinstance(report, dict) else {}


def _number(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0

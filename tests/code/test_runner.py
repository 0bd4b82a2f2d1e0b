"""Submissions run against their tests in the sandbox: correct, wrong, crashing, hanging and
hostile programs, each judged without harm to the host or to the other tests. Every test runs
with a warm sandbox (the default) and with a fresh sandbox per submission."""

from __future__ import annotations

import asyncio

import psutil
import pytest

import gem_core.sandbox
from gem_envs.code import pool
from gem_envs.code import runner
from gem_envs.code.runner import Limits, imported_modules
from gem_envs.code.testcases import CALL_PRELUDE, CallTest, CodeProblem, StdioTest

SUM = CodeProblem("Print a + b.", tuple(StdioTest(f"{a} {b}\n", f"{a + b}\n") for a, b in
                                        [(1, 2), (-5, 5), (10**9, 10**9), (7, 8)]))
FAST = Limits(per_test_timeout=1.0, total_timeout=10.0, memory_mb=512)


MODE = "warm"


@pytest.fixture(autouse=True, params=runner.SANDBOX_MODES)
def mode(request):
    """Each test runs with each sandbox mode; afterwards no process may be left."""
    global MODE
    MODE = request.param
    pool._close_pools()  # start without warm sandboxes
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    yield request.param
    pool._close_pools()
    left = [p for p in psutil.Process().children(recursive=True) if p.pid not in before]
    assert not left, f"processes left behind: {left}"


def run_tests(problem, program, limits=FAST):
    return runner.run_tests(problem, program, limits, sandbox=MODE)


async def arun_tests(problem, program, limits=FAST):
    return await runner.arun_tests(problem, program, limits, sandbox=MODE)


def outcome_statuses(program: str, problem: CodeProblem = SUM, limits: Limits = FAST) -> list[str]:
    return [o.status for o in run_tests(problem, program, limits).outcomes]


def test_correct_program_passes_every_test_in_one_sandboxed_process(monkeypatch):
    started = []  # sandboxes started: fresh ones by run_python, warm ones by the pool
    fresh, warm = gem_core.sandbox.run_python, pool.WarmSandbox.__init__
    monkeypatch.setattr(gem_core.sandbox, "run_python", lambda *a, **k: started.append(1) or fresh(*a, **k))
    monkeypatch.setattr(pool.WarmSandbox, "__init__", lambda *a, **k: started.append(1) or warm(*a, **k))
    for submissions in (1, 2):
        report = run_tests(SUM, "a, b = map(int, input().split())\nprint(a + b)", FAST)
        assert (report.passed, report.failed, report.timed_out, report.total) == (4, 0, 0, 4)
        assert report.all_passed and report.sandboxed
        assert len(started) == (1 if MODE == "warm" else submissions)  # a warm sandbox is reused


def test_every_way_of_reading_input_and_writing_output():
    programs = [
        "import sys\na, b = map(int, sys.stdin.readline().split())\nsys.stdout.write(f'{a + b}\\n')",
        "import sys\nprint(sum(map(int, sys.stdin.buffer.read().split())))",
        "print(sum(map(int, open(0).read().split())))",
        "import os\nos.write(1, str(sum(map(int, os.read(0, 100).split()))).encode())",
        "import sys\nsys.stdout.buffer.write(str(sum(map(int, input().split()))).encode() + b'\\n')",
        "def main():\n    print(sum(map(int, input().split())))\nif __name__ == '__main__':\n    main()",
        "import sys\nprint(sum(map(int, input().split())))\nsys.exit(0)",
        "import os, sys\nprint(sum(map(int, input().split())))\nsys.stdout.flush()\nos._exit(0)",
    ]
    for program in programs:
        assert outcome_statuses(program) == ["passed"] * 4, program


def test_wrong_program_fails_only_where_it_is_wrong():
    report = run_tests(SUM, "a, b = map(int, input().split())\nprint(a + b if a > 0 else 1)", FAST)
    assert [o.status for o in report.outcomes] == ["passed", "failed", "passed", "passed"]
    assert (report.passed, report.failed, report.timed_out) == (3, 1, 0)
    assert not report.all_passed and report.first_error == "Wrong answer."


def test_crashing_program():
    report = run_tests(SUM, "a, b = map(int, input().split())\nprint(1 // (a + b))", FAST)
    assert [o.status for o in report.outcomes] == ["failed", "error", "failed", "failed"]
    assert report.outcomes[1].error == "ZeroDivisionError: integer division or modulo by zero"
    assert outcome_statuses("import sys\nsys.exit(2)") == ["error"] * 4
    assert outcome_statuses("raise SystemExit('bye')") == ["error"] * 4


def test_a_test_that_kills_its_process_does_not_take_the_others_down():
    program = ("import ctypes, os\na, b = map(int, input().split())\n"
               "if a < 0:\n    ctypes.string_at(0)\nif a == 7:\n    os._exit(3)\nprint(a + b)")
    report = run_tests(SUM, program, FAST)
    assert [o.status for o in report.outcomes] == ["passed", "error", "passed", "error"]
    assert "signal" in report.outcomes[1].error and "status 3" in report.outcomes[3].error


def test_more_tests_than_one_process_may_hold_files_for():
    # 150 stdio tests need 450 files, beyond the sandbox's 256: children take them in turns
    problem = CodeProblem("echo", tuple(StdioTest(f"{i}\n", f"{i}\n") for i in range(150)))
    report = run_tests(problem, "print(input())", FAST)
    assert report.total == 150 and report.all_passed
    assert [o.status for o in run_tests(problem, "print(int(input()) % 100)", FAST).outcomes] == \
        ["passed"] * 100 + ["failed"] * 50


@pytest.mark.parametrize("program, error", [("def broken(:\n    pass", "SyntaxError"),
                                            ("x = bytearray(8 * 1024 ** 3)\nprint(len(x))", "MemoryError")],
                         ids=["syntax_error", "memory_bomb"])
def test_a_program_that_cannot_run_errors_every_test_and_not_the_host(program, error):
    report = run_tests(SUM, program, FAST)
    assert [o.status for o in report.outcomes] == ["error"] * 4
    assert error in report.first_error


def test_infinite_loop_times_out_per_test():
    limits = Limits(per_test_timeout=0.3, total_timeout=10.0, memory_mb=512)
    program = "a, b = map(int, input().split())\nwhile a < 0:\n    pass\nprint(a + b)"
    report = run_tests(SUM, program, limits)
    assert [o.status for o in report.outcomes] == ["passed", "timeout", "passed", "passed"]
    assert (report.passed, report.failed, report.timed_out) == (3, 0, 1)


def test_a_loop_that_swallows_every_exception_is_still_killed():
    program = "while True:\n    try:\n        while True:\n            pass\n    except BaseException:\n        pass"
    limits = Limits(per_test_timeout=0.3, total_timeout=10.0, memory_mb=512)
    assert outcome_statuses(program, limits=limits) == ["timeout"] * 4


def test_chatter_on_the_harness_channel_does_not_stop_the_clock():
    limits = Limits(per_test_timeout=0.3, total_timeout=10.0, memory_mb=512)
    program = "import os\nwhile True:\n    for fd in range(3, 20):\n        try:\n            os.write(fd, b'7\\n0\\n')\n" \
              "        except OSError:\n            pass"
    # "0" passes for test 0's end-of-test notice: that test is judged on its (empty) output
    assert outcome_statuses(program, limits=limits) == ["failed", "timeout", "timeout", "timeout"]


def test_total_time_limit_stops_the_run():
    limits = Limits(per_test_timeout=0.4, total_timeout=0.9, memory_mb=512)
    report = run_tests(SUM, "while True:\n    pass", limits)
    statuses = [o.status for o in report.outcomes]
    assert statuses[:2] == ["timeout", "timeout"] and set(statuses[2:]) <= {"timeout", "not_run"}
    assert report.timed_out == 4 and report.failed == 0


def test_tests_do_not_share_state():
    program = (
        "import builtins\nif hasattr(builtins, 'seen'):\n    print('polluted')\nelse:\n"
        "    builtins.seen = True\n    a, b = map(int, input().split())\n    print(a + b)"
    )
    assert outcome_statuses(program) == ["passed"] * 4


@pytest.mark.parametrize("change", [
    "builtins.abs = lambda x: -1",  # a value replaced: the names are as before
    "del builtins.abs",
    "builtins.any = lambda _: False",  # what the harness compares with
    "del builtins.len",
    "sys.setrecursionlimit(50)",
])
def test_each_test_starts_from_pristine_builtins(change):
    program = (
        "import builtins, sys\nassert abs(-2) == 2 and len('ab') == 2 and any([1]) and sys.getrecursionlimit() > 50\n"
        f"{change}\na, b = map(int, input().split())\nprint(a + b)"
    )
    assert outcome_statuses(program) == ["passed"] * 4


def test_flood_of_output_is_cut_off():
    report = run_tests(SUM, "while True:\n    print('x' * 10000)", FAST)
    assert [o.status for o in report.outcomes] == ["output_limit"] * 4


def test_fork_bomb_is_contained():
    limits = Limits(per_test_timeout=0.5, total_timeout=5.0, memory_mb=512)
    program = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass"
    statuses = outcome_statuses(program, limits=limits)
    assert set(statuses) <= {"timeout", "not_run", "error"} and "passed" not in statuses


def test_no_network_and_no_writes_outside_tmp():
    network = "import socket\nsocket.create_connection(('1.1.1.1', 53), timeout=1)\nprint(3)"
    assert outcome_statuses(network)[0] == "error"
    write = "open('/etc/gem-was-here', 'w').write('x')\nprint(3)"
    assert outcome_statuses(write)[0] == "error"


def test_killing_the_harness_fails_the_submission_without_raising():
    report = run_tests(SUM, "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)", FAST)
    assert report.passed == 0 and not report.all_passed


def test_expected_outputs_are_not_in_the_sandbox():
    # A program that prints every string it can find in its process, its parent's files and /tmp
    # still cannot produce an expected output it never saw.
    secret = "8712390457"
    problem = CodeProblem("Print the secret.", (StdioTest("", secret + "\n"),))
    program = (
        "import gc, os, sys\nfound = [o for o in gc.get_objects() if isinstance(o, str) and o.isdigit()]\n"
        "for root in ('/tmp', '.'):\n    for name in os.listdir(root):\n        found.append(name)\n"
        "print(max(found, key=len, default=''))"
    )
    assert run_tests(problem, program, FAST).passed == 0
    assert not any(secret in str(v) for v in SUM.tests[0].job().values())


def test_call_tests():
    problem = CodeProblem("add", (CallTest("add", (1, 2), [3]), CallTest("add", (0.1, 0.2), [0.3]),
                                  CallTest("add", ([1], [2]), [[1, 2]])), prefix=CALL_PRELUDE)
    assert outcome_statuses("def add(a, b) -> Any:\n    return a + b", problem) == ["passed"] * 3
    assert outcome_statuses("class Solution:\n    def add(self, a, b):\n        return a + b", problem) == \
        ["passed"] * 3
    assert outcome_statuses("def add(a, b):\n    return a - b", problem) == ["failed", "failed", "error"]
    report = run_tests(problem, "def add(a, b):\n    return {a}", FAST)
    assert "cannot be compared" in report.first_error
    report = run_tests(problem, "def plus(a, b):\n    return a + b", FAST)
    assert "does not define add()" in report.first_error


def test_heavy_imports_are_paid_once():
    source = "import numpy as np\nfrom os.path import join\nfrom . import x\nimport this, unittest.__main__"
    assert imported_modules(source) == ["numpy", "os.path"]
    nested = ("def f():\n    try:\n        import csv\n    except ImportError:\n        import heapq\n"
              "    finally:\n        import array\nmatch 1:\n    case 1:\n        from fractions import Fraction\n"
              "with open(0) as f:\n    import decimal\nx = lambda: __import__('json')")
    assert imported_modules(nested) == ["array", "csv", "decimal", "fractions", "heapq"]
    assert imported_modules("print(1)") == [] and imported_modules("import (") == []
    problem = CodeProblem("sum", tuple(StdioTest(f"{n}\n", f"{n * (n - 1) // 2}\n") for n in range(1, 9)))
    report = run_tests(problem, "import numpy as np\nprint(int(np.arange(int(input())).sum()))", FAST)
    assert report.all_passed
    assert max(o.seconds for o in report.outcomes) < 0.5  # numpy was imported before the forks


def test_async_form():
    async def main():
        programs = ["a, b = map(int, input().split())\nprint(a + b)", "print(1)"]
        return await asyncio.gather(*(arun_tests(SUM, p, FAST) for p in programs))

    good, bad = asyncio.run(main())
    assert good.all_passed and bad.passed == 0


def test_limits_are_validated():
    from gem_core.errors import GemError

    with pytest.raises(GemError, match="positive"):
        Limits(per_test_timeout=0)

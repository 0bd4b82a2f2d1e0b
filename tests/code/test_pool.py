"""Warm sandboxes: one submission cannot touch the next, and a broken sandbox is replaced."""

from __future__ import annotations

import os
import threading
import time

import psutil
import pytest

from gem_envs.code import pool, runner
from gem_envs.code.runner import Limits
from gem_envs.code.testcases import CodeProblem, StdioTest

LIMITS = Limits(per_test_timeout=1.0, total_timeout=10.0, memory_mb=512)
ECHO = CodeProblem("echo", (StdioTest("ping\n", "ping\n"),))
ECHO_PROGRAM = "print(input())"


@pytest.fixture
def sandboxes():
    """A private pool; afterwards it is closed and no process may be left."""
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    sandbox_pool = pool.SandboxPool(runner.harness_source(), max_sandboxes=3)
    yield sandbox_pool
    sandbox_pool.close()
    left = [p for p in psutil.Process().children(recursive=True) if p.pid not in before]
    assert not left, f"processes left behind: {left}"


def submit(sandbox_pool, problem, program, limits=LIMITS):
    job = {**runner.build_job(problem, program, limits), "kill_strays": True}
    try:
        records = sandbox_pool.run(runner.encode_job(job), limits.total_timeout + 5)
        return runner.judge_records(problem.tests, records, sandboxed=True)
    except pool.SandboxBroken as broken:
        return runner.judge_records(problem.tests, broken.records, sandboxed=True, timed_out=broken.timed_out)


def printing(expected: str) -> CodeProblem:
    return CodeProblem("", (StdioTest("", expected + "\n"),))


def test_sandbox_is_reused(sandboxes):
    assert submit(sandboxes, ECHO, ECHO_PROGRAM).all_passed
    (sandbox,) = sandboxes._idle
    assert submit(sandboxes, ECHO, ECHO_PROGRAM).all_passed
    assert sandboxes._idle == [sandbox] and sandbox.jobs == 2


def test_files_do_not_survive_into_the_next_submission(sandboxes):
    write = "open('/tmp/note', 'w').write('secret')\nimport os\nos.makedirs('/tmp/d/e')\nprint('written')"
    assert submit(sandboxes, printing("written"), write).all_passed
    read = "import os\nprint(sorted(set(os.listdir('/tmp')) - {'harness.py'}))"  # the harness's own source
    assert submit(sandboxes, printing("[]"), read).all_passed


def test_processes_do_not_survive_into_the_next_submission(sandboxes):
    # A daemon in a session of its own, slow to die (200 MB of memory to give back): the next
    # submission must not find it, even while it is still exiting.
    daemon = (
        "import os, time\nr, w = os.pipe()\n"
        "if os.fork() == 0:\n    os.setsid()\n    ballast = b'x' * (200 << 20)\n    os.write(w, b'1')\n"
        "    time.sleep(60)\n    os._exit(0)\n"
        "os.read(r, 1)\nprint('started')"
    )
    assert submit(sandboxes, printing("started"), daemon).all_passed
    count = "import os\nprint(sum(name.isdigit() for name in os.listdir('/proc')))"
    assert submit(sandboxes, printing("3"), count).all_passed  # init, the harness, this test


def test_a_killed_harness_is_replaced(sandboxes):
    kill = "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)"
    two = CodeProblem("", (StdioTest("", "x\n"), StdioTest("", "x\n")))
    report = submit(sandboxes, two, kill)
    assert [o.status for o in report.outcomes] == ["error", "error"]
    assert sandboxes.idle == 0
    assert submit(sandboxes, ECHO, ECHO_PROGRAM).all_passed


def test_a_stopped_harness_times_out_and_is_replaced(sandboxes):
    stop = "import os, signal\nos.kill(os.getppid(), signal.SIGSTOP)"
    limits = Limits(per_test_timeout=0.5, total_timeout=1.0, memory_mb=512)
    two = CodeProblem("", (StdioTest("", "x\n"), StdioTest("", "x\n")))
    job = {**runner.build_job(two, stop, limits), "kill_strays": True}
    with pytest.raises(pool.SandboxBroken) as caught:
        sandboxes.run(runner.encode_job(job), 3.0)
    assert caught.value.timed_out
    report = runner.judge_records(two.tests, caught.value.records, sandboxed=True, timed_out=True)
    assert report.timed_out == 2 and report.passed == 0
    assert submit(sandboxes, ECHO, ECHO_PROGRAM).all_passed


def test_concurrent_submissions_share_at_most_max_sandboxes(sandboxes, monkeypatch):
    started, results = [], []
    start = pool.WarmSandbox.__init__
    monkeypatch.setattr(pool.WarmSandbox, "__init__", lambda *a, **k: started.append(1) or start(*a, **k))

    def worker(n):
        for _ in range(2):
            problem = printing(str(n))
            results.append(submit(sandboxes, problem, f"import time\ntime.sleep(0.2)\nprint({n})").all_passed)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [True] * 12
    # Six callers, three sandboxes at most: the others waited for one instead of starting their own.
    assert len(started) == 3 and sandboxes.idle == 3


def test_a_sandbox_outlives_the_thread_that_started_it(sandboxes):
    # bwrap's parent-death signal follows the thread that started it: a sandbox started from a
    # worker thread must not die when that thread ends (nor mid-way through the next submission).
    worker = threading.Thread(target=submit, args=(sandboxes, ECHO, ECHO_PROGRAM))
    worker.start()
    worker.join()
    (sandbox,) = sandboxes._idle
    while os.path.exists(f"/proc/self/task/{worker.native_id}"):  # until the thread is gone for good
        time.sleep(0.01)
    time.sleep(0.1)  # time enough for a signal sent at its end to arrive
    assert sandbox.alive
    assert submit(sandboxes, ECHO, ECHO_PROGRAM).all_passed
    assert sandboxes._idle == [sandbox] and sandbox.jobs == 2


def test_closed_pool_refuses_work(sandboxes):
    sandboxes.close()
    with pytest.raises(Exception, match="closed"):
        sandboxes.run("", 1.0)


def test_tmp_stays_private_when_the_interpreter_lives_under_tmp(python_under_tmp):
    sandbox_pool = pool.SandboxPool(runner.harness_source(), python=python_under_tmp, max_sandboxes=1)
    try:
        read = "import os\nprint(sorted(set(os.listdir('/tmp')) - {'harness.py'}))"
        assert submit(sandbox_pool, printing("[]"), read).all_passed
        assert submit(sandbox_pool, printing("[]"), read).all_passed  # and after a clean-up
    finally:
        sandbox_pool.close()

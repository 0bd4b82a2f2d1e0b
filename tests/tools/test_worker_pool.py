"""Scoring workers: time limits that hold, no hangs, no leaked processes, a sandbox."""

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from gem_core.sandbox.worker_pool import Outcome, WorkerPool, WorkerStartError
from tests.helpers import REPO, LoopTicks

MODULE = "tests.tools.worker_functions"


@pytest.fixture(autouse=True)
def importable_tests(monkeypatch):
    """Workers import the test module by name."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))


@pytest.fixture
def pool():
    pool = WorkerPool(MODULE, max_workers=2, grace=1.0)
    yield pool
    pool.close()


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie has exited)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def wait_until_gone(pid: int, timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


def test_calls_return_values_and_errors(pool):
    assert pool.call("add", 2, 3, time_limit=5) == Outcome(value=5)
    assert pool.call("fail", time_limit=5).error == "ValueError: bad input"
    assert "not JSON data" in pool.call("not_json", time_limit=5).error
    assert pool.call("noisy", time_limit=5) == Outcome(value="quiet")
    assert pool.call("warmed_up", time_limit=5).value == "yes"  # warm_up() ran first


def test_time_limit_interrupts_python_code_and_keeps_the_worker(pool):
    pool.call("add", 1, 1, time_limit=5)
    before = pool.worker_pids
    start = time.monotonic()
    outcome = pool.call("sleep", 30, time_limit=0.5)
    assert outcome.timed_out and outcome.value is None
    assert time.monotonic() - start < 0.5 + 1.0
    assert pool.worker_pids == before  # interrupted, not killed
    assert pool.call("add", 1, 1, time_limit=5).value == 2


def test_a_worker_that_ignores_the_limit_is_killed_and_replaced(pool):
    pool.call("add", 1, 1, time_limit=5)
    (stubborn,) = pool.worker_pids
    start = time.monotonic()
    outcome = pool.call("stubborn_sleep", 30, time_limit=0.5)
    elapsed = time.monotonic() - start
    assert outcome.timed_out
    assert elapsed < 0.5 + pool.grace + 1.0
    assert wait_until_gone(stubborn, timeout=2)
    assert pool.worker_pids == []
    assert pool.call("add", 2, 2, time_limit=5).value == 4  # a fresh worker


def test_a_crashed_worker_is_reported_and_replaced(pool):
    pool.call("add", 1, 1, time_limit=5)
    (crashed,) = pool.worker_pids
    outcome = pool.call("crash", time_limit=5)
    assert not outcome.ok and "died" in outcome.error
    assert wait_until_gone(crashed, timeout=2)
    assert pool.call("add", 2, 2, time_limit=5).value == 4


def test_memory_is_limited():
    pool = WorkerPool(MODULE, max_workers=1, memory_mb=1024)
    try:
        outcome = pool.call("hog_memory", time_limit=20)
        assert outcome.error == "out of memory"
        assert pool.call("add", 1, 2, time_limit=5).value == 3
    finally:
        pool.close()


def test_setup_runs_outside_the_time_limit(pool):
    outcome = pool.call("add", 1, 2, time_limit=0.5, setup=("sleep", (1.5,)))
    assert outcome.value == 3
    assert "setup failed" in pool.call("add", 1, 2, time_limit=5, setup=("fail", ())).error


def test_long_setups_are_not_killed_by_the_cpu_limit(pool):
    pool.call("add", 1, 1, time_limit=0.1)  # a small CPU allowance for this call
    assert pool.call("add", 1, 2, time_limit=0.1, setup=("burn_cpu", (7,))).value == 3


def test_concurrent_threads_share_at_most_max_workers(pool):
    results, seen_pids = {}, set()

    def worker(i):
        results[i] = pool.call("add", i, i, time_limit=10).value
        seen_pids.update(pool.worker_pids)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert results == {i: 2 * i for i in range(12)}
    assert len(pool.worker_pids) <= 2 and len(seen_pids) <= 2


def test_async_calls_do_not_block_the_event_loop(pool):
    pool.call("add", 0, 0, time_limit=5)

    async def main():
        async with LoopTicks(0.02) as ticks:
            outcomes = await asyncio.gather(pool.acall("sleep", 0.5, time_limit=5),
                                            pool.acall("add", 1, 2, time_limit=5))
        return outcomes, ticks.count

    (slept, added), ticks = asyncio.run(main())
    assert slept.value == 0.5 and added.value == 3
    assert ticks >= 10


def test_close_kills_every_worker(pool):
    pool.call("add", 1, 1, time_limit=5)
    pids = pool.worker_pids
    pool.close()
    assert pool.worker_pids == []
    assert all(wait_until_gone(pid, timeout=2) for pid in pids)


def test_close_kills_busy_workers_too_and_their_callers_get_an_outcome(pool):
    pool.call("add", 1, 1, time_limit=5)
    (busy,) = pool.worker_pids
    outcomes = []
    caller = threading.Thread(target=lambda: outcomes.append(pool.call("sleep", 30, time_limit=60)))
    caller.start()
    time.sleep(0.5)  # the call is running
    pool.close()
    caller.join(timeout=15)
    assert not caller.is_alive() and not outcomes[0].ok
    assert wait_until_gone(busy, timeout=2) and pool.worker_pids == []
    assert pool.call("add", 2, 2, time_limit=5).value == 4  # a fresh worker


@pytest.mark.parametrize("function", ["sleep", "stubborn_sleep"])
def test_a_worker_exits_when_its_caller_dies(function):
    code = textwrap.dedent(f"""
        import sys
        from gem_core.sandbox.worker_pool import WorkerPool
        pool = WorkerPool({MODULE!r}, max_workers=1)
        pool.call("add", 1, 1, time_limit=5)
        print(pool.worker_pids[0], flush=True)
        pool.call({function!r}, 600, time_limit=600)
    """)
    caller = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                              env={**os.environ})
    try:
        worker = int(caller.stdout.readline())
        time.sleep(0.5)
        caller.send_signal(signal.SIGKILL)
        caller.wait(timeout=10)
        assert wait_until_gone(worker), "the worker outlived its caller"
    finally:
        caller.kill()
        caller.stdout.close()


def test_workers_are_gone_after_the_interpreter_exits():
    code = textwrap.dedent(f"""
        from gem_core.sandbox.worker_pool import WorkerPool
        pool = WorkerPool({MODULE!r}, max_workers=2)
        pool.call("add", 1, 1, time_limit=5)
        print(pool.worker_pids[0], flush=True)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert wait_until_gone(int(done.stdout.split()[0]), timeout=5)


def test_a_module_that_fails_to_import_raises_a_clear_error():
    pool = WorkerPool("tests.tools.no_such_module", max_workers=1)
    with pytest.raises(WorkerStartError, match="no_such_module"):
        pool.call("anything", time_limit=1)
    assert pool.worker_pids == []


def test_workers_cannot_write_files_or_see_the_callers_processes(sandbox, pool, tmp_path):
    target = REPO / "tests" / "tools" / "written-by-a-worker"
    assert "Errno 30" in pool.call("touch", str(target), time_limit=5).error  # the host's files: read-only
    assert not target.exists()
    error = pool.call("touch", str(tmp_path / "x"), time_limit=5).error  # not there (its own /tmp), or read-only
    assert "Errno 2" in error or "Errno 30" in error
    assert not (tmp_path / "x").exists()
    assert pool.call("parent_pid", time_limit=5).value != os.getpid()  # its own process namespace


def test_workers_run_in_the_sandbox_of_the_python_tool(sandbox, pool):
    """The policy of gem_core.sandbox.bubblewrap: an unprivileged user, no network, secrets masked."""
    assert pool.call("user_ids", time_limit=5).value == [65534, 65534]
    assert pool.call("network_interfaces", time_limit=5).value == ["lo"]
    if os.path.isfile("/etc/shadow"):
        assert not pool.call("read", "/etc/shadow", time_limit=5).value  # masked: empty or unreadable


def test_workers_import_from_folders_the_sandbox_would_not_show(sandbox, tmp_path, monkeypatch):
    """A module under the host's /tmp (hidden by the sandbox's own) is shown at its own path."""
    (tmp_path / "gem_test_scorer.py").write_text("def double(x):\n    return 2 * x\n")
    tmp_path.chmod(0o755)  # pytest makes it 0700, which the sandbox user may not enter
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), os.environ["PYTHONPATH"]]))
    pool = WorkerPool("gem_test_scorer", max_workers=1)
    try:
        assert pool.call("double", 21, time_limit=5).value == 42
    finally:
        pool.close()


def test_gem_bwrap_names_the_bubblewrap_the_workers_run_under(sandbox, tmp_path):
    log = tmp_path / "bwrap.log"
    wrapper = tmp_path / "bwrap"
    wrapper.write_text(f'#!/bin/sh\necho "$@" >> {log}\nexec {shutil.which("bwrap")} "$@"\n')
    wrapper.chmod(0o755)
    code = textwrap.dedent(f"""
        from gem_core.sandbox.worker_pool import WorkerPool
        pool = WorkerPool({MODULE!r}, max_workers=1)
        print(pool.call("add", 1, 2, time_limit=5).value)
        pool.close()
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "GEM_BWRAP": str(wrapper)})
    assert done.stdout.strip() == "3", done.stderr
    assert "gem_core.sandbox.worker" in log.read_text()


def test_a_forked_child_starts_its_own_workers():
    code = textwrap.dedent(f"""
        import os
        from gem_core.sandbox.worker_pool import WorkerPool
        pool = WorkerPool({MODULE!r}, max_workers=1)
        parent_pid = os.getpid()
        assert pool.call("add", 1, 1, time_limit=5).value == 2
        before = pool.worker_pids
        child = os.fork()
        if child == 0:
            ok = pool.call("add", 2, 2, time_limit=5).value == 4 and pool.worker_pids != before
            pool.close()
            os._exit(0 if ok else 1)
        _, status = os.waitpid(child, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert pool.call("add", 3, 3, time_limit=5).value == 6 and pool.worker_pids == before
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "ok", done.stderr

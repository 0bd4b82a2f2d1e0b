"""The harness's watch over a child, driven directly: what a child wrote before it ended is
collected even when its end is noticed first."""

from __future__ import annotations

import contextlib
import os
import time

from gem_envs.code import harness

PASSED = '{"status": "passed"}'


def test_reports_written_just_before_the_child_ended_are_collected(monkeypatch):
    null_fd = os.open(os.devnull, os.O_RDWR)
    tests = [{"kind": "assert"}] * 3
    files = [harness.output_files(test, null_fd) for test in tests]
    notify_r, notify_w = harness.notify_pipe()
    pid = os.fork()
    if pid == 0:  # a child that runs its three tests at once and ends
        for i, (_, report_fd) in enumerate(files):
            os.write(report_fd, PASSED.encode())
            os.write(notify_w, b"%d\n" % i)
        os._exit(0)
    try:
        os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)  # it has ended; not reaped yet
        # The first read sees only the first notice, as when it comes while the child still runs.
        first_read = [b"0\n"]
        real_read = harness.read_available
        monkeypatch.setattr(harness, "read_available", lambda fd: first_read.pop() if first_read else real_read(fd))
        records = []
        assert harness.watch(pid, tests, files, 0, notify_r, 5.0, time.monotonic() + 5.0, records)
        assert [(r["i"], r["exit_code"], r["report"]) for r in records] == [(i, 0, PASSED) for i in range(3)]
    finally:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
        harness.close_files(files, null_fd)
        for fd in (notify_r, notify_w, null_fd):
            os.close(fd)

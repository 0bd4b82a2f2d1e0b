"""Shared fixtures of the tool tests: a sandbox check, and a guard that fails any test leaving a
process behind."""

from __future__ import annotations

import os
import shutil
import time

import pytest

from gem_core.sandbox import sandbox_problem
from gem_core.sandbox.warm_python import close_warm_sandboxes

#: Processes started by module-scoped fixtures (servers), which outlive single tests on purpose.
FIXTURE_PIDS: set[int] = set()


def descendants(root: int | None = None) -> dict[int, str]:
    """Live processes below ``root`` (default: this process), pid -> command line, from /proc."""
    root = os.getpid() if root is None else root
    children: dict[int, list[int]] = {}
    commands: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read().decode(errors="replace")
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                command = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] == "Z":  # a zombie is already dead; its parent reaps it
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
        commands[int(entry)] = command
    found: dict[int, str] = {}
    stack = list(children.get(root, []))
    while stack:
        pid = stack.pop()
        found[pid] = commands.get(pid, "")
        stack.extend(children.get(pid, []))
    return found


def processes_matching(text: str) -> dict[int, str]:
    """Every live process on the machine whose command line contains ``text``."""
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    command = f.read().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if text in command:
                found[int(entry)] = command
    return found


def wait_until_gone(pids, timeout: float = 5.0) -> dict[int, str]:
    """Wait for the given processes to end; return those still alive after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        alive = {pid: cmd for pid, cmd in descendants().items() if pid in pids}
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.05)


@pytest.fixture(autouse=True)
def no_process_left_behind():
    """Fail a test that leaves a process of its own running."""
    before = set(descendants())
    yield
    close_warm_sandboxes()  # they outlive calls on purpose, not tests
    new = {pid for pid in descendants() if pid not in before and pid not in FIXTURE_PIDS}
    alive = wait_until_gone(new)
    assert not alive, f"processes left behind: {alive}"


@pytest.fixture(scope="session")
def sandbox():
    """Skip when bubblewrap is not installed at all; fail loudly when it is but cannot work."""
    if shutil.which("bwrap") is None and not os.environ.get("GEM_BWRAP"):
        pytest.skip("bubblewrap is not installed (apt-get install bubblewrap)")
    problem = sandbox_problem()
    assert problem is None, problem

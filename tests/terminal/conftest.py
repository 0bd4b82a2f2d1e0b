"""Fixtures of the terminal tests: a real sandbox (bubblewrap), and no process left behind."""

from __future__ import annotations

import shutil

import pytest

from gem_core.tools import sandbox_problem
from tests.tools.conftest import descendants, wait_until_gone


@pytest.fixture(autouse=True)
def no_process_left_behind():
    """Fail a test that leaves a process of its own running (sandboxes included)."""
    before = set(descendants())
    yield
    alive = wait_until_gone({pid for pid in descendants() if pid not in before})
    assert not alive, f"processes left behind: {alive}"


@pytest.fixture(scope="session")
def sandbox():
    """Skip when bubblewrap is not installed at all; fail loudly when it is but cannot work."""
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed (apt-get install bubblewrap)")
    problem = sandbox_problem()
    assert problem is None, problem


@pytest.fixture
def env(sandbox):
    """A terminal environment on a shipped task, closed after the test."""
    from gem_envs.terminal.env import TerminalEnv

    environment = TerminalEnv(task="csv-column-sum", command_timeout=5, max_command_timeout=10, max_turns=30)
    environment.reset(seed=0)
    yield environment
    environment.close()

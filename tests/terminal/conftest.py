"""Fixtures of the terminal tests: a real sandbox (bubblewrap), the test tools in GEM's wheelhouse
with the package index out of reach, and no process left behind."""

from __future__ import annotations

import os
import shutil

import pytest

from gem_core.sandbox import sandbox_problem
from tests.tools.conftest import descendants, wait_until_gone

collect_ignore_glob = ["container_tasks/*"]  # task folders: their tests run inside tasks


@pytest.fixture(autouse=True)
def no_process_left_behind():
    """Fail a test that leaves a process of its own running (sandboxes included)."""
    before = set(descendants())
    yield
    alive = wait_until_gone({pid for pid in descendants() if pid not in before})
    assert not alive, f"processes left behind: {alive}"


@pytest.fixture(scope="session", autouse=True)
def test_tools():
    """The pinned test tools, from the wheelhouse only: pip is told to reach no index during the tests."""
    from gem_envs.terminal import wheelhouse
    from tests.terminal.images import TEST_TOOLS

    os.environ["PIP_NO_INDEX"] = "1"
    try:
        wheelhouse.provide(list(TEST_TOOLS))
    except wheelhouse.WheelhouseError as e:
        pytest.fail(f"{e}\nPut them in GEM's wheelhouse first: python -m tests.terminal.images")
    yield TEST_TOOLS
    os.environ.pop("PIP_NO_INDEX", None)


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


@pytest.fixture(scope="session")
def podman():
    """The local base images for the container tests (built once, kept in podman's store), as a
    base_images mapping. Skip when podman is not installed; fail loudly when it cannot work."""
    if shutil.which("podman") is None:
        pytest.skip("podman is not installed (scripts/install_test_deps.sh installs it)")
    from gem_envs.terminal.container import engine_problem
    from tests.terminal import images

    problem = engine_problem("podman")
    assert problem is None, problem
    images.build_base()
    images.build_tasks()
    return images.base_images()

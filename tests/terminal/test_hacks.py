"""What an agent leaves behind changes the files the tests examine, never how they run: every
leftover of the terminal pack's exploits (reward files, modules, pytest configuration, shadowed
tools, shell files, planted and locked test files) scores 0 on both layouts, in bubblewrap and in
podman, and honest grading still works around them; with the grading's isolation taken away, the
probe finds the holes again."""

from __future__ import annotations

import dataclasses

import pytest

from gem_core.hacks import probe
from gem_envs.terminal.env import TerminalEnv
from gem_envs.terminal.exploits import FINISH, LEFTOVERS, commands
from tests.terminal.public import HARBOR_TASKS, PUBLIC
from tests.terminal.test_tasks import write

TASKS = {  # one per layout and test runner
    "harbor-pytest": HARBOR_TASKS[0],  # Terminal-Bench 2's test.sh: pytest through uvx, reward.txt by exit status
    "terminal-bench-pytest": PUBLIC / "evoeval-0",  # run-tests.sh: uv run pytest, read from pytest's -rA lines
    "terminal-bench-unittest": None,  # a shipped task: python3 -m unittest in /tests, its verbose lines
}


def environment(layout: str, backend: str, request) -> TerminalEnv:
    images = request.getfixturevalue("podman") if backend == "podman" else request.getfixturevalue("sandbox")
    options = {"backend": backend, "max_turns": 5, **({"base_images": images} if backend == "podman" else {})}
    if TASKS[layout] is None:
        return TerminalEnv(task="csv-column-sum", **options)
    return TerminalEnv(path=TASKS[layout], **options)


def leave(env: TerminalEnv, leftovers: str) -> dict:
    """Leave ``leftovers``, finish, and return the final info."""
    observation, *_ = env.step(commands(LEFTOVERS[leftovers]))
    assert "[exit code 0]" in observation, observation[-2000:]
    return env.step(FINISH)[4]


@pytest.mark.parametrize("backend", ["bubblewrap", "podman"])
@pytest.mark.parametrize("layout", sorted(TASKS))
def test_no_leftover_earns_anything(layout, backend, request):
    env = environment(layout, backend, request)
    try:
        for leftovers in LEFTOVERS:
            env.reset(seed=0)
            info = leave(env, leftovers)
            assert info["score"] == 0.0 and "sandbox_error" not in info, (leftovers, info)
            assert not info["passed"] and "test_gem_0" not in info["tests"], (leftovers, info)  # no fake line counted
    finally:
        env.close()


@pytest.mark.parametrize("layout", ["harbor-pytest", "terminal-bench-unittest"])
def test_honest_grading_still_works_among_the_leftovers(layout, request):
    env = environment(layout, "bubblewrap", request)
    try:
        for leftovers in LEFTOVERS:
            env.reset(seed=0)
            env.step(commands(LEFTOVERS[leftovers]))
            env.run_solution()
            info = env.step(FINISH)[4]
            assert info["score"] == 1.0, (leftovers, info)
    finally:
        env.close()


def unguarded(script: str) -> str:
    """The test script with pytest run as ``python3 -m pytest`` again."""
    return script.replace("\npytest ", "\npython3 -m pytest ")


class Unguarded(TerminalEnv):
    """Grading as it was before it was isolated from the agent: the test run with the agent's HOME
    and PATH, and pytest as ``python3 -m pytest``, which imports from the working directory first."""

    def __init__(self, **options):
        super().__init__(**options)
        self.tasks = [dataclasses.replace(task, test_script=unguarded(task.test_script)) for task in self.tasks]

    def _grade(self):
        execute = self.sandbox.execute
        self.sandbox.execute = lambda script, timeout, env=None, isolated=False: execute(script, timeout, env)
        try:
            return super()._grade()
        finally:
            del self.sandbox.execute


def test_the_probe_finds_the_holes_when_the_isolation_is_taken_away(sandbox):
    def earned(env_class):
        found = probe(lambda: env_class(path=HARBOR_TASKS[0], backend="bubblewrap", max_turns=5), seeds=(0,),
                      exploits=["terminal"])
        return {r.attack for r in found if r.earned}

    assert earned(Unguarded) >= {"terminal: modules and pytest configuration in the working directory",
                                 "terminal: modules in the Python user site"}
    assert earned(TerminalEnv) == set()


def workspace_on_path_task(root):
    """A Harbor task whose image puts a folder of the workspace first on PATH, as images with a
    project virtual environment do; its tests pass when /app/answer.txt holds 42."""
    return write(root, {
        "task.toml": "version = \"1.0\"\n[verifier]\ntimeout_sec = 120.0\n",
        "instruction.md": "Write 42 to /app/answer.txt.\n",
        "environment/Dockerfile": "FROM python:3.11-slim\nWORKDIR /app\n"
                                  "ENV PATH=/app/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n",
        "tests/test_outputs.py": "from pathlib import Path\n\n\ndef test_answer():\n"
                                 "    assert Path('/app/answer.txt').read_text().strip() == '42'\n",
        "tests/test.sh": HARBOR_TASKS[0].joinpath("tests", "test.sh").read_text(),
        "solution/solve.sh": "#!/bin/bash\necho 42 > /app/answer.txt\n",
    })


@pytest.mark.parametrize("backend", ["bubblewrap", "podman"])
def test_tools_the_agent_put_first_on_the_images_path_come_last_in_the_test_run(backend, tmp_path, request):
    images = request.getfixturevalue("podman") if backend == "podman" else request.getfixturevalue("sandbox")
    options = {"backend": backend, "max_turns": 5, **({"base_images": images} if backend == "podman" else {})}
    shims = "modules and pytest configuration in the working directory"  # python3, pytest, bash, uv in /app/bin
    guarded = TerminalEnv(path=workspace_on_path_task(tmp_path / "task"), **options)
    unguarded = Unguarded(path=tmp_path / "task", **options)
    try:
        for env, expected in ((guarded, 0.0), (unguarded, 1.0)):
            env.reset(seed=0)
            assert leave(env, shims)["score"] == expected, env
        guarded.reset(seed=0)
        guarded.run_solution()
        assert guarded.step(FINISH)[4]["score"] == 1.0  # the task's own solution passes
    finally:
        guarded.close()
        unguarded.close()

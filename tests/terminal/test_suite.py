"""The shipped tasks' own check: each task's solution scores 1.0 and doing nothing scores 0.0."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from gem_core import list_envs
from gem_envs.terminal.env import TerminalEnv
from gem_envs.terminal.tasks import DIFFICULTIES, builtin_tasks
from tests.terminal.solutions import scores

WORKERS = 4  # sandboxes are cheap (~0.2 s to start); threads overlap their waits


def check(name: str) -> tuple[str, float, float, str]:
    return (name, *scores(TerminalEnv(task=name, max_turns=3))[:3])


def test_every_shipped_task_is_solved_by_its_solution_and_not_by_doing_nothing(sandbox):
    names = [task.name for task in builtin_tasks()]
    with ThreadPoolExecutor(WORKERS) as pool:
        results = list(pool.map(check, names))
    wrong = [(name, nothing, solution, why) for name, nothing, solution, why in results
             if (nothing, solution) != (0.0, 1.0)]
    assert not wrong, wrong


def test_the_shipped_tasks_are_many_and_varied():
    tasks = builtin_tasks()
    assert len(tasks) >= 25
    assert {t.difficulty for t in tasks} == set(DIFFICULTIES)
    assert all(sum(t.difficulty == level for t in tasks) >= 5 for level in DIFFICULTIES)
    assert len({t.category for t in tasks}) >= 8
    for task in tasks:
        assert task.solution.is_file() and (task.root / "run-tests.sh").is_file(), task.name
        assert not (task.tests_dir / "__init__.py").exists(), task.name
        assert task.instruction and not task.setup or all("apt" not in c for c in task.setup)


def test_every_shipped_task_has_an_id():
    ids = {spec.id for spec in list_envs("terminal:*")}
    assert {f"terminal:{t.name}-v0" for t in builtin_tasks()} <= ids
    assert {"terminal:All-v0", "terminal:Easy-v0", "terminal:Medium-v0", "terminal:Hard-v0", "terminal:Tasks-v0"} <= ids

"""Registers the ``terminal`` pack: tasks solved in a sandboxed shell, graded by hidden tests."""

import os

from gem_core import hookimpl

_TERMINAL = "gem_envs.terminal.env:TerminalEnv"
_FOLDER = "gem_envs.terminal.env:TaskFolderEnv"
NEEDS = {"yaml": "envs"}  # task.yaml is read with PyYAML


@hookimpl
def gem_register_envs(register):
    register("terminal:All-v0", _TERMINAL, requires=NEEDS,
             description="Work in a sandboxed shell until hidden tests pass: every shipped task, one per episode.")
    for level in ("easy", "medium", "hard"):
        register(f"terminal:{level.capitalize()}-v0", _TERMINAL, difficulty=level, requires=NEEDS,
                 description=f"The shipped {level} terminal tasks, one per episode.")
    register("terminal:Tasks-v0", _FOLDER, requires=NEEDS,
             description="Your own terminal-bench or Harbor task folders: make(..., path=DIR).")
    tasks = os.path.join(os.path.dirname(__file__), "tasks")  # gem_envs.terminal.tasks.BUILTIN_DIR
    for name in sorted(os.listdir(tasks)):
        if os.path.isfile(os.path.join(tasks, name, "task.yaml")):
            register(f"terminal:{name}-v0", _TERMINAL, task=name, requires=NEEDS,
                     description=f"The shipped terminal task {name!r}.")


@hookimpl
def gem_register_exploits(register):
    register("terminal", "gem_envs.terminal.exploits:terminal_exploits",
             description="Reward files, leftovers in the working directory, HOME and /tmp (modules, pytest "
                         "configuration, shadowed tools, shell start-up files), planted and locked test files.")


@hookimpl
def gem_register_keys(register):
    register("terminal-tasks", [f"gem_envs.terminal:tasks/*/{name}" for name in ("solution.sh", "tests", "run-tests.sh")],
             description="The shipped tasks' solutions, tests and test scripts.")

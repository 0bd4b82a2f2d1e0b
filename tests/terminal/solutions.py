"""A task's own check, as the terminal tests play it: doing nothing must score 0, its solution 1."""

from __future__ import annotations

from gem_envs.terminal.env import TerminalEnv


def scores(env: TerminalEnv) -> tuple[float, float, str, object]:
    """(doing nothing, the task's solution) scores, what the solution's episode said, and the sandbox
    the episodes ran in; the environment is closed after."""
    try:
        env.reset()
        nothing = env.step("<finish>")[1]
        env.reset()
        solved = env.run_solution()
        observation, solution, *_ = env.step("<finish>")
        return nothing, solution, f"{solved.output[-800:]}\n{observation}", env.sandbox
    finally:
        env.close()

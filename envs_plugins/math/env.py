"""Math environments: one question per episode, graded by math-verify under a time limit.

Rewards: 1 for a correct answer in the response's last ``\\boxed{}``; 0 for a wrong answer, for
no complete ``\\boxed{}`` (``info["format_error"]``), for an answer whose grading hit the time
limit (``info["timed_out"]``) or failed (``info["error"]``). The episode ends after one step.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from gem_core.errors import GemError

from gem_envs.math import grading
from gem_envs.math.data import GeneratedProblems, Problems, load_problems, read_problems
from gem_envs.question import DEFAULT_INSTRUCTION, QuestionEnv


class MathProblemsEnv(QuestionEnv):
    """A math environment over any :class:`~gem_envs.math.data.Problems`."""

    def __init__(self, problems: Problems, *, shuffle: bool = True,
                 time_limit: float = grading.DEFAULT_TIME_LIMIT, instruction: str = DEFAULT_INSTRUCTION):
        super().__init__(len(problems), shuffle=shuffle, instruction=instruction)
        if isinstance(time_limit, bool) or not isinstance(time_limit, (int, float)) or not time_limit > 0:
            raise GemError(f"time_limit must be a positive number of seconds, got {time_limit!r}.")
        self.problems = problems
        self.time_limit = float(time_limit)
        self.question = ""
        self.answers: tuple[str, ...] = ()
        grading.worker_pool().warm()  # the first grading then waits less

    def load_problem(self, index: int) -> str:
        self.question, self.answers = self.problems[index]
        return self.question

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        self.check_can_step()
        return self._finish(grading.grade(action, self.answers, time_limit=self.time_limit))

    async def astep(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        self.check_can_step()
        return self._finish(await grading.agrade(action, self.answers, time_limit=self.time_limit))

    def _finish(self, grade: grading.Grade) -> tuple[str, float, bool, bool, dict[str, Any]]:
        self.done = True
        info = {"correct": grade.correct, "answer": grade.answer, "format_error": grade.format_error,
                "timed_out": grade.timed_out}
        if grade.error is not None:
            info["error"] = grade.error
        if grade.format_error:
            observation = "No answer found: put the final answer within \\boxed{}."
        else:
            observation = "Correct." if grade.correct else "Incorrect."
        return observation, 1.0 if grade.correct else 0.0, True, False, info


class MathEnv(MathProblemsEnv):
    """Math problems from a Hugging Face dataset, a local copy of one, or given rows.

    The data options (``dataset_name``, ``split``, ``path``, ``dataset``) are those of
    :func:`gem_envs.data.load_rows`; ``question_key`` and ``answer_key`` name the columns. An
    answer may be a string, a number or a list of acceptable answers. Missing data raises
    :class:`~gem_core.DataNotFoundError` saying how to get it.
    """

    def __init__(self, dataset_name: str | None = None, split: str | None = None, *,
                 path: str | os.PathLike[str] | None = None, dataset: Any = None,
                 question_key: str = "problem", answer_key: str = "answer", shuffle: bool = True,
                 time_limit: float = grading.DEFAULT_TIME_LIMIT, instruction: str = DEFAULT_INSTRUCTION,
                 env_id: str | None = None):
        self.env_id = env_id or "a math environment"
        self.dataset_name, self.split, self.path = dataset_name, split, path
        if dataset is not None:
            problems: Problems = read_problems(self.env_id, question_key, answer_key, dataset=dataset, split=split)
        else:
            problems = load_problems(self.env_id, dataset_name, split, None if path is None else os.fspath(path),
                                     question_key, answer_key)
        super().__init__(problems, shuffle=shuffle, time_limit=time_limit, instruction=instruction)


class GeneratedMathEnv(MathProblemsEnv):
    """Math problems generated offline by a reasoning-gym task (``task``, e.g.
    ``"gsm_symbolic"``), graded by math-verify like the dataset environments.

    ``size`` distinct problems come from the task's dataset with ``seed``; ``config`` sets the
    task's own options.
    """

    def __init__(self, task: str, *, size: int = 10_000, seed: int = 0,
                 config: Mapping[str, Any] | None = None, shuffle: bool = True,
                 time_limit: float = grading.DEFAULT_TIME_LIMIT, instruction: str = DEFAULT_INSTRUCTION):
        self.task = task
        problems = GeneratedProblems(task, size=size, seed=seed, config=config)
        super().__init__(problems, shuffle=shuffle, time_limit=time_limit, instruction=instruction)

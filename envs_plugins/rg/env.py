"""ReasoningGym environments: one reasoning-gym task per id, scored by reasoning-gym's scorer.

Rewards: the scorer's score (from 0 to 1; some tasks give partial credit) for the content of the
response's last ``\\boxed{}``; 0 when there is no complete ``\\boxed{}`` (``info["format_error"]``),
when scoring hit the time limit (``info["timed_out"]``) or failed (``info["error"]``). The
episode ends after one step.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gem_core.errors import GemError
from gem_core.parsing import last_boxed
from gem_core.sandbox.worker_pool import Outcome, WorkerPool, shared_pool

from gem_envs.question import QuestionEnv
from gem_envs.rg.datasets import create_dataset

DEFAULT_TIME_LIMIT = 5.0
INSTRUCTION = "Put your final answer within \\boxed{}."


class ReasoningGymEnv(QuestionEnv):
    """A reasoning-gym task as a single-turn environment.

    ``name`` is the reasoning-gym dataset; ``size`` distinct problems come from it with ``seed``
    (the dataset's seed; which problem an episode shows comes from ``reset(seed)``), and
    ``config`` sets the dataset's own options (difficulty and so on). The ``composite`` dataset
    mixes others: ``datasets={"leg_counting": 2, "basic_arithmetic": 1}`` (a weight may be
    ``{"weight": w, "config": {...}}``). ``time_limit`` bounds scoring, in seconds.
    ``entry`` holds the current reasoning-gym item (question, answer, metadata).
    """

    def __init__(self, name: str, size: int = 500, seed: int = 42, *,
                 config: Mapping[str, Any] | None = None, datasets: Mapping[str, Any] | None = None,
                 shuffle: bool = True, time_limit: float = DEFAULT_TIME_LIMIT,
                 instruction: str = INSTRUCTION):
        if isinstance(time_limit, bool) or not isinstance(time_limit, (int, float)) or not time_limit > 0:
            raise GemError(f"time_limit must be a positive number of seconds, got {time_limit!r}.")
        self.name = name
        self.time_limit = float(time_limit)
        self.dataset = create_dataset(name, size=size, seed=seed, config=config, mix=datasets)
        super().__init__(len(self.dataset), shuffle=shuffle, instruction=instruction)
        self.entry: dict[str, Any] | None = None
        scoring_pool().warm()

    def load_problem(self, index: int) -> str:
        self.entry = self.dataset[index]
        return self.entry["question"]

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        self.check_can_step()
        answer = _answer(action)
        outcome = None if answer is None else scoring_pool().call(*self._request(answer), **self._limits())
        return self._finish(answer, outcome)

    async def astep(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        self.check_can_step()
        answer = _answer(action)
        outcome = None if answer is None else await scoring_pool().acall(*self._request(answer), **self._limits())
        return self._finish(answer, outcome)

    def sample_random_action(self) -> str:
        return f"\\boxed{{{self.action_rng.choice(['0', '1', 'yes', 'no', 'A', 'B', '42'])}}}"

    def _request(self, answer: str) -> tuple[Any, ...]:
        return ("score", *self.dataset.arguments, answer, self.entry)

    def _limits(self) -> dict[str, Any]:
        return {"time_limit": self.time_limit, "setup": ("prepare", self.dataset.arguments)}

    def _finish(self, answer: str | None, outcome: Outcome | None) -> tuple[str, float, bool, bool, dict[str, Any]]:
        self.done = True
        source = (self.entry.get("metadata") or {}).get("source_dataset", self.name)
        info: dict[str, Any] = {"answer": answer, "dataset": source, "format_error": answer is None,
                                "timed_out": outcome is not None and outcome.timed_out}
        score = 0.0
        if outcome is not None and outcome.ok:
            score = _clip(outcome.value)
        elif outcome is not None and outcome.error is not None:
            info["error"] = outcome.error
        info["score"] = score
        info["correct"] = score >= 1.0
        if answer is None:
            observation = "No answer found: put the final answer within \\boxed{}."
        else:
            observation = f"Score: {score:g}."
        return observation, score, True, False, info


def _answer(action: str) -> str | None:
    answer = last_boxed(action) if isinstance(action, str) else None
    return None if answer is None else answer.strip()


def _clip(value: Any) -> float:
    try:
        score = float(value)
    except (TypeError, ValueError):
        return 0.0
    return min(1.0, max(0.0, score)) if score == score else 0.0  # NaN scores 0


def scoring_pool() -> WorkerPool:
    """The process-wide pool of reasoning-gym scoring workers."""
    return shared_pool("gem_envs.rg.scoring")


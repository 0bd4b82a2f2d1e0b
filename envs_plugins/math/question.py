"""Single-turn question environments: ``reset`` shows a question, ``step`` grades the answer in
the response's last ``\\boxed{}`` and ends the episode."""

from __future__ import annotations

from typing import Any, ClassVar

from gem_core import Env
from gem_core.errors import GemError

DEFAULT_INSTRUCTION = "Please reason step by step, and put your final answer within \\boxed{}."


class QuestionEnv(Env):
    """Base class: picks a problem per episode and builds the observation.

    With ``shuffle`` each episode draws a problem at random from the environment's generator
    (seeded by ``reset(seed)``); without it, problems come in order and ``reset(seed=n)`` starts
    at problem ``n`` (modulo the count). ``reset(idx=i)`` shows problem ``i`` (and, without
    shuffle, the next reset shows ``i + 1``). The
    observation is the question, then a blank line and ``instruction`` unless it is empty.
    """

    # Grading waits on a scoring worker process.
    blocking: ClassVar[bool] = True

    def __init__(self, *, shuffle: bool, instruction: str):
        if not isinstance(instruction, str):
            raise GemError(f"instruction must be a string, got {type(instruction).__name__}.")
        self.shuffle = shuffle
        self.instruction = instruction
        self.index: int | None = None
        self.done = False
        self._next_position = 0

    def problem_count(self) -> int:
        raise NotImplementedError

    def load_problem(self, index: int) -> str:
        """Make problem ``index`` the current one and return its question."""
        raise NotImplementedError

    def reset(self, seed: int | None = None, idx: int | None = None, **options: Any) -> tuple[str, dict[str, Any]]:
        super().reset(seed)
        count = self.problem_count()
        if idx is not None:
            if isinstance(idx, bool) or not isinstance(idx, int) or not 0 <= idx < count:
                raise GemError(f"idx must be an integer from 0 to {count - 1}, got {idx!r}.")
            index = idx
        elif self.shuffle:
            index = self.rng.randrange(count)
        else:
            index = (seed if seed is not None else self._next_position) % count
        question = self.load_problem(index)
        self.index, self.done, self._next_position = index, False, index + 1
        observation = f"{question}\n\n{self.instruction}" if self.instruction else question
        return observation, {"index": index}

    def check_can_step(self) -> None:
        if self.index is None:
            raise GemError(f"{self!r}: call reset() before step().")
        if self.done:
            raise GemError(f"{self!r}: the episode is over (one answer per question); call reset().")

    def sample_random_action(self) -> str:
        return f"The answer is \\boxed{{{self.rng.randint(0, 100)}}}."

"""Single-turn question environments, the base of the math and reasoning-gym packs' own:
``reset`` shows a question, ``step`` grades the answer in the response's last ``\\boxed{}`` and
ends the episode."""

from __future__ import annotations

from typing import Any, ClassVar

from gem_core import Env
from gem_core.errors import GemError

from gem_envs.data import RowOrder

DEFAULT_INSTRUCTION = "Please reason step by step, and put your final answer within \\boxed{}."


class QuestionEnv(Env):
    """Base class: picks a problem per episode and builds the observation.

    Problems are visited as :class:`~gem_envs.data.RowOrder` says: shuffled, ``reset(seed)``
    draws an order of the problems and ``reset()`` continues it (each problem once per pass);
    with ``shuffle=False`` they come in order, ``reset(seed=n)`` starting at problem ``n``
    (modulo the count). ``reset(index=i)`` shows problem ``i``. The observation is the question,
    then a blank line and ``instruction`` unless it is empty.
    """

    # Grading waits on a scoring worker process.
    blocking: ClassVar[bool] = True

    def __init__(self, count: int, *, shuffle: bool, instruction: str):
        if not isinstance(instruction, str):
            raise GemError(f"instruction must be a string, got {type(instruction).__name__}.")
        if count == 0:
            raise GemError(f"{type(self).__name__} has no problems.")
        self.shuffle = shuffle
        self.instruction = instruction
        self.order = RowOrder(count, shuffle=shuffle)
        self.index: int | None = None
        self.done = False

    def load_problem(self, index: int) -> str:
        """Make problem ``index`` the current one and return its question."""
        raise NotImplementedError

    def reset(self, seed: int | None = None, index: int | None = None, **options: Any) -> tuple[str, dict[str, Any]]:
        super().reset(seed)
        self.index = self.order.next(self.rng, seed=seed, index=index)
        question = self.load_problem(self.index)
        self.done = False
        observation = f"{question}\n\n{self.instruction}" if self.instruction else question
        return observation, {"index": self.index}

    def check_can_step(self) -> None:
        if self.index is None:
            raise GemError(f"{self!r}: call reset() before step().")
        if self.done:
            raise GemError(f"{self!r}: the episode is over (one answer per question); call reset().")

    def sample_random_action(self) -> str:
        return f"The answer is \\boxed{{{self.action_rng.randint(0, 100)}}}."

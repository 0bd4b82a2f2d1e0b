"""Scripted players and environments shared by the adapter stages: a Guess The Number player, and
an environment that raises mid-episode (with a fixture that registers it)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

import gem_core
from gem_core import Env


@dataclass
class Guesser:
    """Plays Guess The Number by bisection, reading 'higher'/'lower' from the last observation of
    a ChatML prompt."""

    low: int = 1
    high: int = 10
    last: int | None = None
    answers: list[str] = field(default_factory=list)

    def __call__(self, prompt: str) -> str:
        tail = prompt.rsplit("<|im_start|>user", 1)[-1].lower()
        if self.last is not None:
            if "higher" in tail:
                self.low = self.last + 1
            elif "lower" in tail:
                self.high = self.last - 1
        self.last = (self.low + self.high) // 2
        answer = f"I guess \\boxed{{{self.last}}}."
        self.answers.append(answer)
        return answer


class FailsOnSecondStep(Env):
    """Rewards its first turn with 0.25, then raises."""

    def reset(self, seed=None, **options):
        super().reset(seed)
        self.turn = 0
        return "Say anything.", {}

    def step(self, action):
        self.turn += 1
        if self.turn == 2:
            raise RuntimeError("disk on fire")
        return "Again.", 0.25, False, False, {}


@pytest.fixture
def failing_env():
    """The id of :class:`FailsOnSecondStep`, registered for the test."""
    gem_core.register("test:FailsOnSecondStep-v0", FailsOnSecondStep)
    yield "test:FailsOnSecondStep-v0"
    gem_core.registry.deregister("test:FailsOnSecondStep-v0")

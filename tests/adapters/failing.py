"""An environment that fails as user code can, for every adapter stage's failure tests: it answers
its first turn (reward 0.25), then raises in ``step``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import gem_core

ENV_ID = "test:FailsAtTurnTwo-v0"
MESSAGE = "the puzzle server went away"
FIRST_REWARD = 0.25


class FailsAtTurnTwo(gem_core.Env):
    def reset(self, seed=None, **options):
        super().reset(seed)
        self.turn = 0
        return "Guess a number in \\boxed{}.", {}

    def step(self, action):
        self.turn += 1
        if self.turn == 2:
            raise RuntimeError(MESSAGE)
        return "Lower. Guess again.", FIRST_REWARD, False, False, {}

    def sample_random_action(self):
        return "\\boxed{1}"


@contextmanager
def registered() -> Iterator[str]:
    """The failing environment registered under :data:`ENV_ID` for the block."""
    gem_core.register(ENV_ID, FailsAtTurnTwo)
    try:
        yield ENV_ID
    finally:
        gem_core.registry.deregister(ENV_ID)

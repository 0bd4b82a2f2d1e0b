"""An environment whose observations repeat the action they answer, so that any change to an
answer on its way to the environment shows in the context, and whose rewards say which turn
earned them.

Every episode lasts :data:`TURNS` turns, one more than there are answer kinds, so the scripted
sampler (:mod:`tests.tito.script`) gives every kind in every episode, each followed by another
turn."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import gem_core
from tests.tito.script import KINDS

ENV_ID = "tito:Echo-v0"
TURNS = len(KINDS) + 1


def first_observation(seed: int) -> str:
    return f"Game {seed}, round 0: say anything."


def observation(seed: int, turn: int, action: str) -> str:
    """What the environment answers to ``action`` at ``turn`` (1 for the first answer)."""
    return f"Game {seed}, round {turn}: you said {action!r}. Say more."


def reward(turn: int) -> float:
    return turn / 100


class Echo(gem_core.Env):
    def reset(self, seed=None, **options):
        super().reset(seed)
        self.game, self.turn = int(seed or 0), 0
        return first_observation(self.game), {}

    def step(self, action):
        self.turn += 1
        return observation(self.game, self.turn, action), reward(self.turn), self.turn >= TURNS, False, {}

    def sample_random_action(self):
        return "hello"


@contextmanager
def registered() -> Iterator[str]:
    """The echo environment registered under :data:`ENV_ID` for the block."""
    gem_core.register(ENV_ID, Echo)
    try:
        yield ENV_ID
    finally:
        gem_core.registry.deregister(ENV_ID)

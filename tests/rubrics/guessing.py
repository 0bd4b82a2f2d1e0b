"""The episodes the rubric tests play: GuessTheNumber-easy, guessing 1, 2, 3, ... by default."""

from __future__ import annotations

from collections.abc import Sequence

ENV = "game:GuessTheNumber-v0-easy"
GUESSES = [f"\\boxed{{{n}}}" for n in range(1, 11)]


def play(env, seed: int = 0, actions: Sequence[str] = GUESSES) -> list[tuple]:
    """Every step of one episode: (observation, reward, terminated, truncated, info)."""
    env.reset(seed=seed)
    steps = []
    for action in actions:
        steps.append(env.step(action))
        if steps[-1][2] or steps[-1][3]:
            return steps
    raise AssertionError("the episode did not end")

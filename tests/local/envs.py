"""A test environment whose reward a random model earns unevenly, so advantages are non-zero.

(On the real games a random model only writes format errors: every return is equal, ReBN gives
zero advantages, and nothing would train.)
"""

from __future__ import annotations

from typing import Any

import gem_core
from gem_core import Env

ENV_ID = "testlocal:LetterShare-v0"


class LetterShareEnv(Env):
    """``turns`` turns; each answer earns the share of its characters that are ASCII letters."""

    def __init__(self, turns: int = 2):
        self.turns = turns
        self.turn = 0

    def reset(self, seed: int | None = None, **options: Any) -> tuple[str, dict[str, Any]]:
        super().reset(seed)
        self.turn = 0
        return f"Task {self.rng.randint(0, 99)}: answer with letters only.", {}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        self.turn += 1
        share = sum(c.isascii() and c.isalpha() for c in action) / max(len(action), 1)
        done = self.turn >= self.turns
        return f"Turn {self.turn} scored {share:.2f}. Again.", share, done, False, {"success": done and share > 0.5}

    def sample_random_action(self) -> str:
        return "".join(self.rng.choice("ab1 ") for _ in range(8))


def register_once() -> None:
    if not gem_core.list_envs(ENV_ID):
        gem_core.register(ENV_ID, LetterShareEnv, description="Test: share of letters in the answer.")


FLAKY_ID = "testlocal:FlakyStart-v0"


class FlakyStartEnv(LetterShareEnv):
    """LetterShare that cannot start an episode whose seed leaves 1 when divided by 3: in a vector
    environment of three slots, slot 1 never starts one."""

    def reset(self, seed: int | None = None, **options: Any) -> tuple[str, dict[str, Any]]:
        if seed is not None and seed % 3 == 1:
            raise RuntimeError(f"no task for seed {seed}")
        return super().reset(seed, **options)


def register_flaky_once() -> None:
    if not gem_core.list_envs(FLAKY_ID):
        gem_core.register(FLAKY_ID, FlakyStartEnv, description="Test: slot 1 of three never starts.")


BROKEN_ID = "testlocal:BrokenSeeds-v0"


class BrokenSeedsEnv(LetterShareEnv):
    """LetterShare whose episodes of ``broken_seeds`` return a NaN reward on their second turn
    (the environment's fault, not the agent's: those episodes fail as malformed)."""

    def __init__(self, turns: int = 2, broken_seeds: tuple[int, ...] = ()):
        super().__init__(turns)
        self.broken_seeds = set(broken_seeds)
        self.seed: int | None = None

    def reset(self, seed: int | None = None, **options: Any) -> tuple[str, dict[str, Any]]:
        self.seed = seed
        return super().reset(seed, **options)

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = super().step(action)
        if self.seed in self.broken_seeds and self.turn == 2:
            reward = float("nan")
        return observation, reward, terminated, truncated, info


def register_broken(broken_seeds: list[int]) -> None:
    """(Re-)register :data:`BROKEN_ID` with these seeds broken."""
    from gem_core.registry import deregister

    deregister(BROKEN_ID)
    gem_core.register(BROKEN_ID, BrokenSeedsEnv, broken_seeds=tuple(broken_seeds),
                      description="Test: a NaN reward on the second turn of some seeds.")


BROKEN_DILEMMA_ID = "testlocal:BrokenDilemma-v0-selfplay"


def register_broken_dilemma_once() -> None:
    """The prisoner's dilemma played in self-play, whose episodes of even seeds hand the seat that
    did not move last a NaN reward in their first round (only ``info["rewards"]`` shows it)."""
    if gem_core.list_envs(BROKEN_DILEMMA_ID):
        return
    from gem_envs.multiagent.prisoners_dilemma import PrisonersDilemmaEnv

    class BrokenDilemmaEnv(PrisonersDilemmaEnv):
        def reset(self, seed: int | None = None, **options: Any) -> Any:
            self.broken = seed is not None and seed % 2 == 0
            return super().reset(seed, **options)

        def step(self, actions: dict[str, str]) -> Any:
            observations, rewards, terminations, truncations, infos = super().step(actions)
            if self.broken:
                rewards = {**rewards, "player_0": float("nan")}
            return observations, rewards, terminations, truncations, infos

    gem_core.register(BROKEN_DILEMMA_ID, BrokenDilemmaEnv, wrappers=["self_play"],
                      description="Test: a NaN reward for one seat on even seeds.")


SLOW_ID = "testlocal:SlowSeeds-v0"


class SlowSeedsEnv(LetterShareEnv):
    """LetterShare whose episodes of ``slow_seeds`` take ``delay`` seconds per step, and those of
    ``hung_seeds`` hang at their first step until the environment is closed."""

    blocking = True

    def __init__(self, turns: int = 2, slow_seeds: tuple[int, ...] = (), hung_seeds: tuple[int, ...] = (),
                 delay: float = 0.0):
        super().__init__(turns)
        self.slow_seeds, self.hung_seeds, self.delay = set(slow_seeds), set(hung_seeds), delay
        self.seed: int | None = None
        import threading

        self.closed = threading.Event()

    def reset(self, seed: int | None = None, **options: Any) -> tuple[str, dict[str, Any]]:
        self.seed = seed
        return super().reset(seed, **options)

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        import time

        if self.seed in self.hung_seeds:
            self.closed.wait(120)
            raise RuntimeError("closed under its call")
        if self.seed in self.slow_seeds:
            time.sleep(self.delay)
        return super().step(action)

    def close(self) -> None:
        self.closed.set()


def register_slow(slow_seeds: list[int] = (), hung_seeds: list[int] = (), delay: float = 0.0) -> None:
    """(Re-)register :data:`SLOW_ID` with these seeds slow or hung."""
    from gem_core.registry import deregister

    deregister(SLOW_ID)
    gem_core.register(SLOW_ID, SlowSeedsEnv, slow_seeds=tuple(slow_seeds), hung_seeds=tuple(hung_seeds),
                      delay=delay, description="Test: some seeds slow, some hung.")

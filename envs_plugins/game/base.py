"""What the language games share: rewards, answer parsing, the turn limit."""

from __future__ import annotations

from typing import Any

from gem_core import Env
from gem_core.parsing import last_boxed


class Reward:
    """Per-turn rewards shared by the games (documented in docs/envs.md)."""

    SUCCESS = 1.0  # the game is won
    STEP = 0.0  # a valid move that does not end the game
    FAIL = 0.0  # the game is lost (a mine, a wrong final answer)
    INVALID = 0.0  # well-formed but against the rules (out of range, repeated)
    FORMAT_ERROR = -0.1  # no parseable answer in the last \boxed{}; ends the episode


class GameEnv(Env):
    """Base class of the language games: the answer is read from the last ``\\boxed{...}``;
    an episode ends after ``max_turns`` turns (truncated)."""

    max_turns: int
    turn: int = 0

    @staticmethod
    def parse_answer(action: str) -> str | None:
        """The stripped content of the last complete ``\\boxed{}``, or None."""
        answer = last_boxed(action) if isinstance(action, str) else None
        return answer.strip() if answer is not None else None

    def format_error(self, message: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """End the episode with the format-error penalty."""
        return message, Reward.FORMAT_ERROR, True, False, self.info(format_error=True)

    def info(self, **extra: Any) -> dict[str, Any]:
        """The info dict every step returns: the turn count plus ``extra``."""
        return {"turn": self.turn, "suffix": self.task_suffix(), **extra}

    def task_suffix(self) -> str:
        """A short reminder of what to do next, for observation wrappers."""
        return "Enter your next move."

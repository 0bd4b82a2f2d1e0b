"""GuessTheNumber: find a hidden integer from higher/lower hints."""

from __future__ import annotations

import math
from typing import Any

from gem_envs.game.base import GameEnv, Reward


class GuessTheNumberEnv(GameEnv):
    """Guess an integer in ``[min_number, max_number]`` within ``max_turns`` guesses.

    Each valid guess is answered with "higher" or "lower". Rewards: 1 for the right number; a
    guess out of range or repeated earns ``Reward.INVALID``; no integer in the last ``\\boxed{}``
    ends the episode with ``Reward.FORMAT_ERROR``. When the turns run out, the last guess earns
    ``1 - distance / (max_number - min_number)`` (a dense closeness reward) and the episode is
    truncated. With ``min_number``/``max_number``/``max_turns`` set to None, each episode draws a
    range and gives ``ceil(sqrt(range)) + 1`` turns.
    """

    def __init__(self, min_number: int | None = 1, max_number: int | None = 20, max_turns: int | None = 20):
        self.random_range = min_number is None or max_number is None
        self.min_number = 1 if min_number is None else min_number
        self.max_number = 20 if max_number is None else max_number
        self.fixed_max_turns = max_turns
        self.max_turns = max_turns or 20
        if not self.random_range and self.min_number >= self.max_number:
            raise ValueError(f"min_number must be below max_number, got {min_number} and {max_number}")
        self.target = self.min_number
        self.guesses: set[int] = set()

    def reset(self, seed: int | None = None, **options: Any) -> tuple[str, dict[str, Any]]:
        super().reset(seed)
        rng = self.rng
        if self.random_range:
            self.min_number = rng.randint(1, 10)
            self.max_number = rng.randint(self.min_number + 5, self.min_number + 50)
        if self.random_range or self.fixed_max_turns is None:
            self.max_turns = math.ceil(math.sqrt(self.max_number - self.min_number)) + 1
        self.target = rng.randint(self.min_number, self.max_number)
        self.guesses = set()
        self.turn = 0
        return self.instructions(), self.info()

    def instructions(self) -> str:
        return (
            "Let's play Guess The Number.\n"
            f"I am thinking of an integer from {self.min_number} to {self.max_number} (inclusive). "
            f"You have {self.max_turns} guesses to find it; after each guess I will tell you "
            "whether the number is higher or lower.\n"
            "Think as much as you like, then put your guess in \\boxed{}, for example "
            f"\\boxed{{{(self.min_number + self.max_number) // 2}}}. Only the last \\boxed{{}} counts.\n"
            "Make your first guess."
        )

    def task_suffix(self) -> str:
        return "Enter your next guess."

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        self.turn += 1
        answer = self.parse_answer(action)
        guess = _parse_int(answer)
        if guess is None:
            return self.format_error(f"Turn {self.turn}: no integer guess found in \\boxed{{}}. Game over.")
        if guess == self.target:
            return (
                f"Correct! The number was {self.target}; you found it in {self.turn} turns.",
                Reward.SUCCESS, True, False, self.info(success=True),
            )
        in_range = self.min_number <= guess <= self.max_number
        if not in_range:
            observation = f"Turn {self.turn}: {guess} is outside the range {self.min_number}-{self.max_number}."
            reward = Reward.INVALID
        elif guess in self.guesses:
            observation = f"Turn {self.turn}: you already guessed {guess}."
            reward = Reward.INVALID
        else:
            self.guesses.add(guess)
            direction = "higher" if self.target > guess else "lower"
            observation = f"Turn {self.turn}: you guessed {guess}; the number is {direction}."
            reward = Reward.STEP
        if self.turn >= self.max_turns:
            if in_range:
                reward = 1.0 - abs(guess - self.target) / (self.max_number - self.min_number)
            return (
                f"{observation}\nOut of turns: the number was {self.target}.",
                reward, False, True, self.info(success=False),
            )
        return observation, reward, False, False, self.info()

    def sample_random_action(self) -> str:
        return f"\\boxed{{{self.rng.randint(self.min_number, self.max_number)}}}"


def _parse_int(answer: str | None) -> int | None:
    if answer is None or len(answer) > 40:
        return None
    try:
        return int(answer.replace(",", "").strip())
    except ValueError:
        try:
            value = float(answer)
        except ValueError:
            return None
        return int(value) if value.is_integer() else None

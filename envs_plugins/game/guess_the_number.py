"""GuessTheNumber: find a hidden integer from higher/lower hints."""

from __future__ import annotations

import math
from functools import cache

from gem_envs.game.base import GameEnv, GameSettingsError, Outcome, Reward, check_positive, ListedMoves, NO_LISTED_MOVES, random_int


class GuessTheNumberEnv(GameEnv):
    """Guess an integer in ``[min_number, max_number]`` within ``max_turns`` guesses.

    Each valid guess is answered with "higher" or "lower". The right number earns 1 and ends the
    game; a guess out of range or repeated earns ``Reward.INVALID``. When the turns run out, the
    last guess earns ``1 - distance / (max_number - min_number)`` if it was in range (a dense
    closeness reward). With ``min_number`` or ``max_number`` None each episode draws a range
    (min in 1-10, max 5-50 above it); with ``max_turns`` None the limit is
    ``ceil(sqrt(max_number - min_number)) + 1``.

    ``sparse=True`` makes the reward 1 for finding the number and 0 for everything else: a format
    error earns 0 instead of ``Reward.FORMAT_ERROR`` and the turn limit pays no closeness reward.
    """

    action_format = "\\boxed{NUMBER}"

    def __init__(self, min_number: int | None = 1, max_number: int | None = 20, max_turns: int | None = 20,
                 sparse: bool = False):
        if not isinstance(sparse, bool):
            raise GameSettingsError(f"sparse must be True or False, got {sparse!r}.")
        self.sparse = sparse
        if sparse:
            self.format_error_reward = 0.0
        self.random_range = min_number is None or max_number is None
        self.fixed_max_turns = max_turns
        if not self.random_range:
            if not (isinstance(min_number, int) and isinstance(max_number, int)) or min_number >= max_number:
                raise GameSettingsError(
                    f"min_number must be an integer below max_number, got {min_number!r} and {max_number!r}."
                )
        if max_turns is not None:
            check_positive("max_turns", max_turns)
        self._set_range(1 if min_number is None else min_number, 20 if max_number is None else max_number)
        self.target = self.last_guess = self.min_number
        self.guesses: set[int] = set()

    def _set_range(self, low: int, high: int) -> None:
        """Set the range and what follows from it: the turn limit, the instructions and the
        random actions (worked out once per range, not once per episode)."""
        self.min_number, self.max_number = low, high
        if self.random_range or self.fixed_max_turns is None:
            self.max_turns = math.ceil(math.sqrt(high - low)) + 1
        else:
            self.max_turns = self.fixed_max_turns
        self.intro = _instructions(low, high, self.max_turns)
        self.listed = _listed_numbers(low, high)

    def new_game(self) -> None:
        rng = self._rng
        if self.random_range:
            low = rng.randint(1, 10)
            self._set_range(low, rng.randint(low + 5, low + 50))
        self.target = random_int(rng, self.min_number, self.max_number)
        self.guesses = set()

    def instructions(self) -> str:
        return self.intro

    def task_suffix(self) -> str:
        return "Enter your guess."

    @staticmethod
    def parse_move(answer: str) -> int | None:
        return parse_int(answer)

    def play(self, guess: int) -> tuple[str, float, Outcome]:
        self.last_guess = guess
        if guess == self.target:
            return f"Correct! The number was {self.target}; you found it in {self.turn} turns.", Reward.SUCCESS, Outcome.WON
        if not self.min_number <= guess <= self.max_number:
            return (
                f"Turn {self.turn}: {guess} is outside the range {self.min_number}-{self.max_number}.",
                Reward.INVALID, Outcome.INVALID,
            )
        if guess in self.guesses:
            return f"Turn {self.turn}: you already guessed {guess}.", Reward.INVALID, Outcome.INVALID
        self.guesses.add(guess)
        direction = "higher" if self.target > guess else "lower"
        return f"Turn {self.turn}: you guessed {guess}; the number is {direction}.", Reward.STEP, Outcome.ONGOING

    def reward_at_turn_limit(self, reward: float) -> float:
        if self.sparse:
            return reward
        if self.min_number <= self.last_guess <= self.max_number:
            return 1.0 - abs(self.last_guess - self.target) / (self.max_number - self.min_number)
        return reward

    def random_move(self) -> str:
        return str(random_int(self.action_rng, self.min_number, self.max_number))


@cache
def _listed_numbers(low: int, high: int) -> ListedMoves[int]:
    """The guesses of a range that is short enough to list (else none)."""
    if high - low >= 10_000:
        return NO_LISTED_MOVES
    return ListedMoves.of((str(n), n) for n in range(low, high + 1))


@cache
def _instructions(low: int, high: int, turns: int) -> str:
    return (
        "Let's play Guess The Number.\n"
        f"I am thinking of an integer from {low} to {high} (inclusive). You have {turns} guesses "
        "to find it; after each guess I will tell you whether the number is higher or lower.\n"
        "Think as much as you like, then put your guess in \\boxed{}, for example "
        f"\\boxed{{{(low + high) // 2}}}. Only the last \\boxed{{}} counts."
    )


def parse_int(answer: str) -> int | None:
    """An integer written as ``12``, ``-3``, ``1,000`` or ``12.0``; None otherwise."""
    if len(answer) > 40:
        return None
    try:
        return int(answer)
    except ValueError:
        pass
    try:
        return int(answer.replace(",", ""))
    except ValueError:
        try:
            value = float(answer)
        except ValueError:
            return None
        return int(value) if value.is_integer() else None

"""Mastermind: deduce a secret code from black and white pegs."""

from __future__ import annotations

import itertools
import math
import re
from functools import cache, lru_cache
from operator import eq

from gem_envs.game.base import GameEnv, GameSettingsError, NO_LISTED_MOVES, Outcome, Reward, check_positive, ListedMoves

#: (code_length, num_numbers, max_turns) drawn per episode by the -random variant.
RANDOM_SETTINGS = ((2, 4, 10), (4, 6, 20), (4, 8, 30))

_GUESS = re.compile(r"[0-9]{1,9}(?:[\s,]+[0-9]{1,9})*")


class MastermindEnv(GameEnv):
    """Guess a code of ``code_length`` digits from 1 to ``num_numbers`` within ``max_turns``.

    Each new guess is scored with black pegs (right digit, right place) and white pegs (right
    digit, wrong place). The reward is dense: whenever the black-peg count beats its best so far,
    the increase divided by ``code_length`` is paid, so a solved code has earned 1 in total. A
    guess of the wrong length, with digits out of range, or repeated is invalid. Any None
    setting draws ``(code_length, num_numbers, max_turns)`` per episode from
    :data:`RANDOM_SETTINGS`.
    """

    action_format = "\\boxed{D D D D} (digits separated by spaces)"

    def __init__(
        self,
        code_length: int | None = 4,
        num_numbers: int | None = 6,
        duplicate_numbers: bool = False,
        max_turns: int | None = 20,
    ):
        self.random_settings = code_length is None or num_numbers is None or max_turns is None
        self.duplicate_numbers = bool(duplicate_numbers)
        if not self.random_settings:
            check_positive("code_length", code_length)
            check_positive("num_numbers", num_numbers)
            check_positive("max_turns", max_turns)
            if not self.duplicate_numbers and code_length > num_numbers:
                raise GameSettingsError(
                    f"A code of {code_length} distinct digits needs num_numbers >= {code_length}; "
                    f"got {num_numbers}. Raise num_numbers or pass duplicate_numbers=True."
                )
        self.code_length, self.num_numbers, self.max_turns = (
            RANDOM_SETTINGS[1] if self.random_settings else (code_length, num_numbers, max_turns)
        )
        self.code: tuple[int, ...] = ()
        self.code_digits: frozenset[int] = frozenset()
        self.digits: frozenset[int] = frozenset()
        self.guesses: set[tuple[int, ...]] = set()
        self.best_black = 0

    def new_game(self) -> None:
        rng = self.rng
        if self.random_settings:
            self.code_length, self.num_numbers, self.max_turns = rng.choice(RANDOM_SETTINGS)
        digits = range(1, self.num_numbers + 1)
        if self.duplicate_numbers:
            self.code = tuple(rng.choices(digits, k=self.code_length))
        else:
            self.code = tuple(rng.sample(digits, self.code_length))
        self.code_digits = frozenset(self.code)
        self.digits = _digits(self.num_numbers)
        self.guesses = set()
        self.best_black = 0
        self.listed = _distinct_guesses(self.num_numbers, self.code_length)

    def instructions(self) -> str:
        return _instructions(self.code_length, self.num_numbers, self.duplicate_numbers, self.max_turns)

    def task_suffix(self) -> str:
        return "Enter your guess."

    def parse_move(self, answer: str) -> tuple[int, ...] | None:
        if _GUESS.fullmatch(answer) is None:
            return None
        return tuple(map(int, answer.replace(",", " ").split()))

    def play(self, guess: tuple[int, ...]) -> tuple[str, float, Outcome]:
        shown = _shown(guess)
        if len(guess) != self.code_length:
            return (
                f"Turn {self.turn}: your guess {shown} has {len(guess)} digits; the code has {self.code_length}.",
                Reward.INVALID, Outcome.INVALID,
            )
        if not self.digits.issuperset(guess):
            return (
                f"Turn {self.turn}: your guess {shown} uses digits outside 1-{self.num_numbers}.",
                Reward.INVALID, Outcome.INVALID,
            )
        if guess in self.guesses:
            return f"Turn {self.turn}: you already guessed {shown}.", Reward.INVALID, Outcome.INVALID
        self.guesses.add(guess)
        black = sum(map(eq, self.code, guess))
        if self.duplicate_numbers:
            white = score_guess(self.code, guess)[1]
        else:  # each digit of the code is there once
            white = len(self.code_digits.intersection(guess)) - black
        reward = Reward.STEP
        if black > self.best_black:
            reward = (black - self.best_black) / self.code_length
            self.best_black = black
        if black == self.code_length:
            return f"Correct! The code was {shown}; you found it in {self.turn} turns.", reward, Outcome.WON
        return (
            f"Turn {self.turn}: {shown} scores {black} black and {white} white peg(s).",
            reward, Outcome.ONGOING,
        )

    def random_move(self) -> str:  # random guesses are distinct digits when that is possible
        digits = range(1, self.num_numbers + 1)
        if self.code_length <= self.num_numbers:
            guess = self.action_rng.sample(digits, self.code_length)
        else:
            guess = self.action_rng.choices(digits, k=self.code_length)
        return " ".join(map(str, guess))


@cache
def _digits(num_numbers: int) -> frozenset[int]:
    return frozenset(range(1, num_numbers + 1))


@lru_cache(maxsize=8192)
def _shown(guess: tuple[int, ...]) -> str:
    return " ".join(map(str, guess))


@cache
def _distinct_guesses(num_numbers: int, code_length: int) -> ListedMoves[tuple[int, ...]]:
    """Every guess of distinct digits, listed, when there are few enough (else none)."""
    if code_length > num_numbers or math.perm(num_numbers, code_length) > 5000:
        return NO_LISTED_MOVES
    guesses = itertools.permutations(range(1, num_numbers + 1), code_length)
    return ListedMoves.of((" ".join(map(str, guess)), guess) for guess in guesses)


def score_guess(code: tuple[int, ...], guess: tuple[int, ...]) -> tuple[int, int]:
    """Black pegs (exact matches) and white pegs (right digits in the wrong places)."""
    black = sum(map(eq, code, guess))
    digits = set(guess)
    common = sum(map(min, map(code.count, digits), map(guess.count, digits)))
    return black, common - black


@cache
def _instructions(length: int, numbers: int, duplicates: bool, turns: int) -> str:
    example = " ".join(str(d) for d in range(1, length + 1))
    return (
        "Let's play Mastermind.\n"
        f"I have a secret code of {length} digits, each from 1 to {numbers}; "
        f"digits {'may' if duplicates else 'do not'} repeat. "
        f"You have {turns} turns to find it.\n"
        "After each guess I give black pegs (right digit in the right place) and white pegs "
        "(right digit in the wrong place).\n"
        f"Put your guess in \\boxed{{}} with the digits separated by spaces, for example "
        f"\\boxed{{{example}}}. Only the last \\boxed{{}} counts."
    )

"""Hangman: find a hidden word letter by letter."""

from __future__ import annotations

import string

from gem_envs.game import words
from gem_envs.game.base import GameEnv, Outcome, Reward, check_positive, pick

#: (word_length, max_turns) drawn per episode by the -random variant.
RANDOM_SETTINGS = ((3, 10), (5, 15), (7, 20))


class HangmanEnv(GameEnv):
    """Find a hidden ``word_length``-letter word within ``max_turns``, guessing one letter or the
    whole word per turn.

    A new letter in the word earns ``0.5 * occurrences / word_length``; revealing the last letter,
    or guessing the whole word, wins and earns 0.5 plus 0.5 times the share of letters still
    hidden, so a found word has earned 1 in total. A letter not in the word or a wrong word of
    the right length earns ``Reward.STEP``; a repeated letter or a word of the wrong length is
    invalid. ``hardcore`` draws words from the full dictionary instead of the basic list. With
    ``word_length`` or ``max_turns`` None each episode draws from :data:`RANDOM_SETTINGS`.
    """

    action_format = "\\boxed{LETTER} or \\boxed{WORD}"

    def __init__(self, word_length: int | None = 5, hardcore: bool = False, max_turns: int | None = 20):
        self.random_settings = word_length is None or max_turns is None
        self.hardcore = bool(hardcore)
        if not self.random_settings:
            check_positive("word_length", word_length, minimum=3)
            check_positive("max_turns", max_turns)
            words.check_length(word_length, self.hardcore)
        self.word_length = word_length or 5
        self.max_turns = max_turns or 15
        self.secret = ""
        self.board: list[str] = []
        self.letters: set[str] = set()

    def new_game(self) -> None:
        rng = self.rng
        if self.random_settings:
            self.word_length, self.max_turns = rng.choice(RANDOM_SETTINGS)
        self.secret = rng.choice(words.words_of_length(self.word_length, self.hardcore))
        self.board = ["_"] * self.word_length
        self.letters = set()

    def instructions(self) -> str:
        return (
            "Let's play Hangman.\n"
            f"Find my hidden {self.word_length}-letter word within {self.max_turns} turns. Each turn, "
            "guess one letter, e.g. \\boxed{E}, or the whole word, e.g. "
            f"\\boxed{{{'GARDENS'[:self.word_length]}}}.\n"
            "Letters you find are shown in the grid, where '_' marks a letter still hidden. "
            "Only the last \\boxed{} counts."
        )

    def task_suffix(self) -> str:
        return f"Here is the word:\n{self.render()}\nEnter your guess."

    def render(self) -> str:
        header = " ".join(f"C{i:02}" for i in range(self.word_length))
        return f"{header}\n" + " ".join(f" {c} " for c in self.board)

    def parse_move(self, answer: str) -> str | None:
        guess = answer.strip()
        if not (guess.isascii() and guess.isalpha()):
            return None
        return guess.upper()

    def play(self, guess: str) -> tuple[str, float, Outcome]:
        if len(guess) == 1:
            return self._guess_letter(guess)
        if len(guess) != self.word_length:
            return (
                f"Turn {self.turn}: {guess} has {len(guess)} letters; the word has {self.word_length}.",
                Reward.INVALID, Outcome.INVALID,
            )
        if guess != self.secret:
            return f"Turn {self.turn}: the word is not {guess}.", Reward.STEP, Outcome.ONGOING
        hidden = self.board.count("_") / self.word_length
        self.board = list(self.secret)
        self._suffix = None
        return f"Correct! The word was {self.secret}.", 0.5 * hidden + 0.5, Outcome.WON

    def _guess_letter(self, letter: str) -> tuple[str, float, Outcome]:
        if letter in self.letters:
            return f"Turn {self.turn}: you already guessed {letter}.", Reward.INVALID, Outcome.INVALID
        self.letters.add(letter)
        found = 0
        for i, c in enumerate(self.secret):
            if c == letter:
                self.board[i] = c
                found += 1
        if not found:
            return f"Turn {self.turn}: there is no {letter} in the word.", Reward.STEP, Outcome.ONGOING
        self._suffix = None
        reward = 0.5 * found / self.word_length
        if "_" not in self.board:
            return f"Correct! You revealed the whole word {self.secret}.", reward + 0.5, Outcome.WON
        return f"Turn {self.turn}: the word has {found} {letter}.", reward, Outcome.ONGOING

    def random_move(self) -> str:
        rng = self.action_rng
        if rng.random() < 0.5:
            return pick(rng, words.words_of_length(self.word_length, self.hardcore))
        return pick(rng, string.ascii_uppercase)

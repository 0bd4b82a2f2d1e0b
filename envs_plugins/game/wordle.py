"""Wordle: find a secret word from letter-by-letter feedback."""

from __future__ import annotations

from functools import cache, lru_cache
from itertools import compress
from operator import ne

from gem_envs.game import words
from gem_envs.game.base import GameEnv, Outcome, Reward, check_positive, ListedMoves


class WordleEnv(GameEnv):
    """Guess a secret ``word_length``-letter word (from the basic word list) within ``max_turns``.

    Each new guess is marked letter by letter: G (right letter, right place), Y (in the word,
    elsewhere) or X (not in the word, or no more copies of it). Every position that turns green
    for the first time earns ``0.5 / word_length``; finding the word earns a further 0.5, so a
    solved word has earned 1 in total. A guess of the wrong length, repeated, or (with
    ``only_real_words``) not in the dictionary is invalid. With ``word_length`` or ``max_turns``
    None each episode draws a length of 3-5 letters and gives 5 turns per letter.
    """

    action_format = "\\boxed{WORD}"

    def __init__(self, word_length: int | None = 5, only_real_words: bool = True, max_turns: int | None = 20):
        self.random_settings = word_length is None or max_turns is None
        self.only_real_words = bool(only_real_words)
        if not self.random_settings:
            check_positive("word_length", word_length, minimum=3)
            check_positive("max_turns", max_turns)
            words.check_length(word_length)
        self.word_length = word_length or 5
        self.max_turns = max_turns or 25
        self.secret = ""
        self.guesses: set[str] = set()
        self.greens = [False] * self.word_length

    def new_game(self) -> None:
        rng = self.rng
        if self.random_settings:
            self.word_length = rng.randint(3, 5)
            self.max_turns = self.word_length * 5
        self.secret = rng.choice(words.words_of_length(self.word_length))
        self.guesses = set()
        self.greens = [False] * self.word_length
        self.listed = _listed_words(self.word_length)

    def instructions(self) -> str:
        return _instructions(self.only_real_words, self.word_length, self.max_turns)

    def task_suffix(self) -> str:
        return "Enter your guess."

    def parse_move(self, answer: str) -> str | None:
        guess = "".join(answer.split())
        if not (guess.isascii() and guess.isalpha()):
            return None
        return guess.upper()

    def play(self, guess: str) -> tuple[str, float, Outcome]:
        if len(guess) != self.word_length:
            return (
                f"Turn {self.turn}: {guess} has {len(guess)} letters; the secret word has {self.word_length}.",
                Reward.INVALID, Outcome.INVALID,
            )
        if guess in self.guesses:
            return f"Turn {self.turn}: you already guessed {guess}.", Reward.INVALID, Outcome.INVALID
        # (a listed word is from the basic list, so in the dictionary: a small, hot look-up first)
        if self.only_real_words and guess not in self.listed.by_text and guess not in words.dictionary():
            return f"Turn {self.turn}: {guess} is not in the word list.", Reward.INVALID, Outcome.INVALID
        self.guesses.add(guess)
        marks = mark_guess(self.secret, guess)
        greens = self.greens
        new_greens = 0
        if "G" in marks:
            for i, mark in enumerate(marks):
                if mark == "G" and not greens[i]:
                    greens[i] = True
                    new_greens += 1
        reward = 0.5 * new_greens / self.word_length
        if guess == self.secret:
            return f"Correct! The word was {self.secret}; you found it in {self.turn} turns.", reward + 0.5, Outcome.WON
        return (
            f"Turn {self.turn}: you guessed {guess}.\n{_spaced(guess)}\n{' '.join(marks)}",
            reward, Outcome.ONGOING,
        )


def mark_guess(secret: str, guess: str) -> list[str]:
    """Wordle marks for ``guess``: G, Y or X per letter (duplicates are matched once each)."""
    unmatched = "".join(compress(secret, map(ne, secret, guess)))  # secret letters left for Y
    marks = []
    for s, g in zip(secret, guess):
        if s == g:
            marks.append("G")
        elif g in unmatched:
            unmatched = unmatched.replace(g, "", 1)
            marks.append("Y")
        else:
            marks.append("X")
    return marks


@lru_cache(maxsize=8192)
def _spaced(word: str) -> str:
    return " ".join(word)


@cache
def _listed_words(length: int) -> ListedMoves[str]:
    return ListedMoves.of((word, word) for word in words.words_of_length(length))


def _example_word(length: int) -> str:
    """A word the prompt shows as an example: PLANET's first letters if they are a word, else the
    first listed word of that length."""
    listed = words.words_of_length(length)
    return "PLANET"[:length] if "PLANET"[:length] in listed else listed[0]


@cache
def _instructions(real_words: bool, length: int, turns: int) -> str:
    real = " It must be a real English word." if real_words else ""
    return (
        "Let's play Wordle.\n"
        f"Find my secret {length}-letter English word within {turns} turns. "
        f"Put each guess in \\boxed{{}}, for example \\boxed{{{_example_word(length)}}}.{real}\n"
        "After each guess I mark every letter:\n"
        "  G (green): the right letter in the right place\n"
        "  Y (yellow): the letter is in the word but in another place\n"
        "  X (grey): the letter is not in the word (or not that many times)\n"
        "Only the last \\boxed{} counts."
    )

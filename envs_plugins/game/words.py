"""The word lists and crossword clues that ship with the game pack (see ``data/NOTICE.txt``).

Lists load on first use and are cached for the process; environments look them up by key
instead of holding them, so cloning an environment never copies a word list.
"""

from __future__ import annotations

import gzip
import json
from functools import cache
from importlib import resources
from typing import NamedTuple

from gem_envs.game.base import GameSettingsError

_DATA = "gem_envs.game.data"


def _read_text(name: str) -> str:
    raw = resources.files(_DATA).joinpath(name).read_bytes()
    if name.endswith(".gz"):
        raw = gzip.decompress(raw)
    return raw.decode("utf-8")


@cache
def basic_words() -> tuple[str, ...]:
    """About 2,800 common English words of 3-10 letters, lower case, sorted."""
    return tuple(_read_text("basic_words.txt").split())


@cache
def english_words() -> tuple[str, ...]:
    """About 133,000 English words of 3-10 letters, lower case, sorted (includes the basic ones)."""
    return tuple(_read_text("english_words.txt.gz").split())


@cache
def dictionary() -> frozenset[str]:
    """Every known word, upper case, for checking guesses."""
    return frozenset(_read_text("english_words.txt.gz").upper().split())


@cache
def words_of_length(length: int, hardcore: bool = False) -> tuple[str, ...]:
    """Upper-case words of ``length`` letters: from the basic list, or every word if ``hardcore``."""
    source = english_words() if hardcore else basic_words()
    return tuple(word.upper() for word in source if len(word) == length)


def check_length(length: int, hardcore: bool = False) -> None:
    """Raise :class:`GameSettingsError` when the list has no word of ``length`` letters."""
    if not words_of_length(length, hardcore):
        raise GameSettingsError(f"The word list has no {length}-letter words; choose a length from 3 to 10.")


@cache
def upper_words(hardcore: bool = False) -> tuple[str, ...]:
    """Every upper-case word of the basic list, or of the full list if ``hardcore``."""
    return tuple(word.upper() for word in (english_words() if hardcore else basic_words()))


class Clue(NamedTuple):
    word: str  # upper case
    clue: str


@cache
def crossword_clues(hardcore: bool = False) -> tuple[Clue, ...]:
    """Crossword entries: everyday words, or rarer ones if ``hardcore``."""
    level = "hard" if hardcore else "easy"
    entries = []
    for line in _read_text("crossword_clues.jsonl").splitlines():
        if line.strip():
            row = json.loads(line)
            if row["level"] == level:
                entries.append(Clue(row["word"].upper(), row["clue"]))
    return tuple(entries)

"""Laying words out on a square letter grid, shared by Crosswords and WordSearch."""

from __future__ import annotations

import random
from typing import NamedTuple

ACROSS, DOWN = "across", "down"
EMPTY = "."
_RANDOM_TRIES = 30  # random spots tried for a word-search word before scanning every spot


class Placement(NamedTuple):
    word: str
    row: int
    col: int
    direction: str  # ACROSS or DOWN

    def cells(self) -> list[tuple[int, int]]:
        dr, dc = (0, 1) if self.direction == ACROSS else (1, 0)
        return [(self.row + dr * k, self.col + dc * k) for k in range(len(self.word))]


class WordGrid:
    """A square grid of letters (``EMPTY`` where none) and the words placed on it.

    ``crossword`` placements follow crossword rules: every word after the first crosses a
    placed word at right angles, and words never touch except where they cross, so each run of
    letters is exactly one word. Otherwise (word search) a word may go anywhere it fits, sharing
    letters only with words that run the other way.
    """

    def __init__(self, size: int, crossword: bool):
        self.size = size
        self.crossword = crossword
        self.letters = [[EMPTY] * size for _ in range(size)]
        self.used = [[""] * size for _ in range(size)]  # directions of the words through each cell
        self.placements: list[Placement] = []

    def place_randomly(self, word: str, rng: random.Random) -> bool:
        """Place ``word`` at a random valid position; False if it fits nowhere."""
        if not self.placements:
            direction = rng.choice((ACROSS, DOWN))
            middle, start = self.size // 2, (self.size - len(word)) // 2
            options = [(middle, start, direction) if direction == ACROSS else (start, middle, direction)]
        elif self.crossword:
            options = self._crossing_spots(word)
        else:  # a few random spots first: cheap, and almost always one fits
            options = [self._random_spot(word, rng) for _ in range(_RANDOM_TRIES)]
            if not any(spot and self._fits(word, *spot) for spot in options):
                options = [(r, c, d) for d in (ACROSS, DOWN) for r in range(self.size) for c in range(self.size)]
        options = [spot for spot in options if spot and self._fits(word, *spot)]
        if not options:
            return False
        row, col, direction = rng.choice(options)
        placement = Placement(word, row, col, direction)
        for (r, c), letter in zip(placement.cells(), word):
            self.letters[r][c] = letter
            self.used[r][c] += direction[0]
        self.placements.append(placement)
        return True

    def _crossing_spots(self, word: str) -> list[tuple[int, int, str]]:
        """Every start that lays ``word`` across a placed letter at right angles."""
        spots = set()
        for p in self.placements:
            direction = DOWN if p.direction == ACROSS else ACROSS
            dr, dc = (0, 1) if direction == ACROSS else (1, 0)
            for (r, c), letter in zip(p.cells(), p.word):
                for k, mine in enumerate(word):
                    if mine == letter and r - dr * k >= 0 and c - dc * k >= 0:
                        spots.add((r - dr * k, c - dc * k, direction))
        return sorted(spots)

    def _random_spot(self, word: str, rng: random.Random) -> tuple[int, int, str] | None:
        span = self.size - len(word)
        if span < 0:
            return None
        if rng.random() < 0.5:
            return rng.randrange(self.size), rng.randint(0, span), ACROSS
        return rng.randint(0, span), rng.randrange(self.size), DOWN

    def _fits(self, word: str, row: int, col: int, direction: str) -> bool:
        size, letters, used = self.size, self.letters, self.used
        dr, dc = (0, 1) if direction == ACROSS else (1, 0)
        end_r, end_c = row + dr * (len(word) - 1), col + dc * (len(word) - 1)
        if end_r >= size or end_c >= size:
            return False
        crossings = 0
        for k, letter in enumerate(word):
            r, c = row + dr * k, col + dc * k
            here = letters[r][c]
            if here != EMPTY:
                if here != letter or direction[0] in used[r][c]:
                    return False
                crossings += 1
            elif self.crossword:  # a new letter may not touch a parallel neighbour
                for nr, nc in ((r + dc, c + dr), (r - dc, c - dr)):
                    if 0 <= nr < size and 0 <= nc < size and letters[nr][nc] != EMPTY:
                        return False
        if not self.crossword:
            return True
        before, after = (row - dr, col - dc), (end_r + dr, end_c + dc)
        for r, c in (before, after):
            if 0 <= r < size and 0 <= c < size and letters[r][c] != EMPTY:
                return False
        return (crossings > 0 or not self.placements) and crossings < len(word)


def lay_out(words: list[str], size: int, rng: random.Random, crossword: bool) -> WordGrid | None:
    """A grid holding every word of ``words`` (longest first), or None if one does not fit."""
    grid = WordGrid(size, crossword)
    for word in sorted(words, key=len, reverse=True):
        if not grid.place_randomly(word, rng):
            return None
    return grid

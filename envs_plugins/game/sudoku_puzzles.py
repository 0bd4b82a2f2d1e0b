"""Sudoku generation and solving with bitmasks.

A grid is a flat row-major list of ``n * n`` ints (0 = empty) for ``n`` = 4 or 9. Digits are
kept as bits in one mask per row, column and box, and the search always branches on the cell
with the fewest candidates, which makes uniqueness checks cheap enough to run per removed cell.
"""

from __future__ import annotations

import math
import random
from functools import cache
from typing import NamedTuple


class Geometry(NamedTuple):
    n: int
    row: tuple[int, ...]  # row of each cell
    col: tuple[int, ...]
    box: tuple[int, ...]
    full: int  # mask with every digit
    popcount: tuple[int, ...]  # popcount of every mask


@cache
def geometry(n: int) -> Geometry:
    """The row, column and box of every cell of an ``n`` x ``n`` Sudoku."""
    b = math.isqrt(n)
    cells = range(n * n)
    return Geometry(
        n,
        tuple(i // n for i in cells),
        tuple(i % n for i in cells),
        tuple((i // n) // b * b + (i % n) // b for i in cells),
        (1 << n) - 1,
        tuple(bin(m).count("1") for m in range(1 << n)),
    )


class _Board:
    """A grid with its row, column and box masks, kept in step."""

    __slots__ = ("g", "grid", "rows", "cols", "boxes")

    def __init__(self, grid: list[int], g: Geometry):
        self.g = g
        self.grid = grid
        self.rows = [0] * g.n
        self.cols = [0] * g.n
        self.boxes = [0] * g.n
        for i, v in enumerate(grid):
            if v:
                self.set(i, v)

    def set(self, i: int, v: int) -> None:
        bit = 1 << (v - 1)
        g = self.g
        self.grid[i] = v
        self.rows[g.row[i]] |= bit
        self.cols[g.col[i]] |= bit
        self.boxes[g.box[i]] |= bit

    def clear(self, i: int) -> None:
        g = self.g
        bit = ~(1 << (self.grid[i] - 1))
        self.grid[i] = 0
        self.rows[g.row[i]] &= bit
        self.cols[g.col[i]] &= bit
        self.boxes[g.box[i]] &= bit

    def candidates(self, i: int) -> int:
        g = self.g
        return g.full & ~(self.rows[g.row[i]] | self.cols[g.col[i]] | self.boxes[g.box[i]])

    def search(self, empties: list[int], count: int, limit: int, rng: random.Random | None = None) -> int:
        """Count solutions (up to ``limit``) filling ``empties[:count]``; with ``rng`` digits are
        tried in random order and the first solution is left in the grid."""
        if count == 0:
            return 1
        g = self.g
        row, col, box, full, popcount = g.row, g.col, g.box, g.full, g.popcount
        rows, cols, boxes = self.rows, self.cols, self.boxes
        best_j, best_mask, best_n = -1, 0, 99
        for j in range(count):
            i = empties[j]
            mask = full & ~(rows[row[i]] | cols[col[i]] | boxes[box[i]])
            if not mask:
                return 0
            n = popcount[mask]
            if n < best_n:
                best_j, best_mask, best_n = j, mask, n
                if n == 1:
                    break
        last = count - 1
        empties[best_j], empties[last] = empties[last], empties[best_j]
        i = empties[last]
        digits = [d + 1 for d in range(g.n) if best_mask >> d & 1]
        if rng is not None:
            rng.shuffle(digits)
        found = 0
        for v in digits:
            self.set(i, v)
            found += self.search(empties, last, limit - found, rng)
            if found >= limit:
                if rng is None:
                    self.clear(i)
                break
            self.clear(i)
        empties[best_j], empties[last] = empties[last], empties[best_j]
        return found


def random_solution(n: int, rng: random.Random) -> list[int]:
    """A random complete ``n`` x ``n`` Sudoku grid."""
    board = _Board([0] * (n * n), geometry(n))
    empties = list(range(n * n))
    board.search(empties, len(empties), 1, rng)
    return board.grid


def count_solutions(puzzle: list[int], limit: int = 2) -> int:
    """The number of solutions of ``puzzle``, counting no further than ``limit``."""
    n = math.isqrt(len(puzzle))
    board = _Board(list(puzzle), geometry(n))
    empties = [i for i, v in enumerate(puzzle) if not v]
    return board.search(empties, len(empties), limit)


def make_puzzle(n: int, removals: int, rng: random.Random) -> tuple[list[int], list[int]]:
    """``(solution, puzzle)``: a random solution, and that grid with up to ``removals`` cells
    emptied. Cells are tried in random order and a cell stays filled when emptying it would
    allow a second solution, so the puzzle's only solution is ``solution``."""
    solution = random_solution(n, rng)
    board = _Board(solution[:], geometry(n))
    cells = list(range(n * n))
    rng.shuffle(cells)
    empties: list[int] = []
    for i in cells[:removals]:
        value = board.grid[i]
        board.clear(i)
        if _has_other_solution(board, i, value, empties):
            board.set(i, value)
        else:
            empties.append(i)
    return solution, board.grid


def _has_other_solution(board: _Board, cell: int, value: int, empties: list[int]) -> bool:
    """Whether the board (unique before ``cell`` was emptied) has a solution with another
    digit than ``value`` at ``cell``."""
    others = board.candidates(cell) & ~(1 << (value - 1))
    if not others:
        return False
    work = empties[:]
    for d in range(board.g.n):
        if others >> d & 1:
            board.set(cell, d + 1)
            found = board.search(work, len(work), 1)
            board.clear(cell)
            if found:
                return True
    return False

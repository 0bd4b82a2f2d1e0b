"""Sudoku: fill the grid so that no row, column or box repeats a digit."""

from __future__ import annotations

import math
import re
from functools import cache

from gem_envs.game.base import GameEnv, GameSettingsError, Outcome, Reward, check_positive
from gem_envs.game.sudoku_puzzles import make_puzzle

#: (scale, clues, max_turns) drawn per episode by the -random variant.
RANDOM_SETTINGS = ((4, 10, 15), (9, 50, 50))

_MOVE = re.compile(r"(-?\d{1,9})[\s,]+(-?\d{1,9})[\s,]+(-?\d{1,9})")


class SudokuEnv(GameEnv):
    """Fill a ``scale`` x ``scale`` Sudoku (4 or 9) within ``max_turns``, one cell per turn.

    The puzzle is a random solved grid with up to ``clues`` cells emptied (the name follows the
    reference implementation: it counts the cells to empty), keeping only removals that leave a
    unique solution. A move ``ROW COL DIGIT`` (1-based) that matches the solution earns
    ``1 / cells to fill``; the game is won when the grid is full. Writing a filled cell, a digit
    that is not the solution's, or anything out of range is invalid. Any None setting draws
    ``(scale, clues, max_turns)`` per episode from :data:`RANDOM_SETTINGS`.
    """

    action_format = "\\boxed{ROW COL DIGIT}"

    def __init__(self, clues: int | None = 30, max_turns: int | None = 100, scale: int | None = 9):
        self.random_settings = clues is None or max_turns is None or scale is None
        if not self.random_settings:
            if scale not in (4, 9):
                raise GameSettingsError(f"scale must be 4 or 9, got {scale!r}.")
            check_positive("clues", clues)
            check_positive("max_turns", max_turns)
            if clues >= scale * scale:
                raise GameSettingsError(f"clues (cells to empty) must be below {scale * scale}, got {clues}.")
        self.scale, self.clues, self.max_turns = (
            RANDOM_SETTINGS[1] if self.random_settings else (scale, clues, max_turns)
        )
        self.solution: list[int] = []
        self.board: list[int] = []
        self.to_fill = 1
        self.empty_left = 0

    def new_game(self) -> None:
        if self.random_settings:
            self.scale, self.clues, self.max_turns = self.rng.choice(RANDOM_SETTINGS)
        self.solution, self.board = make_puzzle(self.scale, self.clues, self.rng)
        self.to_fill = self.empty_left = self.board.count(0)

    def instructions(self) -> str:
        n = self.scale
        b = math.isqrt(n)
        i = self.board.index(0)  # the example names the first empty cell (a legal move is a correct one)
        row, col, digit = i // n + 1, i % n + 1, self.solution[i]
        return (
            f"Let's play Sudoku on a {n}x{n} grid.\n"
            f"Rows and columns are numbered 1 to {n}. Empty cells are shown as '.'.\n"
            f"Fill every empty cell with a digit from 1 to {n} so that each row, each column and "
            f"each {b}x{b} box contains every digit exactly once. The puzzle has exactly one solution.\n"
            f"Fill one cell per turn by writing \\boxed{{ROW COL DIGIT}}, e.g. \\boxed{{{row} {col} {digit}}} puts "
            f"{digit} in row {row}, column {col}. Do not overwrite filled cells; a digit that breaks the rules "
            f"is rejected. You have {self.max_turns} turns. Only the last \\boxed{{}} counts."
        )

    def task_suffix(self) -> str:
        return f"Here is the grid:\n{self.render()}\nEnter your move."

    def render(self) -> str:
        return _grid_template(self.scale) % tuple(map(_CELLS.__getitem__, self.board))

    def parse_move(self, answer: str) -> tuple[int, int, int] | None:
        match = _MOVE.fullmatch(answer)
        return None if match is None else (int(match[1]), int(match[2]), int(match[3]))

    def play(self, move: tuple[int, int, int]) -> tuple[str, float, Outcome]:
        row, col, digit = move
        n = self.scale
        if not (1 <= row <= n and 1 <= col <= n and 1 <= digit <= n):
            return (
                f"Turn {self.turn}: row, column and digit must each be from 1 to {n}; got {row} {col} {digit}.",
                Reward.INVALID, Outcome.INVALID,
            )
        i = (row - 1) * n + col - 1
        if self.board[i]:
            return f"Turn {self.turn}: R{row} C{col} is already filled.", Reward.INVALID, Outcome.INVALID
        if self.solution[i] != digit:
            why = (
                "repeats a digit in its row, column or box" if self._conflicts(i, digit)
                else "breaks no rule yet but leaves the puzzle without a solution"
            )
            return f"Turn {self.turn}: {digit} at R{row} C{col} {why}.", Reward.INVALID, Outcome.INVALID
        self.board[i] = digit
        self.empty_left -= 1
        self._suffix = None
        reward = 1 / self.to_fill
        if self.empty_left == 0:
            return f"You completed the Sudoku in {self.turn} turns. You win!", reward, Outcome.WON
        return f"Turn {self.turn}: {digit} at R{row} C{col} is correct.", reward, Outcome.ONGOING

    def _conflicts(self, i: int, digit: int) -> bool:
        n, b = self.scale, math.isqrt(self.scale)
        row, col = divmod(i, n)
        top, left = row - row % b, col - col % b
        board = self.board
        return (
            digit in board[row * n:(row + 1) * n]
            or any(board[r * n + col] == digit for r in range(n))
            or any(board[r * n + c] == digit for r in range(top, top + b) for c in range(left, left + b))
        )

    def random_move(self) -> str:
        uniform = self.action_rng.random
        n, board = self.scale, self.board
        for _ in range(8):  # random probes find an empty cell fast while many are left
            i = int(uniform() * n * n)
            if not board[i]:
                break
        else:
            empty = [i for i, v in enumerate(board) if not v] or list(range(n * n))
            i = empty[int(uniform() * len(empty))]
        return f"{i // n + 1} {i % n + 1} {1 + int(uniform() * n)}"


#: How a cell shows, by its digit (0: empty).
_CELLS = tuple(f" {d or '.'}" for d in range(10)) + tuple(f" {d}" for d in range(10, 100))


@cache
def _grid_template(n: int) -> str:
    """The grid of an ``n`` x ``n`` Sudoku with column and row labels, a ``%s`` per cell."""
    b = math.isqrt(n)
    header = "    " + " | ".join(
        " ".join(f"C{c + 1}" for c in range(start, start + b)) for start in range(0, n, b)
    )
    row_cells = " | ".join(" ".join(["%s"] * b) for _ in range(0, n, b))
    lines = [header.replace("%", "%%")]
    for r in range(n):
        if r and r % b == 0:
            lines.append("    " + "-" * (len(header) - 4))
        lines.append(f"R{r + 1:<2} {row_cells}")
    return "\n".join(lines)

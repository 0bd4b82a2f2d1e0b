"""Minesweeper: reveal every safe cell without hitting a mine."""

from __future__ import annotations

import re
from functools import cache

from gem_envs.game.base import GameEnv, GameSettingsError, Outcome, Reward, check_positive, ListedMoves

_MOVE = re.compile(r"([A-Za-z]+)[\s,]+(-?\d{1,9})[\s,]+(-?\d{1,9})")
MINE = -1


class MinesweeperEnv(GameEnv):
    """Reveal every cell without a mine on a ``rows`` x ``cols`` board within ``max_turns``.

    Moves are ``reveal ROW COL`` and ``flag ROW COL`` (0-based; flag toggles). Mines are laid
    after the first reveal, never in the 3x3 block around it. A reveal earns the number of newly
    revealed cells (zeros open their neighbours) over the number of safe cells, so clearing the
    board earns 1 in total; the game is won when every safe cell is revealed. Revealing a mine
    ends the game with ``Reward.FAIL``. Revealing a revealed or flagged cell, flagging a revealed
    cell, a cell off the board or an unknown command is invalid. Any None setting draws a square
    board of side 5-8 per episode with side**2 // 5 mines and side**2 turns.
    """

    action_format = "\\boxed{reveal ROW COL} or \\boxed{flag ROW COL}"

    def __init__(
        self,
        rows: int | None = 8,
        cols: int | None = 8,
        num_mines: int | None = 10,
        max_turns: int | None = 20,
    ):
        self.random_settings = rows is None or cols is None or num_mines is None or max_turns is None
        if not self.random_settings:
            check_positive("rows", rows)
            check_positive("cols", cols)
            check_positive("num_mines", num_mines)
            check_positive("max_turns", max_turns)
            if num_mines >= rows * cols:
                raise GameSettingsError(
                    f"num_mines must leave at least one safe cell: {num_mines} mines on a {rows}x{cols} board."
                )
            self.rows, self.cols, self.num_mines, self.max_turns = rows, cols, num_mines, max_turns
        else:
            self.rows = self.cols = 8
            self.num_mines, self.max_turns = 12, 64
        self._clear()

    def _clear(self) -> None:
        size = self.rows * self.cols
        self.counts = [0] * size  # MINE or the number of adjacent mines
        self.revealed = bytearray(size)
        self.flagged = bytearray(size)
        self.shown = [" ."] * size  # what the board shows in each cell
        self.mines_laid = False
        self.safe_left = size - self.num_mines

    def new_game(self) -> None:
        if self.random_settings:
            side = self.rng.randint(5, 8)
            self.rows = self.cols = side
            self.num_mines = side * side // 5
            self.max_turns = side * side
        self._clear()
        self.listed = _listed_cells(self.rows, self.cols)

    def instructions(self) -> str:
        return (
            "Let's play Minesweeper.\n"
            f"The board has {self.rows} rows and {self.cols} columns (numbered from 0) and hides "
            f"{self.num_mines} mines. Reveal every cell that is not a mine within {self.max_turns} turns.\n"
            "Moves:\n"
            "- \\boxed{reveal ROW COL} reveals a cell, e.g. \\boxed{reveal 2 3} for row 2, column 3.\n"
            "- \\boxed{flag ROW COL} puts a flag on a cell you think hides a mine, or removes it.\n"
            "On the board '.' is a hidden cell, 'F' a flag, and a digit the number of mines among "
            "the 8 neighbours of a revealed cell. Your first reveal is always safe. Do not reveal "
            "cells that are already revealed or flagged. Only the last \\boxed{} counts."
        )

    def task_suffix(self) -> str:
        return f"Here is the board:\n{self.render()}\nEnter your move."

    def render(self) -> str:
        cols, shown = self.cols, self.shown
        return "\n".join([_header(cols), *[
            label + " ".join(shown[start:start + cols]) for label, start in _row_starts(self.rows, cols)
        ]])

    def parse_move(self, answer: str) -> tuple[str, int, int] | None:
        match = _MOVE.fullmatch(answer)
        if match is None:
            return None
        return match.group(1).lower(), int(match.group(2)), int(match.group(3))

    def play(self, move: tuple[str, int, int]) -> tuple[str, float, Outcome]:
        command, row, col = move
        if command not in ("reveal", "flag"):
            return (
                f"Turn {self.turn}: unknown command '{command}'; use reveal or flag.",
                Reward.INVALID, Outcome.INVALID,
            )
        if not (0 <= row < self.rows and 0 <= col < self.cols):
            return (
                f"Turn {self.turn}: cell ({row}, {col}) is off the board.",
                Reward.INVALID, Outcome.INVALID,
            )
        index = row * self.cols + col
        if command == "flag":
            if self.revealed[index]:
                return f"Turn {self.turn}: cell ({row}, {col}) is already revealed.", Reward.INVALID, Outcome.INVALID
            self.flagged[index] ^= 1
            self.shown[index] = " F" if self.flagged[index] else " ."
            self._suffix = None
            verb = "placed a flag on" if self.flagged[index] else "removed the flag from"
            return f"Turn {self.turn}: you {verb} cell ({row}, {col}).", Reward.STEP, Outcome.ONGOING
        if self.revealed[index] or self.flagged[index]:
            state = "revealed" if self.revealed[index] else "flagged"
            return f"Turn {self.turn}: cell ({row}, {col}) is already {state}.", Reward.INVALID, Outcome.INVALID
        if not self.mines_laid:
            self._lay_mines(index)
        self._suffix = None
        if self.counts[index] == MINE:
            self.revealed[index] = 1
            self.shown[index] = " *"
            return f"Boom! Cell ({row}, {col}) hides a mine. Game over.", Reward.FAIL, Outcome.LOST
        opened = self._reveal_from(index)
        self.safe_left -= opened
        reward = opened / (self.rows * self.cols - self.num_mines)
        if self.safe_left == 0:
            return "You revealed every safe cell and cleared the board. You win!", reward, Outcome.WON
        return f"Turn {self.turn}: you revealed {opened} cell(s) from ({row}, {col}).", reward, Outcome.ONGOING

    def _lay_mines(self, first: int) -> None:
        rows, cols = self.rows, self.cols
        r0, c0 = divmod(first, cols)
        candidates = [
            i for i in range(rows * cols) if abs(i // cols - r0) > 1 or abs(i % cols - c0) > 1
        ]
        if len(candidates) < self.num_mines:  # a crowded board: only the first cell is kept safe
            candidates = [i for i in range(rows * cols) if i != first]
        counts = [0] * (rows * cols)
        neighbours = _neighbours(rows, cols)
        for mine in self.rng.sample(candidates, self.num_mines):
            counts[mine] = MINE
        for mine, value in enumerate(counts):
            if value == MINE:
                for n in neighbours[mine]:
                    if counts[n] != MINE:
                        counts[n] += 1
        self.counts = counts
        self.mines_laid = True

    def _reveal_from(self, start: int) -> int:
        """Reveal ``start`` and flood through zero cells; return how many cells opened."""
        counts, revealed, flagged, shown = self.counts, self.revealed, self.flagged, self.shown
        neighbours = _neighbours(self.rows, self.cols)
        revealed[start] = 1
        shown[start] = _DIGITS[counts[start]]
        opened = 1
        stack = [start] if counts[start] == 0 else []
        while stack:
            for n in neighbours[stack.pop()]:
                if not revealed[n] and not flagged[n]:
                    revealed[n] = 1
                    shown[n] = _DIGITS[counts[n]]
                    opened += 1
                    if counts[n] == 0:
                        stack.append(n)
        return opened

    def random_move(self) -> str:
        uniform = self.action_rng.random
        command = "flag" if uniform() < 0.1 else "reveal"
        return f"{command} {int(uniform() * self.rows)} {int(uniform() * self.cols)}"


_DIGITS = tuple(f"{d:>2}" for d in range(9))


@cache
def _row_starts(rows: int, cols: int) -> tuple[tuple[str, int], ...]:
    """Each row's label and the index of its first cell."""
    return tuple((f"{r:>2} ", r * cols) for r in range(rows))


@cache
def _listed_cells(rows: int, cols: int) -> ListedMoves[tuple[str, int, int]]:
    """Reveal and flag moves on every cell, by their usual text (random moves are not drawn from
    this list: they flag a tenth of the time)."""
    moves = ((f"{command} {r} {c}", (command, r, c)) for command in ("reveal", "flag") for r in range(rows) for c in range(cols))
    return ListedMoves.of(moves, random_from_list=False)


@cache
def _header(cols: int) -> str:
    return "   " + " ".join(f"{c:>2}" for c in range(cols))


@cache
def _neighbours(rows: int, cols: int) -> tuple[tuple[int, ...], ...]:
    """The indices of the up-to-8 neighbours of each cell of a ``rows`` x ``cols`` board."""
    result = []
    for r in range(rows):
        for c in range(cols):
            result.append(tuple(
                rr * cols + cc
                for rr in range(max(r - 1, 0), min(r + 2, rows))
                for cc in range(max(c - 1, 0), min(c + 2, cols))
                if (rr, cc) != (r, c)
            ))
    return tuple(result)

"""Crosswords: fill a small crossword from its clues, one letter per turn."""

from __future__ import annotations

import re
import string

from gem_envs.game import words
from gem_envs.game.base import GameEnv, GameSettingsError, Outcome, Reward, check_positive
from gem_envs.game.word_grid import EMPTY, Placement, lay_out

#: Words and turns of the -random variant (which also draws ``hardcore`` per episode).
RANDOM_NUM_WORDS, RANDOM_MAX_TURNS = 3, 20
HIDDEN = "_"

_MOVE = re.compile(r"(-?\d{1,9})[\s,]+(-?\d{1,9})[\s,]+([A-Za-z])")


class CrosswordsEnv(GameEnv):
    """Fill a crossword of ``num_words`` words, one letter per turn, within ``max_turns``.

    Words and clues come from the clue list that ships with the pack: everyday words, or rarer
    ones if ``hardcore``. Every word crosses another at right angles. A move is ``ROW COL
    LETTER`` (0-based). A right letter earns ``1 / letter cells`` and the game is won when the
    grid is full; a wrong letter earns ``Reward.STEP``; a black cell, a filled cell or a cell off
    the grid is invalid. With any setting None, each episode draws ``hardcore`` at random and
    uses 3 words and 20 turns.
    """

    action_format = "\\boxed{ROW COL LETTER}"

    def __init__(self, hardcore: bool | None = False, max_turns: int | None = 100, num_words: int | None = 5):
        self.random_settings = hardcore is None or max_turns is None or num_words is None
        if not self.random_settings:
            check_positive("max_turns", max_turns)
            check_positive("num_words", num_words)
            available = len(words.crossword_clues(bool(hardcore)))
            if num_words > available:
                raise GameSettingsError(f"num_words must be at most {available}, got {num_words}.")
        self.hardcore = bool(hardcore)
        self.max_turns = max_turns or RANDOM_MAX_TURNS
        self.num_words = num_words or RANDOM_NUM_WORDS
        self.solution: list[list[str]] = []
        self.board: list[list[str]] = []
        self.placements: list[Placement] = []
        self.clues: list[tuple[str, str, int]] = []  # (clue, direction, length)
        self.letter_cells = 1
        self.hidden_left = 0

    def new_game(self) -> None:
        rng = self.rng
        if self.random_settings:
            self.hardcore = rng.random() < 0.5
            self.num_words, self.max_turns = RANDOM_NUM_WORDS, RANDOM_MAX_TURNS
        entries = words.crossword_clues(self.hardcore)
        for _ in range(1000):
            chosen = rng.sample(entries, self.num_words)
            size = round(1.5 * max(len(e.word) for e in chosen))
            grid = lay_out([e.word for e in chosen], size, rng, crossword=True)
            if grid is not None:
                break
        else:  # pragma: no cover - needs a clue list whose words share no letter
            raise GameSettingsError(f"Could not lay out {self.num_words} crossing words; use fewer words.")
        clue_of = {e.word: e.clue for e in chosen}
        self.solution = grid.letters
        self.board = [[EMPTY if ch == EMPTY else HIDDEN for ch in row] for row in grid.letters]
        self.placements = grid.placements
        self.clues = [(clue_of[p.word], p.direction, len(p.word)) for p in grid.placements]
        self.letter_cells = self.hidden_left = sum(row.count(HIDDEN) for row in self.board)

    def instructions(self) -> str:
        row, col = next((r, c) for r, line in enumerate(self.board) for c, ch in enumerate(line) if ch == HIDDEN)
        return (
            "Let's play Crosswords.\n"
            "Fill the grid from the clues. Rows and columns are numbered from 0; '_' is a letter "
            "to find and '.' a black cell. Each turn, write one letter as \\boxed{ROW COL LETTER}, "
            f"e.g. \\boxed{{{row} {col} E}}. You have {self.max_turns} turns. Only the last \\boxed{{}} counts."
        )

    def task_suffix(self) -> str:
        clues = "\n".join(
            f"{k}. {clue} ({direction}, {length} letters)" for k, (clue, direction, length) in enumerate(self.clues, 1)
        )
        return f"Here is the grid:\n{self.render()}\nClues:\n{clues}\nEnter your move."

    def render(self) -> str:
        size = len(self.board)
        lines = ["    " + " ".join(f"C{c:02}" for c in range(size))]
        for r, row in enumerate(self.board):
            lines.append(f"R{r:02} " + " ".join(f" {ch} " for ch in row))
        return "\n".join(lines)

    def parse_move(self, answer: str) -> tuple[int, int, str] | None:
        match = _MOVE.fullmatch(answer)
        return None if match is None else (int(match[1]), int(match[2]), match[3].upper())

    def play(self, move: tuple[int, int, str]) -> tuple[str, float, Outcome]:
        row, col, letter = move
        size = len(self.board)
        if not (0 <= row < size and 0 <= col < size):
            return f"Turn {self.turn}: ({row}, {col}) is off the grid.", Reward.INVALID, Outcome.INVALID
        cell = self.board[row][col]
        if cell == EMPTY:
            return f"Turn {self.turn}: ({row}, {col}) is a black cell.", Reward.INVALID, Outcome.INVALID
        if cell != HIDDEN:
            return f"Turn {self.turn}: ({row}, {col}) is already filled.", Reward.INVALID, Outcome.INVALID
        if self.solution[row][col] != letter:
            return f"Turn {self.turn}: {letter} is not the letter at ({row}, {col}).", Reward.STEP, Outcome.ONGOING
        self.board[row][col] = letter
        self.hidden_left -= 1
        self._suffix = None
        reward = 1 / self.letter_cells
        if self.hidden_left == 0:
            return f"You completed the crossword in {self.turn} turns. You win!", reward, Outcome.WON
        return f"Turn {self.turn}: {letter} at ({row}, {col}) is right.", reward, Outcome.ONGOING

    def random_move(self) -> str:
        uniform = self.action_rng.random
        board = self.board
        size = len(board)
        for _ in range(8):  # random probes find a hidden cell fast while many are left
            r, c = int(uniform() * size), int(uniform() * size)
            if board[r][c] == HIDDEN:
                break
        else:
            hidden = [(r, c) for r, row in enumerate(board) for c, ch in enumerate(row) if ch == HIDDEN] or [(0, 0)]
            r, c = hidden[int(uniform() * len(hidden))]
        return f"{r} {c} {string.ascii_uppercase[int(uniform() * 26)]}"

"""WordSearch: find hidden words in a grid of letters."""

from __future__ import annotations

import math
import re
import string

from gem_envs.game import words
from gem_envs.game.base import GameEnv, GameSettingsError, Outcome, Reward, check_positive
from gem_envs.game.word_grid import EMPTY, Placement, lay_out

#: Words and turns of the -random variant (which also draws ``hardcore`` per episode).
RANDOM_NUM_WORDS, RANDOM_MAX_TURNS = 5, 20

_MOVE = re.compile(r"(-?\d{1,9})[\s,]+(-?\d{1,9})[\s,]+(-?\d{1,9})[\s,]+(-?\d{1,9})")


class WordSearchEnv(GameEnv):
    """Find ``num_words`` words hidden across (left to right) or down (top to bottom) in a grid
    of random letters, within ``max_turns``.

    Words come from the basic word list, or the full dictionary if ``hardcore``; they are not
    shown. A move gives the start and end cells of a word, ``ROW COL ROW COL`` (0-based, either
    end first). A line that spells a hidden word not found yet earns ``1 / num_words`` (its
    letters are then shown in brackets) and the game is won when all are found. A line that
    spells none earns ``Reward.STEP``; a repeated line, a word already found, a diagonal line or
    cells off the grid are invalid. With any setting None, each episode draws ``hardcore`` at
    random and uses 5 words and 20 turns.
    """

    action_format = "\\boxed{START_ROW START_COL END_ROW END_COL}"

    def __init__(self, hardcore: bool | None = False, max_turns: int | None = 20, num_words: int | None = 5):
        self.random_settings = hardcore is None or max_turns is None or num_words is None
        if not self.random_settings:
            check_positive("max_turns", max_turns)
            check_positive("num_words", num_words)
            if num_words > 20:
                raise GameSettingsError(f"num_words must be at most 20, got {num_words}.")
        self.hardcore = bool(hardcore)
        self.max_turns = max_turns or RANDOM_MAX_TURNS
        self.num_words = num_words or RANDOM_NUM_WORDS
        self.grid: list[list[str]] = []
        self.placements: list[Placement] = []
        self.hidden: set[str] = set()
        self.found: set[str] = set()
        self.highlighted: set[tuple[int, int]] = set()
        self.tried: set[tuple[int, int, int, int]] = set()

    def new_game(self) -> None:
        rng = self.rng
        if self.random_settings:
            self.hardcore = rng.random() < 0.5
            self.num_words, self.max_turns = RANDOM_NUM_WORDS, RANDOM_MAX_TURNS
        pool = words.upper_words(self.hardcore)
        for _ in range(100):
            chosen = rng.sample(pool, self.num_words)
            # room for the longest word and, with many words, for all of their letters twice over
            size = max(round(1.5 * max(map(len, chosen))), math.isqrt(2 * sum(map(len, chosen))) + 1)
            layout = lay_out(chosen, size, rng, crossword=False)
            if layout is not None and len(set(chosen)) == len(chosen):
                break
        else:  # pragma: no cover - the grid grows with the words, so one of the tries fits
            raise GameSettingsError(f"Could not hide {self.num_words} words in a grid; use fewer words.")
        letters = string.ascii_uppercase
        self.grid = [[ch if ch != EMPTY else rng.choice(letters) for ch in row] for row in layout.letters]
        self.placements = layout.placements
        self.hidden = set(chosen)
        self.found = set()
        self.highlighted = set()
        self.tried = set()

    def instructions(self) -> str:
        return (
            "Let's play Word Search.\n"
            f"{self.num_words} English words are hidden in the grid, each written across (left to "
            "right) or down (top to bottom). Rows and columns are numbered from 0.\n"
            "Each turn, name the first and last cells of a word as \\boxed{START_ROW START_COL END_ROW END_COL}, "
            "e.g. \\boxed{2 1 2 5} for a word in row 2 from column 1 to column 5. Found words are "
            f"shown in [brackets]. Do not repeat a guess. You have {self.max_turns} turns. "
            "Only the last \\boxed{} counts."
        )

    def task_suffix(self) -> str:
        return (
            f"Here is the grid:\n{self.render()}\n"
            f"Words found: {len(self.found)} of {self.num_words}.\nEnter your move."
        )

    def render(self) -> str:
        size = len(self.grid)
        lines = ["    " + " ".join(f"C{c:02}" for c in range(size))]
        for r, row in enumerate(self.grid):
            cells = (f"[{ch}]" if (r, c) in self.highlighted else f" {ch} " for c, ch in enumerate(row))
            lines.append(f"R{r:02} " + " ".join(cells))
        return "\n".join(lines)

    def parse_move(self, answer: str) -> tuple[int, int, int, int] | None:
        match = _MOVE.fullmatch(answer)
        return None if match is None else (int(match[1]), int(match[2]), int(match[3]), int(match[4]))

    def play(self, move: tuple[int, int, int, int]) -> tuple[str, float, Outcome]:
        r1, c1, r2, c2 = move
        size = len(self.grid)
        span = f"({r1}, {c1}) to ({r2}, {c2})"
        if not all(0 <= v < size for v in move):
            return f"Turn {self.turn}: {span} leaves the grid.", Reward.INVALID, Outcome.INVALID
        if move in self.tried:
            return f"Turn {self.turn}: you already tried {span}.", Reward.INVALID, Outcome.INVALID
        self.tried.add(move)
        if r1 != r2 and c1 != c2:
            return f"Turn {self.turn}: {span} is not across or down.", Reward.INVALID, Outcome.INVALID
        cells = _line(r1, c1, r2, c2)
        text = "".join(self.grid[r][c] for r, c in cells)
        word = next((w for w in (text, text[::-1]) if w in self.hidden), None)
        if word is None:
            return f"Turn {self.turn}: no hidden word from {span}.", Reward.STEP, Outcome.ONGOING
        if word in self.found:
            return f"Turn {self.turn}: you already found {word}.", Reward.INVALID, Outcome.INVALID
        self.found.add(word)
        self.highlighted.update(cells)
        self._suffix = None
        reward = 1 / self.num_words
        if len(self.found) == self.num_words:
            return f"You found {word} and with it every word. You win!", reward, Outcome.WON
        return f"Turn {self.turn}: you found {word} at {span}.", reward, Outcome.ONGOING

    def random_move(self) -> str:
        uniform = self.action_rng.random
        size = len(self.grid)
        r, c, other = int(uniform() * size), int(uniform() * size), int(uniform() * size)
        return f"{r} {c} {r} {other}" if uniform() < 0.5 else f"{r} {c} {other} {c}"


def _line(r1: int, c1: int, r2: int, c2: int) -> list[tuple[int, int]]:
    """The cells from (r1, c1) to (r2, c2) along a row or a column, in order."""
    if r1 == r2:
        step = 1 if c2 >= c1 else -1
        return [(r1, c) for c in range(c1, c2 + step, step)]
    step = 1 if r2 >= r1 else -1
    return [(r, c1) for r in range(r1, r2 + step, step)]

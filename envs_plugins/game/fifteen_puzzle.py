"""FifteenPuzzle: slide numbered tiles into order."""

from __future__ import annotations

import itertools
from functools import cache
from operator import eq

from gem_envs.game.base import GameEnv, GameSettingsError, Outcome, Reward, check_positive, ListedMoves, pick

#: (num_rows, max_turns) drawn per episode by the -random variant.
RANDOM_SETTINGS = ((2, 10), (3, 20), (4, 50))

#: How the blank moves for each command: the named tile slides into the blank.
_BLANK_STEP = {"up": (1, 0), "down": (-1, 0), "left": (0, 1), "right": (0, -1)}
MOVES = tuple(_BLANK_STEP)
_LABELS = ("__", *(f"{t:2}" for t in range(1, 100)))  # how each tile is shown


class FifteenPuzzleEnv(GameEnv):
    """Order the tiles 1..n*n-1 of an ``num_rows`` x ``num_rows`` sliding puzzle, blank last,
    within ``max_turns``.

    Every start position is solvable (its permutation parity matches the blank's distance from
    its home) and not already solved. ``up`` slides the tile below the blank up, ``down`` the
    tile above it down, ``left`` the tile right of it left, ``right`` the tile left of it right.
    Solving earns 1; a move with no tile to slide is invalid. At the turn limit the last step's
    reward gains the share of cells (the blank included) already in place.
    """

    action_format = "\\boxed{up}, \\boxed{down}, \\boxed{left} or \\boxed{right}"
    listed = ListedMoves.of((move, move) for move in MOVES)

    def __init__(self, num_rows: int | None = 2, max_turns: int | None = 20):
        self.random_settings = num_rows is None or max_turns is None
        if not self.random_settings:
            check_positive("num_rows", num_rows, minimum=2)
            if num_rows > 9:
                raise GameSettingsError(f"num_rows must be at most 9, got {num_rows}.")
            check_positive("max_turns", max_turns)
        self.num_rows = num_rows or 3
        self.max_turns = max_turns or 20
        self.tiles: list[int] = []  # row-major, 0 is the blank
        self.blank = 0

    @property
    def greatest_number(self) -> int:
        return self.num_rows * self.num_rows - 1

    def new_game(self) -> None:
        rng = self.rng
        if self.random_settings:
            self.num_rows, self.max_turns = rng.choice(RANDOM_SETTINGS)
        n = self.num_rows
        if n == 2:  # only 11 starts: draw one directly
            tiles = list(pick(rng, _starts_2x2()))
        else:
            goal = solved_tiles(n)
            tiles = list(goal)
            while tiles == goal:
                rng.shuffle(tiles)
                if not is_solvable(tiles, n):
                    # swapping two tiles flips the permutation parity and leaves the blank
                    a, b = [i for i, t in enumerate(tiles) if t][:2]
                    tiles[a], tiles[b] = tiles[b], tiles[a]
        self.tiles = tiles
        self.blank = tiles.index(0)

    def instructions(self) -> str:
        example = next(iter(_blank_targets(self.num_rows)[self.blank]))  # a move the layout allows
        return _instructions(self.greatest_number, self.max_turns, example)

    def task_suffix(self) -> str:
        return f"Here is the board:\n{self.render()}\nEnter your move."

    def render(self) -> str:
        return _board_template(self.num_rows) % tuple(map(_LABELS.__getitem__, self.tiles))

    def parse_move(self, answer: str) -> str | None:
        move = answer.lower()
        return move if move in _BLANK_STEP else None

    def play(self, move: str) -> tuple[str, float, Outcome]:
        target = _blank_targets(self.num_rows)[self.blank].get(move)
        if target is None:
            return f"Turn {self.turn}: no tile can move {move}.", Reward.INVALID, Outcome.INVALID
        tiles = self.tiles
        tiles[self.blank], tiles[target] = tiles[target], 0
        self.blank = target
        self._suffix = None
        if target == len(tiles) - 1 and tiles == solved_tiles(self.num_rows):
            return f"Solved in {self.turn} turns. You win!", Reward.SUCCESS, Outcome.WON
        return f"Turn {self.turn}: you moved a tile {move}.", Reward.STEP, Outcome.ONGOING

    def reward_at_turn_limit(self, reward: float) -> float:
        goal = solved_tiles(self.num_rows)
        return reward + sum(map(eq, self.tiles, goal)) / len(goal)


@cache
def solved_tiles(n: int) -> list[int]:
    """The goal layout: 1..n*n-1 then the blank (0). Shared: do not modify."""
    return [*range(1, n * n), 0]


def is_solvable(tiles: list[int], n: int) -> bool:
    """Whether ``tiles`` can be slid to the goal: the parity of the permutation (the blank
    counted as the last tile) equals the parity of the blank's taxicab distance from home."""
    perm = [t - 1 if t else n * n - 1 for t in tiles]
    seen = [False] * len(perm)
    transpositions = 0
    for start in range(len(perm)):
        length = 0
        i = start
        while not seen[i]:
            seen[i] = True
            i = perm[i]
            length += 1
        if length:
            transpositions += length - 1
    row, col = divmod(tiles.index(0), n)
    distance = (n - 1 - row) + (n - 1 - col)
    return transpositions % 2 == distance % 2


@cache
def _blank_targets(n: int) -> tuple[dict[str, int], ...]:
    """For each cell of the blank, where each possible move takes it."""
    targets = []
    for blank in range(n * n):
        row, col = divmod(blank, n)
        steps = ((move, row + dr, col + dc) for move, (dr, dc) in _BLANK_STEP.items())
        targets.append({move: r * n + c for move, r, c in steps if 0 <= r < n and 0 <= c < n})
    return tuple(targets)


@cache
def _board_template(n: int) -> str:
    """The board's rows, a %s per tile."""
    return "\n".join([" ".join(["%s"] * n)] * n)


@cache
def _starts_2x2() -> tuple[tuple[int, ...], ...]:
    """Every solvable 2x2 layout except the goal."""
    goal = tuple(solved_tiles(2))
    return tuple(p for p in itertools.permutations(goal) if p != goal and is_solvable(list(p), 2))


@cache
def _instructions(greatest: int, turns: int, example: str) -> str:
    return (
        f"Let's play the {greatest}-puzzle.\n"
        f"Slide the tiles until they read 1 to {greatest} in order, row by row, "
        f"with the empty space (shown as __) in the bottom-right corner. You have {turns} turns.\n"
        "Each move slides one tile into the empty space:\n"
        "- up: the tile below the space moves up\n"
        "- down: the tile above the space moves down\n"
        "- left: the tile right of the space moves left\n"
        "- right: the tile left of the space moves right\n"
        f"Put your move in \\boxed{{}}, e.g. \\boxed{{{example}}}. Only the last \\boxed{{}} counts."
    )

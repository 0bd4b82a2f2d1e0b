"""2048: slide and merge tiles until one reaches the target."""

from __future__ import annotations

import math
from functools import cache

from gem_envs.game.base import GameEnv, GameSettingsError, Outcome, Reward, check_positive, pick

#: (target_tile, max_turns) drawn per episode by the -random variant.
RANDOM_SETTINGS = ((16, 20), (32, 30), (64, 50))
DIRECTIONS = ("up", "down", "left", "right")


class Game2048Env(GameEnv):
    """Reach a ``target_tile`` on a ``board_size`` x ``board_size`` 2048 board within ``max_turns``.

    Each move slides every tile as far as it goes; two equal tiles that meet merge once per move;
    then a 2 (90%) or a 4 appears on a random empty cell. The reward is dense on a log scale:
    raising the best tile from ``a`` to ``b`` (capped at the target) earns
    ``(log2 b - log2 a) / (log2 target - log2 first best)``, so reaching the target has earned 1
    in total and wins. A move that changes nothing is invalid; a full board with no merge left
    ends the game (lost). Any None setting draws ``(target_tile, max_turns)`` per episode from
    :data:`RANDOM_SETTINGS`.
    """

    action_format = "\\boxed{up}, \\boxed{down}, \\boxed{left} or \\boxed{right}"

    def __init__(self, target_tile: int | None = 2048, max_turns: int | None = 1000, board_size: int = 4):
        self.random_settings = target_tile is None or max_turns is None
        check_positive("board_size", board_size, minimum=2)
        if not self.random_settings:
            check_positive("max_turns", max_turns)
            if not (isinstance(target_tile, int) and target_tile >= 8 and target_tile & (target_tile - 1) == 0):
                raise GameSettingsError(f"target_tile must be a power of two of at least 8, got {target_tile!r}.")
        self.board_size = board_size
        self.target_tile, self.max_turns = RANDOM_SETTINGS[0] if self.random_settings else (target_tile, max_turns)
        self.board: list[int] = []
        self.best = self.first_best = 2

    def new_game(self) -> None:
        if self.random_settings:
            self.target_tile, self.max_turns = self.rng.choice(RANDOM_SETTINGS)
        self.board = [0] * (self.board_size * self.board_size)
        self._add_tile()
        self._add_tile()
        self.best = self.first_best = max(self.board)

    def instructions(self) -> str:
        return (
            "Let's play 2048.\n"
            f"Reach a {self.target_tile} tile within {self.max_turns} turns.\n"
            "Each move slides all tiles up, down, left or right as far as they go; two equal tiles "
            "that collide merge into one with their sum. After every move a new 2 or 4 appears on "
            "an empty cell. A move that changes nothing is rejected, and the game ends when no move "
            "is left.\n"
            "Put your move in \\boxed{}, e.g. \\boxed{left}. Only the last \\boxed{} counts."
        )

    def task_suffix(self) -> str:
        return f"Here is the board:\n{self.render()}\nEnter your move."

    def render(self) -> str:
        n, board = self.board_size, self.board
        return "\n".join([" ".join(map(_label, board[i:i + n])) for i in range(0, n * n, n)])

    def parse_move(self, answer: str) -> str | None:
        move = answer.lower()
        return move if move in DIRECTIONS else None

    def play(self, move: str) -> tuple[str, float, Outcome]:
        moved = slide(self.board, self.board_size, move)
        if moved is None:
            return f"Turn {self.turn}: moving {move} changes nothing.", Reward.INVALID, Outcome.INVALID
        self.board = moved
        self._suffix = None
        reward = Reward.STEP
        best = min(max(moved), self.target_tile)
        if best > self.best:
            reward = (math.log2(best) - math.log2(self.best)) / (
                math.log2(self.target_tile) - math.log2(self.first_best)
            )
            self.best = best
        self._add_tile()
        if self.best >= self.target_tile:
            return f"You reached {self.target_tile} in {self.turn} turns. You win!", reward, Outcome.WON
        if not self._can_move():
            return "No move is left. Game over.", reward, Outcome.LOST
        return f"Turn {self.turn}: you moved {move}.", reward, Outcome.ONGOING

    def _add_tile(self) -> None:
        empty = [i for i, v in enumerate(self.board) if not v]
        if empty:
            uniform = self.rng.random
            self.board[empty[int(uniform() * len(empty))]] = 2 if uniform() < 0.9 else 4

    def _can_move(self) -> bool:
        board, n = self.board, self.board_size
        if 0 in board:
            return True
        for i, v in enumerate(board):
            if (i % n < n - 1 and board[i + 1] == v) or (i + n < len(board) and board[i + n] == v):
                return True
        return False

    def random_move(self) -> str:
        return pick(self.action_rng, DIRECTIONS)


@cache
def _label(tile: int) -> str:
    return f"{tile:4d}" if tile else "   ."


@cache
def _lines(n: int, direction: str) -> tuple[tuple[int, ...], ...]:
    """Cell indices of each line, ordered from the edge the tiles slide towards."""
    if direction == "left":
        return tuple(tuple(r * n + c for c in range(n)) for r in range(n))
    if direction == "right":
        return tuple(tuple(r * n + c for c in reversed(range(n))) for r in range(n))
    if direction == "up":
        return tuple(tuple(r * n + c for r in range(n)) for c in range(n))
    return tuple(tuple(r * n + c for r in reversed(range(n))) for c in range(n))


def slide(board: list[int], n: int, direction: str) -> list[int] | None:
    """The board after sliding ``direction`` (without the new tile), or None if nothing moves."""
    result = [0] * len(board)
    changed = False
    for line in _lines(n, direction):
        tiles = [board[i] for i in line if board[i]]
        merged: list[int] = []
        k = 0
        while k < len(tiles):
            if k + 1 < len(tiles) and tiles[k] == tiles[k + 1]:
                merged.append(tiles[k] * 2)
                k += 2
            else:
                merged.append(tiles[k])
                k += 1
        for i, v in zip(line, merged):
            result[i] = v
        if not changed and any(board[i] != result[i] for i in line):
            changed = True
    return result if changed else None

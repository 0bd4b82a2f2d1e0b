"""Rules and scripted play: Minesweeper, Sudoku, Sokoban."""

from __future__ import annotations

from collections import deque

import pytest

import gem_core
from gem_envs.game.minesweeper import MINE
from gem_envs.game.sokoban_levels import Level
from tests.games.helpers import boxed, make, play

# -- Minesweeper ------------------------------------------------------------------------------

def test_first_reveal_is_safe_and_counts_are_right():
    env = gem_core.make("game:Minesweeper-v0-hard")
    for seed in range(20):
        env.reset(seed=seed)
        row, col = seed % 8, (3 * seed) % 8
        _, reward, terminated, _, _ = env.step(boxed(f"reveal {row} {col}"))
        assert not terminated and reward > 0
        assert env.counts.count(MINE) == env.num_mines
        for r in range(8):
            for c in range(8):
                if abs(r - row) <= 1 and abs(c - col) <= 1:
                    assert env.counts[r * 8 + c] != MINE
                if env.counts[r * 8 + c] != MINE:
                    around = sum(env.counts[rr * 8 + cc] == MINE for rr in range(max(r - 1, 0), min(r + 2, 8))
                                 for cc in range(max(c - 1, 0), min(c + 2, 8)))
                    assert env.counts[r * 8 + c] == around


def test_revealing_every_safe_cell_wins_with_total_reward_one():
    env = gem_core.make("game:Minesweeper-v0-easy")
    for seed in range(10):
        env.reset(seed=seed)
        results = play(env, ["reveal 2 2"])
        for i, count in enumerate(env.counts):
            if count != MINE and not env.revealed[i]:
                results += play(env, [f"reveal {i // 5} {i % 5}"])
        assert results[-1][2] and results[-1][4]["success"]
        assert sum(r[1] for r in results) == pytest.approx(1.0)
        assert len(results) <= env.max_turns


def test_minesweeper_mines_flags_and_invalid_moves():
    env = make("game:Minesweeper-v0-hard", seed=4)
    env.step(boxed("reveal 0 0"))
    mine = env.counts.index(MINE)
    row, col = divmod(mine, 8)
    assert env.step(boxed(f"flag {row} {col}"))[1] == 0.0 and env.flagged[mine]
    assert env.step(boxed(f"reveal {row} {col}"))[4]["invalid_move"]  # flagged: not revealed
    assert env.step(boxed("flag 0 0"))[4]["invalid_move"]  # already revealed
    assert env.step(boxed("reveal 0 0"))[4]["invalid_move"]
    assert env.step(boxed("reveal 8 0"))[4]["invalid_move"]
    assert env.step(boxed("dig 1 1"))[4]["invalid_move"]
    env.step(boxed(f"flag {row} {col}"))  # remove the flag
    observation, reward, terminated, truncated, info = env.step(boxed(f"Reveal {row}, {col}"))
    assert terminated and not truncated and reward == 0.0 and info["success"] is False
    assert "mine" in observation.lower() and "*" in info["suffix"]


# -- Sudoku ----------------------------------------------------------------------------------

def solutions(grid: list[int], n: int, limit: int = 3) -> list[list[int]]:
    """All solutions up to ``limit``, by plain backtracking (independent of the pack's solver)."""
    b = int(n ** 0.5)
    found: list[list[int]] = []

    def ok(i: int, v: int) -> bool:
        r, c = divmod(i, n)
        if v in grid[r * n:(r + 1) * n] or any(grid[k * n + c] == v for k in range(n)):
            return False
        top, left = r - r % b, c - c % b
        return all(grid[rr * n + cc] != v for rr in range(top, top + b) for cc in range(left, left + b))

    def fill() -> None:
        if len(found) >= limit:
            return
        try:
            i = grid.index(0)
        except ValueError:
            found.append(grid[:])
            return
        for v in range(1, n + 1):
            if ok(i, v):
                grid[i] = v
                fill()
                grid[i] = 0

    fill()
    return found


@pytest.mark.parametrize("env_id", ["game:Sudoku-v0-easy", "game:Sudoku-v0-hard", "game:Sudoku-v0-random"])
def test_puzzles_have_exactly_one_solution(env_id):
    env = gem_core.make(env_id)
    for seed in range(4):
        env.reset(seed=seed)
        n = env.scale
        found = solutions(env.board[:], n)
        assert found == [env.solution]
        assert all(b in (0, s) for b, s in zip(env.board, env.solution))
        assert 0 < env.board.count(0) <= env.clues


def test_filling_the_solution_wins():
    env = gem_core.make("game:Sudoku-v0-hard")
    for seed in range(3):
        env.reset(seed=seed)
        n = env.scale
        moves = [f"{i // n + 1} {i % n + 1} {env.solution[i]}" for i, v in enumerate(env.board) if not v]
        results = play(env, moves)
        assert results[-1][2] and results[-1][4]["success"] and len(results) <= env.max_turns
        assert sum(r[1] for r in results) == pytest.approx(1.0)
        assert not any(r[2] or r[3] for r in results[:-1])


def test_sudoku_invalid_moves():
    env = make("game:Sudoku-v0-hard", seed=2)
    n = env.scale
    filled = next(i for i, v in enumerate(env.board) if v)
    empty = next(i for i, v in enumerate(env.board) if not v)
    r, c = divmod(empty, n)
    wrong = next(d for d in range(1, n + 1) if d != env.solution[empty])
    for move in [f"{filled // n + 1} {filled % n + 1} 1", f"{r + 1} {c + 1} {wrong}", "0 1 1", "1 1 10"]:
        observation, reward, terminated, _, info = env.step(boxed(move))
        assert reward == 0.0 and info["invalid_move"] and not terminated, move
    assert env.board[empty] == 0
    assert "C1" in info["suffix"] and "R9" in info["suffix"]


# -- Sokoban ---------------------------------------------------------------------------------

def shortest_solution(env) -> list[str] | None:
    """Breadth-first search over (player, boxes) states."""
    cols = env.cols
    steps = {"up": -cols, "down": cols, "left": -1, "right": 1}
    start = (env.player, frozenset(env.boxes))
    parent = {start: None}
    queue = deque([start])
    while queue:
        state = queue.popleft()
        player, boxes = state
        if boxes <= env.targets:
            moves = []
            while parent[state]:
                state, move = parent[state]
                moves.append(move)
            return moves[::-1]
        for move, s in steps.items():
            ahead = player + s
            if not env.floor[ahead]:
                continue
            new_boxes = boxes
            if ahead in boxes:
                if not env.floor[ahead + s] or ahead + s in boxes:
                    continue
                new_boxes = (boxes - {ahead}) | {ahead + s}
            nxt = (ahead, new_boxes)
            if nxt not in parent:
                parent[nxt] = (state, move)
                queue.append(nxt)
    return None


@pytest.mark.parametrize("env_id", ["game:Sokoban-v0-easy", "game:Sokoban-v0-hard"])
def test_levels_are_solvable_within_the_turn_limit(env_id):
    env = gem_core.make(env_id)
    for seed in range(6 if env_id.endswith("easy") else 2):
        env.reset(seed=seed)
        assert not env.boxes & env.targets and len(env.boxes) == env.num_boxes
        moves = shortest_solution(env)
        assert moves is not None and len(moves) <= env.solution_length <= env.max_turns
        results = play(env, moves)
        assert results[-1][2] and results[-1][1] == 1.0 and results[-1][4]["success"]


def test_sokoban_walls_blocked_boxes_and_the_turn_limit():
    env = make("game:Sokoban-v0-easy", seed=1)
    # a hand-made room: a wall border, the player left of a box, another box beyond it
    floor = bytes([0] * 6 + [0, 1, 1, 1, 1, 0] * 4 + [0] * 6)
    env.set_level(Level(6, 6, floor, frozenset({13, 14}), frozenset({8, 9}), 7, 0))
    assert env.render().split("\n")[1:3] == ["# P X X _ #", "# O O _ _ #"]
    assert env.step(boxed("up"))[4]["invalid_move"]  # a wall
    assert env.step(boxed("right"))[4]["invalid_move"]  # a box against a box
    assert env.step(boxed("down"))[4].get("invalid_move") is None and env.player == 13
    results = play(env, ["up", "down"] * 10)
    ends = [r for r in results if r[2] or r[3]]
    _, reward, terminated, truncated, info = ends[0]
    assert truncated and not terminated and info["success"] is False and info["turn"] == env.max_turns
    assert reward == pytest.approx(len(env.boxes & env.targets) / env.num_boxes)


def test_sokoban_board_symbols():
    env = make("game:Sokoban-v0-easy", seed=0)
    board = env.render().split("\n")
    assert len(board) == env.rows and all(len(line.split(" ")) == env.cols for line in board)
    text = env.render()
    assert text.count("X") == env.num_boxes and text.count("O") + text.count("S") == env.num_boxes
    assert text.count("P") + text.count("S") == 1

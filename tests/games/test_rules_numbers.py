"""Rules and scripted play: GuessTheNumber, Mastermind, TowerofHanoi, Game2048, FifteenPuzzle."""

from __future__ import annotations

import itertools
import math
from collections import deque

import pytest

import gem_core
from gem_envs.game.fifteen_puzzle import is_solvable, solved_tiles
from gem_envs.game.game_2048 import slide
from gem_envs.game.mastermind import score_guess
from tests.games.helpers import FORMAT_ERROR, boxed, make, play

# -- GuessTheNumber ---------------------------------------------------------------------------

@pytest.mark.parametrize("env_id", ["game:GuessTheNumber-v0-easy", "game:GuessTheNumber-v0-hard",
                                    "game:GuessTheNumber-v0-random", "game:GuessTheNumber-v0"])
def test_binary_search_always_wins_within_the_turns(env_id):
    env = gem_core.make(env_id)
    for seed in range(40):
        env.reset(seed=seed)
        low, high, rewards = env.min_number, env.max_number, []
        while True:
            guess = (low + high) // 2
            observation, reward, terminated, truncated, info = env.step(boxed(str(guess)))
            rewards.append(reward)
            if terminated:
                break
            assert not truncated, (env_id, seed)
            if "higher" in observation:
                low = guess + 1
            else:
                high = guess - 1
        assert info["success"] and sum(rewards) == 1.0 and info["turn"] <= env.max_turns


def test_guess_the_number_invalid_moves_and_turn_limit():
    env = make("game:GuessTheNumber-v0-easy", seed=5)
    target = env.target
    wrong = [g for g in range(1, 11) if g != target]
    _, reward, terminated, truncated, info = env.step(boxed("11"))
    assert (reward, terminated, truncated, info["invalid_move"]) == (0.0, False, False, True)
    env.step(boxed(str(wrong[0])))
    observation, reward, _, _, info = env.step(boxed(str(wrong[0])))
    assert reward == 0.0 and info["invalid_move"] and "already" in observation
    observation, reward, terminated, truncated, info = env.step(boxed(str(wrong[1])))
    assert truncated and not terminated and info["success"] is False and "all 4 turns" in observation
    assert reward == pytest.approx(1 - abs(wrong[1] - target) / 9)


@pytest.mark.parametrize("env_id, turns", [("game:GuessTheNumber-v0-easy-sparse", 4),
                                           ("game:GuessTheNumber-v0-long-sparse", 10)])
def test_sparse_guess_the_number_pays_one_for_a_win_and_zero_for_everything_else(env_id, turns):
    env = make(env_id, seed=5)
    assert env.max_turns == turns
    target = env.target
    wrong = [g for g in range(env.min_number, env.max_number + 1) if g != target]
    results = play(env, [str(g) for g in wrong[:turns - 1]] + [str(wrong[0])])  # the last guess repeats
    assert [r[1] for r in results] == [0.0] * turns  # no closeness reward at the turn limit
    assert results[-1][3] and results[-1][4]["success"] is False
    env.reset(seed=5)
    observation, reward, terminated, _, info = env.step("no box here")
    assert (reward, terminated, info["format_error"]) == (0.0, True, True)
    env.reset(seed=5)
    assert env.step(boxed(str(env.target)))[1:3] == (1.0, True)


def test_sparse_is_a_setting_of_any_guess_the_number():
    dense, sparse = make("game:GuessTheNumber-v0-hard", seed=2), make("game:GuessTheNumber-v0-hard", seed=2, sparse=True)
    assert dense.step("\\boxed{x}")[1] == FORMAT_ERROR and sparse.step("\\boxed{x}")[1] == 0.0
    with pytest.raises(gem_core.GemError, match="sparse"):
        gem_core.make("game:GuessTheNumber-v0", sparse="yes")


def test_guess_the_number_accepts_number_spellings_and_rejects_others():
    env = make("game:GuessTheNumber-v0-hard", seed=1)
    assert env.step("\\boxed{ 1,0 }")[4]["turn"] == 1 and env.guesses == {10}
    assert env.step("\\boxed{12.0}")[4].get("format_error") is None and 12 in env.guesses
    observation, reward, terminated, _, info = env.step("\\boxed{twelve}")
    assert reward == -0.1 and terminated and info["format_error"]


def test_guess_the_number_random_variant_draws_ranges_and_turns():
    env = gem_core.make("game:GuessTheNumber-v0-random")
    ranges = set()
    for seed in range(30):
        env.reset(seed=seed)
        assert 1 <= env.min_number <= 10 and env.min_number + 5 <= env.max_number <= env.min_number + 50
        assert env.max_turns == math.ceil(math.sqrt(env.max_number - env.min_number)) + 1
        ranges.add((env.min_number, env.max_number))
    assert len(ranges) > 10


def test_bad_settings_are_clear_errors():
    with pytest.raises(gem_core.GemError, match="min_number"):
        gem_core.make("game:GuessTheNumber-v0", min_number=5, max_number=5)
    with pytest.raises(gem_core.GemError, match="duplicate_numbers"):
        gem_core.make("game:Mastermind-v0", code_length=7, num_numbers=6)
    with pytest.raises(gem_core.GemError, match="target_tile"):
        gem_core.make("game:Game2048-v0", target_tile=100)
    with pytest.raises(gem_core.GemError, match="scale"):
        gem_core.make("game:Sudoku-v0", scale=5)
    with pytest.raises(gem_core.GemError, match="num_mines"):
        gem_core.make("game:Minesweeper-v0", rows=3, cols=3, num_mines=9)
    with pytest.raises(gem_core.GemError, match="3 to 10"):
        gem_core.make("game:Wordle-v0", word_length=12)
    with pytest.raises(gem_core.GemError, match="max_turns"):
        gem_core.make("game:TowerofHanoi-v0", max_turns=0)


# -- Mastermind -------------------------------------------------------------------------------

def test_pegs():
    assert score_guess((1, 2, 3, 4), (1, 3, 2, 5)) == (1, 2)
    assert score_guess((1, 1, 2, 2), (1, 2, 1, 1)) == (1, 2)
    assert score_guess((5, 6), (5, 6)) == (2, 0)
    assert score_guess((1, 2, 3, 4), (5, 6, 7, 8)) == (0, 0)


@pytest.mark.parametrize("env_id", ["game:Mastermind-v0-easy", "game:Mastermind-v0-hard", "game:Mastermind-v0"])
def test_consistent_guessing_cracks_the_code_with_dense_rewards(env_id):
    env = gem_core.make(env_id)
    for seed in range(5):
        env.reset(seed=seed)
        candidates = list(itertools.permutations(range(1, env.num_numbers + 1), env.code_length))
        total = 0.0
        while True:
            guess = candidates[0]
            observation, reward, terminated, truncated, info = env.step(boxed(" ".join(map(str, guess))))
            total += reward
            if terminated:
                break
            assert not truncated
            black, white = score_guess(env.code, guess)
            assert f"{black} black and {white} white" in observation
            candidates = [c for c in candidates if score_guess(c, guess) == (black, white)]
        assert info["success"] and total == pytest.approx(1.0)


def test_mastermind_invalid_guesses():
    env = make("game:Mastermind-v0", seed=2)
    for text in ["1 2 3", "1 2 3 9", "0 1 2 3"]:
        result = env.step(boxed(text))
        assert result[1] == 0.0 and result[4]["invalid_move"], text
    env.step(boxed("1 2 3 4"))
    assert env.step(boxed("1,2,3,4"))[4]["invalid_move"]  # the same guess, other separators
    assert env.step(boxed("1 2 x 4"))[1] == -0.1


# -- Tower of Hanoi ---------------------------------------------------------------------------

def hanoi_moves(n: int, source="A", target="C", spare="B") -> list[str]:
    if n == 0:
        return []
    return hanoi_moves(n - 1, source, spare, target) + [f"{source} {target}"] + hanoi_moves(n - 1, spare, target, source)


@pytest.mark.parametrize("env_id", ["game:TowerofHanoi-v0-easy", "game:TowerofHanoi-v0-hard", "game:TowerofHanoi-v0-random"])
def test_the_recursive_solution_wins(env_id):
    env = gem_core.make(env_id)
    for seed in range(3):
        env.reset(seed=seed)
        results = play(env, hanoi_moves(env.num_disks))
        assert [r[2] for r in results] == [False] * (len(results) - 1) + [True]
        assert results[-1][1] == 1.0 and results[-1][4]["success"]
        assert len(results) == 2 ** env.num_disks - 1 <= env.max_turns


def test_hanoi_rules_and_move_spellings():
    env = make("game:TowerofHanoi-v0-easy")
    for text in ["B C", "A A"]:  # empty source; the same tower
        assert env.step(boxed(text))[4]["invalid_move"]
    assert env.step(boxed("a->c"))[4].get("invalid_move") is None and env.towers["C"] == [1]
    assert env.step(boxed("A to C"))[4]["invalid_move"]  # 2 onto 1
    assert env.step(boxed("AB"))[4].get("invalid_move") is None
    assert env.step(boxed("c , b"))[4].get("invalid_move") is None and env.towers["B"] == [2, 1]
    assert env.step(boxed("A D"))[1] == -0.1


def test_hanoi_turn_limit_pays_the_share_on_tower_c():
    env = make("game:TowerofHanoi-v0-easy")
    results = play(env, ["A C"] + ["C B", "B C"] * 4 + ["C B"])
    _, reward, terminated, truncated, info = results[-1]
    assert truncated and not terminated and len(results) == 10
    assert reward == 0.0 and info["success"] is False
    env.reset()
    results = play(env, ["A C"] + ["A B", "B A"] * 4 + ["A B"])
    assert results[-1][3] and results[-1][1] == pytest.approx(1 / 3)


# -- 2048 ---------------------------------------------------------------------------------------

def test_slides_merge_each_tile_once():
    board = [2, 2, 2, 2,
             2, 2, 4, 0,
             4, 0, 4, 8,
             0, 0, 0, 2]
    assert slide(board, 4, "left") == [4, 4, 0, 0, 4, 4, 0, 0, 8, 8, 0, 0, 2, 0, 0, 0]
    assert slide(board, 4, "right") == [0, 0, 4, 4, 0, 0, 4, 4, 0, 0, 8, 8, 0, 0, 0, 2]
    assert slide(board, 4, "up") == [4, 4, 2, 2, 4, 0, 8, 8, 0, 0, 0, 2, 0, 0, 0, 0]
    assert slide(board, 4, "down") == [0, 0, 0, 0, 0, 0, 0, 2, 4, 0, 2, 8, 4, 4, 8, 2]
    assert slide([2, 4, 8, 16] + [0] * 12, 4, "left") is None


def test_2048_rewards_progress_on_a_log_scale_and_wins_at_the_target():
    env = make("game:Game2048-v0-easy", seed=0)  # target 64
    env.board = [32, 32, 0, 0] + [0] * 12
    env.best = env.first_best = 4
    env._suffix = None
    _, reward, terminated, _, info = env.step(boxed("left"))
    assert terminated and info["success"] and reward == pytest.approx(1.0)
    env = make("game:Game2048-v0-easy", seed=0)
    env.board = [8, 8, 0, 0] + [0] * 12
    env.best = env.first_best = 8
    _, reward, terminated, _, _ = env.step(boxed("LEFT"))
    assert not terminated and reward == pytest.approx(1 / 3)  # 8 -> 16 of 8 -> 64
    assert env.step(boxed("left"))[1] >= 0.0


def test_2048_blocked_moves_and_game_over():
    env = make("game:Game2048-v0-hard", seed=0)
    env.board = [2, 4, 2, 4, 4, 2, 4, 2, 2, 4, 2, 4, 4, 2, 4, 0]
    env._suffix = None
    assert env.step(boxed("left"))[4]["invalid_move"]
    assert env._can_move()
    env.board[-1] = 2
    assert not env._can_move()


# -- FifteenPuzzle ------------------------------------------------------------------------------

def reachable_states(n: int) -> set[tuple[int, ...]]:
    goal = tuple(solved_tiles(n))
    seen, queue = {goal}, deque([goal])
    while queue:
        state = queue.popleft()
        blank = state.index(0)
        r, c = divmod(blank, n)
        for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            if 0 <= r + dr < n and 0 <= c + dc < n:
                tiles = list(state)
                other = (r + dr) * n + c + dc
                tiles[blank], tiles[other] = tiles[other], 0
                if (t := tuple(tiles)) not in seen:
                    seen.add(t)
                    queue.append(t)
    return seen


def classic_solvable(tiles: list[int], n: int) -> bool:
    numbers = [t for t in tiles if t]
    inversions = sum(a > b for i, a in enumerate(numbers) for b in numbers[i + 1:])
    if n % 2:
        return inversions % 2 == 0
    row_from_bottom = n - tiles.index(0) // n
    return (inversions + row_from_bottom) % 2 == 1


def test_generated_puzzles_are_solvable_and_unsolved():
    reachable = {2: reachable_states(2), 3: reachable_states(3)}
    env = gem_core.make("game:FifteenPuzzle-v0-random")  # crashes in the reference
    sizes = set()
    for seed in range(150):
        env.reset(seed=seed)
        n = env.num_rows
        sizes.add(n)
        assert env.tiles != solved_tiles(n)
        assert classic_solvable(env.tiles, n) and is_solvable(env.tiles, n)
        if n in reachable:
            assert tuple(env.tiles) in reachable[n]
    assert sizes == {2, 3, 4}


def test_shortest_solution_wins_the_2x2_puzzle():
    env = gem_core.make("game:FifteenPuzzle-v0-easy")
    names = {(1, 0): "up", (-1, 0): "down", (0, 1): "left", (0, -1): "right"}  # how the blank moves
    for seed in range(10):
        env.reset(seed=seed)
        start, goal = tuple(env.tiles), tuple(solved_tiles(2))
        parent = {start: None}
        queue = deque([start])
        while goal not in parent:
            state = queue.popleft()
            r, c = divmod(state.index(0), 2)
            for (dr, dc), name in names.items():
                if 0 <= r + dr < 2 and 0 <= c + dc < 2:
                    tiles = list(state)
                    b, o = state.index(0), (r + dr) * 2 + c + dc
                    tiles[b], tiles[o] = tiles[o], 0
                    if (t := tuple(tiles)) not in parent:
                        parent[t] = (state, name)
                        queue.append(t)
        moves, state = [], goal
        while parent[state]:
            state, name = parent[state]
            moves.append(name)
        results = play(env, moves[::-1])
        assert results[-1][2] and results[-1][1] == 1.0 and results[-1][4]["success"]


def test_fifteen_puzzle_edges_and_soft_reward_at_the_limit():
    env = make("game:FifteenPuzzle-v0-easy", seed=3)
    env.tiles, env.blank = [2, 3, 1, 0], 3
    env._suffix = None
    assert env.step(boxed("up"))[4]["invalid_move"]  # nothing below the blank
    results = play(env, ["down", "up"] * 4 + ["down"])
    _, reward, terminated, truncated, _ = results[-1]
    assert truncated and not terminated
    in_place = sum(a == b for a, b in zip(env.tiles, [1, 2, 3, 0]))
    assert reward == pytest.approx(in_place / 4)

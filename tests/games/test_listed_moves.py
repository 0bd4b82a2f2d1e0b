"""Games that list their moves look answers up instead of parsing them: the look-up must agree
with ``parse_move`` on every listed move, and random actions must come from the list."""

import pytest

import gem_core
from gem_envs.game.base import NO_LISTED_MOVES, parse_answer

LISTING = ["GuessTheNumber", "Mastermind", "Minesweeper", "Wordle", "FifteenPuzzle", "TowerofHanoi"]


def listing_ids():
    return [spec.id for game in LISTING for spec in gem_core.list_envs(f"game:{game}-v0*")]


@pytest.mark.parametrize("env_id", listing_ids())
def test_every_listed_move_is_what_parse_move_reads(env_id):
    env = gem_core.make(env_id).unwrapped
    for seed in range(3):  # -random variants list other moves per episode
        env.reset(seed=seed)
        listed = env.listed
        assert listed is not NO_LISTED_MOVES, f"{env_id} lists no moves"
        for text, move in listed.by_text.items():
            assert env.parse_move(text) == move, text
        for action, move in listed.by_action.items():
            assert listed.by_text[parse_answer(action)] == move, action
        assert set(listed.actions) <= set(listed.by_action)
        for _ in range(50):
            action = env.sample_random_action()
            assert parse_answer(action) is not None
            if listed.actions:
                assert action in listed.by_action


def test_an_unhashable_action_is_a_format_error():
    env = gem_core.make("game:GuessTheNumber-v0-easy")
    env.reset(seed=0)
    observation, reward, terminated, _, info = env.step(["\\boxed{3}"])
    assert terminated and info["format_error"] and reward == -0.1


def test_a_listed_move_inside_reasoning_is_read_like_a_bare_one():
    bare, wrapped = gem_core.make("game:Mastermind-v0-hard"), gem_core.make("game:Mastermind-v0-hard")
    bare.reset(seed=4)
    wrapped.reset(seed=4)
    assert bare.step("\\boxed{1 2 3 4}")[:4] == wrapped.step("I think \\boxed{ 1 2 3 4 } fits.")[:4]

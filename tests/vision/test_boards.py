"""Games played from a picture of their board: an image each turn, the same for the same state,
none once the episode is over, and carried across turns by the chat wrappers."""

from __future__ import annotations

import hashlib

import pytest

import gem_core
from gem_core.images import IMAGE, png_bytes
from gem_core.wrappers.observation import as_seen

pytest.importorskip("PIL.Image")

IDS = ("vision:Sudoku-v0-easy", "vision:Minesweeper-v0-easy", "vision:TowerofHanoi-v0-easy")


def digest(info):
    (image,) = info["images"]
    assert image.mode == "RGB"
    return hashlib.sha256(png_bytes(image)).hexdigest()


@pytest.mark.parametrize("env_id", IDS)
def test_each_turn_shows_the_board_as_an_image_and_replays_with_the_seed(env_id):
    runs = []
    for _ in range(2):
        env = gem_core.make(env_id)
        observation, info = env.reset(seed=3)
        shown = as_seen(observation, info)
        assert shown.count(IMAGE) == 1 and "Here is" not in shown  # the board is in the picture only
        digests, done = [digest(info)], False
        while not done:
            observation, reward, terminated, truncated, info = env.step(env.sample_random_action())
            done = terminated or truncated
            if not done:
                digests.append(digest(info))
        assert "images" not in info  # no board once the game is over
        runs.append(digests)
    assert runs[0] == runs[1]


def test_the_picture_follows_the_game():
    env = gem_core.make("vision:TowerofHanoi-v0-easy")
    _, first = env.reset(seed=0)
    _, _, _, _, moved = env.step("\\boxed{A->C}")
    _, _, _, _, refused = env.step("\\boxed{B->A}")  # B is empty: the board stays as it was
    assert digest(first) != digest(moved) == digest(refused)


def test_the_chat_wrapper_carries_every_turns_board(processor):
    env = gem_core.wrappers.observation.concat_chat(gem_core.make("vision:TowerofHanoi-v0-easy"), tokenizer=processor)
    observation, info = env.reset(seed=1)
    assert len(info["images"]) == 1
    observation, _, terminated, truncated, info = env.step("\\boxed{A->C}")
    assert not (terminated or truncated) and len(info["images"]) == 2
    inputs = processor(text=[observation], images=[info["images"]], return_tensors="pt")
    assert inputs["pixel_values"].shape[1] == 2  # both boards reach the model

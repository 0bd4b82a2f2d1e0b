"""The shared settings, dataset rows and estimator bridge of the adapters."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gem_adapters.common.dataset import episode_starts, first_observation, write_splits
from gem_adapters.common.estimators import (estimator_names, gem_estimator, library_name, needs_groups,
                                             token_estimate)
from gem_adapters.common.settings import RunSettings
from gem_core import GemError, UnknownEnvError, UnknownNameError
from tests.adapters import conformance as c

EASY, HARD = "game:GuessTheNumber-v0-easy", "game:GuessTheNumber-v0-hard"


def settings(**changes) -> RunSettings:
    fields = {"env_ids": (EASY, HARD), "model": "m", "out_dir": Path("out"), "train_size": 6, "val_size": 2,
              "batch_size": 2, "seed": 10}
    return RunSettings(**{**fields, **changes})


@pytest.mark.parametrize("changes, error, message", [
    ({"env_ids": ("game:GuessTheNumbr-v0-easy",)}, UnknownEnvError, "GuessTheNumber-v0-easy"),
    ({"env_ids": ()}, GemError, "--env"),
    ({"estimator": "reban"}, UnknownNameError, "rebn"),
    ({"gamma": 1.5}, GemError, "gamma"),
    ({"rollouts_per_start": 0}, GemError, "--n must be"),
    ({"estimator": "grpo"}, GemError, "grpo compares episodes from one start: set --n 2"),
    ({"batch_size": 7}, GemError, "--batch-size or raise --train-size"),
    ({"learning_rate": 0.0}, GemError, "--lr"),
])
def test_bad_settings_name_the_fix(changes, error, message):
    with pytest.raises(error, match=message):
        settings(**changes).check()


def test_starts_alternate_environments_with_disjoint_seeds(tmp_path):
    train, val = episode_starts(settings())
    assert train == [(EASY, 10), (HARD, 11), (EASY, 12), (HARD, 13), (EASY, 14), (HARD, 15)]
    assert val == [(EASY, 16), (HARD, 17)]
    counts = []
    written = write_splits(settings(), tmp_path, lambda env_id, seed, index, split, observation: {
        "env_id": env_id, "seed": seed, "index": index, "split": split, "prompt": observation},
        progress=counts.append)
    rows = [json.loads(line) for line in written.val.read_text().splitlines()]
    assert [(r["env_id"], r["seed"], r["index"], r["split"]) for r in rows] == [(EASY, 16, 0, "val"), (HARD, 17, 1, "val")]
    assert rows[1]["prompt"] == first_observation(HARD, 17, settings().options)
    assert counts == list(range(1, 9)) and written.longest_prompt == max(
        len(first_observation(e, s, settings().options)) for e, s in train + val)


def test_group_estimators_are_told_apart():
    assert needs_groups("grpo") and needs_groups("gem_rloo")
    assert not needs_groups("rebn") and not needs_groups("reinforce")
    settings(estimator="grpo", rollouts_per_start=2).check()


def test_estimator_names_as_libraries_see_them():
    assert library_name("rebn") == "rebn" and library_name("grpo") == "gem_grpo"
    assert estimator_names()["gem_grpo"] == "grpo" and estimator_names()["rebn"] == "rebn"
    assert gem_estimator("gem_rloo") == "rloo" and gem_estimator("rebn") == "rebn"
    with pytest.raises(UnknownNameError, match="rebn"):
        gem_estimator("rbn")


def test_token_estimate_gives_gem_cores_values_on_the_conformance_batch():
    import torch

    rewards, mask = c.token_rows()
    advantages, returns = token_estimate("rebn", rewards, mask, gamma=c.GAMMA)
    c.assert_per_token(advantages, c.REBN)
    c.assert_per_token(returns, c.RETURNS)
    calls = []

    def all_reduce(values):  # one rank: a sum over ranks is the identity; recorded
        calls.append(values.copy())
        return values

    rebn, _ = token_estimate("gem_rebn", rewards, mask, gamma=c.GAMMA, all_reduce=all_reduce)
    c.assert_per_token(rebn, c.REBN)
    assert calls, "ReBN's batch statistics go through all_reduce"
    grouped_rewards, grouped_mask = c.token_rows(c.GROUPED, c.LAYOUT[:2])
    grpo, _ = token_estimate("grpo", grouped_rewards, grouped_mask, gamma=c.GAMMA, group_ids=list(c.GROUP_IDS),
                             all_reduce=all_reduce)  # group estimators ignore all_reduce
    c.assert_per_token(grpo, c.GRPO, c.LAYOUT[:2])
    assert advantages.dtype == torch.float32


def test_turn_estimate_gives_gem_cores_advantages_and_returns_per_turn():
    from gem_adapters.common.estimators import turn_estimate

    advantages, returns = turn_estimate("rebn", c.EPISODES, gamma=c.GAMMA)
    assert c.flat(advantages) == pytest.approx(c.flat(c.REBN), abs=c.TOLERANCE)
    assert c.flat(returns) == pytest.approx(c.flat(c.RETURNS))
    advantages, _ = turn_estimate("gem_grpo", c.GROUPED, gamma=c.GAMMA, group_ids=list(c.GROUP_IDS))
    assert c.flat(advantages) == pytest.approx(c.flat(c.GRPO), abs=c.TOLERANCE)


def test_failed_episodes_leave_the_statistics_flagged_or_written_without_model_tokens():
    from gem_adapters.common.estimators import token_advantage_stats, turn_estimate

    rewards, mask = c.mixed_token_rows()
    for valid in (None, list(c.MIXED_VALID)):  # a turnless row is a failed episode by itself
        advantages, returns = token_estimate("rebn", rewards, mask, gamma=c.GAMMA, valid=valid)
        c.assert_per_token(advantages, c.MIXED_REBN, c.MIXED_LAYOUT)
        c.assert_per_token(returns, (c.RETURNS[0], [0, 0], c.RETURNS[1], c.RETURNS[2], [0]), c.MIXED_LAYOUT)
    flagged, _ = c.token_rows(c.MIXED, c.MIXED_LAYOUT)  # failed rows keep their tokens, flagged invalid
    advantages, _ = token_estimate("rebn", flagged, c.token_rows(c.MIXED, c.MIXED_LAYOUT)[1], gamma=c.GAMMA,
                                   valid=list(c.MIXED_VALID))
    c.assert_per_token(advantages, c.MIXED_REBN, c.MIXED_LAYOUT)
    alone, alone_mask = token_estimate("rebn", *c.token_rows(), gamma=c.GAMMA)[0], c.token_rows()[1]
    assert token_advantage_stats(advantages, c.token_rows(c.MIXED, c.MIXED_LAYOUT)[1], c.MIXED_VALID) == \
        pytest.approx(token_advantage_stats(alone, alone_mask))
    per_turn, turn_returns = turn_estimate("rebn", c.MIXED, gamma=c.GAMMA, valid=list(c.MIXED_VALID))
    assert c.flat(per_turn) == pytest.approx(c.flat(c.MIXED_REBN), abs=c.TOLERANCE)
    assert list(turn_returns[2]) == pytest.approx(c.RETURNS[1]) and not turn_returns[1].any()
    grouped, _ = turn_estimate("grpo", c.GROUPED_MIXED, gamma=c.GAMMA, group_ids=list(c.GROUPED_MIXED_IDS),
                               valid=list(c.GROUPED_MIXED_VALID))
    assert c.flat(grouped) == pytest.approx(c.flat(c.GROUPED_MIXED_GRPO), abs=c.TOLERANCE)


def test_history_wrappers_are_refused_only_where_the_library_keeps_the_conversation():
    from gem_adapters.common.options import EpisodeOptions

    with pytest.raises(GemError, match="already keeps the whole conversation"):
        EpisodeOptions.from_config({"wrappers": "concat_chat"})
    assert EpisodeOptions.from_config({"wrappers": "concat_chat"}, history_in_context=False).wrappers == ("concat_chat",)

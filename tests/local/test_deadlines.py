"""Deadlines in `gem train`: a hung environment fails its episode at the episode deadline and the
step trains on the others; episodes running at the step's deadline carry over and train, with
the tokens they sampled, in the step where they end; spares start more episodes than the step
trains on; bad values are refused before a model loads."""

from __future__ import annotations

import pytest

from gem_core.episodes import load_episodes
from gem_trainer.config import ConfigError
from gem_trainer.training.rollout import step_seeds
from gem_trainer.training.trainer import EPISODES_DIR, Trainer
from tests.helpers import gem_command
from tests.local.envs import SLOW_ID, register_once, register_slow
from tests.local.test_cli import assert_clean_error
from tests.local.test_trainer import config

EPISODES = 4


@pytest.fixture(autouse=True)
def _slow_env():
    register_once()
    register_slow()
    yield
    register_slow()


def test_a_hung_environment_fails_its_episode_at_the_deadline_and_the_step_trains_on_the_others(tiny_model_dir,
                                                                                            tmp_path):
    hung = step_seeds(0, 1, EPISODES, 1)[2]
    register_slow(hung_seeds=[hung])
    result = Trainer(config(tiny_model_dir, tmp_path / "run", envs=[SLOW_ID], steps=1, episode_deadline=5.0),
                     progress=False).run()
    [record] = result.records
    episodes = load_episodes(result.output_dir / EPISODES_DIR / "step-00001.jsonl")
    [failed] = [e for e in episodes if not e.valid]
    assert failed.seed == hung and failed.failure.kind == "deadline"
    assert record["failed_deadline"] == 0.25 and record["updated"] and record["turns_trained"] == 6
    assert record["rollout_seconds"] < 60  # the hang would have lasted two minutes


def test_episodes_running_at_the_deadline_carry_over_and_train_where_they_end(tiny_model_dir, tmp_path):
    slow = step_seeds(0, 1, EPISODES, 1)[:2]
    register_slow(slow_seeds=slow, delay=1.5)
    # Each slow turn outlasts a step's collection, so the slow episodes end two steps later at the
    # soonest; more steps leave room for a loaded machine's slower sampling.
    steps = 5
    result = Trainer(config(tiny_model_dir, tmp_path / "run", envs=[SLOW_ID], steps=steps, deadline=1.0,
                            carry_over=True), progress=False).run()
    first = result.records[0]
    returned = [load_episodes(result.output_dir / EPISODES_DIR / f"step-{k:05d}.jsonl") for k in range(1, steps + 1)]
    assert slow[0] not in {e.seed for e in returned[0]} and first["carried_episodes"] >= 2
    carried = [e for step in returned[1:] for e in step if e.seed in slow]
    assert sorted(e.seed for e in carried) == sorted(slow)  # each trained once, in the step where it ended
    for episode in carried:  # turns sampled by the policies of two steps at least, the first by step 1's
        versions = [t.policy_version for t in episode.turns]
        assert episode.valid and versions[0] == 1 and versions[-1] > 1 and versions == sorted(versions)
    trained_turns = sum(r["turns_trained"] for r in result.records)
    played = sum(e.num_turns for step in returned for e in step if e.valid)
    assert trained_turns == played and sum(r["turns_skipped"] for r in result.records) == 0  # tokens kept


def test_spares_start_more_episodes_than_a_step_trains_on(tiny_model_dir, tmp_path):
    trainer = Trainer(config(tiny_model_dir, tmp_path / "run", steps=1, spares=2), progress=False)
    result = trainer.run()
    assert trainer.vec_env.num_envs == EPISODES + 2
    assert result.records[0]["episodes"] == EPISODES


@pytest.mark.parametrize("overrides, message", [
    ({"episode_deadline": 0}, "episode_deadline must be a positive number"),
    ({"deadline": -5}, "deadline must be a positive number"),
    ({"deadline": float("nan")}, "deadline must be a positive number"),
    ({"spares": -1}, "spares"),
    ({"spares": 1, "group_size": 2}, "whole groups"),
    ({"carry_over": "yes"}, "carry_over must be bool"),
    ({"carry_over": True}, "give a deadline"),
])
def test_bad_deadlines_and_spares_are_refused(tiny_model_dir, tmp_path, overrides, message):
    with pytest.raises(ConfigError, match=message):
        config(tiny_model_dir, tmp_path / "run", **overrides)


def test_the_flags_say_what_is_wrong_without_a_traceback():
    assert_clean_error(gem_command("train", "--deadline", "0"), "deadline must be a positive number of seconds")
    help_text = gem_command("train", "--help").stdout
    for flag in ("--episode-deadline", "--deadline", "--carry-over", "--spares"):
        assert flag in help_text

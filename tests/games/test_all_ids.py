"""Every game id: registered, 1,000 random steps with resets, seeded and per-instance randomness."""

from __future__ import annotations

import random

import pytest

import gem_core
from tests.games.helpers import ALL_IDS, REFERENCE_IDS, check_transition

STEPS = 1000


def test_every_reference_id_and_bare_default_is_registered():
    ids = {spec.id for spec in gem_core.list_envs("game:*")}
    assert set(ALL_IDS) <= ids
    assert len(REFERENCE_IDS) == 37
    for env_id in ALL_IDS:
        spec = gem_core.spec(env_id)
        assert spec.description and "\n" not in spec.description
        assert spec.offline and spec.entry_point_name.startswith("gem_envs.game.")


def random_play(env_id: str, seed: int, steps: int = STEPS, other=None) -> list[tuple]:
    """A transcript of ``steps`` random-action steps, resetting when an episode ends; with
    ``other`` (an environment), a random step of it is taken between every two steps."""
    env = gem_core.make(env_id)
    observation, info = env.reset(seed=seed)
    transcript: list[tuple] = [("reset", observation, info["suffix"])]
    episode_return = 0.0
    for _ in range(steps):
        action = env.sample_random_action()
        result = env.step(action)
        check_transition(result)
        observation, reward, terminated, truncated, info = result
        assert not info.get("format_error"), (env_id, action, observation)
        episode_return += reward
        transcript.append((action, observation, reward, terminated, truncated, sorted(info.items())))
        if terminated or truncated:
            assert -0.1 - 1e-9 <= episode_return <= 1.0 + 1e-9, (env_id, episode_return)
            episode_return = 0.0
            observation, info = env.reset()
            transcript.append(("reset", observation, info["suffix"]))
        if other is not None and any(other.step(other.sample_random_action())[2:4]):
            other.reset()
    return transcript


@pytest.mark.parametrize("env_id", ALL_IDS)
def test_random_play_is_well_formed_and_reproducible(env_id):
    global_state = random.getstate()
    first = random_play(env_id, seed=7)
    assert random.getstate() == global_state, "games must not touch the global random module"
    assert random_play(env_id, seed=7) == first
    assert sum(1 for entry in first if entry[0] == "reset") >= 2, "1,000 steps should span episodes"


@pytest.mark.parametrize("env_id", [i for i in ALL_IDS if i.endswith("-hard")])
def test_instances_do_not_share_randomness(env_id):
    alone = random_play(env_id, seed=3, steps=60)
    other = gem_core.make(env_id)
    other.reset(seed=4)
    assert random_play(env_id, seed=3, steps=60, other=other) == alone
    assert random_play(env_id, seed=4, steps=5) != random_play(env_id, seed=3, steps=5)


@pytest.mark.parametrize("env_id", [i for i in ALL_IDS if i.endswith("-easy")])
def test_clone_continues_identically_and_independently(env_id):
    env = gem_core.make(env_id)
    env.reset(seed=11)
    env.step(env.sample_random_action())
    twin = env.clone()
    action = env.sample_random_action()
    assert twin.sample_random_action() == action  # generators are copied too
    assert twin.step(action) == env.step(action)
    twin.reset(seed=99)
    assert env.step(env.sample_random_action())[4]["turn"] == 3


@pytest.mark.parametrize("env_id", ALL_IDS)
def test_step_or_sample_before_reset_is_a_clear_error(env_id):
    env = gem_core.make(env_id)
    with pytest.raises(gem_core.GemError, match="reset"):
        env.step("\\boxed{1}")
    with pytest.raises(gem_core.GemError, match="reset"):
        env.sample_random_action()

"""ROLL's environments playing on a Ray pool (``gem.env_pool`` in their env_config), with the Ray
ROLL pins (2.48, the oldest the ``ray`` extra accepts), on the session's simulated cluster. The
core stage's cluster tests of the Ray mode run here too, against that Ray."""

from __future__ import annotations

import gem_core
from gem_adapters.roll.rollout import roll_env_id
from gem_core.vector.ray_pool import shutdown_pool
from gem_core.wrappers.observation import as_seen
from tests.adapters.roll.conftest import EASY
from tests.adapters.roll.test_rollout import play_as_roll
from tests.vector.test_ray import (  # noqa: F401  (collected here too: the same tests, ROLL's Ray)
    test_a_node_lost_mid_collection_loses_no_episode,
    test_a_pool_with_no_live_host_fails_clearly_in_bounded_time,
    test_one_environment_on_a_pool_survives_its_host,
    test_slots_spread_over_the_nodes_and_episodes_match_the_sync_mode,
)


def test_the_stage_runs_rolls_ray_pin():
    import ray

    assert ray.__version__ == "2.48.0"


def test_roll_plays_an_episode_on_the_pool_as_gem_core_does(gem, ray_cluster):
    pool = {"hosts": 2, "name": "roll-env-pool"}
    env = gem.make(env_id=roll_env_id(EASY), **{"seed": 11, "max_number": 10, "gem": {"env_pool": pool}})
    try:
        actions = [f"\\boxed{{{guess}}}" for guess in range(1, 11)]
        history, terminated, _ = play_as_roll(env, 4, actions)
        reference = gem_core.make(EASY, max_number=10)
        expected = [as_seen(*reference.reset(seed=4))]
        for action in actions[:len(history) - 1]:
            observation, reward, done, truncated, info = reference.step(action)
            expected.append(as_seen(observation, info, done=done or truncated))
        assert [record["observation"] for record in history] == expected
        assert terminated and "node" in env._session.env.where  # it ran on a host
    finally:
        env.close()
        shutdown_pool("roll-env-pool", 2)

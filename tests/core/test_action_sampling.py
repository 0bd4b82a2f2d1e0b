"""Sampling an action never changes the episode: a transcript played with sampled actions equals a
replay of the same actions on a fresh environment that samples nothing, for every environment that
runs offline."""

from __future__ import annotations

import pytest

import gem_core

STEPS = 6
#: What an id needs to be made at all.
MAKE_OPTIONS = {"rg:composite": {"datasets": {"leg_counting": 1, "basic_arithmetic": 1}}}


def offline_ids() -> list[str]:
    """Every single-agent id that runs offline (a multi-agent id counts through its views)."""
    return [s.id for s in gem_core.list_envs() if s.offline and not s.missing_extras
            and s.id != "terminal:Tasks-v0"  # that one needs a folder of tasks
            and not (is_multiagent_class(s) and not s.wrappers)]


def is_multiagent_class(spec) -> bool:
    from gem_core.multiagent import MultiAgentEnv
    from gem_core.registry import load_object

    target = load_object(spec.entry_point, what="env") if isinstance(spec.entry_point, str) else spec.entry_point
    return isinstance(target, type) and issubclass(target, MultiAgentEnv)


def play(env, actions=None):
    observation, _ = env.reset(seed=11)
    transcript, played = [observation], []
    for turn in range(STEPS):
        action = env.sample_random_action() if actions is None else actions[turn]
        played.append(action)
        observation, reward, terminated, truncated, _ = env.step(action)
        transcript.append((observation, reward, terminated, truncated))
        if terminated or truncated:
            break
    return transcript, played


@pytest.mark.parametrize("env_id", offline_ids())
def test_sampled_actions_leave_the_episode_as_a_replay_has_it(env_id):
    env = gem_core.make(env_id, **MAKE_OPTIONS.get(env_id, {}))
    try:
        sampled, actions = play(env)
    finally:
        env.close()
    replay_env = gem_core.make(env_id, **MAKE_OPTIONS.get(env_id, {}))
    try:
        replayed, _ = play(replay_env, actions)
    finally:
        replay_env.close()
    assert replayed == sampled

"""GEM's estimators on ROLL's step samples equal gem_core's on the shared conformance batch, and how
far ROLL's own step_reinforce normalisation is from GEM's ReBN."""

from __future__ import annotations

import random

import numpy as np
import pytest

from gem_adapters.roll.advantages import roll_batch_normalised, step_advantages
from gem_core import GemError
from tests.adapters import conformance as c


def step_samples(episodes, group_ids=None, *, shuffle_seed=None, copies=0, valid=None):
    """ROLL's step samples of ``episodes``: one per turn, with traj_id, step, step_scores (and
    traj_group_id), in a shuffled order and with copies appended as batch_adjust_mode: copy does.
    With ``valid``, also the ``gem_failure`` field GEM's env managers add (a kind for a failed
    episode's samples)."""
    valid = valid or [True] * len(episodes)
    rows = [(f"traj{e}", t, reward, group_ids[e] if group_ids else f"group{e}", "" if valid[e] else "sandbox")
            for e, episode in enumerate(episodes) for t, reward in enumerate(episode)]
    expected_index = list(range(len(rows)))
    if shuffle_seed is not None:
        random.Random(shuffle_seed).shuffle(expected_index)
    expected_index += expected_index[:copies]
    rows = [rows[i] for i in expected_index]
    traj, step, scores, groups, failures = (np.array(column, dtype=object) for column in zip(*rows))
    step_samples.failures = failures
    return traj, step, scores, groups, expected_index


@pytest.mark.parametrize("shuffle_seed, copies", [(None, 0), (3, 0), (7, 2)])
def test_rebn_equals_gem_core_on_the_conformance_batch(shuffle_seed, copies):
    traj, step, scores, groups, order = step_samples(c.EPISODES, shuffle_seed=shuffle_seed, copies=copies)
    values = step_advantages("rebn", traj, step, scores, gamma=c.GAMMA, group_ids=groups)
    np.testing.assert_allclose(values, c.flat(c.REBN)[order], atol=c.TOLERANCE)


def test_per_token_as_roll_spreads_each_sample_over_its_tokens():
    """ROLL gives each step sample's value to every token of its response (gamma 1 within it):
    put back as episodes, every model token carries its turn's ReBN."""
    traj, step, scores, groups, _ = step_samples(c.EPISODES)
    values = iter(step_advantages("rebn", traj, step, scores, gamma=c.GAMMA))
    per_turn = [[next(values) for _ in episode] for episode in c.EPISODES]
    c.assert_per_token(c.on_tokens(per_turn), c.REBN)


def test_grpo_by_name_uses_rolls_traj_group_id():
    traj, step, scores, groups, order = step_samples(c.GROUPED, group_ids=c.GROUP_IDS, shuffle_seed=1)
    values = step_advantages("gem_grpo", traj, step, scores, gamma=c.GAMMA, group_ids=groups)
    np.testing.assert_allclose(values, c.flat(c.GRPO)[order], atol=c.TOLERANCE)


def test_rolls_own_normalisation_differs_by_the_unbiased_std():
    """ROLL divides by the unbiased std + 1e-6 (values checked against ROLL's real
    agentic_reward_norm); GEM by the population std + 1e-6. Over the n returns of the conformance
    batch ROLL's advantages are sqrt((n - 1) / n) times GEM's."""
    np.testing.assert_allclose(roll_batch_normalised([0.9, 1.0, 0.405, 0.45, 0.5]),
                               [0.898, 1.2587, -0.8872, -0.7249, -0.5446], atol=1e-4)
    returns = c.flat(c.RETURNS)
    roll = roll_batch_normalised(returns)
    gem = c.flat(c.REBN)
    np.testing.assert_allclose(roll / gem, np.sqrt((len(returns) - 1) / len(returns)), rtol=1e-5)
    assert not roll_batch_normalised([0.5, 0.5]).any() and not roll_batch_normalised([1.0]).any()


def test_equal_returns_give_zero():
    traj, step, scores, *_ = step_samples([[1.0], [1.0]])
    assert not step_advantages("rebn", traj, step, scores, gamma=0.9).any()


def test_an_episode_missing_a_turn_names_the_fix():
    with pytest.raises(GemError, match="batch_adjust_mode: copy"):
        step_advantages("rebn", ["a", "a"], [0, 2], [0.0, 1.0], gamma=0.9)
    with pytest.raises(GemError, match="two different rewards"):
        step_advantages("rebn", ["a", "a"], [0, 0], [0.0, 1.0], gamma=0.9)
    with pytest.raises(GemError, match="rebn"):
        step_advantages("rebm", ["a"], [0], [0.0], gamma=0.9)


@pytest.mark.parametrize("shuffle_seed, copies", [(None, 0), (5, 3)])
def test_failed_episodes_leave_the_statistics(shuffle_seed, copies):
    traj, step, scores, groups, order = step_samples(c.MIXED, shuffle_seed=shuffle_seed, copies=copies,
                                                     valid=c.MIXED_VALID)
    failed = [bool(kind) for kind in step_samples.failures]
    values = step_advantages("rebn", traj, step, scores, gamma=c.GAMMA, group_ids=groups, failed=failed)
    np.testing.assert_allclose(values, c.flat(c.MIXED_REBN)[order], atol=c.TOLERANCE)
    traj, step, scores, groups, order = step_samples(c.GROUPED_MIXED, group_ids=c.GROUPED_MIXED_IDS,
                                                     valid=c.GROUPED_MIXED_VALID)
    failed = [bool(kind) for kind in step_samples.failures]
    values = step_advantages("gem_grpo", traj, step, scores, gamma=c.GAMMA, group_ids=groups, failed=failed)
    np.testing.assert_allclose(values, c.flat(c.GROUPED_MIXED_GRPO)[order], atol=c.TOLERANCE)


def test_the_pipelines_step_masks_the_failed_samples_and_logs_the_failed_share():
    """GEM's stand-in for ROLL's compute_response_level_rewards on a batch's fields: the failed
    episodes' samples lose ROLL's loss masks (response_mask, final_response_mask), the others keep
    them; the metrics give the share of episodes that failed."""
    import torch

    from gem_adapters.roll.advantages import response_level_rewards

    traj, step, scores, groups, order = step_samples(c.MIXED, shuffle_seed=2, valid=c.MIXED_VALID)
    samples = len(traj)
    tensors = {"step_rewards": torch.zeros(samples), "response_mask": torch.ones(samples, 6, dtype=torch.long),
               "final_response_mask": torch.ones(samples, 5)}
    non_tensors = {"traj_id": traj, "step": step, "step_scores": scores, "traj_group_id": groups,
                   "gem_failure": step_samples.failures}
    metrics = response_level_rewards("rebn", tensors, non_tensors, gamma=c.GAMMA)
    failed = torch.tensor([bool(kind) for kind in step_samples.failures])
    assert not tensors["response_mask"][failed].any() and tensors["response_mask"][~failed].all()
    assert not tensors["final_response_mask"][failed].any() and tensors["final_response_mask"][~failed].all()
    np.testing.assert_allclose(tensors["response_level_rewards"].numpy(), c.flat(c.MIXED_REBN)[order], atol=1e-5)
    assert metrics["gem/failed_rate"] == pytest.approx(2 / 5) and metrics["gem/failed_sandbox"] == pytest.approx(2 / 5)
    assert metrics["gem/failed_deadline"] == 0.0

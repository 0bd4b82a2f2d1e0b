"""GEM's estimators in place of RL2's ``compute_advantages``, on the shared conformance batch.

Each episode becomes RL2's state dict as its rollout builds it (prompt tokens, then per turn the
model's tokens with the turn's reward on the last and the environment's tokens), goes through
RL2's real ``state_dict_to_tensor_dict`` and ``pack_tensor_dicts``, and the trainer module's
``compute_advantages`` (GEM's, once installed) runs in a one-process gloo group with wandb
disabled. Stood in for, at import only: sglang, sglang_router, flash_attn, ring_flash_attn."""

from __future__ import annotations

import pytest
import torch
from omegaconf import OmegaConf

from gem_adapters.common.estimators import estimator_names
from gem_adapters.rl2.advantages import install, installed, uninstall
from gem_core.estimators import advantage_stats
from tests.adapters import conformance as batch

PROMPT = 3  # prompt tokens before the first turn


def state_dict(episode, layout, *, token=7, failed=False):
    """RL2's state dict for one episode, as ``Rollout.rollout`` fills it; a ``failed`` one ends
    with reward NaN on its last turn, as GEM's environment file marks it."""
    states = [token] * PROMPT
    actions, mask, rewards = [0] * PROMPT, [0] * PROMPT, [0.0] * PROMPT
    episode = [*episode[:-1], float("nan")] if failed else episode
    for reward, (model_tokens, env_tokens) in zip(episode, layout):
        states += [token] * model_tokens
        actions += [token] * model_tokens
        mask += [1] * model_tokens
        rewards += [0.0] * (model_tokens - 1) + [reward]
        states += [token] * env_tokens
        actions += [0] * env_tokens
        mask += [0] * env_tokens
        rewards += [0.0] * env_tokens
    return {"states": states, "actions": actions, "action_mask": mask, "logps": [0.0] * len(states),
            "rewards": rewards}


def packed(episodes, layout, *, split_first=False, valid=None):
    """RL2's packed tensor dict and cu_seqs; with ``split_first`` the first episode is two sequences
    (its second turn in a new one, as when ``next_state`` does not extend the text); ``valid``
    (one flag per episode) marks the failed ones."""
    from RL2.datasets import pack_tensor_dicts, state_dict_to_tensor_dict

    tensor_dicts, lengths = [], []
    for index, (episode, turns, ok) in enumerate(zip(episodes, layout, valid or [True] * len(episodes))):
        if split_first and index == 0:
            parts = [state_dict(episode[:1], turns[:1]), state_dict(episode[1:], turns[1:], failed=not ok)]
        else:
            parts = [state_dict(episode, turns, failed=not ok)]
        tensor_dicts += [state_dict_to_tensor_dict(part) for part in parts]
        lengths.append(len(parts))
    cu_seqs = torch.cumsum(torch.tensor([0, *lengths]), dim=0)
    return pack_tensor_dicts(tensor_dicts), cu_seqs


def adv_config(responses_per_prompt=1, *, global_norm=False):
    """RL2's ``adv`` section."""
    return OmegaConf.create({"estimator": "reinforce", "gamma": batch.GAMMA, "lamda": 1.0,
                             "responses_per_prompt": responses_per_prompt, "global_norm": global_norm,
                             "norm_var": False})


@pytest.fixture
def trainer(gloo):
    import RL2.trainer.ppo as trainer

    yield trainer
    uninstall()


def test_rebn_in_place_of_compute_advantages_matches_gem_core_per_token(trainer, capsys):
    native = trainer.compute_advantages
    assert install("rebn") == "rebn" and installed() == "rebn"
    tensor_dict, cu_seqs = packed(batch.EPISODES, batch.LAYOUT)
    trainer.compute_advantages(adv_config(), tensor_dict, cu_seqs, 1)
    # the tensor dict is shifted by one token (RL2 predicts token t+1 at t)
    batch.assert_per_token(tensor_dict["advantages"][:, PROMPT - 1:], batch.REBN)
    # RL2's own logger (rank0_log: its console line and wandb) got the advantages' statistics over the turns
    logged = capsys.readouterr().out
    stats = advantage_stats(batch.REBN)
    for key in ("advantage_std", "advantage_min", "advantage_max"):
        assert f"gem/{key}: {stats[key]:.3g}" in logged, logged
    import RL2.utils.algorithms

    assert RL2.utils.algorithms.compute_advantages is trainer.compute_advantages  # where RL2 imports it from
    uninstall()
    assert trainer.compute_advantages is native and installed() is None


def test_rl2s_own_estimator_sums_the_turns_into_one_advantage(trainer):
    """What GEM's estimator replaces: RL2's reinforce gives every token of an episode one value."""
    tensor_dict, cu_seqs = packed(batch.EPISODES, batch.LAYOUT)
    trainer.compute_advantages(adv_config(global_norm=True), tensor_dict, cu_seqs, 1)
    first = tensor_dict["advantages"][0][tensor_dict["action_mask"][0].bool()]
    assert torch.unique(first).numel() == 1


def test_an_episode_split_over_two_sequences_keeps_its_turns(trainer):
    install("rebn")
    tensor_dict, cu_seqs = packed(batch.EPISODES, batch.LAYOUT, split_first=True)
    assert cu_seqs.tolist() == [0, *range(2, len(batch.EPISODES) + 2)]  # the first episode in two sequences
    trainer.compute_advantages(adv_config(), tensor_dict, cu_seqs, 1)
    # one row per sequence: the first episode's first turn, the rest of it, then the other episodes
    rows = [batch.REBN[0][:1], batch.REBN[0][1:], *batch.REBN[1:]]
    layout = [batch.LAYOUT[0][:1], batch.LAYOUT[0][1:], *batch.LAYOUT[1:]]
    batch.assert_per_token(tensor_dict["advantages"][:, PROMPT - 1:], rows, layout)


def test_grpo_groups_the_responses_of_one_prompt(trainer):
    install("gem_grpo")
    layout = batch.LAYOUT[:len(batch.GROUPED)]
    tensor_dict, cu_seqs = packed(batch.GROUPED, layout)
    trainer.compute_advantages(adv_config(responses_per_prompt=len(batch.GROUPED)), tensor_dict, cu_seqs, 1)
    batch.assert_per_token(tensor_dict["advantages"][:, PROMPT - 1:], batch.GRPO, layout)


def test_every_gem_estimator_is_available_by_name(trainer):
    tensor_dict, cu_seqs = packed(batch.GROUPED, batch.LAYOUT[:len(batch.GROUPED)])
    for name, gem_name in estimator_names().items():
        assert install(name) == gem_name
        trainer.compute_advantages(adv_config(responses_per_prompt=len(batch.GROUPED)), tensor_dict, cu_seqs, 1)
        assert torch.isfinite(tensor_dict["advantages"]).all(), name


def test_an_unknown_estimator_names_the_closest_ones(trainer):
    from gem_core import GemError

    with pytest.raises(GemError, match="rebn"):
        install("rebnn")


def test_failed_episodes_leave_the_statistics_and_rl2s_loss(trainer, capsys):
    """The conformance batch plus failed episodes (NaN on their last turn, the first one split over
    two sequences): the valid turns get gem_core's ReBN over the valid episodes alone, the failed
    episodes' rows lose their action_mask, and RL2's own loss aggregation (``aggregate_values``,
    over log-probabilities masked as its actor's forward masks them) gives their tokens no gradient
    and, at RL2's token level, the loss of the valid episodes alone."""
    from RL2.utils.functions import aggregate_values

    install("rebn")
    episodes = (batch.FAILED[0], *batch.MIXED[:1], *batch.MIXED[2:])
    layout = (batch.FAILED_LAYOUT[0], *batch.MIXED_LAYOUT[:1], *batch.MIXED_LAYOUT[2:])
    valid = (False, *batch.MIXED_VALID[:1], *batch.MIXED_VALID[2:])
    tensor_dict, cu_seqs = packed(episodes, layout, split_first=True, valid=valid)
    original_mask = tensor_dict["action_mask"].clone()
    trainer.compute_advantages(adv_config(), tensor_dict, cu_seqs, 1)
    expected = [[0.0], [0.0], *batch.MIXED_REBN[:1], *batch.MIXED_REBN[2:]]  # one row per sequence
    rows_layout = [layout[0][:1], layout[0][1:], *layout[1:]]
    assert len(expected) == tensor_dict["advantages"].shape[0]
    batch.assert_per_token(tensor_dict["advantages"][:, PROMPT - 1:], expected, rows_layout)
    failed_rows = [0, 1, 5]  # the first episode's two sequences, and the last episode's
    assert not tensor_dict["action_mask"][failed_rows].any() and not tensor_dict["rewards"].isnan().any()
    logged = capsys.readouterr().out
    assert "gem/failed_rate: 0.4" in logged and "gem/advantage_std: 1" in logged, logged

    rows = range(len(expected))
    valid_rows = [i for i in rows if i not in failed_rows]
    generator = torch.Generator().manual_seed(0)
    old_logps = -torch.rand(original_mask.shape, generator=generator) * original_mask  # before the estimator
    parameters = old_logps + 0.05 * torch.randn(original_mask.shape, generator=generator)

    def loss_of(chosen, avg_level):
        weights = parameters[chosen].clone().requires_grad_()
        mask = tensor_dict["action_mask"][chosen]
        logps = weights * mask  # as RL2's actor forward masks them
        ratio = torch.exp(logps - old_logps[chosen])
        objective = tensor_dict["advantages"][chosen] * ratio
        clipped = tensor_dict["advantages"][chosen] * ratio.clamp(0.8, 1.2)
        losses = -torch.min(objective, clipped)
        loss = aggregate_values(losses, mask, avg_level, mask.sum(), tensor_dict["eos_mask"][chosen].sum())
        loss.backward()
        return loss, weights.grad

    for avg_level in ("token", "sequence"):
        loss, grad = loss_of(list(rows), avg_level)
        assert not grad[failed_rows].any() and grad[valid_rows].abs().sum() > 0
    loss, _ = loss_of(list(rows), "token")
    alone, _ = loss_of(valid_rows, "token")
    torch.testing.assert_close(loss, alone)


def test_a_group_keeps_its_valid_members(trainer):
    install("gem_grpo")
    tensor_dict, cu_seqs = packed(batch.GROUPED_MIXED, batch.GROUPED_MIXED_LAYOUT, valid=batch.GROUPED_MIXED_VALID)
    trainer.compute_advantages(adv_config(responses_per_prompt=len(batch.GROUPED_MIXED)), tensor_dict, cu_seqs, 1)
    batch.assert_per_token(tensor_dict["advantages"][:, PROMPT - 1:], batch.GROUPED_MIXED_GRPO,
                           batch.GROUPED_MIXED_LAYOUT)

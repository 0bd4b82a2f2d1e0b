"""GEM's estimators inside OpenRLHF's own advantage path: the real
``RemoteExperienceMaker.compute_advantages_and_returns`` (as installed by GEM), fed through OpenRLHF's
own conversion of agent outputs into experiences and its own micro-batching, gives per token exactly
gem_core's values on the shared conformance batch. Stood in for, at import only: flash_attn and
vllm (standins.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from openrlhf.trainer.ppo_utils.experience_maker import RemoteExperienceMaker
from openrlhf.trainer.ppo_utils.kl_controller import FixedKLController
from openrlhf.trainer.ppo_utils.samples_generator import SamplesGenerator

from gem_adapters.common.estimators import token_estimate
from gem_adapters.openrlhf.advantages import install, installed, uninstall
from gem_adapters.openrlhf.labels import encode_label
from gem_core import GemError
from gem_core.estimators import advantage_stats
from tests.adapters import conformance as batch

PAD = 0


@pytest.fixture
def gem_estimator():
    installed_names = []

    def use(name: str) -> str:
        installed_names.append(install(name))
        return installed_names[-1]

    yield use
    uninstall()
    assert installed() is None


def maker_for(parse, *, n: int = 1, micro_batch: int = 2, kl: float = 0.0) -> RemoteExperienceMaker:
    args = parse(["--actor.model_name_or_path", "m", "--train.agent_func_path", "agent.py",
                  "--algo.advantage.estimator", "reinforce", "--algo.advantage.gamma", str(batch.GAMMA),
                  "--rollout.n_samples_per_prompt", str(n), "--rollout.micro_batch_size", str(micro_batch),
                  "--rollout.batch_size", "4", "--actor.num_gpus_per_node", "1"])
    return RemoteExperienceMaker(None, None, None, None, FixedKLController(kl), SimpleNamespace(args=args),
                                 tokenizer=SimpleNamespace(pad_token_id=PAD))


def agent_outputs(episodes, layout, valid=None):
    """What the GEM agent returns for each episode: one prompt token, then the layout's tokens,
    with the per-turn rewards in the label (a failed episode's label: its failure, no reward)."""
    outputs = []
    for rewards, turns, spans, ok in zip(episodes, layout, batch.turn_spans(layout), valid or [True] * len(episodes)):
        length = sum(m + e for m, e in turns)
        played = {"turn_rewards": list(rewards), "stop": "terminated"} if ok else {
            "turn_rewards": [], "stop": "failed",
            "failure": {"kind": "sandbox", "error": "the container died", "phase": "step", "turn": 1}}
        outputs.append({
            "prompt": "p", "label": encode_label("game:GuessTheNumber-v0-easy", 0, **played),
            "observation_tokens": [5] * (1 + length), "action_ranges": [(1 + s, 1 + e) for s, e in spans],
            "reward": sum(rewards) if ok else 0.0, "scores": sum(rewards) if ok else 0.0, "rollout_log_probs": None,
            "truncated": False, "extra_logs": {}, "images": None, "mm_train_inputs": None,
        })
    return outputs


def experiences_for(maker, episodes=batch.EPISODES, layout=batch.LAYOUT, kl_per_token: float = 0.0, valid=None):
    """OpenRLHF's path from agent outputs to the experiences its trainer computes advantages on."""
    samples = [SamplesGenerator._process_response_into_experience(SimpleNamespace(), output, max_len=4096)
               for output in agent_outputs(episodes, layout, valid)]
    experiences = maker.split_rollout_samples(samples)
    for experience in experiences:  # what make_experience adds (without the models' forward passes)
        experience.kl = kl_per_token * experience.action_mask.float()
    return experiences


def rows(experiences, field: str) -> torch.Tensor:
    """One row per episode, in rollout order, padded to the widest."""
    width = max(getattr(e, field).shape[1] for e in experiences)
    out = {}
    for experience in experiences:
        values = torch.nn.functional.pad(getattr(experience, field).double(),
                                         (0, width - getattr(experience, field).shape[1]))
        for index, row in zip(experience.index, values):
            out[index] = row
    return torch.stack([out[i] for i in sorted(out)])


def test_rebn_through_openrlhfs_advantage_path_matches_gem_core(openrlhf_parse, gem_estimator):
    episodes = len(batch.EPISODES)
    micro_batch = (episodes + 1) // 2  # two micro-batches, one batch statistic
    maker = maker_for(openrlhf_parse, micro_batch=micro_batch)
    assert gem_estimator("rebn") == "rebn" and installed() == "rebn"
    experiences = experiences_for(maker)
    assert [len(e.labels) for e in experiences] == [micro_batch, episodes - micro_batch]
    result = maker.compute_advantages_and_returns(experiences)
    batch.assert_per_token(rows(result, "advantages"), batch.REBN)
    batch.assert_per_token(rows(result, "returns"), batch.RETURNS)
    stats = advantage_stats(batch.REBN)  # over the batch's turns: mean 0, std 1 (up to ReBN's eps)
    assert stats["advantage_mean"] == pytest.approx(0.0, abs=1e-9)
    assert stats["advantage_std"] == pytest.approx(1.0, abs=1e-5)
    for experience in result:
        assert experience.advantages.shape == experience.action_mask.shape
        assert (experience.advantages[~experience.action_mask.bool()] == 0).all()
        assert experience.kl is None
        for key, value in stats.items():  # what OpenRLHF logs from info, one value per sample
            assert experience.info[f"gem_{key}"].tolist() == pytest.approx([value] * len(experience.labels), abs=1e-6)


def test_without_gem_openrlhfs_own_estimator_gives_other_values(openrlhf_parse):
    maker = maker_for(openrlhf_parse)
    assert installed() is None
    native = rows(maker.compute_advantages_and_returns(experiences_for(maker)), "advantages")
    with pytest.raises(AssertionError, match="differ from gem_core"):
        batch.assert_per_token(native, batch.REBN)


def test_grpo_groups_the_samples_of_one_prompt(openrlhf_parse, gem_estimator):
    maker = maker_for(openrlhf_parse, n=len(batch.GROUPED))  # one group
    gem_estimator("gem_grpo")
    layout = batch.LAYOUT[:len(batch.GROUPED)]
    result = maker.compute_advantages_and_returns(experiences_for(maker, batch.GROUPED, layout))
    batch.assert_per_token(rows(result, "advantages"), batch.GRPO, layout)


def test_the_kl_penalty_in_the_reward_sums_over_each_turns_tokens(openrlhf_parse, gem_estimator):
    maker = maker_for(openrlhf_parse, kl=0.1)
    gem_estimator("rebn")
    result = maker.compute_advantages_and_returns(experiences_for(maker, kl_per_token=0.5))
    penalised = [[reward - 0.1 * 0.5 * model for reward, (model, _) in zip(rewards, turns)]
                 for rewards, turns in zip(batch.EPISODES, batch.LAYOUT)]
    rewards, mask = batch.token_rows(penalised)
    expected, _ = token_estimate("rebn", rewards, mask, gamma=batch.GAMMA)
    actual = rows(result, "advantages")
    assert torch.allclose(actual[:, :mask.shape[1]][mask.bool()], expected.double()[mask.bool()], atol=1e-5)


def test_unknown_estimator_and_samples_without_turn_rewards_are_refused(openrlhf_parse, gem_estimator):
    with pytest.raises(GemError, match="rebn"):
        install("rebm")
    maker = maker_for(openrlhf_parse)
    gem_estimator("rebn")
    experiences = experiences_for(maker)
    experiences[0].labels[0] = "plain label"
    with pytest.raises(GemError, match="gem openrlhf config"):
        maker.compute_advantages_and_returns(experiences)


@pytest.mark.parametrize("token_level_loss", [True, False])
def test_failed_episodes_leave_the_statistics_and_get_no_weight_in_openrlhfs_policy_loss(
        openrlhf_parse, gem_estimator, token_level_loss):
    """The conformance batch plus failed episodes through OpenRLHF's advantage path: the valid
    samples get gem_core's ReBN over the valid episodes alone, and OpenRLHF's own PolicyLoss,
    masked with the experiences' action_mask as its actor does, gives no gradient to a failed
    episode's tokens and the loss of the valid episodes alone."""
    from openrlhf.models.loss import PolicyLoss

    maker = maker_for(openrlhf_parse, micro_batch=3)  # two micro-batches, one batch statistic
    gem_estimator("rebn")
    result = maker.compute_advantages_and_returns(experiences_for(maker, batch.MIXED, batch.MIXED_LAYOUT,
                                                                  valid=batch.MIXED_VALID))
    advantages, mask = rows(result, "advantages"), rows(result, "action_mask")
    batch.assert_per_token(advantages, batch.MIXED_REBN, batch.MIXED_LAYOUT)
    failed = [i for i, ok in enumerate(batch.MIXED_VALID) if not ok]
    valid = [i for i, ok in enumerate(batch.MIXED_VALID) if ok]
    assert not mask[failed].any() and mask[valid].any()
    assert all(e.info["gem_advantage_std"].tolist()[0] == pytest.approx(1.0, abs=1e-5) for e in result)

    generator = torch.Generator().manual_seed(0)
    old = -torch.rand(mask.shape, generator=generator, dtype=torch.float64)
    new = old + 0.05 * torch.randn(mask.shape, generator=generator, dtype=torch.float64)
    loss_fn = PolicyLoss(token_level_loss=token_level_loss)

    def loss_of(chosen):
        log_probs = new[chosen].clone().requires_grad_()
        loss = loss_fn(log_probs, old[chosen], advantages[chosen], action_mask=mask[chosen])[0]
        loss.backward()
        return loss, log_probs.grad

    loss, grad = loss_of(list(range(len(batch.MIXED))))
    alone, alone_grad = loss_of(valid)
    assert not grad[failed].any() and grad[valid].abs().sum() > 0
    torch.testing.assert_close(loss, alone)
    torch.testing.assert_close(grad[valid], alone_grad)


def test_a_group_keeps_its_valid_members(openrlhf_parse, gem_estimator):
    maker = maker_for(openrlhf_parse, n=len(batch.GROUPED_MIXED))  # one group
    gem_estimator("gem_grpo")
    result = maker.compute_advantages_and_returns(experiences_for(
        maker, batch.GROUPED_MIXED, batch.GROUPED_MIXED_LAYOUT, valid=batch.GROUPED_MIXED_VALID))
    batch.assert_per_token(rows(result, "advantages"), batch.GROUPED_MIXED_GRPO, batch.GROUPED_MIXED_LAYOUT)

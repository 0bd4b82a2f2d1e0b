"""verl's own ``compute_advantage`` with GEM's estimators equals GEM's core estimators, on
hand-built batches with several turns per row and on batches the agent loop produced."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
import torch

import gem_core
from gem_core import GemError

#: Per-episode turn rewards, and per turn (model tokens, environment tokens after it).
EPISODES = [
    ([0.0, 0.0, 1.0], [(3, 2), (1, 4), (2, 0)]),
    ([-0.1], [(5, 0)]),
    ([0.5, 0.0, 0.0, 0.25], [(2, 1), (2, 1), (1, 3), (4, 0)]),
    ([0.0, 1.0], [(1, 1), (6, 0)]),
]
WIDTH = 20  # response tokens per row, the rest is padding


def hand_built_batch(*, spread: bool = False, uids=("a", "a", "b", "b")):
    """A DataProto like verl's trainer holds: rewards on each turn's last model token (or, with
    ``spread``, split over the turn's tokens as a KL penalty would), 0 on environment tokens and
    padding."""
    from verl import DataProto

    rewards = torch.zeros(len(EPISODES), WIDTH)
    mask = torch.zeros(len(EPISODES), WIDTH, dtype=torch.long)
    spans = []
    for row, (turn_rewards, layout) in enumerate(EPISODES):
        position, row_spans = 0, []
        for reward, (model_tokens, env_tokens) in zip(turn_rewards, layout):
            mask[row, position:position + model_tokens] = 1
            if spread:
                rewards[row, position:position + model_tokens] = reward / model_tokens
            else:
                rewards[row, position + model_tokens - 1] = reward
            row_spans.append((position, position + model_tokens))
            position += model_tokens + env_tokens
        spans.append(row_spans)
    data = DataProto.from_dict(
        tensors={"token_level_rewards": rewards, "response_mask": mask},
        non_tensors={"uid": np.array(uids, dtype=object)},
    )
    return data, spans


def on_tokens(per_turn: list[np.ndarray], spans) -> torch.Tensor:
    """Per-turn values spread over each turn's tokens."""
    out = torch.zeros(len(spans), WIDTH, dtype=torch.float64)
    for row, (values, row_spans) in enumerate(zip(per_turn, spans)):
        for value, (start, end) in zip(values, row_spans):
            out[row, start:end] = float(value)
    return out


def verl_advantages(data, name: str, gamma: float):
    from verl.trainer.config import AlgoConfig
    from verl.trainer.ppo.ray_trainer import compute_advantage

    config = AlgoConfig(gamma=gamma, adv_estimator=name)
    return compute_advantage(data, adv_estimator=name, gamma=gamma, config=config)


@pytest.mark.parametrize("gamma", [0.9, 1.0, 0.5])
def test_verl_compute_advantage_with_rebn_equals_core_rebn(gamma):
    data, spans = hand_built_batch()
    result = verl_advantages(data, "rebn", gamma)
    rewards = [turn_rewards for turn_rewards, _ in EPISODES]
    expected = on_tokens(gem_core.get_estimator("rebn")(rewards, gamma=gamma), spans)
    torch.testing.assert_close(result.batch["advantages"].double(), expected, atol=1e-6, rtol=1e-5)
    returns = on_tokens([episode(r).discounted_returns(gamma) for r in rewards], spans)
    torch.testing.assert_close(result.batch["returns"].double(), returns, atol=1e-6, rtol=1e-5)
    # ReBN normalises over every turn of the batch.
    turn_advantages = np.concatenate(gem_core.get_estimator("rebn")(rewards, gamma=gamma))
    assert abs(turn_advantages.mean()) < 1e-9 and turn_advantages.std() == pytest.approx(1.0, abs=1e-5)


def episode(rewards):
    from gem_core.episodes import Episode, Turn

    return Episode("x", 0, [Turn("", "", r) for r in rewards])


def test_gem_rebn_is_the_same_estimator_as_rebn():
    data, _ = hand_built_batch()
    plain = verl_advantages(data, "rebn", 0.9).batch["advantages"].clone()
    data, _ = hand_built_batch()
    torch.testing.assert_close(verl_advantages(data, "gem_rebn", 0.9).batch["advantages"], plain)


def test_verl_v1_path_gives_the_same_advantages():
    from verl.trainer.config import AlgoConfig
    from verl.trainer.ppo.v1.utils import compute_advantage_for_multi_trajectories

    data, spans = hand_built_batch()
    keys = [f"{uid}_{row}_0" for row, uid in enumerate(data.non_tensor_batch["uid"])]
    result = compute_advantage_for_multi_trajectories(
        data, batch_keys=keys, adv_estimator="rebn", gamma=0.9, config=AlgoConfig(gamma=0.9, adv_estimator="rebn"))
    rewards = [turn_rewards for turn_rewards, _ in EPISODES]
    expected = on_tokens(gem_core.get_estimator("rebn")(rewards, gamma=0.9), spans)
    torch.testing.assert_close(result.batch["advantages"].double(), expected, atol=1e-6, rtol=1e-5)


def test_group_estimators_use_verls_uid_groups():
    data, spans = hand_built_batch(uids=("a", "b", "a", "b"))
    result = verl_advantages(data, "gem_grpo", 1.0)
    rewards = [turn_rewards for turn_rewards, _ in EPISODES]
    expected = on_tokens(gem_core.get_estimator("grpo")(rewards, gamma=1.0, group_ids=["a", "b", "a", "b"]), spans)
    torch.testing.assert_close(result.batch["advantages"].double(), expected, atol=1e-6, rtol=1e-5)


def test_a_turn_reward_spread_over_its_tokens_counts_once():
    plain, _ = hand_built_batch()
    spread, _ = hand_built_batch(spread=True)
    torch.testing.assert_close(verl_advantages(spread, "rebn", 0.9).batch["advantages"],
                               verl_advantages(plain, "rebn", 0.9).batch["advantages"], atol=1e-5, rtol=1e-5)


def test_the_estimator_needs_gamma():
    from gem_adapters.verl.advantages import VerlEstimator

    data, _ = hand_built_batch()
    with pytest.raises(GemError, match="algorithm config"):
        VerlEstimator("rebn")(data.batch["token_level_rewards"], data.batch["response_mask"])


def played_batch(run_config, chat_tokenizer, plays):
    """The agent loop's outputs for ``plays`` (env id, seed, scripted answer), and the batch verl's v1
    trainer pads them into: per-token rewards and response masks, one uid per row."""
    from verl import DataProto

    from tests.adapters.verl.conftest import ScriptedServer, make_agent_loop
    from tests.adapters.verl.test_rollout import row

    outputs = []
    for env_id, seed, answer in plays:
        server = ScriptedServer(chat_tokenizer, answer)

        async def go():
            loop = make_agent_loop(run_config, server, chat_tokenizer)
            return await loop.run({"logprobs": False}, **row(env_id, seed))

        outputs.append(asyncio.run(go()).as_dict())
    width = max(len(o["responses"]) for o in outputs)

    def pad(key):
        return torch.stack([torch.nn.functional.pad(o[key], (0, width - len(o[key]))) for o in outputs])

    data = DataProto.from_dict(tensors={"token_level_rewards": pad("rm_scores"), "response_mask": pad("response_mask")},
                               non_tensors={"uid": np.array([f"u{i}" for i in range(len(outputs))], dtype=object)})
    return outputs, data


def test_agent_loop_outputs_through_verl_equal_core_rebn(run_config, chat_tokenizer):
    """Episodes played by the agent loop, batched the way verl's v1 trainer pads them, then verl's
    compute_advantage: every turn gets GEM's ReBN advantage of its episode."""
    from tests.adapters.verl.test_rollout import binary_search

    outputs, data = played_batch(run_config, chat_tokenizer, [
        ("game:GuessTheNumber-v0-easy", 1, binary_search),
        ("game:GuessTheNumber-v0-hard", 7, binary_search),
        ("game:GuessTheNumber-v0-easy", 2, lambda prompt: "\\boxed{11}"),
        ("testpack:Countdown-v0", 0, lambda prompt: "next")])
    advantages = verl_advantages(data, "rebn", 0.9).batch["advantages"]

    rewards = [o["extra_fields"]["turn_scores"] for o in outputs]
    assert [len(r) for r in rewards] != [1, 1, 1, 1]  # several turns per row
    expected = gem_core.get_estimator("rebn")(rewards, gamma=0.9)
    from gem_adapters.common.turns import turn_end_positions

    for row_index, (output, values) in enumerate(zip(outputs, expected)):
        mask = output["response_mask"].bool()
        ends = turn_end_positions(mask)
        assert advantages[row_index, ends].double().numpy() == pytest.approx(values, abs=1e-5)
        assert not advantages[row_index, len(mask):].any() and not advantages[row_index, :len(mask)][~mask].any()


def test_the_conformance_batch_through_verls_compute_advantage():
    """The batch every adapter stage checks: verl's own compute_advantage with GEM's estimators
    gives gem_core's ReBN per token, and GRPO for a two-episode group."""
    from verl import DataProto

    from tests.adapters import conformance as c

    rewards, mask = c.token_rows()
    data = DataProto.from_dict(tensors={"token_level_rewards": rewards, "response_mask": mask},
                               non_tensors={"uid": np.array([f"u{i}" for i in range(len(c.EPISODES))], dtype=object)})
    c.assert_per_token(verl_advantages(data, "rebn", c.GAMMA).batch["advantages"], c.REBN)
    layout = c.LAYOUT[:len(c.GROUPED)]
    rewards, mask = c.token_rows(c.GROUPED, layout)
    data = DataProto.from_dict(tensors={"token_level_rewards": rewards, "response_mask": mask},
                               non_tensors={"uid": np.array(c.GROUP_IDS, dtype=object)})
    c.assert_per_token(verl_advantages(data, "gem_grpo", c.GAMMA).batch["advantages"], c.GRPO, layout)


def test_failed_episodes_leave_the_statistics_of_verls_compute_advantage():
    """The conformance batch plus failed episodes, written as the agent loop writes them (no model
    token): the valid rows get gem_core's ReBN over the valid episodes alone, the failed ones 0; a
    GRPO group keeps its valid members."""
    from verl import DataProto

    from tests.adapters import conformance as c

    rewards, mask = c.mixed_token_rows()
    data = DataProto.from_dict(tensors={"token_level_rewards": rewards, "response_mask": mask},
                               non_tensors={"uid": np.array([f"u{i}" for i in range(len(c.MIXED))], dtype=object)})
    c.assert_per_token(verl_advantages(data, "rebn", c.GAMMA).batch["advantages"], c.MIXED_REBN, c.MIXED_LAYOUT)
    rewards, mask = c.token_rows(c.GROUPED_MIXED, c.GROUPED_MIXED_LAYOUT, failed_unmasked=c.GROUPED_MIXED_VALID)
    data = DataProto.from_dict(tensors={"token_level_rewards": rewards, "response_mask": mask},
                               non_tensors={"uid": np.array(c.GROUPED_MIXED_IDS, dtype=object)})
    c.assert_per_token(verl_advantages(data, "gem_grpo", c.GAMMA).batch["advantages"], c.GROUPED_MIXED_GRPO,
                       c.GROUPED_MIXED_LAYOUT)


@pytest.mark.parametrize("loss_agg_mode", ["token-mean", "seq-mean-token-mean", "seq-mean-token-sum"])
def test_verls_policy_loss_gives_a_failed_episodes_tokens_no_weight(loss_agg_mode):
    """verl's own PPO policy loss (``get_policy_loss_fn("vanilla")`` and its ``agg_loss``, with
    ``response_mask`` as verl's actor passes it) on the batch plus failed episodes: no gradient
    reaches a failed episode's tokens, and the loss is the loss of the valid episodes alone."""
    from verl import DataProto
    from verl.trainer.ppo.core_algos import get_policy_loss_fn
    from verl.workers.config import FSDPActorConfig

    from tests.adapters import conformance as c

    rewards, mask = c.mixed_token_rows()
    data = DataProto.from_dict(tensors={"token_level_rewards": rewards, "response_mask": mask},
                               non_tensors={"uid": np.array([f"u{i}" for i in range(len(c.MIXED))], dtype=object)})
    advantages = verl_advantages(data, "rebn", c.GAMMA).batch["advantages"]
    config = FSDPActorConfig(strategy="fsdp", ppo_micro_batch_size_per_gpu=1, rollout_n=1, loss_agg_mode=loss_agg_mode)
    generator = torch.Generator().manual_seed(0)
    old_log_prob = -torch.rand(mask.shape, generator=generator)
    new_log_prob = old_log_prob + 0.05 * torch.randn(mask.shape, generator=generator)

    def loss_of(rows):
        log_prob = new_log_prob[rows].clone().requires_grad_()
        loss, _ = get_policy_loss_fn("vanilla")(
            old_log_prob=old_log_prob[rows], log_prob=log_prob, advantages=advantages[rows],
            response_mask=mask[rows].bool(), loss_agg_mode=loss_agg_mode, config=config)
        loss.backward()
        return loss, log_prob.grad

    everyone = list(range(len(c.MIXED)))
    valid = [i for i, ok in enumerate(c.MIXED_VALID) if ok]
    failed = [i for i, ok in enumerate(c.MIXED_VALID) if not ok]
    loss, grad = loss_of(everyone)
    alone, alone_grad = loss_of(valid)
    assert not grad[failed].any() and grad[valid].abs().sum() > 0
    torch.testing.assert_close(loss, alone)
    torch.testing.assert_close(grad[valid], alone_grad)


def test_played_episodes_with_a_failed_one_through_verl_equal_core_rebn_over_the_valid_ones(run_config,
                                                                                               chat_tokenizer):
    """Episodes the agent loop played, one of them failed by its environment, batched as verl's v1
    trainer pads them: verl's compute_advantage gives every valid turn GEM's ReBN over the valid
    episodes alone, and the failed row 0."""
    from gem_adapters.common.turns import turn_end_positions
    from tests.adapters import failing
    from tests.adapters.verl.test_rollout import binary_search

    with failing.registered() as failing_id:
        outputs, data = played_batch(run_config, chat_tokenizer, [
            ("game:GuessTheNumber-v0-easy", 1, binary_search),
            (failing_id, 0, lambda prompt: "\\boxed{3}"),
            ("testpack:Countdown-v0", 0, lambda prompt: "next")])
    advantages = verl_advantages(data, "rebn", 0.9).batch["advantages"]
    assert outputs[1]["extra_fields"]["gem_stop"] == "failed" and not advantages[1].any()
    valid = [outputs[0]["extra_fields"]["turn_scores"], outputs[2]["extra_fields"]["turn_scores"]]
    expected = gem_core.get_estimator("rebn")(valid, gamma=0.9)
    for row_index, values in zip((0, 2), expected):
        ends = turn_end_positions(outputs[row_index]["response_mask"].bool())
        assert advantages[row_index, ends].double().numpy() == pytest.approx(values, abs=1e-5)

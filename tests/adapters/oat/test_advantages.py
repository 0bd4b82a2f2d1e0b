"""GEM's estimators inside oat's learner: oat's real ``process_feedback_data`` and transition
dataset turn the shared conformance batch into per-token advantages equal to gem_core's."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.adapters import conformance
from tests.adapters.oat.conftest import EASY, oat_args
from tests.adapters.oat.learning import TURNS, episodes_of, starts_of


@pytest.fixture
def make_learner(monkeypatch):
    """``make_learner(*launcher flags)``: a GEM learner as oat's ``_init`` leaves it for feedback
    processing (no critic, empty buffers); ``_init`` itself loads the model with deepspeed on GPUs."""
    from gem_adapters.oat.advantages import GemOatLearner

    for name in ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)  # oat's launcher sets these; restored after the test

    def make(*argv: str) -> GemOatLearner:
        argv = ("--rollout_batch_size_per_device", str(TURNS), *argv)  # every turn kept, unless a test asks
        learner = GemOatLearner(1, 0, 0, "127.0.0.1", 29500, False, oat_args("--env", EASY, *argv), [], None)
        learner.critic, learner.pi_buffer, learner.all_buffer, learner.query_step = None, [], [], 0
        return learner

    return make


def per_token(learner, tokenizer, episodes):
    """Each buffered turn's advantage on its response tokens, as oat's learning step applies it
    (``advantages`` broadcast over the completion mask), laid out per episode as the conformance
    rows: a turn's model tokens, then its environment tokens."""
    from oat.algorithms.ppo import PPOLearner
    from oat.algorithms.ppo_multiturn import MultiTurnTransitionDataset

    strategy = type("Strategy", (), {"args": learner.args, "is_rank_0": lambda self: True})()
    dataset = MultiTurnTransitionDataset(learner.pi_buffer, tokenizer, strategy)
    batch = dataset.collate_fn([dataset[i] for i in range(len(dataset))])
    completion = PPOLearner.get_completion_mask(learner, batch["attention_mask"], batch["prompt_ids_lens"])
    advantages = torch.tensor(batch["advantages"]).reshape(-1, 1) * completion
    turns = {(t.info["actor/episode"], t.info["actor/turn"]): row for row, t in enumerate(learner.pi_buffer)}
    width = conformance.row_width()
    rows = torch.zeros(len(episodes), width, dtype=torch.float64)
    for e, (episode, layout) in enumerate(zip(episodes, conformance.LAYOUT)):
        position = 0
        for k, (model_tokens, env_tokens) in enumerate(layout):
            row = turns[(float(e), float(k))]
            tokens = advantages[row][completion[row]]
            assert len(tokens) == model_tokens
            rows[e, position:position + model_tokens] = tokens.double()
            position += model_tokens + env_tokens
    return rows


def test_rebn_in_oats_process_feedback_data_matches_gem_core_per_token(make_learner, smollm2_tokenizer):
    learner = make_learner("--estimator", "rebn")
    episodes = episodes_of(conformance.EPISODES)
    learner.process_feedback_data(episodes)

    assert len(learner.pi_buffer) == TURNS and learner.query_step == TURNS
    conformance.assert_per_token(per_token(learner, smollm2_tokenizer, episodes), conformance.REBN)
    returns = [t.info["returns"] for t in learner.pi_buffer]
    np.testing.assert_allclose(returns, conformance.flat(conformance.RETURNS), atol=1e-6)
    assert all(t.info["values"] == 0.0 for t in learner.pi_buffer)


def test_grpo_groups_the_episodes_of_one_start(make_learner, smollm2_tokenizer):
    learner = make_learner("--estimator", "grpo", "--num_samples", "2")
    episodes = episodes_of(conformance.GROUPED, starts_of(conformance.GROUP_IDS))
    learner.process_feedback_data(episodes)
    advantages = [t.info["advantages"] for t in learner.pi_buffer]
    np.testing.assert_allclose(advantages, conformance.flat(conformance.GRPO), atol=conformance.TOLERANCE)


def test_the_advantages_cover_every_turn_before_oat_subsamples_them(make_learner):
    kept = TURNS - 1
    learner = make_learner("--estimator", "rebn", "--rollout_batch_size_per_device", str(kept))
    learner.process_feedback_data(episodes_of(conformance.EPISODES))
    assert len(learner.pi_buffer) == kept  # oat keeps a random subset of the turns
    for transition in learner.pi_buffer:
        episode, turn = int(transition.info["actor/episode"]), int(transition.info["actor/turn"])
        assert transition.info["advantages"] == pytest.approx(conformance.REBN[episode][turn], abs=1e-5)


def test_estimator_oat_keeps_oats_own_returns_which_whitening_turns_into_rebn(make_learner):
    learner = make_learner("--estimator", "oat")
    learner.process_feedback_data(episodes_of(conformance.EPISODES))
    advantages = np.array([t.info["advantages"] for t in learner.pi_buffer], dtype=np.float64)
    np.testing.assert_allclose(advantages, conformance.flat(conformance.RETURNS), atol=1e-6)
    # what oat's --whiten_adv does to them in its learning step (population std, eps 1e-9)
    whitened = (advantages - advantages.mean()) / (advantages.std() + 1e-9)
    np.testing.assert_allclose(whitened, conformance.flat(conformance.REBN), atol=1e-5)


def test_rebn_statistics_cover_every_learner_rank(tmp_path):
    """Two learner processes in a gloo group, each with part of the conformance batch, get the
    advantages gem_core gives the whole batch."""
    import torch.multiprocessing as mp

    from tests.adapters.oat import learning

    mp.spawn(learning.learner_rank, args=(2, str(tmp_path)), nprocs=2, join=True)
    results = [np.load(tmp_path / f"rank{rank}.npy") for rank in range(2)]
    np.testing.assert_allclose(np.concatenate(results), conformance.flat(conformance.REBN), atol=1e-5)


def test_a_batch_the_estimator_cannot_take_fails_loudly(make_learner):
    learner = make_learner("--estimator", "grpo", "--num_samples", "2")
    episodes = episodes_of(conformance.EPISODES)  # a group of one per episode
    from gem_core.estimators import EstimatorInputError

    with pytest.raises(EstimatorInputError):
        learner.process_feedback_data(episodes)
    assert learner.pi_buffer == []


def test_failed_episodes_leave_the_statistics_and_oats_loss(make_learner, smollm2_tokenizer):
    """The conformance batch plus failed episodes (their transitions marked and with ``loss_mask``
    False, as the GEM actor sends them) through oat's real ``process_feedback_data`` and transition
    dataset: every valid turn gets gem_core's ReBN over the valid episodes alone, the failed ones 0,
    and the loss oat's learning step computes (its per-transition loss times the collated
    ``loss_masks``, then the mean; the step itself needs CUDA) gives their tokens no gradient."""
    from oat.algorithms.ppo_multiturn import MultiTurnTransitionDataset

    learner = make_learner("--estimator", "rebn", "--rollout_batch_size_per_device", "100")
    episodes = episodes_of(conformance.MIXED, layout=conformance.MIXED_LAYOUT)
    for episode, valid in zip(episodes, conformance.MIXED_VALID):
        for transition in episode:
            transition.failure, transition.loss_mask = ("" if valid else "sandbox"), valid
    learner.process_feedback_data(episodes)
    by_turn = {(int(t.info["actor/episode"]), int(t.info["actor/turn"])): t for t in learner.pi_buffer}
    for e, values in enumerate(conformance.MIXED_REBN):
        for k, value in enumerate(values):
            assert by_turn[(e, k)].info["advantages"] == pytest.approx(value, abs=1e-5)

    strategy = type("Strategy", (), {"args": learner.args, "is_rank_0": lambda self: True})()
    dataset = MultiTurnTransitionDataset(learner.pi_buffer, smollm2_tokenizer, strategy)
    batch = dataset.collate_fn([dataset[i] for i in range(len(dataset))])
    loss_masks = torch.tensor(batch["loss_masks"]).float()
    failed = torch.tensor([bool(t.failure) for t in learner.pi_buffer])
    assert not loss_masks[failed].any() and loss_masks[~failed].all()
    advantages = torch.tensor(batch["advantages"]).reshape(-1, 1)
    logps = torch.zeros(advantages.shape[0], 4, requires_grad=True)
    per_transition = (-advantages * torch.exp(logps)).mean(dim=1)  # ratio 1: oat's PPO loss per transition
    (per_transition * loss_masks).mean().backward()  # learning_step: (pg_loss * mb_loss_masks).mean()
    assert not logps.grad[failed].any() and logps.grad[~failed].abs().sum() > 0


def test_a_group_keeps_its_valid_members(make_learner):
    learner = make_learner("--estimator", "grpo", "--num_samples", "3", "--rollout_batch_size_per_device", "100")
    episodes = episodes_of(conformance.GROUPED_MIXED, starts_of(conformance.GROUPED_MIXED_IDS),
                           conformance.GROUPED_MIXED_LAYOUT)
    for transition in episodes[1]:
        transition.failure, transition.loss_mask = "error", False
    learner.process_feedback_data(episodes)
    by_turn = {(int(t.info["actor/episode"]), int(t.info["actor/turn"])): t.info["advantages"] for t in learner.pi_buffer}
    advantages = [by_turn[(e, k)] for e, values in enumerate(conformance.GROUPED_MIXED_GRPO) for k in range(len(values))]
    np.testing.assert_allclose(advantages, conformance.flat(conformance.GROUPED_MIXED_GRPO), atol=conformance.TOLERANCE)

"""GEM's estimators in place of TRL's group advantage, on the shared conformance batch, through
TRL's real ``_generate_and_score_completions`` and ``_compute_loss`` (SmolLM2 on CPU computes the
log-probabilities). The rollout returns the batch's token layout (conformance.LAYOUT): its
generation is the part replaced here, so that the batch is exactly the shared one."""

from __future__ import annotations

import pytest
import torch

from gem_adapters.common.estimators import estimator_names
from gem_core.errors import GemError
from gem_core.estimators import advantage_stats
from tests.adapters import conformance as batch
from tests.adapters.trl.conftest import EASY, rows

TOKEN = 28  # any token that is neither end of turn nor padding
#: The grouped batch's token layout: the first of the conformance layout's episodes.
GROUPED_LAYOUT = batch.LAYOUT[:len(batch.GROUPED)]


def trainer_for(make_trainer, episodes, **settings):
    """A trainer whose generation batch is exactly ``episodes``, in one group."""
    size = len(episodes)
    return make_trainer(rows(EASY, range(size)), num_generations=size, per_device_train_batch_size=size, **settings)


FAILURE = {"kind": "sandbox", "error": "the container died", "phase": "step", "turn": 1}


def layout_rollout(episodes, layout, valid=None):
    """A rollout_func returning ``episodes`` in ``layout`` (model tokens, then environment ones); a
    failed episode (``valid`` False) as GEM's rollout returns one: env_mask 0, its failure given."""
    valid = valid or [True] * len(episodes)

    def rollout(prompts, trainer):
        completion_ids, masks = [], []
        for turns, ok in zip(layout, valid):
            ids, mask = [], []
            for model_tokens, env_tokens in turns:
                ids += [TOKEN] * model_tokens + [TOKEN] * env_tokens
                mask += [int(ok)] * model_tokens + [0] * env_tokens
            completion_ids.append(ids)
            masks.append(mask)
        return {"prompt_ids": [[TOKEN, TOKEN]] * len(prompts), "completion_ids": completion_ids, "logprobs": None,
                "env_mask": masks, "gem_turn_rewards": [list(e) for e in episodes],
                "gem_turn_spans": batch.turn_spans(layout),
                "gem_stop": ["terminated" if ok else "failed" for ok in valid],
                "gem_success": [False] * len(prompts), "gem_format_error": [False] * len(prompts),
                "gem_failure": [None if ok else FAILURE for ok in valid]}

    return rollout


def scored(trainer, episodes, layout, valid=None):
    trainer.rollout_func = layout_rollout(episodes, layout, valid)
    trainer.model.train()
    inputs = rows(EASY, range(len(episodes)))
    return trainer._generate_and_score_completions(inputs)


def test_rebn_per_token_advantages_equal_gem_cores(make_trainer):
    trainer = trainer_for(make_trainer, batch.EPISODES, estimator="rebn", gamma=batch.GAMMA)
    output = scored(trainer, batch.EPISODES, batch.LAYOUT)
    assert output["advantages"].shape == output["completion_ids"].shape
    batch.assert_per_token(output["advantages"], batch.REBN)
    logged = {key: trainer._metrics["train"][f"gem/{key}"][-1] for key in advantage_stats(batch.REBN)}
    assert logged == pytest.approx(advantage_stats(batch.REBN))  # what TRL's log gets: mean 0, std 1 over turns
    _, model_tokens = batch.token_rows(layout=batch.LAYOUT, width=output["tool_mask"].shape[1])
    for row, (mask, expected) in enumerate(zip(output["tool_mask"].tolist(), model_tokens.tolist())):
        length = sum(m + e for m, e in batch.LAYOUT[row])
        assert mask[:length] == expected[:length]  # the rollout's env_mask became TRL's tool_mask


def test_the_loss_trl_computes_weighs_each_model_token_by_its_turns_advantage(make_trainer):
    """With one iteration per batch and no KL, TRL's importance ratio is 1 and its ``dapo`` loss is
    ``-sum(A_t over model tokens) / model tokens``: the advantages enter the loss per token and
    environment tokens not at all."""
    trainer = trainer_for(make_trainer, batch.EPISODES, estimator="rebn", gamma=batch.GAMMA)
    output = scored(trainer, batch.EPISODES, batch.LAYOUT)
    trainer.current_gradient_accumulation_steps = 1
    loss = trainer._compute_loss(trainer.model, output)
    turns = [(value, end - start) for values, spans in zip(batch.REBN, batch.turn_spans())
             for value, (start, end) in zip(values, spans)]
    expected = -sum(value * tokens for value, tokens in turns) / sum(tokens for _, tokens in turns)
    assert loss.item() == pytest.approx(expected, abs=1e-4)
    loss.backward()  # and it trains the model
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in trainer.model.parameters())


def test_grpo_groups_each_starts_episodes(make_trainer):
    trainer = trainer_for(make_trainer, batch.GROUPED, estimator="gem_grpo", gamma=batch.GAMMA)
    output = scored(trainer, batch.GROUPED, GROUPED_LAYOUT)
    batch.assert_per_token(output["advantages"], batch.GRPO, GROUPED_LAYOUT)


def test_trls_own_estimator_stays_as_trl_computes_it(make_trainer):
    """``estimator="trl"``: TRL's group advantage of the episode return, one number per episode."""
    trainer = trainer_for(make_trainer, batch.GROUPED, estimator="trl")
    output = scored(trainer, batch.GROUPED, GROUPED_LAYOUT)
    assert output["advantages"].dim() == 1
    returns = torch.tensor([sum(e) for e in batch.GROUPED])
    expected = (returns - returns.mean()) / (returns.std() + 1e-4)
    assert output["advantages"].tolist() == pytest.approx(expected.tolist(), abs=1e-4)


def test_every_gem_estimator_is_selectable(make_trainer):
    from gem_adapters.trl.trainer import check_estimator

    for name, gem_name in estimator_names().items():
        assert check_estimator(name, 2) == gem_name
    trainer = trainer_for(make_trainer, batch.GROUPED, estimator="gem_rloo", gamma=batch.GAMMA)
    output = scored(trainer, batch.GROUPED, GROUPED_LAYOUT)
    assert torch.isfinite(output["advantages"]).all()


def test_an_unknown_estimator_is_refused_before_the_model_loads(make_trainer):
    with pytest.raises(GemError, match="rebn"):
        make_trainer(rows(EASY, range(2)), estimator="rebnn")


def test_a_batch_the_estimator_cannot_take_is_a_clear_error(make_trainer):
    """A rollout whose turns and rewards disagree cannot be estimated; the error says why."""
    mismatched = [[0.0] * (len(turns) + 1) for turns in GROUPED_LAYOUT]  # one reward too many per episode
    trainer = trainer_for(make_trainer, mismatched, estimator="rebn", gamma=batch.GAMMA)
    with pytest.raises(GemError, match="model turn"):
        scored(trainer, mismatched, GROUPED_LAYOUT)


def test_failed_episodes_leave_the_statistics_and_trls_loss(make_trainer):
    """The conformance batch plus failed episodes through TRL's real ``_generate_and_score_completions``
    and ``_compute_loss``: the valid episodes get gem_core's ReBN over them alone, the failed ones 0
    and a loss mask of 0, and TRL's loss is the valid episodes' alone (``dapo``: the sum of their
    turns' advantages over their model tokens): the failed episodes' tokens weigh nothing."""
    trainer = trainer_for(make_trainer, batch.MIXED, estimator="rebn", gamma=batch.GAMMA)
    output = scored(trainer, batch.MIXED, batch.MIXED_LAYOUT, batch.MIXED_VALID)
    batch.assert_per_token(output["advantages"], batch.MIXED_REBN, batch.MIXED_LAYOUT)
    failed = [i for i, ok in enumerate(batch.MIXED_VALID) if not ok]
    assert not (output["completion_mask"] * output["tool_mask"])[failed].any()  # TRL's loss mask
    assert trainer._metrics["train"]["gem/advantage_std"][-1] == pytest.approx(1.0, abs=1e-5)
    assert trainer._metrics["train"]["gem/failed_rate"][-1] == pytest.approx(2 / 5)
    assert trainer._metrics["train"]["gem/failed_sandbox"][-1] == pytest.approx(2 / 5)
    trainer.current_gradient_accumulation_steps = 1
    loss = trainer._compute_loss(trainer.model, output)
    turns = [(value, end - start) for values, spans, ok in zip(batch.MIXED_REBN, batch.turn_spans(batch.MIXED_LAYOUT),
                                                                 batch.MIXED_VALID) if ok
             for value, (start, end) in zip(values, spans)]
    expected = -sum(value * tokens for value, tokens in turns) / sum(tokens for _, tokens in turns)
    assert loss.item() == pytest.approx(expected, abs=1e-4)


def test_a_group_keeps_its_valid_members(make_trainer):
    trainer = trainer_for(make_trainer, batch.GROUPED_MIXED, estimator="gem_grpo", gamma=batch.GAMMA)
    output = scored(trainer, batch.GROUPED_MIXED, batch.GROUPED_MIXED_LAYOUT, batch.GROUPED_MIXED_VALID)
    batch.assert_per_token(output["advantages"], batch.GROUPED_MIXED_GRPO, batch.GROUPED_MIXED_LAYOUT)


def test_trls_own_estimator_leaves_a_failed_episode_out_of_its_group(make_trainer):
    """``estimator="trl"``: the failed episode's reward is None, which TRL leaves out of the group's
    mean and std, and gives advantage 0."""
    from trl.trainer.utils import nanstd

    trainer = trainer_for(make_trainer, batch.GROUPED_MIXED, estimator="trl")
    output = scored(trainer, batch.GROUPED_MIXED, batch.GROUPED_MIXED_LAYOUT, batch.GROUPED_MIXED_VALID)
    returns = torch.tensor([sum(e) for e, ok in zip(batch.GROUPED_MIXED, batch.GROUPED_MIXED_VALID) if ok])
    valid = ((returns - returns.mean()) / (nanstd(returns) + 1e-4)).tolist()
    assert output["advantages"].tolist() == pytest.approx([valid[0], 0.0, valid[1]], abs=1e-4)

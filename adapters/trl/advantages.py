"""GEM's advantage estimators in place of TRL's group advantage.

Where the values enter TRL (1.16): ``GRPOTrainer._generate_and_score_completions`` plays the
rollouts, computes the rewards and, inline, the group advantage of each completion
(``(reward - group mean) / (group std + 1e-4)``, one number per completion, shape (B,)), and
returns it as ``output["advantages"]``. :class:`~gem_adapters.trl.trainer.GemGRPOTrainer` calls it
and then puts :func:`token_advantages` in its place: a (B, T) tensor aligned with
``completion_ids``. What TRL does after is unchanged: the generation batch is shuffled and split
into ``steps_per_generation`` parts, and ``_compute_loss`` multiplies the per-token advantages by
the importance ratio, clipped to [1 - epsilon, 1 + epsilon] (``loss_type`` decides how tokens are
averaged: ``dapo`` by default), adds ``beta`` times the per-token KL to the reference model when
``beta`` is not 0, and masks the loss with ``completion_mask * tool_mask`` (``tool_mask`` is the
rollout's ``env_mask``, so environment tokens never train).

How the values are made: every process's per-turn rewards are gathered (they are a few numbers per
episode), the GEM estimator runs once over the whole generation batch with ``gamma`` between turns
(ReBN's mean and std thus cover every process; group estimators group each prompt's
``num_generations`` episodes, which TRL places next to each other), and this process keeps its
own episodes, as TRL does with its own advantages. Each turn's advantage goes on every model token
of that turn; environment tokens and padding get 0. The statistics of the batch's per-turn
advantages go to TRL's log as ``gem/advantage_mean``, ``_std``, ``_min`` and ``_max``.

A failed episode (the rollout's ``gem_failure``) is left out of the statistics (ReBN's mean and
std over every process, its group's baseline: the group keeps its valid members) and gets 0 on
every token; the rollout already set its ``env_mask``, and so TRL's loss mask, to 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gem_adapters.common.estimators import turn_estimate
from gem_core.errors import GemError
from gem_core.estimators import advantage_stats


def batch_turn_advantages(estimator: str, turn_rewards: Sequence[Sequence[float]], *, gamma: float,
                          group_size: int, valid: Sequence[bool] | None = None) -> list[Any]:
    """Per-turn advantages (one float64 array per episode) of a whole batch whose episodes come in
    groups of ``group_size`` consecutive episodes from one start; ``valid`` (one flag per episode)
    leaves the failed ones out."""
    group_ids = [index // group_size for index in range(len(turn_rewards))]
    advantages, _ = turn_estimate(estimator, turn_rewards, gamma=gamma, group_ids=group_ids, valid=valid)
    return advantages


def token_advantages(per_turn: Sequence[Sequence[float]], turn_spans: Sequence[Sequence[Sequence[int]]],
                     width: int) -> Any:
    """A float32 (episodes, ``width``) tensor with each turn's advantage on its [start, end) span."""
    import torch

    out = torch.zeros(len(per_turn), width, dtype=torch.float32)
    for row, (values, spans) in enumerate(zip(per_turn, turn_spans)):
        if len(values) != len(spans):
            raise GemError(f"Episode {row} of the batch has {len(spans)} model turn(s) but {len(values)} "
                           "reward(s); the rollout must give one reward per turn.")
        for value, (start, end) in zip(values, spans):
            if not 0 <= start < end <= width:
                raise GemError(f"Turn span [{start}, {end}) of episode {row} lies outside its completion "
                               f"({width} tokens).")
            out[row, start:end] = float(value)
    return out


def gem_advantages(trainer: Any, inputs: Sequence[dict[str, Any]], width: int, *, estimator: str,
                   gamma: float, group_size: int) -> Any:
    """The (B, ``width``) advantages of this process's episodes ``inputs`` (rows carrying
    ``gem_turn_rewards`` and ``gem_turn_spans`` from the rollout), estimated over every process's
    episodes."""
    from accelerate.utils import gather_object

    try:
        local = [([float(r) for r in row["gem_turn_rewards"]], row.get("gem_failure") is None) for row in inputs]
        spans = [row["gem_turn_spans"] for row in inputs]
    except KeyError as missing:
        raise GemError(f"The rollout gave no {missing} for the batch; GEM's estimators need the GEM "
                       "rollout (gem_adapters.trl.EpisodeRollout).") from None
    everyone = gather_object(local) if trainer.accelerator.num_processes > 1 else local
    valid = [counts for _, counts in everyone]
    per_turn = batch_turn_advantages(estimator, [rewards for rewards, _ in everyone], gamma=gamma,
                                     group_size=group_size, valid=valid)
    counted = [values for values, counts in zip(per_turn, valid) if counts]
    for key, value in advantage_stats(counted).items():  # over every process's valid turns
        trainer._metrics["train"][f"gem/{key}"].append(value)
    first = trainer.accelerator.process_index * len(local)
    mine = per_turn[first:first + len(local)]
    return token_advantages(mine, spans, width).to(trainer.accelerator.device)

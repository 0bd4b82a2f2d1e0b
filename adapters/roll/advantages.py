"""GEM's estimators on ROLL's step samples.

ROLL's step env managers (``StepEnvManager``, ``StepConcatEnvManager``) turn each turn of an
episode into one sample with the non-tensor fields ``traj_id`` (the episode), ``traj_group_id``
(the episodes from one start), ``step`` (the turn) and ``step_scores`` (the turn's reward). With
``adv_estimator: step_reinforce`` ROLL then normalises each sample's discounted return over the
batch and gives that value to every token of the sample. :func:`step_advantages` computes the same
per-sample values the GEM way: the episodes are rebuilt from the samples and GEM's estimator runs on
their per-turn rewards, so ``rebn`` gives exactly gem_core's ReBN (population std, eps 1e-6, 0 when
every return is equal), where ROLL's own normalisation divides by the unbiased std + 1e-6.

Samples that repeat a turn (ROLL's ``batch_adjust_mode: copy`` fills a batch up with copies) get
that turn's advantage and count once; an episode with a turn missing cannot be estimated and raises.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from gem_adapters.common.estimators import gem_estimator
from gem_core.errors import GemError


def step_advantages(estimator: str, traj_ids: Sequence[Any], steps: Sequence[Any], step_scores: Sequence[Any],
                    *, gamma: float, group_ids: Sequence[Any] | None = None) -> np.ndarray:
    """Per-sample advantages (float64, in sample order) of GEM's ``estimator`` with ``gamma``
    across turns; ``group_ids`` (one per sample, e.g. ROLL's ``traj_group_id``) serve the group
    estimators."""
    from gem_core.estimators import estimate_flat

    name = gem_estimator(estimator)
    turns: dict[Any, dict[int, float]] = {}  # episode -> turn -> reward
    group_of: dict[Any, Any] = {}
    keys = []
    for row, (traj, step, score) in enumerate(zip(traj_ids, steps, step_scores, strict=True)):
        step, score = int(step), float(score)
        episode = turns.setdefault(traj, {})
        if episode.get(step, score) != score:
            raise GemError(f"Episode {traj!r} has two different rewards for turn {step}; its samples "
                           "must come from one episode.")
        episode[step] = score
        if group_ids is not None:
            group_of.setdefault(traj, group_ids[row])
        keys.append((traj, step))
    rewards, lengths = [], []
    for traj, episode in turns.items():
        if sorted(episode) != list(range(len(episode))):
            missing = sorted(set(range(max(episode) + 1)) - set(episode))
            raise GemError(
                f"Episode {traj!r} lacks the samples of turn(s) {missing}, so GEM's {name} cannot "
                "compute its returns. Keep whole episodes in the batch: set batch_adjust_mode: copy.")
        rewards.extend(episode[t] for t in range(len(episode)))
        lengths.append(len(episode))
    groups = [group_of[traj] for traj in turns] if group_ids is not None else None
    flat = estimate_flat(name, np.asarray(rewards, dtype=np.float64), np.asarray(lengths), gamma=gamma,
                         group_ids=groups)
    offsets = dict(zip(turns, np.cumsum([0, *lengths[:-1]])))
    return np.asarray([flat[offsets[traj] + step] for traj, step in keys], dtype=np.float64)


def roll_batch_normalised(step_returns: Sequence[float]) -> np.ndarray:
    """ROLL's own ``step_reinforce`` normalisation of discounted returns (``reward_normalization``
    grouping, mean and std all ``batch``), for comparison: ``(G - mean) / (std + 1e-6)`` with the
    unbiased std, and all 0 when that std is at most 1e-6 or there is one sample."""
    returns = np.asarray(step_returns, dtype=np.float32)
    std = float(returns.std(ddof=1)) if returns.size > 1 else 0.0
    if returns.size <= 1 or std <= 1e-6:
        return np.zeros(returns.shape, dtype=np.float64)
    return ((returns - returns.mean()) / (np.float32(std) + np.float32(1e-6))).astype(np.float64)

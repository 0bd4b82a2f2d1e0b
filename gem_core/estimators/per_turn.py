"""Per-turn estimators: every turn gets its own advantage from its discounted return ``G_t``.

* ``rebn``: Return Batch Normalization, ``A_t = (G_t - mean(G)) / (std(G) + eps)`` with mean and
  population std over every turn of every episode in the batch (over all data-parallel ranks when
  ``all_reduce`` is given; see :mod:`gem_core.estimators.moments`).
* ``reinforce``: ``A_t = G_t``.
* ``reinforce_baseline``: ``A_t = G_t - mean(G)``, the batch mean as baseline.

When every return in the batch is equal, every advantage of ``rebn`` and ``reinforce_baseline`` is
exactly 0. ``group_ids`` is accepted so that all estimators share one signature, and not used.
``valid`` leaves failed episodes out of the batch (:mod:`gem_core.estimators.validity`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gem_core.estimators.dispatch import per_episode, with_flat
from gem_core.estimators.inputs import EstimatorInputError, check_eps
from gem_core.estimators.moments import AllReduce, fail_collectively, normalise_batch
from gem_core.estimators.returns import checked_returns
from gem_core.estimators.validity import over_valid

EPS = 1e-6


@over_valid(flat=True)
def rebn_flat(turn_rewards: Any, episode_lengths: Any, *, gamma: float, group_ids: Any = None,
              eps: float = EPS, all_reduce: AllReduce | None = None) -> np.ndarray:
    """ReBN advantages of flat per-turn rewards (episode after episode), as one float64 array."""
    try:
        eps = check_eps(eps)
        returns, _ = checked_returns(turn_rewards, episode_lengths, gamma, allow_empty=all_reduce is not None)
    except EstimatorInputError as error:
        fail_collectively(error, all_reduce)
    return normalise_batch(returns, all_reduce, scale=True, eps=eps)


@with_flat(rebn_flat)
@over_valid(flat=False)
def rebn(rewards: Any, *, gamma: float, group_ids: Any = None, eps: float = EPS,
         all_reduce: AllReduce | None = None) -> list[np.ndarray]:
    """Return Batch Normalization: ``(G_t - mean(G)) / (std(G) + eps)`` over all turns of the batch.

    ``rewards`` holds one sequence of per-turn rewards per episode. In data-parallel training pass
    ``all_reduce`` (for torch.distributed: :func:`gem_core.estimators.torch_all_reduce`) so that
    mean and std cover the batches of all ranks; a rank may then hold no episode at all.
    """
    return per_episode(rebn_flat, rewards, gamma=gamma, eps=eps, all_reduce=all_reduce)


@over_valid(flat=True)
def reinforce_flat(turn_rewards: Any, episode_lengths: Any, *, gamma: float,
                   group_ids: Any = None) -> np.ndarray:
    """Discounted returns as advantages, for flat per-turn rewards."""
    return checked_returns(turn_rewards, episode_lengths, gamma)[0]


@with_flat(reinforce_flat)
@over_valid(flat=False)
def reinforce(rewards: Any, *, gamma: float, group_ids: Any = None) -> list[np.ndarray]:
    """Vanilla REINFORCE: the discounted return ``G_t`` is the advantage."""
    return per_episode(reinforce_flat, rewards, gamma=gamma)


@over_valid(flat=True)
def reinforce_baseline_flat(turn_rewards: Any, episode_lengths: Any, *, gamma: float,
                            group_ids: Any = None, all_reduce: AllReduce | None = None) -> np.ndarray:
    """``G_t - mean(G)`` for flat per-turn rewards."""
    try:
        returns, _ = checked_returns(turn_rewards, episode_lengths, gamma, allow_empty=all_reduce is not None)
    except EstimatorInputError as error:
        fail_collectively(error, all_reduce)
    return normalise_batch(returns, all_reduce, scale=False)


@with_flat(reinforce_baseline_flat)
@over_valid(flat=False)
def reinforce_baseline(rewards: Any, *, gamma: float, group_ids: Any = None,
                       all_reduce: AllReduce | None = None) -> list[np.ndarray]:
    """REINFORCE with the batch mean of the returns as baseline: ``G_t - mean(G)``."""
    return per_episode(reinforce_baseline_flat, rewards, gamma=gamma, all_reduce=all_reduce)


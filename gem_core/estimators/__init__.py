"""Advantage estimators: per-turn rewards of a batch of episodes in, per-turn advantages out.

Every estimator has the signature ``estimator(rewards, *, gamma, group_ids=None, valid=None,
...)``: ``rewards`` holds one sequence of per-turn rewards per episode, and one float64 array of
advantages per episode comes back. ``valid`` (one flag per episode) says which episodes count: a
failed episode leaves the statistics and gets advantage 0. Look one up by name with ``gem_core.get_estimator("rebn")``.

Adapters holding arrays use :func:`estimate_flat` (per-turn rewards as one flat array plus the
turns of each episode) or, for token rows, :func:`token_advantages`.

Conventions: ``G_t = r_t + gamma * G_{t+1}``; standard deviations are population ones; ``eps``
defaults to 1e-6; values equal up to floating-point rounding normalise to exactly 0. Inputs are
checked: non-finite rewards, an empty batch, an episode without turns, a bad ``gamma``, or
missing or singleton groups raise :class:`EstimatorInputError`, naming what to fix.

* :mod:`~gem_core.estimators.returns`: discounted per-turn returns.
* :mod:`~gem_core.estimators.per_turn`: per-turn estimators (ReBN, REINFORCE, ...).
* :mod:`~gem_core.estimators.grouped`: group estimators (GRPO, Dr.GRPO, RLOO).
* :mod:`~gem_core.estimators.moments`: a batch's mean and standard deviation, across ranks too;
  :mod:`~gem_core.estimators.distributed` the ``all_reduce`` over torch.distributed.
* :mod:`~gem_core.estimators.inputs`: checking inputs, nested episodes as flat arrays.
* :mod:`~gem_core.estimators.dispatch`: calling an estimator in the nested or the flat form.
* :mod:`~gem_core.estimators.validity`: leaving failed episodes out (``valid``), for any estimator.
* :mod:`~gem_core.estimators.tokens`: between per-turn values and token-level tensors.
"""

from gem_core.estimators.dispatch import estimate, estimate_flat
from gem_core.estimators.distributed import torch_all_reduce
from gem_core.estimators.grouped import drgrpo, drgrpo_flat, grpo, grpo_flat, rloo, rloo_flat
from gem_core.estimators.inputs import EstimatorInputError, group_index
from gem_core.estimators.moments import ZERO_STD_RTOL, AllReduce, advantage_stats
from gem_core.estimators.per_turn import (
    EPS,
    rebn,
    rebn_flat,
    reinforce,
    reinforce_baseline,
    reinforce_baseline_flat,
    reinforce_flat,
)
from gem_core.estimators.returns import discounted_returns, discounted_returns_flat
from gem_core.estimators.tokens import place_on_tokens, token_advantages, turn_ids, turn_rewards
from gem_core.estimators.validity import over_valid

__all__ = [
    "EPS",
    "ZERO_STD_RTOL",
    "AllReduce",
    "EstimatorInputError",
    "advantage_stats",
    "discounted_returns",
    "discounted_returns_flat",
    "drgrpo",
    "drgrpo_flat",
    "estimate",
    "estimate_flat",
    "grpo",
    "grpo_flat",
    "group_index",
    "over_valid",
    "place_on_tokens",
    "rebn",
    "rebn_flat",
    "reinforce",
    "reinforce_baseline",
    "reinforce_baseline_flat",
    "reinforce_flat",
    "rloo",
    "rloo_flat",
    "token_advantages",
    "torch_all_reduce",
    "turn_ids",
    "turn_rewards",
]

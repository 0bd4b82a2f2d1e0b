"""Group estimators: episodes rolled out from one start state are compared with each other.

The trajectory return ``R`` of an episode is its discounted return from the first turn, ``G_0``
(the plain sum of its rewards when ``gamma`` is 1). Within each group (episodes sharing a
``group_ids`` entry, at least two per group), with the group's mean and population std of ``R``:

* ``grpo``: ``A = (R - mean) / (std + eps)``;
* ``drgrpo`` (Dr. GRPO): ``A = R - mean``, no division by the std;
* ``rloo``: ``A = R - (mean of the other episodes' R) = k / (k - 1) * (R - mean)`` for a group of k.

Every turn of an episode gets the episode's advantage. When every ``R`` of a group is equal, its
advantages are exactly 0. Groups must be whole on the calling process: these estimators take no
``all_reduce``. With ``valid``, a group keeps its valid members, and one that failures leave
with a single member gets advantage 0 (:mod:`gem_core.estimators.validity`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from gem_core.estimators.dispatch import per_episode, with_flat
from gem_core.estimators.inputs import check_eps, group_index
from gem_core.estimators.moments import ZERO_STD_RTOL
from gem_core.estimators.per_turn import EPS
from gem_core.estimators.returns import checked_returns
from gem_core.estimators.validity import over_valid


@over_valid(flat=True, min_group_size=2)
def grpo_flat(turn_rewards: Any, episode_lengths: Any, *, gamma: float, group_ids: Any = None,
              eps: float = EPS) -> np.ndarray:
    """GRPO advantages for flat per-turn rewards; ``group_ids`` has one entry per episode."""
    eps = check_eps(eps)
    groups = GroupedReturns.of("grpo", turn_rewards, episode_lengths, gamma, group_ids)
    scale = np.where(groups.constant, 1.0, groups.std + eps)  # constant groups become 0 anyway
    return groups.per_turn(groups.deviation / scale)


@with_flat(grpo_flat)
@over_valid(flat=False, min_group_size=2)
def grpo(rewards: Any, *, gamma: float, group_ids: Any = None, eps: float = EPS) -> list[np.ndarray]:
    """GRPO: the trajectory return normalised within its group, ``(R - mean) / (std + eps)``."""
    return per_episode(grpo_flat, rewards, gamma=gamma, group_ids=group_ids, eps=eps)


@over_valid(flat=True, min_group_size=2)
def drgrpo_flat(turn_rewards: Any, episode_lengths: Any, *, gamma: float,
                group_ids: Any = None) -> np.ndarray:
    """Dr. GRPO advantages for flat per-turn rewards; ``group_ids`` has one entry per episode."""
    groups = GroupedReturns.of("drgrpo", turn_rewards, episode_lengths, gamma, group_ids)
    return groups.per_turn(groups.deviation)


@with_flat(drgrpo_flat)
@over_valid(flat=False, min_group_size=2)
def drgrpo(rewards: Any, *, gamma: float, group_ids: Any = None) -> list[np.ndarray]:
    """Dr. GRPO: the trajectory return minus its group's mean, ``R - mean``."""
    return per_episode(drgrpo_flat, rewards, gamma=gamma, group_ids=group_ids)


@over_valid(flat=True, min_group_size=2)
def rloo_flat(turn_rewards: Any, episode_lengths: Any, *, gamma: float,
              group_ids: Any = None) -> np.ndarray:
    """RLOO advantages for flat per-turn rewards; ``group_ids`` has one entry per episode."""
    groups = GroupedReturns.of("rloo", turn_rewards, episode_lengths, gamma, group_ids)
    return groups.per_turn(groups.deviation * (groups.size / (groups.size - 1)))


@with_flat(rloo_flat)
@over_valid(flat=False, min_group_size=2)
def rloo(rewards: Any, *, gamma: float, group_ids: Any = None) -> list[np.ndarray]:
    """REINFORCE leave-one-out: the trajectory return minus the mean of the others in its group."""
    return per_episode(rloo_flat, rewards, gamma=gamma, group_ids=group_ids)


@dataclass(frozen=True)
class GroupedReturns:
    """Per-episode trajectory returns next to the statistics of their group."""

    deviation: np.ndarray  # R - mean of the episode's group
    std: np.ndarray  # population std of the episode's group
    size: np.ndarray  # episodes in the episode's group (float64)
    constant: np.ndarray  # True where every R of the episode's group is equal
    lengths: np.ndarray  # turns per episode

    @classmethod
    def of(cls, name: str, turn_rewards: Any, episode_lengths: Any, gamma: float,
           group_ids: Any) -> GroupedReturns:
        returns, lengths = checked_returns(turn_rewards, episode_lengths, gamma)
        group, sizes, _ = group_index(group_ids, lengths.size, name)
        trajectory = returns[np.cumsum(lengths) - lengths]  # G_0 of every episode
        mean = np.bincount(group, weights=trajectory, minlength=sizes.size) / sizes
        deviation = trajectory - mean[group]
        std = np.sqrt(np.bincount(group, weights=deviation * deviation, minlength=sizes.size) / sizes)
        constant = std <= ZERO_STD_RTOL * np.abs(mean)
        return cls(deviation, std[group], sizes[group].astype(np.float64), constant[group], lengths)

    def per_turn(self, per_episode_advantage: np.ndarray) -> np.ndarray:
        """Zero the advantages of constant groups, then repeat each over its episode's turns."""
        return np.repeat(np.where(self.constant, 0.0, per_episode_advantage), self.lengths)

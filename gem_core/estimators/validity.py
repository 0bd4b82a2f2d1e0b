"""Estimating over the episodes that count: a failed episode leaves the statistics.

Every estimator takes ``valid``: one flag per episode, False for an episode the infrastructure
failed (:attr:`gem_core.episodes.Episode.valid`); None counts every episode. Advantages are then
computed over the valid episodes alone, exactly as if the others were not in the batch, and every
turn of an invalid episode gets advantage 0. An invalid episode's rewards are never read (they may
be NaN), and it may have no turns. A group estimator keeps a group's valid members; a group that
failures leave with fewer members than the estimator compares (two) gets advantage 0 on every
turn: there is nothing to compare its episodes with. Across data-parallel ranks (``all_reduce``),
each rank leaves out its own invalid episodes, so the statistics cover the valid episodes of all
ranks; a rank whose episodes all failed still takes part in the collective calls.

:func:`over_valid` gives an estimator function the ``valid`` keyword;
:func:`~gem_core.estimators.dispatch.estimate` and :func:`~gem_core.estimators.dispatch.estimate_flat`
give it to any registered estimator.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np

from gem_core.estimators.inputs import EstimatorInputError

#: The attribute of an estimator function that says how many members each group needs (group
#: estimators: 2); absent means the estimator does not compare within groups.
MIN_GROUP_SIZE = "min_group_size"


def over_valid(*, flat: bool, min_group_size: int = 1) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Give an estimator (the nested form, or with ``flat`` the flat one) the ``valid`` keyword
    (see the module documentation); ``min_group_size`` is 2 for estimators that compare within
    groups."""
    def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def estimator(*args: Any, valid: Any = None, **options: Any) -> Any:
            if valid is None:
                return function(*args, **options)
            run = flat_over_valid if flat else nested_over_valid
            return run(function, *args, valid=valid, min_group_size=min_group_size, **options)

        setattr(estimator, MIN_GROUP_SIZE, min_group_size)
        return estimator
    return decorate


def nested_over_valid(function: Callable[..., Any], rewards: Any, *, valid: Any, min_group_size: int,
                      group_ids: Any = None, **options: Any) -> list[np.ndarray]:
    """``function`` (a nested estimator) over the valid episodes of ``rewards``; zeros for the rest."""
    if isinstance(rewards, (str, bytes)) or not hasattr(rewards, "__len__"):
        return function(rewards, group_ids=group_ids, **options)  # let the estimator name the mistake
    episodes = list(rewards)
    keep = kept_episodes(valid, len(episodes), group_ids, min_group_size)
    advantages = [np.zeros(_length(episode, e)) for e, episode in enumerate(episodes)]
    if keep.any() or options.get("all_reduce") is not None:
        chosen = np.flatnonzero(keep).tolist()
        computed = function([episodes[i] for i in chosen], group_ids=_subset(group_ids, keep), **options)
        for i, value in zip(chosen, computed):
            advantages[i] = np.asarray(value, dtype=np.float64)
    return advantages


def flat_over_valid(function: Callable[..., Any], turn_rewards: Any, episode_lengths: Any, *, valid: Any,
                    min_group_size: int, group_ids: Any = None, **options: Any) -> np.ndarray:
    """``function`` (a flat estimator) over the valid episodes' turns; zeros on the others'."""
    rewards = np.asarray(turn_rewards)
    lengths = np.asarray(episode_lengths)
    if rewards.ndim != 1 or lengths.ndim != 1 or lengths.dtype.kind not in "iu" or (lengths < 0).any() \
            or int(lengths.sum()) != rewards.size:
        return function(turn_rewards, episode_lengths, group_ids=group_ids, **options)  # it names the mistake
    keep = kept_episodes(valid, lengths.size, group_ids, min_group_size)
    turns = np.repeat(keep, lengths)
    advantages = np.zeros(rewards.size)
    if keep.any() or options.get("all_reduce") is not None:
        advantages[turns] = function(rewards[turns], lengths[keep], group_ids=_subset(group_ids, keep), **options)
    return advantages


def valid_flags(valid: Any, num_episodes: int) -> np.ndarray:
    """``valid`` checked: one boolean per episode."""
    if hasattr(valid, "tolist") and not isinstance(valid, np.ndarray):  # a torch tensor
        valid = valid.tolist()
    if isinstance(valid, (str, bytes)) or not isinstance(valid, (Sequence, np.ndarray)):
        raise EstimatorInputError(f"valid must hold one flag per episode (True: it counts); got {type(valid).__name__}.")
    flags = np.asarray(valid)
    if flags.ndim != 1 or flags.size != num_episodes:
        raise EstimatorInputError(f"valid has {flags.size} entries for {num_episodes} episodes: give one flag per episode.")
    if flags.size and (flags.dtype.kind not in "biu" or ((flags != 0) & (flags != 1)).any()):
        raise EstimatorInputError("valid must hold only True and False (or 1 and 0), one per episode.")
    return flags.astype(bool)


def kept_episodes(valid: Any, num_episodes: int, group_ids: Any, min_group_size: int) -> np.ndarray:
    """Which episodes the estimator sees: the valid ones, less those of groups that failures left
    with fewer than ``min_group_size`` members (a group that was smaller from the start stays,
    for the estimator to refuse)."""
    keep = valid_flags(valid, num_episodes)
    if min_group_size <= 1 or group_ids is None or keep.all():
        return keep
    numbers = _group_numbers(group_ids, num_episodes)
    if numbers is None:  # ids the estimator will refuse anyway
        return keep
    before = np.bincount(numbers)
    after = np.bincount(numbers, weights=keep, minlength=before.size)
    shrunk = (after < min_group_size) & (before >= min_group_size)
    return keep & ~shrunk[numbers]


def _group_numbers(group_ids: Any, num_episodes: int) -> np.ndarray | None:
    ids = group_ids.tolist() if hasattr(group_ids, "tolist") else group_ids
    if isinstance(ids, (str, bytes)) or not isinstance(ids, Sequence) or len(ids) != num_episodes:
        return None
    numbering: dict[Hashable, int] = {}
    try:
        return np.fromiter((numbering.setdefault(g, len(numbering)) for g in ids), dtype=np.int64, count=num_episodes)
    except TypeError:
        return None


def _subset(group_ids: Any, keep: np.ndarray) -> Any:
    if group_ids is None:
        return None
    ids = group_ids.tolist() if hasattr(group_ids, "tolist") else list(group_ids)
    return [g for g, k in zip(ids, keep.tolist()) if k]


def _length(episode: Any, index: int) -> int:
    try:
        return len(episode)
    except TypeError:
        raise EstimatorInputError(f"Episode {index} is {type(episode).__name__}, expected a sequence of per-turn "
                                  "rewards.") from None

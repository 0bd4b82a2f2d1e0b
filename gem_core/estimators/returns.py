"""Discounted per-turn returns, ``G_t = r_t + gamma * G_{t+1}``, for a whole batch at once."""

from __future__ import annotations

from typing import Any

import numpy as np

from gem_core.estimators.inputs import EstimatorInputError, check_flat, check_gamma, flatten_episodes


def discounted_returns(rewards: Any, *, gamma: float) -> list[np.ndarray]:
    """One array of discounted returns per episode, for nested per-turn rewards."""
    batch = flatten_episodes(rewards)
    return batch.split(discounted_returns_flat(batch.rewards, batch.lengths, gamma=gamma))


def discounted_returns_flat(turn_rewards: Any, episode_lengths: Any, *, gamma: float) -> np.ndarray:
    """Discounted returns of flat per-turn rewards (episode after episode), as one float64 array."""
    return checked_returns(turn_rewards, episode_lengths, gamma)[0]


def checked_returns(turn_rewards: Any, episode_lengths: Any, gamma: Any, *,
                    allow_empty: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Check the inputs, then compute their discounted returns (which must fit in float64).
    Returns ``(returns, episode_lengths)`` as float64 and int64 arrays."""
    gamma = check_gamma(gamma)
    batch = check_flat(turn_rewards, episode_lengths, allow_empty=allow_empty)
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported just below
        returns = scan_returns(batch.rewards, batch.lengths, gamma)
    if not np.isfinite(returns).all():
        raise EstimatorInputError(
            "Discounted returns overflow float64: the rewards are too large, scale them down."
        )
    return returns, batch.lengths


def scan_returns(rewards: np.ndarray, lengths: np.ndarray, gamma: float) -> np.ndarray:
    """Discounted returns of checked flat arrays, in O(log(longest episode)) vectorised passes.

    After the pass with offset ``d``, ``G[i]`` holds the discounted sum of the ``2d`` rewards
    starting at turn ``i`` (fewer where the episode ends first): each pass adds
    ``gamma**d * G[i + d]`` wherever turn ``i + d`` is in the same episode. Summing in a tree
    like this also keeps rounding error lower than a running sum.
    """
    returns = rewards.astype(np.float64, copy=True)
    n = returns.size
    longest = int(lengths.max()) if lengths.size else 0
    if gamma == 0.0 or longest <= 1:
        return returns
    index_type = np.int32 if n < np.iinfo(np.int32).max else np.int64
    # turns left after each turn in its own episode
    remaining = np.repeat(np.cumsum(lengths, dtype=index_type), lengths)
    remaining -= np.arange(1, n + 1, dtype=index_type)
    in_episode = np.empty(n, dtype=bool)
    addend = np.empty(n)
    offset = 1
    while offset < longest:
        weight = gamma**offset
        if weight == 0.0:  # gamma**offset underflowed: every further term is exactly 0
            break
        m = n - offset
        np.greater_equal(remaining[:m], offset, out=in_episode[:m])
        np.multiply(returns[offset:], weight, out=addend[:m])
        np.multiply(addend[:m], in_episode[:m], out=addend[:m])
        np.add(returns[:m], addend[:m], out=returns[:m])
        offset *= 2
    return returns

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


CHUNK = 1 << 15  # turns per block: the block's working arrays stay in the CPU's L2 cache


def scan_returns(rewards: np.ndarray, lengths: np.ndarray, gamma: float, *, chunk: int = CHUNK) -> np.ndarray:
    """Discounted returns of checked flat arrays, without a Python loop over turns.

    The recurrence ``G_t = a_t * G_{t+1} + r_t``, with ``a_t = gamma`` inside an episode and 0 on
    its last turn, is solved by doubling: after the pass with offset ``d``, ``G[i]`` holds the
    discounted sum of up to ``2d`` rewards from turn ``i`` and ``a[i]`` the discount across them
    (0 once they reach the episode's end), so ``log2(longest episode)`` passes suffice. Summing as
    a tree also keeps rounding error below a running sum's. Blocks of turns are solved from the
    last to the first, each in cache; an episode that runs past a block's end then adds
    ``gamma**k * G[end]`` from the already finished next block.
    """
    returns = rewards.astype(np.float64, copy=True)
    n = returns.size
    longest = int(lengths.max()) if lengths.size else 0
    if gamma == 0.0 or longest <= 1:
        return returns
    ends = np.cumsum(lengths)
    carry_powers = gamma ** np.arange(min(chunk, n), 0, -1, dtype=np.float64)  # gamma**k .. gamma**1
    a, a_next, addend = np.empty(chunk), np.empty(chunk), np.empty(chunk)
    for stop in range(n, 0, -chunk):
        start = max(0, stop - chunk)
        size = stop - start
        block = returns[start:stop]
        first_end, past_ends = np.searchsorted(ends, (start, stop), side="right")
        a[:size] = gamma
        a[ends[first_end:past_ends] - 1 - start] = 0.0
        a[size - 1] = 0.0  # the next block is added afterwards
        reach = min(longest, size)
        offset = 1
        while offset < reach:
            m = size - offset
            np.multiply(a[:m], block[offset:], out=addend[:m])
            np.add(block[:m], addend[:m], out=block[:m])
            if 2 * offset < reach:
                np.multiply(a[:m], a[offset:size], out=a_next[:m])
                a_next[m:size] = a[m:size]
                a, a_next = a_next, a
            offset *= 2
        runs_on = stop < n and (past_ends == 0 or ends[past_ends - 1] != stop)
        if runs_on:  # episode `past_ends` spans the block's end
            first = max(start, int(ends[past_ends] - lengths[past_ends]))
            returns[first:stop] += carry_powers[carry_powers.size - (stop - first):] * returns[stop]
    return returns

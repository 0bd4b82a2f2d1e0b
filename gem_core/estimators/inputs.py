"""Checking estimator inputs and turning nested episodes into flat arrays.

Every estimator works on two flat arrays: ``turn_rewards`` (one float per turn, episode after
episode) and ``episode_lengths`` (turns per episode). Nested input (a sequence of episodes, each a
sequence of per-turn rewards) is converted here, once, with a fast path for lists of Python
numbers and for numpy arrays; anything unusual goes through a slow path whose only job is to name
the offending episode and turn.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any

import numpy as np

from gem_core.errors import GemError

NUMERIC_KINDS = "biuf"  # numpy dtype kinds accepted as rewards: bool, int, uint, float


class EstimatorInputError(GemError, ValueError):
    """Rewards, lengths, group ids or options that an estimator cannot use."""


@dataclass(frozen=True)
class FlatBatch:
    """Per-turn values of a batch of episodes, stored flat: episode after episode."""

    rewards: np.ndarray  # float64, shape (num_turns,)
    lengths: np.ndarray  # int64, shape (num_episodes,), every length >= 1

    def split(self, values: np.ndarray) -> list[np.ndarray]:
        """Cut a flat per-turn array into one array per episode (views, no copy)."""
        bounds = np.cumsum(self.lengths).tolist()
        starts = [0, *bounds[:-1]]
        return [values[a:b] for a, b in zip(starts, bounds)]


def flatten_episodes(rewards: Any, *, allow_empty: bool = False) -> FlatBatch:
    """Check nested per-turn rewards and return them flat (finiteness is checked later, by
    :func:`check_flat`)."""
    if isinstance(rewards, np.ndarray) and rewards.dtype != object:
        return _flatten_array(rewards, allow_empty)
    if isinstance(rewards, (str, bytes, Mapping)) or not isinstance(rewards, Iterable):
        raise EstimatorInputError(
            f"rewards must be a sequence of episodes, each a sequence of per-turn rewards; "
            f"got {type(rewards).__name__}."
        )
    episodes = rewards if isinstance(rewards, Sequence) else list(rewards)
    if not episodes:
        if allow_empty:
            return FlatBatch(np.zeros(0), np.zeros(0, dtype=np.int64))
        raise EstimatorInputError("The batch is empty: pass at least one episode with one reward.")
    kinds = set(map(type, episodes))
    flat = None
    if kinds <= {list, tuple}:
        lengths = np.fromiter(map(len, episodes), dtype=np.int64, count=len(episodes))
        try:
            values = np.array(list(chain.from_iterable(episodes)))
        except (TypeError, ValueError):  # ragged or odd items: the slow path names them
            values = None
        if values is not None and values.ndim == 1 and values.dtype.kind in NUMERIC_KINDS:
            flat = values.astype(np.float64, copy=False)
    elif kinds == {np.ndarray} and all(e.ndim == 1 and e.dtype.kind in NUMERIC_KINDS for e in episodes):
        lengths = np.fromiter(map(len, episodes), dtype=np.int64, count=len(episodes))
        flat = np.concatenate(episodes).astype(np.float64, copy=False)
    if flat is None:
        flat, lengths = _flatten_slowly(episodes)
    _check_no_empty_episode(lengths, "Episode {e} has no turns")
    return FlatBatch(flat, lengths)


def check_flat(turn_rewards: Any, episode_lengths: Any, *, allow_empty: bool = False) -> FlatBatch:
    """Check flat per-turn rewards and episode lengths; rewards must be finite."""
    rewards = _as_1d(turn_rewards, "turn_rewards")
    if rewards.dtype.kind not in NUMERIC_KINDS:
        raise EstimatorInputError(f"turn_rewards must hold numbers; got dtype {rewards.dtype}.")
    rewards = rewards.astype(np.float64, copy=False)
    lengths = _as_1d(episode_lengths, "episode_lengths")
    if lengths.size and lengths.dtype.kind not in "iu":
        raise EstimatorInputError(f"episode_lengths must be integers; got dtype {lengths.dtype}.")
    lengths = lengths.astype(np.int64, copy=False)
    if lengths.size == 0 and not allow_empty:
        raise EstimatorInputError("The batch is empty: pass at least one episode with one reward.")
    _check_no_empty_episode(lengths, "episode_lengths[{e}] is {length}")
    if int(lengths.sum()) != rewards.size:
        raise EstimatorInputError(
            f"episode_lengths add up to {int(lengths.sum())} turns but turn_rewards holds {rewards.size}."
        )
    finite = np.isfinite(rewards)
    if not finite.all():
        index = int(np.argmin(finite))
        episode = int(np.searchsorted(np.cumsum(lengths), index, side="right"))
        turn = index - int(lengths[:episode].sum())
        raise EstimatorInputError(
            f"Reward of episode {episode}, turn {turn} is {rewards[index]}: every reward must be a finite number."
        )
    return FlatBatch(rewards, lengths)


def check_gamma(gamma: Any) -> float:
    """The discount factor as a float in [0, 1]."""
    if isinstance(gamma, numbers.Real) and not isinstance(gamma, bool) and 0.0 <= float(gamma) <= 1.0:
        return float(gamma)
    raise EstimatorInputError(f"gamma must be a number in [0, 1]; got {gamma!r}.")


def check_eps(eps: Any) -> float:
    """The normalisation epsilon as a finite float >= 0."""
    if isinstance(eps, numbers.Real) and not isinstance(eps, bool) and math.isfinite(eps) and eps >= 0:
        return float(eps)
    raise EstimatorInputError(f"eps must be a finite number >= 0; got {eps!r}.")


def group_index(group_ids: Any, num_episodes: int, estimator: str) -> tuple[np.ndarray, np.ndarray, list]:
    """Map per-episode group ids to ``(group of each episode, episodes per group, the ids)``.

    Every group needs at least two episodes: a group of one has nothing to compare against.
    """
    if group_ids is None:
        raise EstimatorInputError(
            f"{estimator} needs group_ids: one id per episode, equal for episodes rolled out from "
            "the same start state (same environment and seed)."
        )
    if isinstance(group_ids, (str, bytes)) or not isinstance(group_ids, Iterable):
        raise EstimatorInputError(f"group_ids must be a sequence with one id per episode; got {type(group_ids).__name__}.")
    if hasattr(group_ids, "tolist") and not isinstance(group_ids, np.ndarray):  # a torch tensor
        group_ids = group_ids.tolist()
    ids = group_ids if isinstance(group_ids, (Sequence, np.ndarray)) else list(group_ids)
    if len(ids) != num_episodes:
        raise EstimatorInputError(f"group_ids has {len(ids)} entries for {num_episodes} episodes: give one id per episode.")
    if isinstance(ids, np.ndarray):
        array = ids
    else:  # numpy would turn a mix of ints and strings into strings, merging 1 and "1"
        kinds = set(map(type, ids))
        array = np.asarray(ids) if kinds == {int} or kinds == {str} else None
    if array is not None and array.ndim == 1 and array.dtype.kind in "iuUSb":
        unique, inverse = np.unique(array, return_inverse=True)
        names = unique.tolist()
    else:  # any hashable ids (tuples, mixed types): number them in order of appearance
        numbering: dict[Hashable, int] = {}
        try:
            inverse = np.fromiter((numbering.setdefault(g, len(numbering)) for g in ids), dtype=np.int64, count=num_episodes)
        except TypeError as e:
            raise EstimatorInputError(f"group_ids must be hashable (ints or strings, say): {e}.") from None
        names = list(numbering)
    inverse = inverse.reshape(-1).astype(np.int64, copy=False)
    counts = np.bincount(inverse, minlength=len(names))
    if (counts < 2).any():
        group = int(np.argmin(counts >= 2))
        episode = int(np.flatnonzero(inverse == group)[0])
        raise EstimatorInputError(
            f"{estimator} needs at least two episodes per group, but group {names[group]!r} has only "
            f"episode {episode}: roll out each start state several times."
        )
    return inverse, counts, names


def _flatten_array(rewards: np.ndarray, allow_empty: bool) -> FlatBatch:
    if rewards.ndim != 2 or rewards.dtype.kind not in NUMERIC_KINDS:
        hint = " (one number per episode? pass rewards[:, None] for single-turn episodes)" if rewards.ndim == 1 else ""
        raise EstimatorInputError(
            f"A rewards array must be 2-D (episodes x turns) and numeric; got shape {rewards.shape}, "
            f"dtype {rewards.dtype}{hint}."
        )
    episodes, turns = rewards.shape
    if episodes == 0 and not allow_empty:
        raise EstimatorInputError("The batch is empty: pass at least one episode with one reward.")
    if turns == 0 and episodes:
        raise EstimatorInputError("Episode 0 has no turns: every episode needs at least one reward.")
    lengths = np.full(episodes, turns, dtype=np.int64)
    return FlatBatch(rewards.astype(np.float64).reshape(-1), lengths)


def _flatten_slowly(episodes: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    flat: list[float] = []
    lengths = np.zeros(len(episodes), dtype=np.int64)
    for e, episode in enumerate(episodes):
        if (isinstance(episode, (str, bytes, Mapping)) or not hasattr(episode, "__len__")
                or not isinstance(episode, Iterable) or getattr(episode, "ndim", 1) != 1):
            hint = " (one reward per episode? pass [[r] for r in rewards])" if isinstance(episode, numbers.Number) else ""
            raise EstimatorInputError(
                f"Episode {e} is {_describe(episode)}, expected a sequence of per-turn rewards{hint}."
            )
        before = len(flat)
        flat.extend(_as_reward(value, e, t) for t, value in enumerate(episode))
        lengths[e] = len(flat) - before
    return np.array(flat, dtype=np.float64), lengths


def _as_reward(value: Any, episode: int, turn: int) -> float:
    if not isinstance(value, (str, bytes)) and hasattr(type(value), "__float__") and getattr(value, "ndim", 0) == 0:
        try:
            return float(value)
        except (TypeError, ValueError, OverflowError):
            pass
    raise EstimatorInputError(f"Reward of episode {episode}, turn {turn} is {_describe(value)}, expected a number.")


def _describe(value: Any) -> str:
    text = repr(value)
    text = text if len(text) <= 40 else text[:37] + "..."
    return f"{type(value).__name__} {text}"


def _as_1d(values: Any, name: str) -> np.ndarray:
    try:
        array = np.asarray(values)
    except (TypeError, ValueError) as e:
        raise EstimatorInputError(f"{name} must be a 1-D array: {e}") from None
    if array.ndim != 1:
        raise EstimatorInputError(f"{name} must be a 1-D array; got shape {array.shape}.")
    return array


def _check_no_empty_episode(lengths: np.ndarray, message: str) -> None:
    if lengths.size and int(lengths.min()) < 1:
        e = int(np.argmin(lengths))
        raise EstimatorInputError(message.format(e=e, length=int(lengths[e])) + ": every episode needs at least one reward.")

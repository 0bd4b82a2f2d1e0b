"""Calling estimators: the nested registry form, and the flat form adapters use.

Each built-in estimator is a function ``estimator(rewards, *, gamma, group_ids=None, valid=None,
...)`` over nested episodes, carrying its flat counterpart as ``estimator.flat(turn_rewards,
episode_lengths, *, gamma, group_ids=None, ...)``. :func:`estimate_flat` calls any registered
estimator on flat arrays: the flat counterpart when there is one, otherwise the nested form;
:func:`estimate` calls any of them in the nested form. Both take ``valid`` for every estimator.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from gem_core.estimators.inputs import EstimatorInputError, FlatBatch, check_flat, flatten_episodes
from gem_core.estimators.moments import AllReduce, fail_collectively
from gem_core.estimators.validity import MIN_GROUP_SIZE, flat_over_valid, nested_over_valid

FlatEstimator = Callable[..., np.ndarray]


def per_episode(flat: FlatEstimator, rewards: Any, *, all_reduce: AllReduce | None = None,
                **options: Any) -> list[np.ndarray]:
    """Run a flat estimator on nested episodes; one advantage array per episode comes back."""
    try:
        batch = flatten_episodes(rewards, allow_empty=all_reduce is not None)
    except EstimatorInputError as error:
        fail_collectively(error, all_reduce)
    if all_reduce is not None:
        options["all_reduce"] = all_reduce
    return batch.split(flat(batch.rewards, batch.lengths, **options))


def with_flat(flat: FlatEstimator) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Attach ``flat`` to a nested estimator as its ``.flat`` attribute."""
    def attach(nested: Callable[..., Any]) -> Callable[..., Any]:
        nested.flat = flat  # type: ignore[attr-defined]
        return nested
    return attach


def estimate_flat(estimator: str | Callable[..., Any], turn_rewards: Any, episode_lengths: Any, *,
                  gamma: float, group_ids: Any = None, valid: Any = None, **options: Any) -> np.ndarray:
    """Per-turn advantages for flat per-turn rewards (episode after episode) and episode lengths.

    ``estimator`` is a registered name (``"rebn"``) or an estimator function; ``options`` are its
    extra keywords (for ReBN: ``eps``, ``all_reduce``). ``valid`` (one flag per episode) leaves the
    failed episodes out (see :mod:`gem_core.estimators.validity`). Returns one float64 array,
    aligned with ``turn_rewards``.
    """
    name, function = resolve(estimator)
    flat = getattr(function, "flat", None)
    _check_options(flat or function, name, options)
    if flat is None:
        def flat(rewards: Any, lengths: Any, **keywords: Any) -> np.ndarray:
            batch = check_flat(rewards, lengths)
            return _joined(function(batch.split(batch.rewards), **keywords), batch, name)
    if valid is None:
        return flat(turn_rewards, episode_lengths, gamma=gamma, group_ids=group_ids, **options)
    if getattr(flat, MIN_GROUP_SIZE, None) is not None:  # it takes valid itself
        return flat(turn_rewards, episode_lengths, gamma=gamma, group_ids=group_ids, valid=valid, **options)
    return flat_over_valid(flat, turn_rewards, episode_lengths, gamma=gamma, group_ids=group_ids, valid=valid,
                           min_group_size=getattr(function, MIN_GROUP_SIZE, 1), **options)


def estimate(estimator: str | Callable[..., Any], rewards: Any, *, gamma: float, group_ids: Any = None,
             valid: Any = None, **options: Any) -> list[np.ndarray]:
    """Per-turn advantages of nested per-turn rewards (one sequence per episode) from a registered
    estimator (a name) or an estimator function, counting only the ``valid`` episodes (one flag per
    episode; None: all). Works for estimators that do not take ``valid`` themselves."""
    name, function = resolve(estimator)
    if valid is None or getattr(function, MIN_GROUP_SIZE, None) is not None:
        extra = {} if valid is None else {"valid": valid}
        return function(rewards, gamma=gamma, group_ids=group_ids, **extra, **options)
    return nested_over_valid(function, rewards, gamma=gamma, group_ids=group_ids, valid=valid,
                             min_group_size=1, **options)


def resolve(estimator: str | Callable[..., Any]) -> tuple[str, Callable[..., Any]]:
    """``(name, function)`` of a registered estimator's name or of an estimator function."""
    if isinstance(estimator, str):
        from gem_core.registry import get_estimator

        return estimator, get_estimator(estimator)
    if not callable(estimator):
        raise EstimatorInputError(f"estimator must be a registered name or a function; got {type(estimator).__name__}.")
    return getattr(estimator, "__name__", repr(estimator)), estimator


def _check_options(function: Callable[..., Any], name: str, options: dict[str, Any]) -> None:
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):  # no introspectable signature: let the call decide
        return
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return
    unknown = sorted(set(options) - set(parameters))
    if unknown:
        accepted = [p for p, v in parameters.items()
                    if v.kind is inspect.Parameter.KEYWORD_ONLY and p not in ("gamma", "group_ids")]
        raise EstimatorInputError(
            f"Estimator {name!r} does not accept {', '.join(map(repr, unknown))}; "
            f"its options are: {', '.join(accepted) or '(none)'}."
        )


def _joined(result: Any, batch: FlatBatch, name: str) -> np.ndarray:
    lengths = batch.lengths.tolist()
    try:
        parts = [np.asarray(part, dtype=np.float64) for part in result]
    except (TypeError, ValueError) as e:
        raise EstimatorInputError(f"Estimator {name!r} did not return numeric arrays: {e}") from None
    shapes_ok = len(parts) == len(lengths) and all(p.shape == (n,) for p, n in zip(parts, lengths))
    if not shapes_ok:
        raise EstimatorInputError(
            f"Estimator {name!r} must return one array of per-turn advantages per episode "
            f"({len(lengths)} episodes); it returned {len(parts)} arrays"
            + (" of the wrong lengths." if len(parts) == len(lengths) else ".")
        )
    joined = np.concatenate(parts) if parts else np.zeros(0)
    if not np.isfinite(joined).all():
        raise EstimatorInputError(f"Estimator {name!r} returned a non-finite advantage.")
    return joined

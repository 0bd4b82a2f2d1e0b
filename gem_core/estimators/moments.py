"""Mean and standard deviation of a batch, optionally across data-parallel ranks.

Conventions shared by every estimator:

* the standard deviation is the population one (divide by the count, ``ddof=0``), so values
  normalised by it have standard deviation 1 over the set they were normalised over;
* values that are equal up to floating-point rounding (``std <= ZERO_STD_RTOL * |mean|``) count
  as equal: their centred values are exactly 0, never rounding noise divided by ``eps``.

Across ranks, ``all_reduce`` is a collective the caller supplies: it takes a small float64 numpy
array and returns the element-wise sum of that array over all ranks (every rank gets the same
result). It is called twice per batch, in the same order on every rank. An input error on one
rank is announced through the first call, so every rank raises instead of some waiting forever.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NoReturn

import numpy as np

from gem_core.estimators.inputs import EstimatorInputError

AllReduce = Callable[[np.ndarray], np.ndarray]

ZERO_STD_RTOL = 1e-12


def normalise_batch(values: np.ndarray, all_reduce: AllReduce | None = None, *, scale: bool,
                    eps: float = 0.0) -> np.ndarray:
    """Centre ``values`` in place on the batch mean and, when ``scale``, divide by ``std + eps``
    (mean and population std over all ranks when ``all_reduce`` is given). Equal values become
    exactly 0. Returns ``values``."""
    count, total, failed = _reduce(np.array([values.size, values.sum(), 0.0]), all_reduce)
    if failed:
        raise EstimatorInputError(
            f"{int(failed)} data-parallel rank(s) rejected their input; their error says why."
        )
    if count == 0:
        raise EstimatorInputError("The batch is empty on every rank: pass at least one episode with one reward.")
    mean = total / count
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported just below
        values -= mean
        # einsum, not dot: BLAS threads would spin on the cores other work needs
        (squares,) = _reduce(np.array([np.einsum("i,i->", values, values)]), all_reduce)
        std = float(np.sqrt(squares / count))
    if not (np.isfinite(mean) and np.isfinite(std)):
        raise EstimatorInputError("Returns are too large to normalise in float64: scale the rewards down.")
    if std <= ZERO_STD_RTOL * abs(mean):  # equal up to rounding
        values.fill(0.0)
    elif scale:
        values /= std + eps
    return values


def fail_collectively(error: EstimatorInputError, all_reduce: AllReduce | None) -> NoReturn:
    """Raise ``error``, first telling the other ranks (through the call they are waiting in)."""
    if all_reduce is not None:
        _reduce(np.array([0.0, 0.0, 1.0]), all_reduce)
    raise error


def _reduce(local: np.ndarray, all_reduce: AllReduce | None) -> np.ndarray:
    if all_reduce is None:
        return local
    result = all_reduce(local.copy())
    try:
        summed = np.asarray(result, dtype=np.float64)
    except (TypeError, ValueError):
        summed = None
    if summed is None or summed.shape != local.shape:
        raise EstimatorInputError(
            f"all_reduce must return the element-wise sum over ranks of the array it is given "
            f"(shape {local.shape}); it returned {type(result).__name__}. For torch.distributed "
            "pass gem_core.estimators.torch_all_reduce()."
        )
    return summed


def advantage_stats(advantages: Sequence[Sequence[float]] | Sequence[np.ndarray]) -> dict[str, float]:
    """Mean, population standard deviation, minimum and maximum of every turn's advantage in a
    batch (one sequence per episode, as estimators return them); all 0 for a batch without turns.
    What trainers log of an estimator's output: a standard deviation of 0 means no learning signal."""
    flat = np.concatenate([np.asarray(a, dtype=np.float64).ravel() for a in advantages]) if len(advantages) else np.zeros(0)
    if not flat.size:
        return {"advantage_mean": 0.0, "advantage_std": 0.0, "advantage_min": 0.0, "advantage_max": 0.0}
    return {"advantage_mean": float(flat.mean()), "advantage_std": float(flat.std()),
            "advantage_min": float(flat.min()), "advantage_max": float(flat.max())}

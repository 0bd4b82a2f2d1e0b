"""Between per-turn values and token-level tensors, for libraries that train on token rows.

Such a library hands over one row per episode: the response tokens of several turns, with
``response_mask`` 1 on the model's tokens and 0 on the tokens the environment inserted between
turns. A turn is a maximal run of 1s in a row. Turns are numbered flat, row after row and left to
right in each row, which is the order the flat estimators (``estimate_flat``) use.

torch is imported when a function here is first called, never on import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from gem_core.errors import MissingDependencyError
from gem_core.estimators.dispatch import estimate_flat
from gem_core.estimators.inputs import EstimatorInputError

if TYPE_CHECKING:
    import torch


def import_torch() -> Any:
    try:
        import torch
    except ImportError:
        raise MissingDependencyError("The token-level estimator helpers", "torch", "torch") from None
    return torch


def turn_ids(response_mask: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """The flat turn index of every token (-1 where the mask is 0), and the turns of every row."""
    torch = import_torch()
    mask = _as_mask(response_mask)
    starts = mask.clone()
    starts[:, 1:] &= ~mask[:, :-1]
    within_row = torch.cumsum(starts, dim=1)  # int64: 1 on the first turn of a row, 2 on the next...
    turns_per_row = within_row[:, -1] if mask.shape[1] else torch.zeros(mask.shape[0], dtype=torch.long, device=mask.device)
    first_of_row = torch.cumsum(turns_per_row, dim=0) - turns_per_row
    ids = torch.where(mask, within_row - 1 + first_of_row[:, None], -1)
    return ids, turns_per_row


def turn_rewards(token_level_rewards: Any, response_mask: Any) -> tuple[np.ndarray, np.ndarray]:
    """Per-turn rewards from token-level rewards: ``(turn_rewards, turns_per_row)`` as numpy.

    A turn's reward is the sum of its tokens' rewards, so the reward may sit on any token of its
    turn (conventionally the last). A nonzero reward on a token outside every turn is an error.
    """
    mask = _as_mask(response_mask)
    ids, turns_per_row = turn_ids(mask)
    return _sum_per_turn(token_level_rewards, mask, ids, turns_per_row), turns_per_row.cpu().numpy()


def place_on_tokens(turn_values: Any, response_mask: Any, *, dtype: torch.dtype | None = None) -> torch.Tensor:
    """Each turn's value on every token of that turn, 0 on tokens outside turns.

    ``turn_values`` holds one value per turn, in flat turn order; the result has the mask's shape
    and device, and ``dtype`` (float32 unless given).
    """
    mask = _as_mask(response_mask)
    ids, turns_per_row = turn_ids(mask)
    return _place(turn_values, mask, ids, int(turns_per_row.sum()), dtype)


def token_advantages(estimator: Any, token_level_rewards: Any, response_mask: Any, *, gamma: float,
                     group_ids: Any = None, valid: Any = None, **options: Any) -> torch.Tensor:
    """Per-token advantages for rows that each hold one episode of several turns.

    Turn rewards are read from ``token_level_rewards`` (see :func:`turn_rewards`), the estimator
    (a registered name or function) runs on them with ``gamma``, ``group_ids`` (one per row) and
    ``options``, and each turn's advantage is put on all of that turn's tokens. The result has the
    shape, device and floating dtype of ``token_level_rewards``.

    A row that counts for nothing (``valid`` False, one flag per row: a failed episode) or that
    holds no model turn (its mask has no 1, as a training library writes a failed episode) is left
    out of the estimator's statistics (see :mod:`gem_core.estimators.validity`) and gets 0; the
    rewards of a row flagged invalid are never read.
    """
    from gem_core.estimators.validity import valid_flags

    torch = import_torch()
    rewards = torch.as_tensor(token_level_rewards)
    mask = _as_mask(response_mask)
    ids, turns_per_row = turn_ids(mask)
    per_row = turns_per_row.cpu().numpy()
    flagged = None if valid is None else valid_flags(valid, mask.shape[0])
    counts = per_row > 0 if flagged is None else flagged & (per_row > 0)
    if flagged is not None and not flagged.all():  # whatever they hold is not read
        invalid = torch.as_tensor(~flagged, device=rewards.device)
        rewards = torch.where(invalid[:, None], torch.zeros((), dtype=rewards.dtype, device=rewards.device), rewards)
    turn_rewards = _sum_per_turn(rewards, mask, ids, turns_per_row)
    advantages = estimate_flat(estimator, turn_rewards, per_row, gamma=gamma, group_ids=group_ids,
                               valid=None if counts.all() else counts, **options)
    dtype = rewards.dtype if rewards.is_floating_point() else torch.float32
    return _place(advantages, mask, ids, turn_rewards.size, dtype)


def _sum_per_turn(token_level_rewards: Any, mask: torch.Tensor, ids: torch.Tensor,
                  turns_per_row: torch.Tensor) -> np.ndarray:
    torch = import_torch()
    rewards = torch.as_tensor(token_level_rewards)
    if rewards.shape != mask.shape:
        raise EstimatorInputError(
            f"token_level_rewards has shape {tuple(rewards.shape)} but response_mask {tuple(mask.shape)}."
        )
    rewards = rewards.to(device=mask.device, dtype=torch.float64)
    stray = (rewards != 0) & ~mask
    if stray.any():
        row, position = (int(i) for i in stray.nonzero()[0])
        raise EstimatorInputError(
            f"token_level_rewards holds {rewards[row, position].item()} at row {row}, position "
            f"{position}, where response_mask is 0: put each turn's reward on a token of that turn "
            "(its last model token)."
        )
    total = int(turns_per_row.sum())
    sums = torch.zeros(total, dtype=torch.float64, device=mask.device)
    return sums.index_add_(0, ids[mask], rewards[mask]).cpu().numpy()


def _place(turn_values: Any, mask: torch.Tensor, ids: torch.Tensor, total: int,
           dtype: torch.dtype | None) -> torch.Tensor:
    torch = import_torch()
    if isinstance(turn_values, (list, tuple)):
        turn_values = np.asarray(turn_values, dtype=np.float64)
    values = torch.as_tensor(turn_values).to(device=mask.device, dtype=dtype or torch.float32)
    if values.ndim != 1 or values.shape[0] != total:
        raise EstimatorInputError(
            f"turn_values must hold one value per turn: response_mask has {total} turns, "
            f"turn_values has shape {tuple(values.shape)}."
        )
    if total == 0:
        return torch.zeros(mask.shape, dtype=values.dtype, device=mask.device)
    zero = torch.zeros((), dtype=values.dtype, device=mask.device)
    return torch.where(mask, values[ids.clamp(min=0)], zero)


def _as_mask(response_mask: Any) -> torch.Tensor:
    torch = import_torch()
    mask = torch.as_tensor(response_mask)
    if mask.ndim != 2:
        raise EstimatorInputError(f"response_mask must be 2-D (rows x tokens); got shape {tuple(mask.shape)}.")
    if mask.dtype != torch.bool:
        if mask.is_complex() or bool(((mask != 0) & (mask != 1)).any()):
            raise EstimatorInputError("response_mask must hold only 0 and 1.")
        mask = mask != 0
    return mask

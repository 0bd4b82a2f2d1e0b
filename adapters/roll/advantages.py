"""GEM's estimators on ROLL's step samples.

ROLL's step env managers (``StepEnvManager``, ``StepConcatEnvManager``) turn each turn of an
episode into one sample with the non-tensor fields ``traj_id`` (the episode), ``traj_group_id``
(the episodes from one start), ``step`` (the turn) and ``step_scores`` (the turn's reward). With
``adv_estimator: step_reinforce`` ROLL then normalises each sample's discounted return over the
batch and gives that value to every token of the sample. :func:`step_advantages` computes the same
per-sample values the GEM way: the episodes are rebuilt from the samples and GEM's estimator runs on
their per-turn rewards, so ``rebn`` gives exactly gem_core's ReBN (population std, eps 1e-6, 0 when
every return is equal), where ROLL's own normalisation divides by the unbiased std + 1e-6.

Samples that repeat a turn (ROLL's ``batch_adjust_mode: copy`` fills a batch up with copies) get
that turn's advantage and count once; an episode with a turn missing cannot be estimated and raises.
The samples of a failed episode (``failed``, one flag per sample, from GEM's env managers' field
``gem_failure``) leave the statistics and get 0, whatever turns they hold; a group keeps its valid
members.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from gem_adapters.common.estimators import gem_estimator
from gem_adapters.roll.rollout import FAILURE_KEY
from gem_core.errors import GemError


def step_advantages(estimator: str, traj_ids: Sequence[Any], steps: Sequence[Any], step_scores: Sequence[Any],
                    *, gamma: float, group_ids: Sequence[Any] | None = None,
                    failed: Sequence[Any] | None = None) -> np.ndarray:
    """Per-sample advantages (float64, in sample order) of GEM's ``estimator`` with ``gamma``
    across turns; ``group_ids`` (one per sample, e.g. ROLL's ``traj_group_id``) serve the group
    estimators; ``failed`` (one flag per sample) marks the samples of failed episodes."""
    from gem_core.estimators import estimate_flat

    name = gem_estimator(estimator)
    turns: dict[Any, dict[int, float]] = {}  # episode -> turn -> reward
    group_of: dict[Any, Any] = {}
    broken: set[Any] = set()
    keys = []
    for row, (traj, step, score) in enumerate(zip(traj_ids, steps, step_scores, strict=True)):
        step, score = int(step), float(score)
        episode = turns.setdefault(traj, {})
        if failed is not None and failed[row]:
            broken.add(traj)
        elif episode.get(step, score) != score:
            raise GemError(f"Episode {traj!r} has two different rewards for turn {step}; its samples "
                           "must come from one episode.")
        episode[step] = score
        if group_ids is not None:
            group_of.setdefault(traj, group_ids[row])
        keys.append((traj, step))
    rewards, lengths = [], []
    for traj, episode in turns.items():
        if traj in broken:  # its turns are never read
            episode.update({step: 0.0 for step in range(max(episode) + 1)})
        if sorted(episode) != list(range(len(episode))):
            missing = sorted(set(range(max(episode) + 1)) - set(episode))
            raise GemError(
                f"Episode {traj!r} lacks the samples of turn(s) {missing}, so GEM's {name} cannot "
                "compute its returns. Keep whole episodes in the batch: set batch_adjust_mode: copy.")
        rewards.extend(episode[t] for t in range(len(episode)))
        lengths.append(len(episode))
    groups = [group_of[traj] for traj in turns] if group_ids is not None else None
    valid = [traj not in broken for traj in turns] if broken else None
    flat = estimate_flat(name, np.asarray(rewards, dtype=np.float64), np.asarray(lengths), gamma=gamma,
                         group_ids=groups, valid=valid)
    offsets = dict(zip(turns, np.cumsum([0, *lengths[:-1]])))
    return np.asarray([flat[offsets[traj] + step] for traj, step in keys], dtype=np.float64)


def response_level_rewards(estimator: str, tensors: Any, non_tensors: Any, *, gamma: float) -> dict[str, float]:
    """What GEM's pipelines do in place of ROLL's ``compute_response_level_rewards`` on a batch's
    tensor fields (``tensors``, ROLL's ``batch.batch``) and non-tensor fields (``non_tensors``):
    :func:`step_advantages` as each sample's ``response_level_rewards``; the samples of failed
    episodes (``gem_failure``) get 0 and lose their ``response_mask`` and ``final_response_mask``
    (ROLL's loss masks). Returns the metrics ROLL logs with the step."""
    import torch

    failures = non_tensors.get(FAILURE_KEY)
    failed = None if failures is None else [bool(kind) for kind in failures]
    values = step_advantages(estimator, non_tensors["traj_id"], non_tensors["step"], non_tensors["step_scores"],
                             gamma=gamma, group_ids=non_tensors.get("traj_group_id"), failed=failed)
    scores = tensors["step_rewards"]
    tensors["response_level_rewards"] = torch.as_tensor(values, dtype=scores.dtype, device=scores.device)
    metrics = {f"critic/gem_{estimator}/mean": float(values.mean())}
    if failed is not None:
        rows = torch.as_tensor(failed, dtype=torch.bool, device=scores.device)
        for key in ("response_mask", "final_response_mask"):
            if key in tensors.keys():
                tensors[key][rows] = 0
        metrics.update(failure_shares(non_tensors["traj_id"], failures))
    return metrics


def failure_shares(traj_ids: Sequence[Any], failures: Sequence[Any]) -> dict[str, float]:
    """``gem/failed_rate`` and ``gem/failed_<kind>``: the shares of the batch's episodes (not its
    samples) that failed, in all and by kind."""
    from gem_core.episodes import FAILURE_KINDS

    kinds = list(dict(zip(traj_ids, failures)).values())
    total = max(len(kinds), 1)
    return {"gem/failed_rate": sum(bool(kind) for kind in kinds) / total,
            **{f"gem/failed_{kind}": kinds.count(kind) / total for kind in FAILURE_KINDS}}


def roll_batch_normalised(step_returns: Sequence[float]) -> np.ndarray:
    """ROLL's own ``step_reinforce`` normalisation of discounted returns (``reward_normalization``
    grouping, mean and std all ``batch``), for comparison: ``(G - mean) / (std + 1e-6)`` with the
    unbiased std, and all 0 when that std is at most 1e-6 or there is one sample."""
    returns = np.asarray(step_returns, dtype=np.float32)
    std = float(returns.std(ddof=1)) if returns.size > 1 else 0.0
    if returns.size <= 1 or std <= 1e-6:
        return np.zeros(returns.shape, dtype=np.float64)
    return ((returns - returns.mean()) / (np.float32(std) + np.float32(1e-6))).astype(np.float64)

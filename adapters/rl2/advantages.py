"""GEM's advantage estimators in place of RL2's ``compute_advantages``.

RL2's trainer (``RL2.trainer.ppo``) imports ``compute_advantages(config, tensor_dict, cu_seqs,
step)`` by name and calls it on rank 0 with the whole rollout batch: one row per sequence of
``tensor_dict`` (packed by RL2's ``pack_tensor_dicts``), and ``cu_seqs`` marking which rows belong
to one trajectory (an episode whose ``next_state`` did not extend its text starts a new row). RL2's
own estimators sum each trajectory's rewards into one number. :func:`install` rebinds the name (where it is
defined, and in the trainer module) to :func:`gem_compute_advantages`, which keeps the turns:

* a turn is a run of action tokens (``action_mask``); its reward is the sum of ``rewards`` over its
  tokens, which is the environment's reward on its last token (less RL2's KL penalty, with
  ``actor.kl.type=reward``);
* the GEM estimator runs once over every turn of the batch with ``adv.gamma`` between turns, so
  ReBN's mean and std cover every data-parallel rank's episodes; group estimators group the
  ``adv.responses_per_prompt`` trajectories of each prompt, as RL2 orders them;
* each turn's advantage goes on every token of the turn, in ``tensor_dict["advantages"]``;
* a trajectory with a NaN reward is a failed episode (GEM's environment file marks one so, see
  :mod:`gem_adapters.rl2.rollout`): it is left out of the statistics (ReBN's mean and std, its
  group's baseline: the group keeps its valid members) and gets advantage 0, its rows of
  ``action_mask`` become 0 (RL2's actor masks its log-probabilities, entropy and loss token count
  with it, so no token of it trains) and its rewards 0;
* the statistics of the per-turn advantages go to RL2's own logger (``rank0_log``: its console
  line and Weights & Biases) as ``gem/advantage_mean``, ``_std``, ``_min`` and ``_max``, with the
  share of the batch's episodes that failed, ``gem/failed_rate`` and ``gem/failed_<kind>``. RL2
  0.0.2's rollout logs a fixed set (``n_turns``, ``scores``, response lengths): an environment has
  no way into it, so RL2 runs log no success or format-error rate.
"""

from __future__ import annotations

import sys
from typing import Any

import torch

from gem_adapters.common import patch
from gem_adapters.common.estimators import gem_estimator, token_advantage_stats, token_estimate
from gem_adapters.rl2 import TRAINER_MODULE

FUNCTION = "compute_advantages"


@torch.no_grad()
def gem_advantages(estimator: str, config: Any, tensor_dict: dict[str, Any], cu_seqs: Any) -> dict[str, float]:
    """Set ``tensor_dict["advantages"]`` with GEM's ``estimator`` (see the module documentation);
    ``config`` is RL2's ``adv`` section. Returns the statistics of the batch's per-turn advantages
    and the shares of its episodes that failed."""
    spans = list(zip(cu_seqs[:-1].tolist(), cu_seqs[1:].tolist()))
    failed = [bool(tensor_dict["rewards"][start:end].isnan().any()) for start, end in spans]
    for (start, end), is_failed in zip(spans, failed):
        if is_failed:  # no token of it trains
            tensor_dict["action_mask"][start:end] = 0
            tensor_dict["rewards"][start:end] = 0
    rewards, mask = tensor_dict["rewards"], tensor_dict["action_mask"]
    width = mask.shape[1] + 1  # each row, then a 0 that keeps turns of adjacent rows apart

    def trajectories(rows: torch.Tensor) -> torch.Tensor:
        rows = torch.nn.functional.pad(rows, (0, 1))
        return torch.nn.utils.rnn.pad_sequence([rows[start:end].reshape(-1) for start, end in spans],
                                                batch_first=True)

    groups = [index // int(config.responses_per_prompt) for index in range(len(spans))]
    turns = trajectories(mask.long())
    valid = [not is_failed for is_failed in failed]
    advantages, _ = token_estimate(estimator, trajectories(rewards.double()), turns,
                                   gamma=float(config.gamma), group_ids=groups, valid=valid)
    out = torch.zeros(mask.shape, dtype=torch.float32)
    for row, (start, end) in zip(advantages, spans):
        out[start:end] = row[:(end - start) * width].view(end - start, width)[:, :-1].float()
    tensor_dict["advantages"] = out
    from gem_adapters.rl2.failures import failures_since
    from gem_core.episodes import FAILURE_KINDS

    kinds, total = failures_since(sum(failed)), max(len(spans), 1)
    return {**token_advantage_stats(advantages, turns, valid), "failed_rate": sum(failed) / total,
            **{f"failed_{kind}": kinds.count(kind) / total for kind in FAILURE_KINDS}}


def gem_compute_advantages(estimator: str) -> Any:
    """RL2's ``compute_advantages`` signature, computing with GEM's ``estimator``, timed in RL2's
    logs as RL2's own is, and logging the advantages' statistics through RL2's own logger
    (``gem/advantage_mean``, ``_std``, ``_min``, ``_max``, at the step)."""
    from RL2.utils.logging import rank0_log, time_logger

    @time_logger("compute_advantages")
    def compute_advantages(config: Any, raw_tensor_dict: dict[str, Any], cu_seqs: Any, step: int) -> None:
        stats = gem_advantages(estimator, config, raw_tensor_dict, cu_seqs)
        rank0_log({f"gem/{key}": [value] for key, value in stats.items()}, step)

    compute_advantages.gem_estimator = estimator  # type: ignore[attr-defined]
    return compute_advantages


def install(estimator: str) -> str:
    """Make RL2 compute advantages with GEM's ``estimator`` (a GEM name, or ``gem_<name>``): in
    ``RL2.utils.algorithms``, where ``RL2.trainer.ppo`` imports ``compute_advantages`` from when it
    runs, and in ``RL2.trainer.ppo`` itself if it is imported already. Returns the GEM name; raises
    for an unknown name, naming the closest ones."""
    name = gem_estimator(estimator)
    patch.install(rl2_modules(), FUNCTION, gem_compute_advantages(name))
    return name


def installed() -> str | None:
    """The GEM estimator RL2 uses, or None for RL2's own."""
    return patch.installed(rl2_modules()[0], FUNCTION)


def uninstall() -> None:
    """Give RL2 its own ``compute_advantages`` back."""
    patch.uninstall(rl2_modules(), FUNCTION)


def rl2_modules() -> list[Any]:
    """RL2's module that defines ``compute_advantages``, and the trainer module if imported."""
    import RL2.utils.algorithms

    return [RL2.utils.algorithms, *([sys.modules[TRAINER_MODULE]] if TRAINER_MODULE in sys.modules else [])]

"""``GemGRPOTrainer``: TRL's GRPOTrainer training on GEM environments, with per-turn advantages
(TRL 1.16 only: it relies on private methods, see :mod:`~gem_adapters.trl.versions`).

It is TRL's own trainer with three additions: the rollout plays GEM episodes
(:class:`~gem_adapters.trl.rollout.EpisodeRollout`), the episode's return is the reward TRL logs
(``rewards/episode_return/mean``), and, unless ``estimator="trl"``, GEM's estimator replaces
TRL's group advantage (:mod:`~gem_adapters.trl.advantages` says where, and what TRL does after).
Evaluation batches keep TRL's advantages: their loss is only logged.

.. code-block:: python

    trainer = GemGRPOTrainer(model="HuggingFaceTB/SmolLM2-135M-Instruct", args=GRPOConfig(...),
                             train_dataset=rows, estimator="rebn", gamma=0.9,
                             options=EpisodeOptions(max_turns=8))
    trainer.train()

``rows`` hold a ``prompt`` (the first observation, which TRL logs) and the ``env_id`` and
``seed`` that the rollout plays; ``gem trl config`` writes them.
"""

from __future__ import annotations

import math
import os
from typing import Any

from trl import GRPOTrainer

from gem_adapters.common.estimators import gem_estimator, needs_groups
from gem_adapters.common.options import EpisodeOptions
from gem_adapters.trl import TRL_ESTIMATOR
from gem_adapters.trl.advantages import gem_advantages
from gem_adapters.trl.rollout import EpisodeRollout, episode_starts
from gem_adapters.trl.versions import check_subclass_trl
from gem_core.errors import GemError

DEFAULT_GENERATIONS = 8  # GRPOConfig's num_generations when no config is given


def episode_return(prompts: list[Any], completions: list[Any], gem_turn_rewards: list[list[float]],
                   gem_failure: list[Any] | None = None, **_unused: Any) -> list[float | None]:
    """TRL reward function: an episode's undiscounted return, the sum of its turns' rewards; None
    for a failed episode, which TRL leaves out of its reward statistics and group baselines
    (advantage 0)."""
    failures = gem_failure or [None] * len(gem_turn_rewards)
    return [None if failure is not None else math.fsum(rewards)
            for rewards, failure in zip(gem_turn_rewards, failures)]


def check_estimator(estimator: str, group_size: int) -> str | None:
    """The GEM estimator's name, or None for TRL's own; raises for an unknown name or a group
    estimator with groups of one."""
    if estimator == TRL_ESTIMATOR:
        return None
    name = gem_estimator(estimator)  # an unknown name raises, naming the closest ones
    if group_size < 2 and needs_groups(name):
        raise GemError(f"{name} compares episodes from one start: set num_generations to 2 or more.")
    return name


class GemGRPOTrainer(GRPOTrainer):
    """TRL's GRPOTrainer on GEM environments; see the module documentation.

    ``estimator``: a GEM estimator (``rebn``, ``grpo``, ... or ``gem_<name>``), or ``"trl"`` for
    TRL's own group advantage. ``gamma``: the discount between turns. ``options``: the episode
    options (wrappers, ``max_turns``); TRL's ``max_completion_length`` caps one turn and
    ``episode_tokens`` a whole episode. ``reward_funcs`` default to :func:`episode_return`; the
    other arguments are GRPOTrainer's.
    """

    def __init__(self, model: Any, args: Any = None, *, estimator: str = "rebn", gamma: float = 0.9,
                 options: EpisodeOptions | None = None, episode_tokens: int | None = None,
                 reward_funcs: Any = None, **kwargs: Any):
        check_subclass_trl()  # the private methods it relies on change between TRL releases
        if "rollout_func" in kwargs:
            raise GemError("GemGRPOTrainer plays GEM episodes with its own rollout_func; leave it out.")
        if not 0.0 <= gamma <= 1.0:
            raise GemError(f"gamma must be within [0, 1], not {gamma}.")
        group_size = getattr(args, "num_generations", None) or DEFAULT_GENERATIONS
        self.gem_estimator = check_estimator(estimator, group_size)  # before the model loads
        self.gem_gamma = float(gamma)
        self.gem_starts: list[tuple[str, int | None]] | None = None
        rollout = EpisodeRollout(options, episode_tokens=episode_tokens)
        os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # rollout_func is experimental in TRL
        super().__init__(model, reward_funcs or [episode_return], args, rollout_func=rollout, **kwargs)

    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        self.gem_starts = episode_starts(inputs)
        try:
            output = super()._generate_and_score_completions(inputs)  # the rollout fills inputs' gem_* keys
        finally:
            self.gem_starts = None
        mode = "train" if self.model.training else "eval"
        self._log_episodes(inputs, mode)
        if self.gem_estimator is not None and mode == "train":
            output["advantages"] = gem_advantages(
                self, inputs, output["completion_ids"].shape[1], estimator=self.gem_estimator,
                gamma=self.gem_gamma, group_size=self.num_generations)
        return output

    def _log_episodes(self, inputs: list[dict[str, Any]], mode: str) -> None:
        """Turns per episode, the share of episodes the environment ended, the share won and the
        share that ended on a format error, over the episodes that did not fail (as `gem train`
        counts them), and the shares of all episodes that failed, ``gem/failed_rate`` and
        ``gem/failed_<kind>``; over all processes."""
        import torch

        from gem_core.episodes import FAILURE_KINDS

        local = []
        for row in inputs:
            kind = (row.get("gem_failure") or {}).get("kind")
            valid = float(kind is None)
            local.append([valid * len(row["gem_turn_rewards"]), valid * (row["gem_stop"] == "terminated"),
                          valid * row["gem_success"], valid * row["gem_format_error"], valid,
                          *(float(kind == k) for k in FAILURE_KINDS)])
        width = 5 + len(FAILURE_KINDS)
        sums = torch.tensor(local, dtype=torch.float64).view(-1, width).sum(dim=0).tolist()
        stats = self.accelerator.gather(torch.tensor([*sums, len(inputs)], dtype=torch.float32,
                                                     device=self.accelerator.device))
        totals = stats.view(-1, width + 1).sum(dim=0).tolist()
        turns, ended, won, format_errors, valid, *failed, episodes = totals
        valid, episodes = max(valid, 1.0), max(episodes, 1.0)
        self._metrics[mode]["gem/turns"].append(turns / valid)
        self._metrics[mode]["gem/terminated"].append(ended / valid)
        self._metrics[mode]["gem/success_rate"].append(won / valid)
        self._metrics[mode]["gem/format_error_rate"].append(format_errors / valid)
        self._metrics[mode]["gem/failed_rate"].append(sum(failed) / episodes)
        for kind, count in zip(FAILURE_KINDS, failed):
            self._metrics[mode][f"gem/failed_{kind}"].append(count / episodes)

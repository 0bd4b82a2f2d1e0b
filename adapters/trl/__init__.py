"""GEM on TRL, by two paths.

* Factory (TRL 0.29 to 1.16, public API): :func:`environment_factory` makes what
  ``GRPOTrainer(environment_factory=...)`` takes, so TRL's stock trainer plays GEM environments
  in its own tool loop (:mod:`~gem_adapters.trl.factory`); :func:`environment_return` scores
  them on TRL before 1.8.
* Rollout (TRL 1.16): GRPOTrainer's ``rollout_func`` plays GEM episodes turn by turn through TRL's
  own generation (:mod:`~gem_adapters.trl.rollout`), and GEM's advantage estimators replace TRL's
  group advantage (:mod:`~gem_adapters.trl.advantages`, :mod:`~gem_adapters.trl.trainer`).

``gem trl config [--mode factory]`` writes the datasets and a TRL config for
``python -m gem_adapters.trl.train`` (:mod:`~gem_adapters.trl.config`). Install with
``pip install "gem-adapters[trl]"`` after torch.
"""

from typing import Any

#: The ``--estimator`` value that keeps TRL's own group advantage (the episode's return
#: normalised within its group of ``num_generations``), unchanged.
TRL_ESTIMATOR = "trl"

__all__ = ["TRL_ESTIMATOR", "environment_factory", "environment_return"]


def __getattr__(name: str) -> Any:  # the factory's modules load on first use, not with the gem command
    if name in ("environment_factory", "environment_return"):
        from gem_adapters.trl import factory

        return getattr(factory, name)
    raise AttributeError(f"module 'gem_adapters.trl' has no attribute {name!r}")

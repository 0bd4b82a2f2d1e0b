"""ROLL's agentic pipeline with GEM's estimators: ``pipeline_cls: gem_adapters.roll.pipeline.rebn``.

Each GEM estimator has a pipeline class here, named as adapters name estimators (``rebn``,
``gem_grpo``, ``gem_reinforce``, ...). It is ROLL's ``AgenticPipeline`` unchanged except for one
step of ``run``: where ROLL normalises the samples' discounted returns
(``compute_response_level_rewards``), the GEM estimator's per-turn advantages are used instead (see
:mod:`gem_adapters.roll.advantages`), with ``step_reward_gamma`` as GEM's gamma. ROLL then puts
each sample's value on its last token and spreads it over the sample with ``gamma: 1``, as it does
for its own ``step_reinforce``. The config must select ``adv_estimator: step_reinforce`` (samples
per turn, from a step env manager).

The swap replaces the name ``compute_response_level_rewards`` in ROLL's pipeline module while
``run`` runs (the pipeline runs once per driver process), and puts ROLL's function back after.

Failed episodes (their samples' ``gem_failure`` field, which GEM's env managers set, see
:mod:`gem_adapters.roll.env_managers`) leave the estimator's statistics, get 0, and their samples'
``response_mask`` (and ``final_response_mask``) becomes 0: ROLL's agentic actor takes
``response_mask`` as its loss mask (and counts its tokens for the loss normalisation), so no token
of them trains. The step's metrics get ``gem/failed_rate`` and ``gem/failed_<kind>``, the share of
the batch's episodes that failed.
"""

from __future__ import annotations

from typing import Any

from gem_adapters.common import patch
from gem_adapters.common.estimators import estimator_names
from gem_adapters.roll.env_managers import RollMissingError
from gem_core.errors import GemError

try:
    import roll.pipeline.agentic.agentic_pipeline as roll_pipeline
except ImportError as error:
    raise RollMissingError("gem_adapters.roll.pipeline") from error


def response_level_rewards(estimator: str, batch: Any, pipeline_config: Any) -> tuple[Any, dict[str, float]]:
    """Stands in for ROLL's ``compute_response_level_rewards``: GEM's advantages as each sample's
    ``response_level_rewards`` (see :func:`gem_adapters.roll.advantages.response_level_rewards`)."""
    from gem_adapters.roll.advantages import response_level_rewards as gem_values

    metrics = gem_values(estimator, batch.batch, batch.non_tensor_batch,
                         gamma=float(pipeline_config.step_reward_gamma))
    return batch, metrics


def check_config(pipeline_config: Any) -> None:
    """Raise for configs under which ROLL hands over no per-turn samples, or changes the values."""
    if pipeline_config.adv_estimator != "step_reinforce":
        raise GemError(f"GEM's estimators in ROLL need adv_estimator: step_reinforce (one sample per turn), "
                       f"not {pipeline_config.adv_estimator!r}.")
    if float(pipeline_config.gamma) != 1.0:
        raise GemError(f"Set gamma: 1 (ROLL's discount within a turn's tokens), not {pipeline_config.gamma}; "
                       "GEM's discount across turns is step_reward_gamma.")
    for key in ("whiten_advantages", "whiten_rewards"):
        if getattr(pipeline_config, key, False):
            raise GemError(f"Set {key}: false; whitening would change GEM's advantages.")
    if getattr(pipeline_config, "reward_clip", None) is not None:
        raise GemError("Remove reward_clip; clipping would change GEM's advantages.")


class GemPipeline(roll_pipeline.AgenticPipeline):
    """ROLL's ``AgenticPipeline`` with a GEM estimator (set by the subclasses below)."""

    gem_estimator = "rebn"

    def __init__(self, pipeline_config: Any):
        check_config(pipeline_config)
        super().__init__(pipeline_config)

    def run(self) -> Any:
        def gem_function(batch: Any, pipeline_config: Any) -> Any:
            return response_level_rewards(self.gem_estimator, batch, pipeline_config)

        gem_function.gem_estimator = self.gem_estimator  # type: ignore[attr-defined]
        with patch.replaced(roll_pipeline, "compute_response_level_rewards", gem_function):
            return super().run()


def __getattr__(name: str) -> type[GemPipeline]:
    names = estimator_names()
    if name not in names:
        raise AttributeError(f"module {__name__!r} has no pipeline {name!r}; the pipelines are "
                             f"{', '.join(sorted(names))}")
    pipeline = type(name, (GemPipeline,), {"gem_estimator": names[name], "__module__": __name__,
                                           "__doc__": f"ROLL's AgenticPipeline with GEM's {names[name]}."})
    globals()[name] = pipeline
    return pipeline

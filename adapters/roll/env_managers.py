"""ROLL's own env managers, named so that ROLL's env workers register GEM adapters' environments and
GEM's failed episodes reach the pipeline.

ROLL's env worker imports each environment's ``env_manager_cls`` by dotted path before making the
environment. Naming it ``gem_adapters.roll.env_managers.StepConcatEnvManager`` (or
``StepEnvManager``, ``TrajEnvManager``) imports this module in that process, which registers every
GEM adapters id in the ``gem`` registry (see :mod:`gem_adapters.roll.rollout`). The name resolves
to a subclass of ROLL's class of that name that changes one thing: the samples
``formulate_rollouts`` makes of an episode carry the non-tensor field ``gem_failure``, the kind of
the episode's failure (``""`` when it did not fail), read from the ``gem_failure`` that
:class:`~gem_adapters.roll.rollout.RollEnv` puts in each step's info. GEM's pipelines
(:mod:`gem_adapters.roll.pipeline`) leave those episodes out of the statistics and the loss. ROLL
concatenates the samples of a batch field by field, so the environments of one run should all use
GEM's env managers (or none).
"""

from __future__ import annotations

import importlib
from typing import Any

from gem_adapters.roll.rollout import FAILURE_KEY, register_envs
from gem_core.errors import GemError

#: Our name -> ROLL's module holding the class of that name.
ROLL_MODULES = {
    "TrajEnvManager": "roll.pipeline.agentic.env_manager.traj_env_manager",
    "StepEnvManager": "roll.pipeline.agentic.env_manager.step_env_manager",
    "StepConcatEnvManager": "roll.pipeline.agentic.env_manager.step_concat_env_manager",
}

register_envs()


def episode_failure(history: list[dict[str, Any]]) -> str:
    """The failure kind an episode's step records hold (``""``: it did not fail)."""
    return next((record[FAILURE_KEY] for record in history if record.get(FAILURE_KEY)), "")


def mark_failure(samples: Any, history: list[dict[str, Any]]) -> Any:
    """``samples`` (a ROLL ``DataProto`` of one episode) with the episode's failure kind in
    ``non_tensor_batch["gem_failure"]``, one per sample."""
    import numpy as np

    samples.non_tensor_batch[FAILURE_KEY] = np.array([episode_failure(history)] * len(samples), dtype=object)
    return samples


def with_failures(roll_class: type) -> type:
    """The subclass of ROLL's env manager ``roll_class`` whose samples say how their episode failed."""

    def formulate_rollouts(self: Any, rollout_cache: Any) -> Any:
        history = list(rollout_cache.history)  # ROLL's own formulate_rollouts pops from it
        return mark_failure(roll_class.formulate_rollouts(self, rollout_cache), history)

    return type(roll_class.__name__, (roll_class,), {
        "formulate_rollouts": formulate_rollouts, "__module__": __name__,
        "__doc__": f"ROLL's {roll_class.__name__}, its samples marked with their episode's failure."})


def __getattr__(name: str) -> Any:
    if name not in ROLL_MODULES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}; "
                             f"the env managers are {', '.join(ROLL_MODULES)}")
    try:
        module = importlib.import_module(ROLL_MODULES[name])
    except ImportError as error:
        raise RollMissingError(f"ROLL's {name}") from error
    manager = with_failures(getattr(module, name))
    globals()[name] = manager
    return manager


class RollMissingError(GemError, ImportError):
    """ROLL itself is not importable here."""

    def __init__(self, feature: str):
        super().__init__(
            f"{feature} needs ROLL, which is not on the package index: clone "
            "https://github.com/alibaba/ROLL and install it with `pip install -e ROLL` (see GEM's "
            "docs/adapters/roll.md).")

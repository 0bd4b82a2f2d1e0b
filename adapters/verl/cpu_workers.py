"""What verl's worker processes need on the CPU besides the platform
(:mod:`gem_adapters.verl.cpu_platform`).

* verl registers its FSDP training engines for the cuda and npu devices only;
  :func:`register_fsdp_engines` registers the same engines for ``cpu`` through verl's
  ``EngineRegistry`` when verl imports them.
* verl's workers set up their process group with the backend string
  ``f"cpu:gloo,{device}:{backend}"`` (``verl/utils/distributed.py``,
  ``initialize_global_process_group_ray``), which torch refuses when the device is itself ``cpu``
  ("Duplicate device type cpu"), and which no platform or config setting changes. verl skips that
  setup when the process group exists already; :func:`join_process_group`, Ray's worker-process
  setup hook in a CPU run's config (``ray_kwargs.ray_init.runtime_env.worker_process_setup_hook``),
  makes it exist: each process of a verl worker group joins its group's gloo process group (from
  the ``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR`` and ``MASTER_PORT`` verl gives the process) as soon
  as it starts.

This module imports nothing from verl at import time: Ray imports it first thing in a worker
process, before verl (which loads GEM's plugin, which imports the platform).
"""

from __future__ import annotations

import logging
import os
from types import ModuleType

PLATFORM_NAME = "cpu"
FSDP_ENGINE_MODULE = "verl.workers.engine.fsdp.transformer_impl"
#: What verl sets in the environment of each process of a worker group (``RayWorkerGroup._create_worker``).
WORKER_GROUP_VARIABLES = ("WG_BACKEND", "RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


def register_fsdp_engines(module: ModuleType) -> None:
    """Register verl's FSDP engines (``module``: verl's FSDP engine module) for the cpu device.
    Runs inside verl's import of that module, so a failure is logged, never raised."""
    try:
        from verl.workers.engine import EngineRegistry

        for model_type, engine in (("language_model", module.FSDPEngineWithLMHead),
                                   ("value_model", module.FSDPEngineWithValueHead)):
            registered = getattr(EngineRegistry, "_engines", {}).get(model_type, {})
            for backend in ("fsdp", "fsdp2"):
                if PLATFORM_NAME not in registered.get(backend, {}):
                    EngineRegistry.register(model_type=model_type, backend=backend, device=PLATFORM_NAME)(engine)
    except Exception:
        logging.getLogger("gem_adapters.verl").exception(
            "GEM could not register verl's FSDP engines for the CPU; CPU runs will fail with 'No engine registered "
            "for device=cpu'.")


def join_process_group() -> None:
    """Ray's worker-process setup hook of CPU runs: a process of a verl worker group joins its
    group's gloo process group; other processes (verl's task runner, agent loops, vLLM's server)
    are left alone."""
    if os.environ.get("WG_BACKEND") != "ray" or not all(os.environ.get(name) for name in WORKER_GROUP_VARIABLES):
        return
    import torch.distributed as dist

    if not dist.is_initialized():
        dist.init_process_group(backend="gloo", init_method="env://", rank=int(os.environ["RANK"]),
                                world_size=int(os.environ["WORLD_SIZE"]))

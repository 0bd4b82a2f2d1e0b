"""Vector environments: many environments stepped as one batch, synchronously, concurrently, or
on the host actors of a Ray cluster (:mod:`gem_core.vector.ray_env`).

See :func:`make_vec` and :mod:`gem_core.vector.base` for autoreset modes, seeds and info keys.

* :mod:`~gem_core.vector.base`: the contract, :class:`VectorEnv`.
* :mod:`~gem_core.vector.sync_env`: the slots one after another; :mod:`~gem_core.vector.async_env`:
  the slots at the same time.
* :mod:`~gem_core.vector.execution`: where each slot's calls run, and the runner of a batch.
* :mod:`~gem_core.vector.calls`: one slot's call, and the checks on what it returns.
* :mod:`~gem_core.vector.starts`: start limits, how many heavy environments may start at once.
* :mod:`~gem_core.vector.workers`: worker threads and the background event loop.
* :mod:`~gem_core.vector.make`: :func:`make_vec`.
* :mod:`~gem_core.vector.ray_env`: the Ray mode's driver; :mod:`~gem_core.vector.ray_host` its
  host actors, :mod:`~gem_core.vector.ray_pool` their pool, :mod:`~gem_core.vector.ray_slot` one
  environment on a pool.
"""

from gem_core.vector.async_env import AsyncVectorEnv
from gem_core.vector.base import EPISODE_SEED, FAULT, FINAL_INFO, FINAL_OBSERVATION, AutoresetMode, VectorEnv
from gem_core.vector.execution import execution_kind
from gem_core.vector.make import make_vec
from gem_core.vector.sync_env import SyncVectorEnv

__all__ = [
    "EPISODE_SEED",
    "FAULT",
    "FINAL_INFO",
    "FINAL_OBSERVATION",
    "AsyncVectorEnv",
    "AutoresetMode",
    "SyncVectorEnv",
    "VectorEnv",
    "execution_kind",
    "make_vec",
]

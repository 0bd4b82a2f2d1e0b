"""Vector environments: many environments stepped as one batch, synchronously, concurrently, or
on the host actors of a Ray cluster (:mod:`gem_core.vector.ray_env`).

See :func:`make_vec` and :mod:`gem_core.vector.base` for autoreset modes, seeds and info keys.
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

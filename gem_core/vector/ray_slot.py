"""One environment on a Ray pool, used as a plain :class:`~gem_core.Env`.

For code that plays one episode at a time (the adapters' episode session) but wants the
environment off its own process: :class:`RaySlotEnv` leases one slot of a pool (see
:mod:`gem_core.vector.ray_pool`; a named pool is shared by every process that names it) and
forwards ``reset``/``step`` (and their async forms) to it.

A lost host loses nothing here either: the slot moves to a live host, where the episode is
played again from its seed with the actions taken so far (environments are deterministic given
the seed and the actions), and the step that was lost is then taken. An environment's own fault
(an exception, a malformed result, a timeout) raises :class:`RemoteEnvError` with the host's
report, as the environment itself would have raised.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gem_core.core import Env
from gem_core.errors import GemError
from gem_core.vector.base import FAULT
from gem_core.vector.ray_env import is_host_lost
from gem_core.vector.ray_pool import RayPool


class RemoteEnvError(GemError):
    """The environment failed on its host; ``fault`` is the host's report (see
    :mod:`gem_core.vector.base`)."""

    def __init__(self, fault: Mapping[str, Any]):
        self.fault = dict(fault)
        what = fault.get("error") or f"{fault.get('kind')} after {fault.get('timeout_s')} s"
        super().__init__(f"{fault.get('phase', 'call')} failed on its host: {what}")


class RaySlotEnv(Env):
    """``make(env_id, **kwargs)`` wrapped in ``wrappers``, run on one slot of ``pool`` (a
    :class:`RayPool` or a mapping of its options). ``step_timeout`` as in :func:`make_vec`."""

    def __init__(self, env_id: str, *, pool: RayPool | Mapping[str, Any], wrappers: Any = None,
                 step_timeout: float | None = None, **kwargs: Any):
        from gem_core.vector.make import make_vec

        self.env_id = env_id
        self._vec = make_vec(env_id, 1, mode="ray", pool=pool, wrappers=wrappers, step_timeout=step_timeout,
                             **kwargs)
        self._seed: int | None = None
        self._actions: list[str] = []

    def reset(self, seed: int | None = None, **options: Any) -> tuple[str, dict[str, Any]]:
        return self._reset_result(self._vec.reset(seed=self._seed_of(seed)))

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        while True:
            rows = self._vec.step([action])
            if not is_host_lost(rows[4][0]):
                return self._step_result(action, rows)
            self._restore()

    async def areset(self, seed: int | None = None, **options: Any) -> tuple[str, dict[str, Any]]:
        return self._reset_result(await self._vec.areset(seed=self._seed_of(seed)))

    async def astep(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        while True:
            rows = await self._vec.astep([action])
            if not is_host_lost(rows[4][0]):
                return self._step_result(action, rows)
            await self._arestore()

    def sample_random_action(self) -> str:
        return self._vec.sample_random_action(0)

    def clone(self) -> Env:
        raise GemError("An environment on a Ray pool cannot be cloned: make another one and reset it with the seed.")

    def close(self) -> None:
        self._vec.close()

    @property
    def where(self) -> str:
        """Where the environment runs now."""
        return self._vec.hosts[0]

    def _seed_of(self, seed: int | None) -> list[int]:
        if seed is None:  # as a vector environment does: the slot's next seed
            seed = self._vec._slots[0].next_seed
        self._seed, self._actions = seed, []
        return [seed]

    def _reset_result(self, rows: tuple[list[str], list[dict[str, Any]]]) -> tuple[str, dict[str, Any]]:
        observations, infos = rows
        info = dict(infos[0])
        if FAULT in info:
            if is_host_lost(info):  # never started: start it where the slot lives now
                return self._reset_result(self._vec.reset(seed=[self._seed]))
            raise RemoteEnvError(info[FAULT])
        info.pop("episode_seed", None)
        return observations[0], info

    def _step_result(self, action: str, rows: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        observations, rewards, terminated, truncated, infos = rows
        if FAULT in infos[0]:
            raise RemoteEnvError(infos[0][FAULT])
        self._actions.append(action)
        return observations[0], float(rewards[0]), bool(terminated[0]), bool(truncated[0]), infos[0]

    def _restore(self) -> None:
        """Play the episode so far again on the slot's new host."""
        if self._seed is None:
            raise GemError("step() before reset() on a Ray-pool environment.")
        self._reset_result(self._vec.reset(seed=[self._seed]))
        for action in self._actions:
            rows = self._vec.step([action])
            if is_host_lost(rows[4][0]):
                return self._restore()
            if FAULT in rows[4][0]:
                raise RemoteEnvError(rows[4][0][FAULT])

    async def _arestore(self) -> None:
        if self._seed is None:
            raise GemError("step() before reset() on a Ray-pool environment.")
        observations, infos = await self._vec.areset(seed=[self._seed])
        if is_host_lost(infos[0]):
            return await self._arestore()
        if FAULT in infos[0]:
            raise RemoteEnvError(infos[0][FAULT])
        for action in self._actions:
            rows = await self._vec.astep([action])
            if is_host_lost(rows[4][0]):
                return await self._arestore()
            if FAULT in rows[4][0]:
                raise RemoteEnvError(rows[4][0][FAULT])

"""GEM environments as a NeMo Gym resources server: the gymnasium-style one, on NeMo Gym's own
``resources_servers.gymnasium.GymnasiumServer`` (NeMo Gym 0.4, Python 3.12 or newer; the
``nemo-gym`` extra), which NeMo Gym's ``gymnasium_agent`` plays.

* ``POST /reset`` (the rollout's row: ``responses_create_params`` and ``seed``, optionally
  ``env_id``, which must be the served one) makes the session's environment and resets it on the
  seed: ``{observation, info}``, the observation as the next user message.
* ``POST /step`` (the row and ``response``, the model's answer) steps with the answer's text:
  ``{observation, reward, terminated, truncated, info}``; the session's environment is closed when
  the episode ends.
* Sessions are NeMo Gym's own (its session cookie); at most ``max_sessions`` at once.

Bad input gets FastAPI's error shape (``{"detail": ...}``) and leaves other sessions alone: a seed
that is not a non-negative integer or another env id is HTTP 422, a step without an episode 409, a
session beyond ``max_sessions`` 503. An environment that raises ends its episode: HTTP 502 with
the error, which fails the rollout (it earns nothing).

Run it as NeMo Gym runs its resources servers: a config naming this module's server
(``GemResourcesServer``) with ``env_id``, started by NeMo Gym with its global config
(``python -m gem_serve.nemo_gym_server``).
"""

from __future__ import annotations

import asyncio
from typing import Any, Optional

from fastapi import HTTPException
from nemo_gym.base_resources_server import BaseResourcesServerConfig
from pydantic import Field
from resources_servers.gymnasium import GymnasiumServer, extract_text

from gem_serve.protocol import jsonable


class GemResourcesServerConfig(BaseResourcesServerConfig):
    env_id: str
    """The GEM environment id served."""
    max_sessions: int = 64
    """Sessions (rollouts) at once."""


class GemResourcesServer(GymnasiumServer):
    """A GEM environment per NeMo Gym session; see the module documentation."""

    config: GemResourcesServerConfig
    envs: dict[str, Any] = Field(default_factory=dict)

    async def reset(self, metadata: dict, session_id: Optional[str] = None) -> tuple[Optional[str], dict]:
        import gem_core

        seed = metadata.get("seed")
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise HTTPException(422, f'A rollout of {self.config.env_id} needs "seed": an integer of 0 or more; '
                                     f"got {seed!r}.")
        if metadata.get("env_id", self.config.env_id) != self.config.env_id:
            raise HTTPException(422, f"This server serves {self.config.env_id!r}, not {metadata['env_id']!r}.")
        await self.close_session(session_id)
        if len(self.envs) >= self.config.max_sessions:
            raise HTTPException(503, f"The server is at capacity ({self.config.max_sessions} sessions).")
        try:
            env = await asyncio.to_thread(gem_core.make, self.config.env_id)
        except Exception as e:  # noqa: BLE001 - environment code may raise anything
            raise HTTPException(502, f"Making {self.config.env_id} failed: {type(e).__name__}: {e}") from None
        self.envs[session_id] = env
        try:
            observation, info = await asyncio.to_thread(env.reset, seed)
        except Exception as e:  # noqa: BLE001
            await self.close_session(session_id)
            raise HTTPException(502, f"The environment failed to reset: {type(e).__name__}: {e}") from None
        return observation, jsonable(info)

    async def step(self, action: Any, metadata: dict, session_id: Optional[str] = None
                   ) -> tuple[Optional[str], float, bool, bool, dict]:
        env = self.envs.get(session_id)
        if env is None:
            raise HTTPException(409, "No episode in this session: POST /reset first (also after an episode ends).")
        try:
            observation, reward, terminated, truncated, info = await asyncio.to_thread(env.step, extract_text(action))
        except Exception as e:  # noqa: BLE001
            await self.close_session(session_id)
            raise HTTPException(502, f"The environment failed, and the episode is over: {type(e).__name__}: {e}") \
                from None
        return observation, float(reward), bool(terminated), bool(truncated), jsonable(info)

    async def close_session(self, session_id: Optional[str]) -> None:
        await super().close_session(session_id)
        env = self.envs.pop(session_id, None)
        if env is not None:
            from gem_core.vector.calls import close_quietly

            await asyncio.to_thread(close_quietly, env)


if __name__ == "__main__":
    GemResourcesServer.run_webserver()

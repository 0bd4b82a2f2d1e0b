"""A session of ``gem serve``: one environment and its episode, played through whichever
endpoint reaches it (a WebSocket on ``/ws``, MCP tool calls on ``/mcp``).

A session's calls run where the vector environments would run them
(:func:`gem_core.vector.execution.concurrent_route`): native-async environments are awaited,
blocking ones run in worker threads, and the others inline on the event loop; an environment
that does not declare ``blocking`` has its first calls timed (:class:`~gem_core.vector.execution.Probe`)
and moves to a worker thread when they mostly wait. One call at a time runs per session.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from concurrent.futures import Executor
from functools import partial
from typing import Any

from gem_core.core import Env
from gem_core.errors import GemError
from gem_core.vector.calls import checked_reset, checked_step, close_quietly
from gem_core.vector.execution import AWAIT, INLINE, PROBE, Probe, concurrent_route
from gem_serve import protocol
from gem_serve.protocol import ProtocolError

logger = logging.getLogger("gem_serve")

NO_EPISODE = "No episode in progress: reset first (also after an episode ends)."


class Session:
    """One client's environment and episode.

    ``websocket`` is the connection attached to the session, if any: the one that opened it, or
    one that joined a session opened over ``/mcp`` (``/ws?session_id=...``).
    """

    def __init__(self, env_id: str, executor: Executor):
        self.id = uuid.uuid4().hex
        self.env_id = env_id
        self.executor = executor
        self.env: Env | None = None
        self.route, self.probe = INLINE, Probe()
        self.lock = asyncio.Lock()
        self.websocket: Any = None
        self.last_active = time.monotonic()
        self.episode_id: str | None = None
        self.step_count, self.seed, self.in_episode, self.episode_return = 0, None, False, 0.0
        self.observation = ""  # the latest observation's text
        self.plain_mcp = False  # opened by a plain MCP client's initialize (it has a reset tool)
        #: Called with every step's observation data (:func:`~gem_serve.protocol.observation_data`),
        #: whichever endpoint stepped it: how whoever runs an episode hears its rewards.
        self.step_listeners: list[Any] = []

    async def start(self, env_factory) -> None:
        """Make the session's environment (in a worker thread: making one may load data)."""
        self.env = await asyncio.get_running_loop().run_in_executor(self.executor, env_factory)
        self.route = concurrent_route(self.env, None)

    @property
    def busy(self) -> bool:
        return self.lock.locked()

    def state(self) -> dict[str, Any]:
        return {"episode_id": self.episode_id, "step_count": self.step_count, "env_id": self.env_id,
                "seed": self.seed, "done": not self.in_episode, "episode_return": self.episode_return}

    async def reset(self, seed: int | None, episode_id: str | None, options: dict[str, Any]) -> dict[str, Any]:
        """A new episode; its first observation (:func:`~gem_serve.protocol.observation_data`).
        An environment that raises is a :class:`ProtocolError` with code ``EXECUTION_ERROR``."""
        async with self.lock:
            self.in_episode = False
            try:
                observation, info = checked_reset(await self.call("reset", seed, **options))
            except Exception as e:  # noqa: BLE001 - environment code may raise anything
                logger.warning("%s failed to reset (seed %s): %s: %s", self.env_id, seed, type(e).__name__, e)
                raise ProtocolError(f"The environment failed to reset: {type(e).__name__}: {e}",
                                    protocol.EXECUTION_ERROR) from None
            self.episode_id = episode_id or uuid.uuid4().hex
            self.seed, self.step_count, self.in_episode, self.episode_return = seed, 0, True, 0.0
            self.observation = observation
            return protocol.observation_data(observation, None, False, False, info, env_id=self.env_id,
                                             episode_id=self.episode_id, step_count=0, seed=seed)

    async def step(self, action: str) -> dict[str, Any]:
        """The next observation after ``action``. Outside an episode, a :class:`ProtocolError`
        with code ``SESSION_ERROR``; an environment that raises ends the episode with
        ``metadata.fault`` (done, reward 0, an empty prompt)."""
        async with self.lock:
            if not self.in_episode:
                raise ProtocolError(NO_EPISODE, protocol.SESSION_ERROR)
            self.step_count += 1
            try:
                observation, reward, terminated, truncated, info = checked_step(await self.call("step", action))
            except Exception as e:  # noqa: BLE001
                self.in_episode = False
                logger.warning("%s (seed %s) failed at step %d; the episode ends: %s: %s", self.env_id, self.seed,
                               self.step_count, type(e).__name__, e)
                fault = {"kind": "error", "phase": "step", "error": f"{type(e).__name__}: {e}"}
                return self._stepped(protocol.observation_data("", 0.0, False, True, {}, env_id=self.env_id,
                                                               episode_id=self.episode_id, step_count=self.step_count,
                                                               fault=fault))
            self.episode_return += reward
            self.in_episode = not (terminated or truncated)
            self.observation = observation
            return self._stepped(protocol.observation_data(observation, reward, terminated, truncated, info,
                                                           env_id=self.env_id, episode_id=self.episode_id,
                                                           step_count=self.step_count))

    def _stepped(self, data: dict[str, Any]) -> dict[str, Any]:
        for listener in self.step_listeners:
            listener(data)
        return data

    async def sample_action(self) -> str:
        async with self.lock:
            return await self.call("sample_random_action")

    async def in_worker(self, function, *args: Any) -> Any:
        """``function(*args)`` in a worker thread (for what may block whatever the route)."""
        return await asyncio.get_running_loop().run_in_executor(self.executor, partial(function, *args))

    async def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """``env.<method>(*args, **kwargs)`` along the session's route."""
        try:
            return await self._call(method, *args, **kwargs)
        finally:
            self.last_active = time.monotonic()

    async def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        env = self.env
        assert env is not None
        if self.route == AWAIT and method != "sample_random_action":
            return await getattr(env, "a" + method)(*args, **kwargs)
        if self.route not in (INLINE, PROBE):
            return await self.in_worker(partial(getattr(env, method), *args, **kwargs))
        if self.route == INLINE:
            return getattr(env, method)(*args, **kwargs)
        started = Probe.start()
        try:
            return getattr(env, method)(*args, **kwargs)
        finally:
            settled = self.probe.record(started)
            if settled is not None:
                self.route = settled
                logger.info("%s: session %s's calls now run %s (they %s).", self.env_id, self.id,
                            "inline" if settled == INLINE else "in a worker thread",
                            "do not wait" if settled == INLINE else "mostly wait")

    def close(self) -> None:
        """Close the environment: inline ones here, the others in a worker thread, after the call
        in flight if there is one."""
        env, self.env = self.env, None
        if env is None:
            return
        if self.route in (INLINE, PROBE):  # their calls run on this thread: none is in flight
            close_quietly(env)
        elif self.busy:
            asyncio.get_running_loop().create_task(self._close_after_call(env))
        else:
            self.executor.submit(close_quietly, env)

    async def _close_after_call(self, env: Env) -> None:
        async with self.lock:
            try:
                self.executor.submit(close_quietly, env)
            except RuntimeError:  # the server is stopping and its threads with it
                close_quietly(env)


def make_servable(env_id: str, env_kwargs: dict[str, Any] | None = None) -> Env:
    """``make(env_id)``, checked to be servable: a wrong id or keyword fails here, and so does a
    multi-agent environment (serve one of its single-agent views)."""
    from gem_core.multiagent import MultiAgentEnv

    env = make_env(env_id, env_kwargs)
    if isinstance(env, MultiAgentEnv):
        env.close()
        raise GemError(f"{env_id} is a multi-agent environment: serve one of its single-agent views instead "
                       f"(the built-in games: {env_id}-vs-bot, {env_id}-selfplay).")
    return env


def make_env(env_id: str, env_kwargs: dict[str, Any] | None = None) -> Env:
    """``make(env_id, **env_kwargs)``: a session's environment."""
    from gem_core.registry import make

    return make(env_id, **(env_kwargs or {}))

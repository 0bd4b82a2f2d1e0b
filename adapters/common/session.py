"""One GEM episode driven by text, for training libraries that generate the model's turns.

The library's rollout code owns generation and tokens; a session owns the environment: it makes it
with the configured wrappers, resets it with the row's seed, steps it with each decoded answer, and
says when and why the episode stopped. Observations come as the agent should see them: with the
board or reminder an environment puts in ``info["suffix"]`` while the episode goes on (see
:func:`gem_core.wrappers.observation.as_seen`), since the library's conversation holds only what
the session returns. An environment is user code and may fail: a reset that
raises is retried with other seeds, and a step that raises ends the episode as truncated (stop
reason ``env_error``), logged with the environment id, seed and turn. The batch goes on; no
rollout worker crashes because one environment did.

With ``env_pool`` in the options, the environment runs on a slot of that Ray pool instead of in
this process (:class:`gem_core.vector.ray_slot.RaySlotEnv`): a rollout worker on a GPU node then
does no environment work, and an episode whose host is lost goes on, played again there from its
seed and actions.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any

from gem_adapters.common.options import EpisodeOptions
from gem_core import Env, make
from gem_core.episodes import last_turn_success
from gem_core.registry import apply_wrappers
from gem_core.images import images_of
from gem_core.wrappers.observation import as_seen

logger = logging.getLogger("gem_adapters")

#: Why an episode stopped: the environment ended it (terminated, truncated), the turn limit, or the
#: environment failed (env_error). Library adapters add their own (token budgets).
STOP_REASONS = ("terminated", "truncated", "max_turns", "env_error")
RESET_ATTEMPTS = 3
RESEED_STRIDE = 1_000_003  # seeds tried after a failed reset: seed + k * stride


@dataclass(frozen=True)
class StepOutcome:
    """What one answer brought: the next observation, the turn's reward, and whether the episode
    is over (``stop`` names why; None while it goes on)."""

    observation: str
    reward: float
    stop: str | None = None
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def done(self) -> bool:
        return self.stop is not None


async def call_env(env: Env, method: str, *args: Any) -> Any:
    """``env.reset``/``env.step``; environments that block on I/O run in a worker thread so the
    other episodes on this event loop keep going."""
    if env.blocking:
        return await asyncio.get_running_loop().run_in_executor(None, getattr(env, method), *args)
    return await getattr(env, "a" + method)(*args)


class EnvSession:
    """One episode of one environment; see the module documentation."""

    def __init__(self, env: Env, env_id: str, seed: int | None, options: EpisodeOptions):
        self.env, self.env_id, self.seed, self.options = env, env_id, seed, options
        self.rewards: list[float] = []
        self.last_info: dict[str, Any] = {}  # the info of the latest step
        self.stop: str | None = None
        self.error: str | None = None  # what failed, when stop is env_error
        #: The images of the latest observation (a visual task's ``info["images"]``, one per
        #: ``<image>`` placeholder in its text; see :mod:`gem_core.images`).
        self.images: list[Any] = []

    @classmethod
    def start(cls, env_id: str, seed: int | None, options: EpisodeOptions | None = None,
              **env_kwargs: Any) -> EnvSession:
        """Make ``env_id`` (``env_kwargs`` override its constructor defaults) with
        ``options.wrappers`` (on ``options.env_pool`` when set). An unknown id, keyword or
        wrapper is a configuration mistake and raises :class:`~gem_core.GemError` here, before
        any episode is played."""
        options = options or EpisodeOptions()
        if options.env_pool is not None:
            from gem_core.vector.ray_slot import RaySlotEnv

            pooled = RaySlotEnv(env_id, pool=options.env_pool, wrappers=list(options.wrappers) or None, **env_kwargs)
            return cls(pooled, env_id, seed, options)
        env = make(env_id, **env_kwargs)
        try:
            env = apply_wrappers(env, options.wrappers)
        except BaseException:
            env.close()
            raise
        return cls(env, env_id, seed, options)

    @property
    def turns(self) -> int:
        return len(self.rewards)

    async def reset(self) -> str:
        """Start an episode (with ``self.seed``) and return its first observation; a session may
        play several episodes one after the other. A reset that raises is retried with other
        seeds (logged); if every attempt fails, the observation says so and the first step ends
        the episode."""
        self.rewards, self.last_info, self.stop, self.error, self.images = [], {}, None, None, []
        for attempt in range(RESET_ATTEMPTS):
            seed = self.seed if self.seed is None or attempt == 0 else self.seed + attempt * RESEED_STRIDE
            try:
                observation, info = await call_env(self.env, "reset", seed)
                self.images = images_of(info)
                return as_seen(observation, info)
            except Exception as error:  # noqa: BLE001 - environment code may raise anything
                self.error = f"{type(error).__name__}: {error}"
                logger.error("Environment %s failed to reset with seed %s (attempt %d of %d): %s",
                             self.env_id, seed, attempt + 1, RESET_ATTEMPTS, self.error)
        self.stop = "env_error"
        return f"The environment failed to start ({self.error})."

    async def step(self, action: str) -> StepOutcome:
        """Step with the model's answer; never raises for the environment's failures."""
        if self.stop is not None:  # the reset failed, or the episode is over
            self.rewards.append(0.0)
            return StepOutcome("", 0.0, self.stop)
        try:
            observation, reward, terminated, truncated, info = await call_env(self.env, "step", action)
            reward = float(reward)
        except Exception as error:  # noqa: BLE001
            self.error = f"{type(error).__name__}: {error}"
            logger.error("Environment %s (seed %s) failed at turn %d; the episode ends truncated: %s",
                         self.env_id, self.seed, self.turns + 1, self.error)
            self.rewards.append(0.0)
            self.stop, self.images, self.last_info = "env_error", [], {}
            return StepOutcome(f"The environment failed ({self.error}).", 0.0, self.stop)
        self.rewards.append(reward)
        self.images, self.last_info = images_of(info), info
        if terminated or truncated:
            self.stop = "terminated" if terminated else "truncated"
        elif self.turns == self.options.max_turns:
            self.stop = "max_turns"
        return StepOutcome(as_seen(observation, info, done=self.stop is not None), reward, self.stop, info)

    @property
    def terminated(self) -> bool:
        """True only when the environment itself ended the episode (not a limit or a failure)."""
        return self.stop == "terminated"

    @property
    def success(self) -> bool:
        """Whether the episode so far was won, as `gem train` counts it
        (:func:`gem_core.episodes.last_turn_success` of the latest step)."""
        return bool(self.rewards) and last_turn_success(self.last_info, self.rewards[-1])

    def metrics(self) -> dict[str, float]:
        """The episode in numbers, as the adapters hand them to their library's logger: ``turns``,
        ``terminated`` (the environment ended it), ``success`` (won) and ``format_error`` (its last
        turn was one), each counted as `gem train` counts them."""
        return {"turns": float(self.turns), "terminated": float(self.terminated), "success": float(self.success),
                "format_error": float(bool(self.last_info.get("format_error")))}

    def close(self) -> None:
        try:
            self.env.close()
        except Exception:  # noqa: BLE001
            logger.exception("Environment %s failed to close", self.env_id)

    def __enter__(self) -> EnvSession:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

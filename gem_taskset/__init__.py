"""GEM environments as a verifiers taskset: the taskset id ``gem-taskset`` (verifiers 0.4's
``verifiers.v1``; verifiers imports this module by that id).

    vf-eval gem-taskset --env.taskset.env-id game:GuessTheNumber-v0-easy --env.taskset.seeds 50 ...
    vf-validate gem-taskset --env.taskset.env-id game:GuessTheNumber-v0-easy --runtime.type subprocess

Each task is one GEM id and seed (:class:`GemTaskData`): ``seeds`` tasks from ``first_seed``.
:class:`GemEnv` plays the whole multi-turn episode, as the user of the agent's conversation: the
reset observation is the first user message, the agent's reply each turn is the action, the next
observation the next user message, until the episode ends (terminated or truncated), the agent's
run ends (a turn or token limit: the episode is cut), or ``max_turns``. The trace's reward
``gem_return`` is the episode's return (the sum of its rewards); every turn's reward is kept, as
metrics ``reward_turn_1``, ``reward_turn_2``, ... and in ``trace.info["gem"]`` (``rewards``,
``terminated``, ``truncated``, ``turns``, ``env_id``, ``seed``). An environment that raises ends
the episode with the error (verifiers marks such an episode failed; it carries no reward).

:class:`GemChat` is the taskset's default harness: verifiers' own chat program (its ``null``
harness), run with this interpreter, whose environment already has the program's dependencies
(verifiers' own), instead of a ``uv`` environment built for it from the package index: so a local
run (``--env.player.runtime.type subprocess``) needs no network. In a container runtime it is the
``null`` harness unchanged.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import sys
import tempfile
from collections.abc import Iterator
from typing import Any

import verifiers.v1 as vf
from verifiers.v1.harnesses.null import NullHarness
from verifiers.v1.runtimes import SubprocessRuntime


class GemTaskData(vf.TaskData):
    env_id: str
    """The GEM environment id (e.g. ``game:GuessTheNumber-v0-easy``)."""
    seed: int
    """The episode's seed."""
    max_turns: int | None = None
    """Turns after which the episode is cut (None: the environment's own limit)."""


class GemTasksetConfig(vf.TasksetConfig):
    env_id: str = "game:GuessTheNumber-v0"
    """The GEM environment id every task plays."""
    seeds: int = 100
    """How many tasks: seeds ``first_seed`` to ``first_seed + seeds - 1``."""
    first_seed: int = 0
    """The first task's seed."""
    max_turns: int | None = None
    """Cut each episode after this many turns (None: the environment's own limit)."""


class GemTask(vf.Task[GemTaskData]):
    """One GEM episode; its rewards are recorded by :class:`GemEnv` as it plays."""


class GemTaskset(vf.Taskset[GemTask, GemTasksetConfig]):
    """GEM's environment ``env_id``, one task per seed."""

    def load(self) -> Iterator[GemTask]:
        from gem_core.registry import spec

        config = self.config
        spec(config.env_id)  # an unknown id fails here, naming the closest ones
        if config.seeds < 1 or config.first_seed < 0:
            raise ValueError(f"seeds must be at least 1 and first_seed 0 or more, got {config.seeds} and "
                             f"{config.first_seed}")
        for seed in range(config.first_seed, config.first_seed + config.seeds):
            yield GemTask(GemTaskData(name=f"{config.env_id}#{seed}", prompt=None, env_id=config.env_id, seed=seed,
                                      max_turns=config.max_turns), config.task)


class GemEnvConfig(vf.EnvConfig):
    player: vf.AgentConfig = vf.AgentConfig()


class GemEnv(vf.Env[GemEnvConfig]):
    """Plays a GEM episode per task (see the module documentation)."""

    async def run(self, task: GemTask, agents: Any) -> None:
        import gem_core

        data = task.data
        env = await asyncio.to_thread(gem_core.make, data.env_id)
        rewards: list[float] = []
        terminated = truncated = False
        try:
            observation, _ = await asyncio.to_thread(env.reset, data.seed)
            async with agents.player.interaction(task) as interaction:
                segment = await interaction.turn(observation)
                while not segment.terminated:
                    observation, reward, terminated, truncated, _ = await asyncio.to_thread(env.step,
                                                                                            segment.last_reply)
                    rewards.append(float(reward))
                    if data.max_turns is not None and len(rewards) >= data.max_turns and not terminated:
                        truncated = True
                    if terminated or truncated:
                        break
                    segment = await interaction.turn(observation)
        finally:
            await asyncio.to_thread(env.close)
        trace = interaction.trace
        for turn, reward in enumerate(rewards, 1):
            trace.record_metric(f"reward_turn_{turn}", reward)
        trace.info["gem"] = {"env_id": data.env_id, "seed": data.seed, "rewards": rewards, "turns": len(rewards),
                             "terminated": terminated, "truncated": truncated or not terminated}
        trace.record_reward("gem_return", sum(rewards))


class _LocalScripts:
    """A subprocess runtime whose PEP 723 scripts run with this interpreter (see :class:`GemChat`)."""

    def __init__(self, runtime: Any):
        self._runtime = runtime

    def __getattr__(self, name: str) -> Any:
        return getattr(self._runtime, name)

    async def prepare_uv_script(self, script: str | bytes, env: dict[str, str] | None = None, *,
                                activate: bool = True) -> list[str]:
        data = script.encode() if isinstance(script, str) else script
        path = os.path.join(tempfile.gettempdir(), f"gem-taskset-{hashlib.sha256(data).hexdigest()[:16]}.py")
        if not os.path.exists(path):
            await self._runtime.write(path, data)
        return [sys.executable, path]


class GemChat(NullHarness):
    """verifiers' chat program (the ``null`` harness), run locally with this interpreter."""

    async def setup(self, runtime: Any) -> None:
        if not isinstance(runtime, SubprocessRuntime):
            await super().setup(runtime)

    async def launch(self, ctx: Any, trace: Any, runtime: Any, *args: Any, **kwargs: Any) -> Any:
        local = _LocalScripts(runtime) if isinstance(runtime, SubprocessRuntime) else runtime
        return await super().launch(ctx, trace, local, *args, **kwargs)


__all__ = ["GemTaskset", "GemEnv", "GemChat"]

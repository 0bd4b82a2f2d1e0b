"""``gem train --agent``: training on episodes that an agent program plays through GEM's gateway.

The program owns its loop and its prompts (the OpenAI Agents SDK, a plain ``openai`` loop, a
command-line agent): GEM serves it, in a thread of the trainer, the gateway in front of the model
being trained (:class:`~gem_serve.gateway.backends.LocalBackend` over the trainer's own policy,
sampling at the run's temperature, ``top_p`` and ``max_new_tokens``) and each environment
through ``gem serve``'s sessions and MCP endpoint (:mod:`gem_serve.gateway.runs`). Each step plays
``episodes_per_step`` episodes at once, one program run per episode, with the step's seeds.

Training reads the tokens the gateway recorded (:mod:`gem_core.sampled`), not a re-tokenisation:
each segment of an episode is one sample whose loss reads exactly the sampled ids, each with its
turn's advantage. A failed episode (the program crashed or timed out, the environment or the model
failed) trains on nothing.

With ``--agent``, the conversation is the program's: the ``concat_chat`` wrapper (which renders
GEM's own loop's prompts, and is the default chain) is left out of the environment's wrappers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from gem_core.episodes import Episode
from gem_core.errors import GemError
from gem_core.sampled import segments
from gem_trainer.training.loss import Sample

#: The wrapper that renders GEM's own loop's prompts: not for a program's conversation.
CHAT_WRAPPER = "concat_chat"


def environment_wrappers(chain: str) -> str:
    """``chain`` without ``concat_chat``."""
    return "+".join(part for part in chain.split("+") if part.strip() and part.strip() != CHAT_WRAPPER)


class AgentRollout:
    """The gateway and the environments of a run, served while it lasts, and the program that
    plays them. ``backend`` replaces the local model as what the gateway samples from (a test's
    scripted backend); ``program`` replaces ``config.agent`` (a Python callable)."""

    def __init__(self, config: Any, policy: Any, tokenizer: Any, *, backend: Any = None, program: Any = None,
                 gateway_options: dict[str, Any] | None = None):
        from gem_core.registry import apply_wrappers, make
        from gem_serve.gateway.backends import LocalBackend
        from gem_serve.gateway.runs import Harness, agent_program, application
        from gem_serve.gateway.server import Gateway
        from gem_serve.gateway.serving import served
        from gem_serve.server import EnvServer

        self.config = config
        self.program = agent_program(program if program is not None else config.agent)
        wrappers = environment_wrappers(config.wrappers)

        def factory(env_id: str):
            def make_env():
                env = make(env_id)
                return apply_wrappers(env, [w for w in wrappers.split("+") if w]) if wrappers else env
            return make_env

        self.quarantined: dict[int, Any] = {}  # what a vector environment reports; programs have no slots
        self.gateway = Gateway(backend if backend is not None else LocalBackend(policy), tokenizer,
                               model=str(config.model), max_tokens=config.max_new_tokens,
                               sampling={"temperature": config.temperature, "top_p": config.top_p},
                               **(gateway_options or {}))
        sessions = max(2 * config.episodes_per_step, 8)
        self.servers = {env_id: EnvServer(factory(env_id), env_id, max_sessions=sessions)
                        for env_id in dict.fromkeys(config.envs)}
        self._serving = served(application(self.gateway, *self.servers.values()))
        self.url, self.loop = self._serving.__enter__()
        self.harnesses = {env_id: Harness(self.gateway, server, self.url, timeout=config.agent_timeout,
                                          env_path=f"/env/{k}")
                          for k, (env_id, server) in enumerate(self.servers.items())}

    def play(self, env_ids: Sequence[str], seeds: Sequence[int]) -> list[Episode]:
        """One episode per (environment id, seed), all at once; in that order."""
        async def all_of_them():
            return await asyncio.gather(*(self.harnesses[env_id].play(self.program, seed)
                                          for env_id, seed in zip(env_ids, seeds)))

        return list(asyncio.run_coroutine_threadsafe(all_of_them(), self.loop).result())

    def close(self) -> None:
        self._serving.__exit__(None, None, None)


def training_samples(episodes: Sequence[Episode], advantages: Sequence[Sequence[float]],
                     ) -> tuple[list[Sample], int, int]:
    """One sample per segment of each valid episode, its sampled ids trained with their turn's
    advantage; also returns the turns trained and left out (those of failed episodes, and calls
    that sampled nothing)."""
    samples: list[Sample] = []
    trained = skipped = 0
    for episode, episode_advantages in zip(episodes, advantages):
        if not episode.valid:
            skipped += len(episode.turns)
            continue
        found = segments(episode.turns)
        covered = sum(len(segment.turns) for segment in found)
        skipped += len(episode.turns) - covered
        trained += covered
        for segment in found:
            start = segment.prompt_length
            per_token = [0.0] * len(segment.ids)
            for turn, (first, end) in zip(segment.turns, segment.spans()):
                per_token[first:end] = [float(episode_advantages[turn])] * (end - first)
            if len(segment.spans()) != len(segment.turns):
                raise GemError(f"Episode {episode.env_id} seed {episode.seed}: a segment's sampled ids do not split "
                               "into its turns (two turns' answers touch).")
            samples.append(Sample(segment.ids[:start], segment.ids[start:], segment.mask[start:], per_token[start:]))
    return samples, trained, skipped

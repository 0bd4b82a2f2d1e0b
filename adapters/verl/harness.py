"""The ``gem_agent`` agent loop: an agent program GEM does not run plays each sample's GEM
environment through GEM's gateway, in front of verl's own rollout servers.

Each dataset row names an environment and a seed (``extra_info.env_id``, ``extra_info.seed``, as
for the ``gem`` loop; ``gem verl config --agent PROGRAM`` writes such rows, their ``agent_name``
``gem_agent``). For every episode the loop opens a gateway session and a ``gem serve`` session
(reset with the row's seed) and runs the program with its task
(:class:`gem_serve.gateway.runs.Harness`): a Python callable (``module:function``, importable in
verl's Ray workers) or a command, given the gateway's URL and key, as ``gem train --agent`` does.
The gateway samples through verl's server manager (:class:`ServerManagerBackend`: token ids in,
token ids and log-probabilities out), at the rollout's settings (training's or validation's),
each answer capped at ``gem.max_tokens_per_turn`` and ``rollout.response_length``; it records the
prompt and sampled ids of every call (:mod:`gem_core.sampled`).

Config section ``gem_agent``: ``program`` (required) and ``timeout`` (seconds a run may take, 600
by default; ``gem.episode_deadline`` bounds it too). The ``gem`` section's ``wrappers`` wrap the
environment; ``env_pool`` is refused (the environments are served in the rollout worker).

**The output.** verl 0.9 takes one output per row, so an episode gives the output of one segment
(:func:`gem_core.sampled.segments`): the only one, or, where the program rewrote its history and
opened new ones, the last (which holds the episode's later turns, with the earlier answers as
context), the turns of the others left untrained (``extra_fields["gem_segments"]`` counts the
segments; the loop warns once). The segment's ids are split at its first sampled id, or at
``rollout.prompt_length`` when its prompt is longer (the rest of the prompt then leads the
response, masked); ``response_mask`` is 1 exactly on sampled ids, ``response_logprobs`` are the
server's, and ``rm_scores`` hold each turn's reward (the rewards of the steps its answer led to)
on its last sampled id. A segment longer than ``rollout.response_length`` keeps the turns that
end within it (the episode is cut there, as the ``gem`` loop cuts it). Everything else is as for
the ``gem`` loop (:mod:`gem_adapters.verl.rollout`): ``gem_stop``, ``turn_scores``,
``reward_extra_info``.

**A failed episode** (the program raised, exited non-zero or ran past its timeout; the
environment or the server failed; its first answer ends past ``prompt_length + response_length``)
keeps no token of its own: its output is a one-line prompt saying why and one masked response
token, with no reward and the failure in ``extra_fields["gem_failure"]``, which verl and GEM's
estimators leave out as they leave out the ``gem`` loop's failed episodes.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import math
import threading
from typing import Any

from verl.experimental.agent_loop.agent_loop import AgentLoopBase, register

from gem_adapters.common.options import AgentOptions, EpisodeOptions
from gem_adapters.common.session import failure_metrics
from gem_adapters.verl import HARNESS_LOOP_NAME
from gem_adapters.verl.rollout import GemAgentLoopOutput, episode_source
from gem_core.episodes import Episode, episode_success
from gem_core.errors import GemError
from gem_core.sampled import Segment, segments
from gem_serve.gateway.backends import BackendError, Sampled, Sampling

logger = logging.getLogger("gem_adapters.verl")

#: The server's fields verl reads back from every row (the weight versions its answers came from).
VERSION_FIELDS = ("global_steps", "min_global_steps", "max_global_steps")


def weight_versions(episode: Episode, latest: dict[str, Any]) -> dict[str, Any]:
    """``min_global_steps`` and ``max_global_steps`` of the episode's calls, as verl's server
    manager reports them for each (``latest``, the backend's latest, for an episode without one)."""
    found = [turn.info["backend"] for turn in episode.turns if turn.info.get("backend")]
    lows = [f["min_global_steps"] for f in found if f.get("min_global_steps") is not None]
    highs = [f["max_global_steps"] for f in found if f.get("max_global_steps") is not None]
    if not lows and not highs:
        return {key: latest[key] for key in ("min_global_steps", "max_global_steps") if key in latest}
    return {"min_global_steps": min(lows or highs), "max_global_steps": max(highs or lows)}


class ServerManagerBackend:
    """A gateway backend over verl's server manager (``generate(request_id, prompt_ids=...,
    sampling_params=...)``), called on ``loop``, the agent-loop worker's event loop, wherever the
    gateway runs. ``stop_ids``: the tokenizer's end-of-turn ids (an answer that ends with one
    stopped, else one as long as it was allowed was cut)."""

    def __init__(self, server_manager: Any, loop: asyncio.AbstractEventLoop, stop_ids: set[int]):
        self.server_manager, self.loop, self.stop_ids = server_manager, loop, stop_ids
        self.latest: dict[str, Any] = {}  # the weight versions of the latest answer (a call's Sampled.fields)

    async def check(self) -> None:
        return None  # verl's own servers take and return token ids

    async def generate(self, prompt_ids: list[int], sampling: Sampling) -> Sampled:
        from uuid import uuid4

        params = {"temperature": sampling.temperature, "top_p": sampling.top_p, "max_tokens": sampling.max_tokens,
                  **sampling.extra, **({"seed": sampling.seed} if sampling.seed is not None else {})}
        call = self.server_manager.generate(uuid4().hex, prompt_ids=list(prompt_ids), sampling_params=params)
        try:
            output = await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(call, self.loop))
        except Exception as e:  # noqa: BLE001 - whatever verl's servers raised, the harness hears HTTP 502
            raise BackendError(f"verl's rollout server failed: {type(e).__name__}: {e}") from None
        if getattr(output, "stop_reason", None) == "aborted":
            raise BackendError("verl's rollout server aborted the request.")
        ids = list(output.token_ids)
        logprobs = None if output.log_probs is None else [float(x) for x in output.log_probs]
        if logprobs is not None and len(logprobs) != len(ids):
            raise BackendError(f"verl's rollout server returned {len(ids)} token ids but {len(logprobs)} "
                               "log-probabilities.")
        stopped = bool(ids) and ids[-1] in self.stop_ids
        fields = {key: value for key, value in (output.extra_fields or {}).items() if key in VERSION_FIELDS}
        self.latest = fields or self.latest
        return Sampled(ids, logprobs, "stop" if stopped or len(ids) < sampling.max_tokens else "length", fields)


class HarnessService:
    """The gateway and one environment's ``gem serve`` sessions, served in a thread of the
    agent-loop worker for as long as it lives, and the harness that plays them."""

    def __init__(self, env_id: str, options: EpisodeOptions, agent: AgentOptions, backend: ServerManagerBackend,
                 tokenizer: Any, *, model: str, max_tokens: int, template_kwargs: dict[str, Any] | None):
        from gem_core.registry import apply_wrappers, make
        from gem_serve.gateway.runs import Harness, agent_program, application
        from gem_serve.gateway.server import Gateway
        from gem_serve.gateway.serving import served
        from gem_serve.server import EnvServer

        wrappers = list(options.wrappers)

        def make_env():
            env = make(env_id)
            return apply_wrappers(env, wrappers) if wrappers else env

        self.program = agent_program(agent.program)
        self.gateway = Gateway(backend, tokenizer, model=model, max_tokens=max_tokens, template_kwargs=template_kwargs)
        self.server = EnvServer(make_env, env_id, max_sessions=1024)
        self._serving = served(application(self.gateway, self.server))
        self.url, self.loop = self._serving.__enter__()
        timeout = min(agent.timeout, options.episode_deadline or math.inf)
        self.harness = Harness(self.gateway, self.server, self.url, timeout=timeout, env_path="/env/0")

    async def play(self, seed: int | None, sampling: dict[str, Any], max_tokens: int) -> Episode:
        """One episode from ``seed``, played on the service's loop; awaited from any other."""
        play = self.harness.play(self.program, seed, sampling=sampling, max_tokens=max_tokens)
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(play, self.loop))


_services: dict[str, HarnessService] = {}
_services_lock = threading.Lock()
_warned_segments = False


@register(HARNESS_LOOP_NAME)
class GemHarnessLoop(AgentLoopBase):
    """Plays one GEM environment per sample with an external agent program; see the module
    documentation."""

    def __init__(self, *args: Any, tools: Any = None, **kwargs: Any):
        super().__init__(*args, **kwargs)  # ``tools``: verl's tool list; the program brings its own
        if not self.config.trainer.get("use_v1", True):
            raise GemError("The gem_agent loop needs verl's v1 trainer (trainer.use_v1=true): the legacy trainer "
                           "keeps only one reward per sample, which would lose the per-turn rewards.")
        self.options = EpisodeOptions.from_config(self.config.get("gem"), where="the `gem` section of the verl config")
        if self.options.env_pool is not None:
            raise GemError("gem.env_pool is not for the gem_agent loop: its environments are served to the agent "
                           "program from the rollout worker. Remove gem.env_pool.")
        self.agent = AgentOptions.from_config(self.config.get("gem_agent"))
        self.prompt_length = int(self.rollout_config.prompt_length)
        self.response_length = int(self.rollout_config.response_length)
        self.max_tokens = min(self.response_length, self.options.max_tokens_per_turn or self.response_length)

    def service(self, env_id: str) -> HarnessService:
        """This process's service for ``env_id`` (started on first use)."""
        with _services_lock:
            if env_id not in _services:
                from gem_adapters.common.chat import ChatFormat

                chat = ChatFormat(self.tokenizer, template_kwargs=self.apply_chat_template_kwargs)
                stop_ids = {i for i in (chat.end_of_turn_id, self.tokenizer.eos_token_id) if i is not None}
                backend = ServerManagerBackend(self.server_manager, self.loop, stop_ids)
                _services[env_id] = HarnessService(
                    env_id, self.options, self.agent, backend, self.tokenizer,
                    model=str(self.config.actor_rollout_ref.model.path), max_tokens=self.max_tokens,
                    template_kwargs=dict(self.apply_chat_template_kwargs or {}))
            return _services[env_id]

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> GemAgentLoopOutput:
        env_id, seed = episode_source(kwargs)
        sampling = {key: value for key, value in sampling_params.items() if key != "max_tokens"}
        service = await asyncio.get_running_loop().run_in_executor(None, self.service, env_id)
        self.backend: ServerManagerBackend = service.gateway.backend
        episode = await service.play(seed, sampling, self.max_tokens)
        logprobs = bool(sampling_params.get("logprobs"))
        if episode.valid:
            found = segments(episode.turns)
            if found and logprobs and found[-1].logprobs is None:
                raise GemError("verl's rollout server returned no log-probabilities, though the rollout asked "
                               "for them.")
            if not found:
                episode.fail("harness", "the agent program's calls sampled no token", "agent")
            else:
                fitted = self.fit(found[-1])
                if fitted is None:
                    episode.fail("harness", f"its first answer ends past rollout.prompt_length + response_length "
                                            f"({self.prompt_length} + {self.response_length} tokens)", "agent")
                else:
                    return self.output(episode, found, fitted, logprobs)
        logger.warning("GEM episode %s seed %s failed (%s, in %s): %s", episode.env_id, episode.seed,
                       episode.failure.kind, episode.failure.phase, episode.failure.error)
        return await self.failed_output(episode, logprobs)

    def fit(self, segment: Segment) -> tuple[int, int, int] | None:
        """Where ``segment`` splits into verl's prompt and response and where its response ends
        (whole turns within ``response_length``), and how many of its turns are kept; None when
        no turn fits."""
        split = min(segment.prompt_length, self.prompt_length)
        ends = [end for _, end in segment.spans() if end - split <= self.response_length]
        if not ends:
            return None
        return split, ends[-1], len(ends)

    def output(self, episode: Episode, found: list[Segment], fitted: tuple[int, int, int],
               logprobs: bool) -> GemAgentLoopOutput:
        global _warned_segments

        segment = found[-1]
        split, end, kept = fitted
        if len(segment.spans()) != len(segment.turns):
            raise GemError(f"Episode {episode.env_id} seed {episode.seed}: a segment's sampled ids do not split into "
                           "its turns (two turns' answers touch).")
        if len(found) > 1 and not _warned_segments:
            _warned_segments = True
            logger.warning("An agent program rewrote its history (%s): verl takes one output per row, so only the "
                           "last segment of such an episode is trained.", segment.reason)
        turns = segment.turns[:kept]
        rewards = [float(episode.turns[k].reward) for k in turns]
        mask = segment.mask[split:end]
        logger.info("GEM agent episode %s seed %s: %d calls, %d trained; %d of %d response ids sampled",
                    episode.env_id, episode.seed, len(episode.turns), len(turns), sum(mask), len(mask))
        stop = episode.outcome if kept == len(segment.turns) else "response_length"
        extra = {**weight_versions(episode, self.backend.latest), "turn_scores": rewards, "gem_stop": stop,
                 "gem_failure": None, "gem_segments": len(found), "reward_extra_info": self.metrics(episode)}
        return GemAgentLoopOutput(
            prompt_ids=segment.ids[:split], response_ids=segment.ids[split:end], response_mask=mask,
            response_logprobs=segment.logprobs[split:end] if logprobs else None,
            reward_score=math.fsum(rewards), turn_rewards=rewards, num_turns=1 + 2 * len(turns),
            metrics={}, extra_fields=extra)

    async def failed_output(self, episode: Episode, logprobs: bool) -> GemAgentLoopOutput:
        """A one-line prompt saying why, one masked response token, no reward."""
        failure = episode.failure
        prompt = await self.ct_build_initial_tokens(
            [{"role": "user", "content": f"The episode failed ({failure.kind}: {failure.error[:200]})."}])
        extra = {**weight_versions(episode, self.backend.latest), "turn_scores": [], "gem_stop": "failed",
                 "gem_failure": dataclasses.asdict(failure), "gem_segments": 0, "reward_extra_info": self.metrics(episode)}
        return GemAgentLoopOutput(prompt_ids=list(prompt)[-self.prompt_length:],
                                  response_ids=[self.tokenizer.eos_token_id], response_mask=[0],
                                  response_logprobs=[0.0] if logprobs else None, reward_score=0.0, turn_rewards=[], num_turns=1,
                                  metrics={}, extra_fields=extra)

    @staticmethod
    def metrics(episode: Episode) -> dict[str, float]:
        """As :meth:`gem_adapters.common.session.EnvSession.metrics` counts them."""
        last = episode.turns[-1].info if episode.turns else {}
        return {"turns": float(len(episode.turns)),
                "terminated": float(bool(episode.turns) and episode.turns[-1].terminated),
                "success": float(episode.valid and bool(episode.turns) and episode_success(episode)),
                "format_error": float(bool(last.get("format_error"))), **failure_metrics(episode.failure)}


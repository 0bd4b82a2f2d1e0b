"""GEM episodes as TRL's ``rollout_func``: one episode per prompt, played turn by turn through
TRL's own generation.

``GRPOTrainer`` calls ``rollout_func(prompts, trainer)`` with this process's prompts, each already
repeated ``num_generations`` times. Prompts do not say which environment a row is, so
:class:`~gem_adapters.trl.trainer.GemGRPOTrainer` hands over each row's (environment id, seed) as
``trainer.gem_starts`` just before. For each row an
:class:`~gem_adapters.common.session.EnvSession` makes the environment with the configured wrappers,
resets it with the row's seed, and the episode goes on turn by turn:

* every running episode's tokens so far go through ``trainer._generate_single_turn`` in one batch:
  TRL's own generation, with transformers' ``generate`` (on CPU too), or vLLM when TRL is
  configured for it, under TRL's ``generation_config`` (``max_completion_length`` caps one turn);
* the answer's text, without special tokens, steps the environment; the observation follows the
  answer's token ids as a user message, rendered by the model's chat template (:class:`ChatFormat`),
  after the end-of-turn token when the answer was cut before it;
* the episode ends when the environment ends it, at ``max_turns``, when it fails (the environment
  broke or ``episode_deadline`` passed; the batch goes on), or when the next turn would not fit
  ``episode_tokens`` (every model and environment token after the prompt).

TRL gets ``prompt_ids`` (the first observation through the chat template), ``completion_ids``
(every turn's answer and the environment's text between), ``env_mask`` (1 on the model's tokens;
TRL multiplies its loss mask by it), ``logprobs`` (vLLM's, 0 on environment tokens; None under
transformers), and per episode ``gem_turn_rewards``, ``gem_turn_spans`` (each turn's [start, end)
in the completion), ``gem_stop``, ``gem_success`` (won, as ``gem train`` counts it),
``gem_format_error`` (the last turn was one) and ``gem_failure`` (the failure's kind, error, phase
and turn, or None), which reach the reward functions, :mod:`~gem_adapters.trl.advantages` and the
trainer's log. A failed episode's ``env_mask`` is 0 on every token, so TRL's loss mask trains none
of it. TRL generates every running episode's turn in one batch and GEM steps them in between, so a
deadline that passes while TRL generates ends the episode at its next step.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from gem_adapters.common.chat import ChatFormat
from gem_adapters.common.options import EpisodeOptions
from gem_adapters.common.session import FAILED, EnvSession
from gem_adapters.common.session import STOP_REASONS as SESSION_STOPS
from gem_core.errors import GemError

#: Why an episode stopped (``gem_stop``): the session's reasons, or the episode's token budget.
STOP_REASONS = (*SESSION_STOPS, "episode_tokens")
Start = tuple[str, "int | None"]


@dataclass
class PlayedEpisode:
    """One episode's tokens as TRL takes them, and its turns."""

    session: EnvSession
    prompt_ids: list[int]
    completion_ids: list[int] = field(default_factory=list)
    env_mask: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    turn_spans: list[tuple[int, int]] = field(default_factory=list)
    stop: str | None = None

    @property
    def context(self) -> list[int]:
        return self.prompt_ids + self.completion_ids

    def add(self, ids: Sequence[int], *, model: bool, logprobs: Sequence[float] | None = None) -> None:
        start = len(self.completion_ids)
        self.completion_ids.extend(ids)
        self.env_mask.extend([int(model)] * len(ids))
        self.logprobs.extend(logprobs if logprobs is not None else [0.0] * len(ids))
        if model:
            self.turn_spans.append((start, len(self.completion_ids)))


class EpisodeRollout:
    """TRL's ``rollout_func`` for GEM environments; see the module documentation.

    ``options`` are the episode options (wrappers, ``max_turns``); ``episode_tokens`` bounds the
    tokens after the prompt (None: no bound but the turn limit)."""

    def __init__(self, options: EpisodeOptions | None = None, *, episode_tokens: int | None = None):
        self.options = options or EpisodeOptions()
        if episode_tokens is not None and episode_tokens < 1:
            raise GemError(f"episode_tokens must be a positive number of tokens or None, not {episode_tokens!r}.")
        self.episode_tokens = episode_tokens
        self._chat: tuple[Any, ChatFormat] | None = None

    def __call__(self, prompts: Sequence[Any], trainer: Any) -> dict[str, Any]:
        starts = getattr(trainer, "gem_starts", None)
        if starts is None or len(starts) != len(prompts):
            raise GemError("The GEM rollout needs each prompt's environment id and seed: train with "
                           "gem_adapters.trl.GemGRPOTrainer (it passes them), on rows written by `gem trl config`.")
        chat = self.chat_format(trainer._tokenizer)
        episodes = asyncio.run(self._start(starts, chat))
        try:
            self._play(episodes, trainer, chat)
        finally:
            for episode in episodes:
                episode.session.close()
        failures = [e.session.failure for e in episodes]
        return {
            "prompt_ids": [e.prompt_ids for e in episodes],
            "completion_ids": [e.completion_ids for e in episodes],
            "logprobs": [e.logprobs for e in episodes] if trainer.use_vllm else None,
            "env_mask": [e.env_mask if failure is None else [0] * len(e.env_mask)
                         for e, failure in zip(episodes, failures)],
            "gem_turn_rewards": [list(e.session.rewards) for e in episodes],
            "gem_turn_spans": [list(e.turn_spans) for e in episodes],
            "gem_stop": [e.stop for e in episodes],
            "gem_success": [e.session.success for e in episodes],
            "gem_format_error": [bool(e.session.metrics()["format_error"]) for e in episodes],
            "gem_failure": [None if failure is None else dataclasses.asdict(failure) for failure in failures],
        }

    def chat_format(self, tokenizer: Any) -> ChatFormat:
        if self._chat is None or self._chat[0] is not tokenizer:
            self._chat = (tokenizer, ChatFormat(tokenizer))
            self._chat[1].warn_if_rewriting("TRL")
        return self._chat[1]

    async def _start(self, starts: Sequence[Start], chat: ChatFormat) -> list[PlayedEpisode]:
        sessions: list[EnvSession] = []
        try:
            for env_id, seed in starts:
                sessions.append(EnvSession.start(env_id, None if seed is None else int(seed), self.options))
            observations = await asyncio.gather(*(session.reset() for session in sessions))
        except BaseException:
            for session in sessions:
                session.close()
            raise
        episodes = [PlayedEpisode(session, chat.encode(chat.first(observation)))
                    for session, observation in zip(sessions, observations)]
        for episode in episodes:
            if episode.session.failure is not None:  # it never started: nothing to generate for it
                episode.add([chat.tokenizer.eos_token_id], model=False)  # TRL needs a completion token
                episode.stop = FAILED
        return episodes

    def _play(self, episodes: list[PlayedEpisode], trainer: Any, chat: ChatFormat) -> None:
        while True:
            running = [e for e in episodes if e.stop is None]
            if not others_running(trainer, len(running)):
                return
            # every process generates as often as the busiest one: TRL's generation may be collective
            contexts = [e.context for e in running] or [episodes[0].context]
            answers, logprobs = trainer._generate_single_turn(contexts, None, {}, 1)
            if not running:
                continue
            for index, (episode, answer) in enumerate(zip(running, answers)):
                if not answer:
                    raise GemError(f"TRL's generation returned no tokens for a turn of {episode.session.env_id}; "
                                   "check max_completion_length.")
                episode.add(answer, model=True, logprobs=None if logprobs is None else logprobs[index])
            outcomes = asyncio.run(_step_all([(e.session, chat.answer_content(a)) for e, a in zip(running, answers)]))
            for episode, answer, outcome in zip(running, answers, outcomes):
                if outcome.done:
                    episode.stop = outcome.stop
                    continue
                between = chat.encode(chat.after_answer(answer, outcome.observation))
                if self.episode_tokens is not None and len(episode.completion_ids) + len(between) >= self.episode_tokens:
                    episode.stop = "episode_tokens"
                    continue
                episode.add(between, model=False)


async def _step_all(steps: Sequence[tuple[EnvSession, str]]) -> list[Any]:
    return await asyncio.gather(*(session.step(action) for session, action in steps))


def others_running(trainer: Any, local_running: int) -> bool:
    """Whether any process still has a running episode (this one's count when alone)."""
    accelerator = trainer.accelerator
    if accelerator.num_processes == 1:
        return local_running > 0
    import torch

    counts = accelerator.gather(torch.tensor([local_running], device=accelerator.device))
    return bool(counts.sum().item() > 0)


def episode_starts(rows: Sequence[dict[str, Any]]) -> list[Start]:
    """The (environment id, seed) of each dataset row (``env_id`` and ``seed`` columns, as
    ``gem trl config`` writes them)."""
    starts = []
    for row in rows:
        env_id = row.get("env_id") if isinstance(row, dict) else None
        if not isinstance(env_id, str) or not env_id:
            raise GemError("A TRL dataset row for GEM needs 'env_id' and 'seed' columns; write the dataset "
                           f"with `gem trl config` (got the columns {sorted(row) if isinstance(row, dict) else row!r}).")
        seed = row.get("seed")
        starts.append((env_id, None if seed is None else int(seed)))
    return starts

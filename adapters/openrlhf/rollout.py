"""The GEM agent for OpenRLHF: one GEM environment per prompt row, played through OpenRLHF's own
``MultiTurnAgentExecutor``.

``gem openrlhf config`` writes an agent file for ``--train.agent_func_path`` that defines
``AgentExecutor = agent_executor({...episode options...})``. OpenRLHF builds one ``AgentExecutor()``
in each vLLM engine actor and calls ``execute`` once per sample. For each sample:

* the row's label (JSON: ``env_id``, ``seed``) names the environment and its seed; an
  :class:`~gem_adapters.common.session.EnvSession` makes it with the configured wrappers, honours
  ``max_turns`` and ``episode_deadline``, and fails the episode (stop ``failed``) if the
  environment breaks or the deadline passes;
* the first observation becomes the prompt through the tokenizer's chat template; each answer is
  decoded without special tokens and stepped, and the next observation follows as a user message
  rendered by the same template, so the model reads a plain chat; the answer's token ids stay as
  sampled, and an answer cut before its end-of-turn token gets that token (as environment text)
  before the observation (:class:`~gem_adapters.common.chat.ChatFormat`);
* each generation is capped at ``max_tokens_per_turn``; OpenRLHF's ``--data.max_len`` bounds the
  whole episode (stop ``max_length`` when it runs out first).

**How per-turn rewards reach training.** OpenRLHF keeps one summed reward per sample, and
``extra_logs`` keep only the first element of a tensor. So the executor returns the played
episode in the sample's *label*: a JSON object with ``env_id``, ``seed``, ``turn_rewards`` (one per
model turn) and ``stop``. OpenRLHF carries labels as a per-sample Python list through every
batching step (concatenation into micro-batches, splitting, re-batching), so each row's rewards
stay with its row until GEM's estimator reads them inside the trainer
(:mod:`gem_adapters.openrlhf.advantages`). The turns need no carrying: they are the runs of 1s in
the experience's ``action_mask``. The summed reward still fills OpenRLHF's ``reward`` and
``scores`` (logging, dynamic filtering).

**A failed episode** keeps the tokens it played, and its label holds its ``failure`` (kind,
error, phase, turn), no turn reward and stop ``failed``; its reward is 0. GEM's estimator inside
the trainer leaves it out of its statistics and sets its row of ``action_mask`` to 0, which is the
loss mask of OpenRLHF's policy loss (and OpenRLHF counts a sample without an action token out of
its loss normalisation), so none of its tokens trains. The episode deadline covers OpenRLHF's whole
loop for the sample (the environment's calls and the engine's generations, cancelled at the
deadline); OpenRLHF has no deadline of its own over a batch's samples.

**What OpenRLHF logs of GEM.** ``extra_logs`` carry the episode's numbers
(:meth:`~gem_adapters.common.session.EnvSession.metrics` as ``gem_turns``, ``gem_terminated``,
``gem_success``, ``gem_format_error``, ``gem_failed`` and ``gem_failed_<kind>``); OpenRLHF keeps
them in each experience's ``info`` and logs their mean beside its own metrics (console, Weights &
Biases, TensorBoard): the means of ``gem_failed*`` are the shares of failed episodes.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

import torch
from openrlhf.utils.agent import AgentInstanceBase, MultiTurnAgentExecutor

from gem_adapters.common.chat import ChatFormat
from gem_adapters.common.options import EpisodeOptions
from gem_adapters.common.session import STOP_REASONS as SESSION_STOP_REASONS
from gem_adapters.common.session import EnvSession
from gem_adapters.openrlhf.labels import decode_label, encode_label
from gem_core.errors import GemError

#: Why an episode stopped, kept in the label's ``stop``: EnvSession's reasons, or OpenRLHF's
#: ``--data.max_len`` running out.
STOP_REASONS = (*SESSION_STOP_REASONS, "max_length")


class TurnLimitedEngine:
    """OpenRLHF's engine for one episode: caps each generation at ``max_tokens_per_turn``, keeps
    the last answer's token ids, and records the prompt of every generation and the token span of
    its answer (OpenRLHF's ``action_ranges``), so that an episode its deadline cut still says what
    it played."""

    def __init__(self, engine: Any, max_tokens_per_turn: int | None):
        self.engine, self.limit = engine, max_tokens_per_turn
        self.last_token_ids: list[int] = []
        self.sequence: list[int] = []  # the latest prompt, then its answer once generated
        self.action_ranges: list[tuple[int, int]] = []

    async def generate(self, prompt_token_ids: list[int], sampling_params: Any, **kwargs: Any) -> Any:
        if self.limit is not None and (sampling_params.max_tokens is None or sampling_params.max_tokens > self.limit):
            sampling_params.max_tokens = self.limit  # OpenRLHF hands over its own copy
        self.sequence = list(prompt_token_ids)
        output = await self.engine.generate(prompt_token_ids, sampling_params, **kwargs)
        self.last_token_ids = list(output.outputs[0].token_ids)
        self.action_ranges.append((len(self.sequence), len(self.sequence) + len(self.last_token_ids)))
        self.sequence += self.last_token_ids
        return output


class Episode:
    """One sample: the GEM session, the chat format and the engine it is played with."""

    def __init__(self, label: Any, options: EpisodeOptions, tokenizer: Any, engine: Any):
        self.label = decode_label(label)
        self.chat, self.tokenizer = ChatFormat(tokenizer), tokenizer
        self.chat.warn_if_rewriting("OpenRLHF")
        seed = self.label.get("seed")
        self.session = EnvSession.start(self.label["env_id"], None if seed is None else int(seed), options)
        self.engine = TurnLimitedEngine(engine, options.max_tokens_per_turn)
        self.first_observation = ""

    async def reset(self) -> dict[str, Any]:
        self.first_observation = self.chat.first(await self.session.reset())
        return {"observation": self.first_observation}

    async def step(self) -> dict[str, Any]:
        answer_ids = self.engine.last_token_ids
        outcome = await self.session.step(self.chat.answer_content(answer_ids))
        feedback = "" if outcome.done else self.chat.after_answer(answer_ids, outcome.observation)
        return {"rewards": torch.tensor(outcome.reward), "environment_feedback": feedback, "done": outcome.done}

    def finish(self, result: dict[str, Any]) -> dict[str, Any]:
        """OpenRLHF's result with the played episode in its label (see the module documentation).
        A failed episode's label holds its ``failure``, no turn reward and stop ``failed``; its
        reward is 0."""
        failure = self.session.failure
        rewards = [] if failure is not None else list(self.session.rewards)
        if failure is None and len(result["action_ranges"]) != len(rewards):
            raise GemError(f"OpenRLHF recorded {len(result['action_ranges'])} model turns but the "
                           f"environment was stepped {len(rewards)} times.")
        stop = self.session.stop or "max_length"
        played = {"turn_rewards": rewards, "stop": stop,
                  **({"failure": dataclasses.asdict(failure)} if failure is not None else {})}
        total = math.fsum(rewards)
        result.update(
            label=encode_label(**{**self.label, **played}),
            reward=total,
            scores=total,
            extra_logs={f"gem_{key}": value for key, value in self.session.metrics().items()},
        )
        return result

    def cut_result(self, prompt: Any, label: Any, sampling_params: Any, images: Any) -> dict[str, Any]:
        """OpenRLHF's result for an episode its deadline cut inside OpenRLHF's loop: the sequence
        of its latest generation (or its first observation) with the answers it holds."""
        tokens = self.engine.sequence or self.tokenizer(
            text=self.first_observation or f"The episode failed ({self.session.error}).",
            add_special_tokens=False)["input_ids"]
        return {"prompt": prompt, "label": label, "images": images, "mm_train_inputs": None, "reward": 0.0,
                "scores": 0.0, "observation_tokens": list(tokens),
                "action_ranges": [r for r in self.engine.action_ranges if r[1] <= len(tokens)],
                "rollout_log_probs": [0.0] * len(tokens) if sampling_params.logprobs is not None else None,
                "truncated": False, "extra_logs": {}}

    def close(self) -> None:
        self.session.close()


class GemAgentInstance(AgentInstanceBase):
    """OpenRLHF's per-sample agent instance; :class:`GemAgentExecutor` binds ``episode`` to a
    subclass for every sample."""

    episode: Episode

    def __init__(self, *args: Any, **kwargs: Any):
        pass

    async def reset(self, states: dict, **kwargs: Any) -> dict[str, Any]:
        return await self.episode.reset()

    async def step(self, state_dict: dict, **kwargs: Any) -> dict[str, Any]:
        return await self.episode.step()


class GemAgentExecutor(MultiTurnAgentExecutor):
    """Plays one GEM episode per sample through OpenRLHF's ``MultiTurnAgentExecutor``."""

    options = EpisodeOptions()

    def __init__(self) -> None:
        super().__init__(GemAgentInstance)

    async def execute(self, prompt, label, sampling_params, max_length: int, hf_tokenizer, llm_engine,
                      images=None):
        episode = Episode(label, self.options, hf_tokenizer, llm_engine)
        try:
            instance = type("GemAgentInstance", (GemAgentInstance,), {"episode": episode})
            result = await episode.session.within_deadline(MultiTurnAgentExecutor(instance).execute(
                prompt, label, sampling_params, max_length, hf_tokenizer, episode.engine, images))
            if result is None:  # the deadline passed inside OpenRLHF's loop
                result = episode.cut_result(prompt, label, sampling_params, images)
        finally:
            episode.close()
        return episode.finish(result)


def agent_executor(options: Mapping[str, Any] | None = None) -> type[GemAgentExecutor]:
    """The ``AgentExecutor`` class of an agent file: :class:`GemAgentExecutor` with the episode
    options (``wrappers``, ``max_turns``, ``max_tokens_per_turn``, ``episode_deadline``) checked
    and bound."""
    checked = EpisodeOptions.from_config(options, where="the options of the GEM agent file")
    return type("AgentExecutor", (GemAgentExecutor,), {"options": checked})
